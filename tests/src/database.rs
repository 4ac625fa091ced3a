//! The database a host runs on: which backend (`TEST_DB`), where it is (a
//! data folder's SQLite file, or the PostgreSQL database the folder
//! names), and SQL on it from outside the host.

use std::fs;
use std::path::{Path, PathBuf};

/// A database backend of the host; the suite's is `TEST_DB`'s
/// ([`Backend::from_env`]).
pub use platform_store::testing::Backend;

use platform_store::storage::Location;
use platform_store::testing;

use crate::{postgres, sqlite};

/// Where a host's database is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Database {
    /// The SQLite file.
    Sqlite(PathBuf),
    /// The `postgres://` URL of the PostgreSQL database.
    Postgres(String),
}

/// The file of a data folder that holds the URL of its PostgreSQL database.
const URL_FILE: &str = "database-url";
/// The file of a data folder that names the SQLite file of another folder
/// (a second host on a first host's database).
const SHARED_FILE: &str = "database-file";

fn sqlite_file(dir: &Path) -> PathBuf {
    dir.join("data").join("platform.db")
}

impl Database {
    /// The database of a host's data folder: the PostgreSQL database its
    /// `database-url` file names, else the SQLite file its `database-file`
    /// names (a host beside another), else its own `data/platform.db`.
    pub fn of_data_dir(dir: &Path) -> Database {
        if let Ok(url) = fs::read_to_string(dir.join(URL_FILE)) {
            return Database::Postgres(url.trim().to_string());
        }
        match fs::read_to_string(dir.join(SHARED_FILE)) {
            Ok(path) => Database::Sqlite(PathBuf::from(path.trim())),
            Err(_) => Database::Sqlite(sqlite_file(dir)),
        }
    }

    /// Makes `dir` (a new data folder) name this database, so that a host
    /// started on it shares the database with this one's hosts.
    pub(crate) fn share_into(&self, dir: &Path) {
        let (file, content) = match self {
            Database::Postgres(url) => (URL_FILE, url.clone()),
            Database::Sqlite(path) => (SHARED_FILE, path.to_string_lossy().into_owned()),
        };
        fs::write(dir.join(file), content)
            .unwrap_or_else(|e| panic!("write {}: {e}", dir.join(file).display()));
    }

    /// The database of a host starting on `dir`: the one the folder
    /// already has (a restart), or else a new one on `backend` (on
    /// PostgreSQL, a new database whose URL the folder keeps).
    pub(crate) fn for_data_dir(dir: &Path, backend: Backend) -> Database {
        if dir.join(URL_FILE).exists()
            || dir.join(SHARED_FILE).exists()
            || sqlite_file(dir).exists()
        {
            return Database::of_data_dir(dir);
        }
        match backend {
            Backend::Sqlite => Database::Sqlite(sqlite_file(dir)),
            Backend::Postgres => {
                let url = postgres::server().create_database();
                fs::write(dir.join(URL_FILE), &url)
                    .unwrap_or_else(|e| panic!("write {}: {e}", dir.join(URL_FILE).display()));
                Database::Postgres(url)
            }
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            Database::Sqlite(_) => Backend::Sqlite,
            Database::Postgres(_) => Backend::Postgres,
        }
    }

    /// What to pass as the host's `--db`: the file's path or the URL.
    pub fn arg(&self) -> String {
        match self {
            Database::Sqlite(path) => path.to_string_lossy().into_owned(),
            Database::Postgres(url) => url.clone(),
        }
    }

    /// Runs `statements` (one or more, `;`-separated) from a connection of
    /// its own, as another process would; the rows they inserted, updated
    /// or deleted. Panics on an error, with the database's message. Write
    /// SQL both backends take: identifiers double-quoted, booleans as
    /// `TRUE` / `FALSE`.
    pub fn sql(&self, statements: &str) -> u64 {
        match self {
            Database::Sqlite(path) => sqlite::execute(path, statements),
            Database::Postgres(url) => postgres::execute(url, statements),
        }
    }

    /// The rows `query` answers, each column as the database's text
    /// (`None` for NULL; a boolean reads `1` / `0` on SQLite, `t` / `f` on
    /// PostgreSQL).
    pub fn sql_query(&self, query: &str) -> Vec<Vec<Option<String>>> {
        match self {
            Database::Sqlite(path) => sqlite::query(path, query),
            Database::Postgres(url) => postgres::query(url, query),
        }
    }

    /// The one row `query` answers ([`Database::sql_query`]); panics
    /// unless there is exactly one.
    pub fn sql_query_one(&self, query: &str) -> Vec<Option<String>> {
        let mut rows = self.sql_query(query);
        assert_eq!(rows.len(), 1, "{query}: {rows:?}, not one row");
        rows.remove(0)
    }

    /// A new data folder's database made from a database an earlier
    /// release left (`fixture`, a folder of tests/fixtures/databases):
    /// its SQLite file `platform.db.gz` unpacked, or a new PostgreSQL
    /// database loaded with its plain-SQL dump `postgres.sql.gz`. A host
    /// started on `dir` then opens it ([`Database::for_data_dir`]).
    pub fn from_fixture(dir: &Path, backend: Backend, fixture: &Path) -> Database {
        match backend {
            Backend::Sqlite => {
                let file = sqlite_file(dir);
                fs::create_dir_all(dir.join("data")).expect("data folder");
                fs::write(&file, gunzip(&fixture.join("platform.db.gz")))
                    .unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
                Database::Sqlite(file)
            }
            Backend::Postgres => {
                let dump = fixture.join("postgres.sql.gz");
                let sql = String::from_utf8(gunzip(&dump))
                    .unwrap_or_else(|e| panic!("{}: {e}", dump.display()));
                let database = Database::for_data_dir(dir, Backend::Postgres);
                database.sql(&sql);
                database
            }
        }
    }

    /// The columns of `table`, in their order.
    pub fn columns(&self, table: &str) -> Vec<String> {
        let query = match self {
            Database::Sqlite(_) => {
                format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid")
            }
            Database::Postgres(_) => format!(
                "SELECT column_name FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = '{table}' \
                 ORDER BY ordinal_position"
            ),
        };
        self.sql_query(&query)
            .into_iter()
            .filter_map(|row| row.into_iter().next().flatten())
            .collect()
    }

    /// SQLite's `PRAGMA integrity_check` of the file, its lines joined
    /// (`ok` when sound).
    pub fn integrity_check(&self) -> String {
        self.sql_query("PRAGMA integrity_check")
            .into_iter()
            .flatten()
            .flatten()
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The database's tables, by name.
    pub fn tables(&self) -> Vec<String> {
        match self {
            Database::Sqlite(path) => sqlite::table_names(path),
            Database::Postgres(url) => postgres::table_names(url),
        }
    }

    /// Drops a PostgreSQL database (a SQLite file goes with its folder).
    /// Never panics: a failure is reported on stderr.
    pub(crate) fn discard(&self) {
        if let Database::Postgres(url) = self {
            testing::discard(&Location::Postgres(url.clone()));
        }
    }
}

/// The bytes of the gzipped file at `path`.
fn gunzip(path: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    fs::File::open(path)
        .map(flate2::read::GzDecoder::new)
        .and_then(|mut gz| std::io::Read::read_to_end(&mut gz, &mut bytes))
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    bytes
}
