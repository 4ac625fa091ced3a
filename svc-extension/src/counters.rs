//! The video counters `likes_count` and `plays_count`: moved by an
//! in-transaction hook on every write of a like or a play, whatever path
//! made it (the `/svc` endpoints, the items API, another extension), in the
//! writing transaction. The endpoints write the records and answer the
//! counter the hook left ([`after_write`]).
//!
//! Lists and details answer *live* counts of the records (the contract),
//! which equal the counters as long as nobody else wrote them. A video's
//! `counts_exact` says so: a new video's zero counters are exact (no like
//! or play can name a video before it exists: a record's reference is
//! checked when it is written, and a video's records go with it); the hook
//! sets it, after a move, only when both counters equal the records'
//! counts; any other write of a counter or of the flag clears it, in the
//! write itself (a before-write hook), so no other write or event comes of
//! it. Reads serve the counters of exact videos and count the records of
//! the others only.

use std::cell::RefCell;

use host_sdk::{BoxError, Context, EventKind, ItemEvent, Items, ItemsError, PendingWrite, Query};
use serde_json::{json, Value};

use crate::own_writes;

/// The collections whose writes move a counter.
pub const WATCHED: [&str; 2] = ["video_likes", "video_plays"];

/// The collection whose writes may make its counters no longer exact.
pub const VIDEOS: [&str; 1] = ["videos"];

/// Whether a video's counters equal its records' counts.
pub const EXACT: &str = "counts_exact";

/// The counters, with the collection of the records each counts.
pub const COUNTERS: [(&str, &str); 2] = [
    ("likes_count", "video_likes"),
    ("plays_count", "video_plays"),
];

/// The counter a collection's records move.
fn counter_of(collection: &str) -> Option<&'static str> {
    COUNTERS
        .iter()
        .find(|(_, records)| *records == collection)
        .map(|(counter, _)| *counter)
}

/// A video's counters and flag as stored; `None` when it does not exist.
fn stored(items: &Items<'_>, video: &str) -> Result<Option<Value>, ItemsError> {
    items.read_one_with(
        "videos",
        video,
        &Query::new().fields(&["likes_count", "plays_count", EXACT]),
    )
}

fn number(record: &Value, field: &str) -> i64 {
    record.get(field).and_then(Value::as_i64).unwrap_or(0)
}

/// A video's counter (0 when the video does not exist).
pub fn read(items: &Items<'_>, video: &str, field: &str) -> Result<i64, ItemsError> {
    Ok(stored(items, video)?.map_or(0, |v| number(&v, field)))
}

thread_local! {
    /// The last counter the hook wrote on this thread: (video, counter,
    /// value). The hook runs inside the items call that wrote the record,
    /// on the caller's thread (as [`own_writes`] relies on too).
    static MOVED: RefCell<Option<(String, &'static str, i64)>> = const { RefCell::new(None) };
}

/// Runs `write` (a write of a like or a play of `video`, in a
/// transaction), then answers the video's `field` as that transaction now
/// holds it: the value the hook just wrote, without reading the row it
/// wrote again, or a read when the hook did not move it.
pub fn after_write<T>(
    items: &Items<'_>,
    video: &str,
    field: &str,
    write: impl FnOnce() -> Result<T, ItemsError>,
) -> Result<(T, i64), ItemsError> {
    MOVED.with(|m| m.borrow_mut().take());
    let done = write()?;
    let moved = MOVED.with(|m| m.borrow_mut().take());
    let value = match moved {
        Some((v, f, value)) if v == video && f == field => value,
        _ => read(items, video, field)?,
    };
    Ok((done, value))
}

/// The records of `collection` naming `video`.
fn live(items: &Items<'_>, collection: &str, video: &str) -> Result<i64, ItemsError> {
    let n = items.count(collection, Some(json!({"video_id": {"_eq": video}})))?;
    Ok(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Adds `delta` to a counter of a video, never below 0; nothing when the
/// video does not exist (a record naming no video counts nowhere). An
/// exact video stays exact; another becomes exact when, after the move,
/// both its counters equal the counts of their records.
fn bump(items: &Items<'_>, video: &str, field: &'static str, delta: i64) -> Result<(), ItemsError> {
    let Some(record) = stored(items, video)? else {
        return Ok(());
    };
    let moved = (number(&record, field) + delta).max(0);
    let was_exact = record.get(EXACT).and_then(Value::as_bool) == Some(true);
    let exact = if was_exact {
        true
    } else {
        let mut equal = true;
        for (counter, records) in COUNTERS {
            let value = if counter == field {
                moved
            } else {
                number(&record, counter)
            };
            equal = equal && value == live(items, records, video)?;
        }
        equal
    };
    // The flag only when it changes: an unchanged one would still move
    // its index entry.
    let update = match was_exact {
        true => json!({ field: moved }),
        false => json!({ field: moved, EXACT: exact }),
    };
    own_writes::run(|| items.update_one("videos", video, &update))?;
    MOVED.with(|m| *m.borrow_mut() = Some((video.to_string(), field, moved)));
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

/// Before a video is written by anyone but the counters' hook: a create
/// is exact when both its counters are 0 (as given, or by default); an
/// update that names a counter or the flag is no longer exact. Nobody
/// else's word is taken for it.
pub fn before_write(write: &mut PendingWrite, _ctx: &Context<'_>) -> Result<(), BoxError> {
    if own_writes::active() {
        return Ok(());
    }
    let Some(payload) = write.payload.as_object_mut() else {
        return Ok(());
    };
    let exact = match write.kind {
        EventKind::Create => COUNTERS.iter().all(|(counter, _)| {
            payload
                .get(*counter)
                .is_none_or(|v| v.is_null() || v.as_i64() == Some(0))
        }),
        EventKind::Update => {
            let named = |name: &str| payload.contains_key(name);
            if !(named(EXACT) || COUNTERS.iter().any(|(counter, _)| named(counter))) {
                return Ok(());
            }
            false
        }
        EventKind::Delete => return Ok(()),
    };
    payload.insert(EXACT.into(), Value::Bool(exact));
    Ok(())
}
