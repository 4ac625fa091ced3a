//! Every value that crosses the host ⇄ extension boundary.
//!
//! Only `#[repr(C)]` types deriving `StableAbi` live here, so abi_stable can
//! compare their layouts when a library is loaded. Structured data (queries,
//! records, payloads) crosses as JSON text: the schema of a record is the
//! platform's business, not the ABI's, so collections can evolve without
//! touching this file.
//!
//! This file must stay self-contained (it only names `abi_stable` and items
//! defined here): the ABI-compatibility fixtures include it verbatim to build
//! an extension against an older minor version of the contract.

// `#[sabi_trait]` expands to impls inside a const block.
#![allow(non_local_definitions)]

use abi_stable::{
    sabi_trait,
    sabi_types::{RMut, RRef},
    std_types::{RArc, ROption, RResult, RStr, RString, RVec, Tuple2},
    StableAbi,
};

/// Who and what an extension is. Returned by the `manifest` entry.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct FfiManifest {
    /// Mount point and log target: the extension is served under `/{id}`.
    pub id: RString,
    /// Human-readable name.
    pub name: RString,
    /// The extension's own version.
    pub version: RString,
    /// The `host-sdk` version the extension was built against (semver).
    pub sdk_version: RString,
}

/// An HTTP request routed to an extension, with the mount prefix removed.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct FfiRequest {
    /// Upper-case method, e.g. `GET`.
    pub method: RString,
    /// Path below the mount point, always starting with `/`.
    pub path: RString,
    /// Raw query string without the leading `?` (percent-encoded).
    pub query: RString,
    /// Header names are lower-case.
    pub headers: RVec<Tuple2<RString, RString>>,
    /// The body's bytes (empty when there is none).
    pub body: RVec<u8>,
}

/// An extension's answer to a request.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct FfiResponse {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` of the body.
    pub content_type: RString,
    /// The body's bytes, handed over to the host.
    pub body: RVec<u8>,
}

/// An extension's answer whose body is shared, not copied (SDK 1.4): the
/// host holds a reference to the bytes until they are written to the
/// socket, so an answer kept by the extension is served without a copy.
/// Dropping the last reference frees the bytes with the library's own
/// allocator.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct FfiSharedResponse {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` of the body.
    pub content_type: RString,
    /// The body's bytes, shared with the extension.
    pub body: RArc<RVec<u8>>,
}

/// The authenticated caller of a request, as the platform knows it.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct FfiAccountability {
    /// The user's id.
    pub user: RString,
    /// The user's role id, if any.
    pub role: ROption<RString>,
    /// Whether one of the user's policies grants admin access.
    pub admin: bool,
}

/// Whose rights an items operation runs with.
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub enum FfiAccess {
    /// The caller's accountability: the platform's permissions apply
    /// (an anonymous caller gets the `Public` policy).
    Caller,
    /// Full access, bypassing permissions.
    Admin,
}

/// A failure reported by the host's services.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct FfiError {
    /// Machine-readable code, e.g. `FORBIDDEN`, `RECORD_NOT_UNIQUE`.
    pub code: RString,
    /// What went wrong, for people.
    pub message: RString,
}

/// An item event (`items.create`, `items.update`, `items.delete`): handed to
/// `on_event` after the write that caused it has committed, and (SDK 1.5) to
/// `before_commit` inside the writing transaction, before its commit.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct FfiItemEvent {
    /// `items.create`, `items.update` or `items.delete`.
    pub event: RString,
    /// The collection written.
    pub collection: RString,
    /// JSON array of the primary keys written.
    pub keys: RString,
    /// JSON of the payload as given to the write.
    pub payload: RString,
    /// JSON array of the records before the write (updates and deletes).
    pub before: ROption<RString>,
    /// JSON array of the records after the write (creates and updates).
    pub after: ROption<RString>,
    /// Who wrote; `None` for anonymous callers and the host itself.
    pub accountability: ROption<FfiAccountability>,
}

/// Another extension one needs loaded before it (SDK 1.9): its id and the
/// versions of it that will do, as a semver requirement (`>=0.1, <2`).
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct FfiRequirement {
    /// The id of the extension required.
    pub id: RString,
    /// The semver requirement its version must meet.
    pub versions: RString,
}

/// The fields an extension's item hooks read of one collection's records
/// (1.14).
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct FfiHookFields {
    /// The collection.
    pub collection: RString,
    /// The fields read (the primary key always comes too).
    pub fields: RVec<RString>,
}

/// Which item events an extension's hooks want (SDK 1.2).
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct FfiEventInterest {
    /// Every collection's events.
    pub all: bool,
    /// Otherwise, these collections' events (possibly none).
    pub collections: RVec<RString>,
}

/// What a route accepts as a request body (SDK 1.6): the host reads no
/// more than this and checks the nesting before the extension is called,
/// so an oversized or too-deep body is refused before anything parses it.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub struct FfiBodyRule {
    /// The largest body in bytes; `u64::MAX`: the host's own limit.
    pub max_bytes: u64,
    /// The deepest nesting of JSON arrays and objects; `u32::MAX`: unchecked.
    pub max_depth: u32,
}

/// When a schedule runs.
#[repr(C, u8)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub enum FfiScheduleSpec {
    /// Every `seconds` seconds, first run one interval after start.
    Every {
        /// The period.
        seconds: u64,
    },
    /// A cron expression with seconds: `sec min hour day month weekday`.
    Cron {
        /// The expression.
        expr: RString,
    },
}

