//! Extensions: loading, calling, item-event delivery and schedules.

mod loader;
mod logger;
pub mod schedules;
pub mod services;

use std::cell::Cell;
use std::path::{Path, PathBuf};

use abi_stable::std_types::{RString, RVec, Tuple2};
use host_sdk::abi::{ExtensionModuleRef, FfiItemEvent, FfiRequest, FfiResponse};
use serde_json::Value;

use crate::auth::Accountability;
use crate::items::{EventSink, ItemEvent, Platform};
use services::{ffi_accountability_opt, ExtServices};

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

/// A library that passed every check and is mounted at `/{id}`.
pub struct LoadedExtension {
    pub id: String,
    pub name: String,
    pub version: String,
    pub sdk_version: String,
    pub path: PathBuf,
    pub module: ExtensionModuleRef,
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

/// Every mounted extension.
#[derive(Default)]
pub struct Registry {
    extensions: Vec<LoadedExtension>,
}

/// How deep hooks may trigger writes that trigger hooks.
const MAX_HOOK_DEPTH: usize = 4;

thread_local! {
    static HOOK_DEPTH: Cell<usize> = const { Cell::new(0) };
}

impl Registry {
    /// Loads every library of `dir`. A refused library is logged with its
    /// file and reason; the others still load.
    pub fn load_dir(dir: &Path, platform: &Platform) -> Self {
        let mut registry = Registry::default();
        let libraries = libraries_in(dir);
        if libraries.is_empty() {
            log::warn!("no extension libraries in {}", dir.display());
        }
        for path in libraries {
            let taken: Vec<String> = registry.extensions.iter().map(|e| e.id.clone()).collect();
            match loader::load(&path, platform, &taken) {
                Ok(ext) => {
                    log::info!(
                        "loaded extension `{}` ({} {}, host-sdk {}) from {} at /{}",
                        ext.id,
                        ext.name,
                        ext.version,
                        ext.sdk_version,
                        path.display(),
                        ext.id
                    );
                    registry.extensions.push(ext);
                }
                Err(e) => log::error!("refused extension {}: {e}", path.display()),
            }
        }
        registry
    }

    pub fn get(&self, id: &str) -> Option<&LoadedExtension> {
        self.extensions.iter().find(|e| e.id == id)
    }

    pub fn all(&self) -> &[LoadedExtension] {
        &self.extensions
    }

    /// Calls an extension's route handler (blocking: run it off the async workers).
    pub fn handle(
        ext: &LoadedExtension,
        platform: &Platform,
        accountability: Option<Accountability>,
        request: ExtRequest,
    ) -> FfiResponse {
        platform
            .metrics
            .extension_calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let services = ExtServices::new(platform, accountability);
        let ctx = services.context();
        let request = FfiRequest {
            method: request.method.into(),
            path: request.path.into(),
            query: request.query.into(),
            headers: request
                .headers
                .into_iter()
                .map(|(k, v)| Tuple2(RString::from(k), RString::from(v)))
                .collect::<RVec<_>>(),
            body: request.body.into(),
        };
        (ext.module.handle())(&request, &ctx)
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
        let ctx = services.context();
        (ext.module.run_schedule())(name.into(), &ctx)
            .into_result()
            .map_err(|e| format!("{}: {}", e.code, e.message))
    }
}

fn records_json(
    records: &Option<Vec<crate::storage::Record>>,
) -> abi_stable::std_types::ROption<RString> {
    records
        .as_ref()
        .map(|r| RString::from(serde_json::to_string(r).unwrap_or_else(|_| "[]".into())))
        .into()
}

impl EventSink for Registry {
    fn dispatch(&self, platform: &Platform, events: Vec<ItemEvent>) {
        let depth = HOOK_DEPTH.with(Cell::get);
        if depth >= MAX_HOOK_DEPTH {
            log::warn!(
                "item events not delivered: hooks nested {depth} deep (a hook's write keeps triggering hooks)"
            );
            return;
        }
        HOOK_DEPTH.with(|d| d.set(depth + 1));
        for event in events {
            let ffi = FfiItemEvent {
                event: event.kind.name().into(),
                collection: event.collection.as_str().into(),
                keys: serde_json::to_string(&event.keys)
                    .unwrap_or_default()
                    .into(),
                payload: event.payload.to_string().into(),
                before: records_json(&event.before),
                after: records_json(&event.after),
                accountability: ffi_accountability_opt(event.accountability.as_ref()),
            };
            for ext in &self.extensions {
                let services = ExtServices::new(platform, event.accountability.clone());
                let ctx = services.context();
                if let Err(e) = (ext.module.on_event())(&ffi, &ctx).into_result() {
                    log::warn!(
                        "[{}] hook failed on {} {} {:?}: {}",
                        ext.id,
                        event.kind.name(),
                        event.collection,
                        event.keys,
                        e.message
                    );
                }
            }
        }
        HOOK_DEPTH.with(|d| d.set(depth));
    }
}
