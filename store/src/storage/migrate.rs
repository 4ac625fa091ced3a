//! Migration bookkeeping and seeding rules, the same on every backend: which
//! migrations ran (`platform_migrations`), the declared fields of every
//! collection (`platform_fields`) and its one-to-many aliases
//! (`platform_aliases`) and the metadata of collections
//! (`platform_collections`), from which the schema is rebuilt, and how each
//! schema step changes them. Steps that change no schema (a grant of
//! permissions) mean what the platform's [`StepRules`] say. A backend runs
//! these inside one of its write transactions that excludes other
//! migrations.

use host_sdk::schema::{Alias, CollectionMeta, Field, Index, Step};
use serde_json::Value;

use super::codec::{self, Cell, Scalar};
use super::sql::{self, Params, SqlConn, WriteConn};
use super::{Columns, StepRules, StoreError, WriteWork, Writer};
use crate::schema::{CollectionDef, Schema};
use crate::values;

/// The bookkeeping tables, created when missing.
pub const BOOKKEEPING: &str = "CREATE TABLE IF NOT EXISTS platform_migrations (
         owner TEXT NOT NULL, id TEXT NOT NULL, applied_at TEXT NOT NULL,
         PRIMARY KEY (owner, id));
     CREATE TABLE IF NOT EXISTS platform_fields (
         collection TEXT NOT NULL, field TEXT NOT NULL, sort INTEGER NOT NULL,
         definition TEXT NOT NULL, PRIMARY KEY (collection, field));
     CREATE TABLE IF NOT EXISTS platform_aliases (
         collection TEXT NOT NULL, alias TEXT NOT NULL,
         definition TEXT NOT NULL, PRIMARY KEY (collection, alias));
     CREATE TABLE IF NOT EXISTS platform_collections (
         collection TEXT NOT NULL PRIMARY KEY, definition TEXT NOT NULL);";

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn text(row: &dyn sql::Row, i: usize) -> Result<String, StoreError> {
    match row.cell(i)? {
        Cell::Text(t) => Ok(String::from_utf8_lossy(t).into_owned()),
        other => Err(backend(format!("expected text, found {other:?}"))),
    }
}

/// Each row's `collection` and `definition` (JSON text) of one of the
/// bookkeeping tables, as `sql` selects them, parsed.
fn definitions<T: serde::de::DeserializeOwned>(
    conn: &mut dyn SqlConn,
    sql: &str,
    what: &str,
) -> Result<Vec<(String, T)>, StoreError> {
    let mut rows: Vec<(String, String)> = Vec::new();
    conn.query(sql, &[], &mut |row| {
        rows.push((text(row, 0)?, text(row, 1)?));
        Ok(())
    })?;
    rows.into_iter()
        .map(|(collection, definition)| {
            serde_json::from_str(&definition)
                .map(|parsed| (collection.clone(), parsed))
                .map_err(|e| backend(format!("bad {what} in {collection}: {e}")))
        })
        .collect()
}

/// The schema as recorded in `platform_fields`, `platform_aliases` and
/// `platform_collections`.
pub fn load_schema(conn: &mut dyn SqlConn) -> Result<Schema, StoreError> {
    let fields: Vec<(String, Field)> = definitions(
        conn,
        "SELECT collection, definition FROM platform_fields ORDER BY collection, sort",
        "field definition",
    )?;
    let mut grouped: Vec<(String, Vec<Field>)> = Vec::new();
    for (collection, field) in fields {
        match grouped.last_mut() {
            Some((name, fields)) if *name == collection => fields.push(field),
            _ => grouped.push((collection, vec![field])),
        }
    }
    let mut schema = Schema::default();
    for (name, fields) in grouped {
        schema.insert(CollectionDef::new(&name, fields));
    }
    let aliases: Vec<(String, Alias)> = definitions(
        conn,
        "SELECT collection, definition FROM platform_aliases ORDER BY collection, alias",
        "alias definition",
    )?;
    for (collection, alias) in aliases {
        schema.add_alias(&collection, alias);
    }
    let metas: Vec<(String, CollectionMeta)> = definitions(
        conn,
        "SELECT collection, definition FROM platform_collections",
        "collection meta",
    )?;
    for (collection, meta) in metas {
        schema.set_collection_meta(&collection, meta);
    }
    Ok(schema)
}

