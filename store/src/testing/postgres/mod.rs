//! PostgreSQL for the tests: one server per test process, a fresh database
//! on it for each new host, and SQL on those databases.
//!
//! The server is the one of `TEST_DATABASE_URL` when that is set (a
//! `postgres://user:password@host:port/database` URL of a server where the
//! user may create databases); otherwise a throwaway cluster
//! ([`cluster`]), started when the first database is needed.

pub mod cluster;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

pub use cluster::INSTALL_HINT;

/// The server the tests' databases live on.
pub struct Server {
    /// A URL of the server as a user who may create databases.
    admin_url: String,
    admin: Mutex<postgres::Client>,
}

static SERVER: OnceLock<Server> = OnceLock::new();

/// The server of this test process, started (or connected to) on first
/// use. Panics, saying how to install PostgreSQL, when there is none.
pub fn server() -> &'static Server {
    SERVER.get_or_init(|| {
        let admin_url = match std::env::var("TEST_DATABASE_URL") {
            Ok(url) if !url.trim().is_empty() => url.trim().to_string(),
            _ => cluster::start(),
        };
        let admin = connect(&admin_url);
        Server {
            admin_url,
            admin: Mutex::new(admin),
        }
    })
}

/// The server of this test process if it has one already.
pub fn started() -> Option<&'static Server> {
    SERVER.get()
}

/// Why this process could not have a PostgreSQL server, if it could not:
/// no `TEST_DATABASE_URL` and no server binaries.
pub fn unavailable() -> Option<String> {
    if std::env::var("TEST_DATABASE_URL").is_ok_and(|u| !u.trim().is_empty()) {
        return None;
    }
    cluster::bin_dir().err()
}

/// Whether a missing PostgreSQL is a failure rather than a reason to skip
/// the checks that need it: on CI (`CI=true`) and when the suite runs on
/// PostgreSQL (`TEST_DB=postgres`).
pub fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
        || std::env::var("TEST_DB").is_ok_and(|v| v.trim().eq_ignore_ascii_case("postgres"))
}

/// A number unlikely to repeat across processes started at the same time.
fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

impl Server {
    /// Creates an empty database; its URL.
    pub fn create_database(&self) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "platform_{}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            unique() % 1_000_000_000
        );
        self.admin_sql(&format!("CREATE DATABASE \"{name}\""))
            .unwrap_or_else(|e| panic!("{e}"));
        with_database(&self.admin_url, &name)
    }

    /// Drops the database of `url`, disconnecting whoever is still on it.
    pub fn drop_database(&self, url: &str) -> Result<(), String> {
        let name = database_name(url);
        self.admin_sql(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
    }

    fn admin_sql(&self, statement: &str) -> Result<(), String> {
        let mut admin = self.admin.lock().unwrap_or_else(|p| p.into_inner());
        admin
            .batch_execute(statement)
            .map_err(|e| format!("{statement}: {}", describe(&e)))
    }
}

/// A client of the database of `url`; panics when it cannot connect.
pub fn connect(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls)
        .unwrap_or_else(|e| panic!("connect to {url}: {}", describe(&e)))
}

/// Runs `statements` (one or more, `;`-separated) on the database of
/// `url` from a connection of its own; the rows they inserted, updated or
/// deleted.
pub fn execute(url: &str, statements: &str) -> u64 {
    let messages = connect(url)
        .simple_query(statements)
        .unwrap_or_else(|e| panic!("{statements}: {}", describe(&e)));
    let mut written = 0;
    let mut returned_rows = false;
    for message in messages {
        match message {
            postgres::SimpleQueryMessage::RowDescription(_) => returned_rows = true,
            postgres::SimpleQueryMessage::CommandComplete(n) => {
                if !returned_rows {
                    written += n;
                }
                returned_rows = false;
            }
            _ => {}
        }
    }
    written
}

/// The rows `query` answers on the database of `url`, each column as text
/// (PostgreSQL's text form: booleans are `t` / `f`), `None` for NULL.
pub fn query(url: &str, query: &str) -> Vec<Vec<Option<String>>> {
    connect(url)
        .simple_query(query)
        .unwrap_or_else(|e| panic!("{query}: {}", describe(&e)))
        .iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).map(String::from))
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

