//! The SQLite backend: one database file in WAL mode, a connection pool
//! for reads, write transactions taking turns on a connection of their own
//! (`BEGIN IMMEDIATE` behind a process lock), and SQLite's dialect of the
//! shared SQL.

pub(crate) mod backup;
mod checkpoint;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use host_sdk::schema::{FieldType, Step};
use parking_lot::{Mutex, RwLock};
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::config::DbConfig;
use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use rusqlite::{params_from_iter, Connection, ErrorCode, StatementStatus};
use serde_json::Value;

use super::codec::{json_scalar, Cell, Scalar};
use super::sql::{self, clamp_to_i64, Dialect, Params, ReadConn, Row, SqlConn, WriteConn};
use super::{
    exclusive_write, migrate, pooled, rolled_back_on_panic, CounterOp, ReadWork, StepRules, Store,
    StoreError, Window, WriteWork,
};
use crate::query::{AggFn, TextMatch};
use crate::schema::Schema;

const DEFAULT_POOL_SIZE: u32 = 16;
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub struct SqliteStore {
    pool: r2d2::Pool<SqliteConnectionManager>,
    /// One writer at a time inside this process: writers queue here instead
    /// of spinning on SQLite's busy handler. Other processes (the schedule
    /// command) are covered by the busy timeout.
    /// Shared with the checkpoint thread, which truncates the WAL between
    /// two writers.
    write_lock: Arc<Mutex<()>>,
    /// The connection every write transaction runs on, taken only inside
    /// the write lock (opened at the first write, and again after a
    /// rollback that failed). One connection keeps its page cache from one write
    /// to the next: SQLite empties a connection's cache when another
    /// connection committed since its last transaction, so writes that
    /// rotated through the pool started cold, reading the upper pages of
    /// every index they touch again.
    writer: Mutex<Option<Connection>>,
    path: PathBuf,
    schema: RwLock<Arc<Schema>>,
    changes: Mutex<ChangeWatch>,
    /// Statements run and rows read, by every connection.
    counts: Counts,
    recorded: migrate::KnownRecorded,
    /// Dropped last: the final checkpoint runs after the pool and the
    /// writer have closed.
    checkpoints: checkpoint::Checkpointer,
}

/// What the connections did, for `/server/metrics`.
#[derive(Default)]
struct Counts {
    /// Statements run (see [`Store::round_trips`]).
    statements: AtomicU64,
    /// Rows the statements returned (see [`Store::rows_read`]).
    rows: AtomicU64,
    /// Rows the statements stepped over in full table scans (see
    /// [`Store::full_scan_rows`]).
    scanned: AtomicU64,
}

/// A connection of its own that writes nothing but the counters, so that
/// SQLite's `data_version` on it moves with every commit of any other
/// connection, in this process or another, and not with the counters'
/// writes of this process (a connection's own commits leave its
/// `data_version` as it is); turned into a counter that only grows.
struct ChangeWatch {
    conn: Connection,
    last_seen: i64,
    version: u64,
}

