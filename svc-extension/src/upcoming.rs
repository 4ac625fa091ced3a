//! When a public listing next changes by the clock alone.
//!
//! Videos and articles appear once their date is reached, with no write to
//! announce it. A cached answer of theirs holds until the earliest date still
//! in the future: [`mark`] finds it, and must run *before* the
//! listing's own read, so that an item whose date passes in between is at
//! worst counted twice (the answer then expires at once), never missed.

use std::time::SystemTime;

use host_sdk::{Context, Items, ItemsError, Query};
use serde_json::{json, Value};

use crate::gamification::time::parse_time;

/// The earliest `field` after now among `collection`'s items matching
/// `extra`; `Some(UNIX_EPOCH)` when a stored date cannot be read (so the
/// answer is never reused), `None` when nothing is scheduled.
pub fn next_change(
    items: &Items<'_>,
    collection: &str,
    field: &str,
    extra: Option<Value>,
) -> Result<Option<SystemTime>, ItemsError> {
    let mut filter = vec![json!({ field: {"_gt": "$NOW"} })];
    filter.extend(extra);
    let rows = items.aggregate(
        collection,
        &Query::new()
            .filter(json!({ "_and": filter }))
            .aggregate("min", &[field]),
    )?;
    let earliest = rows
        .first()
        .and_then(|row| row.get("min"))
        .and_then(|min| min.get(field))
        .cloned()
        .unwrap_or(Value::Null);
    Ok(match earliest {
        Value::Null => None,
        Value::String(text) => Some(
            parse_time(&text)
                .map(SystemTime::from)
                .unwrap_or(SystemTime::UNIX_EPOCH),
        ),
        _ => Some(SystemTime::UNIX_EPOCH),
    })
}

/// Finds [`next_change`] and tells the cache of the route being answered
/// that its answer expires then; reads nothing when the answer is not kept.
pub fn mark(
    ctx: &Context<'_>,
    items: &Items<'_>,
    collection: &str,
    field: &str,
    extra: Option<Value>,
) -> Result<(), ItemsError> {
    if !ctx.answer_is_kept() {
        return Ok(());
    }
    if let Some(t) = next_change(items, collection, field, extra)? {
        ctx.fresh_until(t);
    }
    Ok(())
}
