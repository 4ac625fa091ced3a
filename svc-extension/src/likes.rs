//! Likes of videos: `POST`/`DELETE /videos/:id/like` and
//! `GET /videos/:id/like-status`.
//!
//! The like record is read and written under the caller's permissions; the
//! video's `likes_count` is incremented or decremented (never below 0) in
//! the same transaction, so it stays equal to the number of like records
//! under concurrency. At most one like per user and video is the
//! `video_likes` unique constraint's job.

use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};
use serde_json::json;

use crate::caller::require_user;
use crate::failure::Failure;

const LIKE: Failure = Failure::new("Failed to like video");
const UNLIKE: Failure = Failure::new("Failed to unlike video");
const STATUS: Failure = Failure::new("Failed to get like status");

/// 404 `Video not found` unless the video exists.
pub fn ensure_video(items: &Items<'_>, id: &str, failure: Failure) -> Result<(), ApiError> {
    let found = items
        .read_one_with::<serde_json::Value>("videos", id, &Query::new().fields(&["id"]))
        .map_err(failure.of())?;
    match found {
        Some(_) => Ok(()),
        None => Err(ApiError::not_found("Video not found")),
    }
}

/// Adds `delta` to a counter of a video (never below 0) inside the caller's
/// transaction; returns the new value.
pub fn bump(
    tx: &Context<'_>,
    video: &str,
    field: &str,
    delta: i64,
    failure: Failure,
) -> Result<i64, ApiError> {
    let admin = tx.as_admin();
    let current: Option<serde_json::Value> = admin
        .read_one_with("videos", video, &Query::new().fields(&[field]))
        .map_err(failure.of())?;
    let current = current
        .as_ref()
        .and_then(|v| v.get(field))
        .and_then(serde_json::Value::as_i64)
        .unwrap_or(0);
    let next = (current + delta).max(0);
    admin
        .update_one("videos", video, &json!({ field: next }))
        .map_err(failure.of())?;
    Ok(next)
}

/// The caller's like of a video, if any.
fn own_like(items: &Items<'_>, video: &str) -> Result<Option<String>, ItemsError> {
    let rows = items.read_by_query(
        "video_likes",
        &Query::new()
            .filter(json!({"_and": [{"video_id": {"_eq": video}}, {"user_id": {"_eq": "$CURRENT_USER"}}]}))
            .fields(&["id"])
            .limit(1),
    )?;
    Ok(rows
        .first()
        .and_then(|r| r.get("id"))
        .and_then(|id| id.as_str())
        .map(String::from))
}

/// `POST /videos/:id/like`.
pub fn like(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let user = require_user(ctx)?.to_string();
    let video = req.param("id");
    let likes_count = ctx.transaction(|tx| {
        ensure_video(&tx.as_admin(), video, LIKE)?;
        let created = tx.as_caller().create_one(
            "video_likes",
            &json!({ "video_id": video, "user_id": user }),
        );
        match created {
            Ok(_) => {}
            Err(ItemsError::NotUnique(_)) => return Err(ApiError::bad_request("Already liked")),
            Err(e) => return Err(LIKE.answer(e)),
        }
        bump(tx, video, "likes_count", 1, LIKE)
    })?;
    Ok(Response::ok(
        &json!({ "liked": true, "likes_count": likes_count }),
    ))
}

/// `DELETE /videos/:id/like`.
pub fn unlike(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    require_user(ctx)?;
    let video = req.param("id");
    let likes_count = ctx.transaction(|tx| {
        ensure_video(&tx.as_admin(), video, UNLIKE)?;
        let Some(like) = own_like(&tx.as_caller(), video).map_err(UNLIKE.of())? else {
            return Err(ApiError::bad_request("Not liked"));
        };
        tx.as_caller()
            .delete_one("video_likes", &like)
            .map_err(UNLIKE.of())?;
        bump(tx, video, "likes_count", -1, UNLIKE)
    })?;
    Ok(Response::ok(
        &json!({ "liked": false, "likes_count": likes_count }),
    ))
}

/// `GET /videos/:id/like-status`: `{liked: false}` for anonymous callers.
pub fn status(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    if ctx.user_id().is_none() {
        return Ok(Response::ok(&json!({ "liked": false })));
    }
    let liked = own_like(&ctx.as_caller(), req.param("id"))
        .map_err(STATUS.of())?
        .is_some();
    Ok(Response::ok(&json!({ "liked": liked })))
}
