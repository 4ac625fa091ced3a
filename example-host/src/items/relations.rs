//! Relational `fields` (DECISIONS §4): paths through references
//! (`movie.*`, `user_created.first_name`, `author.avatar.id`) and through
//! one-to-many aliases (`models.platform_users_id.*`), to any depth. The
//! root is read with the columns the relations start from; each related
//! collection is then read once per level, for all the keys found, under
//! the caller's permissions on it (its row filter and its fields). A
//! referred record replaces its id (`null` when the caller may not see
//! it); an alias becomes the list of the related records the caller may
//! see.

use std::collections::{BTreeMap, HashMap};

use super::*;
use crate::query::ListParam;
use crate::schema::Alias;

/// A `fields` list split at the first dot: the collection's own fields,
/// and per reference the paths below it.
#[derive(Debug, Default, PartialEq, Eq)]
struct FieldTree {
    local: Vec<String>,
    related: BTreeMap<String, Vec<String>>,
}

impl FieldTree {
    fn split(fields: &[String]) -> Self {
        let mut tree = FieldTree::default();
        for f in fields {
            match f.split_once('.') {
                Some((head, rest)) => tree
                    .related
                    .entry(head.to_string())
                    .or_default()
                    .push(rest.to_string()),
                None => tree.local.push(f.clone()),
            }
        }
        tree
    }
}

/// One head of a relational path.
enum Relation {
    /// A reference field: its value becomes the referred record.
    ToOne { target: String },
    /// A one-to-many alias: the related records (or, named without a
    /// path, their ids).
    ToMany { alias: Alias, ids_only: bool },
}

impl Platform {
    /// Whether a read's `fields` follow a reference or name an alias, so
    /// that it must take [`Platform::read_following_references`].
    pub(super) fn follows_relations(&self, who: &Who, collection: &str, wire: &WireQuery) -> bool {
        let Some(fields) = wire.fields.as_ref().map(ListParam::items) else {
            return false;
        };
        if fields.iter().any(|f| f.contains('.')) {
            return true;
        }
        match self.collection(who, collection) {
            Ok(def) => !def.aliases.is_empty() && fields.iter().any(|f| def.alias(f).is_some()),
            Err(_) => false,
        }
    }

    /// The records of a read whose `fields` may follow references and
    /// aliases.
    pub(super) fn read_following_references(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        wire: &WireQuery,
        default_limit: Option<u64>,
    ) -> Result<Vec<Record>, ItemsError> {
        let def = self.collection(who, collection)?;
        let fields = wire
            .fields
            .as_ref()
            .map(ListParam::items)
            .unwrap_or_default();
        let mut tree = FieldTree::split(&fields);
        // An alias named alone reads as the ids of its items.
        let mut ids_only = Vec::new();
        tree.local.retain(|f| match def.alias(f) {
            Some(_) => {
                ids_only.push(f.clone());
                false
            }
            None => true,
        });
        for name in ids_only {
            tree.related.entry(name).or_default();
        }
        let mut relations = Vec::with_capacity(tree.related.len());
        for (name, below) in &tree.related {
            relations.push((name.clone(), self.relation(who, &def, name, below)?, below));
        }
        // The root, with the columns the relations start from.
        let mut local = tree.local.clone();
        let all = local.iter().any(|f| f == "*");
        let asked_id = all || local.iter().any(|f| f == "id");
        for (name, relation, _) in &relations {
            let column = match relation {
                Relation::ToOne { .. } => name.as_str(),
                Relation::ToMany { .. } => "id",
            };
            if !all && !local.iter().any(|f| f == column) {
                local.push(column.to_string());
            }
        }
        let root = WireQuery {
            fields: Some(ListParam::List(local)),
            ..wire.clone()
        };
        let mut records = self.read_by_query(session, who, collection, &root, default_limit)?;
        for (name, relation, below) in relations {
            match relation {
                Relation::ToOne { target } => {
                    let ids = string_values(&records, &name);
                    let found =
                        self.read_related(session, who, &target, below, "id", &ids, None)?;
                    let by_id: HashMap<String, Record> = found.into_iter().collect();
                    for record in &mut records {
                        if let Some(slot) = record.get_mut(&name) {
                            let id = slot.as_str().map(String::from);
                            *slot = id
                                .and_then(|id| by_id.get(&id).cloned())
                                .map_or(Value::Null, Value::Object);
                        }
                    }
                }
                Relation::ToMany { alias, ids_only } => {
                    let ids = string_values(&records, "id");
                    let wanted = if ids_only {
                        vec!["id".to_string()]
                    } else {
                        below.clone()
                    };
                    let sort = alias.sort.as_deref().unwrap_or("id");
                    let found = self.read_related(
                        session,
                        who,
                        &alias.related,
                        &wanted,
                        &alias.field,
                        &ids,
                        Some(sort),
                    )?;
                    let mut by_parent: HashMap<String, Vec<Value>> = HashMap::new();
                    for (parent, mut item) in found {
                        let value = if ids_only {
                            item.remove("id").unwrap_or(Value::Null)
                        } else {
                            Value::Object(item)
                        };
                        by_parent.entry(parent).or_default().push(value);
                    }
                    for record in &mut records {
                        let items = record
                            .get("id")
                            .and_then(Value::as_str)
                            .and_then(|id| by_parent.remove(id))
                            .unwrap_or_default();
                        record.insert(name.clone(), Value::Array(items));
                    }
                }
            }
        }
        if !asked_id {
            for record in &mut records {
                record.remove("id");
            }
        }
        Ok(records)
    }