/// The migrations a store knows are recorded: read at open, and added to
/// as it records or finds more. A migration once recorded stays recorded,
/// so one known here is skipped without a statement or the migrations'
/// lock (a start over an up-to-date database then costs one query, not a
/// transaction per migration).
#[derive(Debug, Default)]
pub struct KnownRecorded(parking_lot::Mutex<std::collections::HashSet<(String, String)>>);

impl KnownRecorded {
    /// Every migration recorded in the database.
    pub fn load(conn: &mut dyn SqlConn) -> Result<Self, StoreError> {
        let mut known = std::collections::HashSet::new();
        conn.query(
            "SELECT owner, id FROM platform_migrations",
            &[],
            &mut |row| {
                known.insert((text(row, 0)?, text(row, 1)?));
                Ok(())
            },
        )?;
        Ok(Self(parking_lot::Mutex::new(known)))
    }

    /// Every migration known to be recorded, sorted.
    pub fn all(&self) -> Vec<(String, String)> {
        let mut all: Vec<(String, String)> = self.0.lock().iter().cloned().collect();
        all.sort();
        all
    }

    /// `false` without running `apply` when `owner`/`id` is known to be
    /// recorded; otherwise what `apply` answers (whether it ran it), the
    /// migration known to be recorded from then on.
    pub fn unless_known(
        &self,
        owner: &str,
        id: &str,
        apply: impl FnOnce() -> Result<bool, StoreError>,
    ) -> Result<bool, StoreError> {
        let key = (owner.to_string(), id.to_string());
        if self.0.lock().contains(&key) {
            return Ok(false);
        }
        let ran = apply()?;
        self.0.lock().insert(key);
        Ok(ran)
    }
}

/// Whether `owner`/`id` is recorded among the migrations.
pub fn recorded(conn: &mut dyn SqlConn, owner: &str, id: &str) -> Result<bool, StoreError> {
    let mut p = Params::new(conn.dialect());
    let sql = format!(
        "SELECT 1 FROM platform_migrations WHERE owner = {} AND id = {}",
        p.push(Scalar::Text(owner.into())),
        p.push(Scalar::Text(id.into()))
    );
    any_row(conn, &sql, &p.values)
}

/// Whether a query answers any row.
fn any_row(conn: &mut dyn SqlConn, sql: &str, values: &[Scalar]) -> Result<bool, StoreError> {
    let mut found = false;
    conn.query(sql, values, &mut |_| {
        found = true;
        Ok(())
    })?;
    Ok(found)
}

pub fn record(conn: &mut dyn SqlConn, owner: &str, id: &str) -> Result<(), StoreError> {
    let mut p = Params::new(conn.dialect());
    let sql = format!(
        "INSERT INTO platform_migrations (owner, id, applied_at) VALUES ({}, {}, {})",
        p.push(Scalar::Text(owner.into())),
        p.push(Scalar::Text(id.into())),
        p.push(Scalar::Text(values::now_timestamp()))
    );
    conn.execute(&sql, &p.values)?;
    Ok(())
}

/// Runs `work` unless `owner`/`id` is recorded, and records it; returns
/// whether it ran. The caller's transaction makes it atomic.
pub fn run_once(
    conn: &mut dyn SqlConn,
    owner: &str,
    id: &str,
    work: &mut WriteWork<'_>,
) -> Result<bool, StoreError> {
    if recorded(conn, owner, id)? {
        return Ok(false);
    }
    work(&mut WriteConn(conn))?;
    record(conn, owner, id)?;
    Ok(true)
}

