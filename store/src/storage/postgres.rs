//! The PostgreSQL backend: a pool of synchronous clients (called from the
//! blocking pool, never from an async worker), statements prepared once per
//! connection, write transactions taking turns within the process and
//! `SERIALIZABLE` across processes (run again on a conflict), and
//! PostgreSQL's dialect of the shared SQL.
//!
//! Columns hold what SQLite holds (text for strings, timestamps, UUIDs and
//! JSON documents; `bigint`, `double precision`, `boolean`), text sorts
//! byte-wise (`COLLATE "C"`) and nulls sort as on SQLite, so both backends
//! give the same answers byte for byte.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use host_sdk::schema::{FieldType, Index, Step};
use parking_lot::{Mutex, RwLock};
use postgres::error::SqlState;
use postgres::types::{FromSql, IsNull, Kind, ToSql, Type};
use postgres::{Client, NoTls, Statement};
use rand::Rng;
use serde_json::Value;

use super::codec::{Cell, Scalar};
use super::sql::{self, clamp_to_i64, Dialect, Params, ReadConn, Row, SqlConn, WriteConn};
use super::{
    exclusive_write, migrate, pooled, rolled_back_on_panic, CounterOp, ReadWork, StepRules, Store,
    StoreError, Window, WriteWork,
};
use crate::query::{AggFn, TextMatch};
use crate::schema::Schema;

const DEFAULT_POOL_SIZE: u32 = 16;
/// How long a write transaction that keeps conflicting with other hosts'
/// transactions is run again before the caller is told the database is
/// busy. On small tables PostgreSQL's predicate locks cover whole tables
/// (they are scanned, not searched), so that under a burst of writes from
/// several hosts one transaction may lose many times in a row.
const RETRY_FOR: Duration = Duration::from_secs(10);
/// The longest random pause between two runs of a conflicting transaction.
const MAX_PAUSE_MS: u64 = 50;
/// Statements kept prepared per connection.
const STATEMENT_CACHE: usize = 512;
/// The advisory lock that makes migrations and first-start work run one
/// process at a time.
const MIGRATION_LOCK: i64 = 0x706c_6174_666f_726d; // "platform"

/// A connection string with its password hidden, for logs and errors.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url
            .split_whitespace()
            .map(|kv| match kv.split_once('=') {
                Some(("password", _)) => "password=***".to_string(),
                _ => kv.to_string(),
            })
            .collect::<Vec<_>>()
            .join(" ");
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// Whether the database asks for the transaction to be run again.
fn is_conflict(e: &postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(&SqlState::T_R_SERIALIZATION_FAILURE) | Some(&SqlState::T_R_DEADLOCK_DETECTED)
    )
}

fn map_pg_error(e: postgres::Error) -> StoreError {
    let Some(db) = e.as_db_error() else {
        return backend(e);
    };
    match *db.code() {
        SqlState::UNIQUE_VIOLATION => {
            // "Key (a, b)=(…) already exists."
            let fields = db
                .detail()
                .and_then(|d| d.strip_prefix("Key ("))
                .and_then(|d| d.split_once(")="))
                .map(|(cols, _)| {
                    cols.split(',')
                        .map(|c| c.trim().trim_matches('"').to_string())
                        .collect()
                })
                .unwrap_or_default();
            StoreError::NotUnique {
                collection: db.table().unwrap_or_default().to_string(),
                fields,
            }
        }
        SqlState::T_R_SERIALIZATION_FAILURE
        | SqlState::T_R_DEADLOCK_DETECTED
        | SqlState::LOCK_NOT_AVAILABLE
        | SqlState::TOO_MANY_CONNECTIONS => StoreError::Busy,
        SqlState::CHARACTER_NOT_IN_REPERTOIRE | SqlState::UNTRANSLATABLE_CHARACTER => {
            StoreError::Invalid("text containing a NUL character cannot be stored".into())
        }
        _ => backend(format!("{}: {}", db.code().code(), db.message())),
    }
}

/// PostgreSQL's SQL.
struct PgDialect;

/// The type of a field kind's values (a column's is this, with byte-wise
/// order for text; a bound list's is an array of it).
fn value_type(kind: FieldType) -> &'static str {
    match kind {
        FieldType::Integer => "BIGINT",
        FieldType::Boolean => "BOOLEAN",
        FieldType::Float => "DOUBLE PRECISION",
        _ => TEXT,
    }
}

const TEXT: &str = "TEXT";

static DIALECT: PgDialect = PgDialect;

impl Dialect for PgDialect {
    fn placeholder(&self, n: usize) -> String {
        format!("${n}")
    }

