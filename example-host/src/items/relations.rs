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
//! (each related read asks for at most one row more than that).
//!
//! Nothing is built as a tree of values: every level is read as the JSON
//! text of its cells ([`TextRows`]), related records are written as text
//! once per level, and each parent is written by copying its cells and
//! its related records' text in place. An answer costs about its own
//! size.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use super::read::{fields_forbidden, ROOT};
use super::*;
use platform_store::query::ListParam;
use platform_store::schema::Alias;
use platform_store::storage::codec;

/// A list of field paths split at the first dot: the collection's own
/// fields, and per reference the paths below it.
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

/// The query's `without` split as its `fields` are: what it leaves out of
/// the collection, and per relation what it leaves out of the records that
/// relation leads to. A path through a relation `fields` does not follow
/// leaves nothing out of anything read: refused, as a name the collection
/// lacks is.
fn split_without(
    without: Option<&Vec<String>>,
    followed: &BTreeMap<String, Vec<String>>,
) -> Result<Option<FieldTree>, PlatformError> {
    let Some(without) = without else {
        return Ok(None);
    };
    let tree = FieldTree::split(without);
    if let Some(head) = tree.related.keys().find(|h| !followed.contains_key(*h)) {
        return Err(PlatformError::InvalidQuery(format!(
            "\"{head}\" is not followed by \"fields\": nothing below it can be left out"
        )));
    }
    Ok(Some(tree))
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
    /// Where the collection read was reached from: the relations followed
    /// (`author.avatar`), `""` for the root; errors name it.
    pub path: &'w str,
}

impl<'w> Readers<'w> {
    pub fn caller(who: &'w Who) -> Self {
        Self {
            root: who,
            related: who,
            path: ROOT,
        }
    }

    /// One's own record read as `own`, everything related as `caller`.
    pub fn own(own: &'w Who, caller: &'w Who) -> Self {
        Self {
            root: own,
            related: caller,
            path: ROOT,
        }
    }

    /// The caller's readers of the collection `relation` leads to.
    fn below(&self, relation: &'w str) -> Readers<'w> {
        Readers {
            path: relation,
            ..Readers::caller(self.related)
        }
    }
}

/// The path of `name` followed from `path`.
fn path_below(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// Records written as JSON text into one buffer.
#[derive(Default)]
struct WrittenRecords {
    text: Vec<u8>,
    spans: Vec<Span>,
}

/// Where one written record lies, and how many related records (at every
/// depth) it holds.
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    related: u64,
}

impl WrittenRecords {
    fn text(&self, i: usize) -> &[u8] {
        let span = self.spans[i];
        &self.text[span.start..span.end]
    }

    /// What placing record `i` in a parent adds to the parent's related
    /// records.
    fn weight(&self, i: usize) -> u64 {
        1 + self.spans[i].related
    }

    /// Writes the next record with `write`, which answers how many related
    /// records it placed, or `None`, having written nothing, when there is
    /// no record to place (a flattened link naming nothing); answers that
    /// too.
    fn push(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>) -> Result<Option<u64>, TooLarge>,
    ) -> Result<Option<u64>, TooLarge> {
        let start = self.text.len();
        let related = write(&mut self.text)?;
        if let Some(related) = related {
            self.spans.push(Span {
                start,
                end: self.text.len(),
                related,
            });
        }
        Ok(related)
    }
}

/// Writing went past the bytes an answer may hold; nothing more was
/// copied.
#[derive(Debug)]
struct TooLarge;

/// Appends `bytes` unless `out` would then be longer than `max_len`.
fn put(out: &mut Vec<u8>, bytes: &[u8], max_len: usize) -> Result<(), TooLarge> {
    if out.len().saturating_add(bytes.len()) > max_len {
        return Err(TooLarge);
    }
    out.extend_from_slice(bytes);
    Ok(())
}

/// What a reference found: the referred records, by id.
struct ToOne {
    records: WrittenRecords,
    by_id: HashMap<String, usize>,
}