impl ChangeWatch {
    fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path).map_err(map_sql_error)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(map_sql_error)?;
        // Its writes (the counters) need no more durability than the rest.
        conn.execute_batch("PRAGMA synchronous = NORMAL;")
            .map_err(map_sql_error)?;
        let last_seen = Self::read(&conn)?;
        Ok(Self {
            conn,
            last_seen,
            version: super::first_data_version(),
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
    c.execute_batch(&format!(
        "PRAGMA synchronous = NORMAL;
         PRAGMA foreign_keys = OFF;
         PRAGMA temp_store = MEMORY;
         PRAGMA cache_size = -{PAGE_CACHE_KIB};"
    ))
}

/// Each connection's page cache, in KiB. SQLite's default (2,000 KiB, 500
/// pages) is less than one read of a hundred rows with their users touches
/// on a large file (a million users: each row a few random pages deep in
/// two tables). The cache, cycled through in the same order every time,
/// then misses nearly every page, and each read copies them in again from
/// the system's cache: the stats page ran at 0.43 of its speed on small
/// data. 8 MiB holds such a read; pages are allocated as they are read, so
/// a small database costs no more.
const PAGE_CACHE_KIB: u32 = 8 * 1024;

/// The writer's page cache, in KiB (see [`SqliteStore::open_writer`]):
/// allocated as pages are read, so it costs memory only on a file whose
/// writes touch that many pages.
const WRITER_CACHE_KIB: u32 = 64 * 1024;

/// The settings of the store's connections, readers and writer alike,
/// whether or not its checkpoint thread runs.
fn connection_setup(checkpointed: bool) -> fn(&mut Connection) -> rusqlite::Result<()> {
    match checkpointed {
        true => set_up_connection_checkpointed,
        false => set_up_connection,
    }
}

/// The settings of the store's connections when its checkpoint thread
/// runs: no checkpoint on a writer's commit (see `checkpoint`).
fn set_up_connection_checkpointed(c: &mut Connection) -> rusqlite::Result<()> {
    set_up_connection(c)?;
    c.execute_batch("PRAGMA wal_autocheckpoint = 0;")
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

/// SQLite's SQL.
struct SqliteDialect;

static DIALECT: SqliteDialect = SqliteDialect;

impl Dialect for SqliteDialect {
    fn placeholder(&self, n: usize) -> String {
        // Numbered, so that an expression written twice (a masked field
        // in a condition that names its column twice) binds the same
        // parameters.
        format!("?{n}")
    }

    fn column_type(&self, kind: FieldType) -> &'static str {
        match kind {
            FieldType::Integer | FieldType::Boolean => "INTEGER",
            FieldType::Float => "REAL",
            _ => "TEXT",
        }
    }

    fn bool_literal(&self, b: bool) -> &'static str {
        if b {
            "1"
        } else {
            "0"
        }
    }

    fn in_list(&self, col: &str, _kind: FieldType, negated: bool, list: &str) -> String {
        // The list is bound as one JSON array (see `bind`).
        format!(
            "{col} {}IN (SELECT value FROM json_each({list}))",
            if negated { "NOT " } else { "" }
        )
    }

    fn has_element(&self, col: &str, element: &Value, p: &mut Params<'_>) -> String {
        let mark = p.push(json_scalar(element));
        format!("EXISTS (SELECT 1 FROM json_each({col}) AS j WHERE j.value = {mark})")
    }

    fn text_match(&self, col: &str, op: TextMatch, text: &str, p: &mut Params<'_>) -> String {
        let mut mark = || p.push(Scalar::Text(text.to_string()));
        match op {
            TextMatch::Contains => format!("instr({col}, {}) > 0", mark()),
            TextMatch::NotContains => {
                format!("({col} IS NULL OR instr({col}, {}) = 0)", mark())
            }
            TextMatch::ContainsIgnoringCase => {
                format!("instr(lower({col}), lower({})) > 0", mark())
            }
            TextMatch::StartsWith => format!("instr({col}, {}) = 1", mark()),
            // Positional parameters cannot be named twice: bind it twice.
            TextMatch::EndsWith => {
                let (a, b) = (mark(), mark());
                format!("substr({col}, -length({a})) = {b}")
            }
        }
    }

    fn order_term(&self, col: &str, desc: bool) -> String {
        // SQLite's own null order is the contract's.
        format!("{col} {}", if desc { "DESC" } else { "ASC" })
    }

    fn index_uniqueness(&self, table: &str, name: &str, p: &mut Params<'_>) -> String {
        format!(
            "SELECT \"unique\" FROM pragma_index_list({}) WHERE name = {}",
            p.push(Scalar::Text(table.to_string())),
            p.push(Scalar::Text(name.to_string()))
        )
    }

    fn index_column(&self, col: &str, descending: bool) -> String {
        // SQLite's own null order (first ascending, last descending) is the
        // contract's, both ways.
        if descending {
            format!("{col} DESC")
        } else {
            col.to_string()
        }
    }

    /// Both bound (-1: no limit), so that every page of a list is one
    /// statement; its plan does not depend on them (QPSG, see
    /// `set_up_connection`).
    fn limit_clause(&self, limit: Option<u64>, offset: u64, p: &mut Params<'_>) -> String {
        if limit.is_none() && offset == 0 {
            return String::new();
        }
        let limit = p.push(Scalar::Int(limit.map_or(-1, clamp_to_i64)));
        let offset = p.push(Scalar::Int(clamp_to_i64(offset)));
        format!(" LIMIT {limit} OFFSET {offset}")
    }

    fn aggregate(&self, f: AggFn, col: Option<(&str, FieldType)>) -> String {
        match (f, col) {
            (AggFn::Count, Some((c, _))) => format!("COUNT({c})"),
            (AggFn::CountDistinct, Some((c, _))) => format!("COUNT(DISTINCT {c})"),
            // TOTAL: a double, and 0.0 over no rows.
            (AggFn::Sum, Some((c, _))) => format!("TOTAL({c})"),
            (AggFn::Avg, Some((c, _))) => format!("AVG({c})"),
            (AggFn::Min, Some((c, _))) => format!("MIN({c})"),
            (AggFn::Max, Some((c, _))) => format!("MAX({c})"),
            (_, None) => "COUNT(*)".into(),
        }
    }
}

