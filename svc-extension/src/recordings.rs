//! The caller's recordings: list, read, create, update, archive, and the
//! duplication of a publicly shared one. Reads and writes of `recordings`
//! run under the caller's permissions (docs/decisions.md §5); the ownership
//! checks are endpoint logic and apply to admins too.

use host_sdk::{ApiError, Context, ItemsError, Query, Request, Response};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::Success;
use crate::caller::require_user;
use crate::failure::Failure;
use crate::params;
use crate::recording_input::{new_recording, recording_changes};
use crate::records::str_field;
use crate::slug::slugify;

const CREATE: Failure = Failure::new("Failed to create recording");
const UPDATE: Failure = Failure::new("Failed to update recording");
const DELETE: Failure = Failure::new("Failed to delete recording");
const DUPLICATE: Failure = Failure::new("Failed to duplicate recording");
/// docs/service-api.md gives the list no fallback of its own; it reads
/// recordings.
const LIST: Failure = Failure::new("Failed to fetch recordings");

fn owner_of(recording: &Value) -> Option<&str> {
    str_field(recording, "user_created")
}

/// `GET /recordings`: the caller's own, newest first; `status`, `tags`
/// (an element equal to the value), `linked_video`, `limit` (50), `page` (1).
pub fn list(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let user = require_user(ctx)?;
    let mut filter = vec![json!({"user_created": {"_eq": user}})];
    if let Some(status) = req.query("status") {
        filter.push(json!({"status": {"_eq": status}}));
    }
    if let Some(tag) = req.query("tags") {
        filter.push(json!({"tags": {"_contains": tag}}));
    }
    if let Some(video) = req.query("linked_video") {
        filter.push(json!({"linked_video": {"_eq": video}}));
    }
    let limit = params::limit(req).unwrap_or(50);
    let page = params::page(req).unwrap_or(1);
    let query = Query::new()
        .filter(json!({ "_and": filter }))
        .sort(&["-date_created"])
        .limit(limit.min(i64::MAX as u64) as i64)
        .page(page);
    // The host's text, answered as it is: a page of large recordings
    // costs its own size once, not a tree of every event.
    let recordings = ctx
        .as_caller()
        .read_by_query_raw("recordings", &query)
        .map_err(LIST.of())?;
    Ok(Response {
        status: 200,
        content_type: "application/json".into(),
        body: recordings.into_bytes(),
    })
}

/// The fields of a recording that decide who may read it; the rest (a
/// thousand events, say) is skipped, not built.
#[derive(Deserialize)]
struct Sharing {
    #[serde(default)]
    user_created: Value,
    #[serde(default)]
    public: Value,
}

/// `GET /recordings/:id`: the owner's, or anyone's when public. The record
/// is answered as the host's text: only its owner and `public` are read.
pub fn one(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let user = require_user(ctx)?;
    let found = ctx
        .as_caller()
        .read_one_raw("recordings", req.path_param("id").unwrap_or_default());
    let recording = match found {
        Ok(Some(recording)) => recording,
        Err(ItemsError::Forbidden(_)) if reads_recordings(ctx) => {
            return Err(ApiError::forbidden("Forbidden"))
        }
        Ok(None) | Err(_) => return Err(ApiError::not_found("Recording not found")),
    };
    let sharing: Sharing = serde_json::from_str(recording.get())
        .map_err(|_| ApiError::not_found("Recording not found"))?;
    let public = sharing.public.as_bool() == Some(true);
    if sharing.user_created.as_str() != Some(user) && !public {
        return Err(ApiError::forbidden("Forbidden"));
    }
    Ok(Response::ok_raw(recording))
}

/// `POST /recordings`: 201 with the created recording. The events pass
/// from the body to the item service and back to the answer as text.
pub fn create(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    require_user(ctx)?;
    let item = new_recording(req.body())?;
    let items = ctx.as_caller();
    let id = items
        .create_one("recordings", &item)
        .map_err(|e| CREATE.with_details(e))?;
    // A caller may create what they cannot read back; answer with what was
    // stored then.
    let created = match items.read_one_as_answer("recordings", &id) {
        Ok(Some(r)) => Some(r),
        _ => ctx
            .as_admin()
            .read_one_as_answer("recordings", &id)
            .map_err(|e| CREATE.with_details(e))?,
    };
    Ok(match created {
        Some(raw) => Response::created_raw(raw),
        None => Response::created(&Value::Null),
    })
}

