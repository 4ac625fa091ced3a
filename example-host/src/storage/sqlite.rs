//! The SQLite backend: WAL mode, a connection pool, serialised write
//! transactions, and the translation of schema steps and queries to SQL.

use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use host_sdk::schema::{Field, FieldType, Index, Step};
use parking_lot::{Mutex, RwLock};
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::config::DbConfig;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{params_from_iter, Connection, ErrorCode};
use serde_json::{Map, Value};

use super::{Conn, ConnWork, Record, Store, StoreError};
use crate::query::{AggFn, AggregateQuery, Comparison, Filter, ReadQuery, TextMatch};
use crate::schema::{CollectionDef, Schema};
use crate::values;

mod row_text;

const POOL_SIZE: u32 = 16;
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

thread_local! {
    /// Set while this thread holds the write transaction, to turn a nested
    /// write (which would wait on itself forever) into an error.
    static IN_WRITE: Cell<bool> = const { Cell::new(false) };
}

pub struct SqliteStore {
    pool: r2d2::Pool<SqliteConnectionManager>,
    /// One writer at a time inside this process: writers queue here instead
    /// of spinning on SQLite's busy handler. Other processes (the schedule
    /// command) are covered by the busy timeout.
    write_lock: Mutex<()>,
    schema: RwLock<Arc<Schema>>,
    changes: Mutex<ChangeWatch>,
}

/// A connection of its own that never writes, so that SQLite's
/// `data_version` on it moves with every commit of any other connection,
/// in this process or another; turned into a counter that only grows.
struct ChangeWatch {
    conn: Connection,
    last_seen: i64,
    version: u64,
}

impl ChangeWatch {
    fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path).map_err(map_sql_error)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(map_sql_error)?;
        let last_seen = Self::read(&conn)?;
        Ok(Self {
            conn,
            last_seen,
            version: 1,
        })
    }

    fn read(conn: &Connection) -> Result<i64, StoreError> {
        conn.prepare_cached("PRAGMA data_version")
            .and_then(|mut st| st.query_row([], |row| row.get(0)))
            .map_err(map_sql_error)
    }

    fn version(&mut self) -> u64 {
        match Self::read(&self.conn) {
            Ok(seen) if seen == self.last_seen => {}
            Ok(seen) => {
                self.last_seen = seen;
                self.version += 1;
            }
            // Unknown: a number never handed out before, so that nothing
            // computed earlier is taken for current.
            Err(e) => {
                log::warn!("cannot read the data version: {e}");
                self.version += 1;
            }
        }
        self.version
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn map_sql_error(e: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(f, msg) = &e {
        match f.code {
            ErrorCode::ConstraintViolation
                if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                    || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
            {
                return unique_violation(msg.as_deref().unwrap_or_default());
            }
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => return StoreError::Busy,
            _ => {}
        }
    }
    backend(e)
}

/// The settings of every pooled connection. Connection-local only: the
/// journal mode belongs to the file and is set once, at open, because
/// connections switching a new file to WAL at the same moment make one of
/// them fail at once with "database is locked" (one escalates its lock
/// while the other holds its own, which no busy timeout waits out).
fn set_up_connection(c: &mut Connection) -> rusqlite::Result<()> {
    c.busy_timeout(BUSY_TIMEOUT)?;
    c.set_prepared_statement_cache_capacity(256);
    // Plans that do not depend on the values bound: otherwise SQLite
    // marks `LIMIT ?` as plan-relevant and recompiles a cached
    // statement every time a limit is bound, i.e. on every read.
    c.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    c.execute_batch(
        "PRAGMA synchronous = NORMAL;
         PRAGMA foreign_keys = OFF;
         PRAGMA temp_store = MEMORY;",
    )
}

/// SQLite names the columns of a unique violation as
/// `UNIQUE constraint failed: table.a, table.b`.
fn unique_violation(message: &str) -> StoreError {
    let columns = message
        .split_once(':')
        .map_or("", |(_, columns)| columns)
        .split(',')
        .filter_map(|c| c.trim().split_once('.'));
    let mut collection = String::new();
    let mut fields = Vec::new();
    for (table, column) in columns {
        collection = table.to_string();
        fields.push(column.to_string());
    }
    StoreError::NotUnique { collection, fields }
}

fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and its parent folder.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| backend(format!("cannot create {}: {e}", parent.display())))?;
        }
        // WAL is a property of the file: set here, once, before the pool
        // opens its first connections in parallel (see `set_up_connection`).
        {
            let first = Connection::open(path).map_err(map_sql_error)?;
            first.busy_timeout(BUSY_TIMEOUT).map_err(map_sql_error)?;
            first
                .query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
                .map_err(map_sql_error)?;
        }
        let manager = SqliteConnectionManager::file(path).with_init(set_up_connection);
        let pool = r2d2::Pool::builder()
            .max_size(POOL_SIZE)
            .min_idle(Some(2))
            .connection_timeout(Duration::from_secs(30))
            .build(manager)
            .map_err(|e| backend(format!("cannot open {}: {e}", path.display())))?;
        let store = Self {
            pool,
            write_lock: Mutex::new(()),
            schema: RwLock::new(Arc::new(Schema::default())),
            changes: Mutex::new(ChangeWatch::open(path)?),
        };
        store.with_conn(|c| {
            c.execute_batch(
                "CREATE TABLE IF NOT EXISTS platform_migrations (
                     owner TEXT NOT NULL, id TEXT NOT NULL, applied_at TEXT NOT NULL,
                     PRIMARY KEY (owner, id));
                 CREATE TABLE IF NOT EXISTS platform_fields (
                     collection TEXT NOT NULL, field TEXT NOT NULL, sort INTEGER NOT NULL,
                     definition TEXT NOT NULL, PRIMARY KEY (collection, field));",
            )
            .map_err(map_sql_error)
        })?;
        store.reload_schema()?;
        Ok(store)
    }

    fn with_conn<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self
            .pool
            .get()
            .map_err(|e| backend(format!("no connection: {e}")))?;
        f(&mut conn)
    }

    fn reload_schema(&self) -> Result<(), StoreError> {
        let schema = self.with_conn(|c| load_schema(c))?;
        *self.schema.write() = Arc::new(schema);
        Ok(())
    }

    /// Runs `f` inside `BEGIN IMMEDIATE … COMMIT`, holding the write lock.
    fn in_write_tx<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if IN_WRITE.with(Cell::get) {
            return Err(StoreError::Backend(
                "a write was attempted outside the open transaction of this thread; \
                 use the transaction's services"
                    .into(),
            ));
        }
        let _guard = self.write_lock.lock();
        IN_WRITE.with(|w| w.set(true));
        let result = self.with_conn(|conn| {
            conn.execute_batch("BEGIN IMMEDIATE")
                .map_err(map_sql_error)?;
            match f(conn) {
                Ok(value) => match conn.execute_batch("COMMIT") {
                    Ok(()) => Ok(value),
                    Err(e) => {
                        let _ = conn.execute_batch("ROLLBACK");
                        Err(map_sql_error(e))
                    }
                },
                Err(e) => {
                    let _ = conn.execute_batch("ROLLBACK");
                    Err(e)
                }
            }
        });
        IN_WRITE.with(|w| w.set(false));
        result
    }
}

