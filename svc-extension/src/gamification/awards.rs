//! When points are awarded (docs/service-api.md "Points"; docs/decisions.md §7
//! triggers), and how the stats rows follow the writes that change them.
//! Everything here runs inside the transaction of the write that caused it:
//! the write, the award, the counters it changes and the achievement check
//! commit together or not at all.

use host_sdk::{Context, Items, ItemsError, Query};
use serde_json::{json, Value};

use super::check::check_category;
use super::facts::{self, PointAction};
use super::ledger::{anchor, stored_row, Ledger};
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

/// Changes the stored stats row of `user`, when there is one: a user
/// without a row gets it, computed from scratch, at their first award.
pub fn adjust_existing(
    tx: &Context<'_>,
    user: &str,
    change: impl FnOnce(&Items<'_>, &mut Ledger) -> Result<(), ItemsError>,
) -> Result<(), ItemsError> {
    let items = tx.as_admin();
    let anchor = anchor(&items)?;
    let Some(mut ledger) = Ledger::load_existing(&items, user, anchor, now_ms())? else {
        return Ok(());
    };
    change(&items, &mut ledger)?;
    ledger.save(&items)
}

/// Rule 3 from scratch into the stored row of `user`, when there is one:
/// after writes whose effect on the counts is not a simple step (a
/// recording or play changing owner, a recording deleted, a stats row
/// written by hand).
pub fn refresh(tx: &Context<'_>, user: &str) -> Result<(), ItemsError> {
    let items = tx.as_admin();
    let Some(row) = stored_row(&items, user)? else {
        return Ok(());
    };
    let anchor = anchor(&items)?;
    let stats = facts::compute(&items, &[user.to_string()], anchor)?
        .remove(user)
        .unwrap_or_default();
    Ledger::computed(user, Some(row.id), stats, anchor, now_ms()).save(&items)
}

/// A play of `recording` (owned by `owner`) was just inserted in `tx` (its
/// hook already counted it). An authenticated caller who is not the owner
/// earns RECORDING_PLAY and gets the `playback` check.
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
    ledger.award(
        &items,
        Action::RecordingPlay.name(),
        Action::RecordingPlay.points(),
        Some(recording),
    )?;
    check_category(&items, &mut ledger, "playback")?;
    ledger.save(&items)
}

/// A play went from not completed to completed in `tx` (its hook already
/// counted it for its player): an authenticated caller earns
/// RECORDING_COMPLETE and gets the `playback` check.
pub fn play_completed(
    tx: &Context<'_>,
    recording: &str,
    caller: Option<&str>,
) -> Result<(), ItemsError> {
    let Some(user) = caller else {
        return Ok(());
    };
    let items = tx.as_admin();
    let mut ledger = load(tx, user)?;
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

/// A recording of `owner` became published (`newly_published`: one more
/// published recording its stats row does not count yet), or featured:
/// the count follows by one (an award never recounts: it costs the same
/// whatever the owner's history), and the action is awarded once per
/// recording with the `recordings` check.
pub fn recording_promoted(
    tx: &Context<'_>,
    owner: &str,
    recording: &str,
    action: Action,
    newly_published: bool,
) -> Result<(), ItemsError> {
    if already_awarded(tx, owner, action, recording)? {
        if !newly_published {
            return Ok(());
        }
        return adjust_existing(tx, owner, |_, ledger| {
            ledger.stats.recordings_count += 1;
            Ok(())
        });
    }
    let items = tx.as_admin();
    let mut ledger = load(tx, owner)?;
    if newly_published {
        ledger.adjust(|s| s.recordings_count += 1);
    }
    ledger.award(&items, action.name(), action.points(), Some(recording))?;
    check_category(&items, &mut ledger, "recordings")?;
    ledger.save(&items)
}

/// A published recording of `owner` stopped being published (archived, or
/// back to draft): one fewer in the stats row.
pub fn recording_unpublished(tx: &Context<'_>, owner: &str) -> Result<(), ItemsError> {
    adjust_existing(tx, owner, |_, ledger| {
        ledger.stats.recordings_count = ledger.stats.recordings_count.saturating_sub(1);
        Ok(())
    })
}

/// A comment on a recording was created by `user`: it counts, and when its
/// `item` is an existing recording it earns COMMENT_CREATE and the
/// `social` check.
pub fn comment_created(
    tx: &Context<'_>,
    user: &str,
    on_existing_recording: bool,
) -> Result<(), ItemsError> {
    if !on_existing_recording {
        return adjust_existing(tx, user, |_, ledger| {
            ledger.stats.comments_count += 1;
            Ok(())
        });
    }
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

/// Comments on recordings changed otherwise (deleted, moved, another
/// author): recount the author's.
pub fn recount_comments(tx: &Context<'_>, user: &str) -> Result<(), ItemsError> {
    adjust_existing(tx, user, |items, ledger| {
        ledger.stats.comments_count = items.count(
            "platform_comments",
            Some(json!({"_and": [{"user_created": {"_eq": user}}, {"collection": {"_eq": "recordings"}}]})),
        )?;
        Ok(())
    })
}

/// Unlocked achievements of `user` changed through a write of someone
/// else's: recount them.
pub fn recount_achievements(tx: &Context<'_>, user: &str) -> Result<(), ItemsError> {
    adjust_existing(tx, user, |items, ledger| {
        ledger.stats.achievements_count = items.count(
            "user_achievements",
            Some(
                json!({"_and": [{"user_id": {"_eq": user}}, {"date_unlocked": {"_nnull": true}}]}),
            ),
        )?;
        Ok(())
    })
}

/// A point action written, changed or deleted by anyone but the ledger (an
/// import, an administrator, another extension): the stats row of its
/// user follows, so the next award counts it as rule 3 says.
pub fn point_written(
    tx: &Context<'_>,
    before: Option<PointAction<'_>>,
    after: Option<PointAction<'_>>,
) -> Result<(), ItemsError> {
    for (point, sign) in [(before, -1), (after, 1)] {
        if let Some(point) = point {
            adjust_existing(tx, point.user, |_, ledger| {
                point.add_to(&mut ledger.stats, ledger.anchor, sign);
                Ok(())
            })?;
        }
    }
    Ok(())
}

/// Whether a recording with this key exists.
pub fn recording_exists(tx: &Context<'_>, key: &str) -> Result<bool, ItemsError> {
    let found: Option<Value> =
        tx.as_admin()
            .read_one_with("recordings", key, &Query::new().fields(&["id"]))?;
    Ok(found.is_some())
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
