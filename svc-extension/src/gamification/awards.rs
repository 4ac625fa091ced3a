//! When points are awarded (SPEC point values; DECISIONS §7 triggers).
//! Every trigger runs in one transaction: the award, the counters it
//! changes and the achievement check commit together or not at all.

use host_sdk::{Context, Items, ItemsError, Query};
use serde_json::{json, Value};

use super::check::check_category;
use super::ledger::{anchor, Ledger};
use super::time::now_ms;

/// The point actions and their values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    RecordingCreate,
    RecordingPlay,
    RecordingComplete,
    CommentCreate,
    RecordingFeatured,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::RecordingCreate => "RECORDING_CREATE",
            Action::RecordingPlay => "RECORDING_PLAY",
            Action::RecordingComplete => "RECORDING_COMPLETE",
            Action::CommentCreate => "COMMENT_CREATE",
            Action::RecordingFeatured => "RECORDING_FEATURED",
        }
    }

    pub fn points(self) -> i64 {
        match self {
            Action::RecordingCreate => 50,
            Action::RecordingPlay => 10,
            Action::RecordingComplete => 5,
            Action::CommentCreate => 5,
            Action::RecordingFeatured => 100,
        }
    }
}

fn load(tx: &Context<'_>, user: &str) -> Result<Ledger, ItemsError> {
    let items = tx.as_admin();
    let anchor = anchor(&items)?;
    Ledger::load(&items, user, anchor, now_ms())
}

/// A play of `recording` (owned by `owner`) was just inserted in `tx`.
/// An authenticated caller who is not the owner counts one more play on
/// others' recordings, earns RECORDING_PLAY, and gets the `playback` check.
pub fn recording_played(
    tx: &Context<'_>,
    recording: &str,
    owner: Option<&str>,
    caller: Option<&str>,
) -> Result<(), ItemsError> {
    let Some(user) = caller.filter(|c| Some(*c) != owner) else {
        return Ok(());
    };
    let items = tx.as_admin();
    let mut ledger = load(tx, user)?;
    ledger.adjust(|s| s.playbacks_count += 1);
    ledger.award(
        &items,
        Action::RecordingPlay.name(),
        Action::RecordingPlay.points(),
        Some(recording),
    )?;
    check_category(&items, &mut ledger, "playback")?;
    ledger.save(&items)
}

/// A play went from not completed to completed in `tx`: its player counts
/// one more completed play, and an authenticated caller earns
/// RECORDING_COMPLETE and gets the `playback` check.
pub fn play_completed(
    tx: &Context<'_>,
    recording: &str,
    player: Option<&str>,
    caller: Option<&str>,
) -> Result<(), ItemsError> {
    let items = tx.as_admin();
    if let Some(player) = player.filter(|p| Some(*p) != caller) {
        // Only an existing row is adjusted: a user without one gets it,
        // computed from scratch, on their first award.
        let mut ledger = load(tx, player)?;
        if ledger.existed() {
            ledger.adjust(|s| s.completions_count += 1);
            ledger.save(&items)?;
        }
    }
    let Some(user) = caller else {
        return Ok(());
    };
    let mut ledger = load(tx, user)?;
    if player == Some(user) {
        ledger.adjust(|s| s.completions_count += 1);
    }
    ledger.award(
        &items,
        Action::RecordingComplete.name(),
        Action::RecordingComplete.points(),
        Some(recording),
    )?;
    check_category(&items, &mut ledger, "playback")?;
    ledger.save(&items)
}

/// Whether `user` already got `action` for `recording` (awards that happen
/// once per recording).
fn already_awarded(
    tx: &Context<'_>,
    user: &str,
    action: Action,
    recording: &str,
) -> Result<bool, ItemsError> {
    let n = tx.as_admin().count(
        "user_points",
        Some(json!({"_and": [
            {"recording_id": {"_eq": recording}},
            {"action": {"_eq": action.name()}},
            {"user_id": {"_eq": user}},
        ]})),
    )?;
    Ok(n > 0)
}

/// The published recordings of `user` (rule 3's `recordings_count`).
fn published_recordings(items: &Items<'_>, user: &str) -> Result<u64, ItemsError> {
    items.count(
        "recordings",
        Some(json!({"_and": [{"user_created": {"_eq": user}}, {"status": {"_eq": "published"}}]})),
    )
}

/// Recounts the published recordings of `user` into an existing stats row.
fn recount_recordings(tx: &Context<'_>, user: &str) -> Result<(), ItemsError> {
    let items = tx.as_admin();
    let mut ledger = load(tx, user)?;
    if !ledger.existed() {
        return Ok(());
    }
    ledger.stats.recordings_count = published_recordings(&items, user)?;
    ledger.save(&items)
}

/// A recording of `owner` became published, or featured: award once per
/// recording, recount, check `recordings`.
pub fn recording_promoted(
    tx: &Context<'_>,
    owner: &str,
    recording: &str,
    action: Action,
) -> Result<(), ItemsError> {
    if already_awarded(tx, owner, action, recording)? {
        return recount_recordings(tx, owner);
    }
    let items = tx.as_admin();
    let mut ledger = load(tx, owner)?;
    if ledger.existed() {
        ledger.stats.recordings_count = published_recordings(&items, owner)?;
    }
    ledger.award(&items, action.name(), action.points(), Some(recording))?;
    check_category(&items, &mut ledger, "recordings")?;
    ledger.save(&items)
}

/// Published-recording counts changed without a promotion (unpublished,
/// archived, deleted, owner changed).
pub fn recordings_changed(tx: &Context<'_>, owners: &[String]) -> Result<(), ItemsError> {
    for owner in owners {
        recount_recordings(tx, owner)?;
    }
    Ok(())
}

/// A comment on a recording was created by `user`.
pub fn comment_created(tx: &Context<'_>, user: &str) -> Result<(), ItemsError> {
    let items = tx.as_admin();
    let mut ledger = load(tx, user)?;
    ledger.adjust(|s| s.comments_count += 1);
    ledger.award(
        &items,
        Action::CommentCreate.name(),
        Action::CommentCreate.points(),
        None,
    )?;
    check_category(&items, &mut ledger, "social")?;
    ledger.save(&items)
}

/// A comment on a recording was deleted: recount its author's comments.
pub fn comment_deleted(tx: &Context<'_>, user: &str) -> Result<(), ItemsError> {
    let items = tx.as_admin();
    let mut ledger = load(tx, user)?;
    if !ledger.existed() {
        return Ok(());
    }
    ledger.stats.comments_count = items.count(
        "platform_comments",
        Some(json!({"_and": [{"user_created": {"_eq": user}}, {"collection": {"_eq": "recordings"}}]})),
    )?;
    ledger.save(&items)
}

/// The owner of a recording (`None`: no such recording or no owner).
pub fn owner_of(tx: &Context<'_>, recording: &str) -> Result<Option<String>, ItemsError> {
    let found: Option<Value> = tx.as_admin().read_one_with(
        "recordings",
        recording,
        &Query::new().fields(&["user_created"]),
    )?;
    Ok(found
        .as_ref()
        .and_then(|r| r.get("user_created"))
        .and_then(Value::as_str)
        .map(String::from))
}
