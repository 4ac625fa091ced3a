//! Command line and environment (docs/decisions.md §2).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::settings::{declare, Env};
use platform_store::storage::Location;

#[derive(Debug, Parser)]
#[command(
    name = "example-host",
    version,
    about = "A content platform that serves host-sdk extensions"
)]
pub struct Cli {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve HTTP (the default).
    Serve,
    /// Print the table of settings (flags and variables) in markdown, as
    /// docs/operations.md holds it. Opens no database.
    Settings,
    /// Work with extension schedules.
    Schedule {
        #[command(subcommand)]
        action: ScheduleAction,
    },
    /// See and apply the migrations of the platform and of every library
    /// in the extensions folder: `migrate status` lists them, owner by
    /// owner; `migrate --dry-run` prints what would run; `migrate` applies
    /// them (as a start would) and exits.
    Migrate {
        /// Print the pending migrations and their steps; write nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(subcommand)]
        action: Option<MigrateAction>,
    },
    /// Write a consistent copy of the SQLite database to a file while hosts
    /// serve it (SQLite's online backup API: one snapshot, taken as the
    /// copy starts; writers are not held). On PostgreSQL, use `pg_dump`
    /// (docs/operations.md, "Backups").
    Backup {
        /// The backup file to write (written beside it, then renamed).
        #[arg(long)]
        to: PathBuf,
        /// Replace the file if it exists.
        #[arg(long)]
        force: bool,
        /// Pages copied per step, between progress lines.
        #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
        step_pages: u32,
    },
    /// Put a backup in place of the SQLite database, with every host on it
    /// stopped: the backup is checked first (a sound database of this
    /// platform, not migrated by a newer release) and renamed in place
    /// only then, so a refused or failed restore changes nothing. On
    /// PostgreSQL, use `pg_restore`.
    Restore {
        /// The backup file (made by `backup`).
        #[arg(long)]
        from: PathBuf,
        /// Replace an existing database.
        #[arg(long)]
        force: bool,
    },
    /// Write a new extension crate that builds and passes its test: a
    /// collection, a grant, routes, a hook and a test-kit test. Opens no
    /// database.
    NewExtension {
        /// The extension's id and crate name: lower-case letters, digits
        /// and `-` (it is mounted at `/<name>`).
        name: String,
        /// The folder to write the crate's folder in.
        #[arg(long, default_value = ".")]
        dir: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum MigrateAction {
    /// List every migration, applied or pending, owner by owner; write
    /// nothing.
    Status,
}

#[derive(Debug, Subcommand)]
pub enum ScheduleAction {
    /// Run one registered schedule once and exit.
    Run {
        /// Extension id, e.g. `svc`.
        extension: String,
        /// Schedule name, e.g. `recalculate-stats`.
        name: String,
    },
}

/// Options every command takes.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// SQLite database file (created with its folder if missing), or a
    /// `postgres://user:password@host:port/database` URL [default: ./data/platform.db].
    ///
    /// A URL selects PostgreSQL (see [Running on
    /// PostgreSQL](#running-on-postgresql)).
    #[arg(
        long = "db",
        env = "DB_FILENAME",
        global = true,
        help_heading = "Database"
    )]
    pub db: Option<String>,
    /// Database connections per host process [default: 16]; on SQLite the
    /// readers', and writes take turns on one connection more, whose page
    /// cache (up to 64 MiB) keeps the index pages a bulk import walks.
    #[arg(
        long = "db-pool-max",
        env = "DB_POOL_MAX",
        global = true,
        help_heading = "Database"
    )]
    pub db_pool_max: Option<u32>,
    /// Serve the svc extension linked into this host, without the ABI.
    #[cfg(feature = "inprocess")]
    #[arg(long = "builtin-svc", global = true)]
    pub builtin_svc: bool,
    /// Levels one relational path of a query's `fields` or `filter` may
    /// have, every dot counting (at least 2).
    ///
    /// As Directus: deeper is 400 `INVALID_QUERY` "Max relational depth
    /// exceeded", before anything is read.
    #[arg(
        long = "max-relational-depth",
        env = "MAX_RELATIONAL_DEPTH",
        default_value_t = 10,
        global = true,
        help_heading = "Server"
    )]
    pub max_relational_depth: usize,
    /// Related records one answer may hold, at every depth.
    ///
    /// Each copy counts: more is 400 `INVALID_QUERY`, refused at the level
    /// that passes it.
    #[arg(
        long = "max-related-records",
        env = "MAX_RELATED_RECORDS",
        default_value_t = 50_000,
        global = true,
        help_heading = "Server"
    )]
    pub max_related_records: u64,
    /// Bytes one answer that follows relations may hold (related records
    /// are copied into each parent that names them).
    ///
    /// A few large records named many times make an answer far larger than
    /// the data: more is 400 `INVALID_QUERY` "The answer would be larger
    /// than N bytes", checked before each copy, so a refused answer takes no
    /// more memory than the bound.
    #[arg(
        long = "max-response-bytes",
        env = "MAX_RESPONSE_BYTES",
        default_value_t = 64 * 1024 * 1024,
        global = true,
        help_heading = "Server"
    )]
    pub max_response_bytes: u64,
    /// Folder of extension libraries [default: ./extensions, or the executable's folder when that does not exist].
    #[arg(
        long = "extensions",
        env = "EXTENSIONS_PATH",
        global = true,
        help_heading = "Extensions"
    )]
    pub extensions: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(
        long,
        env = "HOST",
        default_value = "127.0.0.1",
        global = true,
        help_heading = "Server"
    )]
    pub host: String,
    /// Port to listen on (`0`: any free port, logged at start).
    #[arg(
        long,
        env = "PORT",
        default_value_t = 8055,
        global = true,
        help_heading = "Server"
    )]
    pub port: u16,
    /// Largest accepted request body, in bytes.
    ///
    /// Larger bodies get 413 `{"error":"Payload too large"}`. An extension
    /// route may accept less (see [request bodies](extensions.md) in
    /// Writing an extension).
    #[arg(
        long = "max-payload",
        env = "MAX_PAYLOAD_SIZE",
        default_value_t = 16 * 1024 * 1024,
        global = true,
        help_heading = "Server"
    )]
    pub max_payload: usize,
    /// Largest body, in bytes, of a request that is not authenticated
    /// (anonymous, or with credentials that fail).
    ///
    /// 413 past it, before it is read when its length is declared. A
    /// request with a body is authenticated before its body is read.
    #[arg(
        long = "anonymous-max-payload",
        env = "ANONYMOUS_MAX_PAYLOAD_SIZE",
        default_value_t = 1024 * 1024,
        global = true,
        help_heading = "Server"
    )]
    pub anonymous_max_payload: usize,
    /// Bytes the bodies of all requests that are not authenticated may
    /// hold at once (503 past it).
    ///
    /// Past it 503 `{"error": "Too many unauthenticated request bodies at
    /// once: retry shortly."}` with `Retry-After: 1`. Authenticated requests
    /// are not counted.
    #[arg(
        long = "anonymous-payload-budget",
        env = "ANONYMOUS_PAYLOAD_BUDGET",
        default_value_t = 64 * 1024 * 1024,
        global = true,
        help_heading = "Server"
    )]
    pub anonymous_payload_budget: usize,
    /// Most items one array create (`POST /items/:collection` with an
    /// array) may hold; a longer array is refused with 400 before anything
    /// is written. The array is one transaction, all or nothing, and holds
    /// the writer while it and its hooks run: this bounds how long.
    ///
    /// A longer array is answered 400 `INVALID_PAYLOAD` `Invalid payload.
    /// Exceeded max batch mutation limit of 100.`. Directus's variable,
    /// which it leaves unbounded by default: one writer at a time per host,
    /// so this bounds how long other users' writes wait: at 100 published
    /// recordings, about 40 ms on SQLite and half a second on PostgreSQL;
    /// at 1,000, 0.3–0.6 s and 10 s ([benchmarks.md](benchmarks.md)
    /// "Writes against the owner's history"). Import more in several
    /// requests.
    #[arg(
        long = "max-batch-mutation",
        env = "MAX_BATCH_MUTATION",
        default_value_t = DEFAULT_MAX_BATCH_MUTATION,
        value_parser = clap::value_parser!(u64).range(1..),
        global = true,
        help_heading = "Server"
    )]
    pub max_batch_mutation: u64,
    /// Seed demo content on an empty database and print example curl lines.
    #[arg(long, global = true)]
    pub demo: bool,
    /// Longest an extension handler may run before the caller gets 504.
    ///
    /// The answer is `{"error":"Extension timed out"}`; the call goes on in
    /// the background and other routes keep serving.
    #[arg(
        long = "extension-timeout-ms",
        env = "EXTENSION_TIMEOUT_MS",
        default_value_t = 30_000,
        global = true,
        help_heading = "Extensions"
    )]
    pub extension_timeout_ms: u64,
    /// How long a host's claim on a schedule's period holds unless renewed
    /// (every third of it while the job runs): when a host dies mid-run,
    /// another takes the run over this long after.
    ///
    /// See [Running several hosts](#running-several-hosts).
    #[arg(
        long = "schedule-lease-secs",
        env = "SCHEDULE_LEASE_SECS",
        default_value_t = 30,
        global = true,
        help_heading = "Extensions"
    )]
    pub schedule_lease_secs: u64,
    /// Run the extensions' schedules on this host.
    ///
    /// `false`: this host claims no period and takes over no lapsed run;
    /// the other hosts on the database run them, or `example-host schedule
    /// run` does, from cron or by hand. See [Running several
    /// hosts](#running-several-hosts).
    #[arg(
        long = "schedules",
        env = "SCHEDULES_ENABLED",
        default_value_t = true,
        action = clap::ArgAction::Set,
        global = true,
        help_heading = "Extensions"
    )]
    pub schedules: bool,
    /// Keep the answers of extension routes marked cacheable until the
    /// stored data changes (`--cache false` computes every answer afresh).
    ///
    /// `false` keeps no answers of cached extension routes and no
    /// per-data-version memos (see [Answer cache](#answer-cache)). Token,
    /// policy and permission decisions are kept either way, as Directus
    /// keeps its permissions with `CACHE_ENABLED=false`. They are exact:
    /// dropped at the next commit that changes access, through any host.
    #[arg(
        long = "cache",
        env = "CACHE_ENABLED",
        default_value_t = true,
        action = clap::ArgAction::Set,
        global = true,
        help_heading = "Server"
    )]
    pub cache: bool,
    /// Watch the extensions folder and mount new or rebuilt libraries
    /// without a restart (for development; docs/extensions.md).
    ///
    /// See [Hot reload](extensions.md).
    #[arg(
        long = "extensions-auto-reload",
        env = "EXTENSIONS_AUTO_RELOAD",
        default_value_t = false,
        action = clap::ArgAction::Set,
        global = true,
        help_heading = "Extensions"
    )]
    pub extensions_auto_reload: bool,
    /// Longest a client may take to send the request headers (then it is
    /// disconnected).
    #[arg(
        long = "header-timeout-ms",
        env = "HEADER_TIMEOUT_MS",
        default_value_t = 10_000,
        global = true,
        help_heading = "Server"
    )]
    pub header_timeout_ms: u64,
    /// Longest a client may take to send the request body (408 after).
    ///
    /// The answer is `{"error":"Request body timed out"}`.
    #[arg(
        long = "body-timeout-ms",
        env = "BODY_TIMEOUT_MS",
        default_value_t = 30_000,
        global = true,
        help_heading = "Server"
    )]
    pub body_timeout_ms: u64,
}