    /// What `name` of `def` leads to, refusing a name that is neither a
    /// reference nor an alias, and an alias the caller may not read.
    fn relation(
        &self,
        who: &Who,
        def: &CollectionDef,
        name: &str,
        below: &[String],
    ) -> Result<Relation, ItemsError> {
        if let Some(field) = def.field(name) {
            return match &field.references {
                Some(target) => Ok(Relation::ToOne {
                    target: target.clone(),
                }),
                None => Err(ItemsError::InvalidQuery(format!(
                    "\"{name}\" of \"{}\" refers to no collection: \"{name}.{}\" cannot be read",
                    def.name,
                    below.first().map(String::as_str).unwrap_or("*")
                ))),
            };
        }
        let Some(alias) = def.alias(name) else {
            return Err(unknown_query_field(def, name));
        };
        // An alias is a field of its collection for the caller's field
        // permissions, as in Directus.
        if let Some(grant) = self.grant(who, &def.name, Action::Read)? {
            if !grant.allows_field(name) {
                return Err(ItemsError::forbidden());
            }
        }
        Ok(Relation::ToMany {
            alias: alias.clone(),
            ids_only: below.is_empty(),
        })
    }

    /// The records of `collection` whose `key` is one of `keys`, with the
    /// `fields` asked for (followed further where they have dots), read
    /// under the caller's permissions; each comes with its key, which is
    /// removed from it unless asked for.
    #[allow(clippy::too_many_arguments)]
    fn read_related(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        fields: &[String],
        key: &str,
        keys: &[Value],
        sort: Option<&str>,
    ) -> Result<Vec<(String, Record)>, ItemsError> {
        let mut out = Vec::new();
        if keys.is_empty() {
            return Ok(out);
        }
        let add_key = !fields.iter().any(|f| f == "*" || f == key);
        let mut wanted = fields.to_vec();
        if add_key {
            wanted.push(key.to_string());
        }
        // One read whatever the number of keys: an `_in` list is bound as
        // one parameter.
        let nested = WireQuery {
            fields: Some(ListParam::List(wanted)),
            filter: Some(json!({ key: {"_in": keys} })),
            // Ties broken by id, so the order is the same every time.
            sort: sort.map(|s| {
                let mut by = vec![s.to_string()];
                if s != "id" {
                    by.push("id".into());
                }
                ListParam::List(by)
            }),
            limit: Some(-1),
            ..Default::default()
        };
        for mut record in self.read_following_references(session, who, collection, &nested, None)? {
            let found = if add_key {
                record.remove(key)
            } else {
                record.get(key).cloned()
            };
            if let Some(Value::String(k)) = found {
                out.push((k, record));
            }
        }
        Ok(out)
    }
}

/// The distinct string values of `field` in `records`, sorted.
fn string_values(records: &[Record], field: &str) -> Vec<Value> {
    let mut ids: Vec<Value> = records
        .iter()
        .filter_map(|r| r.get(field).filter(|v| v.is_string()).cloned())
        .collect();
    ids.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    ids.dedup();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_split_at_the_first_dot() {
        let fields: Vec<String> = ["*", "movie.*", "author.avatar.id", "author.first_name"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let tree = FieldTree::split(&fields);
        assert_eq!(tree.local, vec!["*".to_string()]);
        assert_eq!(tree.related["movie"], vec!["*".to_string()]);
        assert_eq!(
            tree.related["author"],
            vec!["avatar.id".to_string(), "first_name".to_string()]
        );
    }
}
