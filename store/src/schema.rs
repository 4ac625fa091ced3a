//! The platform's knowledge of its collections and fields, built from the
//! migrations of the host and of every extension.

use std::collections::HashMap;
use std::sync::Arc;

pub use host_sdk::schema::{Alias, CollectionMeta, Field, FieldMeta, FieldType};

/// One collection: its fields, `id` first, and the one-to-many aliases
/// declared on it (they store nothing).
#[derive(Debug, Clone)]
pub struct CollectionDef {
    pub name: String,
    pub fields: Vec<Field>,
    pub aliases: Vec<Alias>,
    /// What a client shows of it, as its migrations set it.
    pub meta: Option<CollectionMeta>,
    positions: HashMap<String, usize>,
}

impl CollectionDef {
    pub fn new(name: &str, declared: Vec<Field>) -> Self {
        let mut fields = vec![Field::uuid("id").not_null().unique()];
        fields.extend(declared.into_iter().filter(|f| f.field != "id"));
        let positions = fields
            .iter()
            .enumerate()
            .map(|(i, f)| (f.field.clone(), i))
            .collect();
        Self {
            name: name.to_string(),
            fields,
            aliases: Vec::new(),
            meta: None,
            positions,
        }
    }

    /// The one-to-many alias of this name.
    pub fn alias(&self, name: &str) -> Option<&Alias> {
        self.aliases.iter().find(|a| a.alias == name)
    }

    pub fn field(&self, name: &str) -> Option<&Field> {
        self.positions.get(name).map(|&i| &self.fields[i])
    }

    pub fn has(&self, name: &str) -> bool {
        self.positions.contains_key(name)
    }

    /// Replaces the definition of an existing field.
    pub fn replace_field(&mut self, field: Field) {
        if let Some(&i) = self.positions.get(&field.field) {
            self.fields[i] = field;
        }
    }

    pub fn add_field(&mut self, field: Field) {
        if !self.has(&field.field) {
            self.positions
                .insert(field.field.clone(), self.fields.len());
            self.fields.push(field);
        }
    }
}

/// All collections.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    collections: HashMap<String, Arc<CollectionDef>>,
}

impl Schema {
    pub fn get(&self, name: &str) -> Option<&Arc<CollectionDef>> {
        self.collections.get(name)
    }

    pub fn insert(&mut self, def: CollectionDef) {
        self.collections.insert(def.name.clone(), Arc::new(def));
    }

    /// The names of every collection, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.collections.keys().map(String::as_str)
    }

    pub fn replace_field(&mut self, collection: &str, field: Field) {
        if let Some(def) = self.collections.get_mut(collection) {
            Arc::make_mut(def).replace_field(field);
        }
    }

    /// Every field of every collection that refers to `collection`:
    /// (referring collection, field).
    pub fn references_to(&self, collection: &str) -> Vec<(Arc<CollectionDef>, Field)> {
        let mut out: Vec<(Arc<CollectionDef>, Field)> = self
            .collections
            .values()
            .flat_map(|def| {
                def.fields
                    .iter()
                    .filter(|f| f.references.as_deref() == Some(collection))
                    .map(|f| (def.clone(), f.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        // A stable order, so deletes cascade the same way every time.
        out.sort_by(|a, b| (&a.0.name, &a.1.field).cmp(&(&b.0.name, &b.1.field)));
        out
    }

    /// Declares a one-to-many alias on `collection`; false when it is unknown.
    pub fn add_alias(&mut self, collection: &str, alias: Alias) -> bool {
        match self.collections.get_mut(collection) {
            Some(def) => {
                Arc::make_mut(def).aliases.push(alias);
                true
            }
            None => false,
        }
    }

    /// Sets the metadata of `collection`; false when it is unknown.
    pub fn set_collection_meta(&mut self, collection: &str, meta: CollectionMeta) -> bool {
        match self.collections.get_mut(collection) {
            Some(def) => {
                Arc::make_mut(def).meta = Some(meta);
                true
            }
            None => false,
        }
    }

    pub fn add_field(&mut self, collection: &str, field: Field) -> bool {
        match self.collections.get_mut(collection) {
            Some(def) => {
                Arc::make_mut(def).add_field(field);
                true
            }
            None => false,
        }
    }
}