/// The default of `--max-batch-mutation`: an array of this many
/// recordings, each published with its award and achievement check,
/// commits in about 40 ms on SQLite and half a second on PostgreSQL, where
/// every statement is a round trip and the repeated updates of one stats
/// row within a transaction grow its version chain (1,000: 0.3 s and 10 s;
/// docs/benchmarks.md).
pub const DEFAULT_MAX_BATCH_MUTATION: u64 = 100;

/// The default SQLite file.
pub const DEFAULT_DB_FILE: &str = "./data/platform.db";

declare! {
    section "Database";
    /// Directus's: `sqlite3` (with `DB_FILENAME`) or `pg`, with
    /// `DB_CONNECTION_STRING` or the separate parts (see [Running on
    /// PostgreSQL](#running-on-postgresql)).
    DB_CLIENT: "DB_CLIENT" ~ "`sqlite3`";
    /// With `DB_CLIENT=pg`: a URL or `key=value` string.
    DB_CONNECTION_STRING: "DB_CONNECTION_STRING";
    /// With `DB_CLIENT=pg`, without a connection string: the server.
    DB_HOST: "DB_HOST" ~ "`localhost`";
    /// With `DB_CLIENT=pg`, without a connection string: its port.
    DB_PORT: "DB_PORT" ~ "`5432`";
    /// With `DB_CLIENT=pg`, without a connection string: the database
    /// (required).
    DB_DATABASE: "DB_DATABASE";
    /// With `DB_CLIENT=pg`, without a connection string: the user.
    DB_USER: "DB_USER";
    /// With `DB_CLIENT=pg`, without a connection string: the password.
    DB_PASSWORD: "DB_PASSWORD";
}

