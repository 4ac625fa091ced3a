//! The item-event hook: the triggers DECISIONS §7 places on writes made
//! anywhere on the platform (a recording published or featured, a comment
//! on a recording), each in its own transaction after the write committed.

use host_sdk::{ApiError, BoxError, Context, EventKind, ItemEvent};
use serde_json::Value;

use super::awards::{self, Action};
use super::check::forget_achievements;

fn field<'a>(record: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    record.and_then(|r| r.get(name))
}

fn text<'a>(record: Option<&'a Value>, name: &str) -> Option<&'a str> {
    field(record, name).and_then(Value::as_str)
}

fn is_true(record: Option<&Value>, name: &str) -> bool {
    field(record, name).and_then(Value::as_bool) == Some(true)
}

fn published(record: Option<&Value>) -> bool {
    text(record, "status") == Some("published")
}

/// The collections whose events the triggers follow.
pub const WATCHED: [&str; 3] = ["recordings", "platform_comments", "achievements"];

pub fn on_event(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), BoxError> {
    match event.collection.as_str() {
        "recordings" => recordings(event, ctx),
        "platform_comments" => comments(event, ctx),
        "achievements" => {
            forget_achievements();
            Ok(())
        }
        _ => Ok(()),
    }
}

fn run(
    ctx: &Context<'_>,
    work: impl FnOnce(&Context<'_>) -> Result<(), host_sdk::ItemsError>,
) -> Result<(), BoxError> {
    ctx.transaction(|tx| work(tx).map_err(ApiError::from))
        .map_err(|e| -> BoxError { e.message.into() })
}

fn recordings(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), BoxError> {
    for key in &event.keys {
        let before = event.before_of(key);
        let after = event.after_of(key);
        let owner_before = text(before, "user_created").map(String::from);
        let owner_after = text(after, "user_created").map(String::from);
        let mut owners: Vec<String> = owner_before
            .iter()
            .chain(owner_after.iter())
            .cloned()
            .collect();
        owners.dedup();
        let became_published =
            event.kind != EventKind::Delete && published(after) && !published(before);
        let became_featured = event.kind == EventKind::Update
            && is_true(after, "featured")
            && !is_true(before, "featured");
        let count_changed = published(before) != published(after) || owner_before != owner_after;
        run(ctx, |tx| {
            if let Some(owner) = &owner_after {
                if became_published {
                    awards::recording_promoted(tx, owner, key, Action::RecordingCreate)?;
                }
                if became_featured {
                    awards::recording_promoted(tx, owner, key, Action::RecordingFeatured)?;
                }
            }
            // Recounting is idempotent: after an award it changes nothing
            // for the new owner, and it fixes a previous owner's count.
            if count_changed {
                awards::recordings_changed(tx, &owners)?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

fn comments(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), BoxError> {
    for key in &event.keys {
        match event.kind {
            EventKind::Create => {
                let after = event.after_of(key);
                if text(after, "collection") != Some("recordings") {
                    continue;
                }
                if let Some(user) = text(after, "user_created") {
                    run(ctx, |tx| awards::comment_created(tx, user))?;
                }
            }
            EventKind::Delete => {
                let before = event.before_of(key);
                if text(before, "collection") != Some("recordings") {
                    continue;
                }
                if let Some(user) = text(before, "user_created") {
                    run(ctx, |tx| awards::comment_deleted(tx, user))?;
                }
            }
            EventKind::Update => {
                // A comment moved to or from recordings, or to another
                // author: recount everyone concerned.
                let (before, after) = (event.before_of(key), event.after_of(key));
                let mut users: Vec<&str> =
                    [text(before, "user_created"), text(after, "user_created")]
                        .into_iter()
                        .flatten()
                        .collect();
                users.dedup();
                if text(before, "collection") != text(after, "collection") || users.len() > 1 {
                    for user in users {
                        run(ctx, |tx| awards::comment_deleted(tx, user))?;
                    }
                }
            }
        }
    }
    Ok(())
}