    fn column_type(&self, kind: FieldType) -> &'static str {
        match value_type(kind) {
            // Byte-wise order and comparison, as on SQLite.
            TEXT => "TEXT COLLATE \"C\"",
            other => other,
        }
    }

    fn bool_literal(&self, b: bool) -> &'static str {
        if b {
            "TRUE"
        } else {
            "FALSE"
        }
    }

    fn in_list(&self, col: &str, kind: FieldType, negated: bool, list: &str) -> String {
        // The list is bound as one array, joined as a set: `col = ANY(array)`
        // compares each row a scan meets with each element in turn (a bound
        // array is never hashed), and the planner, which cannot see the
        // array's length, scans small tables so: 500 files against 50 ids
        // took longer than the page's other reads together. The set is
        // hashed, or its elements looked up in an index.
        format!(
            "{col} {}IN (SELECT unnest(CAST({list} AS {}[])))",
            if negated { "NOT " } else { "" },
            value_type(kind)
        )
    }

    fn has_element(&self, col: &str, element: &Value, p: &mut Params<'_>) -> String {
        let mark = p.push(Scalar::Text(element.to_string()));
        format!(
            "EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof({col}::jsonb) = 'array' \
             THEN {col}::jsonb ELSE '[]'::jsonb END) AS j(v) WHERE j.v = CAST({mark} AS TEXT)::jsonb)"
        )
    }

    fn text_match(&self, col: &str, op: TextMatch, text: &str, p: &mut Params<'_>) -> String {
        let mark = p.push(Scalar::Text(text.to_string()));
        let t = format!("CAST({mark} AS TEXT)");
        let c = format!("CAST({col} AS TEXT)");
        match op {
            TextMatch::Contains => format!("strpos({c}, {t}) > 0"),
            TextMatch::NotContains => format!("({col} IS NULL OR strpos({c}, {t}) = 0)"),
            TextMatch::ContainsIgnoringCase => format!("strpos(lower({c}), lower({t})) > 0"),
            TextMatch::StartsWith => format!("starts_with({c}, {t})"),
            TextMatch::EndsWith => format!("right({c}, length({t})) = {t}"),
        }
    }

    fn order_term(&self, col: &str, desc: bool) -> String {
        if desc {
            format!("{col} DESC NULLS LAST")
        } else {
            format!("{col} ASC NULLS FIRST")
        }
    }

    fn index_uniqueness(&self, _table: &str, name: &str, p: &mut Params<'_>) -> String {
        // Index names are unique in a schema.
        format!(
            "SELECT i.indisunique FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relname::text = {}",
            p.push(Scalar::Text(name.to_string()))
        )
    }

    fn index_column(&self, col: &str, descending: bool) -> String {
        // A plain index holds nulls last: read forwards it gives `ASC NULLS
        // LAST`, backwards `DESC NULLS FIRST`, neither of the contract's
        // orders, and every sort on it would scan and sort the table.
        if descending {
            format!("{col} DESC NULLS LAST")
        } else {
            format!("{col} NULLS FIRST")
        }
    }

    /// The limit written as a number and the offset bound (left out when
    /// 0). The server's generic plan takes a bound limit to keep a tenth
    /// of the rows and a bound offset to skip a tenth, so it looks dearer
    /// than a plan made for the values and the statement is planned again
    /// at every execution: the leaderboard's read spent 35 µs planning for
    /// 127 µs running, a row by its key 20 µs for 5. Written out, a
    /// statement whose other parameters do not change its cost keeps one
    /// plan. A list's distinct limits are few; its offsets are not, so a
    /// page past the first is still planned for its offset.
    fn limit_clause(&self, limit: Option<u64>, offset: u64, p: &mut Params<'_>) -> String {
        let mut clause = match limit {
            Some(n) => format!(" LIMIT {}", clamp_to_i64(n)),
            None => String::new(),
        };
        if offset > 0 {
            let mark = p.push(Scalar::Int(clamp_to_i64(offset)));
            clause.push_str(&format!(" OFFSET {mark}"));
        }
        clause
    }

    fn aggregate(&self, f: AggFn, col: Option<(&str, FieldType)>) -> String {
        // Booleans count as 0/1, as on SQLite.
        let arg = |c: &str, kind| {
            if kind == FieldType::Boolean {
                format!("CAST({c} AS INTEGER)")
            } else {
                c.to_string()
            }
        };
        match (f, col) {
            (AggFn::Count, Some((c, _))) => format!("COUNT({c})"),
            (AggFn::CountDistinct, Some((c, _))) => format!("COUNT(DISTINCT {c})"),
            (AggFn::Sum, Some((c, k))) => {
                format!("CAST(COALESCE(SUM({}), 0) AS DOUBLE PRECISION)", arg(c, k))
            }
            (AggFn::Avg, Some((c, k))) => format!("CAST(AVG({}) AS DOUBLE PRECISION)", arg(c, k)),
            (AggFn::Min, Some((c, k))) => format!("MIN({})", arg(c, k)),
            (AggFn::Max, Some((c, k))) => format!("MAX({})", arg(c, k)),
            (_, None) => "COUNT(*)".into(),
        }
    }
}

type BoxError = Box<dyn StdError + Sync + Send>;

/// A scalar bound as the type the server expects for its parameter: the
/// column's type, inferred by the server when it prepares the statement.
impl ToSql for Scalar {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let mismatch = || -> BoxError { format!("cannot bind {self:?} as {ty}").into() };
        match self {
            Scalar::Null => Ok(IsNull::Yes),
            Scalar::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i).map_err(|_| mismatch())?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*i).map_err(|_| mismatch())?.to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                _ => i.to_string().to_sql(ty, out),
            },
            Scalar::Real(f) => match *ty {
                Type::FLOAT8 => f.to_sql(ty, out),
                Type::FLOAT4 => (*f as f32).to_sql(ty, out),
                Type::INT8 if f.fract() == 0.0 => (*f as i64).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => format!("{f:?}").to_sql(ty, out),
                _ => Err(mismatch()),
            },
            Scalar::Bool(b) => match *ty {
                Type::BOOL => b.to_sql(ty, out),
                Type::INT8 => (*b as i64).to_sql(ty, out),
                Type::INT4 => (*b as i32).to_sql(ty, out),
                _ => b.to_string().to_sql(ty, out),
            },
            Scalar::Text(s) => match *ty {
                Type::INT8 => s.parse::<i64>().map_err(|_| mismatch())?.to_sql(ty, out),
                Type::FLOAT8 => s.parse::<f64>().map_err(|_| mismatch())?.to_sql(ty, out),
                Type::BOOL => s.parse::<bool>().map_err(|_| mismatch())?.to_sql(ty, out),
                _ => s.as_str().to_sql(ty, out),
            },
            Scalar::List(items) => match ty.kind() {
                Kind::Array(_) => items.to_sql(ty, out),
                _ => Err(mismatch()),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

struct PgRow<'a>(&'a postgres::Row);