/// What a one-to-many alias found: per parent id, its related records in
/// the order of the alias's sort.
struct ToMany {
    records: WrittenRecords,
    by_parent: HashMap<String, Vec<usize>>,
}

/// One member of a written record.
enum Member {
    /// The cell of this column, as read.
    Cell(usize),
    /// The referred record in place of the id in this column (`null` when
    /// the caller may not see it).
    ToOne { column: usize, found: ToOne },
    /// The related records of the record's id.
    ToMany(ToMany),
}

impl Member {
    /// The related records it holds, written.
    fn records(&self) -> Option<&WrittenRecords> {
        match self {
            Member::Cell(_) => None,
            Member::ToOne { found, .. } => Some(&found.records),
            Member::ToMany(found) => Some(&found.records),
        }
    }
}

/// One collection's rows, with what their relations found: ready to be
/// written record by record.
struct Level {
    rows: TextRows,
    /// `"name":` and where its value comes from, in the order of the
    /// names (as a record map prints).
    members: Vec<(Vec<u8>, Member)>,
    /// The column of `id`, by which one-to-many relations are found
    /// (read whether asked for or not).
    id: Option<usize>,
}

impl Level {
    /// About the size of all its records written: their cells, names and
    /// punctuation, and each related record placed once (a record placed
    /// in several parents makes it more).
    fn written_size_hint(&self) -> usize {
        let names: usize = self.members.iter().map(|(name, _)| name.len() + 1).sum();
        let related: usize = self
            .members
            .iter()
            .filter_map(|(_, member)| member.records())
            .map(|records| records.text.len())
            .sum();
        self.rows.text_len() + self.rows.len() * (names + 2) + related + 2
    }