/// A scalar as SQLite stores it: booleans are 0/1, a list is one JSON
/// array (read with `json_each`).
fn bind(s: &Scalar) -> ToSqlOutput<'_> {
    match s {
        Scalar::Null => ToSqlOutput::Owned(SqlValue::Null),
        Scalar::Int(i) => ToSqlOutput::Owned(SqlValue::Integer(*i)),
        Scalar::Real(f) => ToSqlOutput::Owned(SqlValue::Real(*f)),
        Scalar::Bool(b) => ToSqlOutput::Owned(SqlValue::Integer(*b as i64)),
        Scalar::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
        Scalar::List(items) => ToSqlOutput::Owned(SqlValue::Text(json_array(items))),
    }
}

/// A list's JSON text, written from the scalars themselves: a related
/// read binds hundreds of keys, which a tree of copies would hold first.
fn json_array(items: &[Scalar]) -> String {
    let mut out = Vec::with_capacity(2 + items.iter().map(|i| 3 + written_len(i)).sum::<usize>());
    out.push(b'[');
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        let _ = match item {
            Scalar::Int(i) => serde_json::to_writer(&mut out, i),
            Scalar::Real(f) => serde_json::to_writer(&mut out, &Value::from(*f)),
            Scalar::Bool(b) => serde_json::to_writer(&mut out, &(*b as i64)),
            Scalar::Text(t) => serde_json::to_writer(&mut out, t),
            Scalar::Null | Scalar::List(_) => serde_json::to_writer(&mut out, &()),
        };
    }
    out.push(b']');
    // serde_json writes UTF-8 only.
    String::from_utf8(out).unwrap_or_default()
}

/// About the bytes a scalar takes in a list (to reserve room).
fn written_len(item: &Scalar) -> usize {
    match item {
        Scalar::Text(t) => t.len(),
        _ => 20,
    }
}

struct Bound<'a>(&'a Scalar);

impl rusqlite::ToSql for Bound<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(bind(self.0))
    }
}

impl Row for rusqlite::Row<'_> {
    fn cell(&self, i: usize) -> Result<Cell<'_>, StoreError> {
        Ok(match self.get_ref(i).map_err(map_sql_error)? {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(n) => Cell::Int(n),
            ValueRef::Real(f) => Cell::Real(f),
            ValueRef::Text(t) | ValueRef::Blob(t) => Cell::Text(t),
        })
    }
}

/// A pooled connection driven by the shared SQL, and the store's counts of
/// statements run and rows read.
struct Sqlite<'a>(&'a mut Connection, &'a Counts);

impl Sqlite<'_> {
    fn count(&self) {
        self.1.statements.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds the rows `stmt` stepped over in full table scans since it was
    /// last counted (a cached statement keeps its own tally).
    fn count_scans(&self, stmt: &rusqlite::Statement<'_>) {
        let scanned = stmt.reset_status(StatementStatus::FullscanStep);
        if scanned > 0 {
            self.1.scanned.fetch_add(scanned as u64, Ordering::Relaxed);
        }
    }
}