fn load_schema(c: &Connection) -> Result<Schema, StoreError> {
    let mut stmt = c
        .prepare("SELECT collection, definition FROM platform_fields ORDER BY collection, sort")
        .map_err(map_sql_error)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .map_err(map_sql_error)?;
    let mut grouped: Vec<(String, Vec<Field>)> = Vec::new();
    for row in rows {
        let (collection, definition) = row.map_err(map_sql_error)?;
        let field: Field = serde_json::from_str(&definition)
            .map_err(|e| backend(format!("bad field definition in {collection}: {e}")))?;
        match grouped.last_mut() {
            Some((name, fields)) if *name == collection => fields.push(field),
            _ => grouped.push((collection, vec![field])),
        }
    }
    let mut schema = Schema::default();
    for (name, fields) in grouped {
        schema.insert(CollectionDef::new(&name, fields));
    }
    Ok(schema)
}

fn column_type(kind: FieldType) -> &'static str {
    match kind {
        FieldType::Integer | FieldType::Boolean => "INTEGER",
        FieldType::Float => "REAL",
        _ => "TEXT",
    }
}

fn sql_literal(field: &Field, v: &Value) -> Result<String, StoreError> {
    Ok(match to_sql(field, v) {
        SqlValue::Null => "NULL".into(),
        SqlValue::Integer(i) => i.to_string(),
        SqlValue::Real(f) => format!("{f:?}"),
        SqlValue::Text(s) => format!("'{}'", s.replace('\'', "''")),
        SqlValue::Blob(_) => return Err(backend("blob defaults are not supported")),
    })
}

fn column_def(field: &Field) -> Result<String, StoreError> {
    let mut def = format!("{} {}", quote(&field.field), column_type(field.kind));
    if field.field == "id" {
        def.push_str(" PRIMARY KEY NOT NULL");
        return Ok(def);
    }
    if !field.nullable {
        def.push_str(" NOT NULL");
    }
    if let Some(default) = &field.default {
        def.push_str(" DEFAULT ");
        def.push_str(&sql_literal(field, default)?);
    }
    if field.unique {
        def.push_str(" UNIQUE");
    }
    Ok(def)
}

fn index_sql(collection: &str, index: &Index) -> String {
    let name = format!("idx_{}_{}", collection, index.fields.join("_"));
    let cols: Vec<String> = index.fields.iter().map(|f| quote(f)).collect();
    format!(
        "CREATE {}INDEX IF NOT EXISTS {} ON {} ({})",
        if index.unique { "UNIQUE " } else { "" },
        quote(&name),
        quote(collection),
        cols.join(", ")
    )
}

fn record_field(
    c: &Connection,
    collection: &str,
    sort: i64,
    field: &Field,
) -> Result<(), StoreError> {
    let definition = serde_json::to_string(field).map_err(backend)?;
    c.execute(
        "INSERT OR REPLACE INTO platform_fields (collection, field, sort, definition) VALUES (?, ?, ?, ?)",
        rusqlite::params![collection, field.field, sort, definition],
    )
    .map_err(map_sql_error)?;
    Ok(())
}

