//! The in-transaction hook that keeps the stats exact and fires the
//! triggers of docs/decisions.md §7 after every write, whatever path made it
//! (the `/svc` endpoints, the items API, another extension, an import): a
//! recording published or featured, a comment on a recording, plays, point
//! actions, unlocked achievements and the stats rows themselves. It runs inside
//! the writing transaction, so the write and what it changes commit together;
//! an error refuses the write.
//!
//! The endpoints only write the records and make the awards docs/service-api.md
//! places on them (plays); every count follows from here, so nothing counts
//! twice.

use host_sdk::raw::RawRecord;
use host_sdk::{BoxError, Context, EventKind, ItemEvent, ItemsError, RawItemEvent};
use serde_json::Value;

use super::awards::{self, Action};
use super::facts::PointAction;
use super::ledger::VERIFIED;
use super::ranks;
use super::shown_users;
use super::ties;
use crate::own_writes;

fn field<'a>(record: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    record.and_then(|r| r.get(name))
}

fn text<'a>(record: Option<&'a Value>, name: &str) -> Option<&'a str> {
    field(record, name).and_then(Value::as_str)
}

fn is_true(record: Option<&Value>, name: &str) -> bool {
    field(record, name).and_then(Value::as_bool) == Some(true)
}

/// What the recordings' hook and the community list's tree read of a recording's
/// payload and records: the host leaves the rest (the events) out of the
/// hook's view.
pub const RECORDING_FIELDS: [&str; 6] = [
    "id",
    "status",
    "featured",
    "user_created",
    "public",
    "date_created",
];

/// The collections whose writes the hook follows.
pub const WATCHED: [&str; 6] = [
    "recordings",
    "recording_plays",
    "platform_comments",
    "user_points",
    "user_achievements",
    "user_stats",
];

/// In the writing transaction, before its commit. A recording's write is
/// read as the host's text (its events are never built into a tree); the
/// other collections' small records are parsed.
pub fn before_commit(event: &RawItemEvent<'_>, ctx: &Context<'_>) -> Result<(), BoxError> {
    if event.collection == "recordings" {
        crate::community_positions::follow(event, ctx)?;
        return recordings(event, ctx).map_err(BoxError::from);
    }
    let event = event.parse();
    if event.collection == "user_stats" {
        // The rank tree follows every sum, the ledger's included.
        ranks_follow(&event, ctx)?;
    }
    let outcome = match event.collection.as_str() {
        "recording_plays" => plays(&event, ctx),
        "platform_comments" => comments(&event, ctx),
        // The ledger accounts for its own writes.
        _ if own_writes::active() => Ok(()),
        "user_points" => points(&event, ctx),
        "user_achievements" => user_achievements(&event, ctx),
        "user_stats" => stats_rows(&event, ctx),
        _ => Ok(()),
    };
    outcome.map_err(BoxError::from)
}

/// Moves the rank tree by the sums the write changed, and the tie tree by
/// the users it moved to or from a sum of 0.
fn ranks_follow(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), ItemsError> {
    let rows: Vec<(Option<&Value>, Option<&Value>)> = event
        .keys
        .iter()
        .map(|key| {
            let before = event
                .before_of(key)
                .filter(|_| event.kind != EventKind::Create);
            let after = event
                .after_of(key)
                .filter(|_| event.kind != EventKind::Delete);
            (before, after)
        })
        .collect();
    let sum = |record: Option<&Value>| field(record, "decay_sum").and_then(Value::as_f64);
    let items = ctx.as_admin();
    ranks::follow(&items, rows.iter().map(|(b, a)| (sum(*b), sum(*a))))?;
    ties::follow(
        &items,
        rows.iter()
            .map(|(b, a)| (ties::tied_key(*b), ties::tied_key(*a))),
    )
}

