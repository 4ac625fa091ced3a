//! SQL on a host's SQLite file from a connection of the tests' own, as
//! another process would write it.

use std::path::Path;
use std::time::Duration;

use rusqlite::fallible_iterator::FallibleIterator as _;
use rusqlite::types::ValueRef;

fn open(path: &Path) -> rusqlite::Connection {
    let conn =
        rusqlite::Connection::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    conn.busy_timeout(Duration::from_secs(10))
        .expect("busy timeout");
    conn
}

/// Runs `statements` (one or more, `;`-separated) on the file at `path`;
/// the rows they inserted, updated or deleted (not counting what triggers
/// wrote).
pub fn execute(path: &Path, statements: &str) -> u64 {
    let conn = open(path);
    let mut batch = rusqlite::Batch::new(&conn, statements);
    let mut written = 0;
    while let Some(mut stmt) = batch.next().unwrap_or_else(|e| panic!("{statements}: {e}")) {
        if stmt.column_count() > 0 {
            let mut rows = stmt.raw_query();
            while rows
                .next()
                .unwrap_or_else(|e| panic!("{statements}: {e}"))
                .is_some()
            {}
            continue;
        }
        stmt.raw_execute()
            .unwrap_or_else(|e| panic!("{statements}: {e}"));
        // `changes` keeps the count of the last INSERT, UPDATE or DELETE
        // through any other statement.
        let sql = stmt.expanded_sql().unwrap_or_default();
        let verb = sql
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        if matches!(verb.as_str(), "INSERT" | "UPDATE" | "DELETE" | "REPLACE") {
            written += conn.changes();
        }
    }
    written
}

/// The rows `query` answers on the file at `path`, each column as text
/// (integers and reals in decimal, booleans as `1` / `0`), `None` for NULL.
pub fn query(path: &Path, query: &str) -> Vec<Vec<Option<String>>> {
    let conn = open(path);
    let mut stmt = conn
        .prepare(query)
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    let columns = stmt.column_count();
    stmt.query_map([], |row| {
        (0..columns)
            .map(|i| row.get_ref(i).map(text))
            .collect::<Result<_, _>>()
    })
    .and_then(|rows| rows.collect::<Result<_, _>>())
    .unwrap_or_else(|e| panic!("{query}: {e}"))
}

fn text(value: ValueRef<'_>) -> Option<String> {
    match value {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
    }
}

/// The tables of the file at `path`, by name.
pub fn table_names(path: &Path) -> Vec<String> {
    let query = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name";
    let conn = open(path);
    let mut stmt = conn
        .prepare(query)
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    stmt.query_map([], |row| row.get(0))
        .and_then(|rows| rows.collect::<Result<_, _>>())
        .unwrap_or_else(|e| panic!("{query}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_count_the_rows_they_write() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("t.db");
        let written = execute(
            &db,
            "CREATE TABLE \"things\" (\"id\" TEXT PRIMARY KEY, \"on\" BOOLEAN, \"n\" INTEGER);
             INSERT INTO \"things\" VALUES ('x', TRUE, 1), ('y', FALSE, 2);
             UPDATE \"things\" SET \"n\" = \"n\" + 1 WHERE \"id\" = 'x';
             ALTER TABLE \"things\" ADD COLUMN \"more\" TEXT",
        );
        assert_eq!(written, 3, "two inserted, one updated");
        assert_eq!(
            execute(&db, "SELECT * FROM \"things\""),
            0,
            "reads write nothing"
        );
        assert_eq!(
            query(
                &db,
                "SELECT \"n\", \"on\", NULL FROM \"things\" ORDER BY \"id\""
            ),
            [
                [Some("2".to_string()), Some("1".to_string()), None],
                [Some("2".to_string()), Some("0".to_string()), None]
            ]
        );
        assert_eq!(table_names(&db), ["things"]);
    }
}
