//! Likes of videos: `POST`/`DELETE /videos/:id/like` and
//! `GET /videos/:id/like-status`.
//!
//! The like record is read and written under the caller's permissions; the
//! video's `likes_count` follows it in the same transaction ([`counters`]),
//! and the answer reads it back. At most one like per user and video is the
//! `video_likes` unique constraint's job.

use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};
use serde_json::json;

use crate::api::{LikeAnswer, LikeStatus};
use crate::caller::require_user;
use crate::counters;
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

/// A write naming `video` was refused: 404 `Video not found` when the
/// video is missing (the host checks a record's video in the write
/// itself, so only a refusal asks), else `failure`'s answer to `error`.
pub fn refused(items: &Items<'_>, video: &str, failure: Failure, error: ItemsError) -> ApiError {
    match ensure_video(items, video, failure) {
        Ok(()) => failure.answer(error),
        Err(missing) => missing,
    }
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
    let video = req.path_param("id").unwrap_or_default();
    let liked = ctx.transaction(|tx| {
        counters::after_write(&tx.as_admin(), video, "likes_count", || {
            tx.as_caller().create_one(
                "video_likes",
                &json!({ "video_id": video, "user_id": user }),
            )
        })
    });
    let likes_count = match liked {
        Ok((_, likes_count)) => likes_count,
        Err(ItemsError::NotUnique(_)) => return Err(ApiError::bad_request("Already liked")),
        Err(e) => return Err(refused(&ctx.as_admin(), video, LIKE, e)),
    };
    Ok(Response::ok(&LikeAnswer {
        liked: true,
        likes_count,
    }))
}

/// `DELETE /videos/:id/like`.
pub fn unlike(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    require_user(ctx)?;
    let video = req.path_param("id").unwrap_or_default();
    let unliked = ctx.transaction(|tx| {
        let Some(like) = own_like(&tx.as_caller(), video)? else {
            return Ok(None);
        };
        counters::after_write(&tx.as_admin(), video, "likes_count", || {
            tx.as_caller().delete_one("video_likes", &like)
        })
        .map(|(_, likes_count)| Some(likes_count))
    });
    let likes_count = match unliked {
        Ok(Some(likes_count)) => likes_count,
        // No like of the caller's: a missing video has none either.
        Ok(None) => {
            ensure_video(&ctx.as_admin(), video, UNLIKE)?;
            return Err(ApiError::bad_request("Not liked"));
        }
        Err(e) => return Err(UNLIKE.answer(e)),
    };
    Ok(Response::ok(&LikeAnswer {
        liked: false,
        likes_count,
    }))
}

/// `GET /videos/:id/like-status`: `{liked: false}` for anonymous callers.
pub fn status(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    if ctx.user_id().is_none() {
        return Ok(Response::ok(&LikeStatus { liked: false }));
    }
    let liked = own_like(&ctx.as_caller(), req.path_param("id").unwrap_or_default())
        .map_err(STATUS.of())?
        .is_some();
    Ok(Response::ok(&LikeStatus { liked }))
}
