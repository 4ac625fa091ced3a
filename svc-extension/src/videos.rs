//! `GET /videos` and `GET /videos/:slug`: published videos (upload date at
//! or before now), newest first, with `models`, `movie` and live counts.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use host_sdk::raw::{JsonOut, RawRecord};
use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};
use serde_json::{json, Value};
use typed_arena::Arena;

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

/// Videos asked of the host in one read. Each read expands one `movie` a
/// video and is written whole by the host, within the bounds it sets on
/// one answer (`MAX_RELATED_RECORDS`, 50,000 related records by default,
/// and `MAX_RESPONSE_BYTES`): 5,000 stay far below them however large the
/// catalogue, and the default data's whole list is still one read.
const VIDEOS_PER_READ: u64 = 5_000;

/// Where the next read of a list resumes: after `ties` videos dated `date`,
/// the last date read (every video of that date read so far came last).
#[derive(Debug, Clone, PartialEq)]
struct Resume {
    date: String,
    ties: u64,
}

/// The resume point after a read from `from` gave videos with these upload
/// dates, in list order (`None` when it gave none).
fn resume_after(from: Option<&Resume>, dates: &[&str]) -> Option<Resume> {
    let last = *dates.last()?;
    let same = dates.iter().rev().take_while(|d| **d == last).count();
    // A read all of one date continues the run of the read before it.
    let carried = match from {
        Some(before) if before.date == last && same == dates.len() => before.ties,
        _ => 0,
    };
    Some(Resume {
        date: last.to_string(),
        ties: carried + same as u64,
    })
}

/// Visible videos matching `extra`, newest first (ties by id, descending),
/// at most `limit`, each with its `movie` expanded to the file record by
/// the host (null when the file is gone): as the host wrote them, their
/// texts kept in `texts`; read [`VIDEOS_PER_READ`] at a time (see
/// [`read_in_parts`]).
fn find_videos<'t>(
    texts: &'t Arena<String>,
    items: &Items<'_>,
    extra: Option<Value>,
    limit: Option<u64>,
) -> Result<Vec<RawRecord<'t>>, ItemsError> {
    read_in_parts(texts, VIDEOS_PER_READ, limit, |resume, wanted| {
        let mut filter = vec![visible()];
        filter.extend(extra.clone());
        let mut query = Query::new().fields(&["*", "movie.*"]);
        if let Some(at) = resume {
            filter.push(json!({"upload_date": {"_lte": at.date}}));
            query = query.offset(at.ties);
        }
        items.read_by_query_raw(
            "videos",
            &query
                .filter(json!({ "_and": filter }))
                .sort(&["-upload_date", "-id"])
                .limit(wanted as i64),
        )
    })
}

