//! Session rows (`platform_sessions`): one per sign-in, holding the hash of
//! its current refresh token, its expiry and how it was opened. Access
//! tokens name their session, so deleting a row refuses its tokens at once
//! on every host (the collection counts among those that change access).

use serde_json::{json, Value};

use crate::credentials::hash_token;
use crate::items::{ItemsError, Platform, Session, Who};
use crate::platform_schema::SESSIONS;
use crate::query::{Filter, ReadQuery};
use crate::schema::{CollectionDef, Schema};
use crate::storage::{Reader, StoreError, Writer};
use crate::values::{format_timestamp, now_timestamp};

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

/// What a new session records.
pub struct Opening<'a> {
    pub user: &'a str,
    pub refresh_token: &'a str,
    pub lifetime: std::time::Duration,
    pub mode: &'a str,
    pub ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
}

fn expiry(lifetime: std::time::Duration) -> String {
    let lifetime = chrono::Duration::from_std(lifetime).unwrap_or(chrono::Duration::days(7));
    format_timestamp(chrono::Utc::now() + lifetime)
}

fn row(opening: &Opening<'_>) -> Value {
    json!({
        // Hashed by the items service: the collection marks it secret.
        "token": opening.refresh_token,
        "user": opening.user,
        "expires": expiry(opening.lifetime),
        "mode": opening.mode,
        "ip": opening.ip,
        "user_agent": opening.user_agent,
    })
}

/// Opens a session; its id.
pub fn open(platform: &Platform, opening: &Opening<'_>) -> Result<String, ItemsError> {
    platform.create_one(&mut Session::Auto, &Who::system(), SESSIONS, &row(opening))
}

/// Replaces session `found` by a new one with `refresh_token` (in the
/// caller's transaction); the new session's id. The old id is gone, so
/// every access token naming it (a `session` mode cookie included, expired
/// or not) is refused from now on: a copy of an old cookie cannot keep a
/// session alive.
pub fn replace(
    platform: &Platform,
    session: &mut Session<'_>,
    found: &Found,
    refresh_token: &str,
    lifetime: std::time::Duration,
) -> Result<String, ItemsError> {
    let opening = Opening {
        user: &found.user,
        refresh_token,
        lifetime,
        mode: found.mode.as_deref().unwrap_or("json"),
        ip: found.ip.as_deref(),
        user_agent: found.user_agent.as_deref(),
    };
    let id = platform.create_one(session, &Who::system(), SESSIONS, &row(&opening))?;
    end(platform, session, &found.id)?;
    Ok(id)
}

/// Ends session `id` (in the caller's transaction).
pub fn end(platform: &Platform, session: &mut Session<'_>, id: &str) -> Result<(), ItemsError> {
    platform.delete_one(session, &Who::system(), SESSIONS, id)?;
    Ok(())
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