impl SqlConn for Sqlite<'_> {
    fn dialect(&self) -> &'static dyn Dialect {
        &DIALECT
    }

    fn query(
        &mut self,
        sql: &str,
        params: &[Scalar],
        each: &mut dyn FnMut(&dyn Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.count();
        log::trace!("{sql}");
        let mut stmt = self.0.prepare_cached(sql).map_err(map_sql_error)?;
        let mut rows = stmt
            .query(params_from_iter(params.iter().map(Bound)))
            .map_err(map_sql_error)?;
        // Counted once per statement: the counter is shared by every
        // connection.
        let mut read = 0;
        let outcome = (|| {
            while let Some(row) = rows.next().map_err(map_sql_error)? {
                read += 1;
                each(row)?;
            }
            Ok(())
        })();
        self.1.rows.fetch_add(read, Ordering::Relaxed);
        drop(rows);
        self.count_scans(&stmt);
        outcome
    }

    fn execute(&mut self, sql: &str, params: &[Scalar]) -> Result<u64, StoreError> {
        self.count();
        log::trace!("{sql}");
        let mut stmt = self.0.prepare_cached(sql).map_err(map_sql_error)?;
        let n = stmt
            .execute(params_from_iter(params.iter().map(Bound)))
            .map_err(map_sql_error)?;
        self.count_scans(&stmt);
        Ok(n as u64)
    }

    fn execute_batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.count();
        log::trace!("{sql}");
        self.0.execute_batch(sql).map_err(map_sql_error)
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and its parent folder.
    pub fn open(path: &Path, pool_max: Option<u32>) -> Result<Self, StoreError> {
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
        let write_lock = Arc::new(Mutex::new(()));
        let checkpoints = checkpoint::Checkpointer::start(path, Arc::clone(&write_lock));
        let manager =
            SqliteConnectionManager::file(path).with_init(connection_setup(checkpoints.running()));
        let max_size = pool_max.unwrap_or(DEFAULT_POOL_SIZE).max(1);
        let pool = r2d2::Pool::builder()
            .max_size(max_size)
            .min_idle(Some(max_size.min(2)))
            // A connection to a local file has no peer to lose: testing it
            // at every checkout compiled `SELECT 1` afresh each time (2% of
            // a leaderboard read, which checks out three).
            .test_on_check_out(false)
            .connection_timeout(Duration::from_secs(30))
            .build(manager)
            .map_err(|e| backend(format!("cannot open {}: {e}", path.display())))?;
        let store = Self {
            pool,
            write_lock,
            writer: Mutex::new(None),
            path: path.to_path_buf(),
            schema: RwLock::new(Arc::new(Schema::default())),
            changes: Mutex::new(ChangeWatch::open(path)?),
            counts: Counts::default(),
            recorded: migrate::KnownRecorded::default(),
            checkpoints,
        };
        let (schema, recorded) = store.in_write_tx(|conn| {
            conn.execute_batch(migrate::BOOKKEEPING)?;
            Ok((
                migrate::load_schema(conn)?,
                migrate::KnownRecorded::load(conn)?,
            ))
        })?;
        *store.schema.write() = Arc::new(schema);
        Ok(Self { recorded, ..store })
    }

    fn with_conn<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = pooled(&self.pool)?;
        f(&mut conn)
    }

    /// The writer's connection: the pool's settings and a larger cache,
    /// which holds the index pages a bulk import walks on a large file.
    fn open_writer(&self) -> Result<Connection, StoreError> {
        let mut conn = Connection::open(&self.path).map_err(map_sql_error)?;
        connection_setup(self.checkpoints.running())(&mut conn)
            .and_then(|()| conn.execute_batch(&format!("PRAGMA cache_size = -{WRITER_CACHE_KIB};")))
            .map_err(map_sql_error)?;
        Ok(conn)
    }

    /// Runs `f` inside `BEGIN IMMEDIATE … COMMIT` on the writer's
    /// connection, holding the write lock. SQLite runs one writer at a
    /// time, so a transaction never has to be run again.
    fn in_write_tx<T>(
        &self,
        f: impl FnOnce(&mut Sqlite<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        exclusive_write(|| {
            let _guard = self.write_lock.lock();
            let mut writer = self.writer.lock();
            let conn = match &mut *writer {
                Some(conn) => conn,
                empty => empty.insert(self.open_writer()?),
            };
            conn.execute_batch("BEGIN IMMEDIATE")
                .map_err(map_sql_error)?;
            // BEGIN, and COMMIT or ROLLBACK.
            self.counts.statements.fetch_add(2, Ordering::Relaxed);
            let done = rolled_back_on_panic(
                conn,
                |conn| f(&mut Sqlite(conn, &self.counts)),
                |conn| {
                    let _ = conn.execute_batch("ROLLBACK");
                },
            );
            let ended = match done {
                Ok(value) => match conn.execute_batch("COMMIT") {
                    Ok(()) => return Ok(value),
                    Err(e) => Err(map_sql_error(e)),
                },
                Err(e) => Err(e),
            };
            // A connection whose rollback fails is in a state not known:
            // the next write opens another.
            if conn.execute_batch("ROLLBACK").is_err() && !conn.is_autocommit() {
                *writer = None;
            }
            ended
        })
    }
}