    /// Writes the record of `row` into `out`, which may not grow past
    /// `max_len` (checked before each copy, so a refused answer took no
    /// more memory than that); answers how many related records (at every
    /// depth) it holds.
    fn write_record(&self, row: usize, out: &mut Vec<u8>, max_len: usize) -> Result<u64, TooLarge> {
        let mut related = 0u64;
        out.push(b'{');
        for (n, (name, member)) in self.members.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(name);
            match self.write_value(row, member, out, max_len)? {
                Some(r) => related += r,
                None => out.extend_from_slice(b"null"),
            }
        }
        out.push(b'}');
        Ok(related)
    }

    /// Writes the value of `member` in the record of `row` and answers how
    /// many related records it holds; `None`, having written nothing, when
    /// the value is `null` (a reference to nothing the caller may see).
    fn write_value(
        &self,
        row: usize,
        member: &Member,
        out: &mut Vec<u8>,
        max_len: usize,
    ) -> Result<Option<u64>, TooLarge> {
        match member {
            Member::Cell(column) => {
                let cell = self.rows.cell(row, *column);
                if cell == b"null" {
                    return Ok(None);
                }
                put(out, cell, max_len)?;
                Ok(Some(0))
            }
            Member::ToOne { column, found } => {
                let target = json_string(self.rows.cell(row, *column))
                    .and_then(|id| found.by_id.get(id.as_ref()).copied());
                let Some(i) = target else {
                    return Ok(None);
                };
                put(out, found.records.text(i), max_len)?;
                Ok(Some(found.records.weight(i)))
            }
            Member::ToMany(found) => {
                let mut related = 0u64;
                let items = self
                    .id
                    .and_then(|c| json_string(self.rows.cell(row, c)))
                    .and_then(|id| found.by_parent.get(id.as_ref()))
                    .map_or(&[][..], Vec::as_slice);
                out.push(b'[');
                for (j, &i) in items.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    related += found.records.weight(i);
                    put(out, found.records.text(i), max_len)?;
                }
                out.push(b']');
                Ok(Some(related))
            }
        }
    }

    /// The member named `name`, where the records have it.
    fn member_named(&self, name: &str) -> Option<&Member> {
        let prefix = member_prefix(name);
        self.members
            .iter()
            .find(|(written, _)| *written == prefix)
            .map(|(_, member)| member)
    }
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
    ) -> Result<Vec<u8>, PlatformError> {
        let level = self.read_level(
            session,
            readers,
            collection,
            Cow::Borrowed(wire),
            default_limit,
            None,
        )?;
        let limits = self.relational_limits;
        let max_len = limits.max_len();
        let mut out = Vec::with_capacity(level.written_size_hint().min(max_len));
        out.push(b'[');
        let mut total = 0u64;
        for row in 0..level.rows.len() {
            if row > 0 {
                out.push(b',');
            }
            total += level
                .write_record(row, &mut out, max_len)
                .map_err(|TooLarge| limits.too_large())?;
            if total > limits.max_records {
                return Err(limits.too_many_records().into());
            }
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
    ) -> Result<Option<Vec<u8>>, PlatformError> {
        let level = self.read_level(
            session,
            readers,
            collection,
            Cow::Borrowed(wire),
            None,
            None,
        )?;
        if level.rows.is_empty() {
            return Ok(None);
        }
        let limits = self.relational_limits;
        let mut out = Vec::new();
        let related = level
            .write_record(0, &mut out, limits.max_len())
            .map_err(|TooLarge| limits.too_large())?;
        if related > limits.max_records {
            return Err(limits.too_many_records().into());
        }
        Ok(Some(out))
    }

    /// Reads `collection` with `wire`, and what its relations lead to;
    /// with `key`, the field the records are read by, left out of them
    /// when `key.1` says it was not asked for.
    fn read_level(
        &self,
        session: &mut Session<'_>,
        readers: Readers<'_>,
        collection: &str,
        wire: Cow<'_, WireQuery>,
        default_limit: Option<u64>,
        key: Option<(&str, bool)>,
    ) -> Result<Level, PlatformError> {
        // Conditions through references are read as the caller, whoever
        // reads the root (which checks the query's depth). A nested level's
        // query is its own, and its list of keys is not copied again.
        let resolved =
            match self.resolve_related_filters(session, readers.related, collection, &wire)? {
                Cow::Owned(resolved) => Some(resolved),
                Cow::Borrowed(_) => None,
            };
        let wire = resolved.unwrap_or_else(|| wire.into_owned());
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
        let (without, mut without_below) =
            match split_without(wire.without.as_ref(), &tree.related)? {
                Some(left_out) => (Some(left_out.local), left_out.related),
                None => (None, BTreeMap::new()),
            };
        let mut relations = Vec::with_capacity(tree.related.len());
        for (name, below) in &tree.related {
            let relation = self.relation(readers.root, &def, name, below, readers.path)?;
            let left_out = without_below.remove(name).unwrap_or_default();
            relations.push((name.as_str(), relation, below, left_out));
        }
        let flattened = flattened(wire.flatten.as_deref().unwrap_or_default(), &relations)?;
        // The root, with the columns the relations start from.
        let mut local = tree.local.clone();
        let all = local.iter().any(|f| f == "*");
        let asked_id = all || local.iter().any(|f| f == "id");
        for (name, relation, _, _) in &relations {
            let column = match relation {
                Relation::ToOne { .. } => *name,
                Relation::ToMany { .. } => "id",
            };
            if !all && !local.iter().any(|f| f == column) {
                local.push(column.to_string());
            }
        }
        let root = WireQuery {
            fields: Some(ListParam::List(local)),
            without,
            flatten: None,
            ..wire
        };
        let rows = self.read_by_query_text(
            session,
            readers.root,
            collection,
            &root,
            default_limit,
            readers.path,
        )?;
        let id = rows.column("id");
        let mut to_one = HashMap::new();
        let mut to_many = Vec::new();
        for (name, relation, below, left_out) in relations {
            let path = path_below(readers.path, name);
            let related = readers.below(&path);
            match relation {
                Relation::ToOne { target } => {
                    // Only where the record has the column (the caller
                    // may not read it).
                    let Some(column) = rows.column(name) else {
                        continue;
                    };
                    let ids = string_cells(&rows, column);
                    let (records, keys) = self.read_related(
                        session,
                        related,
                        &target,
                        Asked {
                            fields: below,
                            without: left_out,
                            flatten: None,
                        },
                        "id",
                        ids,
                        None,
                        false,
                    )?;
                    let by_id = keys.into_iter().zip(0..).collect();
                    to_one.insert(name, (column, ToOne { records, by_id }));
                }
                Relation::ToMany { alias, ids_only } => {
                    let ids = id.map(|c| string_cells(&rows, c)).unwrap_or_default();
                    let sort = alias.sort.as_deref().unwrap_or("id");
                    let (records, keys) = self.read_related(
                        session,
                        related,
                        &alias.related,
                        Asked {
                            fields: below,
                            without: left_out,
                            flatten: flattened.get(name).copied(),
                        },
                        &alias.field,
                        ids,
                        Some(sort),
                        ids_only,
                    )?;
                    let mut by_parent: HashMap<String, Vec<usize>> = HashMap::new();
                    for (i, parent) in keys.into_iter().enumerate() {
                        by_parent.entry(parent).or_default().push(i);
                    }
                    to_many.push((name, ToMany { records, by_parent }));
                }
            }
        }
        let left_out = Left {
            id: !asked_id,
            key: key.filter(|(_, keep)| !keep).map(|(k, _)| k),
        };
        Ok(Level {
            members: members(&rows, left_out, to_one, to_many),
            id,
            rows,
        })
    }

    /// What `name` of `def` leads to, refusing a name that is neither a
    /// reference nor an alias, and an alias the caller may not read.
    fn relation(
        &self,
        who: &Who,
        def: &CollectionDef,
        name: &str,
        below: &[String],
        path: &str,
    ) -> Result<Relation, PlatformError> {
        if let Some(field) = def.field(name) {
            return match &field.references {
                Some(target) => Ok(Relation::ToOne {
                    target: target.clone(),
                }),
                None => Err(PlatformError::InvalidQuery(format!(
                    "\"{name}\" of \"{}\" refers to no collection: \"{name}.{}\" cannot be read",
                    def.name,
                    below.first().map(String::as_str).unwrap_or("*")
                ))),
            };
        }
        let refused = || fields_forbidden(path, &def.name, &[name.to_string()]);
        let Some(alias) = def.alias(name) else {
            return Err(refused());
        };
        // An alias is a field of its collection for the caller's field
        // permissions, as in Directus.
        if let Some(grant) = self.grant(who, &def.name, Action::Read)? {
            if !grant.allows_field(name) {
                return Err(refused());
            }
        }
        Ok(Relation::ToMany {
            alias: alias.clone(),
            ids_only: below.is_empty(),
        })
    }

    /// The records of `collection` whose `key` is one of `keys`, with the
    /// fields asked for (followed further where they have dots), read
    /// under the caller's permissions and written as JSON text (with
    /// `ids_only`, each as its id alone); with each its key, which is left
    /// out of it unless asked for. More than the answer may hold is
    /// refused.
    #[allow(clippy::too_many_arguments)]
    fn read_related(
        &self,
        session: &mut Session<'_>,
        readers: Readers<'_>,
        collection: &str,
        asked: Asked<'_>,
        key: &str,
        keys: Vec<Value>,
        sort: Option<&str>,
        ids_only: bool,
    ) -> Result<(WrittenRecords, Vec<String>), PlatformError> {
        let mut records = WrittenRecords::default();
        let mut found_keys = Vec::new();
        if keys.is_empty() {
            return Ok((records, found_keys));
        }
        let fields = if ids_only {
            vec!["id".to_string()]
        } else {
            asked.fields.to_vec()
        };
        // The key links the records to their parents: left out, it is still
        // read, and only left out of the records written.
        let key_left_out = asked.without.iter().any(|f| f == key);
        let without: Vec<String> = asked.without.into_iter().filter(|f| f != key).collect();
        // Asked for as itself, or followed further.
        let keep_key = !key_left_out
            && fields.iter().any(|f| {
                f == "*" || f == key || f.strip_prefix(key).is_some_and(|r| r.starts_with('.'))
            });
        let mut wanted = fields;
        if !keep_key {
            wanted.push(key.to_string());
        }
        let limits = self.relational_limits;
        // One read whatever the number of keys: an `_in` list is bound as
        // one parameter.
        let nested = WireQuery {
            fields: Some(ListParam::List(wanted)),
            filter: Some(in_list(key, keys)),
            // Ties broken by id, so the order is the same every time; by
            // the key first, which leaves each parent's order as it is and
            // lets the key's index give the rows in order instead of a sort.
            sort: sort.map(|s| {
                let mut by = vec![key.to_string()];
                for field in [s, "id"] {
                    if !by.iter().any(|f| f == field) {
                        by.push(field.to_string());
                    }
                }
                ListParam::List(by)
            }),
            // One more than the answer may hold tells that it would not fit.
            limit: Some(i64::try_from(limits.max_records).unwrap_or(i64::MAX - 1) + 1),
            without: (!without.is_empty()).then_some(without),
            ..Default::default()
        };
        let level = self.read_level(
            session,
            readers,
            collection,
            Cow::Owned(nested),
            None,
            Some((key, keep_key)),
        )?;
        if level.rows.len() as u64 > limits.max_records {
            return Err(limits.too_many_records().into());
        }
        // A record whose key the caller may not read belongs to no parent.
        let Some(key_column) = level.rows.column(key) else {
            return Ok((records, found_keys));
        };
        let max_len = limits.max_len();
        records.text.reserve(level.written_size_hint().min(max_len));
        found_keys.reserve(level.rows.len());
        // Flattened: each record is the value of this member, and none
        // when it is null (or the caller may not read the field).
        let flat = asked.flatten.map(|field| level.member_named(field));
        let mut total = 0u64;
        for row in 0..level.rows.len() {
            let Some(found) = json_string(level.rows.cell(row, key_column)) else {
                continue;
            };
            let written = records
                .push(|out| match flat {
                    Some(Some(member)) => level.write_value(row, member, out, max_len),
                    Some(None) => Ok(None),
                    None if ids_only => {
                        let id = level.id.map_or(&b"null"[..], |c| level.rows.cell(row, c));
                        put(out, id, max_len).map(|()| Some(0))
                    }
                    None => level.write_record(row, out, max_len).map(Some),
                })
                .map_err(|TooLarge| limits.too_large())?;
            let Some(related) = written else {
                continue;
            };
            found_keys.push(found.into_owned());
            total += related;
            if total > limits.max_records {
                return Err(limits.too_many_records().into());
            }
        }
        Ok((records, found_keys))
    }
}

