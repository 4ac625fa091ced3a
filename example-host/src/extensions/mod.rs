//! Extensions: loading, calling, item-event delivery and schedules.
//!
//! [`loader`] opens a library and makes every check (ABI version and
//! layout, manifest, id, migrations, `init`); [`order`] mounts a folder's
//! libraries after what each requires and refuses those it cannot satisfy;
//! [`linked`] mounts a `host_sdk::Extension` linked into the process (the
//! `inprocess` feature's svc, the test kit); [`code`] calls an extension,
//! through the ABI or directly; [`services`] is the host's `HostServices`,
//! [`runtime`] its `HostRuntime` (the data version), [`logger`] its
//! `HostLogger`; [`reload`] watches the folder and swaps in a rebuilt
//! library; [`schedules`] runs jobs by period, and [`claims`] makes a
//! period run once across hosts. The registry here holds the mounted list,
//! swapped whole and read without a lock, and delivers item events.

mod claims;
mod code;
mod linked;
pub(crate) mod loader;
mod logger;
pub(crate) mod order;
pub mod reload;
mod runtime;
pub mod schedules;
pub mod services;

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;
use serde_json::Value;

use crate::accounts::CallerAccount;
use crate::platform::Platform;
use crate::platform::{EventFields, EventSink, PlatformError, WriteEvent};
use platform_store::storage::Writer;
use services::ExtServices;

pub use claims::Claims;
pub use code::{facade_accountability, ExtResponse};
pub use loader::libraries_in;

/// When a schedule runs.
pub enum When {
    Every(std::time::Duration),
    Cron(Box<cron::Schedule>),
}

pub struct ScheduleDef {
    pub name: String,
    pub when: When,
}

/// The item events an extension wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interest {
    All,
    Only(Vec<String>),
}

impl Interest {
    /// No collection at all.
    pub fn none() -> Self {
        Interest::Only(Vec::new())
    }

    /// `None` stands for every collection.
    pub fn from_list(list: Option<Vec<String>>) -> Self {
        list.map_or(Interest::All, Interest::Only)
    }

    pub fn from_ffi(answer: host_sdk::abi::FfiEventInterest) -> Self {
        if answer.all {
            Interest::All
        } else {
            Interest::Only(
                answer
                    .collections
                    .into_iter()
                    .map(|c| c.into_string())
                    .collect(),
            )
        }
    }

    pub fn wants(&self, collection: &str) -> bool {
        match self {
            Interest::All => true,
            Interest::Only(list) => list.iter().any(|c| c == collection),
        }
    }
}

/// Per collection, the only fields an extension's item hooks read.
pub type HookFields = BTreeMap<String, BTreeSet<String>>;

/// A library that passed every check and is mounted at `/{id}`.
pub struct LoadedExtension {
    /// The collections whose committed writes its hooks want.
    pub interest: Interest,
    /// The collections whose writes its in-transaction hooks watch.
    pub before_commit: Interest,
    /// The collections whose writes its before-write hooks watch (1.9).
    pub before_write: Interest,
    /// Per collection, the only fields its item hooks read (1.14); whole
    /// records for the collections not named.
    pub hook_fields: HookFields,
    pub id: String,
    pub name: String,
    pub version: String,
    pub sdk_version: String,
    /// The boundary's version the library was built with (the host's own
    /// for an extension linked into it).
    pub abi_version: String,
    pub path: PathBuf,
    pub code: code::Code,
    pub schedules: Vec<ScheduleDef>,
    /// `{"paths": {...}}` relative to the mount, or null.
    pub openapi: Value,
}

/// A request for an extension, as the HTTP layer hands it over.
pub struct ExtRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Every mounted extension, in mount order.
///
/// The list is replaced whole (hot reload, [`reload`]) and read without a
/// lock: a request, a write's hooks or a schedule run keep the list (and
/// the extensions in it) they started with.
pub struct Registry {
    mounted: ArcSwap<Vec<Arc<LoadedExtension>>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            mounted: ArcSwap::from_pointee(Vec::new()),
        }
    }
}

