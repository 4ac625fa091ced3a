#![warn(missing_docs)]
//! # host-sdk
//!
//! The contract between the platform host and its extensions.
//!
//! * [`abi`]: the stable binary interface (on `abi_stable`): the root module
//!   every extension library exports, the request context and the host's
//!   services as FFI-safe trait objects. Hosts use it directly.
//! * Everything else is the safe facade extension authors write against:
//!   a [`Router`], typed [`Request`]/[`Response`]/[`ApiError`], the
//!   [`Items`] client, [`schema`] migrations, item-event hooks and schedules.
//!   Extension code needs no `unsafe` and sees no FFI type.
//!
//! ```no_run
//! use host_sdk::prelude::*;
//!
//! fn extension() -> Extension {
//!     Extension::new("hello", "Hello", env!("CARGO_PKG_VERSION"))
//!         .routes(|r| {
//!             r.get("/greet/:name", |req, _ctx| {
//!                 Ok(Response::ok(&serde_json::json!({"hello": req.path_param("name")})))
//!             });
//!         })
//! }
//!
//! host_sdk::export_extension!(extension);
//! ```

#[doc(hidden)]
pub mod abi;
#[cfg(feature = "allocator")]
pub mod allocator;
mod cache;
mod context;
#[doc(hidden)]
pub mod direct;
mod entry;
mod error;
mod events;
mod extension;
mod hooks;
mod http;
mod items;
pub mod json;
mod logging;
mod memo;
pub mod openapi;
pub mod raw;
mod router;
pub mod schema;

pub use context::{Accountability, Context};
pub use error::{ApiError, BoxError, ItemsError};
pub use events::{EventKind, ItemEvent, PendingWrite, RawItemEvent};
pub use extension::{Collections, Extension, Schedule};
pub use http::{Request, Response};
#[doc(hidden)]
pub use http::{SharedBody, SharedResponse};
pub use items::{Access, Items, Query};
pub use memo::{Memo, MemoMap};
#[doc(hidden)]
pub use router::BodyRule;
pub use router::{Route, Router};

/// The `schemars` the SDK builds schemas with; `#[derive(JsonSchema)]`
/// needs it as a dependency of the extension's crate too.
pub use schemars;
/// Derive it on the types routes document ([`Route::body_type`],
/// [`Route::response_type`], [`Route::query_type`]).
pub use schemars::JsonSchema;

/// The SDK version an extension is built against (this crate's version);
/// travels in its manifest, for people to read. The facade's own additions
/// bump it; the host does not compare its minor.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The version of the boundary itself (`abi/`): what a library's header
/// carries and the host's loader compares. A library whose ABI minor is
/// newer than the host's is refused (it may use entries the host has never
/// heard of); an older one is served. It changes only when `abi/` does: a
/// minor for fields appended to the root module, a major for a break
/// (`tests/abi_version.rs` fails when `abi/` changes and it does not).
/// Same major as [`SDK_VERSION`], and never a newer minor.
pub const ABI_VERSION: &str = "1.14.0";

/// Everything an extension module usually needs.
pub mod prelude {
    pub use crate::{
        schema, Access, Accountability, ApiError, BoxError, Collections, Context, EventKind,
        Extension, ItemEvent, Items, ItemsError, Memo, PendingWrite, Query, RawItemEvent, Request,
        Response, Router, Schedule,
    };
}

/// Exports the extension built by `$build` (a `fn() -> Extension`) as the
/// library's root module. Use it once, at the root of a `cdylib` crate.
///
/// The crate must also depend on `abi_stable` (the export attribute names it).
#[macro_export]
macro_rules! export_extension {
    ($build:path) => {
        #[::abi_stable::export_root_module]
        pub fn __host_sdk_root_module() -> $crate::abi::ExtensionModuleRef {
            $crate::__private::root_module($build)
        }
    };
}

#[doc(hidden)]
pub mod __private {
    pub use crate::entry::root_module;
}
