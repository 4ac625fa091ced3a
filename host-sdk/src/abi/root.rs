//! The root module every extension library exports.

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    sabi_types::VersionStrings,
    std_types::{RArc, ROption, RResult, RStr, RString, RVec},
    StableAbi,
};

use super::types::{
    FfiBodyRule, FfiContext, FfiError, FfiEventInterest, FfiHookFields, FfiInit, FfiItemEvent,
    FfiManifest, FfiMigration, FfiRequest, FfiRequirement, FfiResponse, FfiSchedule,
    FfiSharedResponse, HostRuntime_TO,
};

/// The extension's entry points.
///
/// A prefix type: a later minor version of the SDK may append fields after
/// the last one, and the host still loads extensions built against an
/// earlier minor version (their missing fields read as `None`). Fields are
/// never removed, reordered or retyped within a major version.
///
/// Every entry catches panics on the extension's side: no unwinding ever
/// crosses the boundary.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = ExtensionModuleRef)))]
#[sabi(missing_field(option))]
pub struct ExtensionModule {
    /// Who the extension is.
    pub manifest: extern "C" fn() -> FfiManifest,

    /// Schema migrations, applied by the host in order before `init`.
    pub migrations: extern "C" fn() -> RVec<FfiMigration>,

    /// Called once after migrations; receives the host's logger and services.
    pub init: extern "C" fn(init: &FfiInit<'_>) -> RResult<(), RString>,

    /// Handles one HTTP request routed to the extension's mount.
    pub handle: extern "C" fn(request: &FfiRequest, ctx: &FfiContext<'_>) -> FfiResponse,

    /// Receives every item event after the write that caused it committed.
    /// An error is logged by the host; it never fails the write.
    pub on_event:
        extern "C" fn(event: &FfiItemEvent, ctx: &FfiContext<'_>) -> RResult<(), FfiError>,

    /// The background jobs the extension registers.
    pub schedules: extern "C" fn() -> RVec<FfiSchedule>,

    /// Runs one registered job by name, with admin services.
    #[sabi(last_prefix_field)]
    pub run_schedule: extern "C" fn(name: RStr<'_>, ctx: &FfiContext<'_>) -> RResult<(), FfiError>,

    // ---- 1.1 ----
    /// The extension's part of the platform's OpenAPI document: a JSON object
    /// `{"paths": {...}}` with paths relative to the mount point.
    pub openapi: extern "C" fn() -> RString,

    // ---- 1.2 ----
    /// The item events the extension's hooks want. The host builds no
    /// event (and reads no before/after records) for a collection nobody
    /// wants. Extensions of earlier minor versions lack it: they get every
    /// event.
    pub event_interest: extern "C" fn() -> FfiEventInterest,

    // ---- 1.3 ----
    /// Hands the extension the host's runtime (data version), once, after
    /// `init`. Hosts of earlier minor versions never call it; the SDK then
    /// keeps no answers of cached routes.
    pub attach_runtime: extern "C" fn(runtime: HostRuntime_TO<RArc<()>>),

    // ---- 1.4 ----
    /// `handle`, answering with a shared body: what a host of 1.4 or later
    /// calls when the library has it. `handle` stays for earlier hosts.
    pub handle_shared:
        extern "C" fn(request: &FfiRequest, ctx: &FfiContext<'_>) -> FfiSharedResponse,

    // ---- 1.5 ----
    /// The collections whose writes the extension's in-transaction hooks
    /// watch. Libraries of earlier minor versions lack it, and with it
    /// `before_commit`: the host then runs no hook of theirs inside a write.
    pub before_commit_interest: extern "C" fn() -> FfiEventInterest,

    /// Runs the in-transaction hooks on one write, inside the writing
    /// transaction and before its commit: `ctx`'s services are bound to that
    /// transaction. An error refuses the write: the host rolls the whole
    /// transaction back and the writer gets the error.
    pub before_commit:
        extern "C" fn(event: &FfiItemEvent, ctx: &FfiContext<'_>) -> RResult<(), FfiError>,

    // ---- 1.6 ----
    /// What the route a request would reach accepts as a body, asked by the
    /// host before it reads the body (`path` below the mount). Libraries of
    /// earlier minor versions lack it: their routes take any body up to
    /// the host's limit.
    pub body_rule: extern "C" fn(method: RStr<'_>, path: RStr<'_>) -> FfiBodyRule,

    // ---- 1.9 ----
    /// The collections whose writes the extension's before-write hooks
    /// watch. Libraries of earlier minor versions lack it, and with it
    /// `before_write`: the host then runs no hook of theirs before a write.
    pub before_write_interest: extern "C" fn() -> FfiEventInterest,

    /// Runs the before-write hooks on one write about to be made, inside
    /// the writing transaction, before the platform's reference rules and
    /// the write: `write` is an item event without `before` and `after`
    /// (`keys` empty for a create), and `ctx`'s services are bound to that
    /// transaction. `RSome(payload)` is the payload the hooks changed it
    /// to (a JSON object, for a create or an update); `RNone`, unchanged.
    /// An error refuses the write: the host rolls the whole transaction
    /// back and the writer gets the error.
    pub before_write: extern "C" fn(
        write: &FfiItemEvent,
        ctx: &FfiContext<'_>,
    ) -> RResult<ROption<RString>, FfiError>,

    /// The extensions this one needs loaded first, with the versions of
    /// each that will do. The host loads libraries in an order that puts
    /// each after what it requires, and refuses one whose requirement is
    /// missing or of another version. Libraries of earlier minor versions
    /// lack it: they require nothing.
    pub requires: extern "C" fn() -> RVec<FfiRequirement>,

    // ---- 1.14 ----
    /// The fields the extension's item hooks (in-transaction and
    /// after-commit) read of some collections' records: the host may pass
    /// those collections' payloads and records with only these fields and
    /// the primary key. A collection not named here gets whole records, as
    /// do libraries of earlier minor versions, which lack it.
    pub hook_fields: extern "C" fn() -> RVec<FfiHookFields>,
}

impl RootModule for ExtensionModuleRef {
    declare_root_module_statics! {ExtensionModuleRef}
    const BASE_NAME: &'static str = "extension";
    const NAME: &'static str = "extension";
    // The boundary's version, not the crate's: a facade-only release does
    // not make its libraries look newer to older hosts.
    const VERSION_STRINGS: VersionStrings = VersionStrings::new(crate::ABI_VERSION);
}