/// What [`apply`] did, and the schema as stored once it is done.
pub struct Applied {
    pub ran: bool,
    /// Read in the migration's transaction: it holds the fields of this
    /// migration, and of one another process applied first.
    pub schema: Schema,
}

/// Applies the steps of one migration unless it is recorded, and records
/// it. The caller's transaction makes it atomic.
pub fn apply(
    conn: &mut dyn SqlConn,
    owner: &str,
    id: &str,
    steps: &[Step],
    rules: &dyn StepRules,
) -> Result<Applied, StoreError> {
    let ran = !recorded(conn, owner, id)?;
    if ran {
        let mut schema = load_schema(conn)?;
        let label = format!("migration {owner}/{id}");
        for step in steps {
            apply_step(conn, &mut schema, step, &label, rules)
                .map_err(|e| StoreError::Invalid(format!("{label}: {e}")))?;
        }
        record(conn, owner, id)?;
    }
    Ok(Applied {
        ran,
        schema: load_schema(conn)?,
    })
}

fn save_field(
    conn: &mut dyn SqlConn,
    collection: &str,
    sort: i64,
    field: &Field,
) -> Result<(), StoreError> {
    let definition = serde_json::to_string(field).map_err(backend)?;
    let mut p = Params::new(conn.dialect());
    let sql = format!(
        "DELETE FROM platform_fields WHERE collection = {} AND field = {}",
        p.push(Scalar::Text(collection.into())),
        p.push(Scalar::Text(field.field.clone()))
    );
    conn.execute(&sql, &p.values)?;
    let mut p = Params::new(conn.dialect());
    let sql = format!(
        "INSERT INTO platform_fields (collection, field, sort, definition) VALUES ({}, {}, {}, {})",
        p.push(Scalar::Text(collection.into())),
        p.push(Scalar::Text(field.field.clone())),
        p.push(Scalar::Int(sort)),
        p.push(Scalar::Text(definition))
    );
    conn.execute(&sql, &p.values)?;
    Ok(())
}

fn check_index_fields(def: &CollectionDef, index: &Index) -> Result<(), StoreError> {
    match index
        .fields
        .iter()
        .find(|f| !def.has(sql::index_field(f).0))
    {
        Some(f) => Err(StoreError::Invalid(format!(
            "index on unknown field {}.{f}",
            def.name
        ))),
        None if index.fields.is_empty() => Err(StoreError::Invalid("index without fields".into())),
        None => Ok(()),
    }
}

fn no_collection(collection: &str) -> StoreError {
    StoreError::Invalid(format!("no collection {collection}"))
}

