//! The video counters `likes_count` and `plays_count`: kept equal to the
//! number of like and play records by an in-transaction hook on every
//! write of those records, whatever path made it (the `/svc` endpoints, the
//! items API, another extension), in the writing transaction. The
//! endpoints write the records and read the counter back.

use host_sdk::{BoxError, Context, EventKind, ItemEvent, Items, ItemsError, Query};
use serde_json::{json, Value};

/// The collections whose writes move a counter.
pub const WATCHED: [&str; 2] = ["video_likes", "video_plays"];

/// The counter a collection's records move.
fn counter_of(collection: &str) -> Option<&'static str> {
    match collection {
        "video_likes" => Some("likes_count"),
        "video_plays" => Some("plays_count"),
        _ => None,
    }
}

/// A video's counter as stored; `None` when the video does not exist.
fn stored(items: &Items<'_>, video: &str, field: &str) -> Result<Option<i64>, ItemsError> {
    let found: Option<Value> =
        items.read_one_with("videos", video, &Query::new().fields(&[field]))?;
    Ok(found.map(|v| v.get(field).and_then(Value::as_i64).unwrap_or(0)))
}

/// A video's counter (0 when the video does not exist).
pub fn read(items: &Items<'_>, video: &str, field: &str) -> Result<i64, ItemsError> {
    Ok(stored(items, video, field)?.unwrap_or(0))
}

/// Adds `delta` to a counter of a video, never below 0; nothing when the
/// video does not exist (a record naming no video counts nowhere).
fn bump(items: &Items<'_>, video: &str, field: &str, delta: i64) -> Result<(), ItemsError> {
    if let Some(value) = stored(items, video, field)? {
        items.update_one("videos", video, &json!({ field: (value + delta).max(0) }))?;
    }
    Ok(())
}

/// In the writing transaction of a like or a play.
pub fn before_commit(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), BoxError> {
    let Some(field) = counter_of(&event.collection) else {
        return Ok(());
    };
    let items = ctx.as_admin();
    let video = |record: Option<&Value>| {
        record
            .and_then(|r| r.get("video_id"))
            .and_then(Value::as_str)
            .map(String::from)
    };
    for key in &event.keys {
        let before = video(event.before_of(key)).filter(|_| event.kind != EventKind::Create);
        let after = video(event.after_of(key)).filter(|_| event.kind != EventKind::Delete);
        if before == after {
            continue;
        }
        if let Some(v) = before {
            bump(&items, &v, field, -1)?;
        }
        if let Some(v) = after {
            bump(&items, &v, field, 1)?;
        }
    }
    Ok(())
}
