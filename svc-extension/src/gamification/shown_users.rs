//! The two fields of a user the leaderboard shows, `display_name` (the
//! user's `artist_name`) and `avatar`, copied onto the user's stats row, so
//! that a page is one read of `user_stats` alone: reading each row's user
//! by id was most of a page's cost. A row's `user_copied` says its copies
//! equal its user's:
//!
//! * the ledger copies them when it creates a row ([`for_new_row`]);
//! * a hook moves them with every write of a user's two fields, in the
//!   writing transaction, whatever path made it (the items API, `/users/me`,
//!   a file's delete clearing an avatar) ([`users_before_commit`]);
//! * any other write of a row's user or copies (an administrator's, an
//!   import's) is followed, in its transaction, by `user_copied` false
//!   ([`touches_copies`]): nobody else's word is taken for them.
//!
//! A page reads the users of the rows not copied apart, as it did before
//! the copies, and copies them for the next read ([`fill`]): the rows of a
//! database made by an earlier release are copied as pages show them.

use std::collections::HashMap;

use host_sdk::{BoxError, Context, EventKind, ItemEvent, Items, ItemsError, Query};
use serde_json::{json, Map, Value};

use crate::own_writes;
use crate::records::str_field;

/// The users' collection, whose writes move the copies.
pub const USERS: &str = "platform_users";

/// The stats rows, which hold the copies.
pub const STATS: &str = "user_stats";

/// Whether a stats row's copies equal its user's fields.
pub const COPIED: &str = "user_copied";

/// Each copy on a stats row, with the user's field it copies.
pub const COPIES: [(&str, &str); 2] = [("display_name", "artist_name"), ("avatar", "avatar")];

/// The user's fields copied: what the hook reads of a user's writes.
pub const USER_FIELDS: [&str; 2] = [COPIES[0].1, COPIES[1].1];

/// The copies of `user`'s shown fields, as a stats row's fields, with the
/// flag that says they are its user's.
pub fn copies_of(user: &Value) -> Map<String, Value> {
    let mut row: Map<String, Value> = COPIES
        .iter()
        .map(|(copy, field)| {
            let value = user.get(*field).cloned().unwrap_or(Value::Null);
            (copy.to_string(), value)
        })
        .collect();
    row.insert(COPIED.into(), Value::Bool(true));
    row
}

/// The shown fields of some users, by id (a user who does not exist is
/// missing).
pub fn read_users(items: &Items<'_>, ids: &[&str]) -> Result<HashMap<String, Value>, ItemsError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let mut fields = vec!["id"];
    fields.extend(USER_FIELDS);
    let rows = items.read_by_query(
        USERS,
        &Query::new()
            .filter(json!({"id": {"_in": ids}}))
            .fields(&fields)
            .limit(-1),
    )?;
    Ok(rows
        .into_iter()
        .filter_map(|user| Some((str_field(&user, "id")?.to_string(), user)))
        .collect())
}

/// The copies a new stats row of `user` is created with (none, so not
/// copied, when the user does not exist: the write then fails on its
/// reference anyway).
pub fn for_new_row(items: &Items<'_>, user: &str) -> Result<Map<String, Value>, ItemsError> {
    let found: Option<Value> =
        items.read_one_with(USERS, user, &Query::new().fields(&USER_FIELDS))?;
    Ok(found.as_ref().map(copies_of).unwrap_or_default())
}

/// Copies the users' fields onto their stats rows (`rows`: stats row id →
/// user id), as the service's own writes.
pub fn copy_onto(
    items: &Items<'_>,
    rows: &[(String, String)],
    users: &HashMap<String, Value>,
) -> Result<(), ItemsError> {
    own_writes::run(|| {
        for (row, user) in rows {
            if let Some(user) = users.get(user) {
                items.update_one(STATS, row, &Value::Object(copies_of(user)))?;
            }
        }
        Ok(())
    })
}

/// The stats rows among `filter`'s, as (row id, user id).
fn rows_where(items: &Items<'_>, filter: Value) -> Result<Vec<(String, String)>, ItemsError> {
    let rows = items.read_by_query(
        STATS,
        &Query::new()
            .filter(filter)
            .fields(&["id", "user_id"])
            .limit(-1),
    )?;
    Ok(rows
        .iter()
        .filter_map(|r| Some((str_field(r, "id")?.into(), str_field(r, "user_id")?.into())))
        .collect())
}

