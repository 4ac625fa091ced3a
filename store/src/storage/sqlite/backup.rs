//! Backup and restore of a SQLite database file with SQLite's online
//! backup API.
//!
//! The backup holds one read transaction on the source for the whole
//! copy, so every step copies pages of the same snapshot: in WAL mode (a
//! host's database always is) a reader blocks no writer, and with the
//! snapshot held the copy never starts over when another connection
//! commits between steps (as it would, step after step, under constant
//! writes). The steps only bound each call and report progress. The cost:
//! the WAL cannot be checkpointed past the snapshot, so it grows while the
//! copy runs.
//!
//! Both directions write a file beside their target and rename it onto
//! the target once complete and synced, so an interrupted or refused copy
//! leaves the target as it was.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use crate::storage::backup::{AcceptMigrations, BackupError, Copied, CopyProgress};

/// How long a step waits, in all, on a destination or source that is
/// busy before the copy gives up.
const BUSY_FOR: Duration = Duration::from_secs(30);

fn failed(what: &str, e: impl std::fmt::Display) -> BackupError {
    BackupError::Failed(format!("{what}: {e}"))
}

/// A file beside `target` that is removed when dropped, unless kept.
struct Scratch {
    path: PathBuf,
    keep: bool,
}

impl Scratch {
    fn beside(target: &Path, purpose: &str) -> Result<Self, BackupError> {
        let name = target
            .file_name()
            .ok_or_else(|| BackupError::Failed(format!("{} names no file", target.display())))?
            .to_string_lossy();
        let path = target.with_file_name(format!(".{name}.{purpose}-{}", std::process::id()));
        remove_with_journals(&path);
        Ok(Self { path, keep: false })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            remove_with_journals(&self.path);
        }
    }
}

fn remove_with_journals(path: &Path) {
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let _ = fs::remove_file(with_suffix(path, suffix));
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Copies every page of `from` into `to`, `step_pages` at a time, within
/// whatever read transaction `from` holds.
fn copy_pages(
    from: &Connection,
    to: &mut Connection,
    step_pages: u32,
    progress: &mut dyn FnMut(CopyProgress),
) -> Result<u64, BackupError> {
    let copy = Backup::new(from, to).map_err(|e| failed("cannot start the copy", e))?;
    let step = i32::try_from(step_pages.max(1)).unwrap_or(i32::MAX);
    let mut waited = Duration::ZERO;
    loop {
        let result = copy.step(step).map_err(|e| failed("the copy failed", e))?;
        let p = copy.progress();
        let total = u64::try_from(p.pagecount).unwrap_or(0);
        let copied = total.saturating_sub(u64::try_from(p.remaining).unwrap_or(0));
        match result {
            StepResult::Done => {
                progress(CopyProgress { copied, total });
                return Ok(total);
            }
            StepResult::More => progress(CopyProgress { copied, total }),
            // Another connection holds a lock the step needs: a moment.
            _ => {
                if waited >= BUSY_FOR {
                    return Err(BackupError::Failed(format!(
                        "the copy waited {BUSY_FOR:?} on a locked database"
                    )));
                }
                let pause = Duration::from_millis(20);
                std::thread::sleep(pause);
                waited += pause;
            }
        }
    }
}

/// Makes `conn`'s file one file (no WAL beside it) and closes it.
fn settle(conn: Connection, path: &Path) -> Result<(), BackupError> {
    let mode: String = conn
        .query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))
        .map_err(|e| failed(&format!("cannot settle {}", path.display()), e))?;
    if !mode.eq_ignore_ascii_case("delete") {
        return Err(BackupError::Failed(format!(
            "{} stays in journal mode {mode}",
            path.display()
        )));
    }
    conn.close()
        .map_err(|(_, e)| failed(&format!("cannot close {}", path.display()), e))
}

/// Syncs `scratch` and renames it onto `target`, then syncs the folder so
/// that the rename survives a crash.
fn put_in_place(mut scratch: Scratch, target: &Path) -> Result<u64, BackupError> {
    let file = fs::File::open(&scratch.path).map_err(|e| failed("cannot reopen the copy", e))?;
    file.sync_all()
        .map_err(|e| failed("cannot sync the copy", e))?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    fs::rename(&scratch.path, target).map_err(|e| {
        failed(
            &format!("cannot rename the copy onto {}", target.display()),
            e,
        )
    })?;
    scratch.keep = true;
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(dir) = fs::File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(bytes)
}