/// A list in `-upload_date, -id` order read `per_read` videos at a time,
/// at most `limit`: `read(resume, wanted)` gives the text of the next
/// `wanted` videos, those dated at or before `resume.date` past its
/// `ties` (all when `None`), kept in `texts` while its records are. Each
/// read resumes at the last date read, at the few videos of that date
/// already read, so no read walks the ones before it. The reads are not
/// one snapshot: a video whose date changes in between may be listed
/// twice or not at all.
fn read_in_parts<'t>(
    texts: &'t Arena<String>,
    per_read: u64,
    limit: Option<u64>,
    mut read: impl FnMut(Option<&Resume>, u64) -> Result<String, ItemsError>,
) -> Result<Vec<RawRecord<'t>>, ItemsError> {
    let mut videos = Vec::new();
    let mut left = limit;
    let mut resume: Option<Resume> = None;
    loop {
        let wanted = left.map_or(per_read, |n| n.min(per_read));
        if wanted == 0 {
            return Ok(videos);
        }
        let text: &'t str = texts.alloc(read(resume.as_ref(), wanted)?);
        let part = raw_list("videos", text)?;
        let count = part.len() as u64;
        left = left.map(|n| n.saturating_sub(count));
        // A short read is the end of the list, a read of all that was
        // left the end of the answer.
        let more = count == wanted && left != Some(0);
        if more {
            // Every listed video has a date (the visible filter says so).
            let Some(dates) = part
                .iter()
                .map(|v| v.str("upload_date"))
                .collect::<Option<Vec<Cow<str>>>>()
            else {
                return Err(ItemsError::Other {
                    code: "INTERNAL".into(),
                    message: "a listed video has no upload date".into(),
                });
            };
            let dates: Vec<&str> = dates.iter().map(AsRef::as_ref).collect();
            // A full read is not empty, so it has a last date.
            resume = resume_after(resume.as_ref(), &dates);
        }
        videos.extend(part);
        if !more {
            return Ok(videos);
        }
    }
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
            if let Some(text) = public_users.get(&user) {
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
    let texts = Arena::new();
    let videos = find_videos(&texts, &items, extra, limit).map_err(LIST.of())?;
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
    let texts = Arena::new();
    let found = find_videos(&texts, &items, Some(filter), Some(1)).map_err(ONE.of())?;
    if found.is_empty() {
        return Err(ApiError::not_found("Video not found"));
    }
    let mut out = JsonOut::default();
    write_expanded(&items, &found, false, &mut out, Shape::First).map_err(ONE.of())?;
    Ok(Response::ok_raw(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `videos` (date, id) in list order, as the host would read them
    /// after `resume`: at or before its date, past its ties.
    fn read_from(videos: &[(String, String)], resume: Option<&Resume>, wanted: u64) -> String {
        let mut skip = resume.map_or(0, |r| r.ties);
        let mut out = Vec::new();
        for (date, id) in videos {
            if resume.is_some_and(|r| date.as_str() > r.date.as_str()) {
                continue;
            }
            if skip > 0 {
                skip -= 1;
                continue;
            }
            if out.len() as u64 == wanted {
                break;
            }
            out.push(json!({"id": id, "upload_date": date}));
        }
        Value::Array(out).to_string()
    }

    fn ids(videos: &[RawRecord<'_>]) -> Vec<String> {
        videos
            .iter()
            .map(|v| v.str("id").expect("an id").into_owned())
            .collect()
    }

    /// Lists with long runs of one date, read a few at a time with every
    /// limit, are the list's first videos, each once, in order.
    #[test]
    fn a_list_read_in_parts_is_the_list() {
        for days in [1, 2, 3, 7, 40] {
            let mut videos: Vec<(String, String)> = (0..40)
                .map(|n| {
                    (
                        format!("2025-01-{:02}", 1 + (n * 7 % days)),
                        format!("v{n:02}"),
                    )
                })
                .collect();
            videos.sort_by(|a, b| b.cmp(a));
            let every: Vec<String> = videos.iter().map(|(_, id)| id.clone()).collect();
            for per_read in [1, 2, 3, 5, 40, 41] {
                for limit in [None, Some(0), Some(1), Some(4), Some(5), Some(39), Some(60)] {
                    let mut reads = 0;
                    let texts = Arena::new();
                    let read = read_in_parts(&texts, per_read, limit, |resume, wanted| {
                        reads += 1;
                        // A read that does not move on would read for ever.
                        assert!(reads <= 41, "{reads} reads");
                        assert!(wanted <= per_read);
                        Ok(read_from(&videos, resume, wanted))
                    })
                    .expect("read");
                    let n = limit.map_or(40, |l| l.min(40)) as usize;
                    assert_eq!(
                        ids(&read),
                        every[..n],
                        "{days} days, {per_read} a read, {limit:?}"
                    );
                    assert!(reads as u64 <= n as u64 / per_read + 1, "{reads} reads");
                }
            }
        }
    }

    #[test]
    fn a_read_all_of_one_date_carries_the_run_before_it() {
        let first = resume_after(None, &["b", "a", "a"]).expect("a resume");
        assert_eq!(
            first,
            Resume {
                date: "a".into(),
                ties: 2
            }
        );
        let next = resume_after(Some(&first), &["a", "a"]).expect("a resume");
        assert_eq!(
            next,
            Resume {
                date: "a".into(),
                ties: 4
            }
        );
        assert_eq!(resume_after(Some(&next), &[]), None);
    }
}