/// Whether the caller may read recordings at all. A member who may, but is
/// refused one recording, asked for another member's private recording
/// (docs/decisions.md §5): docs/service-api.md's 403 `Forbidden` for a
/// recording not theirs. A caller who may read none fails as any failure to
/// read does.
fn reads_recordings(ctx: &Context<'_>) -> bool {
    ctx.as_caller()
        .read_by_query("recordings", &Query::new().fields(&["id"]).limit(0))
        .is_ok()
}

/// Reads a recording the caller must own: `missing` when there is none,
/// 403 `Forbidden` when not theirs.
fn owned(
    ctx: &Context<'_>,
    user: &str,
    id: &str,
    failure: Failure,
    missing: ApiError,
) -> Result<Value, ApiError> {
    let recording = match ctx.as_caller().read_one("recordings", id) {
        Ok(found) => found.ok_or(missing)?,
        Err(ItemsError::Forbidden(_)) if reads_recordings(ctx) => {
            return Err(ApiError::forbidden("Forbidden"))
        }
        Err(e) => return Err(failure.answer(e)),
    };
    if owner_of(&recording) != Some(user) {
        return Err(ApiError::forbidden("Forbidden"));
    }
    Ok(recording)
}

/// `PATCH /recordings/:id`: the owner changes title (and slug),
/// description, tags, status, public or linked_video; 200 with the result.
pub fn update(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let user = require_user(ctx)?;
    let id = req.path_param("id").unwrap_or_default();
    // docs/service-api.md: a body that is not JSON is the bare 400
    // `Invalid JSON body`, without serde's reason.
    let body: Value = req.body_as().map_err(|e| ApiError { details: None, ..e })?;
    let changes = recording_changes(&body)?;
    // docs/service-api.md: on PATCH, a missing record gives 500.
    owned(
        ctx,
        user,
        id,
        UPDATE,
        ApiError::internal("Recording not found"),
    )?;
    let items = ctx.as_caller();
    if !changes.is_empty() {
        items
            .update_one("recordings", id, &changes)
            .map_err(UPDATE.of_write())?;
    }
    let updated = items
        .read_one("recordings", id)
        .map_err(UPDATE.of())?
        .ok_or_else(|| ApiError::internal("Recording not found"))?;
    Ok(Response::ok(&updated))
}

/// `DELETE /recordings/:id`: the owner archives it; the record is kept.
/// A missing recording is 404 `Recording not found`.
pub fn archive(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let user = require_user(ctx)?;
    let id = req.path_param("id").unwrap_or_default();
    owned(
        ctx,
        user,
        id,
        DELETE,
        ApiError::not_found("Recording not found"),
    )?;
    ctx.as_caller()
        .update_one("recordings", id, &json!({"status": "archived"}))
        .map_err(DELETE.of())?;
    Ok(Response::ok(&Success::YES))
}

/// Milliseconds since the Unix epoch, for the duplicate's slug.
fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `POST /recordings/:id/duplicate`: a draft, private copy of a published,
/// public recording, owned by the caller; 201 `{data}`.
pub fn duplicate(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    if ctx.user_id().is_none() {
        return Err(ApiError::unauthorized("Authentication required"));
    }
    let id = req.path_param("id").unwrap_or_default();
    let source = ctx
        .as_admin()
        .read_one("recordings", id)
        .map_err(DUPLICATE.of())?
        .ok_or_else(|| ApiError::not_found("Recording not found"))?;
    let shared = source.get("status").and_then(Value::as_str) == Some("published")
        && source.get("public").and_then(Value::as_bool) == Some(true);
    if !shared {
        return Err(ApiError::forbidden("Recording is not publicly shared"));
    }
    let title = str_field(&source, "title").unwrap_or_default();
    let tags = match source.get("tags") {
        Some(t @ Value::Array(_)) => t.clone(),
        _ => json!([]),
    };
    let copy = json!({
        "title": format!("{title} (Copy)"),
        "slug": format!("{}-copy-{}", slugify(title), now_millis()),
        "description": source.get("description"),
        "duration": source.get("duration"),
        "events": source.get("events"),
        "device_info": source.get("device_info"),
        "tags": tags,
        "status": "draft",
        "public": false,
        "original_recording_id": id,
    });
    let items = ctx.as_caller();
    let new_id = items
        .create_one("recordings", &copy)
        .map_err(DUPLICATE.of())?;
    let created = items
        .read_one("recordings", &new_id)
        .map_err(DUPLICATE.of())?
        .unwrap_or(Value::Null);
    Ok(Response::created(&json!({ "data": created })))
}
