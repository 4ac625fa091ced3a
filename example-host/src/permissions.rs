//! What a set of policies allows: per collection and action, a row filter,
//! the allowed fields and the presets of created items.

use std::collections::HashMap;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use crate::query::{Filter, ReadQuery};
use crate::storage::{read_with, Store, StoreError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Create,
    Read,
    Update,
    Delete,
}

/// The combined permission of several policies for one collection and action.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    /// Raw filter (with `$CURRENT_USER`…) the items must match; `None`: all items.
    pub filter: Option<Value>,
    /// Allowed fields; `None`: all.
    pub fields: Option<Vec<String>>,
    /// Values forced onto created items.
    pub presets: Map<String, Value>,
}

impl Grant {
    pub fn allows_field(&self, field: &str) -> bool {
        self.fields
            .as_ref()
            .is_none_or(|list| list.iter().any(|f| f == field))
    }
}

#[derive(Debug, Clone)]
struct Row {
    filter: Option<Value>,
    fields: Option<Vec<String>>,
    presets: Map<String, Value>,
}

/// The permission rows of one set of policies.
#[derive(Debug, Default)]
pub struct PermissionSet {
    rows: HashMap<(String, Action), Vec<Row>>,
}

impl PermissionSet {
    /// The collections the action is permitted on (on some of their
    /// items, at least), sorted.
    pub fn collections(&self, action: Action) -> Vec<String> {
        let mut out: Vec<String> = self
            .rows
            .keys()
            .filter(|(_, a)| *a == action)
            .map(|(c, _)| c.clone())
            .collect();
        out.sort();
        out
    }

    /// `None`: the action is not permitted at all.
    pub fn grant(&self, collection: &str, action: Action) -> Option<Grant> {
        let rows = self.rows.get(&(collection.to_string(), action))?;
        let mut filter_parts = Vec::new();
        let mut unrestricted = false;
        let mut fields: Option<Vec<String>> = Some(Vec::new());
        let mut presets = Map::new();
        for row in rows {
            match &row.filter {
                None => unrestricted = true,
                Some(f) => filter_parts.push(f.clone()),
            }
            match (&mut fields, &row.fields) {
                (_, None) => fields = None,
                (Some(list), Some(more)) => {
                    for f in more {
                        if !list.contains(f) {
                            list.push(f.clone());
                        }
                    }
                }
                (None, Some(_)) => {}
            }
            for (k, v) in &row.presets {
                presets.insert(k.clone(), v.clone());
            }
        }
        let filter = if unrestricted {
            None
        } else if filter_parts.len() == 1 {
            filter_parts.pop()
        } else {
            Some(json!({ "_or": filter_parts }))
        };
        Some(Grant {
            filter,
            fields,
            presets,
        })
    }
}

fn parse_fields(v: Option<&Value>) -> Option<Vec<String>> {
    let list: Vec<String> = v?
        .as_array()?
        .iter()
        .filter_map(|f| f.as_str().map(String::from))
        .collect();
    if list.iter().any(|f| f == "*") {
        None
    } else {
        Some(list)
    }
}

/// A cached permission set and the auth epoch it was loaded in.
type CachedSet = (u64, std::sync::Arc<PermissionSet>);

/// Loads and caches permission sets by policy list.
#[derive(Default)]
pub struct Permissions {
    cache: Mutex<HashMap<Vec<String>, CachedSet>>,
}

impl Permissions {
    pub fn for_policies(
        &self,
        store: &dyn Store,
        policies: &[String],
        epoch: u64,
    ) -> Result<std::sync::Arc<PermissionSet>, StoreError> {
        if let Some((e, set)) = self.cache.lock().get(policies) {
            if *e == epoch {
                return Ok(set.clone());
            }
        }
        let set = std::sync::Arc::new(load(store, policies)?);
        let mut cache = self.cache.lock();
        if cache.len() > 1000 {
            cache.clear();
        }
        cache.insert(policies.to_vec(), (epoch, set.clone()));
        Ok(set)
    }
}