/// See [`crate::storage::backup()`].
pub(crate) fn backup(
    db: &Path,
    to: &Path,
    replace: bool,
    step_pages: u32,
    progress: &mut dyn FnMut(CopyProgress),
) -> Result<Copied, BackupError> {
    if !db.is_file() {
        return Err(BackupError::Missing(db.to_path_buf()));
    }
    if to.exists() && !replace {
        return Err(BackupError::Exists(to.to_path_buf()));
    }
    // Never creates the database: it exists, and is only read.
    let source = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| failed(&format!("cannot open {}", db.display()), e))?;
    source
        .busy_timeout(BUSY_FOR)
        .map_err(|e| failed("cannot set a busy timeout", e))?;
    let scratch = Scratch::beside(to, "backup")?;
    let mut copy = Connection::open(&scratch.path)
        .map_err(|e| failed(&format!("cannot create {}", scratch.path.display()), e))?;
    // The snapshot: a read transaction, begun by the first read.
    source
        .execute_batch("BEGIN")
        .and_then(|()| source.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(())))
        .map_err(|e| failed(&format!("cannot read {}", db.display()), e))?;
    let pages = copy_pages(&source, &mut copy, step_pages, progress)?;
    // The snapshot is copied: writers may checkpoint past it.
    let _ = source.execute_batch("COMMIT");
    drop(source);
    settle(copy, &scratch.path)?;
    let bytes = put_in_place(scratch, to)?;
    Ok(Copied { pages, bytes })
}

/// See [`crate::storage::restore()`].
pub(crate) fn restore(
    from: &Path,
    db: &Path,
    replace: bool,
    accept: &AcceptMigrations<'_>,
    progress: &mut dyn FnMut(CopyProgress),
) -> Result<Copied, BackupError> {
    if !from.is_file() {
        return Err(BackupError::Missing(from.to_path_buf()));
    }
    let exists = db.exists();
    if exists && !replace {
        return Err(BackupError::Exists(db.to_path_buf()));
    }
    if !exists && with_suffix(db, "-wal").exists() {
        // It would be replayed into the restored database.
        return Err(BackupError::Failed(format!(
            "{} has no database but a write-ahead log: move it away first",
            with_suffix(db, "-wal").display()
        )));
    }
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir)
            .map_err(|e| failed(&format!("cannot create {}", dir.display()), e))?;
    }
    let not_platform = |why: String| BackupError::NotPlatform {
        path: from.to_path_buf(),
        why,
    };
    let source = Connection::open_with_flags(
        from,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| not_platform(e.to_string()))?;
    source
        .query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .map_err(|e| not_platform(e.to_string()))?;
    let scratch = Scratch::beside(db, "restore")?;
    let mut copy = Connection::open(&scratch.path)
        .map_err(|e| failed(&format!("cannot create {}", scratch.path.display()), e))?;
    let pages = copy_pages(&source, &mut copy, 4096, progress)?;
    drop(source);
    check(&copy).map_err(not_platform)?;
    let recorded = recorded_migrations(&copy).map_err(not_platform)?;
    accept(&recorded).map_err(BackupError::Refused)?;
    settle(copy, &scratch.path)?;
    // Held until the copy is in place: no connection opens the old file
    // meanwhile.
    let _lock = if exists {
        Some(lock_out_others(db)?)
    } else {
        None
    };
    let bytes = put_in_place(scratch, db)?;
    Ok(Copied { pages, bytes })
}

/// The whole file checked, page by page.
fn check(conn: &Connection) -> Result<(), String> {
    let mut stmt = conn
        .prepare("PRAGMA integrity_check")
        .map_err(|e| e.to_string())?;
    let lines: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| e.to_string())?;
    if lines.len() == 1 && lines[0] == "ok" {
        Ok(())
    } else {
        Err(format!("integrity check: {}", lines.join("; ")))
    }
}

fn recorded_migrations(conn: &Connection) -> Result<Vec<(String, String)>, String> {
    let mut stmt = conn
        .prepare("SELECT owner, id FROM platform_migrations")
        .map_err(|e| format!("no migration records ({e})"))?;
    let recorded = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("unreadable migration records ({e})"))?;
    if recorded.is_empty() {
        return Err("no migration records".into());
    }
    Ok(recorded)
}

