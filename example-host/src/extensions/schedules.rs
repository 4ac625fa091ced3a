//! The background runner of extension schedules: each period of each
//! schedule runs once across every host on the database, on whichever
//! host claims it first ([`super::claims`]).
//!
//! Periods are the same on every host: `Every(d)` periods start at the
//! multiples of `d` since the Unix epoch, cron periods at the expression's
//! times. At each start every host tries to claim the period; between
//! starts, each looks for a claim left unfinished past its lease (a host
//! died mid-run) and takes it over.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use super::claims::{Claimed, Claims};
use super::{LoadedExtension, Registry, When};
use crate::platform::Platform;

/// The start of the first period after `now`.
fn next_period(when: &When, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    match when {
        When::Every(d) => {
            let step = i64::try_from(d.as_millis()).ok()?.max(1);
            let now_ms = now.timestamp_millis();
            let next = (now_ms.div_euclid(step) + 1).checked_mul(step)?;
            DateTime::from_timestamp_millis(next)
        }
        When::Cron(schedule) => schedule.after(&now).next(),
    }
}

/// One schedule of one extension, as the runner sees it.
#[derive(Clone)]
struct Job {
    registry: Arc<Registry>,
    platform: Arc<Platform>,
    claims: Arc<Claims>,
    /// The copy of the extension the schedule belongs to: when a reload
    /// replaces it, its tasks end and the new copy's start.
    ext: Arc<LoadedExtension>,
    schedule: usize,
    /// Never two runs of the same schedule at once on this host.
    running: Arc<AtomicBool>,
}

impl Job {
    fn names(&self) -> (String, String) {
        (
            self.ext.id.clone(),
            self.ext.schedules[self.schedule].name.clone(),
        )
    }

    /// Whether its extension is still the mounted copy; logs the end
    /// when it is not.
    fn still_mounted(&self) -> bool {
        let mounted = self.registry.is_mounted(&self.ext);
        if !mounted {
            let (ext, name) = self.names();
            log::info!("[{ext}] schedule `{name}` of the replaced copy stopped");
        }
        mounted
    }

    /// Claims (blocking): the period starting at `period`, or, without
    /// one, a lapsed claim of another host.
    fn claim(&self, period: Option<DateTime<Utc>>) -> Option<Claimed> {
        let (ext, name) = self.names();
        let claimed = match period {
            Some(p) => self.claims.claim(&self.platform, &ext, &name, p),
            None => self.claims.take_over_lapsed(&self.platform, &ext, &name),
        };
        claimed.unwrap_or_else(|e| {
            log::warn!("[{ext}] schedule `{name}`: cannot claim a run: {e}");
            None
        })
    }

    /// Claims and, when this host won, runs, renewing the lease meanwhile.
    async fn claim_and_run(&self, period: Option<DateTime<Utc>>) {
        if self.running.swap(true, Ordering::SeqCst) {
            return;
        }
        let job = self.clone();
        let claimed = tokio::task::spawn_blocking(move || job.claim(period))
            .await
            .ok()
            .flatten();
        if let Some(claimed) = claimed {
            self.run(claimed).await;
        }
        self.running.store(false, Ordering::SeqCst);
    }

    async fn run(&self, claimed: Claimed) {
        let (ext, name) = self.names();
        let job = self.clone();
        let run = if claimed.taken_over {
            format!("{}, taken over", claimed.run)
        } else {
            claimed.run.clone()
        };
        let mut work = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            match job.registry.run_schedule(&job.platform, &ext, &name) {
                Ok(()) => log::info!(
                    "[{ext}] schedule `{name}` finished in {:.1?} ({run})",
                    started.elapsed()
                ),
                Err(e) => log::error!("[{ext}] schedule `{name}` failed: {e} ({run})"),
            }
        });
        let renew_every = self.claims.lease() / 3;
        loop {
            tokio::select! {
                _ = &mut work => break,
                _ = tokio::time::sleep(renew_every) => {
                    let job = self.clone();
                    let held = claimed.clone();
                    let renewed = tokio::task::spawn_blocking(move || {
                        job.claims.renew(&job.platform, &held)
                    })
                    .await;
                    if let Ok(Err(e)) = renewed {
                        log::warn!("schedule run {}: lease not renewed: {e}", claimed.run);
                    }
                }
            }
        }
        let job = self.clone();
        let finished =
            tokio::task::spawn_blocking(move || job.claims.finish(&job.platform, &claimed)).await;
        if let Ok(Err(e)) = finished {
            log::warn!("a schedule run could not be marked finished: {e}");
        }
    }
}

