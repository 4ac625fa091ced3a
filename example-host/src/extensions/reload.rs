//! Hot reload (`EXTENSIONS_AUTO_RELOAD=true`, for development): the host
//! watches its extensions folder and mounts a new or rebuilt library
//! without a restart.
//!
//! - Every library is opened from a copy of its own ([`Staging`]). The
//!   dynamic loader hands back the library it already has for a path it
//!   has opened, so a rebuilt file must reach it under a new name; and the
//!   file in the folder may then be rewritten (`cp`, a build) while the
//!   host runs the copy, which rewriting a mapped library in place would
//!   corrupt.
//! - The folder is read every [`POLL`]. A file is taken once it has kept
//!   the same size, time and inode for one poll, so that a copy still
//!   being written is not opened half-way; a copy paused longer than that
//!   is caught before anything maps it: the staged copy must be the file
//!   as it stands (size, time, inode and a digest read twice), and a whole
//!   ELF library (`loader::check_whole_elf`: a truncated one would kill
//!   the host with SIGBUS when mapped). Such a file is refused with a log
//!   line, the previous copy keeps serving, and the file is taken again
//!   once it changes and settles.
//! - A new or changed library goes through every check of a start (ABI,
//!   versions, manifest, requirements), then its migrations and `init`;
//!   only then does it replace the copy mounted from the same file, in
//!   one swap of the mounted list. Requests that started on the previous
//!   copy finish on it; the next ones reach the new one. A refused library
//!   is logged and the previous copy keeps serving.
//! - A removed library is unmounted.
//! - A replaced copy's code stays mapped until the host exits (a request
//!   or hook may still be running in it, and unloading a Rust library is
//!   not safe): each reload costs the memory of one more copy.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use super::loader::{self, LoadError, Opened};
use super::schedules::Scheduler;
use super::{libraries_in, LoadedExtension, Registry};
use crate::platform::Platform;

/// How often the folder is read.
pub const POLL: Duration = Duration::from_millis(500);

/// Where libraries are copied before they are opened.
pub struct Staging {
    dir: tempfile::TempDir,
    next: AtomicU64,
}

impl Staging {
    pub fn new() -> std::io::Result<Self> {
        Ok(Staging {
            dir: tempfile::Builder::new()
                .prefix("extensions-staged-")
                .tempdir()?,
            next: AtomicU64::new(0),
        })
    }

    /// Opens a copy of the library at `path` (under a name never used
    /// before); the result names `path` as its file. Only a copy that is
    /// the whole of a file that did not change while it was read is
    /// opened: nothing maps a file that can still change.
    pub fn open(&self, path: &Path) -> Result<Opened, LoadError> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let staged = self.dir.path().join(format!("{n}-{name}"));
        let opened = stage(path, &staged).and_then(|()| loader::open(&staged));
        // Once opened, the copy's pages are mapped: its name is no longer
        // needed (where a system refuses, it goes with the folder at exit).
        let _ = std::fs::remove_file(&staged);
        opened.map(|opened| opened.named(path))
    }
}

/// Copies the file at `path` to `staged`, and checks that the copy is the
/// file as it stands: the same size, time and inode before and after the
/// copy, and the same digest for the bytes copied, for the file read
/// again and for the copy. A file still being written (a copy paused
/// between two readings of the folder) fails here or, cut short, at the
/// loader's check that it is a whole library; it is mounted once a later
/// reading finds it changed and whole.
fn stage(path: &Path, staged: &Path) -> Result<(), LoadError> {
    let before = Stamp::of(path);
    let copied = copy_digest(path, Some(staged))?;
    let again = copy_digest(path, None)?;
    let kept = copy_digest(staged, None)?;
    if before.is_none() || before != Stamp::of(path) || copied != again || copied != kept {
        return Err(LoadError::Open(format!(
            "{} changed while it was copied: still being written?",
            path.display()
        )));
    }
    Ok(())
}