/// What a relation's records are read with: the paths below it in
/// `fields` and in `without`, and the field each is written as when the
/// query flattens the relation.
struct Asked<'a> {
    fields: &'a [String],
    without: Vec<String>,
    flatten: Option<&'a str>,
}

/// A relation [`Platform::read_level`] follows: its name, where it leads,
/// and the paths below it in `fields` and in `without`.
type Followed<'a> = (&'a str, Relation, &'a Vec<String>, Vec<String>);

/// The query's `flatten` paths (`alias.field`) by alias: each names a
/// one-to-many alias `fields` follows and a field read of its records,
/// once; anything else is refused, so that no answer comes back in a
/// shape other than the one asked for.
fn flattened<'q>(
    paths: &'q [String],
    relations: &[Followed<'_>],
) -> Result<HashMap<&'q str, &'q str>, PlatformError> {
    let mut out = HashMap::new();
    for path in paths {
        let refused = |why: &str| {
            PlatformError::InvalidQuery(format!("\"{path}\" cannot be flattened: {why}"))
        };
        let Some((alias, field)) = path.split_once('.').filter(|(_, f)| !f.contains('.')) else {
            return Err(refused(
                "name a one-to-many alias and a field of its records",
            ));
        };
        let below = relations
            .iter()
            .find_map(|(name, relation, below, left_out)| {
                let to_many = matches!(
                    relation,
                    Relation::ToMany {
                        ids_only: false,
                        ..
                    }
                );
                (*name == alias && to_many).then_some((below, left_out))
            });
        let Some((below, left_out)) = below else {
            return Err(refused(&format!(
                "\"fields\" follows no one-to-many alias \"{alias}\""
            )));
        };
        let read = below.iter().any(|f| {
            f == "*" || f == field || f.strip_prefix(field).is_some_and(|r| r.starts_with('.'))
        });
        if !read || left_out.iter().any(|f| f == field) {
            return Err(refused(&format!(
                "\"fields\" reads no \"{field}\" of its records"
            )));
        }
        if out.insert(alias, field).is_some() {
            return Err(refused(&format!("\"{alias}\" is flattened twice")));
        }
    }
    Ok(out)
}