/// Starts the tasks of extensions' schedules; they stop when `shutdown`
/// flips to true, or when a reload replaces their extension.
#[derive(Clone)]
pub struct Scheduler {
    pub registry: Arc<Registry>,
    pub platform: Arc<Platform>,
    pub claims: Arc<Claims>,
    pub shutdown: watch::Receiver<bool>,
    /// Whether this host runs schedules (`--schedules`).
    pub enabled: bool,
}

impl Scheduler {
    /// One task per schedule of every mounted extension.
    pub fn spawn_all(&self) {
        if !self.enabled {
            log::info!(
                "schedules are off on this host (--schedules false): \
                 other hosts or `example-host schedule run` run them"
            );
        }
        for ext in self.registry.all().iter() {
            self.spawn_for(ext);
        }
    }

    /// One task per schedule of `ext` (none when schedules are off).
    pub fn spawn_for(&self, ext: &Arc<LoadedExtension>) {
        if !self.enabled {
            return;
        }
        for (si, schedule) in ext.schedules.iter().enumerate() {
            log::info!("[{}] schedule `{}` registered", ext.id, schedule.name);
            let job = Job {
                registry: self.registry.clone(),
                platform: self.platform.clone(),
                claims: self.claims.clone(),
                ext: ext.clone(),
                schedule: si,
                running: Arc::new(AtomicBool::new(false)),
            };
            let mut shutdown = self.shutdown.clone();
            tokio::spawn(async move {
                loop {
                    let when = &job.ext.schedules[si].when;
                    let Some(next) = next_period(when, Utc::now()) else {
                        return;
                    };
                    // Until the period starts, look for lapsed claims at
                    // every lease.
                    loop {
                        let left = (next - Utc::now()).to_std().unwrap_or(Duration::ZERO);
                        let wait = left.min(job.claims.lease());
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => {}
                            _ = shutdown.changed() => return,
                        }
                        if *shutdown.borrow() || !job.still_mounted() {
                            return;
                        }
                        if Utc::now() >= next {
                            break;
                        }
                        spawn_run(&job, None);
                    }
                    spawn_run(&job, Some(next));
                }
            });
        }
    }
}

/// Claims and runs in a task of its own, so that a long run never delays
/// the claims of the next periods (which a busy schedule skips).
fn spawn_run(job: &Job, period: Option<DateTime<Utc>>) {
    let job = job.clone();
    tokio::spawn(async move { job.claim_and_run(period).await });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_periods_start_at_multiples_of_their_length() {
        let when = When::Every(Duration::from_secs(10));
        let at = |ms| DateTime::from_timestamp_millis(ms).expect("time");
        assert_eq!(next_period(&when, at(1_000)), Some(at(10_000)));
        assert_eq!(next_period(&when, at(9_999)), Some(at(10_000)));
        // A period start itself is past: the next one follows.
        assert_eq!(next_period(&when, at(10_000)), Some(at(20_000)));
    }

    #[test]
    fn cron_periods_are_the_expressions_times() {
        let schedule: cron::Schedule = "0 */5 * * * *".parse().expect("cron");
        let when = When::Cron(Box::new(schedule));
        let now = DateTime::parse_from_rfc3339("2026-11-22T10:02:30Z")
            .expect("time")
            .with_timezone(&Utc);
        let next = next_period(&when, now).expect("next");
        assert_eq!(next.to_rfc3339(), "2026-11-22T10:05:00+00:00");
    }
}
