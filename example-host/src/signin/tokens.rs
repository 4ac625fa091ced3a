//! One-time tokens mailed to users (`platform_user_tokens`): the link that
//! verifies a registration's email, the link that resets a password. The
//! token is random (256 bits) and only its SHA-256 digest is kept; each
//! serves one purpose, until it expires, once. Using one deletes its row
//! in the transaction that acts on it, and acts only when that delete
//! removed the row: of two hosts presenting one token at once, the second
//! finds it gone (on PostgreSQL its transaction waits for the first's
//! commit, or is run again after the conflict) and is refused.

use serde_json::{json, Value};

use crate::credentials::{generate_token, hash_token};
use crate::platform_schema::USER_TOKENS;
use platform_store::query::{Filter, ReadQuery};
use platform_store::schema::Schema;
use platform_store::storage::codec::Scalar;
use platform_store::storage::{Columns, StoreError, Writer};
use platform_store::values::{format_timestamp, now_timestamp};

/// What a token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Verifies a registration's email address (Directus's
    /// `pending-registration`).
    Registration,
    /// Sets a new password (Directus's `password-reset`).
    PasswordReset,
}

impl Purpose {
    fn name(self) -> &'static str {
        match self {
            Purpose::Registration => "registration",
            Purpose::PasswordReset => "password-reset",
        }
    }
}

/// A token that was used: whose, and the URL its link pointed at (`None`:
/// the host's own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Used {
    pub user: String,
    pub url: Option<String>,
}

fn missing() -> StoreError {
    StoreError::Backend(format!("the collection {USER_TOKENS} is missing"))
}

/// Makes a token for `user` (in the caller's transaction) and returns it:
/// the only time it exists in clear. Expired tokens of anyone are pruned
/// on the way.
pub fn issue(
    conn: &mut dyn Writer,
    schema: &Schema,
    user: &str,
    purpose: Purpose,
    url: Option<&str>,
    lifetime: std::time::Duration,
) -> Result<String, StoreError> {
    let def = schema.get(USER_TOKENS).ok_or_else(missing)?;
    prune(conn, schema)?;
    let token = generate_token();
    let lifetime = chrono::Duration::from_std(lifetime).unwrap_or(chrono::Duration::days(1));
    let mut row = Columns::new();
    row.insert("id".into(), Scalar::Text(uuid::Uuid::new_v4().to_string()));
    row.insert("token".into(), Scalar::Text(hash_token(&token)));
    row.insert("user".into(), Scalar::Text(user.to_string()));
    row.insert("purpose".into(), Scalar::Text(purpose.name().into()));
    row.insert(
        "url".into(),
        url.map_or(Scalar::Null, |u| Scalar::Text(u.to_string())),
    );
    row.insert(
        "expires".into(),
        Scalar::Text(format_timestamp(chrono::Utc::now() + lifetime)),
    );
    conn.insert(def, &row)?;
    Ok(token)
}

/// Uses `token` for `purpose` (in the caller's transaction): `None` when
/// it is unknown, for another purpose, expired or already used, including
/// by a transaction of another host that committed first.
pub fn consume(
    conn: &mut dyn Writer,
    schema: &Schema,
    token: &str,
    purpose: Purpose,
) -> Result<Option<Used>, StoreError> {
    let def = schema.get(USER_TOKENS).ok_or_else(missing)?;
    let q = ReadQuery::select(
        &["id", "user", "url"],
        Filter::And(vec![
            Filter::eq("token", json!(hash_token(token))),
            Filter::eq("purpose", json!(purpose.name())),
            Filter::gt("expires", Value::String(now_timestamp())),
        ]),
    )
    .limit(1);
    let Some(row) = conn.select(def, &q)?.into_iter().next() else {
        return Ok(None);
    };
    let text = |k: &str| row.get(k).and_then(Value::as_str).map(String::from);
    let (Some(id), Some(user)) = (text("id"), text("user")) else {
        return Ok(None);
    };
    // The use itself: only the transaction whose delete removed the row
    // goes on.
    if !conn.delete(def, &id)? {
        return Ok(None);
    }
    Ok(Some(Used {
        user,
        url: text("url"),
    }))
}

/// Deletes every token of `user` for `purpose` (once one was used, its
/// siblings mailed earlier are void too).
pub fn void_all(
    conn: &mut dyn Writer,
    schema: &Schema,
    user: &str,
    purpose: Purpose,
) -> Result<(), StoreError> {
    let def = schema.get(USER_TOKENS).ok_or_else(missing)?;
    let q = ReadQuery::select(
        &["id"],
        Filter::And(vec![
            Filter::eq("user", json!(user)),
            Filter::eq("purpose", json!(purpose.name())),
        ]),
    );
    for row in conn.select(def, &q)? {
        if let Some(id) = row.get("id").and_then(Value::as_str) {
            conn.delete(def, id)?;
        }
    }
    Ok(())
}

/// Deletes up to 100 expired tokens.
fn prune(conn: &mut dyn Writer, schema: &Schema) -> Result<(), StoreError> {
    let def = schema.get(USER_TOKENS).ok_or_else(missing)?;
    let q = ReadQuery::select(
        &["id"],
        Filter::lt("expires", Value::String(now_timestamp())),
    )
    .limit(100);
    for row in conn.select(def, &q)? {
        if let Some(id) = row.get("id").and_then(Value::as_str) {
            conn.delete(def, id)?;
        }
    }
    Ok(())
}
