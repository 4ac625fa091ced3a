//! Extensions linked into the host's process: mounted like loaded
//! libraries, called without the ABI. The `inprocess` feature links svc
//! this way (to measure what the ABI costs); the test kit mounts the
//! extension under test this way.

use std::sync::Arc;

use super::code::Code;
use super::services::ExtServices;
use super::{LoadedExtension, Registry, ScheduleDef, When};
use crate::permissions::MigrationGrants;
use crate::platform::Platform;

impl Registry {
    /// Mounts an extension linked into this process at `/{id}`: its
    /// migrations applied, its init run, its schedules registered.
    pub fn add_linked(
        &self,
        platform: &Platform,
        ext: Arc<host_sdk::Extension>,
    ) -> Result<(), String> {
        let id = ext.id().to_string();
        if self.get(&id).is_some() {
            return Err(format!("extension `{id}` is already mounted"));
        }
        let requires: Vec<super::order::Requirement> = ext
            .requirements()
            .iter()
            .map(|(id, versions)| super::order::Requirement {
                id: id.clone(),
                versions: versions.clone(),
            })
            .collect();
        super::order::check_mounted(&requires, &self.all())?;
        for (mid, steps) in ext.migrations() {
            match platform.store.migrate(&id, mid, steps, &MigrationGrants) {
                Ok(true) => log::info!("[{id}] applied migration {mid}"),
                Ok(false) => {}
                Err(e) => return Err(format!("migration {mid} failed: {e}")),
            }
        }
        ext.init_direct(&ExtServices::new(platform, None))
            .map_err(|e| format!("init failed: {e}"))?;
        let schedules = ext
            .schedule_list()
            .into_iter()
            .filter_map(|(name, when)| {
                let when = match when {
                    host_sdk::Schedule::Every(d) => {
                        When::Every(d.max(std::time::Duration::from_secs(1)))
                    }
                    host_sdk::Schedule::Cron(expr) => match expr.parse::<cron::Schedule>() {
                        Ok(s) => When::Cron(Box::new(s)),
                        Err(e) => {
                            log::error!(
                                "[{id}] schedule `{name}` ignored: invalid cron `{expr}`: {e}"
                            );
                            return None;
                        }
                    },
                };
                Some(ScheduleDef { name, when })
            })
            .collect();
        log::info!(
            "linked extension `{id}` ({} {}) mounted at /{id}, called in-process",
            ext.name(),
            ext.version()
        );
        self.push(LoadedExtension {
            interest: super::Interest::from_list(ext.event_collections()),
            before_commit: super::Interest::from_list(ext.before_commit_collections()),
            before_write: super::Interest::from_list(ext.before_write_collections()),
            hook_fields: ext.hook_fields().clone(),
            id,
            name: ext.name().to_string(),
            version: ext.version().to_string(),
            sdk_version: host_sdk::SDK_VERSION.to_string(),
            abi_version: host_sdk::ABI_VERSION.to_string(),
            path: std::path::PathBuf::from("(linked into the host)"),
            openapi: serde_json::json!({ "paths": ext.router().openapi_paths() }),
            schedules,
            code: Code::Linked(ext),
        });
        Ok(())
    }

    /// Mounts the svc extension linked into this host.
    #[cfg(feature = "inprocess")]
    pub fn add_builtin_svc(&self, platform: &Platform) -> Result<(), String> {
        self.add_linked(platform, Arc::new(svc_extension::extension()))
    }
}
