//! `GET /videos` and `GET /videos/:slug`: published videos (upload date at
//! or before now), newest first, with `models`, `movie` and live counts.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use host_sdk::raw::{JsonOut, RawRecord};
use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};
use serde_json::{json, Value};

use crate::counters;
use crate::failure::Failure;
use crate::params;
use crate::records::{counts_by, ids_of, public_users_by_id, raw_ids_of, raw_list};
use crate::upcoming;

const LIST: Failure = Failure::new("Failed to fetch videos");
const ONE: Failure = Failure::new("Failed to fetch video");

/// The filter of videos the public may see.
pub fn visible() -> Value {
    json!({"upload_date": {"_lte": "$NOW"}})
}

/// Visible videos matching `extra`, newest first, each with its `movie`
/// expanded to the file record by the host (null when the file is gone), as
/// the text of the host's list (parse it with [`raw_list`]).
fn find_videos_text(
    items: &Items<'_>,
    extra: Option<Value>,
    limit: Option<u64>,
) -> Result<String, ItemsError> {
    let mut filter = vec![visible()];
    filter.extend(extra);
    let mut query = Query::new()
        .fields(&["*", "movie.*"])
        .filter(json!({ "_and": filter }))
        .sort(&["-upload_date"]);
    if let Some(n) = limit {
        query = query.limit(n as i64);
    }
    items.read_by_query_raw("videos", &query)
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

/// Writes `videos` (their `movie` expanded by the host) with `models`
/// (public user records, in link order) and `likes_count`/`plays_count` by
/// live counts: the counters of the videos whose counters are exact, the
/// records counted for the others only (two to four calls for any number of
/// videos). The records pass through as the host's text: only the replaced
/// members are written anew.
fn write_expanded(
    items: &Items<'_>,
    videos: &[RawRecord<'_>],
    every_visible: bool,
    out: &mut JsonOut,
    shape: Shape,
) -> Result<(), ItemsError> {
    let ids = raw_ids_of(videos, "id");
    let links_text = if ids.is_empty() {
        "[]".to_string()
    } else {
        let mut query = Query::new()
            .fields(&["videos_id", "platform_users_id"])
            .sort(&["id"]);
        // Every visible video's links are nearly every link: one read of
        // them all costs less than a lookup per video. Any narrower list
        // (a model's videos, a page, one video) looks its own links up,
        // whatever the size of the catalogue.
        if !every_visible {
            query = query.filter(json!({"videos_id": {"_in": ids}}));
        }
        items.read_by_query_raw("videos_models", &query)?
    };
    let mut links = raw_list("links", &links_text)?;
    // Reading every link brings those of videos not listed too.
    let listed: HashSet<&str> = ids.iter().map(String::as_str).collect();
    links.retain(|link| {
        link.str("videos_id")
            .is_some_and(|v| listed.contains(v.as_ref()))
    });
    let public_users = public_users_by_id(items, &raw_ids_of(&links, "platform_users_id"))?;
    // Exact counters are the live counts; only the others are counted.
    let uncounted: Vec<String> = videos
        .iter()
        .filter(|v| v.get(counters::EXACT).map(|x| x.get()) != Some("true"))
        .filter_map(|v| v.str("id").map(String::from))
        .collect();
    let likes = counts_by(items, "video_likes", "video_id", &uncounted)?;
    let plays = counts_by(items, "video_plays", "video_id", &uncounted)?;

    let mut models_of: HashMap<Cow<str>, Vec<&str>> = HashMap::new();
    for link in &links {
        if let (Some(video), Some(user)) = (link.str("videos_id"), link.str("platform_users_id")) {
            if let Some(text) = public_users.get(user.as_ref()) {
                models_of.entry(video).or_default().push(text);
            }
        }
    }

    // The answer's size is known: the videos' text and their models' (and
    // a few bytes a video for its counts).
    let models_size: usize = models_of.values().flatten().map(|t| t.len() + 1).sum();
    out.reserve(videos.iter().map(|v| v.written_len() + 80).sum::<usize>() + models_size);
    let write_one = |out: &mut JsonOut, video: &RawRecord<'_>| {
        let id = video.str("id").unwrap_or_default();
        let linked = models_of.get(&id).map(Vec::as_slice).unwrap_or_default();
        let mut models =
            JsonOut::with_capacity(linked.iter().map(|t| t.len() + 1).sum::<usize>() + 2);
        models.array(linked, |o, text| o.raw(text));
        let exact = video.get(counters::EXACT).map(|x| x.get()) == Some("true");
        let count = |counts: &HashMap<String, u64>, counter: &str| match exact {
            true => video.get(counter).map_or("0", |v| v.get()).to_string(),
            false => counts.get(id.as_ref()).copied().unwrap_or(0).to_string(),
        };
        let mut members: Vec<(&str, Cow<str>)> = video
            .members()
            .filter(|(name, _)| {
                !matches!(
                    *name,
                    "models" | "likes_count" | "plays_count" | counters::EXACT
                )
            })
            .map(|(name, value)| (name, Cow::Borrowed(value.get())))
            .collect();
        members.push(("models", Cow::Owned(models.into_string())));
        members.push(("likes_count", Cow::Owned(count(&likes, "likes_count"))));
        members.push(("plays_count", Cow::Owned(count(&plays, "plays_count"))));
        out.object(&mut members);
    };
    match shape {
        Shape::List => out.array(videos, write_one),
        Shape::First => {
            if let Some(video) = videos.first() {
                write_one(out, video);
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
    let limit = params::limit(req);
    let every_visible = req.query("model_id").is_none() && limit.is_none();
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
    let text = find_videos_text(&items, extra, limit).map_err(LIST.of())?;
    let videos = raw_list("videos", &text).map_err(LIST.of())?;
    let mut out = JsonOut::default();
    write_expanded(&items, &videos, every_visible, &mut out, Shape::List).map_err(LIST.of())?;
    Ok(Response::ok_raw(out))
}

/// `GET /videos/:slug`: a visible video by exact slug, 404 `Video not found`.
pub fn one(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let items = ctx.as_admin();
    let filter = json!({"slug": {"_eq": req.path_param("slug").unwrap_or_default()}});
    // Only this video's own date can change the answer by the clock.
    upcoming::mark(ctx, &items, "videos", "upload_date", Some(filter.clone())).map_err(ONE.of())?;
    let text = find_videos_text(&items, Some(filter), Some(1)).map_err(ONE.of())?;
    let found = raw_list("videos", &text).map_err(ONE.of())?;
    if found.is_empty() {
        return Err(ApiError::not_found("Video not found"));
    }
    let mut out = JsonOut::default();
    write_expanded(&items, &found, false, &mut out, Shape::First).map_err(ONE.of())?;
    Ok(Response::ok_raw(out))
}
