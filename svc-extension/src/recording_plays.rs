//! Plays of recordings: `POST /recordings/:id/play` and
//! `PATCH /recordings/:id/play/:playId` (auth optional). Plays are written
//! as admin; the counters they change (kept by the gamification hook), the
//! points they earn and the `playback` achievement check commit in the same
//! transaction.

use host_sdk::{ApiError, Context, Query, Request, Response};
use serde_json::{json, Value};

use crate::api::{RecordingPlayStarted, Success};
use crate::failure::Failure;
use crate::gamification::awards;
use crate::play_input::play_changes;

const PLAY: Failure = Failure::new("Failed to record play");
const UPDATE: Failure = Failure::new("Failed to update play");

/// `POST /recordings/:id/play`: `{success, play_id}`. An authenticated
/// caller who does not own the recording earns RECORDING_PLAY.
pub fn record(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let recording = req.path_param("id").unwrap_or_default();
    let user = ctx.user_id();
    let play_id = ctx.transaction(|tx| {
        let admin = tx.as_admin();
        let found: Option<Value> = admin
            .read_one_with("recordings", recording, &Query::new().fields(&["id", "user_created"]))
            .map_err(PLAY.of())?;
        let Some(found) = found else {
            return Err(ApiError::not_found("Recording not found"));
        };
        let play_id = admin
            .create_one(
                "recording_plays",
                &json!({"recording_id": recording, "user_id": user, "duration_played": 0, "completed": false}),
            )
            .map_err(PLAY.of())?;
        let owner = found.get("user_created").and_then(Value::as_str);
        awards::recording_played(tx, recording, owner, user).map_err(PLAY.of())?;
        Ok(play_id)
    })?;
    Ok(Response::ok(&RecordingPlayStarted {
        success: true,
        play_id,
    }))
}

/// `PATCH /recordings/:id/play/:playId`: body `duration_played` (number)
/// and `completed` (boolean), each applied when present, and `date_updated`.
pub fn update(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let changes = play_changes(req, "duration_played")?;
    let (recording, play) = (
        req.path_param("id").unwrap_or_default(),
        req.path_param("playId").unwrap_or_default(),
    );
    let completes = changes.get("completed") == Some(&Value::Bool(true));
    let caller = ctx.user_id();
    ctx.transaction(|tx| {
        let admin = tx.as_admin();
        let found: Option<Value> = admin
            .read_one_with(
                "recording_plays",
                play,
                &Query::new().fields(&["recording_id", "user_id", "completed"]),
            )
            .map_err(UPDATE.of())?;
        let Some(found) =
            found.filter(|p| p.get("recording_id").and_then(Value::as_str) == Some(recording))
        else {
            return Err(ApiError::not_found("Play record not found"));
        };
        // `date_updated` is set by the platform on every update.
        admin
            .update_one("recording_plays", play, &Value::Object(changes.clone()))
            .map_err(UPDATE.of())?;
        let was_completed = found.get("completed").and_then(Value::as_bool) == Some(true);
        if completes && !was_completed {
            awards::play_completed(tx, recording, caller).map_err(UPDATE.of())?;
        }
        Ok(())
    })?;
    Ok(Response::ok(&Success::YES))
}
