//! The binary contract between the host and an extension library.
//!
//! Extension authors never touch this module: the facade at the crate root
//! wraps it. Hosts use it to load libraries and to implement the services.

mod root;
mod types;

pub use root::{ExtensionModule, ExtensionModuleRef};
pub use types::*;

/// Re-exported so that hosts and the SDK's own macros use the exact
/// `abi_stable` version the contract was built with.
pub use abi_stable;