/// The fields read only to find related records, left out of the
/// records written.
#[derive(Clone, Copy, Default)]
struct Left<'a> {
    /// `id` (read for the one-to-many relations).
    id: bool,
    /// The field records were read by.
    key: Option<&'a str>,
}

/// The members of the records of `rows`: `"name":` and where each value
/// comes from, in the order of the names (as a record map prints), each
/// name once. `to_one` holds what the references of columns found (with
/// their column), `to_many` what the aliases found.
fn members(
    rows: &TextRows,
    left_out: Left<'_>,
    mut to_one: HashMap<&str, (usize, ToOne)>,
    to_many: Vec<(&str, ToMany)>,
) -> Vec<(Vec<u8>, Member)> {
    let mut named: BTreeMap<&str, Member> = BTreeMap::new();
    for (column, name) in rows.fields().iter().enumerate() {
        let left = (left_out.id && name == "id") || left_out.key == Some(name.as_str());
        if left || named.contains_key(name.as_str()) {
            continue;
        }
        let member = match to_one.remove(name.as_str()) {
            Some((column, found)) => Member::ToOne { column, found },
            None => Member::Cell(column),
        };
        named.insert(name, member);
    }
    for (name, found) in to_many {
        named.insert(name, Member::ToMany(found));
    }
    named
        .into_iter()
        .map(|(name, member)| (member_prefix(name), member))
        .collect()
}

