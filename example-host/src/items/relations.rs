//! Relational `fields` (DECISIONS §4): paths through references
//! (`movie.*`, `user_created.first_name`, `author.avatar.id`), to any depth.
//! The root is read with the references' own columns; each related
//! collection is then read once per level, for all the ids found, under
//! the caller's permissions on it (its row filter and its fields), and its
//! records replace the ids. An id the caller may not see becomes `null`.

use std::collections::{BTreeMap, HashMap};

use super::*;
use crate::query::ListParam;

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

/// Whether a query's `fields` follow a reference.
pub(super) fn follows_references(wire: &WireQuery) -> bool {
    wire.fields
        .as_ref()
        .is_some_and(|f| f.items().iter().any(|f| f.contains('.')))
}

impl Platform {
    /// The records of a read whose `fields` may follow references.
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
        let tree = FieldTree::split(&fields);
        let mut relations = Vec::with_capacity(tree.related.len());
        for (name, below) in &tree.related {
            let field = def.field(name).ok_or_else(|| {
                ItemsError::InvalidQuery(format!(
                    "unknown field \"{name}\" in collection \"{}\"",
                    def.name
                ))
            })?;
            let target = field.references.clone().ok_or_else(|| {
                ItemsError::InvalidQuery(format!(
                    "\"{name}\" of \"{}\" refers to no collection: \"{name}.{}\" cannot be read",
                    def.name,
                    below.first().map(String::as_str).unwrap_or("*")
                ))
            })?;
            relations.push((name.clone(), target, below.clone()));
        }
        // The root, with the columns of the references followed.
        let mut local = tree.local.clone();
        if local.is_empty() {
            local.push("id".into());
        }
        for (name, _, _) in &relations {
            if !local.iter().any(|f| f == "*" || f == name) {
                local.push(name.clone());
            }
        }
        let root = WireQuery {
            fields: Some(ListParam::List(local)),
            ..wire.clone()
        };
        let mut records = self.read_by_query(session, who, collection, &root, default_limit)?;
        for (name, target, below) in relations {
            let mut ids: Vec<Value> = records
                .iter()
                .filter_map(|r| r.get(&name).filter(|v| v.is_string()).cloned())
                .collect();
            ids.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
            ids.dedup();
            let mut found: HashMap<String, Record> = HashMap::new();
            if !ids.is_empty() {
                let add_id = !below.iter().any(|f| f == "*" || f == "id");
                let mut wanted = below.clone();
                if add_id {
                    wanted.push("id".into());
                }
                let nested = WireQuery {
                    fields: Some(ListParam::List(wanted)),
                    filter: Some(json!({"id": {"_in": ids}})),
                    limit: Some(-1),
                    ..Default::default()
                };
                for mut record in
                    self.read_following_references(session, who, &target, &nested, None)?
                {
                    let id = record.get("id").and_then(Value::as_str).map(String::from);
                    if add_id {
                        record.remove("id");
                    }
                    if let Some(id) = id {
                        found.insert(id, record);
                    }
                }
            }
            for record in &mut records {
                if let Some(slot) = record.get_mut(&name) {
                    let id = slot.as_str().map(String::from);
                    *slot = id
                        .and_then(|id| found.get(&id).cloned())
                        .map_or(Value::Null, Value::Object);
                }
            }
        }
        Ok(records)
    }
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