/// Applies one step; `schema` tracks the collections as the steps change them.
fn apply_step(c: &mut Connection, schema: &mut Schema, step: &Step) -> Result<(), StoreError> {
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
            let cols = def
                .fields
                .iter()
                .map(column_def)
                .collect::<Result<Vec<_>, _>>()?;
            c.execute_batch(&format!(
                "CREATE TABLE {} ({})",
                quote(collection),
                cols.join(", ")
            ))
            .map_err(map_sql_error)?;
            for (i, field) in def.fields.iter().enumerate() {
                record_field(c, collection, i as i64, field)?;
            }
            for index in indexes {
                check_index_fields(&def, index)?;
                c.execute_batch(&index_sql(collection, index))
                    .map_err(map_sql_error)?;
            }
            schema.insert(def);
        }
        Step::AddField { collection, field } => {
            let Some(def) = schema.get(collection) else {
                return Err(StoreError::Invalid(format!("no collection {collection}")));
            };
            if def.has(&field.field) {
                return Err(StoreError::Invalid(format!(
                    "{collection}.{} already exists",
                    field.field
                )));
            }
            let sort = def.fields.len() as i64;
            c.execute_batch(&format!(
                "ALTER TABLE {} ADD COLUMN {}",
                quote(collection),
                column_def(field)?
            ))
            .map_err(map_sql_error)?;
            record_field(c, collection, sort, field)?;
            schema.add_field(collection, field.clone());
        }
        Step::SetOnDelete {
            collection,
            field,
            on_delete,
        } => {
            let Some(def) = schema.get(collection) else {
                return Err(StoreError::Invalid(format!("no collection {collection}")));
            };
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
            let sort: i64 = c
                .query_row(
                    "SELECT sort FROM platform_fields WHERE collection = ? AND field = ?",
                    [collection, field],
                    |r| r.get(0),
                )
                .map_err(map_sql_error)?;
            record_field(c, collection, sort, &declared)?;
            schema.replace_field(collection, declared);
        }
        Step::CreateIndex { collection, index } => {
            let Some(def) = schema.get(collection) else {
                return Err(StoreError::Invalid(format!("no collection {collection}")));
            };
            check_index_fields(def, index)?;
            c.execute_batch(&index_sql(collection, index))
                .map_err(map_sql_error)?;
        }
        Step::InsertItems { collection, items } => {
            let Some(def) = schema.get(collection).cloned() else {
                return Err(StoreError::Invalid(format!("no collection {collection}")));
            };
            let now = values::now_timestamp();
            for item in items {
                let Value::Object(given) = item else {
                    return Err(StoreError::Invalid(format!(
                        "seed item of {collection} is not an object"
                    )));
                };
                let mut record = Map::new();
                for field in &def.fields {
                    let value = match given.get(&field.field) {
                        Some(v) => {
                            values::normalize(field, v, false).map_err(StoreError::Invalid)?
                        }
                        None if field.field == "id" => {
                            Value::String(uuid::Uuid::new_v4().to_string())
                        }
                        None if field.field == "date_created" => Value::String(now.clone()),
                        None => match &field.default {
                            Some(d) => d.clone(),
                            None => continue,
                        },
                    };
                    record.insert(field.field.clone(), value);
                }
                for key in given.keys() {
                    if !def.has(key) {
                        return Err(StoreError::Invalid(format!(
                            "seed item of {collection} has unknown field {key}"
                        )));
                    }
                }
                SqliteConn { conn: c }.insert(&def, &record)?;
            }
        }
    }
    Ok(())
}

fn check_index_fields(def: &CollectionDef, index: &Index) -> Result<(), StoreError> {
    match index.fields.iter().find(|f| !def.has(f)) {
        Some(f) => Err(StoreError::Invalid(format!(
            "index on unknown field {}.{f}",
            def.name
        ))),
        None if index.fields.is_empty() => Err(StoreError::Invalid("index without fields".into())),
        None => Ok(()),
    }
}

impl Store for SqliteStore {
    fn schema(&self) -> Arc<Schema> {
        self.schema.read().clone()
    }

    fn read(&self, work: &mut ConnWork<'_>) -> Result<(), StoreError> {
        self.with_conn(|conn| work(&mut SqliteConn { conn }))
    }

    fn write(&self, work: &mut ConnWork<'_>) -> Result<(), StoreError> {
        self.in_write_tx(|conn| work(&mut SqliteConn { conn }))
    }

    fn data_version(&self) -> u64 {
        self.changes.lock().version()
    }

    fn track_changes(&self, collections: &[&str]) -> Result<(), StoreError> {
        // Triggers count every change of the tracked tables, by any
        // connection of any process, in the changing transaction.
        self.in_write_tx(|conn| {
            conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS platform_tracked_changes (
                     id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
                 INSERT OR IGNORE INTO platform_tracked_changes (id, version) VALUES (1, 0);",
            )
            .map_err(map_sql_error)?;
            for table in collections {
                for event in ["INSERT", "UPDATE", "DELETE"] {
                    conn.execute_batch(&format!(
                        "CREATE TRIGGER IF NOT EXISTS {} AFTER {event} ON {} BEGIN
                             UPDATE platform_tracked_changes SET version = version + 1 WHERE id = 1;
                         END;",
                        quote(&format!("{table}_{}_tracked", event.to_lowercase())),
                        quote(table),
                    ))
                    .map_err(map_sql_error)?;
                }
            }
            Ok(())
        })
    }

    fn tracked_version(&self) -> Result<u64, StoreError> {
        self.with_conn(|c| {
            c.prepare_cached("SELECT version FROM platform_tracked_changes WHERE id = 1")
                .and_then(|mut s| s.query_row([], |r| r.get::<_, i64>(0)))
                .map(|v| v as u64)
                .map_err(map_sql_error)
        })
    }