/// Takes the database `db` for this process alone, or answers
/// [`BackupError::InUse`]: leaving WAL mode needs every other connection
/// closed (each one holds a shared lock on a WAL database's file for as
/// long as it is open), and folds the WAL into the file, so that no log of
/// the old database is left to be replayed into the new one. The returned
/// connection holds an exclusive lock until dropped.
fn lock_out_others(db: &Path) -> Result<Connection, BackupError> {
    let in_use = |e: rusqlite::Error| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            BackupError::InUse(db.to_path_buf())
        }
        _ => failed(&format!("cannot lock {}", db.display()), e),
    };
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| failed(&format!("cannot open {}", db.display()), e))?;
    conn.busy_timeout(Duration::ZERO)
        .map_err(|e| failed("cannot set a busy timeout", e))?;
    conn.query_row("PRAGMA locking_mode = EXCLUSIVE", [], |_| Ok(()))
        .map_err(in_use)?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))
        .map_err(in_use)?;
    if !mode.eq_ignore_ascii_case("delete") {
        return Err(BackupError::InUse(db.to_path_buf()));
    }
    conn.execute_batch("BEGIN EXCLUSIVE").map_err(in_use)?;
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{self, Location};

    fn accept_all(_: &[(String, String)]) -> Result<(), String> {
        Ok(())
    }

    fn sqlite_file(path: &Path, sql: &str) {
        let conn = Connection::open(path).expect("open");
        conn.execute_batch(sql).expect("sql");
    }

    #[test]
    fn a_sound_database_of_another_program_is_refused_and_the_target_kept() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (other, db) = (dir.path().join("other.db"), dir.path().join("platform.db"));
        sqlite_file(
            &other,
            "CREATE TABLE notes (id INTEGER PRIMARY KEY); INSERT INTO notes DEFAULT VALUES;",
        );
        sqlite_file(&db, "CREATE TABLE kept (id INTEGER PRIMARY KEY);");
        let before = fs::read(&db).expect("read");
        let err = restore(&other, &db, true, &accept_all, &mut |_| {}).unwrap_err();
        assert!(
            matches!(&err, BackupError::NotPlatform { why, .. } if why.contains("no migration records")),
            "{err}"
        );
        assert_eq!(fs::read(&db).expect("read"), before);
        let left: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        assert_eq!(left.len(), 2, "a scratch file was left: {left:?}");
    }

    #[test]
    fn a_backup_restores_and_the_caller_may_refuse_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (db, copy) = (dir.path().join("a.db"), dir.path().join("a-backup.db"));
        sqlite_file(
            &db,
            "PRAGMA journal_mode = WAL;
             CREATE TABLE platform_migrations (owner TEXT, id TEXT, applied_at TEXT);
             INSERT INTO platform_migrations VALUES ('platform', '0001', 'now');",
        );
        let mut steps = 0;
        let copied = backup(&db, &copy, false, 1, &mut |_| steps += 1).expect("backup");
        assert!(
            copied.pages > 1 && steps as u64 >= copied.pages,
            "{copied:?}, {steps} steps"
        );
        assert!(matches!(
            backup(&db, &copy, false, 1, &mut |_| {}),
            Err(BackupError::Exists(_))
        ));
        let target = dir.path().join("restored").join("p.db");
        let refuse = |_: &[(String, String)]| Err("too new".to_string());
        assert!(matches!(
            restore(&copy, &target, false, &refuse, &mut |_| {}),
            Err(BackupError::Refused(why)) if why == "too new"
        ));
        assert!(!target.exists());
        restore(&copy, &target, false, &accept_all, &mut |_| {}).expect("restore");
        let conn = Connection::open(&target).expect("open");
        let id: String = conn
            .query_row("SELECT id FROM platform_migrations", [], |r| r.get(0))
            .expect("read");
        assert_eq!(id, "0001");
    }

    #[test]
    fn postgres_is_refused_with_its_tools_named() {
        let url = Location::Postgres("postgres://u@h/d".into());
        let err = storage::backup(&url, Path::new("x"), false, 1, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("pg_dump"), "{err}");
        let err =
            storage::restore(Path::new("x"), &url, false, &accept_all, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("pg_restore"), "{err}");
    }
}
