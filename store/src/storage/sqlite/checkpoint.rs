//! The WAL's checkpoints, off the writers' threads.
//!
//! By default the connection whose commit grows the WAL past 1,000 pages
//! copies them into the database file itself, with the fsync that takes,
//! before its caller gets its answer: a request that happens to commit
//! then pays for every write before it. The store's own connections turn
//! that off (`wal_autocheckpoint = 0`, see `set_up_connection`), and this
//! thread checkpoints instead, every [`INTERVAL`], passively (it never
//! waits for readers or writers; what it cannot copy now it copies next
//! time). Commits stay as durable as before: a commit is in the WAL, which
//! a checkpoint only copies. Other processes on the file (the `schedule`
//! and `backup` commands) keep SQLite's default.
//!
//! A passive checkpoint never makes the WAL start over by itself: that
//! happens when a writer begins after *every* frame was copied, and under
//! a steady stream of writes there is always a newer frame. So once the
//! WAL holds more than [`WAL_LIMIT_FRAMES`], the thread takes the
//! process's turn of writers (its write lock), copies everything and
//! truncates the WAL: a pause of one checkpoint for the writers that
//! queue meanwhile, instead of a WAL (and disk use) that grows without
//! bound.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex as WriteLock;
use rusqlite::Connection;

/// How often the WAL is checkpointed.
pub(super) const INTERVAL: Duration = Duration::from_millis(200);

/// Frames (pages) past which the WAL is copied in full and truncated,
/// between two writers: 16,384 frames are 64 MiB at the default page size.
/// (64 under test, so a test's writes cross it many times).
pub(super) const WAL_LIMIT_FRAMES: i64 = if cfg!(test) { 64 } else { 16_384 };

/// How long the truncating checkpoint waits for the readers still using
/// the WAL.
const READERS_WAIT: Duration = Duration::from_secs(5);

/// The checkpointing thread of one store; stopped (and joined) when
/// dropped.
pub(super) struct Checkpointer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread for the database at `path`, whose writers in
    /// this process take turns on `writers`.
    pub(super) fn start(path: &Path, writers: Arc<WriteLock<()>>) -> Self {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let (flag, path) = (Arc::clone(&stop), path.to_path_buf());
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || run(&path, &flag, &writers))
            .map_err(|e| log::warn!("no WAL checkpoint thread ({e}): writers checkpoint instead"))
            .ok();
        Self { stop, thread }
    }

    /// Whether checkpoints are this thread's (else the writers keep
    /// SQLite's automatic ones).
    pub(super) fn running(&self) -> bool {
        self.thread.is_some()
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        let (lock, wake) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A passive checkpoint; the frames in the WAL.
fn passive(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
}

/// Copies every frame and truncates the WAL, between two of this
/// process's writers.
fn truncate(conn: &Connection, writers: &WriteLock<()>) -> rusqlite::Result<()> {
    let _turn = writers.lock();
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))?;
    if busy != 0 {
        log::debug!("the WAL is not truncated yet: readers still use it");
    }
    Ok(())
}

fn run(path: &Path, stop: &(Mutex<bool>, Condvar), writers: &WriteLock<()>) {
    let conn = match Connection::open(path).and_then(|c| {
        c.busy_timeout(READERS_WAIT)?;
        Ok(c)
    }) {
        Ok(conn) => conn,
        Err(e) => {
            log::warn!(
                "the WAL checkpoint thread cannot open {}: {e}",
                path.display()
            );
            return;
        }
    };
    let (lock, wake) = stop;
    let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let (guard, _) = wake
            .wait_timeout(stopped, INTERVAL)
            .unwrap_or_else(|e| e.into_inner());
        stopped = guard;
        // The last checkpoint runs at the stop too, so a closed store
        // leaves little in its WAL.
        let outcome = passive(&conn).and_then(|frames| match frames > WAL_LIMIT_FRAMES {
            true => truncate(&conn, writers),
            false => Ok(()),
        });
        if let Err(e) = outcome {
            log::debug!("WAL checkpoint skipped: {e}");
        }
        if *stopped {
            return;
        }
    }
}