/// The log line of a library mounted.
fn log_loaded(ext: &LoadedExtension, path: &Path) {
    log::info!(
        "loaded extension `{}` ({} {}, host-sdk {}) from {} at /{}",
        ext.id,
        ext.name,
        ext.version,
        ext.sdk_version,
        path.display(),
        ext.id
    );
}

/// How deep hooks may trigger writes that trigger hooks.
const MAX_HOOK_DEPTH: usize = 4;

/// How deep in-transaction hooks may write what runs in-transaction hooks;
/// deeper, the write is refused (skipping a hook would leave what it
/// maintains wrong).
const MAX_BEFORE_COMMIT_DEPTH: usize = 8;

thread_local! {
    static HOOK_DEPTH: Cell<usize> = const { Cell::new(0) };
    static BEFORE_COMMIT_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// The host's error for an in-transaction hook's refusal: the codes the
/// platform knows keep their meaning; anything else is the hook's failure,
/// named in the log.
fn refusal(ext: &str, event: &WriteEvent, code: &str, message: String) -> PlatformError {
    PlatformError::from_code(code, message.clone()).unwrap_or_else(|| {
        log::error!(
            "[{ext}] in-transaction hook failed on {} {} {:?}, write refused: {code}: {message}",
            event.kind.name(),
            event.collection,
            event.keys,
        );
        PlatformError::Internal(format!(
            "a hook of extension `{ext}` failed on this write: {message}"
        ))
    })
}

impl Registry {
    /// Loads every library of `dir`. A refused library is logged with its
    /// file and reason; the others still load.
    ///
    /// With `staging`, each library is opened from a copy of its own, so
    /// that its file may be rewritten while it is mapped (hot reload).
    pub fn load_dir(dir: &Path, platform: &Platform, staging: Option<&reload::Staging>) -> Self {
        let registry = Registry::default();
        let libraries = libraries_in(dir);
        if libraries.is_empty() {
            log::warn!("no extension libraries in {}", dir.display());
        }
        let mut opened = Vec::new();
        for path in libraries {
            let staged = match staging {
                Some(staging) => staging.open(&path),
                None => loader::open(&path),
            };
            match staged {
                Ok(library) => opened.push(library),
                Err(e) => log::error!("refused extension {}: {e}", path.display()),
            }
        }
        // Each after what it requires (SDK 1.9); file-name order otherwise.
        let candidates: Vec<order::Candidate<'_>> = opened
            .iter()
            .map(|o| order::Candidate {
                id: &o.id,
                version: &o.version,
                requires: &o.requires,
            })
            .collect();
        let (sequence, refusals) = order::mount_order(&candidates);
        for (i, reason) in refusals {
            log::error!("refused extension {}: {reason}", opened[i].path().display());
        }
        // Each taken once, in the order worked out.
        let mut opened: Vec<Option<loader::Opened>> = opened.into_iter().map(Some).collect();
        for i in sequence {
            let Some(library) = opened[i].take() else {
                continue;
            };
            let path = library.path().to_path_buf();
            match loader::mount(library, platform, &registry.all()) {
                Ok(ext) => {
                    log_loaded(&ext, &path);
                    registry.push(ext);
                }
                Err(e) => log::error!("refused extension {}: {e}", path.display()),
            }
        }
        registry
    }

    /// Loads one library (all the loader's checks, its migrations and
    /// `init`) and mounts it after those already mounted.
    pub fn add_library(&self, path: &Path, platform: &Platform) -> Result<(), String> {
        let ext = loader::load(path, platform, &self.all())
            .map_err(|e| format!("refused extension {}: {e}", path.display()))?;
        self.push(ext);
        Ok(())
    }

    /// Mounts `ext` after the others.
    fn push(&self, ext: LoadedExtension) {
        let ext = Arc::new(ext);
        self.mounted.rcu(|mounted| {
            let mut next = Vec::clone(mounted);
            next.push(ext.clone());
            next
        });
    }

    pub fn get(&self, id: &str) -> Option<Arc<LoadedExtension>> {
        self.mounted.load().iter().find(|e| e.id == id).cloned()
    }

    /// The extensions mounted now, in mount order.
    pub fn all(&self) -> Arc<Vec<Arc<LoadedExtension>>> {
        self.mounted.load_full()
    }

    /// Mounts `ext` in place of the extension mounted from the same file
    /// (after the others when there is none), in one swap; answers it and
    /// the one it replaced.
    pub fn replace_from(
        &self,
        path: &Path,
        ext: LoadedExtension,
    ) -> (Arc<LoadedExtension>, Option<Arc<LoadedExtension>>) {
        let ext = Arc::new(ext);
        let mut replaced = None;
        self.mounted.rcu(|mounted| {
            let mut next = Vec::clone(mounted);
            replaced = None;
            match next.iter().position(|e| e.path == path) {
                Some(i) => replaced = Some(std::mem::replace(&mut next[i], ext.clone())),
                None => next.push(ext.clone()),
            }
            next
        });
        (ext, replaced)
    }

    /// Unmounts the extension mounted from `path`.
    pub fn remove_from(&self, path: &Path) -> Option<Arc<LoadedExtension>> {
        let mut removed = None;
        self.mounted.rcu(|mounted| {
            let mut next = Vec::clone(mounted);
            removed = next
                .iter()
                .position(|e| e.path == path)
                .map(|i| next.remove(i));
            next
        });
        removed
    }

    /// Whether any mounted extension's hooks of one kind (`kind`) watch
    /// `collection`.
    fn any_wants(&self, collection: &str, kind: impl Fn(&LoadedExtension) -> &Interest) -> bool {
        self.mounted
            .load()
            .iter()
            .any(|e| kind(e).wants(collection))
    }

    /// Whether `ext` is still the mounted copy (a reload replaces it).
    pub fn is_mounted(&self, ext: &Arc<LoadedExtension>) -> bool {
        self.mounted.load().iter().any(|e| Arc::ptr_eq(e, ext))
    }

    /// Calls an extension's route handler (blocking: run it off the async workers).
    pub fn handle(
        ext: &LoadedExtension,
        platform: &Platform,
        accountability: Option<CallerAccount>,
        request: ExtRequest,
    ) -> ExtResponse {
        platform
            .metrics
            .extension_calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let services = ExtServices::new(platform, accountability);
        ext.code.handle(&services, request)
    }

    /// Runs one schedule of one extension now.
    pub fn run_schedule(
        &self,
        platform: &Platform,
        ext_id: &str,
        name: &str,
    ) -> Result<(), String> {
        let ext = self
            .get(ext_id)
            .ok_or_else(|| format!("no extension `{ext_id}` is loaded"))?;
        if !ext.schedules.iter().any(|s| s.name == name) {
            let known: Vec<&str> = ext.schedules.iter().map(|s| s.name.as_str()).collect();
            return Err(format!(
                "extension `{ext_id}` has no schedule `{name}` (it has: {})",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            ));
        }
        let services = ExtServices::new(platform, None);
        ext.code.run_schedule(&services, name)
    }
}

/// Runs the hooks of one write (`run`), counting how deeply hooks' own
/// writes nest on this thread: past the bound the write is refused, as a
/// hook whose writes keep triggering hooks would otherwise never end.
fn nested_hooks<T>(
    write: &WriteEvent,
    run: impl FnOnce() -> Result<T, PlatformError>,
) -> Result<T, PlatformError> {
    let depth = BEFORE_COMMIT_DEPTH.with(Cell::get);
    if depth >= MAX_BEFORE_COMMIT_DEPTH {
        return Err(PlatformError::Internal(format!(
            "in-transaction hooks nested {depth} deep on {} {} (a hook's write keeps triggering hooks)",
            write.kind.name(),
            write.collection
        )));
    }
    BEFORE_COMMIT_DEPTH.with(|d| d.set(depth + 1));
    let outcome = run();
    BEFORE_COMMIT_DEPTH.with(|d| d.set(depth));
    outcome
}

impl EventSink for Registry {
    fn wants(&self, collection: &str) -> bool {
        self.any_wants(collection, |e| &e.interest)
    }

    fn wants_before_commit(&self, collection: &str) -> bool {
        self.any_wants(collection, |e| &e.before_commit)
    }

    fn event_fields(&self, collection: &str) -> EventFields {
        let mut fields = BTreeSet::new();
        let seeing = self.all();
        let seeing = seeing
            .iter()
            .filter(|e| e.interest.wants(collection) || e.before_commit.wants(collection));
        for ext in seeing {
            match ext.hook_fields.get(collection) {
                Some(read) => fields.extend(read.iter().cloned()),
                None => return EventFields::All,
            }
        }
        EventFields::Only(fields)
    }

    fn before_commit(
        &self,
        platform: &Platform,
        conn: &mut dyn Writer,
        events: &mut Vec<WriteEvent>,
        event: &WriteEvent,
    ) -> Result<(), PlatformError> {
        nested_hooks(event, || {
            for ext in self
                .all()
                .iter()
                .filter(|e| e.before_commit.wants(&event.collection))
            {
                let services = ExtServices::bound(
                    platform,
                    event.accountability.clone(),
                    &mut *conn,
                    &mut *events,
                );
                if let Err((code, message)) = ext.code.before_commit(&services, event) {
                    return Err(refusal(&ext.id, event, &code, message));
                }
            }
            Ok(())
        })
    }

    fn wants_before_write(&self, collection: &str) -> bool {
        self.any_wants(collection, |e| &e.before_write)
    }

    fn before_write(
        &self,
        platform: &Platform,
        conn: &mut dyn Writer,
        events: &mut Vec<WriteEvent>,
        write: &WriteEvent,
    ) -> Result<Option<String>, PlatformError> {
        nested_hooks(write, || {
            let mut current = write.clone();
            let mut changed = None;
            for ext in self
                .all()
                .iter()
                .filter(|e| e.before_write.wants(&write.collection))
            {
                let services = ExtServices::bound(
                    platform,
                    write.accountability.clone(),
                    &mut *conn,
                    &mut *events,
                );
                match ext.code.before_write(&services, &current) {
                    Ok(Some(payload)) => {
                        current.payload = payload.as_str().into();
                        changed = Some(payload);
                    }
                    Ok(None) => {}
                    Err((code, message)) => {
                        return Err(refusal(&ext.id, &current, &code, message));
                    }
                }
            }
            Ok(changed)
        })
    }

    fn dispatch(&self, platform: &Platform, events: Vec<WriteEvent>) {
        let depth = HOOK_DEPTH.with(Cell::get);
        if depth >= MAX_HOOK_DEPTH {
            log::warn!(
                "item events not delivered: hooks nested {depth} deep (a hook's write keeps triggering hooks)"
            );
            return;
        }
        HOOK_DEPTH.with(|d| d.set(depth + 1));
        let mounted = self.all();
        for event in events {
            for ext in mounted
                .iter()
                .filter(|e| e.interest.wants(&event.collection))
            {
                let services = ExtServices::new(platform, event.accountability.clone());
                if let Err(e) = ext.code.on_event(&services, &event) {
                    log::warn!(
                        "[{}] hook failed on {} {} {:?}: {e}",
                        ext.id,
                        event.kind.name(),
                        event.collection,
                        event.keys,
                    );
                }
            }
        }
        HOOK_DEPTH.with(|d| d.set(depth));
    }
}