    fn run_once(&self, owner: &str, id: &str, work: &mut ConnWork<'_>) -> Result<bool, StoreError> {
        self.in_write_tx(|conn| {
            if migration_recorded(conn, owner, id)? {
                return Ok(false);
            }
            work(&mut SqliteConn { conn: &mut *conn })?;
            record_migration(conn, owner, id)?;
            Ok(true)
        })
    }

    fn migrate(&self, owner: &str, id: &str, steps: &[Step]) -> Result<bool, StoreError> {
        let applied = self.in_write_tx(|conn| {
            if migration_recorded(conn, owner, id)? {
                return Ok(false);
            }
            let mut schema = load_schema(conn)?;
            for step in steps {
                apply_step(conn, &mut schema, step)
                    .map_err(|e| StoreError::Invalid(format!("migration {owner}/{id}: {e}")))?;
            }
            record_migration(conn, owner, id)?;
            Ok(true)
        })?;
        if applied {
            self.reload_schema()?;
        }
        Ok(applied)
    }
}

fn migration_recorded(conn: &Connection, owner: &str, id: &str) -> Result<bool, StoreError> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM platform_migrations WHERE owner = ? AND id = ?)",
        [owner, id],
        |r| r.get(0),
    )
    .map_err(map_sql_error)
}

fn record_migration(conn: &Connection, owner: &str, id: &str) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO platform_migrations (owner, id, applied_at) VALUES (?, ?, ?)",
        [owner, id, &values::now_timestamp()],
    )
    .map_err(map_sql_error)?;
    Ok(())
}

/// A connection of the pool, seen through the storage interface.
pub struct SqliteConn<'a> {
    conn: &'a mut Connection,
}

pub(crate) fn to_sql(field: &Field, v: &Value) -> SqlValue {
    match (field.kind, v) {
        (_, Value::Null) => SqlValue::Null,
        (FieldType::Json, v) => SqlValue::Text(v.to_string()),
        (_, Value::Bool(b)) => SqlValue::Integer(*b as i64),
        (FieldType::Float, Value::Number(n)) => SqlValue::Real(n.as_f64().unwrap_or(0.0)),
        (_, Value::Number(n)) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => SqlValue::Real(n.as_f64().unwrap_or(0.0)),
        },
        (_, Value::String(s)) => SqlValue::Text(s.clone()),
        (_, other) => SqlValue::Text(other.to_string()),
    }
}

/// A float as JSON: integral values print as integers, as JavaScript does.
fn float_value(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

fn from_sql(kind: Option<FieldType>, v: ValueRef<'_>) -> Value {
    match (kind, v) {
        (_, ValueRef::Null) => Value::Null,
        (Some(FieldType::Boolean), ValueRef::Integer(i)) => Value::Bool(i != 0),
        (Some(FieldType::Float), ValueRef::Integer(i)) => Value::from(i),
        (_, ValueRef::Integer(i)) => Value::from(i),
        (_, ValueRef::Real(f)) => float_value(f),
        (Some(FieldType::Json), ValueRef::Text(t)) => serde_json::from_slice(t)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(t).into_owned())),
        (_, ValueRef::Text(t)) => Value::String(String::from_utf8_lossy(t).into_owned()),
        (_, ValueRef::Blob(b)) => Value::String(String::from_utf8_lossy(b).into_owned()),
    }
}

/// Builds a WHERE clause with positional parameters.
struct SqlBuilder<'c> {
    collection: &'c CollectionDef,
    sql: String,
    params: Vec<SqlValue>,
}

impl<'c> SqlBuilder<'c> {
    fn new(collection: &'c CollectionDef) -> Self {
        Self {
            collection,
            sql: String::new(),
            params: Vec::new(),
        }
    }

    fn param(&mut self, field: &Field, v: &Value) {
        self.params.push(to_sql(field, v));
        self.sql.push('?');
    }

    /// The definition of a field the filter names.
    fn field_def(&self, field: &str) -> Result<Field, StoreError> {
        self.collection
            .field(field)
            .cloned()
            .ok_or_else(|| StoreError::Invalid(format!("unknown field {field}")))
    }