fn load(store: &dyn Store, policies: &[String]) -> Result<PermissionSet, StoreError> {
    let mut set = PermissionSet::default();
    if policies.is_empty() {
        return Ok(set);
    }
    let schema = store.schema();
    let Some(perms) = schema.get("platform_permissions") else {
        return Ok(set);
    };
    let mut q = ReadQuery::all_fields(perms);
    q.filter = Some(Filter::is_in(
        "policy",
        policies.iter().map(|p| Value::String(p.clone())).collect(),
    ));
    let rows = read_with(store, |conn| conn.select(perms, &q))?;
    for row in rows {
        let collection = row
            .get("collection")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let action = match row.get("action").and_then(Value::as_str) {
            Some("create") => Action::Create,
            Some("read") => Action::Read,
            Some("update") => Action::Update,
            Some("delete") => Action::Delete,
            _ => continue,
        };
        let filter = match row.get("permissions") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) if m.is_empty() => None,
            Some(f) => Some(f.clone()),
        };
        let presets = match row.get("presets") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        set.rows
            .entry((collection.to_string(), action))
            .or_default()
            .push(Row {
                filter,
                fields: parse_fields(row.get("fields")),
                presets,
            });
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestRow<'a> = (&'a str, Action, Option<Value>, Option<Vec<&'a str>>);

    fn set(rows: Vec<TestRow<'_>>) -> PermissionSet {
        let mut s = PermissionSet::default();
        for (c, a, filter, fields) in rows {
            s.rows.entry((c.into(), a)).or_default().push(Row {
                filter,
                fields: fields.map(|f| f.into_iter().map(String::from).collect()),
                presets: Map::new(),
            });
        }
        s
    }

    #[test]
    fn no_row_means_forbidden() {
        let s = set(vec![("recordings", Action::Read, None, None)]);
        assert!(s.grant("recordings", Action::Update).is_none());
        assert!(s.grant("videos", Action::Read).is_none());
        assert_eq!(s.grant("recordings", Action::Read).unwrap().filter, None);
    }

    #[test]
    fn filters_of_several_policies_are_ored_and_fields_unioned() {
        let own = json!({"user_created": {"_eq": "$CURRENT_USER"}});
        let public = json!({"public": {"_eq": true}});
        let s = set(vec![
            (
                "recordings",
                Action::Read,
                Some(own.clone()),
                Some(vec!["id", "title"]),
            ),
            (
                "recordings",
                Action::Read,
                Some(public.clone()),
                Some(vec!["id", "public"]),
            ),
        ]);
        let g = s.grant("recordings", Action::Read).unwrap();
        assert_eq!(g.filter, Some(json!({"_or": [own, public]})));
        assert!(g.allows_field("title") && g.allows_field("public"));
        assert!(!g.allows_field("events"));
    }

    #[test]
    fn the_collections_of_an_action_are_listed_once_each() {
        let own = json!({"user_created": {"_eq": "$CURRENT_USER"}});
        let s = set(vec![
            ("recordings", Action::Read, Some(own.clone()), None),
            ("recordings", Action::Read, None, Some(vec!["id"])),
            ("articles", Action::Read, None, None),
            ("video_likes", Action::Create, Some(own), None),
        ]);
        assert_eq!(s.collections(Action::Read), vec!["articles", "recordings"]);
        assert_eq!(s.collections(Action::Create), vec!["video_likes"]);
        assert!(s.collections(Action::Delete).is_empty());
    }

    #[test]
    fn an_unrestricted_row_wins() {
        let s = set(vec![
            (
                "recordings",
                Action::Read,
                Some(json!({"public": {"_eq": true}})),
                None,
            ),
            ("recordings", Action::Read, None, Some(vec!["*"])),
        ]);
        assert_eq!(s.grant("recordings", Action::Read).unwrap().filter, None);
    }
}
