//! The host's one storage interface, and the core both backends share.
//!
//! Everything above this module (items service, auth, bootstrap) speaks in
//! collections, records (`serde_json` maps) and the typed query tree of
//! [`crate::query`]; no database type escapes its backend. What the
//! backends share lives here: the value codec ([`codec`]), the SQL built
//! from queries and schema steps ([`sql`], with a [`sql::Dialect`] per
//! backend), and migration bookkeeping with the seeding rules
//! ([`migrate`]).
//!
//! # The contract
//!
//! - **Reads** ([`Store::read`]) run outside any transaction: each
//!   statement sees every transaction committed before it started, by any
//!   process; two statements of one read may see different commits. A
//!   read connection cannot write (it is a [`Reader`], not a [`Writer`]).
//! - **Writes** ([`Store::write`]) run in one transaction: all of it or
//!   nothing, committed when the work returns `Ok`, rolled back on `Err`.
//!   Its statements see its own writes. Concurrent write transactions behave
//!   as if run one after the other: those of one process take turns (both
//!   backends); across processes SQLite's file lock makes them take turns,
//!   and PostgreSQL runs them `SERIALIZABLE`. When PostgreSQL detects a
//!   conflict with another process's transaction, the transaction is run
//!   again from the start, so `work` may run more than once: it must act
//!   only through its connection, or reset what it collects at its start.
//!   A write refused by a constraint changes nothing and the transaction
//!   goes on (the work decides whether to give up).
//! - A thread that holds a write transaction opens no other: a nested write
//!   is refused (it would wait on itself); use the open transaction.
//! - **Visibility of other processes' commits**: [`Store::data_version`]
//!   moves after every commit by anyone (this process, another host, an
//!   operator's SQL) and never goes back; [`Store::tracked_version`] moves
//!   after every commit that changes the collections given to
//!   [`Store::track_changes`]. A value computed after reading version `v`
//!   is current for as long as the version still reads `v`: every cache
//!   of the platform is keyed on one of them.
//! - **Migrations** ([`Store::migrate`], [`Store::run_once`]) apply once
//!   in the life of a database, atomically, even when several processes
//!   start together on it.
//! - **Counters** ([`Store::counter`]): fixed windows of points kept in
//!   the [`COUNTERS`] table (the throttle's store shared by every host on
//!   the database). Each operation is one statement, atomic under
//!   concurrency (an upsert that adds, never a read and then a write), run
//!   outside any transaction; and it is not a commit that
//!   [`Store::data_version`] counts in this process: counters are not data
//!   any answer is made of, and counting a request must not expire the
//!   caches.

pub mod backup;
pub mod codec;
pub mod migrate;
pub mod postgres;
pub mod sql;
pub mod sqlite;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::query::{AggregateQuery, ReadQuery};
use crate::schema::{CollectionDef, Schema};

/// A record as stored: field name → JSON value.
pub type Record = Map<String, Value>;

/// The table of [`Store::counter`]: a host-owned collection (declared
/// with the platform's migrations) whose `id` is the counter's key,
/// `points` its points and `ends` when its window ends (milliseconds since
/// the Unix epoch).
pub const COUNTERS: &str = "platform_counters";

/// The window of a counter that is open: its points, and when it ends
/// (milliseconds since the Unix epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub points: i64,
    pub ends_ms: i64,
}

