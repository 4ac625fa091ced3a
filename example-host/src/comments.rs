//! Comments on items (`/comments`, as Directus 11's): plain functions over
//! the items service; `http/comments_api.rs` only reads requests and
//! writes answers.
//!
//! Who sees what: a comment is seen by whoever may read the item it is
//! on (its collection, and that item under the caller's row rule),
//! whatever the policies say of `platform_comments`
//! (`Platform::comment_scope`, which keeps a list one query). Anything
//! read through a comment's references (`user_created.first_name`) is
//! read under the caller's permissions on that collection.
//!
//! Writes go through the items service, so every hook on comments
//! (svc's COMMENT_CREATE) runs whatever the path, and so does the rule
//! that a comment is on an item of a served collection that exists and
//! that its writer may read (`items/write.rs`), and the bound on its
//! length (`platform_schema::max_length`). A comment is created as the
//! caller, under their permissions on `platform_comments` (members' rule
//! presets its author). Its author changes or deletes it, and an
//! administrator any: the ownership is checked here, and the write then
//! runs with the caller's accountability, permissions bypassed.

use serde_json::{Map, Value};

use crate::items::{Session, Who, COMMENTS};
use crate::platform::Platform;
use crate::platform::PlatformError;
use platform_store::query::{ListParam, WireQuery};
use platform_store::storage::Record;