impl Row for PgRow<'_> {
    fn cell(&self, i: usize) -> Result<Cell<'_>, StoreError> {
        let row = self.0;
        let column = row
            .columns()
            .get(i)
            .ok_or_else(|| backend(format!("no column {i}")))?;
        let get_err = |e: postgres::Error| backend(e);
        Ok(match *column.type_() {
            Type::INT8 => row
                .try_get::<_, Option<i64>>(i)
                .map_err(get_err)?
                .map_or(Cell::Null, Cell::Int),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)
                .map_err(get_err)?
                .map_or(Cell::Null, |n| Cell::Int(n.into())),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)
                .map_err(get_err)?
                .map_or(Cell::Null, |n| Cell::Int(n.into())),
            Type::FLOAT8 => row
                .try_get::<_, Option<f64>>(i)
                .map_err(get_err)?
                .map_or(Cell::Null, Cell::Real),
            Type::FLOAT4 => row
                .try_get::<_, Option<f32>>(i)
                .map_err(get_err)?
                .map_or(Cell::Null, |f| Cell::Real(f.into())),
            Type::BOOL => row
                .try_get::<_, Option<bool>>(i)
                .map_err(get_err)?
                .map_or(Cell::Null, Cell::Bool),
            _ => row
                .try_get::<_, Option<TextBytes<'_>>>(i)
                .map_err(get_err)?
                .map_or(Cell::Null, |t| Cell::Text(t.0)),
        })
    }
}

/// A text cell's bytes as the server sent them, not checked as UTF-8
/// here: they are checked once, where they are written to an answer or
/// made a value (`codec`), as SQLite's cells are. Read as `&str`, each
/// text cell of a page was checked twice.
struct TextBytes<'a>(&'a [u8]);

impl<'a> FromSql<'a> for TextBytes<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(TextBytes(raw))
    }

    /// The types read as text (`text`, `varchar`, `name`, ...), no others.
    fn accepts(ty: &Type) -> bool {
        <&str as FromSql>::accepts(ty)
    }
}

/// A pooled client and its prepared statements. Every exchange with the
/// server goes through its methods, which count them (see
/// [`Store::round_trips`]), and the rows they return ([`Store::rows_read`]).
pub struct PgClient {
    client: Client,
    statements: HashMap<String, Statement>,
    round_trips: Arc<AtomicU64>,
    rows_read: Arc<AtomicU64>,
}

impl PgClient {
    fn trip(&self) {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
    }

    fn prepare(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(stmt) = self.statements.get(sql) {
            return Ok(stmt.clone());
        }
        self.trip();
        let stmt = self.client.prepare(sql)?;
        if self.statements.len() >= STATEMENT_CACHE {
            self.statements.clear();
        }
        self.statements.insert(sql.to_string(), stmt.clone());
        Ok(stmt)
    }

    fn query(
        &mut self,
        stmt: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>, postgres::Error> {
        self.trip();
        let rows = self.client.query(stmt, params)?;
        self.rows_read
            .fetch_add(rows.len() as u64, Ordering::Relaxed);
        Ok(rows)
    }

    fn query_one(&mut self, stmt: &Statement) -> Result<postgres::Row, postgres::Error> {
        self.trip();
        self.client.query_one(stmt, &[])
    }

    fn execute(
        &mut self,
        stmt: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, postgres::Error> {
        self.trip();
        self.client.execute(stmt, params)
    }

    /// Statements without parameters, sent together: one round trip.
    fn batch_execute(&mut self, sql: &str) -> Result<(), postgres::Error> {
        self.trip();
        self.client.batch_execute(sql)
    }
}

struct Manager {
    config: postgres::Config,
    round_trips: Arc<AtomicU64>,
    rows_read: Arc<AtomicU64>,
}

/// Large values (a recording's events) are compressed with LZ4 instead of
/// the default pglz when the server has it (PostgreSQL 14 and later, built
/// with LZ4): a create of 1,000 events costs the server a third less. The
/// setting is the session's, so a server without it is used as it is.
fn prefer_lz4(client: &mut Client) {
    if let Err(e) = client.batch_execute("SET default_toast_compression = 'lz4'") {
        log::debug!("PostgreSQL keeps its default compression of large values: {e}");
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = PgClient;
    type Error = postgres::Error;

    fn connect(&self) -> Result<PgClient, postgres::Error> {
        let mut client = self.config.connect(NoTls)?;
        prefer_lz4(&mut client);
        Ok(PgClient {
            client,
            statements: HashMap::new(),
            round_trips: self.round_trips.clone(),
            rows_read: self.rows_read.clone(),
        })
    }

    fn is_valid(&self, conn: &mut PgClient) -> Result<(), postgres::Error> {
        conn.batch_execute("")
    }

    fn has_broken(&self, conn: &mut PgClient) -> bool {
        conn.client.is_closed()
    }
}

/// A pooled client driven by the shared SQL. Inside a transaction every
/// write runs under a savepoint, so that a refused write (a unique
/// violation) changes nothing and the transaction goes on, as on SQLite.
/// The first savepoint is taken with `BEGIN`, and one is taken again only
/// after something was written past it: a transaction that writes once
/// (a create) pays no exchange for it.
struct Pg<'a> {
    c: &'a mut PgClient,
    in_tx: bool,
    /// The savepoint is taken and nothing was written since, so a refused
    /// write rolls back to exactly the state before it.
    savepoint_clean: bool,
    /// The database asked for the transaction to be run again.
    conflict: bool,
}

impl<'a> Pg<'a> {
    fn new(c: &'a mut PgClient) -> Self {
        Self {
            c,
            in_tx: false,
            savepoint_clean: false,
            conflict: false,
        }
    }

    fn fail(&mut self, e: postgres::Error) -> StoreError {
        if is_conflict(&e) {
            self.conflict = true;
        }
        map_pg_error(e)
    }

    fn refs(params: &[Scalar]) -> Vec<&(dyn ToSql + Sync)> {
        params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
    }
}

impl SqlConn for Pg<'_> {
    fn dialect(&self) -> &'static dyn Dialect {
        &DIALECT
    }