/// After a page read the users of rows not copied (`rows`: their ids):
/// copies them, so the next read needs no users. The rows and their users
/// are read again inside the copying transaction, so what is copied is
/// what they are when it commits, whatever changed since the page's read.
/// A failure (a conflict with a concurrent write) only leaves them for a
/// later page: it is logged, and the page is answered all the same.
pub fn fill(ctx: &Context<'_>, rows: &[&str]) {
    if rows.is_empty() {
        return;
    }
    let copied = ctx.transaction(|tx| {
        let items = tx.as_admin();
        let rows = rows_where(&items, json!({"id": {"_in": rows}}))?;
        let ids: Vec<&str> = rows.iter().map(|(_, user)| user.as_str()).collect();
        copy_onto(&items, &rows, &read_users(&items, &ids)?)
    });
    match copied {
        Ok(()) => log::debug!("copied the users of {} stats rows", rows.len()),
        Err(e) => log::warn!("users not copied onto {} stats rows yet: {e}", rows.len()),
    }
}

/// In the transaction that writes users: the stats rows of every user whose
/// shown fields changed get the new values. A new user has no row yet (the
/// ledger copies them when it creates one); a deleted user's row goes with
/// them.
pub fn users_before_commit(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), BoxError> {
    if event.kind != EventKind::Update {
        return Ok(());
    }
    let mut changed: HashMap<String, Value> = HashMap::new();
    for key in &event.keys {
        let (Some(before), Some(after)) = (event.before_of(key), event.after_of(key)) else {
            continue;
        };
        if USER_FIELDS.iter().any(|f| before.get(*f) != after.get(*f)) {
            changed.insert(key.clone(), after.clone());
        }
    }
    if changed.is_empty() {
        return Ok(());
    }
    let items = ctx.as_admin();
    let ids: Vec<&str> = changed.keys().map(String::as_str).collect();
    let rows = rows_where(&items, json!({"user_id": {"_in": ids}}))?;
    copy_onto(&items, &rows, &changed)?;
    Ok(())
}

/// Whether a write of a stats row by anyone but the service could leave it
/// claiming copies that differ from its user's: a create that sets the
/// flag (others start with it false), or an update that names the row's
/// user, its copies or the flag. The gamification hook then writes
/// `user_copied` false in the same transaction: nobody else's word is
/// taken for them.
pub fn touches_copies(kind: EventKind, payload: &Value) -> bool {
    match kind {
        EventKind::Create => payload
            .get(COPIED)
            .is_some_and(|v| *v != Value::Bool(false)),
        EventKind::Update => {
            payload.get("user_id").is_some()
                || payload.get(COPIED).is_some()
                || COPIES.iter().any(|(copy, _)| payload.get(*copy).is_some())
        }
        EventKind::Delete => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copies_are_the_users_fields_under_the_rows_names() {
        let row = copies_of(&json!({"id": "u", "artist_name": "Ana", "avatar": null}));
        assert_eq!(
            Value::Object(row),
            json!({"display_name": "Ana", "avatar": null, "user_copied": true})
        );
        let row = copies_of(&json!({"avatar": "f"}));
        assert_eq!(
            Value::Object(row),
            json!({"display_name": null, "avatar": "f", "user_copied": true})
        );
    }

    #[test]
    fn nobody_elses_write_of_a_rows_user_or_copies_is_taken_for_copied() {
        assert!(touches_copies(
            EventKind::Create,
            &json!({"user_id": "u", "user_copied": true})
        ));
        assert!(!touches_copies(
            EventKind::Create,
            &json!({"user_id": "u", "display_name": "x"})
        ));
        for named in ["user_id", "display_name", "avatar", "user_copied"] {
            assert!(
                touches_copies(EventKind::Update, &json!({ named: "x" })),
                "{named}"
            );
        }
        assert!(!touches_copies(
            EventKind::Update,
            &json!({"total_raw_points": 3})
        ));
        assert!(!touches_copies(EventKind::Delete, &json!(["k"])));
    }
}
