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

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

/// How often the WAL is checkpointed.
pub(super) const INTERVAL: Duration = Duration::from_millis(200);

/// The checkpointing thread of one store; stopped (and joined) when
/// dropped.
pub(super) struct Checkpointer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    pub(super) fn start(path: &Path) -> Self {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let (flag, path) = (Arc::clone(&stop), path.to_path_buf());
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || run(&path, &flag))
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

fn run(path: &Path, stop: &(Mutex<bool>, Condvar)) {
    let conn = match Connection::open(path) {
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
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            log::debug!("WAL checkpoint skipped: {e}");
        }
        if *stopped {
            return;
        }
    }
}
