//! Backups of a database while hosts serve it, and restoring one: what a
//! backend supports of it. SQLite copies its file with the online backup
//! API ([`super::sqlite::backup`]); a PostgreSQL database is backed up with
//! its own tools (`pg_dump`, `pg_restore`), which this refuses to stand in
//! for.

use std::path::{Path, PathBuf};

use super::{sqlite, Location};

/// How far a copy is: pages copied of the database's total (the total as
/// of the last step: it grows when the database does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyProgress {
    pub copied: u64,
    pub total: u64,
}

/// A check of the migrations a backup records (`owner`, `id`), which
/// may refuse it with a reason.
pub type AcceptMigrations<'a> = dyn Fn(&[(String, String)]) -> Result<(), String> + 'a;

/// What a backup or a restore wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    /// Pages of the database copied.
    pub pages: u64,
    /// Bytes of the file written.
    pub bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The backend has its own tools for it.
    #[error("{backend} databases are not backed up or restored by this host: {instead}")]
    Unsupported {
        backend: &'static str,
        instead: &'static str,
    },
    /// The file to write exists, and replacing it was not asked for.
    #[error("{} exists", .0.display())]
    Exists(PathBuf),
    /// Nothing to copy.
    #[error("{} does not exist", .0.display())]
    Missing(PathBuf),
    /// The file to restore is not a sound database of this platform.
    #[error("{} is not a database of this platform: {why}", path.display())]
    NotPlatform { path: PathBuf, why: String },
    /// Some connection has the database open (a host may be serving it).
    #[error("{} is in use (a host may be serving it): stop every host on it first", .0.display())]
    InUse(PathBuf),
    /// The caller's check of the backup's recorded migrations refused it.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Failed(String),
}

/// Writes a consistent copy of the database at `location` to the file
/// `to` while others read and write it: one snapshot, as of the moment the
/// copy starts, written beside `to` and renamed onto it once complete and
/// on disk. Refuses an existing `to` unless `replace`. Copies
/// `step_pages` pages at a time, calling `progress` after each step.
pub fn backup(
    location: &Location,
    to: &Path,
    replace: bool,
    step_pages: u32,
    progress: &mut dyn FnMut(CopyProgress),
) -> Result<Copied, BackupError> {
    match location {
        Location::File(path) => sqlite::backup::backup(path, to, replace, step_pages, progress),
        Location::Postgres(_) => Err(postgres_unsupported()),
    }
}

/// Puts the backup `from` in place of the database at `location`, or
/// changes nothing: `from` is copied beside the target, checked (a sound
/// database, with the platform's migration records, which `accept` is
/// given and may refuse: a backup of a newer release, say), then renamed
/// onto it. Refuses an existing target unless `replace`, and a target that
/// some connection has open.
pub fn restore(
    from: &Path,
    location: &Location,
    replace: bool,
    accept: &AcceptMigrations<'_>,
    progress: &mut dyn FnMut(CopyProgress),
) -> Result<Copied, BackupError> {
    match location {
        Location::File(path) => sqlite::backup::restore(from, path, replace, accept, progress),
        Location::Postgres(_) => Err(postgres_unsupported()),
    }
}

fn postgres_unsupported() -> BackupError {
    BackupError::Unsupported {
        backend: "PostgreSQL",
        instead: "use `pg_dump --format=custom` to back up and `pg_restore` to restore \
                  (docs/operations.md, \"Backups\")",
    }
}