/// The SHA-256 digest of the file at `from`, read once; written to `to`
/// as it is read, if given.
fn copy_digest(from: &Path, to: Option<&Path>) -> Result<[u8; 32], LoadError> {
    use sha2::{Digest, Sha256};
    use std::io::{Read, Write};
    let failed = |e: std::io::Error| LoadError::Open(format!("cannot copy it: {e}"));
    let mut reader = std::fs::File::open(from).map_err(failed)?;
    let mut writer = match to {
        Some(to) => Some(std::fs::File::create(to).map_err(failed)?),
        None => None,
    };
    let mut digest = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buffer).map_err(failed)?;
        if n == 0 {
            break;
        }
        digest.update(&buffer[..n]);
        if let Some(w) = writer.as_mut() {
            w.write_all(&buffer[..n]).map_err(failed)?;
        }
    }
    if let Some(w) = writer {
        w.sync_all().map_err(failed)?;
    }
    Ok(digest.finalize().into())
}

/// What a file looked like at one reading of the folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        })
    }
}

/// What one reading of the folder asks for.
#[derive(Debug, PartialEq, Eq)]
enum Change {
    /// A library new or changed since it was last mounted, and settled.
    Mount(PathBuf),
    /// A library whose file is gone.
    Unmount(PathBuf),
}

/// The folder's libraries as last acted on, and those still settling.
#[derive(Default)]
struct FolderState {
    acted_on: HashMap<PathBuf, Stamp>,
    settling: HashMap<PathBuf, Stamp>,
}

impl FolderState {
    fn new(files: impl IntoIterator<Item = (PathBuf, Stamp)>) -> Self {
        FolderState {
            acted_on: files.into_iter().collect(),
            settling: HashMap::new(),
        }
    }

    /// Compares one reading with the last: a new or changed file is acted
    /// on when a second reading finds it the same.
    fn changes(&mut self, now: &[(PathBuf, Stamp)]) -> Vec<Change> {
        let mut changes = Vec::new();
        for (path, stamp) in now {
            if self.acted_on.get(path) == Some(stamp) {
                self.settling.remove(path);
                continue;
            }
            if self.settling.get(path) == Some(stamp) {
                self.settling.remove(path);
                self.acted_on.insert(path.clone(), *stamp);
                changes.push(Change::Mount(path.clone()));
            } else {
                self.settling.insert(path.clone(), *stamp);
            }
        }
        let gone: Vec<PathBuf> = self
            .acted_on
            .keys()
            .filter(|p| !now.iter().any(|(q, _)| q == *p))
            .cloned()
            .collect();
        for path in gone {
            self.acted_on.remove(&path);
            changes.push(Change::Unmount(path));
        }
        self.settling.retain(|p, _| now.iter().any(|(q, _)| q == p));
        changes
    }
}

fn read_folder(dir: &Path) -> Vec<(PathBuf, Stamp)> {
    libraries_in(dir)
        .into_iter()
        .filter_map(|path| Stamp::of(&path).map(|stamp| (path, stamp)))
        .collect()
}

/// The watcher of one extensions folder.
pub struct Reloader {
    pub dir: PathBuf,
    pub staging: Staging,
    pub registry: Arc<Registry>,
    pub platform: Arc<Platform>,
    /// Whether extensions' answers are cached (the runtime is attached).
    pub cache: bool,
}