/// Directus's variables naming the database (`DB_CLIENT` and the rest).
#[derive(Debug, Default, Clone)]
pub struct DbEnv {
    pub client: Option<String>,
    pub connection_string: Option<String>,
    pub host: Option<String>,
    pub port: Option<String>,
    pub database: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
}

impl Common {
    /// The bounds of relational reads.
    pub fn relational_limits(&self) -> platform_store::query::RelationalLimits {
        platform_store::query::RelationalLimits {
            max_depth: self.max_relational_depth.max(2),
            max_records: self.max_related_records,
            max_bytes: self.max_response_bytes,
        }
    }
}

impl DbEnv {
    pub fn from_env(env: &Env) -> Self {
        Self {
            client: DB_CLIENT.get(env),
            connection_string: DB_CONNECTION_STRING.get(env),
            host: DB_HOST.get(env),
            port: DB_PORT.get(env),
            database: DB_DATABASE.get(env),
            user: DB_USER.get(env),
            password: DB_PASSWORD.get(env),
        }
    }
}

fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// A value of a `key=value` connection string, quoted.
fn conn_value(v: &str) -> String {
    format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// Where the data lives (docs/decisions.md §2): `--db`/`DB_FILENAME` names a
/// file or a PostgreSQL URL; otherwise `DB_CLIENT=pg` selects PostgreSQL with
/// `DB_CONNECTION_STRING` or the separate parts.
pub fn db_location(db: Option<&str>, env: &DbEnv) -> Result<Location, String> {
    if let Some(db) = db {
        if is_postgres_url(db) {
            return Ok(Location::Postgres(db.to_string()));
        }
        if env.client.as_deref().is_none_or(is_sqlite_client) {
            return Ok(Location::File(PathBuf::from(db)));
        }
    }
    match env.client.as_deref() {
        None => Ok(Location::File(PathBuf::from(DEFAULT_DB_FILE))),
        Some(c) if is_sqlite_client(c) => Ok(Location::File(PathBuf::from(DEFAULT_DB_FILE))),
        Some("pg" | "postgres" | "postgresql") => {
            if let Some(url) = &env.connection_string {
                return Ok(Location::Postgres(url.clone()));
            }
            let database = env
                .database
                .as_deref()
                .ok_or("DB_CLIENT=pg needs DB_CONNECTION_STRING or DB_DATABASE")?;
            let mut parts = vec![
                format!(
                    "host={}",
                    conn_value(env.host.as_deref().unwrap_or("localhost"))
                ),
                format!("port={}", conn_value(env.port.as_deref().unwrap_or("5432"))),
                format!("dbname={}", conn_value(database)),
            ];
            if let Some(user) = &env.user {
                parts.push(format!("user={}", conn_value(user)));
            }
            if let Some(password) = &env.password {
                parts.push(format!("password={}", conn_value(password)));
            }
            Ok(Location::Postgres(parts.join(" ")))
        }
        Some(other) => Err(format!(
            "DB_CLIENT={other} is not supported (use sqlite3 or pg)"
        )),
    }
}

fn is_sqlite_client(c: &str) -> bool {
    matches!(c, "sqlite3" | "sqlite")
}

impl Common {
    /// The configured database.
    pub fn location(&self) -> Result<Location, String> {
        db_location(self.db.as_deref(), &DbEnv::from_env(&Env::process()))
    }

    /// The extensions folder, applying the documented fallback.
    pub fn extensions_dir(&self) -> PathBuf {
        if let Some(dir) = &self.extensions {
            return dir.clone();
        }
        let default = PathBuf::from("./extensions");
        if default.is_dir() {
            return default;
        }
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(PathBuf::from))
            .unwrap_or(default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(client: &str) -> DbEnv {
        DbEnv {
            client: Some(client.into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_file_by_default_and_a_url_selects_postgres() {
        let none = DbEnv::default();
        assert_eq!(
            db_location(None, &none),
            Ok(Location::File(PathBuf::from(DEFAULT_DB_FILE)))
        );
        assert_eq!(
            db_location(Some("/tmp/x.db"), &none),
            Ok(Location::File(PathBuf::from("/tmp/x.db")))
        );
        assert_eq!(
            db_location(Some("postgres://u:p@h:5/d"), &none),
            Ok(Location::Postgres("postgres://u:p@h:5/d".into()))
        );
    }

    #[test]
    fn directus_variables_name_a_postgres_database() {
        let mut pg = env("pg");
        assert!(db_location(None, &pg).is_err(), "no database named");
        pg.connection_string = Some("postgresql://a@b/c".into());
        assert_eq!(
            db_location(None, &pg),
            Ok(Location::Postgres("postgresql://a@b/c".into()))
        );
        let parts = DbEnv {
            database: Some("site".into()),
            user: Some("app".into()),
            password: Some("it's".into()),
            ..env("pg")
        };
        assert_eq!(
            db_location(None, &parts),
            Ok(Location::Postgres(
                "host='localhost' port='5432' dbname='site' user='app' password='it\\'s'".into()
            ))
        );
        assert!(db_location(None, &env("mysql")).is_err());
        assert_eq!(
            db_location(None, &env("sqlite3")),
            Ok(Location::File(PathBuf::from(DEFAULT_DB_FILE)))
        );
    }
}
