//! Extensions linked into the host (the `inprocess` feature): mounted like
//! loaded libraries, called without the ABI.

use once_cell::sync::OnceCell;

use super::code::Code;
use super::services::ExtServices;
use super::{LoadedExtension, Registry, ScheduleDef, When};
use crate::items::Platform;

static SVC: OnceCell<host_sdk::Extension> = OnceCell::new();

impl Registry {
    /// Mounts the svc extension linked into this host.
    pub fn add_builtin_svc(&mut self, platform: &Platform) -> Result<(), String> {
        let ext = SVC.get_or_init(svc_extension::extension);
        let id = ext.id().to_string();
        if self.get(&id).is_some() {
            return Err(format!(
                "extension `{id}` is already mounted (from a library)"
            ));
        }
        for (mid, steps) in ext.migrations() {
            match platform.store.migrate(&id, mid, steps) {
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
        self.extensions.push(LoadedExtension {
            interest: super::Interest::from_list(ext.event_collections()),
            before_commit: super::Interest::from_list(ext.before_commit_collections()),
            id,
            name: ext.name().to_string(),
            version: ext.version().to_string(),
            sdk_version: host_sdk::SDK_VERSION.to_string(),
            path: std::path::PathBuf::from("(linked into the host)"),
            code: Code::Linked(ext),
            schedules,
            openapi: serde_json::json!({ "paths": ext.router().openapi_paths() }),
        });
        Ok(())
    }
}