/// Applies one step of the migration `label`; `schema` tracks the
/// collections as the steps change them. A step that changes no schema
/// and seeds no item goes to `rules`.
fn apply_step(
    conn: &mut dyn SqlConn,
    schema: &mut Schema,
    step: &Step,
    label: &str,
    rules: &dyn StepRules,
) -> Result<(), StoreError> {
    let d = conn.dialect();
    match step {
        Step::CreateCollection {
            collection,
            fields,
            indexes,
        } => {
            if schema.get(collection).is_some() {
                return Err(StoreError::Invalid(format!(
                    "collection {collection} already exists"
                )));
            }
            let def = CollectionDef::new(collection, fields.clone());
            conn.execute_batch(&sql::create_table(d, &def)?)?;
            for (i, field) in def.fields.iter().enumerate() {
                save_field(conn, collection, i as i64, field)?;
            }
            for index in indexes {
                check_index_fields(&def, index)?;
                conn.execute_batch(&sql::index(conn.dialect(), collection, index))?;
            }
            schema.insert(def);
        }
        Step::AddField { collection, field } => {
            let def = schema
                .get(collection)
                .ok_or_else(|| no_collection(collection))?;
            if def.has(&field.field) {
                return Err(StoreError::Invalid(format!(
                    "{collection}.{} already exists",
                    field.field
                )));
            }
            let sort = def.fields.len() as i64;
            conn.execute_batch(&format!(
                "ALTER TABLE {} ADD COLUMN {}",
                sql::quote(collection),
                sql::column_def(d, field)?
            ))?;
            save_field(conn, collection, sort, field)?;
            schema.add_field(collection, field.clone());
        }
        Step::SetOnDelete {
            collection,
            field,
            on_delete,
        } => {
            let def = schema
                .get(collection)
                .ok_or_else(|| no_collection(collection))?;
            let Some(mut declared) = def.field(field).cloned() else {
                return Err(StoreError::Invalid(format!(
                    "no field {collection}.{field}"
                )));
            };
            if declared.references.is_none() {
                return Err(StoreError::Invalid(format!(
                    "{collection}.{field} is not a reference"
                )));
            }
            declared.on_delete = Some(*on_delete);
            let sort = def
                .fields
                .iter()
                .position(|f| f.field == *field)
                .unwrap_or(0) as i64;
            save_field(conn, collection, sort, &declared)?;
            schema.replace_field(collection, declared);
        }
        Step::SetFieldMeta {
            collection,
            field,
            meta,
        } => {
            let def = schema
                .get(collection)
                .ok_or_else(|| no_collection(collection))?;
            let Some(mut declared) = def.field(field).cloned() else {
                return Err(StoreError::Invalid(format!(
                    "no stored field {collection}.{field} to set the meta of"
                )));
            };
            declared.meta = Some(declared.meta.unwrap_or_default().merged(meta));
            let sort = def
                .fields
                .iter()
                .position(|f| f.field == *field)
                .unwrap_or(0) as i64;
            save_field(conn, collection, sort, &declared)?;
            schema.replace_field(collection, declared);
        }
        Step::SetCollectionMeta { collection, meta } => {
            let def = schema
                .get(collection)
                .ok_or_else(|| no_collection(collection))?;
            for name in [&meta.sort_field, &meta.archive_field]
                .into_iter()
                .flatten()
            {
                if !def.has(name) {
                    return Err(StoreError::Invalid(format!(
                        "no field {collection}.{name} named in its meta"
                    )));
                }
            }
            let merged = def.meta.clone().unwrap_or_default().merged(meta);
            let definition = serde_json::to_string(&merged).map_err(backend)?;
            let mut p = Params::new(d);
            let sql = format!(
                "INSERT INTO platform_collections (collection, definition) VALUES ({}, {}) \
                 ON CONFLICT (collection) DO UPDATE SET definition = excluded.definition",
                p.push(Scalar::Text(collection.clone())),
                p.push(Scalar::Text(definition))
            );
            conn.execute(&sql, &p.values)?;
            schema.set_collection_meta(collection, merged);
        }
        Step::CreateIndex { collection, index } => {
            let def = schema
                .get(collection)
                .ok_or_else(|| no_collection(collection))?;
            check_index_fields(def, index)?;
            conn.execute_batch(&sql::index(conn.dialect(), collection, index))?;
        }
        Step::DropIndex { collection, index } => {
            let def = schema
                .get(collection)
                .ok_or_else(|| no_collection(collection))?;
            check_index_fields(def, index)?;
            let name = sql::index_name(collection, index);
            let mut p = Params::new(d);
            let sql = d.index_uniqueness(collection, &name, &mut p);
            let mut unique = None;
            conn.query(&sql, &p.values, &mut |row| {
                unique = Some(matches!(row.cell(0)?, Cell::Bool(true) | Cell::Int(1..)));
                Ok(())
            })?;
            match unique {
                // Dropped by hand already: what the step asks for holds.
                None => log::warn!("{label}: no index {name} on {collection} to drop"),
                // A plain index and a unique one of the same fields share a
                // name: the step must not drop a rule while saying it drops
                // a speed-up (the only-add check reads what it says).
                Some(unique) if unique != index.unique => {
                    return Err(StoreError::Invalid(format!(
                        "the index {name} on {collection} is {}, not as the step names it",
                        if unique { "unique" } else { "plain" }
                    )))
                }
                Some(_) => conn.execute_batch(&sql::drop_index(&name))?,
            }
        }
        Step::CreateAlias {
            collection,
            alias,
            related,
            field,
            sort,
        } => {
            let alias = Alias {
                alias: alias.clone(),
                related: related.clone(),
                field: field.clone(),
                sort: sort.clone(),
            };
            check_alias(schema, collection, &alias)?;
            let definition = serde_json::to_string(&alias).map_err(backend)?;
            let mut p = Params::new(d);
            let sql = format!(
                "INSERT INTO platform_aliases (collection, alias, definition) VALUES ({}, {}, {})",
                p.push(Scalar::Text(collection.clone())),
                p.push(Scalar::Text(alias.alias.clone())),
                p.push(Scalar::Text(definition))
            );
            conn.execute(&sql, &p.values)?;
            schema.add_alias(collection, alias);
        }
        Step::InsertItems { collection, items } => {
            let def = schema
                .get(collection)
                .cloned()
                .ok_or_else(|| no_collection(collection))?;
            let now = values::now_timestamp();
            for item in items {
                let record = seed_record(&def, item, &now)?;
                WriteConn(conn).insert(&def, &record)?;
            }
        }
        // What changes no schema (a grant of permissions) has the meaning
        // the platform above gives it.
        other => rules.apply(&mut WriteConn(conn), schema, other, label)?,
    }
    Ok(())
}