/// `"name":`, as a record's member is written.
fn member_prefix(name: &str) -> Vec<u8> {
    let mut prefix = Vec::with_capacity(name.len() + 3);
    codec::push_str(&mut prefix, name);
    prefix.push(b':');
    prefix
}

/// The filter `{key: {"_in": keys}}`, the keys moved into it (`json!`
/// would copy them).
fn in_list(key: &str, keys: Vec<Value>) -> Value {
    let condition = serde_json::Map::from_iter([("_in".to_string(), Value::Array(keys))]);
    Value::Object(serde_json::Map::from_iter([(
        key.to_string(),
        Value::Object(condition),
    )]))
}

/// The string a cell's JSON text holds, `None` when it holds no string.
fn json_string(cell: &[u8]) -> Option<Cow<'_, str>> {
    let inner = cell.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if !inner.contains(&b'\\') {
        return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
    }
    serde_json::from_slice::<String>(cell).ok().map(Cow::Owned)
}

/// The distinct strings of `column` in `rows`, sorted.
fn string_cells(rows: &TextRows, column: usize) -> Vec<Value> {
    let mut ids: Vec<String> = (0..rows.len())
        .filter_map(|row| json_string(rows.cell(row, column)).map(Cow::into_owned))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter().map(Value::String).collect()
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

    /// Rows of text, one cell per JSON value.
    fn rows(fields: &[&str], cells: &[&[Value]]) -> TextRows {
        let mut rows = TextRows::new(fields.iter().map(|f| f.to_string()).collect());
        for row in cells {
            for value in *row {
                rows.push_cell(|out| serde_json::to_writer(out, value).unwrap());
            }
        }
        rows
    }

    /// Records written one after the other, each holding `related`.
    fn written(texts: &[(&str, u64)]) -> WrittenRecords {
        let mut records = WrittenRecords::default();
        for (text, related) in texts {
            records
                .push(|out| put(out, text.as_bytes(), usize::MAX).map(|()| Some(*related)))
                .unwrap();
        }
        records
    }

    #[test]
    fn a_record_is_written_in_key_order_with_its_relations_in_place() {
        let rows = rows(
            &["title", "movie", "id", "title"],
            &[
                &[json!("T"), json!("m1"), json!("v1"), json!("T")],
                &[json!("U"), json!("gone"), json!("v2"), json!("U")],
            ],
        );
        let movie = ToOne {
            records: written(&[(r#"{"id":"m1"}"#, 0)]),
            by_id: HashMap::from([("m1".into(), 0)]),
        };
        let models = ToMany {
            records: written(&[(r#"{"platform_users_id":{"id":"u"}}"#, 1)]),
            by_parent: HashMap::from([("v1".into(), vec![0])]),
        };
        let to_one = HashMap::from([("movie", (1, movie))]);
        let to_many = vec![("models", models)];
        let members = members(&rows, Left::default(), to_one, to_many);
        let level = Level {
            members,
            id: Some(2),
            rows,
        };
        let mut out = Vec::new();
        // The movie, the link record and the user inside it.
        assert_eq!(level.write_record(0, &mut out, usize::MAX).unwrap(), 3);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"id":"v1","models":[{"platform_users_id":{"id":"u"}}],"movie":{"id":"m1"},"title":"T"}"#
        );
        // A reference the caller may not see is null; no related records
        // is an empty list.
        let mut out = Vec::new();
        assert_eq!(level.write_record(1, &mut out, usize::MAX).unwrap(), 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"id":"v2","models":[],"movie":null,"title":"U"}"#
        );
    }

    #[test]
    fn a_record_past_the_byte_bound_is_refused_before_the_copy() {
        let rows = rows(&["id"], &[&[json!("v1")]]);
        let big = "x".repeat(1000);
        let models = ToMany {
            records: written(&[(&format!("\"{big}\""), 0), (&format!("\"{big}\""), 0)]),
            by_parent: HashMap::from([("v1".into(), vec![0, 1, 0, 1])]),
        };
        let level = Level {
            members: members(
                &rows,
                Left::default(),
                HashMap::new(),
                vec![("models", models)],
            ),
            id: Some(0),
            rows,
        };
        // Four copies of 1,002 bytes do not fit in 3,000: the third is not
        // copied.
        let mut out = Vec::new();
        assert!(level.write_record(0, &mut out, 3000).is_err());
        assert!(out.len() <= 3000, "{} bytes written", out.len());
        let mut out = Vec::new();
        assert_eq!(level.write_record(0, &mut out, 5000).unwrap(), 4);
        assert!(out.len() > 4000);
    }

    #[test]
    fn the_fields_read_only_to_find_records_are_left_out() {
        let rows = rows(
            &["name", "id", "video_id"],
            &[&[json!("n"), json!("l1"), json!("v1")]],
        );
        let left = Left {
            id: true,
            key: Some("video_id"),
        };
        let level = Level {
            members: members(&rows, left, HashMap::new(), Vec::new()),
            id: Some(1),
            rows,
        };
        let mut out = Vec::new();
        level.write_record(0, &mut out, usize::MAX).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), r#"{"name":"n"}"#);
    }

    #[test]
    fn a_cell_holds_a_string_only_when_quoted() {
        assert_eq!(json_string(br#""abc""#).as_deref(), Some("abc"));
        assert_eq!(json_string(br#""a\"b\u00e9""#).as_deref(), Some("a\"bé"));
        assert_eq!(json_string(b"12"), None);
        assert_eq!(json_string(b"null"), None);
        assert_eq!(json_string(b"\""), None);
    }
}
