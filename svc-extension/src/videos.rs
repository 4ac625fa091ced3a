//! `GET /videos` and `GET /videos/:slug`: published videos (upload date at
//! or before now), newest first, with `models`, `movie` and live counts.

use std::borrow::Cow;
use std::collections::HashMap;

use host_sdk::raw::{JsonOut, RawRecord};
use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};
use serde_json::{json, Value};

use crate::failure::Failure;
use crate::params;
use crate::records::{counts_by, ids_of, public_user_text, raw_ids_of, raw_list};
use crate::upcoming;

const LIST: Failure = Failure::new("Failed to fetch videos");
const ONE: Failure = Failure::new("Failed to fetch video");

/// The filter of videos the public may see.
pub fn visible() -> Value {
    json!({"upload_date": {"_lte": "$NOW"}})
}

/// What one read brings of a video: its own fields, its models' user
/// records through the `models` alias (over `videos_models`, in link
/// order), and its movie's file record (null when the file is gone).
const EXPANDED_FIELDS: [&str; 3] = ["*", "models.platform_users_id.*", "movie.*"];

/// Visible videos matching `extra`, newest first, with their models and
/// movie, as the text of the host's list (parse it with [`raw_list`]).
fn find_videos_text(
    items: &Items<'_>,
    extra: Option<Value>,
    limit: Option<u64>,
) -> Result<String, ItemsError> {
    let mut filter = vec![visible()];
    filter.extend(extra);
    let mut query = Query::new()
        .filter(json!({ "_and": filter }))
        .sort(&["-upload_date"])
        .fields(&EXPANDED_FIELDS);
    if let Some(n) = limit {
        query = query.limit(n as i64);
    }
    items.read_text("videos", &query)
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

/// The text of a video's `models` as the endpoints show it: the public
/// record of each linked user, in link order, from the links the
/// expanded read brought (a link whose user is gone is left out).
fn models_text(video: &RawRecord<'_>) -> Result<String, ItemsError> {
    let links_text = video.get("models").map_or("[]", |v| v.get());
    let links = raw_list("links", links_text)?;
    let mut users = Vec::with_capacity(links.len());
    for link in &links {
        if let Some(user) = link.get("platform_users_id").filter(|u| u.get() != "null") {
            let user = RawRecord::parse(user.get()).map_err(|e| ItemsError::decode("users", e))?;
            users.push(public_user_text(&user));
        }
    }
    let mut out = JsonOut::default();
    out.array(&users, |o, text| o.raw(text));
    Ok(out.into_string())
}

/// Writes `videos` (as [`find_videos_text`] reads them) with `models` as
/// the public records of their users and `likes_count`/`plays_count` as
/// live counts: two calls for any number of videos. The records pass
/// through as the host's text: only the replaced members are written anew.
fn write_expanded(
    items: &Items<'_>,
    videos: &[RawRecord<'_>],
    out: &mut JsonOut,
    shape: Shape,
) -> Result<(), ItemsError> {
    let videos = match shape {
        Shape::List => videos,
        Shape::First => &videos[..videos.len().min(1)],
    };
    let ids = raw_ids_of(videos, "id");
    let likes = counts_by(items, "video_likes", "video_id", &ids)?;
    let plays = counts_by(items, "video_plays", "video_id", &ids)?;
    let models = videos
        .iter()
        .map(models_text)
        .collect::<Result<Vec<_>, _>>()?;
    let write_one = |out: &mut JsonOut, (video, models): (&RawRecord<'_>, &String)| {
        let id = video.str("id").unwrap_or_default();
        let count = |counts: &HashMap<String, u64>| counts.get(id.as_ref()).copied().unwrap_or(0);
        let mut members: Vec<(&str, Cow<str>)> = video
            .members()
            .filter(|(name, _)| !matches!(*name, "models" | "likes_count" | "plays_count"))
            .map(|(name, value)| (name, Cow::Borrowed(value.get())))
            .collect();
        members.push(("models", Cow::Borrowed(models.as_str())));
        members.push(("likes_count", Cow::Owned(count(&likes).to_string())));
        members.push(("plays_count", Cow::Owned(count(&plays).to_string())));
        out.object(&mut members);
    };
    match shape {
        Shape::List => out.array(videos.iter().zip(&models), write_one),
        Shape::First => {
            if let Some(first) = videos.iter().zip(&models).next() {
                write_one(out, first);
            }
        }
    }
    Ok(())
}

/// What [`write_expanded`] writes: every video as a list, or the first.
#[derive(Clone, Copy)]
enum Shape {
    List,
    First,
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
    let text = find_videos_text(&items, extra, params::limit(req)).map_err(LIST.of())?;
    let videos = raw_list("videos", &text).map_err(LIST.of())?;
    let mut out = JsonOut::with_capacity(text.len() * 2);
    write_expanded(&items, &videos, &mut out, Shape::List).map_err(LIST.of())?;
    Ok(Response::ok_written(out))
}

/// `GET /videos/:slug`: a visible video by exact slug, 404 `Video not found`.
pub fn one(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let items = ctx.as_admin();
    let filter = json!({"slug": {"_eq": req.param("slug")}});
    // Only this video's own date can change the answer by the clock.
    upcoming::mark(ctx, &items, "videos", "upload_date", Some(filter.clone())).map_err(ONE.of())?;
    let text = find_videos_text(&items, Some(filter), Some(1)).map_err(ONE.of())?;
    let found = raw_list("videos", &text).map_err(ONE.of())?;
    if found.is_empty() {
        return Err(ApiError::not_found("Video not found"));
    }
    let mut out = JsonOut::default();
    write_expanded(&items, &found, &mut out, Shape::First).map_err(ONE.of())?;
    Ok(Response::ok_written(out))
}