    fn filter(&mut self, f: &Filter) -> Result<(), StoreError> {
        match f {
            Filter::And(parts) | Filter::Or(parts) => {
                if parts.is_empty() {
                    self.sql.push_str(if matches!(f, Filter::And(_)) {
                        "1"
                    } else {
                        "0"
                    });
                    return Ok(());
                }
                let joiner = if matches!(f, Filter::And(_)) {
                    " AND "
                } else {
                    " OR "
                };
                self.sql.push('(');
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        self.sql.push_str(joiner);
                    }
                    self.filter(part)?;
                }
                self.sql.push(')');
            }
            Filter::Compare { field, op, value } => {
                let def = self.field_def(field)?;
                let sym = match op {
                    Comparison::Eq => "=",
                    Comparison::Neq => "<>",
                    Comparison::Lt => "<",
                    Comparison::Lte => "<=",
                    Comparison::Gt => ">",
                    Comparison::Gte => ">=",
                };
                self.sql.push_str(&format!("{} {sym} ", quote(field)));
                self.param(&def, value);
            }
            Filter::In {
                field,
                negated,
                values,
            } => {
                let def = self.field_def(field)?;
                // One parameter whatever the list's length, so the
                // statement is cached and never hits SQLite's variable
                // limit.
                let list: Vec<Value> = values
                    .iter()
                    .map(|i| match to_sql(&def, i) {
                        SqlValue::Integer(n) => Value::from(n),
                        SqlValue::Real(f) => Value::from(f),
                        SqlValue::Text(s) => Value::String(s),
                        _ => Value::Null,
                    })
                    .collect();
                self.sql.push_str(&format!(
                    "{} {}IN (SELECT value FROM json_each(?))",
                    quote(field),
                    if *negated { "NOT " } else { "" }
                ));
                self.params
                    .push(SqlValue::Text(Value::Array(list).to_string()));
            }
            Filter::IsNull { field, null } => {
                self.field_def(field)?;
                self.sql.push_str(&quote(field));
                self.sql
                    .push_str(if *null { " IS NULL" } else { " IS NOT NULL" });
            }
            Filter::HasElement {
                field,
                negated,
                element,
            } => {
                self.field_def(field)?;
                if *negated {
                    self.sql.push_str("NOT ");
                }
                self.sql.push_str(&format!(
                    "EXISTS (SELECT 1 FROM json_each({}) AS j WHERE j.value = ?)",
                    quote(field)
                ));
                self.params.push(match element {
                    Value::Number(n) if n.is_i64() => SqlValue::Integer(n.as_i64().unwrap_or(0)),
                    Value::Number(n) => SqlValue::Real(n.as_f64().unwrap_or(0.0)),
                    Value::Bool(b) => SqlValue::Integer(*b as i64),
                    Value::String(s) => SqlValue::Text(s.clone()),
                    other => SqlValue::Text(other.to_string()),
                });
            }
            Filter::Text { field, op, text } => {
                self.field_def(field)?;
                let col = quote(field);
                let text = SqlValue::Text(text.clone());
                if *op == TextMatch::EndsWith {
                    // Numbered parameters cannot mix with positional ones;
                    // spell it out with two parameters instead.
                    self.sql.push_str(&format!("substr({col}, -length(?)) = ?"));
                    self.params.push(text.clone());
                    self.params.push(text);
                } else {
                    self.sql.push_str(&match op {
                        TextMatch::Contains => format!("instr({col}, ?) > 0"),
                        TextMatch::NotContains => {
                            format!("({col} IS NULL OR instr({col}, ?) = 0)")
                        }
                        TextMatch::ContainsIgnoringCase => {
                            format!("instr(lower({col}), lower(?)) > 0")
                        }
                        _ => format!("instr({col}, ?) = 1"),
                    });
                    self.params.push(text);
                }
            }
        }
        Ok(())
    }
}

impl SqliteConn<'_> {
    /// Runs the SELECT of `q` and hands every row to `each`, with the kind
    /// of each selected field.
    fn select_rows(
        &mut self,
        c: &CollectionDef,
        q: &ReadQuery,
        mut each: impl FnMut(&rusqlite::Row<'_>, &[Option<FieldType>]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut b = SqlBuilder::new(c);
        let cols: Vec<String> = q.fields.iter().map(|f| quote(f)).collect();
        b.sql = format!("SELECT {} FROM {}", cols.join(", "), quote(&c.name));
        if let Some(filter) = &q.filter {
            b.sql.push_str(" WHERE ");
            b.filter(filter)?;
        }
        if !q.sort.is_empty() {
            let order: Vec<String> = q
                .sort
                .iter()
                .map(|(f, desc)| format!("{} {}", quote(f), if *desc { "DESC" } else { "ASC" }))
                .collect();
            b.sql.push_str(" ORDER BY ");
            b.sql.push_str(&order.join(", "));
        }
        if q.limit.is_some() || q.offset > 0 {
            b.sql.push_str(" LIMIT ? OFFSET ?");
            b.params.push(SqlValue::Integer(
                q.limit.map(|l| l.min(i64::MAX as u64) as i64).unwrap_or(-1),
            ));
            b.params
                .push(SqlValue::Integer(q.offset.min(i64::MAX as u64) as i64));
        }
        let kinds: Vec<Option<FieldType>> = q
            .fields
            .iter()
            .map(|f| c.field(f).map(|d| d.kind))
            .collect();
        let mut stmt = self.conn.prepare_cached(&b.sql).map_err(map_sql_error)?;
        let mut rows = stmt
            .query(params_from_iter(b.params.iter()))
            .map_err(map_sql_error)?;
        while let Some(row) = rows.next().map_err(map_sql_error)? {
            each(row, &kinds)?;
        }
        Ok(())
    }
}