/// The users named by `field` before and after the write, once each.
fn users_of<'a>(before: Option<&'a Value>, after: Option<&'a Value>, name: &str) -> Vec<&'a str> {
    let mut users: Vec<&str> = [text(before, name), text(after, name)]
        .into_iter()
        .flatten()
        .collect();
    users.dedup();
    users
}

fn recordings(event: &RawItemEvent<'_>, ctx: &Context<'_>) -> Result<(), ItemsError> {
    let published =
        |r: Option<&RawRecord<'_>>| r.and_then(|r| r.str("status")).as_deref() == Some("published");
    let featured = |r: Option<&RawRecord<'_>>| {
        r.and_then(|r| r.get("featured")).map(|v| v.get()) == Some("true")
    };
    // Whose plays count as "on others' recordings" changes when a
    // recording appears under an id its owner's plays already named (an
    // import).
    let imported =
        event.kind == EventKind::Create && event.payload().is_some_and(|p| p.get("id").is_some());
    for key in &event.keys {
        let (before, after) = (event.before_of(key), event.after_of(key));
        let (before, after) = (before.as_ref(), after.as_ref());
        let owner_before = before.and_then(|r| r.str("user_created"));
        let owner_after = after.and_then(|r| r.str("user_created"));
        // It changes too when a recording changes owner or disappears:
        // recount from scratch. A recording created under an id of the
        // platform's own is new to everyone: its owner's row follows by one
        // below, whatever their history.
        let moved = event.kind == EventKind::Update && owner_before != owner_after;
        let recounted = moved || event.kind == EventKind::Delete || imported;
        if recounted {
            let mut owners: Vec<&str> = [owner_before.as_deref(), owner_after.as_deref()]
                .into_iter()
                .flatten()
                .collect();
            owners.dedup();
            for owner in owners {
                awards::refresh(ctx, owner)?;
            }
        }
        let Some(owner) = owner_after.as_deref() else {
            continue;
        };
        let became_published =
            event.kind != EventKind::Delete && published(after) && !published(before);
        let became_featured =
            event.kind == EventKind::Update && featured(after) && !featured(before);
        // A row just recounted already counts this write.
        if became_published {
            awards::recording_promoted(ctx, owner, key, Action::RecordingCreate, !recounted)?;
        }
        if became_featured {
            awards::recording_promoted(ctx, owner, key, Action::RecordingFeatured, false)?;
        }
        if !recounted && published(before) && !published(after) {
            awards::recording_unpublished(ctx, owner)?;
        }
    }
    Ok(())
}

/// What one play counts for its player, whose recording is owned by
/// `owner`: (plays on others' recordings, completed plays).
fn play_counts(play: Option<&Value>, player: &str, owner: Option<&str>) -> (u64, u64) {
    match play {
        None => (0, 0),
        Some(_) => (
            u64::from(owner != Some(player)),
            u64::from(is_true(play, "completed")),
        ),
    }
}

fn plays(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), ItemsError> {
    for key in &event.keys {
        let (before, after) = (event.before_of(key), event.after_of(key));
        if event.kind == EventKind::Update {
            let moved = text(before, "user_id") != text(after, "user_id")
                || text(before, "recording_id") != text(after, "recording_id");
            if moved {
                for player in users_of(before, after, "user_id") {
                    awards::refresh(ctx, player)?;
                }
                continue;
            }
            if is_true(before, "completed") == is_true(after, "completed") {
                continue;
            }
        }
        let (old, new) = match event.kind {
            EventKind::Create => (None, after),
            EventKind::Delete => (before, None),
            EventKind::Update => (before, after),
        };
        let play = old.or(new);
        let Some(player) = text(play, "user_id") else {
            continue;
        };
        let owner = match text(play, "recording_id") {
            Some(recording) => awards::owner_of(ctx, recording)?,
            None => None,
        };
        let (old_on_others, old_completed) = play_counts(old, player, owner.as_deref());
        let (new_on_others, new_completed) = play_counts(new, player, owner.as_deref());
        if (old_on_others, old_completed) == (new_on_others, new_completed) {
            continue;
        }
        awards::adjust_existing(ctx, player, |_, ledger| {
            let s = &mut ledger.stats;
            s.playbacks_count = (s.playbacks_count + new_on_others).saturating_sub(old_on_others);
            s.completions_count =
                (s.completions_count + new_completed).saturating_sub(old_completed);
            Ok(())
        })?;
    }
    Ok(())
}

