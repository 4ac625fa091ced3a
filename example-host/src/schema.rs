//! The platform's knowledge of its collections and fields, built from the
//! migrations of the host and of every extension.

use std::collections::HashMap;
use std::sync::Arc;

pub use host_sdk::schema::{Field, FieldType};

/// One collection: its fields, `id` first.
#[derive(Debug, Clone)]
pub struct CollectionDef {
    pub name: String,
    pub fields: Vec<Field>,
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
            positions,
        }
    }

    pub fn field(&self, name: &str) -> Option<&Field> {
        self.positions.get(name).map(|&i| &self.fields[i])
    }

    pub fn has(&self, name: &str) -> bool {
        self.positions.contains_key(name)
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
