//! Session rows (`platform_sessions`): one per sign-in, holding the hash of
//! its current refresh token, its expiry and how it was opened. Access
//! tokens name their session, so deleting a row refuses its tokens at once
//! on every host (the collection counts among those that change access).
//! The rows as read and ended in a transaction, by the resolver of access
//! tokens and by sign-in's rule on the writes of users; sessions are
//! opened, replaced and ended through the items service by sign-in itself
//! (`signin`).

use serde_json::{json, Value};

use crate::credentials::hash_token;
use crate::platform_schema::SESSIONS;
use platform_store::query::{Filter, ReadQuery};
use platform_store::schema::{CollectionDef, Schema};
use platform_store::storage::codec::Scalar;
use platform_store::storage::{Columns, Reader, StoreError, Writer};
use platform_store::values::now_timestamp;

/// A session as read for a refresh or a logout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub id: String,
    pub user: String,
    /// How it was opened, and from where: kept by its replacement.
    pub mode: Option<String>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

/// How a client presents its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presented {
    /// A refresh token (body or refresh cookie).
    RefreshToken(String),
    /// The id of a session opened in `session` mode, from its cookie's
    /// access token (which may have expired).
    SessionCookie(String),
}

fn unexpired() -> Filter {
    Filter::gt("expires", Value::String(now_timestamp()))
}

/// The unexpired session `presented` names, read in the transaction.
pub fn find(
    conn: &mut dyn Writer,
    def: &CollectionDef,
    presented: &Presented,
) -> Result<Option<Found>, StoreError> {
    let which = match presented {
        Presented::RefreshToken(token) => Filter::eq("token", json!(hash_token(token))),
        Presented::SessionCookie(id) => Filter::And(vec![
            Filter::eq("id", json!(id)),
            Filter::eq("mode", json!("session")),
        ]),
    };
    let q = ReadQuery::select(
        &["id", "user", "mode", "ip", "user_agent"],
        Filter::And(vec![which, unexpired()]),
    )
    .limit(1);
    let row = conn.select(def, &q)?.into_iter().next();
    Ok(row.and_then(|r| {
        let text = |k: &str| r.get(k).and_then(Value::as_str).map(String::from);
        Some(Found {
            id: text("id")?,
            user: text("user")?,
            mode: text("mode"),
            ip: text("ip"),
            user_agent: text("user_agent"),
        })
    }))
}

/// Whether the session `id` of `user` is open (an access token's check).
pub fn is_open(
    conn: &mut dyn Reader,
    def: &CollectionDef,
    id: &str,
    user: &str,
) -> Result<bool, StoreError> {
    let q = ReadQuery::select(
        &["id"],
        Filter::And(vec![
            Filter::eq("id", json!(id)),
            Filter::eq("user", json!(user)),
            unexpired(),
        ]),
    )
    .limit(1);
    Ok(!conn.select(def, &q)?.is_empty())
}

/// Ends every session of `user`, in the transaction of a write that
/// suspended them or changed their password.
pub fn end_all_of(conn: &mut dyn Writer, schema: &Schema, user: &str) -> Result<(), StoreError> {
    let Some(def) = schema.get(SESSIONS) else {
        return Ok(());
    };
    let q = ReadQuery::select(&["id"], Filter::eq("user", json!(user)));
    for row in conn.select(def, &q)? {
        if let Some(id) = row.get("id").and_then(Value::as_str) {
            conn.delete(def, id)?;
        }
    }
    Ok(())
}

/// A user suspended, archived or given a new password loses every session
/// in the same write, so their access tokens are refused at once: sign-in's
/// rule on every update of an item (see [`super::register_rules`]).
pub fn end_on_new_credentials(
    conn: &mut dyn Writer,
    schema: &Schema,
    def: &CollectionDef,
    key: &str,
    changes: &Columns,
) -> Result<(), StoreError> {
    if def.name != "platform_users" {
        return Ok(());
    }
    let inactive = matches!(changes.get("status"), Some(Scalar::Text(s)) if s != "active");
    if inactive || changes.contains_key("password") {
        end_all_of(conn, schema, key)?;
    }
    Ok(())
}
