//! The host's one storage interface.
//!
//! Everything above this module (items service, auth, bootstrap) speaks in
//! collections, records (`serde_json` maps) and backend-neutral queries; no
//! SQLite type escapes `sqlite.rs`. A PostgreSQL backend would implement
//! [`Store`] and [`Conn`] and nothing else would change.

pub mod sqlite;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::query::{AggregateQuery, ReadQuery};
use crate::schema::{CollectionDef, Schema};

/// A record as stored: field name → JSON value.
pub type Record = Map<String, Value>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A unique constraint refused the write: the collection and the
    /// fields it covers (as the backend names them).
    #[error("value not unique in {collection} ({})", fields.join(", "))]
    NotUnique {
        collection: String,
        fields: Vec<String>,
    },
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

/// One connection's operations. Writes happen only inside [`Store::write`].
pub trait Conn: Send {
    fn select(&mut self, c: &CollectionDef, q: &ReadQuery) -> Result<Vec<Record>, StoreError>;
    /// The rows of [`Conn::select`] as JSON text: each record, as
    /// `serde_json` prints it, appended to `out` with commas between (no
    /// brackets); returns how many. For readers that want text anyway; a
    /// backend may write the text without building records.
    fn select_json(
        &mut self,
        c: &CollectionDef,
        q: &ReadQuery,
        out: &mut Vec<u8>,
    ) -> Result<usize, StoreError> {
        let records = self.select(c, q)?;
        for (i, record) in records.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut *out, record)
                .map_err(|e| StoreError::Backend(e.to_string()))?;
        }
        Ok(records.len())
    }
    fn aggregate(
        &mut self,
        c: &CollectionDef,
        q: &AggregateQuery,
    ) -> Result<Vec<Record>, StoreError>;
    fn insert(&mut self, c: &CollectionDef, record: &Record) -> Result<(), StoreError>;
    /// Returns whether an item with that key existed.
    fn update(
        &mut self,
        c: &CollectionDef,
        key: &str,
        changes: &Record,
    ) -> Result<bool, StoreError>;
    /// Returns whether an item with that key existed.
    fn delete(&mut self, c: &CollectionDef, key: &str) -> Result<bool, StoreError>;
}

pub type ConnWork<'a> = dyn FnMut(&mut dyn Conn) -> Result<(), StoreError> + 'a;

/// The database.
pub trait Store: Send + Sync {
    /// The current schema (replaced whenever a migration runs).
    fn schema(&self) -> Arc<Schema>;
    /// Runs reads on a pooled connection.
    fn read(&self, work: &mut ConnWork<'_>) -> Result<(), StoreError>;
    /// Runs `work` in one write transaction: committed on `Ok`, rolled back
    /// on `Err`. Write transactions are serialised.
    fn write(&self, work: &mut ConnWork<'_>) -> Result<(), StoreError>;
    /// A number that changes after every commit to the database, by this
    /// process or any other; never goes back.
    fn data_version(&self) -> u64;
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
    fn run_once(&self, owner: &str, id: &str, work: &mut ConnWork<'_>) -> Result<bool, StoreError>;
    /// Applies one migration of `owner` unless already applied; returns
    /// whether it ran. Applying is atomic.
    fn migrate(
        &self,
        owner: &str,
        id: &str,
        steps: &[host_sdk::schema::Step],
    ) -> Result<bool, StoreError>;
}

/// Helper: run a read returning a value.
pub fn read_with<T>(
    store: &dyn Store,
    mut f: impl FnMut(&mut dyn Conn) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut out = None;
    store.read(&mut |conn| {
        out = Some(f(conn)?);
        Ok(())
    })?;
    out.ok_or_else(|| StoreError::Backend("read produced no result".into()))
}