/// A refused comment operation, beyond the items service's own failures.
#[derive(Debug, thiserror::Error)]
pub enum CommentError {
    /// A required member of a new comment is missing or empty (Directus:
    /// `Invalid payload. "comment" is required.`).
    #[error("Invalid payload. \"{0}\" is required.")]
    Required(&'static str),
    /// The body is not an object of a comment's members.
    #[error("Invalid payload. {0}.")]
    InvalidPayload(String),
    /// The item commented on is missing, not readable by the caller, or in
    /// a collection that does not exist; the comment is missing or out of
    /// the caller's sight (to administrators too, as Directus answers a
    /// missing item); or it is not the caller's to change.
    #[error("You don't have permission to access this.")]
    Forbidden,
    #[error(transparent)]
    Items(#[from] PlatformError),
}

/// The default page size of a list, as the items API's.
pub const DEFAULT_LIMIT: u64 = 100;

/// The comments the query asks for, as a JSON array.
pub fn list(platform: &Platform, who: &Who, q: &WireQuery) -> Result<Vec<u8>, CommentError> {
    let scope = platform.comment_scope(&mut Session::Auto, who)?;
    Ok(platform.read_scoped_json(
        &mut Session::Auto,
        who,
        COMMENTS,
        q,
        scope,
        Some(DEFAULT_LIMIT),
    )?)
}

/// The query's aggregates over the comments the caller may see.
pub fn aggregate(
    platform: &Platform,
    who: &Who,
    q: &WireQuery,
) -> Result<Vec<Record>, CommentError> {
    let scope = platform.comment_scope(&mut Session::Auto, who)?;
    Ok(platform.aggregate_scoped(&mut Session::Auto, who, COMMENTS, q, scope)?)
}

/// One comment, as JSON text.
pub fn read_one(
    platform: &Platform,
    who: &Who,
    id: &str,
    q: &WireQuery,
) -> Result<Vec<u8>, CommentError> {
    let scope = platform.comment_scope(&mut Session::Auto, who)?;
    platform
        .read_scoped_one_json(&mut Session::Auto, who, COMMENTS, id, q, scope)?
        .ok_or(CommentError::Forbidden)
}

/// Creates a comment `{collection, item, comment}` by the caller; returns
/// its id.
pub fn create(platform: &Platform, who: &Who, body: &Value) -> Result<String, CommentError> {
    let Value::Object(body) = body else {
        return Err(CommentError::InvalidPayload(
            "The body must be a JSON object".into(),
        ));
    };
    // Directus checks them in this order.
    let comment = required(body, "comment")?;
    let collection = required(body, "collection")?;
    let item = required(body, "item")?;
    if let Some(other) = body
        .keys()
        .find(|k| !matches!(k.as_str(), "comment" | "collection" | "item"))
    {
        return Err(CommentError::InvalidPayload(format!(
            "\"{other}\" cannot be set on a comment"
        )));
    }
    let payload = serde_json::json!({"collection": collection, "item": item, "comment": comment});
    Ok(platform.create_one(&mut Session::Auto, who, COMMENTS, &payload)?)
}

/// A member of a new comment: a non-empty string (an item's key may be
/// given as a number).
fn required(body: &Map<String, Value>, name: &'static str) -> Result<String, CommentError> {
    match body.get(name) {
        None | Some(Value::Null) => Err(CommentError::Required(name)),
        Some(Value::String(s)) if s.is_empty() => Err(CommentError::Required(name)),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) if name == "item" => Ok(n.to_string()),
        Some(_) => Err(CommentError::InvalidPayload(format!(
            "\"{name}\" must be a string"
        ))),
    }
}

/// Changes a comment: its author may change its text; an administrator
/// anything. Returns its id.
pub fn update(
    platform: &Platform,
    who: &Who,
    id: &str,
    body: &Value,
) -> Result<String, CommentError> {
    let Value::Object(fields) = body else {
        return Err(CommentError::InvalidPayload(
            "The body must be a JSON object".into(),
        ));
    };
    own_comment(platform, who, id)?;
    if who.is_admin() {
        return Ok(platform.update_one(&mut Session::Auto, who, COMMENTS, id, body)?);
    }
    if fields.keys().any(|k| k != "comment") {
        return Err(CommentError::Forbidden);
    }
    if matches!(fields.get("comment"), Some(Value::Null)) {
        return Err(CommentError::Required("comment"));
    }
    let author = Who::admin(who.accountability.clone());
    Ok(platform.update_one(&mut Session::Auto, &author, COMMENTS, id, body)?)
}

/// Deletes a comment: its author's, or any for an administrator.
pub fn delete(platform: &Platform, who: &Who, id: &str) -> Result<(), CommentError> {
    own_comment(platform, who, id)?;
    let author = Who::admin(who.accountability.clone());
    let as_who = if who.is_admin() { who } else { &author };
    platform.delete_one(&mut Session::Auto, as_who, COMMENTS, id)?;
    Ok(())
}

/// The comment exists, the caller sees it, and it is theirs (any, for an
/// administrator).
fn own_comment(platform: &Platform, who: &Who, id: &str) -> Result<(), CommentError> {
    let q = WireQuery {
        fields: Some(ListParam::List(vec!["user_created".into()])),
        ..Default::default()
    };
    let text = read_one(platform, who, id, &q)?;
    if who.is_admin() {
        return Ok(());
    }
    let record: Value =
        serde_json::from_slice(&text).map_err(|e| PlatformError::Internal(e.to_string()))?;
    let me = who.accountability.as_ref().map(|a| a.user.as_str());
    match (record.get("user_created").and_then(Value::as_str), me) {
        (Some(author), Some(me)) if author == me => Ok(()),
        _ => Err(CommentError::Forbidden),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_new_comment_names_its_collection_item_and_text() {
        let body = json!({"collection": "videos", "item": 7, "comment": ""});
        let body = body.as_object().unwrap();
        assert!(matches!(
            required(body, "comment"),
            Err(CommentError::Required("comment"))
        ));
        assert_eq!(required(body, "item").unwrap(), "7");
        assert_eq!(required(body, "collection").unwrap(), "videos");
        let no_item = json!({"collection": "videos"});
        assert!(matches!(
            required(no_item.as_object().unwrap(), "item"),
            Err(CommentError::Required("item"))
        ));
        assert_eq!(
            CommentError::Required("comment").to_string(),
            "Invalid payload. \"comment\" is required."
        );
    }
}