impl Store for SqliteStore {
    fn schema(&self) -> Arc<Schema> {
        self.schema.read().clone()
    }

    fn read(&self, work: &mut ReadWork<'_>) -> Result<(), StoreError> {
        self.with_conn(|conn| work(&mut ReadConn(&mut Sqlite(conn, &self.counts))))
    }

    fn write(&self, work: &mut WriteWork<'_>) -> Result<(), StoreError> {
        self.in_write_tx(|conn| work(&mut WriteConn(conn)))
    }

    fn data_version(&self) -> u64 {
        self.counts.statements.fetch_add(1, Ordering::Relaxed);
        self.changes.lock().version()
    }

    fn round_trips(&self) -> u64 {
        self.counts.statements.load(Ordering::Relaxed)
    }

    fn rows_read(&self) -> u64 {
        self.counts.rows.load(Ordering::Relaxed)
    }

    fn full_scan_rows(&self) -> Option<u64> {
        Some(self.counts.scanned.load(Ordering::Relaxed))
    }

    fn track_changes(&self, collections: &[&str]) -> Result<(), StoreError> {
        // Triggers count every change of the tracked tables, by any
        // connection of any process, in the changing transaction.
        self.in_write_tx(|conn| {
            conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS platform_tracked_changes (
                     id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
                 INSERT OR IGNORE INTO platform_tracked_changes (id, version) VALUES (1, 0);",
            )?;
            for table in collections {
                for event in ["INSERT", "UPDATE", "DELETE"] {
                    conn.execute_batch(&format!(
                        "CREATE TRIGGER IF NOT EXISTS {} AFTER {event} ON {} BEGIN
                             UPDATE platform_tracked_changes SET version = version + 1 WHERE id = 1;
                         END;",
                        sql::quote(&format!("{table}_{}_tracked", event.to_lowercase())),
                        sql::quote(table),
                    ))?;
                }
            }
            Ok(())
        })
    }

    fn tracked_version(&self) -> Result<u64, StoreError> {
        self.counts.statements.fetch_add(1, Ordering::Relaxed);
        self.with_conn(|c| {
            c.prepare_cached("SELECT version FROM platform_tracked_changes WHERE id = 1")
                .and_then(|mut s| s.query_row([], |r| r.get::<_, i64>(0)))
                .map(|v| v as u64)
                .map_err(map_sql_error)
        })
    }

    fn run_once(
        &self,
        owner: &str,
        id: &str,
        work: &mut WriteWork<'_>,
    ) -> Result<bool, StoreError> {
        self.recorded.unless_known(owner, id, || {
            self.in_write_tx(|conn| migrate::run_once(conn, owner, id, work))
        })
    }

    fn recorded_migrations(&self) -> Vec<(String, String)> {
        self.recorded.all()
    }

    fn migrate(
        &self,
        owner: &str,
        id: &str,
        steps: &[Step],
        rules: &dyn StepRules,
    ) -> Result<bool, StoreError> {
        self.recorded.unless_known(owner, id, || {
            let applied = self.in_write_tx(|conn| migrate::apply(conn, owner, id, steps, rules))?;
            *self.schema.write() = Arc::new(applied.schema);
            Ok(applied.ran)
        })
    }

