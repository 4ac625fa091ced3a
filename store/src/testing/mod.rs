//! Throwaway databases for tests, on either backend: what the host's test
//! kit (`example_host::testkit`) and the integration tests start their
//! platforms on. Nothing here runs in a serving host.
//!
//! The backend is the one `TEST_DB` names ([`Backend::from_env`]); on
//! PostgreSQL every database is a new one on the test process's server
//! ([`postgres`]: the server of `TEST_DATABASE_URL`, or a throwaway
//! cluster of the installed server binaries).

pub mod postgres;

use std::path::Path;

use crate::storage::Location;

/// A database backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The backend tests run on: `TEST_DB` = `sqlite` (the default) or
    /// `postgres`. Panics on any other value: a test run asked for
    /// something that does not exist.
    pub fn from_env() -> Backend {
        let value = std::env::var("TEST_DB").unwrap_or_default();
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "sqlite" => Backend::Sqlite,
            "postgres" | "postgresql" => Backend::Postgres,
            other => panic!("TEST_DB={other}: expected `sqlite` or `postgres`"),
        }
    }
}

/// A new, empty database on `backend`: a SQLite file in `dir`, or a new
/// database on the test server. Drop it with [`discard`] when done.
pub fn fresh_database(backend: Backend, dir: &Path) -> Result<Location, String> {
    match backend {
        Backend::Sqlite => Ok(Location::File(dir.join("platform.db"))),
        Backend::Postgres => {
            if let Some(why) = postgres::unavailable() {
                return Err(format!("{why}: {}", postgres::INSTALL_HINT));
            }
            Ok(Location::Postgres(postgres::server().create_database()))
        }
    }
}

/// A new, empty database on the test server when the suite runs on
/// PostgreSQL (its second pass), for a check that only PostgreSQL has;
/// `None` in the SQLite pass, said on stderr with `what` was not run.
/// Drop it with [`discard`] when done.
pub fn fresh_postgres(what: &str) -> Option<Location> {
    if Backend::from_env() != Backend::Postgres {
        eprintln!("{what}: not run, the suite runs on SQLite (TEST_DB=postgres runs it)");
        return None;
    }
    Some(fresh_database(Backend::Postgres, Path::new(".")).unwrap_or_else(|e| panic!("{e}")))
}

/// Drops a database [`fresh_database`] made on PostgreSQL (a SQLite file
/// goes with its folder). Never panics: a failure is reported on stderr.
pub fn discard(location: &Location) {
    if let Location::Postgres(url) = location {
        if let Some(Err(e)) = postgres::started().map(|s| s.drop_database(url)) {
            eprintln!("dropping {url}: {e}");
        }
    }
}