/// One operation on the counters (see [`Store::counter`]). Times are
/// milliseconds since the Unix epoch; a window whose end is at or before
/// `now_ms` is over, as if it did not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterOp<'a> {
    /// Adds `points` to the window of `key` open at `now_ms`, or opens one
    /// with them that ends `length_ms` later; answers the window after.
    Add {
        key: &'a str,
        points: i64,
        now_ms: i64,
        length_ms: i64,
    },
    /// Takes `points` back from the window of `key` open at `now_ms`, if
    /// it holds as many; answers nothing.
    TakeBack {
        key: &'a str,
        points: i64,
        now_ms: i64,
    },
    /// The window of `key` open at `now_ms`, if any.
    Read { key: &'a str, now_ms: i64 },
    /// Forgets `key`'s window; answers nothing.
    Clear { key: &'a str },
    /// Forgets every window over at `now_ms`; answers nothing.
    Prune { now_ms: i64 },
}

/// The values a write sets: field name → the scalar its column stores
/// ([`codec::to_scalar`], or a JSON document's text as it came).
pub type Columns = std::collections::BTreeMap<String, codec::Scalar>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A unique constraint refused the write: the collection and the
    /// fields it covers (as the backend names them).
    #[error("value not unique in {collection} ({})", fields.join(", "))]
    NotUnique {
        collection: String,
        fields: Vec<String>,
    },
    /// The database could not serve in time (locked, out of connections),
    /// or kept reporting conflicts with concurrent writes.
    #[error("the database is busy")]
    Busy,
    #[error("{0}")]
    Invalid(String),
    #[error("storage failure: {0}")]
    Backend(String),
    /// The work inside a transaction failed; the transaction was rolled back.
    #[error("transaction aborted")]
    Aborted,
}

/// Reading operations of a connection.
pub trait Reader: Send {
    fn select(&mut self, c: &CollectionDef, q: &ReadQuery) -> Result<Vec<Record>, StoreError>;
    /// The rows of [`Reader::select`] as JSON text: each record, as
    /// `serde_json` prints it, appended to `out` with commas between (no
    /// brackets); returns how many. Stored JSON documents are copied as
    /// stored.
    fn select_json(
        &mut self,
        c: &CollectionDef,
        q: &ReadQuery,
        out: &mut Vec<u8>,
    ) -> Result<usize, StoreError>;
    /// The rows of [`Reader::select`] as the JSON text of each cell, as
    /// [`Reader::select_json`] writes it: for answers assembled from
    /// several reads (related records placed in their parents) without
    /// building records.
    fn select_text(&mut self, c: &CollectionDef, q: &ReadQuery) -> Result<TextRows, StoreError>;
    fn aggregate(
        &mut self,
        c: &CollectionDef,
        q: &AggregateQuery,
    ) -> Result<Vec<Record>, StoreError>;
}

/// Rows of a select, each cell as JSON text ([`Reader::select_text`]):
/// one buffer for all of them, so that reading a thousand rows is not a
/// thousand allocations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextRows {
    fields: Vec<String>,
    text: Vec<u8>,
    /// Where each cell ends in `text`, row after row.
    ends: Vec<usize>,
}