    /// On the data version's own connection (see [`ChangeWatch`]), so that
    /// counting leaves this process's data version alone; in this
    /// process's turn of writers, so that it queues instead of spinning on
    /// the busy handler. One statement: its own transaction.
    fn counter(&self, op: CounterOp<'_>) -> Result<Option<Window>, StoreError> {
        exclusive_write(|| {
            let _turn = self.write_lock.lock();
            let mut watch = self.changes.lock();
            sql::counter(&mut Sqlite(&mut watch.conn, &self.counts), op)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::ReadQuery;
    use crate::storage::{Record, SchemaStepsOnly};
    use host_sdk::schema::{Collection, Field, Index};
    use serde_json::json;

    /// A list is the JSON a tree of its values would print.
    #[test]
    fn lists_bind_as_the_json_of_their_values() {
        let items = vec![
            Scalar::Text("a\"b\\c\u{1}é".into()),
            Scalar::Int(-7),
            Scalar::Real(2.5),
            Scalar::Real(f64::NAN),
            Scalar::Bool(true),
            Scalar::Bool(false),
            Scalar::Null,
            Scalar::Text(String::new()),
        ];
        let tree = serde_json::json!(["a\"b\\c\u{1}é", -7, 2.5, null, 1, 0, null, ""]);
        assert_eq!(json_array(&items), tree.to_string());
        assert_eq!(json_array(&[]), "[]");
    }

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

    /// A setting of one of `store`'s connections, as `PRAGMA name` reads it.
    fn setting(store: &SqliteStore, name: &str) -> i64 {
        store
            .with_conn(|c| {
                c.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
                    .map_err(map_sql_error)
            })
            .expect(name)
    }

    #[test]
    fn a_stores_connections_keep_a_page_cache_of_their_own_size() {
        let (_dir, store) = store();
        assert_eq!(setting(&store, "cache_size"), -i64::from(PAGE_CACHE_KIB));
    }

    /// A setting of the connection write transactions run on.
    fn writer_setting(store: &SqliteStore, name: &str) -> i64 {
        store
            .in_write_tx(|c| {
                c.0.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
                    .map_err(map_sql_error)
            })
            .expect(name)
    }

    #[test]
    fn writes_take_turns_on_one_connection_with_a_larger_cache() {
        let (_dir, store) = store();
        assert_eq!(
            writer_setting(&store, "cache_size"),
            -i64::from(WRITER_CACHE_KIB)
        );
        // A temporary table is its connection's own: a later write sees it
        // only on the same connection, after a failed write too.
        store
            .in_write_tx(|c| c.execute_batch("CREATE TEMP TABLE mine (n INTEGER)"))
            .expect("temporary table");
        let failed: Result<(), StoreError> = store.in_write_tx(|c| {
            c.execute_batch("INSERT INTO mine VALUES (1)")?;
            Err(StoreError::Invalid("refused".into()))
        });
        assert!(failed.is_err());
        let rows = store
            .in_write_tx(|c| {
                c.0.query_row("SELECT count(*) FROM temp.mine", [], |r| r.get::<_, i64>(0))
                    .map_err(map_sql_error)
            })
            .expect("the same connection");
        assert_eq!(rows, 0, "the failed write was rolled back");
    }

    fn store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(&dir.path().join("t.db"), None).expect("open");
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
        store
            .migrate("test", "0001", &steps, &SchemaStepsOnly)
            .expect("migrate");
        (dir, store)
    }

    /// Makes a collection of one field (and its id); its definition.
    fn one_field(
        store: &SqliteStore,
        collection: &str,
        field: Field,
    ) -> Arc<crate::schema::CollectionDef> {
        let steps = vec![Collection::new(collection).field(field).build()];
        store
            .migrate("test", "0001", &steps, &SchemaStepsOnly)
            .expect("migrate");
        store
            .schema()
            .get(collection)
            .expect("the collection")
            .clone()
    }

    /// Inserts one row, `id` and one field, in a transaction of its own.
    fn write_row(
        store: &SqliteStore,
        def: &crate::schema::CollectionDef,
        id: String,
        field: &str,
        value: crate::storage::codec::Scalar,
    ) {
        use crate::storage::codec::Scalar;
        store
            .write(&mut |conn| {
                let mut row = crate::storage::Columns::new();
                row.insert("id".into(), Scalar::Text(id.clone()));
                row.insert(field.into(), value.clone());
                conn.insert(def, &row).map(|_| ())
            })
            .expect("a write");
    }

    /// The store's own connections leave checkpoints to its thread: a
    /// commit never copies the WAL into the file on its caller's time; and
    /// what was committed reads back after the store closes and opens.
    #[test]
    fn writers_leave_checkpoints_to_the_stores_thread() {
        use crate::storage::codec::Scalar;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("t.db");
        {
            let store = SqliteStore::open(&path, None).expect("open");
            assert_eq!(setting(&store, "wal_autocheckpoint"), 0);
            let def = one_field(&store, "things", Field::integer("n"));
            for n in 0..300 {
                write_row(&store, &def, format!("row-{n}"), "n", Scalar::Int(n));
            }
            std::thread::sleep(checkpoint::INTERVAL * 2);
        }
        let store = SqliteStore::open(&path, None).expect("open again");
        let count: i64 = store
            .with_conn(|c| {
                c.query_row("SELECT count(*) FROM things", [], |r| r.get(0))
                    .map_err(map_sql_error)
            })
            .expect("a count");
        assert_eq!(count, 300);
    }

    /// Under a steady stream of writes the WAL still starts over: past its
    /// limit it is copied and truncated between two writers. Without that,
    /// a passive checkpoint never catches up with the writer, and the WAL
    /// only grows.
    #[test]
    fn the_wal_starts_over_under_a_steady_stream_of_writes() {
        use crate::storage::codec::Scalar;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("t.db");
        let store = SqliteStore::open(&path, None).expect("open");
        let def = one_field(&store, "blobs", Field::text("body"));
        let wal = dir.path().join("t.db-wal");
        let wal_size = || std::fs::metadata(&wal).map_or(0, |m| m.len());
        let body = "x".repeat(1000);
        let started = std::time::Instant::now();
        let (mut written, mut largest, mut shrank) = (0u64, 0u64, false);
        while started.elapsed() < checkpoint::INTERVAL * 10 && !shrank {
            let text = Scalar::Text(body.clone());
            write_row(&store, &def, format!("row-{written}"), "body", text);
            written += 1;
            let now = wal_size();
            shrank = now < largest;
            largest = largest.max(now);
        }
        assert!(
            shrank,
            "the WAL only grew: {largest} bytes after {written} writes"
        );
    }

    /// An index with a descending field serves a sort whose directions
    /// differ (`-x, name`, the store's own ORDER BY terms) as a walk: no
    /// temporary tree sorts the table.
    #[test]
    fn a_descending_index_serves_a_sort_of_mixed_directions() {
        let (_dir, store) = store();
        let index = Index {
            fields: vec!["-x".into(), "name".into()],
            unique: false,
        };
        store
            .migrate(
                "test",
                "0002",
                &[Step::CreateIndex {
                    collection: "things".into(),
                    index: index.clone(),
                }],
                &SchemaStepsOnly,
            )
            .expect("an index with a descending field");
        let d = SqliteDialect;
        let order = [
            d.order_term(&sql::quote("x"), true),
            d.order_term(&sql::quote("name"), false),
        ]
        .join(", ");
        let plan: Vec<String> = store
            .with_conn(|c| {
                let mut st = c
                    .prepare(&format!(
                        "EXPLAIN QUERY PLAN SELECT id FROM things ORDER BY {order} LIMIT 10"
                    ))
                    .map_err(map_sql_error)?;
                let rows = st
                    .query_map([], |r| r.get::<_, String>(3))
                    .map_err(map_sql_error)?;
                rows.collect::<Result<_, _>>().map_err(map_sql_error)
            })
            .expect("a plan");
        let name = sql::index_name("things", &index);
        assert_eq!(name, "idx_things_desc_x_name");
        assert!(
            plan.iter().any(|step| step.contains(&name))
                && !plan.iter().any(|step| step.contains("TEMP B-TREE")),
            "{plan:?}"
        );
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