    fn query(
        &mut self,
        sql: &str,
        params: &[Scalar],
        each: &mut dyn FnMut(&dyn Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        log::trace!("{sql}");
        // A query that is not a plain read (an upsert answering its row)
        // writes past the savepoint.
        if self.in_tx && !sql.starts_with("SELECT ") {
            self.savepoint_clean = false;
        }
        let stmt = self.c.prepare(sql).map_err(|e| self.fail(e))?;
        let rows = self
            .c
            .query(&stmt, &Self::refs(params))
            .map_err(|e| self.fail(e))?;
        for row in &rows {
            each(&PgRow(row))?;
        }
        Ok(())
    }

    fn execute(&mut self, sql: &str, params: &[Scalar]) -> Result<u64, StoreError> {
        log::trace!("{sql}");
        let stmt = self.c.prepare(sql).map_err(|e| self.fail(e))?;
        if self.in_tx && !self.savepoint_clean {
            self.c
                .batch_execute("RELEASE SAVEPOINT w; SAVEPOINT w")
                .map_err(|e| self.fail(e))?;
            self.savepoint_clean = true;
        }
        match self.c.execute(&stmt, &Self::refs(params)) {
            Ok(n) => {
                self.savepoint_clean = false;
                Ok(n)
            }
            Err(e) => {
                // Rolling back to the savepoint keeps it, clean.
                if self.in_tx && !is_conflict(&e) {
                    let _ = self.c.batch_execute("ROLLBACK TO SAVEPOINT w");
                }
                Err(self.fail(e))
            }
        }
    }

    fn execute_batch(&mut self, sql: &str) -> Result<(), StoreError> {
        log::trace!("{sql}");
        self.savepoint_clean = false;
        self.c.batch_execute(sql).map_err(|e| self.fail(e))
    }
}

/// The database's count of committed write transactions, as last seen, and
/// the version handed out for it.
struct CommitWatch {
    commits: i64,
    version: u64,
}

/// How many commit rows are kept before they are folded into the base.
const COMMIT_ROWS_KEPT: i64 = 512;

/// The commit counter: every write transaction, whoever runs it (a host,
/// `schedule run`, an operator's SQL), adds one row to `platform_commits`
/// from a statement trigger on every table, in its own transaction. The
/// row becomes visible exactly when the transaction's data does, so the
/// count moves at each commit and at no other moment; it belongs to this
/// database alone; and writers never touch a shared row, so they never
/// wait for or conflict with each other over it. Rows are folded into
/// `platform_commit_base` now and then, leaving the sum unchanged.
const COMMIT_COUNTER: &str = "
    CREATE TABLE IF NOT EXISTS platform_commits (xid BIGINT NOT NULL);
    CREATE TABLE IF NOT EXISTS platform_commit_base (
        id INTEGER PRIMARY KEY CHECK (id = 1), commits BIGINT NOT NULL);
    INSERT INTO platform_commit_base (id, commits) VALUES (1, 0) ON CONFLICT DO NOTHING;
    CREATE OR REPLACE FUNCTION platform_count_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF current_setting('platform.counted', true) IS DISTINCT FROM txid_current()::text THEN
            INSERT INTO platform_commits (xid) VALUES (txid_current());
            PERFORM set_config('platform.counted', txid_current()::text, true);
        END IF;
        RETURN NULL;
    END $$;";

/// Counts the commits that change `table` (idempotent).
fn count_commits_on(conn: &mut Pg<'_>, table: &str) -> Result<(), StoreError> {
    conn.execute_batch(&format!(
        "CREATE OR REPLACE TRIGGER {} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {}
             FOR EACH STATEMENT EXECUTE FUNCTION platform_count_commit();",
        sql::quote(&format!("{table}_counted")),
        sql::quote(table),
    ))
}

/// The platform's indexes with an ascending column that holds nulls last
/// (as made before indexes were made with nulls first), as (name, table,
/// index). A descending column (`-name`) rightly holds them last.
fn nulls_last_indexes(conn: &mut Pg<'_>) -> Result<Vec<(String, String, Index)>, StoreError> {
    // One row per column of every index named as the platform names them;
    // bit 1 of a column's option is DESC, bit 2 NULLS FIRST.
    let query = "SELECT i.relname::text, t.relname::text, ix.indisunique, a.attname::text, \
                      (ix.indoption[(k.n - 1)::int]::int & 2) <> 0, \
                      (ix.indoption[(k.n - 1)::int]::int & 1) <> 0 \
               FROM pg_index ix \
               JOIN pg_class i ON i.oid = ix.indexrelid \
               JOIN pg_class t ON t.oid = ix.indrelid \
               JOIN pg_namespace ns ON ns.oid = t.relnamespace \
               CROSS JOIN LATERAL unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, n) \
               JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum \
               WHERE ns.nspname = current_schema() AND NOT ix.indisprimary \
                 AND i.relname LIKE 'idx\\_%' \
               ORDER BY i.relname, k.n";
    // (index, table, unique, columns, every column's nulls where the
    // contract's order wants them)
    let mut found: Vec<(String, String, bool, Vec<String>, bool)> = Vec::new();
    conn.query(query, &[], &mut |row| {
        let text = |i: usize| match row.cell(i)? {
            Cell::Text(t) => Ok(String::from_utf8_lossy(t).into_owned()),
            other => Err(backend(format!("pg_index column {i} reads {other:?}"))),
        };
        let flag = |i: usize| Ok::<_, StoreError>(matches!(row.cell(i)?, Cell::Bool(true)));
        let (name, column, first, descending) = (text(0)?, text(3)?, flag(4)?, flag(5)?);
        let (column, first) = match descending {
            true => (format!("-{column}"), !first),
            false => (column, first),
        };
        match found.last_mut() {
            Some(last) if last.0 == name => {
                last.3.push(column);
                last.4 &= first;
            }
            _ => found.push((name, text(1)?, flag(2)?, vec![column], first)),
        }
        Ok(())
    })?;
    Ok(found
        .into_iter()
        .filter(|(.., all_first)| !all_first)
        .map(|(name, table, unique, fields, _)| (name, table, Index { fields, unique }))
        // Only the platform's own: the name it gives those columns.
        .filter(|(name, table, index)| *name == sql::index_name(table, index))
        .collect())
}

/// Makes again, with nulls first, the indexes made before the platform
/// made them so: the contract's orders (`ASC NULLS FIRST`, `DESC NULLS
/// LAST`) are index walks only on those. In the start's transaction, so
/// that no write sees a table without its unique index.
fn remake_nulls_last_indexes(conn: &mut Pg<'_>) -> Result<(), StoreError> {
    for (name, table, index) in nulls_last_indexes(conn)? {
        log::info!(
            "making the index of {table} ({}) again with nulls first",
            index.fields.join(", ")
        );
        conn.execute_batch(&format!("DROP INDEX {}", sql::quote(&name)))?;
        conn.execute_batch(&sql::index(conn.dialect(), &table, &index))?;
    }
    Ok(())
}

/// Puts the commit counter on every table of the platform but the
/// counters' (see [`Store::counter`]): on those that lack it, found in
/// one catalog query, so that a start over a database that has them all
/// takes no lock on its tables.
fn count_commits_everywhere(conn: &mut Pg<'_>, schema: &Schema) -> Result<(), StoreError> {
    let mut tables: Vec<String> = schema
        .names()
        .filter(|name| *name != super::COUNTERS)
        .map(String::from)
        .collect();
    tables.extend([
        "platform_migrations".into(),
        "platform_fields".into(),
        "platform_aliases".into(),
        "platform_collections".into(),
    ]);
    let counted = tables_with_trigger(conn, "_counted", "platform_count_commit")?;
    for table in tables.iter().filter(|t| !counted.contains(*t)) {
        count_commits_on(conn, table)?;
    }
    Ok(())
}

/// The tables that have the trigger `<table><suffix>` as the platform
/// makes its triggers: after every statement that inserts, updates,
/// deletes or truncates (trigger type 4 + 8 + 16 + 32), running
/// `function`. One catalog query.
fn tables_with_trigger(
    conn: &mut Pg<'_>,
    suffix: &str,
    function: &str,
) -> Result<std::collections::HashSet<String>, StoreError> {
    let mut p = Params::new(conn.dialect());
    let query = format!(
        "SELECT c.relname::text FROM pg_trigger tg \
         JOIN pg_class c ON c.oid = tg.tgrelid \
         JOIN pg_namespace ns ON ns.oid = c.relnamespace \
         WHERE ns.nspname = current_schema() AND tg.tgname = c.relname || {} \
           AND tg.tgtype = 60 AND tg.tgfoid = to_regproc({})",
        p.push(Scalar::Text(suffix.into())),
        p.push(Scalar::Text(function.into())),
    );
    let mut found = std::collections::HashSet::new();
    conn.query(&query, &p.values, &mut |row| {
        if let Cell::Text(name) = row.cell(0)? {
            found.insert(String::from_utf8_lossy(name).into_owned());
        }
        Ok(())
    })?;
    Ok(found)
}

/// The pool of clients, closed on a thread of its own when dropped.
/// Closing a client blocks on the driver's own runtime, which panics on a
/// thread that drives async tasks; a host drops its store wherever its
/// last user goes (at the end of its serving task, say), and such a panic
/// inside a destructor aborts the process.
struct ClientPool(Option<r2d2::Pool<Manager>>);

impl ClientPool {
    fn get(&self) -> Result<r2d2::PooledConnection<Manager>, StoreError> {
        match &self.0 {
            Some(pool) => pooled(pool),
            None => Err(backend("the store is closed")),
        }
    }
}

impl Drop for ClientPool {
    fn drop(&mut self) {
        let Some(pool) = self.0.take() else {
            return;
        };
        let closing = std::thread::Builder::new()
            .name("postgres-close".into())
            .spawn(move || drop(pool));
        match closing {
            Ok(thread) => {
                if thread.join().is_err() {
                    log::warn!("closing the PostgreSQL clients failed");
                }
            }
            Err(e) => log::warn!("no thread to close the PostgreSQL clients on: {e}"),
        }
    }
}

pub struct PgStore {
    pool: ClientPool,
    /// Write transactions of this process take turns, as on SQLite: they
    /// never conflict with each other, only with other processes' (which
    /// `SERIALIZABLE` detects), and a transaction body an extension runs
    /// once is never asked to run again because of this host's own load.
    write_lock: Mutex<()>,
    schema: RwLock<Arc<Schema>>,
    commits: Mutex<CommitWatch>,
    /// Exchanges with the server, by every pooled client.
    round_trips: Arc<AtomicU64>,
    /// Rows the queries of every pooled client returned.
    rows_read: Arc<AtomicU64>,
    recorded: migrate::KnownRecorded,
}

impl PgStore {
    /// Connects to the database named by `url` (a `postgres://` URL or a
    /// `key=value` connection string).
    pub fn open(url: &str, pool_max: Option<u32>) -> Result<Self, StoreError> {
        let mut config = postgres::Config::from_str(url)
            .map_err(|e| backend(format!("bad connection string {}: {e}", redacted(url))))?;
        // "already exists, skipping" and the like: not news for the log.
        config.notice_callback(|notice| log::debug!("PostgreSQL: {}", notice.message()));
        let round_trips = Arc::new(AtomicU64::new(0));
        let rows_read = Arc::new(AtomicU64::new(0));
        let pool = r2d2::Pool::builder()
            .max_size(pool_max.unwrap_or(DEFAULT_POOL_SIZE).max(1))
            .min_idle(Some(1))
            // A checkout costs no round trip; a broken client is noticed
            // when used and replaced.
            .test_on_check_out(false)
            .connection_timeout(Duration::from_secs(30))
            .build(Manager {
                config,
                round_trips: round_trips.clone(),
                rows_read: rows_read.clone(),
            })
            .map_err(|e| backend(format!("cannot connect to {}: {e}", redacted(url))))?;
        let store = Self {
            pool: ClientPool(Some(pool)),
            write_lock: Mutex::new(()),
            schema: RwLock::new(Arc::new(Schema::default())),
            commits: Mutex::new(CommitWatch {
                commits: -1,
                version: super::first_data_version(),
            }),
            round_trips,
            rows_read,
            recorded: migrate::KnownRecorded::default(),
        };
        let (schema, recorded) = store.exclusive(|conn| {
            conn.execute_batch(migrate::BOOKKEEPING)?;
            conn.execute_batch(COMMIT_COUNTER)?;
            let schema = migrate::load_schema(conn)?;
            count_commits_everywhere(conn, &schema)?;
            remake_nulls_last_indexes(conn)?;
            Ok((schema, migrate::KnownRecorded::load(conn)?))
        })?;
        *store.schema.write() = Arc::new(schema);
        Ok(Self { recorded, ..store })
    }