impl TextRows {
    /// No rows yet, of these fields (in the order of the query).
    pub fn new(fields: Vec<String>) -> Self {
        Self {
            fields,
            text: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// The selected fields, in the order of the query (a field asked for
    /// twice is there twice).
    pub fn fields(&self) -> &[String] {
        &self.fields
    }

    /// The column of `field`, its first when selected twice.
    pub fn column(&self, field: &str) -> Option<usize> {
        self.fields.iter().position(|f| f == field)
    }

    pub fn len(&self) -> usize {
        self.ends.len().checked_div(self.fields.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes of text of all the cells.
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// The JSON text of the cell of `row` in `column`.
    ///
    /// # Panics
    /// When `row` or `column` is out of range.
    pub fn cell(&self, row: usize, column: usize) -> &[u8] {
        assert!(column < self.fields.len(), "column {column} out of range");
        let at = row * self.fields.len() + column;
        let start = if at == 0 { 0 } else { self.ends[at - 1] };
        &self.text[start..self.ends[at]]
    }

    /// Appends the next cell (rows are filled cell by cell, in the order
    /// of the fields), written by `write`.
    pub fn push_cell(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        write(&mut self.text);
        self.ends.push(self.text.len());
    }
}

/// A connection inside a write transaction: reads see the transaction's
/// own writes.
pub trait Writer: Reader {
    fn insert(&mut self, c: &CollectionDef, values: &Columns) -> Result<(), StoreError>;
    /// Returns whether an item with that key existed.
    fn update(
        &mut self,
        c: &CollectionDef,
        key: &str,
        changes: &Columns,
    ) -> Result<bool, StoreError>;
    /// Returns whether an item with that key existed.
    fn delete(&mut self, c: &CollectionDef, key: &str) -> Result<bool, StoreError>;
}

pub type ReadWork<'a> = dyn FnMut(&mut dyn Reader) -> Result<(), StoreError> + 'a;
pub type WriteWork<'a> = dyn FnMut(&mut dyn Writer) -> Result<(), StoreError> + 'a;

/// The first data version of a store opened now. Each store of the
/// process counts from a base of its own, 2^40 apart: values kept per data
/// version in a `static` (an extension's `host_sdk::Memo`) are the
/// process's, and with several platforms in one process (the test kit's
/// hosts, side by side) one store's version must never name another's
/// data.
pub(crate) fn first_data_version() -> u64 {
    static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    (OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) << 40) + 1
}

/// The database.
pub trait Store: Send + Sync {
    /// The current schema (replaced whenever a migration runs).
    fn schema(&self) -> Arc<Schema>;
    /// Runs reads on a pooled connection.
    fn read(&self, work: &mut ReadWork<'_>) -> Result<(), StoreError>;
    /// Runs `work` in one write transaction: committed on `Ok`, rolled back
    /// on `Err`; run again from the start after a conflict (see the
    /// module's contract).
    fn write(&self, work: &mut WriteWork<'_>) -> Result<(), StoreError>;
    /// A number that changes after every commit to the database, by this
    /// process or any other; never goes back, and is never one another
    /// store of this process has handed out ([`first_data_version`]).
    fn data_version(&self) -> u64;
    /// Requests this process has made of the database since it opened it:
    /// exchanges with the server (a statement, a batch, a prepare), or on
    /// an embedded database the statements run. The figure that predicts
    /// how a database shared by several hosts scales.
    fn round_trips(&self) -> u64;
    /// Rows the database has returned to this process since it opened it,
    /// by every query of the shared SQL (a count is one row). What a
    /// request read, whatever the number of statements it took.
    fn rows_read(&self) -> u64;
    /// Rows the database stepped over in full table scans (reads no index
    /// served) by this process's statements, where the database tells
    /// (SQLite; `None` on PostgreSQL, whose counts are per table and
    /// reported late). A route whose cost must not grow with a table's
    /// size adds none.
    fn full_scan_rows(&self) -> Option<u64> {
        None
    }
    /// Starts counting, in the database itself, the commits that change any
    /// of `collections`, whoever makes them (this process, another one, SQL
    /// by hand); [`Store::tracked_version`] reads the count. Idempotent.
    fn track_changes(&self, collections: &[&str]) -> Result<(), StoreError>;
    /// The count kept for [`Store::track_changes`]: equal numbers mean no
    /// tracked collection changed in between.
    fn tracked_version(&self) -> Result<u64, StoreError>;
    /// Runs `work` in one write transaction unless `owner`/`id` is already
    /// recorded among the migrations, and records it in that transaction;
    /// returns whether it ran. For changes of data made once in the life of
    /// a database (a seeded rule narrowed, say), never again over later
    /// edits.
    fn run_once(&self, owner: &str, id: &str, work: &mut WriteWork<'_>)
        -> Result<bool, StoreError>;
    /// Applies one migration of `owner` unless already applied; returns
    /// whether it ran. Applying is atomic. The steps that change no schema
    /// and seed no item are applied by `rules`.
    fn migrate(
        &self,
        owner: &str,
        id: &str,
        steps: &[host_sdk::schema::Step],
        rules: &dyn StepRules,
    ) -> Result<bool, StoreError>;
    /// Every migration recorded in the database (`owner`, `id`): those
    /// recorded when it was opened, and those applied since through this
    /// store.
    fn recorded_migrations(&self) -> Vec<(String, String)>;
    /// Runs one operation on the counters of the [`COUNTERS`] table (see
    /// the module's contract): one atomic statement, outside any
    /// transaction, not counted by [`Store::data_version`] in this process.
    fn counter(&self, op: CounterOp<'_>) -> Result<Option<Window>, StoreError>;
}

/// What the migration steps that change no schema and seed no item mean
/// (a grant of permissions): the store applies the others itself and knows
/// nothing of these, which the platform above it gives a meaning to.
pub trait StepRules {
    /// Applies `step` of the migration `label` in its transaction; `schema`
    /// holds the collections as the migration's earlier steps left them.
    fn apply(
        &self,
        conn: &mut dyn Writer,
        schema: &Schema,
        step: &host_sdk::schema::Step,
        label: &str,
    ) -> Result<(), StoreError>;
}

/// Rules that give no step a meaning: a migration of schema steps and
/// seeded items only, any other step refused.
pub struct SchemaStepsOnly;

impl StepRules for SchemaStepsOnly {
    fn apply(
        &self,
        _conn: &mut dyn Writer,
        _schema: &Schema,
        step: &host_sdk::schema::Step,
        _label: &str,
    ) -> Result<(), StoreError> {
        Err(StoreError::Invalid(format!(
            "a step that is not a schema change: {}",
            serde_json::to_string(step).unwrap_or_default()
        )))
    }
}

pub use backup::{backup, restore, BackupError, Copied, CopyProgress};

/// Where the data lives, as configured (docs/decisions.md §2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite database file.
    File(std::path::PathBuf),
    /// A PostgreSQL connection string (`postgres://…` URL or key=value).
    Postgres(String),
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => write!(f, "{}", postgres::redacted(url)),
        }
    }
}

/// Opens the store at `location`; `pool_max` bounds its connections.
pub fn open(location: &Location, pool_max: Option<u32>) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match location {
        Location::File(path) => Arc::new(sqlite::SqliteStore::open(path, pool_max)?),
        Location::Postgres(url) => Arc::new(postgres::PgStore::open(url, pool_max)?),
    })
}

thread_local! {
    /// Set while this thread holds a write transaction (see the contract).
    static IN_WRITE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as holding a write transaction while `f` runs;
/// refuses a nested one.
pub(crate) fn exclusive_write<T>(
    f: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    /// Clears the mark however `f` ends, a panic included.
    struct Mark;
    impl Drop for Mark {
        fn drop(&mut self) {
            IN_WRITE.with(|w| w.set(false));
        }
    }
    if IN_WRITE.with(std::cell::Cell::get) {
        return Err(StoreError::Backend(
            "a write was attempted outside the open transaction of this thread; \
             use the transaction's services"
                .into(),
        ));
    }
    IN_WRITE.with(|w| w.set(true));
    let _mark = Mark;
    f()
}

/// A connection from `pool`; an error when none comes in the pool's time.
pub(crate) fn pooled<M: r2d2::ManageConnection>(
    pool: &r2d2::Pool<M>,
) -> Result<r2d2::PooledConnection<M>, StoreError> {
    pool.get()
        .map_err(|e| StoreError::Backend(format!("no connection: {e}")))
}

/// Runs a transaction's `work` on `conn`; when it panics, `rollback` runs
/// on `conn` before the panic goes on, so that no pooled connection keeps
/// an open transaction (and, on SQLite, the database's write lock) for
/// whoever takes it next.
pub(crate) fn rolled_back_on_panic<C: ?Sized, T>(
    conn: &mut C,
    work: impl FnOnce(&mut C) -> T,
    rollback: impl FnOnce(&mut C),
) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&mut *conn))).unwrap_or_else(
        |panic| {
            rollback(conn);
            std::panic::resume_unwind(panic)
        },
    )
}

/// Helper: run a read returning a value.
pub fn read_with<T>(
    store: &dyn Store,
    mut f: impl FnMut(&mut dyn Reader) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut out = None;
    store.read(&mut |conn| {
        out = Some(f(conn)?);
        Ok(())
    })?;
    out.ok_or_else(|| StoreError::Backend("read produced no result".into()))
}