/// The tables of the database of `url` (its current schema), by name.
pub fn table_names(url: &str) -> Vec<String> {
    let query = "SELECT table_name FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' \
                 ORDER BY table_name";
    connect(url)
        .query(query, &[])
        .unwrap_or_else(|e| panic!("{query}: {}", describe(&e)))
        .iter()
        .map(|row| row.get::<_, String>(0))
        .collect()
}

/// A PostgreSQL failure with the server's own message when there is one.
fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => e.to_string(),
    }
}

/// `url` with its database replaced by `name` (user, password, host, port
/// and parameters kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (head, params) = url.split_at(url.find('?').unwrap_or(url.len()));
    let authority = head.find("://").map_or(0, |i| i + 3);
    let base = match head[authority..].find('/') {
        Some(slash) => &head[..authority + slash],
        None => head,
    };
    format!("{base}/{name}{params}")
}

/// The database a `postgres://` URL names.
pub fn database_name(url: &str) -> &str {
    let head = &url[..url.find('?').unwrap_or(url.len())];
    let authority = head.find("://").map_or(0, |i| i + 3);
    head[authority..]
        .find('/')
        .map_or("", |slash| &head[authority + slash + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server of this process, or `None` (with a note on stderr) when
    /// PostgreSQL is missing and not required.
    fn server_or_skip(check: &str) -> Option<&'static Server> {
        match unavailable() {
            Some(why) if !required() => {
                eprintln!("{check}: not checked, no PostgreSQL here ({why}): {INSTALL_HINT}");
                None
            }
            _ => Some(server()),
        }
    }

    #[test]
    fn urls_name_their_database() {
        let url = "postgres://u:p@db.local:5433/main?sslmode=disable";
        assert_eq!(database_name(url), "main");
        assert_eq!(
            with_database(url, "platform_1"),
            "postgres://u:p@db.local:5433/platform_1?sslmode=disable"
        );
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(database_name("postgres://postgres@127.0.0.1:5432/x"), "x");
    }

    #[test]
    fn the_server_creates_empty_databases_that_take_sql() {
        let Some(server) = server_or_skip("PostgreSQL databases") else {
            return;
        };
        let a = server.create_database();
        let b = server.create_database();
        assert_ne!(database_name(&a), database_name(&b));
        assert!(table_names(&a).is_empty(), "a new database is empty");

        let written = execute(
            &a,
            "CREATE TABLE \"things\" (\"id\" TEXT PRIMARY KEY, \"on\" BOOLEAN, \"n\" INTEGER);
             INSERT INTO \"things\" VALUES ('x', TRUE, 1), ('y', FALSE, 2);
             UPDATE \"things\" SET \"n\" = \"n\" + 1 WHERE \"id\" = 'x'",
        );
        assert_eq!(written, 3, "two inserted, one updated");
        assert_eq!(
            execute(&a, "SELECT * FROM \"things\""),
            0,
            "reads write nothing"
        );
        assert_eq!(
            query(
                &a,
                "SELECT \"n\", \"on\", NULL FROM \"things\" ORDER BY \"id\""
            ),
            [
                [Some("2".to_string()), Some("t".to_string()), None],
                [Some("2".to_string()), Some("f".to_string()), None]
            ]
        );
        assert_eq!(table_names(&a), ["things"]);
        assert!(table_names(&b).is_empty(), "databases are separate");

        server.drop_database(&a).expect("drop a");
        server.drop_database(&b).expect("drop b");
        let mut admin = connect(&server.admin_url);
        let left = admin
            .query(
                "SELECT count(*) FROM pg_database WHERE datname IN ($1, $2)",
                &[&database_name(&a), &database_name(&b)],
            )
            .expect("count databases");
        assert_eq!(left[0].get::<_, i64>(0), 0, "dropped");
    }

    #[test]
    fn a_failing_statement_names_the_servers_reason() {
        let Some(server) = server_or_skip("PostgreSQL errors") else {
            return;
        };
        let url = server.create_database();
        let failure = std::panic::catch_unwind(|| execute(&url, "SELECT * FROM \"nowhere\""))
            .expect_err("a missing table fails");
        let text = failure
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(
            text.contains("relation \"nowhere\" does not exist"),
            "{text}"
        );
        server.drop_database(&url).expect("drop");
    }
}