/// A background job an extension registers.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct FfiSchedule {
    /// Unique within the extension; what `schedule run` names.
    pub name: RString,
    /// When it runs.
    pub spec: FfiScheduleSpec,
}

/// One schema migration of an extension: an id, unique and ordered within
/// the extension, and the JSON list of its steps (see `host_sdk::schema`).
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct FfiMigration {
    /// Unique within the extension; migrations apply in the order given.
    pub id: RString,
    /// JSON array of `host_sdk::schema::Step`.
    pub steps: RString,
}

/// The host's log sink, handed to an extension at init so that its `log`
/// lines come out in the host's log.
#[sabi_trait]
pub trait HostLogger: Clone + Send + Sync + 'static {
    /// `level` is `log::Level as u8` (1 = error … 5 = trace).
    #[sabi(last_prefix_field)]
    fn log(&self, level: u8, target: RStr<'_>, message: RStr<'_>);
}

/// What the host tells an extension about the platform at large (SDK 1.3),
/// handed over once after `init` and valid for the life of the library.
#[sabi_trait]
pub trait HostRuntime: Send + Sync + 'static {
    /// A number that changes whenever anything committed a change to the
    /// stored data (items, schema, permissions), from this process or
    /// another. Equal numbers mean nothing changed in between.
    #[sabi(last_prefix_field)]
    fn data_version(&self) -> u64;
}

/// The platform's item services, as seen by one call of an extension.
///
/// Queries, records and payloads are JSON text. Every operation names the
/// access it runs with. An object handed to an extension is valid only for
/// the duration of the call it was handed to.
#[sabi_trait]
pub trait HostServices: Sync {
    /// JSON array of records matching the query.
    fn read_by_query(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        query: RStr<'_>,
    ) -> RResult<RString, FfiError>;

    /// JSON record, or `null` when no item has that key.
    fn read_one(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        key: RStr<'_>,
        query: RStr<'_>,
    ) -> RResult<RString, FfiError>;

    /// Creates one item from a JSON object; returns its key as JSON.
    fn create_one(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        data: RStr<'_>,
    ) -> RResult<RString, FfiError>;

    /// Creates items from a JSON array, atomically; returns the keys as a JSON array.
    fn create_many(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        data: RStr<'_>,
    ) -> RResult<RString, FfiError>;

    /// Applies a JSON object of changes to one item; returns its key as JSON.
    fn update_one(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        key: RStr<'_>,
        data: RStr<'_>,
    ) -> RResult<RString, FfiError>;

    /// Deletes one item; returns its key as JSON.
    fn delete_one(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        key: RStr<'_>,
    ) -> RResult<RString, FfiError>;

    /// JSON array of aggregate rows for a query carrying `aggregate` and
    /// optionally `groupBy`.
    fn aggregate(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        query: RStr<'_>,
    ) -> RResult<RString, FfiError>;

    /// Runs `body` in one transaction: committed when it returns `ROk`,
    /// rolled back otherwise. Nested calls join the outer transaction.
    #[sabi(last_prefix_field)]
    fn transaction(&self, body: TransactionBody_TO<'_, RMut<'_, ()>>) -> RResult<(), FfiError>;
}

/// The work of one transaction, called back by the host with services bound
/// to the open transaction. The host may call `run` again after rolling
/// back a run the database asked to repeat (SDK 1.7); a body that may run
/// only once answers [`FfiError::run_once_refusal`] and does nothing.
#[sabi_trait]
pub trait TransactionBody {
    /// Does the transaction's work with `tx`, services bound to the open
    /// transaction; an error rolls it back.
    #[sabi(last_prefix_field)]
    fn run(&mut self, tx: HostServices_TO<'_, RRef<'_, ()>>) -> RResult<(), FfiError>;
}

/// What every SDK's one-shot transaction body answers to a second run
/// (SDKs before 1.7: every body).
const RUN_ONCE_REFUSAL: &str = "transaction body run twice";

impl FfiError {
    /// A transaction body's answer to a second run when it may run only
    /// once.
    pub fn run_once_refusal() -> Self {
        FfiError {
            code: "INTERNAL".into(),
            message: RUN_ONCE_REFUSAL.into(),
        }
    }

    /// Whether this is [`FfiError::run_once_refusal`].
    pub fn is_run_once_refusal(&self) -> bool {
        self.code.as_str() == "INTERNAL" && self.message.as_str() == RUN_ONCE_REFUSAL
    }
}

/// What every call into an extension receives besides its arguments.
#[repr(C)]
#[derive(StableAbi)]
pub struct FfiContext<'a> {
    /// The caller, or `None` when anonymous.
    pub accountability: ROption<FfiAccountability>,
    /// The host's item services for this call.
    pub services: HostServices_TO<'a, RRef<'a, ()>>,
}

/// What the `init` entry receives once, after the extension's migrations ran.
#[repr(C)]
#[derive(StableAbi)]
pub struct FfiInit<'a> {
    /// Where the extension's `log` lines go; kept for the library's life.
    pub logger: HostLogger_TO<RArc<()>>,
    /// The most verbose level the host will print (`log::LevelFilter as u8`).
    pub max_log_level: u8,
    /// Admin-capable services, valid during the call only.
    pub services: HostServices_TO<'a, RRef<'a, ()>>,
}
