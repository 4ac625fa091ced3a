//! `GET /videos` and `GET /videos/:slug`: published videos (upload date at
//! or before now), newest first, with `models`, `movie` and live counts.

use std::collections::HashMap;

use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};
use serde_json::{json, Value};

use crate::failure::Failure;
use crate::params;
use crate::records::{by_id, counts_by, expand_file, ids_of, str_field, users_by_id};
use crate::upcoming;

const LIST: Failure = Failure::new("Failed to fetch videos");
const ONE: Failure = Failure::new("Failed to fetch video");

/// The filter of videos the public may see.
pub fn visible() -> Value {
    json!({"upload_date": {"_lte": "$NOW"}})
}

/// Visible videos matching `extra`, newest first, expanded.
pub fn find_videos(
    items: &Items<'_>,
    extra: Option<Value>,
    limit: Option<u64>,
) -> Result<Vec<Value>, ItemsError> {
    let mut filter = vec![visible()];
    filter.extend(extra);
    let mut query = Query::new()
        .filter(json!({ "_and": filter }))
        .sort(&["-upload_date"]);
    if let Some(n) = limit {
        query = query.limit(n as i64);
    }
    let videos = items.read_by_query("videos", &query)?;
    expand_videos(items, videos)
}

/// Ids of the videos linked to a user through `videos_models`.
pub fn videos_of(items: &Items<'_>, user: &str) -> Result<Vec<String>, ItemsError> {
    let links = items.read_by_query(
        "videos_models",
        &Query::new()
            .filter(json!({"platform_users_id": {"_eq": user}}))
            .fields(&["videos_id"]),
    )?;
    Ok(ids_of(&links, "videos_id"))
}

/// Adds `models` (user records, in link order), replaces `movie` by its file
/// record and `likes_count`/`plays_count` by live counts: five calls for any
/// number of videos.
pub fn expand_videos(items: &Items<'_>, videos: Vec<Value>) -> Result<Vec<Value>, ItemsError> {
    if videos.is_empty() {
        return Ok(videos);
    }
    let ids = ids_of(&videos, "id");
    let links = items.read_by_query(
        "videos_models",
        &Query::new()
            .filter(json!({"videos_id": {"_in": ids}}))
            .sort(&["id"]),
    )?;
    let users = users_by_id(items, &ids_of(&links, "platform_users_id"))?;
    let files = by_id(items, "platform_files", &ids_of(&videos, "movie"))?;
    let likes = counts_by(items, "video_likes", "video_id", &ids)?;
    let plays = counts_by(items, "video_plays", "video_id", &ids)?;

    let mut models_of: HashMap<&str, Vec<Value>> = HashMap::new();
    for link in &links {
        if let (Some(video), Some(user)) = (
            str_field(link, "videos_id"),
            str_field(link, "platform_users_id"),
        ) {
            if let Some(record) = users.get(user) {
                models_of.entry(video).or_default().push(record.clone());
            }
        }
    }
    Ok(videos
        .into_iter()
        .map(|mut video| {
            let id = str_field(&video, "id").unwrap_or_default().to_string();
            expand_file(&mut video, "movie", &files);
            if let Some(map) = video.as_object_mut() {
                map.insert(
                    "models".into(),
                    Value::Array(models_of.get(id.as_str()).cloned().unwrap_or_default()),
                );
                map.insert(
                    "likes_count".into(),
                    json!(likes.get(&id).copied().unwrap_or(0)),
                );
                map.insert(
                    "plays_count".into(),
                    json!(plays.get(&id).copied().unwrap_or(0)),
                );
            }
            video
        })
        .collect())
}

/// `GET /videos`: `model_id` keeps the videos linked to that user; `limit`.
pub fn list(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let items = ctx.as_admin();
    upcoming::mark(ctx, &items, "videos", "upload_date", None).map_err(LIST.of())?;
    let extra = match req.query("model_id") {
        Some(model) => {
            let ids = videos_of(&items, model).map_err(LIST.of())?;
            if ids.is_empty() {
                return Ok(Response::ok(&Vec::<Value>::new()));
            }
            Some(json!({"id": {"_in": ids}}))
        }
        None => None,
    };
    let videos = find_videos(&items, extra, params::limit(req)).map_err(LIST.of())?;
    Ok(Response::ok(&videos))
}

/// `GET /videos/:slug`: a visible video by exact slug, 404 `Video not found`.
pub fn one(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let items = ctx.as_admin();
    let filter = json!({"slug": {"_eq": req.param("slug")}});
    // Only this video's own date can change the answer by the clock.
    upcoming::mark(ctx, &items, "videos", "upload_date", Some(filter.clone())).map_err(ONE.of())?;
    let found = find_videos(&items, Some(filter), Some(1)).map_err(ONE.of())?;
    match found.into_iter().next() {
        Some(video) => Ok(Response::ok(&video)),
        None => Err(ApiError::not_found("Video not found")),
    }
}
