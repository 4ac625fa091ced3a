//! Command line and environment (DECISIONS §2).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
    /// Work with extension schedules.
    Schedule {
        #[command(subcommand)]
        action: ScheduleAction,
    },
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
    /// SQLite database file (created with its folder if missing).
    #[arg(
        long = "db",
        env = "DB_FILENAME",
        default_value = "./data/platform.db",
        global = true
    )]
    pub db: PathBuf,
    /// Serve the svc extension linked into this host, without the ABI.
    #[cfg(feature = "inprocess")]
    #[arg(long = "builtin-svc", global = true)]
    pub builtin_svc: bool,
    /// Folder of extension libraries [default: ./extensions, or the executable's folder when that does not exist].
    #[arg(long = "extensions", env = "EXTENSIONS_PATH", global = true)]
    pub extensions: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "HOST", default_value = "127.0.0.1", global = true)]
    pub host: String,
    /// Port to listen on.
    #[arg(long, env = "PORT", default_value_t = 8055, global = true)]
    pub port: u16,
    /// Largest accepted request body, in bytes.
    #[arg(long = "max-payload", env = "MAX_PAYLOAD_SIZE", default_value_t = 16 * 1024 * 1024, global = true)]
    pub max_payload: usize,
    /// Seed demo content on an empty database and print example curl lines.
    #[arg(long, global = true)]
    pub demo: bool,
    /// Longest an extension handler may run before the caller gets 504.
    #[arg(
        long = "extension-timeout-ms",
        env = "EXTENSION_TIMEOUT_MS",
        default_value_t = 30_000,
        global = true
    )]
    pub extension_timeout_ms: u64,
    /// Keep the answers of extension routes marked cacheable until the
    /// stored data changes (`--cache false` computes every answer afresh).
    #[arg(
        long = "cache",
        env = "CACHE_ENABLED",
        default_value_t = true,
        action = clap::ArgAction::Set,
        global = true
    )]
    pub cache: bool,
    /// Longest a client may take to send the request headers.
    #[arg(
        long = "header-timeout-ms",
        env = "HEADER_TIMEOUT_MS",
        default_value_t = 10_000,
        global = true
    )]
    pub header_timeout_ms: u64,
    /// Longest a client may take to send the request body (408 after).
    #[arg(
        long = "body-timeout-ms",
        env = "BODY_TIMEOUT_MS",
        default_value_t = 30_000,
        global = true
    )]
    pub body_timeout_ms: u64,
}

impl Common {
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
