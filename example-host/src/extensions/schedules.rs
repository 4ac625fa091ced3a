//! The background runner of extension schedules.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use tokio::sync::watch;

use super::{Registry, When};
use crate::items::Platform;

fn next_delay(when: &When) -> Option<Duration> {
    match when {
        When::Every(d) => Some(*d),
        When::Cron(schedule) => {
            let next = schedule.upcoming(Utc).next()?;
            (next - Utc::now()).to_std().ok().or(Some(Duration::ZERO))
        }
    }
}

/// Starts one task per schedule; they stop when `shutdown` flips to true.
pub fn spawn_all(
    registry: Arc<Registry>,
    platform: Arc<Platform>,
    shutdown: watch::Receiver<bool>,
) {
    for (ei, ext) in registry.all().iter().enumerate() {
        for (si, schedule) in ext.schedules.iter().enumerate() {
            let registry = registry.clone();
            let platform = platform.clone();
            let mut shutdown = shutdown.clone();
            let running = Arc::new(AtomicBool::new(false));
            log::info!("[{}] schedule `{}` registered", ext.id, schedule.name);
            tokio::spawn(async move {
                loop {
                    let Some(delay) = next_delay(&registry.all()[ei].schedules[si].when) else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = shutdown.changed() => return,
                    }
                    if *shutdown.borrow() {
                        return;
                    }
                    // Never two runs of the same schedule at once.
                    if running.swap(true, Ordering::SeqCst) {
                        continue;
                    }
                    let registry = registry.clone();
                    let platform = platform.clone();
                    let running = running.clone();
                    tokio::task::spawn_blocking(move || {
                        let ext = &registry.all()[ei];
                        let name = &ext.schedules[si].name;
                        let started = Instant::now();
                        match registry.run_schedule(&platform, &ext.id, name) {
                            Ok(()) => log::info!(
                                "[{}] schedule `{name}` finished in {:.1?}",
                                ext.id,
                                started.elapsed()
                            ),
                            Err(e) => log::error!("[{}] schedule `{name}` failed: {e}", ext.id),
                        }
                        running.store(false, Ordering::SeqCst);
                    });
                }
            });
        }
    }
}