    fn with_client<T>(
        &self,
        f: impl FnOnce(&mut PgClient) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut client = self.pool.get()?;
        f(&mut client)
    }

    /// Runs `f` in one transaction opened by `begin`, committed on `Ok`, run
    /// again (for up to [`RETRY_FOR`]) when the database reports a conflict.
    fn in_tx<T>(
        &self,
        begin: &str,
        f: &mut dyn FnMut(&mut Pg<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        exclusive_write(|| {
            let _turn = self.write_lock.lock();
            self.with_client(|client| {
                let mut attempt = 0;
                let started = std::time::Instant::now();
                loop {
                    attempt += 1;
                    let mut conn = Pg::new(client);
                    conn.execute_batch(&format!("{begin}; SAVEPOINT w"))?;
                    conn.in_tx = true;
                    conn.savepoint_clean = true;
                    let result = rolled_back_on_panic(&mut conn, |conn| f(conn), |conn| {
                        let _ = conn.c.batch_execute("ROLLBACK");
                    });
                    let outcome: Result<T, StoreError> = match result {
                        // The work went on past a conflict (an extension
                        // that swallowed the error): the transaction is
                        // aborted, and COMMIT would roll it back quietly.
                        Ok(_) if conn.conflict => Err(StoreError::Busy),
                        Ok(value) => match conn.c.batch_execute("COMMIT") {
                            Ok(()) => return Ok(value),
                            Err(e) => Err(conn.fail(e)),
                        },
                        Err(e) => Err(e),
                    };
                    let conflict = conn.conflict;
                    let _ = conn.c.batch_execute("ROLLBACK");
                    let error = outcome.err().unwrap_or(StoreError::Aborted);
                    if !conflict {
                        return Err(error);
                    }
                    if started.elapsed() >= RETRY_FOR {
                        log::warn!("a write transaction kept conflicting; gave up after {attempt} attempts");
                        return Err(StoreError::Busy);
                    }
                    // Back off a little, at random, so that the
                    // transactions that collided do not collide again.
                    let ceiling = (1u64 << attempt.min(6)).min(MAX_PAUSE_MS);
                    let pause = rand::thread_rng().gen_range(0..=ceiling);
                    std::thread::sleep(Duration::from_millis(pause));
                }
            })
        })
    }

    /// A transaction that runs alone among the platform's processes
    /// (migrations, first-start work): it waits for the migration lock,
    /// then reads what committed before it got it.
    fn exclusive<T>(
        &self,
        mut f: impl FnMut(&mut Pg<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.in_tx(
            &format!("BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"),
            &mut f,
        )
    }
}

/// Folds the commit rows into the base, leaving their sum unchanged for
/// every reader (one transaction, `READ COMMITTED`: rows committed while it
/// runs stay for the next fold). A failure only leaves the rows for later.
fn fold_commit_rows(c: &mut PgClient) {
    let folded = c.batch_execute(
        "BEGIN ISOLATION LEVEL READ COMMITTED;
         WITH gone AS (DELETE FROM platform_commits RETURNING 1)
         UPDATE platform_commit_base SET commits = commits + (SELECT count(*) FROM gone) WHERE id = 1;
         COMMIT;",
    );
    if let Err(e) = folded {
        let _ = c.batch_execute("ROLLBACK");
        log::debug!("commit rows not folded yet: {e}");
    }
}

impl Store for PgStore {
    fn schema(&self) -> Arc<Schema> {
        self.schema.read().clone()
    }

    fn read(&self, work: &mut ReadWork<'_>) -> Result<(), StoreError> {
        self.with_client(|client| work(&mut ReadConn(&mut Pg::new(client))))
    }

    fn write(&self, work: &mut WriteWork<'_>) -> Result<(), StoreError> {
        self.in_tx("BEGIN ISOLATION LEVEL SERIALIZABLE", &mut |conn| {
            work(&mut WriteConn(conn))
        })
    }

    /// The count of committed write transactions (see [`COMMIT_COUNTER`]),
    /// one round trip.
    fn data_version(&self) -> u64 {
        let read = self.with_client(|c| {
            let stmt = c
                .prepare(
                    "SELECT commits, (SELECT count(*) FROM platform_commits) \
                     FROM platform_commit_base WHERE id = 1",
                )
                .map_err(map_pg_error)?;
            let row = c.query_one(&stmt).map_err(map_pg_error)?;
            let (base, rows): (i64, i64) = (
                row.try_get(0).map_err(map_pg_error)?,
                row.try_get(1).map_err(map_pg_error)?,
            );
            if rows > COMMIT_ROWS_KEPT {
                fold_commit_rows(c);
            }
            Ok(base + rows)
        });
        let mut watch = self.commits.lock();
        match read {
            Ok(commits) if commits == watch.commits => {}
            Ok(commits) => {
                watch.commits = commits;
                watch.version += 1;
            }
            // Unknown: a number never handed out before, so that nothing
            // computed earlier is taken for current.
            Err(e) => {
                log::warn!("cannot read the data version: {e}");
                watch.commits = -1;
                watch.version += 1;
            }
        }
        watch.version
    }

    fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    fn rows_read(&self) -> u64 {
        self.rows_read.load(Ordering::Relaxed)
    }

    fn track_changes(&self, collections: &[&str]) -> Result<(), StoreError> {
        self.exclusive(|conn| {
            conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS platform_tracked_changes (
                     id INTEGER PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL);
                 INSERT INTO platform_tracked_changes (id, version) VALUES (1, 0)
                     ON CONFLICT DO NOTHING;
                 CREATE OR REPLACE FUNCTION platform_count_tracked_change() RETURNS trigger
                     LANGUAGE plpgsql AS $$
                     BEGIN
                         UPDATE platform_tracked_changes SET version = version + 1 WHERE id = 1;
                         RETURN NULL;
                     END $$;",
            )?;
            let tracked = tables_with_trigger(conn, "_tracked", "platform_count_tracked_change")?;
            for table in collections.iter().filter(|t| !tracked.contains(**t)) {
                conn.execute_batch(&format!(
                    "CREATE OR REPLACE TRIGGER {} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {}
                         FOR EACH STATEMENT EXECUTE FUNCTION platform_count_tracked_change();",
                    sql::quote(&format!("{table}_tracked")),
                    sql::quote(table),
                ))?;
            }
            Ok(())
        })
    }

    fn tracked_version(&self) -> Result<u64, StoreError> {
        self.with_client(|c| {
            let stmt = c
                .prepare("SELECT version FROM platform_tracked_changes WHERE id = 1")
                .map_err(map_pg_error)?;
            c.query_one(&stmt)
                .and_then(|row| row.try_get::<_, i64>(0))
                .map(|v| v as u64)
                .map_err(map_pg_error)
        })
    }

    fn run_once(
        &self,
        owner: &str,
        id: &str,
        work: &mut WriteWork<'_>,
    ) -> Result<bool, StoreError> {
        self.recorded.unless_known(owner, id, || {
            self.exclusive(|conn| migrate::run_once(conn, owner, id, work))
        })
    }

    /// One statement in a transaction of its own (`READ COMMITTED`: an
    /// upsert there adds to the row's latest committed points, waiting for
    /// a concurrent one), outside this process's turn of writers; the
    /// counters' table has no commit counter (see
    /// [`count_commits_everywhere`]), so no host's data version moves.
    fn counter(&self, op: CounterOp<'_>) -> Result<Option<Window>, StoreError> {
        self.with_client(|client| sql::counter(&mut Pg::new(client), op))
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
            let applied = self.exclusive(|conn| {
                let applied = migrate::apply(conn, owner, id, steps, rules)?;
                if applied.ran {
                    count_commits_everywhere(conn, &applied.schema)?;
                }
                Ok(applied)
            })?;
            *self.schema.write() = Arc::new(applied.schema);
            Ok(applied.ran)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Location;
    use crate::testing;

    #[test]
    fn limits_are_written_and_offsets_bound_when_not_zero() {
        let clause = |limit, offset| {
            let mut p = Params::new(&DIALECT);
            let sql = DIALECT.limit_clause(limit, offset, &mut p);
            (sql, p.values.len())
        };
        assert_eq!(clause(Some(50), 0), (" LIMIT 50".to_string(), 0));
        assert_eq!(clause(Some(0), 0), (" LIMIT 0".to_string(), 0));
        assert_eq!(clause(Some(2), 4), (" LIMIT 2 OFFSET $1".to_string(), 1));
        assert_eq!(clause(None, 3), (" OFFSET $1".to_string(), 1));
        assert_eq!(clause(None, 0), (String::new(), 0));
        assert_eq!(
            clause(Some(u64::MAX), 0),
            (format!(" LIMIT {}", i64::MAX), 0)
        );
    }

    /// [`testing::fresh_postgres`] and the database's URL.
    fn fresh_postgres(what: &str) -> Option<(Location, String)> {
        let location = testing::fresh_postgres(what)?;
        let Location::Postgres(db) = &location else {
            panic!("a PostgreSQL database is a URL");
        };
        let db = db.clone();
        Some((location, db))
    }

    /// The reason limits are written out: a read by key with its limit
    /// and offset bound is planned again at every execution; written, it
    /// keeps one plan after the server's first five. Run in the suite's
    /// PostgreSQL pass.
    #[test]
    fn a_read_by_key_with_a_written_limit_keeps_one_plan() {
        let Some((location, db)) = fresh_postgres("plans kept") else {
            return;
        };
        let mut client = testing::postgres::connect(&db);
        client
            .batch_execute(
                "CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT);
                 INSERT INTO t SELECT g::text, 'x' FROM generate_series(1, 1000) g;
                 ANALYZE t;",
            )
            .expect("table");
        let mut p = Params::new(&DIALECT);
        let key = p.push(Scalar::Text("7".into()));
        let written = format!(
            "SELECT v FROM t WHERE id = {key}{}",
            DIALECT.limit_clause(Some(1), 0, &mut p)
        );
        let bound = "SELECT v FROM t WHERE id = $1 LIMIT $2 OFFSET $3";
        let plans = |client: &mut Client, sql: &str, params: &[&(dyn ToSql + Sync)]| {
            let stmt = client.prepare(sql).expect("prepare");
            for _ in 0..10 {
                assert_eq!(client.query(&stmt, params).expect("read").len(), 1);
            }
            let row = client
                .query_one(
                    "SELECT generic_plans, custom_plans FROM pg_prepared_statements \
                     WHERE statement = $1",
                    &[&sql],
                )
                .expect("plans");
            (row.get::<_, i64>(0), row.get::<_, i64>(1))
        };
        assert_eq!(plans(&mut client, &written, &[&"7"]), (5, 5));
        let (generic, custom) = plans(&mut client, bound, &[&"7", &1i64, &0i64]);
        assert_eq!((generic, custom), (0, 10), "the bound limit's plans");
        drop(client);
        testing::discard(&location);
    }

    /// The savepoint a refused write rolls back to is taken with `BEGIN`,
    /// and again only after a write: a transaction that writes once pays
    /// no exchange for it. Run in the suite's PostgreSQL pass.
    #[test]
    fn a_transaction_writing_once_takes_its_savepoint_with_begin() {
        use crate::storage::{Columns, SchemaStepsOnly};
        use host_sdk::schema::{Collection, Field};
        let Some((location, db)) = fresh_postgres("savepoints") else {
            return;
        };
        // One client, so that the insert is prepared once.
        let store = PgStore::open(&db, Some(1)).expect("open");
        let steps = [Collection::new("things")
            .field(Field::string("name"))
            .build()];
        store
            .migrate("test", "0001", &steps, &SchemaStepsOnly)
            .expect("migrate");
        let def = store.schema().get("things").expect("things").clone();
        let exchanges = |names: &[&str]| {
            let before = store.round_trips();
            store
                .write(&mut |conn| {
                    for name in names {
                        let mut row = Columns::new();
                        row.insert("id".into(), Scalar::Text(name.to_string()));
                        row.insert("name".into(), Scalar::Text(name.to_string()));
                        conn.insert(&def, &row)?;
                    }
                    Ok(())
                })
                .expect("a write");
            store.round_trips() - before
        };
        exchanges(&["prepared"]);
        assert_eq!(
            exchanges(&["a"]),
            3,
            "begin with the savepoint, insert, commit"
        );
        assert_eq!(
            exchanges(&["b", "c"]),
            5,
            "the second insert takes it again first"
        );
        drop(store);
        testing::discard(&location);
    }

    #[test]
    fn passwords_never_reach_the_log() {
        assert_eq!(
            redacted("postgres://app:s3cret@db:5432/site"),
            "postgres://app:***@db:5432/site"
        );
        assert_eq!(redacted("postgres://app@db/site"), "postgres://app@db/site");
        assert_eq!(
            redacted("host=db user=app password=s3cret"),
            "host=db user=app password=***"
        );
    }
}