fn on_recordings(comment: Option<&Value>) -> bool {
    text(comment, "collection") == Some("recordings")
}

fn comments(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), ItemsError> {
    for key in &event.keys {
        let (before, after) = (event.before_of(key), event.after_of(key));
        match event.kind {
            EventKind::Create => {
                let Some(user) = text(after, "user_created").filter(|_| on_recordings(after))
                else {
                    continue;
                };
                // COMMENT_CREATE only for a comment on a recording that exists.
                let on_existing = match text(after, "item") {
                    Some(item) => awards::recording_exists(ctx, item)?,
                    None => false,
                };
                awards::comment_created(ctx, user, on_existing)?;
            }
            EventKind::Delete => {
                if let Some(user) = text(before, "user_created").filter(|_| on_recordings(before)) {
                    awards::recount_comments(ctx, user)?;
                }
            }
            // Moved to or from recordings, or to another author.
            EventKind::Update => {
                recount_if_moved((before, after), "user_created", on_recordings, |user| {
                    awards::recount_comments(ctx, user)
                })?
            }
        }
    }
    Ok(())
}

fn points(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), ItemsError> {
    for key in &event.keys {
        let before = event.before_of(key).and_then(PointAction::of);
        let after = event.after_of(key).and_then(PointAction::of);
        if before == after {
            continue;
        }
        awards::point_written(ctx, before, after)?;
    }
    Ok(())
}

fn user_achievements(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), ItemsError> {
    let unlocked = |r: Option<&Value>| field(r, "date_unlocked").is_some_and(|d| !d.is_null());
    for key in &event.keys {
        recount_if_moved(
            (event.before_of(key), event.after_of(key)),
            "user_id",
            unlocked,
            |user| awards::recount_achievements(ctx, user),
        )?;
    }
    Ok(())
}

/// Recounts every user a record names (by `owner`) before or after a
/// write when the write changed whether it `counts`, or whose it is.
fn recount_if_moved(
    (before, after): (Option<&Value>, Option<&Value>),
    owner: &str,
    counts: impl Fn(Option<&Value>) -> bool,
    recount: impl Fn(&str) -> Result<(), ItemsError>,
) -> Result<(), ItemsError> {
    let users = users_of(before, after, owner);
    if counts(before) != counts(after) || users.len() > 1 {
        for user in users {
            recount(user)?;
        }
    }
    Ok(())
}

/// A stats row written by anyone but the ledger is no longer the ledger's
/// own: the user's next award computes it from scratch (rule 3). A row
/// created elsewhere starts so by the field's default; a writer that sets
/// the field itself (an import that knows its rows are exact) is believed.
/// Its copies of its user's fields are not (`shown_users`).
fn stats_rows(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), ItemsError> {
    let mut not_ours = serde_json::Map::new();
    if event.kind == EventKind::Update && event.payload.get(VERIFIED).is_none() {
        not_ours.insert(VERIFIED.into(), Value::Bool(false));
    }
    if shown_users::touches_copies(event.kind, &event.payload) {
        not_ours.insert(shown_users::COPIED.into(), Value::Bool(false));
    }
    if not_ours.is_empty() {
        return Ok(());
    }
    let items = ctx.as_admin();
    let not_ours = Value::Object(not_ours);
    for key in &event.keys {
        own_writes::run(|| items.update_one("user_stats", key, &not_ours))?;
    }
    Ok(())
}