/// Refuses an alias that could not be read: a name that is not a plain
/// identifier or is taken, or a `field` of `related` that does not refer to
/// `collection`.
fn check_alias(schema: &Schema, collection: &str, alias: &Alias) -> Result<(), StoreError> {
    let def = schema
        .get(collection)
        .ok_or_else(|| no_collection(collection))?;
    let name = &alias.alias;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(StoreError::Invalid(format!(
            "alias name \"{name}\" of {collection}: letters, digits and _ only"
        )));
    }
    if def.has(name) || def.alias(name).is_some() {
        return Err(StoreError::Invalid(format!(
            "{collection}.{name} already exists"
        )));
    }
    let related = schema
        .get(&alias.related)
        .ok_or_else(|| no_collection(&alias.related))?;
    let refers = related
        .field(&alias.field)
        .and_then(|f| f.references.as_deref());
    if refers != Some(collection) {
        return Err(StoreError::Invalid(format!(
            "{}.{} does not refer to {collection}",
            alias.related, alias.field
        )));
    }
    if let Some(sort) = &alias.sort {
        if !related.has(sort) {
            return Err(StoreError::Invalid(format!(
                "no field {}.{sort} to sort {collection}.{name} by",
                alias.related
            )));
        }
    }
    Ok(())
}

/// A seeded item as stored: values normalised to their fields, with an id,
/// `date_created` and the fields' defaults filled in.
pub fn seed_record(def: &CollectionDef, item: &Value, now: &str) -> Result<Columns, StoreError> {
    let collection = &def.name;
    let Value::Object(given) = item else {
        return Err(StoreError::Invalid(format!(
            "seed item of {collection} is not an object"
        )));
    };
    if let Some(key) = given.keys().find(|k| !def.has(k)) {
        return Err(StoreError::Invalid(format!(
            "seed item of {collection} has unknown field {key}"
        )));
    }
    let mut record = Columns::new();
    for field in &def.fields {
        let value = match given.get(&field.field) {
            Some(v) => values::normalize(field, v, false).map_err(StoreError::Invalid)?,
            None if field.field == "id" => Value::String(uuid::Uuid::new_v4().to_string()),
            None if field.field == "date_created" => Value::String(now.to_string()),
            None => match &field.default {
                Some(d) => d.clone(),
                None => continue,
            },
        };
        record.insert(field.field.clone(), codec::to_scalar(field, &value));
    }
    Ok(record)
}
