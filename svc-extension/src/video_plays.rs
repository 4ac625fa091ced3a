//! Plays of videos: `POST /videos/:id/play` and
//! `PATCH /videos/:id/play/:playId`. Plays are written as admin; the
//! video's `plays_count` follows in the same transaction ([`counters`]).

use host_sdk::{ApiError, Context, Query, Request, Response};
use serde_json::{json, Value};

use crate::api::{Success, VideoPlayStarted};
use crate::counters;
use crate::failure::Failure;
use crate::likes::refused;
use crate::play_input::{body_fields, play_changes};

const PLAY: Failure = Failure::new("Failed to record play");
const UPDATE: Failure = Failure::new("Failed to update play");

/// `POST /videos/:id/play`: body `session_id` (string, optional).
pub fn record(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let body = body_fields(req, &["session_id"])?;
    let session_id = match body.get("session_id") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(_) => return Err(ApiError::bad_request("session_id must be a string")),
    };
    let video = req.path_param("id").unwrap_or_default();
    let user = ctx.user_id().map(String::from);
    let started = ctx.transaction(|tx| {
        let admin = tx.as_admin();
        counters::after_write(&admin, video, "plays_count", || {
            admin.create_one(
                "video_plays",
                &json!({"video_id": video, "user_id": user, "session_id": session_id,
                        "duration_watched": 0, "completed": false}),
            )
        })
    });
    let (play_id, plays_count) = started.map_err(|e| refused(&ctx.as_admin(), video, PLAY, e))?;
    Ok(Response::ok(&VideoPlayStarted {
        success: true,
        play_id,
        plays_count,
    }))
}

/// `PATCH /videos/:id/play/:playId`: body `duration_watched` (number) and
/// `completed` (boolean), each applied when present. No auth check.
pub fn update(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let changes = play_changes(req, "duration_watched")?;
    let (video, play) = (
        req.path_param("id").unwrap_or_default(),
        req.path_param("playId").unwrap_or_default(),
    );
    let admin = ctx.as_admin();
    let found: Option<Value> = admin
        .read_one_with(
            "video_plays",
            play,
            &Query::new().fields(&["id", "video_id"]),
        )
        .map_err(UPDATE.of())?;
    if found
        .as_ref()
        .and_then(|p| p.get("video_id"))
        .and_then(Value::as_str)
        != Some(video)
    {
        return Err(ApiError::not_found("Play record not found"));
    }
    if !changes.is_empty() {
        admin
            .update_one("video_plays", play, &Value::Object(changes))
            .map_err(UPDATE.of())?;
    }
    Ok(Response::ok(&Success::YES))
}