impl Conn for SqliteConn<'_> {
    fn select(&mut self, c: &CollectionDef, q: &ReadQuery) -> Result<Vec<Record>, StoreError> {
        let mut out = Vec::new();
        self.select_rows(c, q, |row, kinds| {
            let mut record = Map::with_capacity(q.fields.len());
            for (i, name) in q.fields.iter().enumerate() {
                let v = row.get_ref(i).map_err(map_sql_error)?;
                record.insert(name.clone(), from_sql(kinds[i], v));
            }
            out.push(record);
            Ok(())
        })?;
        Ok(out)
    }

    fn select_json(
        &mut self,
        c: &CollectionDef,
        q: &ReadQuery,
        out: &mut Vec<u8>,
    ) -> Result<usize, StoreError> {
        // Keys in the order a record map prints them, each once.
        let mut order: Vec<usize> = (0..q.fields.len()).collect();
        order.sort_by(|a, b| q.fields[*a].cmp(&q.fields[*b]));
        order.dedup_by(|a, b| q.fields[*a] == q.fields[*b]);
        let mut count = 0;
        self.select_rows(c, q, |row, kinds| {
            if count > 0 {
                out.push(b',');
            }
            out.push(b'{');
            for (n, &i) in order.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                row_text::push_str(out, &q.fields[i]);
                out.push(b':');
                let v = row.get_ref(i).map_err(map_sql_error)?;
                row_text::push_value(out, kinds[i], v);
            }
            out.push(b'}');
            count += 1;
            Ok(())
        })?;
        Ok(count)
    }

    fn aggregate(
        &mut self,
        c: &CollectionDef,
        q: &AggregateQuery,
    ) -> Result<Vec<Record>, StoreError> {
        let mut b = SqlBuilder::new(c);
        // Timestamps are stored as RFC 3339 UTC text: their first ten
        // characters are the UTC date.
        let group_exprs: Vec<String> = q
            .group_by
            .iter()
            .map(|g| {
                if g.date {
                    format!("substr({}, 1, 10)", quote(&g.field))
                } else {
                    quote(&g.field)
                }
            })
            .collect();
        let mut cols = group_exprs.clone();
        for (function, field) in &q.functions {
            cols.push(match (function, field) {
                (AggFn::Count, None) => "COUNT(*)".into(),
                (AggFn::Count, Some(f)) => format!("COUNT({})", quote(f)),
                (AggFn::CountDistinct, Some(f)) => format!("COUNT(DISTINCT {})", quote(f)),
                (AggFn::Sum, Some(f)) => format!("TOTAL({})", quote(f)),
                (AggFn::Avg, Some(f)) => format!("AVG({})", quote(f)),
                (AggFn::Min, Some(f)) => format!("MIN({})", quote(f)),
                (AggFn::Max, Some(f)) => format!("MAX({})", quote(f)),
                (_, None) => return Err(StoreError::Invalid("only count takes *".into())),
            });
        }
        b.sql = format!("SELECT {} FROM {}", cols.join(", "), quote(&c.name));
        if let Some(filter) = &q.filter {
            b.sql.push_str(" WHERE ");
            b.filter(filter)?;
        }
        if !q.group_by.is_empty() {
            b.sql.push_str(" GROUP BY ");
            b.sql.push_str(&group_exprs.join(", "));
        }
        if let Some(limit) = q.limit {
            b.sql.push_str(" LIMIT ?");
            b.params
                .push(SqlValue::Integer(limit.min(i64::MAX as u64) as i64));
        }
        let mut stmt = self.conn.prepare_cached(&b.sql).map_err(map_sql_error)?;
        let mut rows = stmt
            .query(params_from_iter(b.params.iter()))
            .map_err(map_sql_error)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(map_sql_error)? {
            let mut record = Map::new();
            for (i, g) in q.group_by.iter().enumerate() {
                let v = row.get_ref(i).map_err(map_sql_error)?;
                let kind = if g.date {
                    None
                } else {
                    c.field(&g.field).map(|d| d.kind)
                };
                record.insert(g.name.clone(), from_sql(kind, v));
            }
            for (j, (function, field)) in q.functions.iter().enumerate() {
                let v = row.get_ref(q.group_by.len() + j).map_err(map_sql_error)?;
                let kind = field.as_ref().and_then(|f| c.field(f)).map(|d| d.kind);
                let value = match function {
                    AggFn::Count | AggFn::CountDistinct => from_sql(None, v),
                    AggFn::Sum if kind == Some(FieldType::Integer) => match v {
                        ValueRef::Real(f) => Value::from(f as i64),
                        other => from_sql(None, other),
                    },
                    AggFn::Sum | AggFn::Avg => from_sql(Some(FieldType::Float), v),
                    AggFn::Min | AggFn::Max => from_sql(kind, v),
                };
                match field {
                    None => {
                        record.insert(function.name().into(), value);
                    }
                    Some(f) => {
                        let slot = record
                            .entry(function.name().to_string())
                            .or_insert_with(|| Value::Object(Map::new()));
                        if let Value::Object(m) = slot {
                            m.insert(f.clone(), value);
                        }
                    }
                }
            }
            out.push(record);
        }
        Ok(out)
    }

    fn insert(&mut self, c: &CollectionDef, record: &Record) -> Result<(), StoreError> {
        let mut cols = Vec::with_capacity(record.len());
        let mut params = Vec::with_capacity(record.len());
        for (name, value) in record {
            let field = c
                .field(name)
                .ok_or_else(|| StoreError::Invalid(format!("unknown field {name}")))?;
            cols.push(quote(name));
            params.push(to_sql(field, value));
        }
        let marks = vec!["?"; cols.len()].join(", ");
        let sql = format!(
            "INSERT INTO {} ({}) VALUES ({marks})",
            quote(&c.name),
            cols.join(", ")
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(map_sql_error)?;
        stmt.execute(params_from_iter(params.iter()))
            .map_err(map_sql_error)?;
        Ok(())
    }

    fn update(
        &mut self,
        c: &CollectionDef,
        key: &str,
        changes: &Record,
    ) -> Result<bool, StoreError> {
        if changes.is_empty() {
            let exists: bool = self
                .conn
                .prepare_cached(&format!(
                    "SELECT EXISTS (SELECT 1 FROM {} WHERE \"id\" = ?)",
                    quote(&c.name)
                ))
                .and_then(|mut s| s.query_row([key], |r| r.get(0)))
                .map_err(map_sql_error)?;
            return Ok(exists);
        }
        let mut sets = Vec::with_capacity(changes.len());
        let mut params = Vec::with_capacity(changes.len() + 1);
        for (name, value) in changes {
            let field = c
                .field(name)
                .ok_or_else(|| StoreError::Invalid(format!("unknown field {name}")))?;
            sets.push(format!("{} = ?", quote(name)));
            params.push(to_sql(field, value));
        }
        params.push(SqlValue::Text(key.to_string()));
        let sql = format!(
            "UPDATE {} SET {} WHERE \"id\" = ?",
            quote(&c.name),
            sets.join(", ")
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(map_sql_error)?;
        let n = stmt
            .execute(params_from_iter(params.iter()))
            .map_err(map_sql_error)?;
        Ok(n > 0)
    }

    fn delete(&mut self, c: &CollectionDef, key: &str) -> Result<bool, StoreError> {
        let sql = format!("DELETE FROM {} WHERE \"id\" = ?", quote(&c.name));
        let mut stmt = self.conn.prepare_cached(&sql).map_err(map_sql_error)?;
        let n = stmt.execute([key]).map_err(map_sql_error)?;
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::{parse_filter, Vars, WireQuery};
    use host_sdk::schema::{Collection, Field};
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn connections_set_up_at_once_on_a_new_database_never_fail() {
        for _ in 0..20 {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("fresh.db");
            let start = std::sync::Barrier::new(8);
            let failures: Vec<String> = std::thread::scope(|scope| {
                let workers: Vec<_> = (0..8)
                    .map(|_| {
                        scope.spawn(|| {
                            let mut c = Connection::open(&path).expect("open");
                            start.wait();
                            set_up_connection(&mut c).err().map(|e| e.to_string())
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .filter_map(|w| w.join().expect("worker"))
                    .collect()
            });
            assert!(failures.is_empty(), "{failures:?}");
        }
    }

    #[test]
    fn a_store_keeps_its_file_in_wal_mode() {
        let (_dir, store) = store();
        let mode: String = store
            .with_conn(|c| {
                c.query_row("PRAGMA journal_mode", [], |r| r.get(0))
                    .map_err(map_sql_error)
            })
            .expect("journal mode");
        assert_eq!(mode, "wal");
    }

    fn store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(&dir.path().join("t.db")).expect("open");
        let steps = vec![
            Collection::new("things")
                .field(Field::string("name"))
                .field(Field::integer("n"))
                .field(Field::float("x"))
                .field(Field::boolean("ok"))
                .field(Field::timestamp("at"))
                .field(Field::json("tags"))
                .build(),
            Step::InsertItems {
                collection: "things".into(),
                items: vec![
                    json!({"name": "a'b", "n": 1, "x": 1.5, "ok": true, "at": "2026-01-01T00:00:00Z", "tags": ["x", "y"]}),
                    json!({"name": "c\"d;--", "n": 2, "x": -3.0, "ok": false, "tags": []}),
                ],
            },
        ];
        store.migrate("test", "0001", &steps).expect("migrate");
        (dir, store)
    }

    /// One store for every case: the property only reads.
    static SHARED: once_cell::sync::Lazy<(tempfile::TempDir, SqliteStore)> =
        once_cell::sync::Lazy::new(store);

    fn operand() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,12}".prop_map(Value::String),
            Just(json!("$CURRENT_USER")),
            Just(json!("$NOW")),
            Just(json!("'; DROP TABLE things; --")),
            prop::collection::vec(".{0,6}".prop_map(Value::String), 0..4).prop_map(Value::Array),
        ]
    }

    fn condition() -> impl Strategy<Value = Value> {
        let field = prop_oneof![
            Just("name"),
            Just("n"),
            Just("x"),
            Just("ok"),
            Just("at"),
            Just("tags"),
            Just("id"),
            Just("nope"),
            Just("name\"; --"),
        ];
        let op = prop_oneof![
            Just("_eq"),
            Just("_neq"),
            Just("_lt"),
            Just("_lte"),
            Just("_gt"),
            Just("_gte"),
            Just("_in"),
            Just("_nin"),
            Just("_null"),
            Just("_nnull"),
            Just("_contains"),
            Just("_ncontains"),
            Just("_icontains"),
            Just("_starts_with"),
            Just("_ends_with"),
            Just("_regex"),
        ];
        (field, op, operand()).prop_map(|(f, o, v)| json!({ f: { o: v } }))
    }

    fn filter() -> impl Strategy<Value = Value> {
        condition().prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({"_and": v})),
                prop::collection::vec(inner, 0..4).prop_map(|v| json!({"_or": v})),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Whatever the filter, parsing never panics, and a filter that
        /// parses runs as valid SQL: values are bound, never spliced in.
        #[test]
        fn any_parsed_filter_runs(f in filter(), sort in prop::option::of("-?(name|n|x|at|id)")) {
            let store = &SHARED.1;
            let schema = store.schema();
            let def = schema.get("things").expect("collection").clone();
            let vars = Vars::new(Some("user-1".into()));
            if let Ok(parsed) = parse_filter(&def, &f, &vars) {
                let mut used = Vec::new();
                parsed.fields(&mut used);
                prop_assert!(used.iter().all(|u| def.has(u)));
                let wire = WireQuery {
                    filter: Some(f.clone()),
                    sort: sort.map(crate::query::ListParam::Text),
                    ..Default::default()
                };
                let q = wire.to_read(&def, &vars, Some(10)).expect("already parsed");
                let result = store.read(&mut |conn| conn.select(&def, &q).map(|_| ()));
                prop_assert!(result.is_ok(), "{f} failed: {result:?}");
            }
            let count = store.read(&mut |conn| {
                let q = ReadQuery::all_fields(&def);
                let rows = conn.select(&def, &q)?;
                if rows.len() == 2 { Ok(()) } else { Err(StoreError::Backend("rows changed".into())) }
            });
            prop_assert!(count.is_ok());
        }
    }

    #[test]
    fn metacharacters_are_values_not_sql() {
        let (_dir, store) = store();
        let schema = store.schema();
        let def = schema.get("things").expect("collection").clone();
        let vars = Vars::new(None);
        for (value, expected) in [("a'b", 1), ("c\"d;--", 1), ("'; DROP TABLE things; --", 0)] {
            let f = parse_filter(&def, &json!({"name": {"_eq": value}}), &vars).expect("parse");
            let mut q = ReadQuery::all_fields(&def);
            q.filter = Some(f);
            let mut n = 0;
            store
                .read(&mut |conn| {
                    n = conn.select(&def, &q)?.len();
                    Ok(())
                })
                .expect("select");
            assert_eq!(n, expected, "{value}");
        }
        let contains =
            parse_filter(&def, &json!({"tags": {"_contains": "y"}}), &vars).expect("parse");
        let mut q = ReadQuery::all_fields(&def);
        q.filter = Some(contains);
        let mut names = Vec::new();
        store
            .read(&mut |conn| {
                names = conn
                    .select(&def, &q)?
                    .into_iter()
                    .map(|r| r["name"].clone())
                    .collect();
                Ok(())
            })
            .expect("select");
        assert_eq!(names, vec![json!("a'b")]);
    }

    /// The text of `select_json` is exactly what printing `select`'s
    /// records gives, including for values written behind the platform's
    /// back (text that is not JSON in a JSON column, a float in a boolean).
    #[test]
    fn rows_as_text_print_like_records() {
        let (_dir, store) = store();
        store
            .with_conn(|c| {
                c.execute_batch(
                    "INSERT INTO things (id, name, n, x, ok, tags) VALUES \
                     ('raw1', 'é\"\\ \n', 9007199254740993, 2.0, 5, 'not json {'), \
                     ('raw2', NULL, NULL, 0.1, NULL, ' {\"b\": [1, 2.50, \"\\u00e9\"], \"a\": null} ')",
                )
                .map_err(map_sql_error)
            })
            .expect("insert behind the platform's back");
        let schema = store.schema();
        let def = schema.get("things").expect("collection").clone();
        let mut q = ReadQuery::all_fields(&def);
        q.sort = vec![("id".into(), false)];
        // A field named twice prints once, as in a map.
        q.fields.push("name".into());
        let (mut records, mut text, mut count) = (Vec::new(), Vec::new(), 0);
        store
            .read(&mut |conn| {
                records = conn.select(&def, &q)?;
                count = conn.select_json(&def, &q, &mut text)?;
                Ok(())
            })
            .expect("select");
        assert_eq!(count, 4);
        let text = String::from_utf8(text).expect("utf-8");
        let parsed: Vec<Record> =
            serde_json::from_str(&format!("[{text}]")).expect("the text is JSON");
        assert_eq!(parsed, records);
        // Byte for byte too, except that stored JSON is copied as stored.
        let printed: Vec<String> = records
            .iter()
            .map(|r| serde_json::to_string(r).expect("print"))
            .collect();
        let printed = printed.join(",");
        let raw2 = r#"{"b": [1, 2.50, "\u00e9"], "a": null}"#;
        let reprinted = serde_json::to_string(&serde_json::from_str::<Value>(raw2).expect("json"))
            .expect("print");
        assert!(text.contains(raw2), "{text}");
        assert_eq!(text.replace(raw2, &reprinted), printed);
        assert!(text.contains(r#""tags":"not json {""#), "{text}");
    }

    /// `.cargo/config.toml` builds SQLite without the two global mutexes
    /// that concurrent reads contended on.
    #[test]
    fn sqlite_is_built_without_global_memory_mutexes() {
        let conn = Connection::open_in_memory().expect("open");
        let mut stmt = conn.prepare("PRAGMA compile_options").expect("prepare");
        let options: Vec<String> = stmt
            .query_map([], |row| row.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        // Cargo reads `.cargo/config.toml` from the directory it runs in:
        // build from the workspace root.
        let hint = "LIBSQLITE3_FLAGS of .cargo/config.toml not applied";
        assert!(
            options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"),
            "{hint}: {options:?}"
        );
        assert!(
            !options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
            "{hint}: {options:?}"
        );
    }

    /// A cached statement with bound limits runs again without being
    /// compiled again, whatever the limit.
    #[test]
    fn bound_limits_do_not_recompile_cached_statements() {
        let (_dir, store) = store();
        let reprepared = store
            .with_conn(|c| {
                let sql = "SELECT name FROM things ORDER BY n LIMIT ? OFFSET ?";
                for limit in [1, 2, 1, 5] {
                    let mut stmt = c.prepare_cached(sql).map_err(map_sql_error)?;
                    stmt.query_map([limit, 0], |row| row.get::<_, String>(0))
                        .map_err(map_sql_error)?
                        .for_each(drop);
                }
                let stmt = c.prepare_cached(sql).map_err(map_sql_error)?;
                Ok(stmt.get_status(rusqlite::StatementStatus::RePrepare))
            })
            .expect("query");
        assert_eq!(reprepared, 0);
    }
}
