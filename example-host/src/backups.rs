//! `example-host backup` and `restore` (docs/operations.md, "Backups"):
//! the store copies the database; this says what it does, with progress on
//! long copies, and refuses a backup that a newer release migrated, as a
//! start would.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::migration_plan::OwnerPlan;
use crate::platform_schema;
use platform_store::storage::{self, BackupError, CopyProgress, Location};

/// At most one progress line this often.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// A progress reporter that logs pages copied / total now and then.
fn progress_log(what: &'static str) -> impl FnMut(CopyProgress) {
    let mut last = Instant::now();
    move |p: CopyProgress| {
        if last.elapsed() >= PROGRESS_EVERY {
            last = Instant::now();
            log::info!("{what}: {} of {} pages copied", p.copied, p.total);
        }
    }
}

fn explained(e: BackupError) -> String {
    match e {
        BackupError::Exists(path) => format!(
            "{} exists: pass --force to replace it; nothing was written",
            path.display()
        ),
        BackupError::Refused(why) => format!("the backup is refused: {why}"),
        BackupError::Unsupported { .. } | BackupError::InUse(_) => e.to_string(),
        _ => format!("{e}; nothing was replaced"),
    }
}

/// Backs the database at `location` up to `to`.
pub fn backup(location: &Location, to: &Path, force: bool, step_pages: u32) -> Result<(), String> {
    log::info!("backing up {location} to {}", to.display());
    let started = Instant::now();
    let copied = storage::backup(location, to, force, step_pages, &mut progress_log("backup"))
        .map_err(explained)?;
    log::info!(
        "backup written to {}: {} pages, {} bytes, in {:.1?}",
        to.display(),
        copied.pages,
        copied.bytes,
        started.elapsed()
    );
    Ok(())
}

/// Restores the backup `from` as the database at `location`.
pub fn restore(location: &Location, from: &Path, force: bool) -> Result<(), String> {
    log::info!("restoring {} as {location}", from.display());
    let started = Instant::now();
    let copied = storage::restore(
        from,
        location,
        force,
        &refuse_newer,
        &mut progress_log("restore"),
    )
    .map_err(explained)?;
    log::info!(
        "restored {} as {location}: {} pages, {} bytes, in {:.1?}; start the host on it",
        from.display(),
        copied.pages,
        copied.bytes,
        started.elapsed()
    );
    Ok(())
}

/// The platform's check at start: a backup with a platform migration this
/// release does not know is refused. An extension's are checked when the
/// extension loads, as at any start.
fn refuse_newer(recorded: &[(String, String)]) -> Result<(), String> {
    if !recorded
        .iter()
        .any(|(owner, _)| owner == platform_schema::OWNER)
    {
        return Err(format!(
            "it records no migration of `{}`",
            platform_schema::OWNER
        ));
    }
    OwnerPlan::of(
        platform_schema::OWNER,
        &platform_schema::migration_ids(),
        platform_schema::ONCE_STEPS,
        recorded,
    )
    .refuse_newer()
}
