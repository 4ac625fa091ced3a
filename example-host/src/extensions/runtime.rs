//! The runtime handed to each extension (SDK 1.3): the data version its
//! cached routes key their answers on.

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RArc;
use host_sdk::abi::{HostRuntime, HostRuntime_TO};

use super::code::Code;
use super::{LoadedExtension, Registry};
use platform_store::storage::Store;

struct StoreRuntime {
    store: Arc<dyn Store>,
}

impl HostRuntime for StoreRuntime {
    fn data_version(&self) -> u64 {
        self.store.data_version()
    }
}

impl Registry {
    /// Hands every extension the runtime; libraries of SDK < 1.3 have no
    /// entry for it and keep no answers.
    pub fn attach_runtime(&self, store: &Arc<dyn Store>) {
        for ext in self.all().iter() {
            attach_runtime(ext, store);
        }
    }
}

/// Hands one extension the runtime.
pub(super) fn attach_runtime(ext: &LoadedExtension, store: &Arc<dyn Store>) {
    match &ext.code {
        Code::Library(module) => match module.attach_runtime() {
            Some(attach) => {
                let runtime = StoreRuntime {
                    store: store.clone(),
                };
                attach(HostRuntime_TO::from_ptr(RArc::new(runtime), TD_Opaque));
            }
            None => log::info!(
                "[{}] built on host-sdk {}: its routes' answers are not cached",
                ext.id,
                ext.sdk_version
            ),
        },
        Code::Linked(linked) => {
            let store = store.clone();
            linked.attach_data_version(move || store.data_version());
        }
    }
}
