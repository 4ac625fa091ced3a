//! Relational `fields` (docs/decisions.md §4): paths through references
//! (`movie.*`, `user_created.first_name`, `author.avatar.id`) and through
//! one-to-many aliases (`models.platform_users_id.*`). The root is read
//! with the columns the relations start from; each related collection is
//! then read once per level, for all the keys found, under the caller's
//! permissions on it (its row filter and its fields). A referred record
//! replaces its id (`null` when the caller may not see it); an alias
//! becomes the list of the related records the caller may see.
//!
//! Bounded (`RelationalLimits`): a path deeper than `max_depth` is refused
//! before anything is read, and an answer that would hold more than
//! `max_records` related records is refused as soon as a level shows it
//! (each related read asks for at most one row more than that). Related
//! records are written as JSON text once per level and copied into their
//! parents' text, so an answer costs about its own size, not a tree of
//! values per copy.

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

/// Who a relational read runs as: for the collection read, and for every
/// collection reached from it. The same caller for both, except for one's
/// own record (`/users/me`), read whatever the policies say of its
/// collection while everything related stays under the caller's
/// permissions.
#[derive(Clone, Copy)]
pub(super) struct Readers<'w> {
    pub root: &'w Who,
    pub related: &'w Who,
}

impl<'w> Readers<'w> {
    pub fn caller(who: &'w Who) -> Self {
        Self {
            root: who,
            related: who,
        }
    }
}

/// A record of the answer as JSON text, and how many related records
/// (at every depth) it holds.
struct Written {
    text: Vec<u8>,
    related: u64,
}

impl Written {
    /// What placing it in a parent adds to the parent's related records.
    fn weight(&self) -> u64 {
        1 + self.related
    }
}

/// A written record with the value of the field it was read by.
struct Keyed {
    key: Option<String>,
    written: Written,
}

/// What one relation found, by the value its parents hold.
enum Found {
    /// Per referred id, the referred record.
    ToOne(HashMap<String, Written>),
    /// Per parent id, its related records (or ids), in order.
    ToMany(HashMap<String, Vec<Written>>),
}

/// One piece of a record being written.
enum Piece<'a> {
    Value(&'a Value),
    Text(&'a [u8]),
    List(&'a [Written]),
}

impl Platform {
    /// Whether a read's `fields` follow a reference or name an alias, so
    /// that it must take the relational path.
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
    /// aliases, as one JSON array.
    pub(super) fn read_following_references_json(
        &self,
        session: &mut Session<'_>,
        readers: Readers<'_>,
        collection: &str,
        wire: &WireQuery,
        default_limit: Option<u64>,
    ) -> Result<Vec<u8>, ItemsError> {
        let records = self.read_tree(session, readers, collection, wire, default_limit, None)?;
        let mut out = Vec::with_capacity(records.iter().map(|r| r.written.text.len() + 1).sum());
        out.push(b'[');
        for (i, record) in records.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&record.written.text);
        }
        out.push(b']');
        Ok(out)
    }

    /// The first record of such a read, as JSON text.
    pub(super) fn read_first_following_references(
        &self,
        session: &mut Session<'_>,
        readers: Readers<'_>,
        collection: &str,
        wire: &WireQuery,
    ) -> Result<Option<Vec<u8>>, ItemsError> {
        let records = self.read_tree(session, readers, collection, wire, None, None)?;
        Ok(records.into_iter().next().map(|r| r.written.text))
    }

    /// Reads `collection` with `wire`, following its relations; with `key`,
    /// each record comes with the string value of that field, removed
    /// from the record when `key.1` says it was not asked for.
    fn read_tree(
        &self,
        session: &mut Session<'_>,
        readers: Readers<'_>,
        collection: &str,
        wire: &WireQuery,
        default_limit: Option<u64>,
        key: Option<(&str, bool)>,
    ) -> Result<Vec<Keyed>, ItemsError> {
        let limits = self.relational_limits;
        limits.check_depth(wire)?;
        // Conditions through references are read as the caller, whoever
        // reads the root.
        let wire = self.resolve_related_filters(session, readers.related, collection, wire)?;
        let def = self.collection(readers.root, collection)?;
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
            let relation = self.relation(readers.root, &def, name, below)?;
            relations.push((name.clone(), relation, below));
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
            ..wire.into_owned()
        };
        let mut records =
            self.read_by_query(session, readers.root, collection, &root, default_limit)?;
        let mut found = Vec::with_capacity(relations.len());
        for (name, relation, below) in relations {
            let related = Readers::caller(readers.related);
            let lookup = match relation {
                Relation::ToOne { target } => {
                    let ids = string_values(&records, &name);
                    let rows =
                        self.read_related(session, related, &target, below, "id", &ids, None)?;
                    Found::ToOne(rows.into_iter().collect())
                }
                Relation::ToMany { alias, ids_only } => {
                    let ids = string_values(&records, "id");
                    let wanted = if ids_only {
                        vec!["id".to_string()]
                    } else {
                        below.clone()
                    };
                    let sort = alias.sort.as_deref().unwrap_or("id");
                    let rows = self.read_related(
                        session,
                        related,
                        &alias.related,
                        &wanted,
                        &alias.field,
                        &ids,
                        Some(sort),
                    )?;
                    let mut by_parent: HashMap<String, Vec<Written>> = HashMap::new();
                    for (parent, written) in rows {
                        let item = if ids_only {
                            id_only(&written)?
                        } else {
                            written
                        };
                        by_parent.entry(parent).or_default().push(item);
                    }
                    Found::ToMany(by_parent)
                }
            };
            found.push((name, lookup));
        }
        let mut out = Vec::with_capacity(records.len());
        let mut total = 0u64;
        for record in &mut records {
            // The one-to-many relations are found by the id, asked for or
            // not.
            let id = record.get("id").cloned();
            let key = key.and_then(|(field, keep)| {
                let value = if keep {
                    record.get(field).cloned()
                } else {
                    record.remove(field)
                };
                value.and_then(|v| v.as_str().map(String::from))
            });
            if !asked_id {
                record.remove("id");
            }
            let written = write_record(record, &found, id.as_ref())?;
            total += written.related;
            out.push(Keyed { key, written });
            if total > limits.max_records {
                return Err(limits.too_many_records().into());
            }
        }
        Ok(out)
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
    /// removed from it unless asked for. More than the answer may hold is
    /// refused.
    #[allow(clippy::too_many_arguments)]
    fn read_related(
        &self,
        session: &mut Session<'_>,
        readers: Readers<'_>,
        collection: &str,
        fields: &[String],
        key: &str,
        keys: &[Value],
        sort: Option<&str>,
    ) -> Result<Vec<(String, Written)>, ItemsError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let keep_key = fields.iter().any(|f| f == "*" || f == key);
        let mut wanted = fields.to_vec();
        if !keep_key {
            wanted.push(key.to_string());
        }
        let max = self.relational_limits.max_records;
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
            // One more than the answer may hold tells that it would not fit.
            limit: Some(i64::try_from(max).unwrap_or(i64::MAX - 1) + 1),
            ..Default::default()
        };
        let rows = self.read_tree(
            session,
            readers,
            collection,
            &nested,
            None,
            Some((key, keep_key)),
        )?;
        if rows.len() as u64 > max {
            return Err(self.relational_limits.too_many_records().into());
        }
        Ok(rows
            .into_iter()
            .filter_map(|r| r.key.map(|k| (k, r.written)))
            .collect())
    }
}