impl Reloader {
    /// Watches the folder on a thread of its own until `shutdown`; the
    /// schedules of what it mounts start on `scheduler`'s runtime.
    pub fn spawn(
        self,
        scheduler: Scheduler,
        runtime: tokio::runtime::Handle,
        shutdown: watch::Receiver<bool>,
    ) {
        log::info!(
            "watching {} for new and rebuilt extension libraries (EXTENSIONS_AUTO_RELOAD)",
            self.dir.display()
        );
        // Read before the host answers its first request: a library
        // changed once the host is up is always a change, however late the
        // thread starts.
        let mut state = FolderState::new(read_folder(&self.dir));
        let spawned = std::thread::Builder::new()
            .name("extensions-reload".into())
            .spawn(move || {
                let _runtime = runtime.enter();
                while !*shutdown.borrow() {
                    std::thread::sleep(POLL);
                    for change in state.changes(&read_folder(&self.dir)) {
                        match change {
                            Change::Mount(path) => {
                                if let Some(ext) = self.mount(&path) {
                                    scheduler.spawn_for(&ext);
                                }
                            }
                            Change::Unmount(path) => self.unmount(&path),
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            log::error!("cannot watch the extensions folder: {e}");
        }
    }

    /// Mounts the library at `path` in place of the copy mounted from it,
    /// if any; logs and keeps that copy when the library is refused.
    fn mount(&self, path: &Path) -> Option<Arc<LoadedExtension>> {
        match self.try_mount(path) {
            Ok((ext, replaced)) => {
                match replaced {
                    Some(old) if old.id == ext.id => log::info!(
                        "reloaded extension `{}` ({} {} -> {}) from {}",
                        ext.id,
                        ext.name,
                        old.version,
                        ext.version,
                        path.display()
                    ),
                    Some(old) => log::info!(
                        "loaded extension `{}` ({} {}) from {} at /{}, in place of `{}` (unmounted)",
                        ext.id,
                        ext.name,
                        ext.version,
                        path.display(),
                        ext.id,
                        old.id
                    ),
                    None => super::log_loaded(&ext, path),
                }
                Some(ext)
            }
            Err(e) => {
                let kept = self
                    .registry
                    .all()
                    .iter()
                    .find(|e| e.path == path)
                    .map(|e| format!("; the copy of `{}` {} keeps serving", e.id, e.version))
                    .unwrap_or_default();
                log::error!("refused extension {}: {e}{kept}", path.display());
                None
            }
        }
    }

    fn try_mount(
        &self,
        path: &Path,
    ) -> Result<(Arc<LoadedExtension>, Option<Arc<LoadedExtension>>), LoadError> {
        let opened = self.staging.open(path)?;
        let mounted = self.registry.all();
        if let Some(other) = mounted.iter().find(|e| e.id == opened.id && e.path != path) {
            return Err(LoadError::Manifest(format!(
                "id `{}` is already mounted from {}",
                other.id,
                other.path.display()
            )));
        }
        let others: Vec<Arc<LoadedExtension>> =
            mounted.iter().filter(|e| e.path != path).cloned().collect();
        let ext = loader::mount(opened, &self.platform, &others)?;
        if self.cache {
            super::runtime::attach_runtime(&ext, &self.platform.store);
        }
        Ok(self.registry.replace_from(path, ext))
    }

    fn unmount(&self, path: &Path) {
        if let Some(old) = self.registry.remove_from(path) {
            log::info!(
                "unmounted extension `{}`: its library {} was removed",
                old.id,
                path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(len: u64) -> Stamp {
        Stamp {
            len,
            modified: None,
            inode: 1,
        }
    }

    #[test]
    fn a_file_is_acted_on_once_two_readings_agree() {
        let a = PathBuf::from("/x/liba.so");
        let mut state = FolderState::new([(a.clone(), stamp(1))]);
        // Unchanged: nothing.
        assert!(state.changes(&[(a.clone(), stamp(1))]).is_empty());
        // Being written: waits.
        assert!(state.changes(&[(a.clone(), stamp(2))]).is_empty());
        assert!(state.changes(&[(a.clone(), stamp(3))]).is_empty());
        // Settled.
        assert_eq!(
            state.changes(&[(a.clone(), stamp(3))]),
            vec![Change::Mount(a.clone())]
        );
        assert!(state.changes(&[(a.clone(), stamp(3))]).is_empty());
    }

    #[test]
    fn new_files_mount_and_removed_ones_unmount() {
        let a = PathBuf::from("/x/liba.so");
        let b = PathBuf::from("/x/libb.so");
        let mut state = FolderState::new([(a.clone(), stamp(1))]);
        let both = [(a.clone(), stamp(1)), (b.clone(), stamp(5))];
        assert!(state.changes(&both).is_empty());
        assert_eq!(state.changes(&both), vec![Change::Mount(b.clone())]);
        assert_eq!(
            state.changes(&[(b.clone(), stamp(5))]),
            vec![Change::Unmount(a)]
        );
        // A file that appears and goes before it settles is never acted on.
        let c = PathBuf::from("/x/libc.so");
        assert!(state
            .changes(&[(b.clone(), stamp(5)), (c, stamp(1))])
            .is_empty());
        assert!(state.changes(&[(b, stamp(5))]).is_empty());
    }
}