/// The record with its relations in place, as JSON text, members in the
/// order of its keys (as a record prints). `id` is the record's id, which
/// its one-to-many relations are found by (it may have been taken out of
/// the record, when not asked for).
fn write_record(
    record: &Record,
    found: &[(String, Found)],
    id: Option<&Value>,
) -> Result<Written, ItemsError> {
    let mut pieces: BTreeMap<&str, Piece<'_>> = BTreeMap::new();
    for (name, value) in record {
        pieces.insert(name, Piece::Value(value));
    }
    let mut related = 0u64;
    for (name, lookup) in found {
        match lookup {
            Found::ToOne(by_id) => {
                // Only where the record has the column (the caller may
                // not read it).
                let Some(slot) = pieces.get_mut(name.as_str()) else {
                    continue;
                };
                let target = record
                    .get(name)
                    .and_then(Value::as_str)
                    .and_then(|id| by_id.get(id));
                *slot = match target {
                    Some(written) => {
                        related += written.weight();
                        Piece::Text(&written.text)
                    }
                    None => Piece::Value(&Value::Null),
                };
            }
            Found::ToMany(by_parent) => {
                let items = id
                    .and_then(Value::as_str)
                    .and_then(|id| by_parent.get(id))
                    .map_or(&[][..], Vec::as_slice);
                related += items.iter().map(Written::weight).sum::<u64>();
                pieces.insert(name, Piece::List(items));
            }
        }
    }
    let mut text = Vec::with_capacity(64);
    text.push(b'{');
    for (i, (name, piece)) in pieces.into_iter().enumerate() {
        if i > 0 {
            text.push(b',');
        }
        write_json(&mut text, name)?;
        text.push(b':');
        match piece {
            Piece::Value(value) => write_json(&mut text, value)?,
            Piece::Text(written) => text.extend_from_slice(written),
            Piece::List(items) => {
                text.push(b'[');
                for (j, item) in items.iter().enumerate() {
                    if j > 0 {
                        text.push(b',');
                    }
                    text.extend_from_slice(&item.text);
                }
                text.push(b']');
            }
        }
    }
    text.push(b'}');
    Ok(Written { text, related })
}

fn write_json(
    out: &mut Vec<u8>,
    value: &(impl serde::Serialize + ?Sized),
) -> Result<(), ItemsError> {
    serde_json::to_writer(out, value).map_err(|e| ItemsError::Internal(e.to_string()))
}

/// A related record read for its id alone, as that id: an alias named
/// without a path lists ids.
fn id_only(written: &Written) -> Result<Written, ItemsError> {
    let record: Record =
        serde_json::from_slice(&written.text).map_err(|e| ItemsError::Internal(e.to_string()))?;
    let mut text = Vec::new();
    write_json(&mut text, record.get("id").unwrap_or(&Value::Null))?;
    Ok(Written { text, related: 0 })
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

    #[test]
    fn a_record_is_written_in_key_order_with_its_relations_in_place() {
        let record: Record =
            serde_json::from_value(json!({"title": "T", "movie": "m1", "id": "v1"})).unwrap();
        let movie = Written {
            text: br#"{"id":"m1"}"#.to_vec(),
            related: 0,
        };
        let model = Written {
            text: br#"{"platform_users_id":{"id":"u"}}"#.to_vec(),
            related: 1,
        };
        let found = vec![
            (
                "movie".to_string(),
                Found::ToOne(HashMap::from([("m1".into(), movie)])),
            ),
            (
                "models".to_string(),
                Found::ToMany(HashMap::from([("v1".into(), vec![model])])),
            ),
        ];
        let written = write_record(&record, &found, record.get("id")).unwrap();
        assert_eq!(
            String::from_utf8(written.text).unwrap(),
            r#"{"id":"v1","models":[{"platform_users_id":{"id":"u"}}],"movie":{"id":"m1"},"title":"T"}"#
        );
        // The movie, the link record and the user inside it.
        assert_eq!(written.related, 3);
    }
}
