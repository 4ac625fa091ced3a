//! `GET /videos` and `GET /videos/:slug`: published videos (upload date at
//! or before now), newest first, with `models`, `movie` and live counts.

use std::borrow::Cow;
use std::cell::Cell;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use host_sdk::raw::{string_of, JsonOut, RawRecord};
use host_sdk::{ApiError, Context, Items, ItemsError, Memo, Query, Request, Response};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::counters;
use crate::failure::Failure;
use crate::params;
use crate::records::{
    counts_by, ids_of, private_user_fields_below, public_users_by_id, raw_ids_of, raw_list,
    refused_as_one_read, PublicUsers,
};
use crate::upcoming;
use crate::video_text::{self, Counted, Part};

const LIST: Failure = Failure::new("Failed to fetch videos");
const ONE: Failure = Failure::new("Failed to fetch video");

/// The filter of videos the public may see.
pub fn visible() -> Value {
    json!({"upload_date": {"_lte": "$NOW"}})
}

/// Videos asked of the host in one read. Each read expands a video's
/// `movie` and its models (a link record and a user each) and is written
/// whole by the host, within the bounds it sets on one answer
/// (`MAX_RELATED_RECORDS`, 50,000 related records by default, and
/// `MAX_RESPONSE_BYTES`): 5,000 stay below them with up to four models a
/// video on average, and the default data's whole list is one read. A read
/// past them is refused, and the list goes on with the models read apart
/// ([`Models::Apart`]).
const VIDEOS_PER_READ: u64 = 5_000;

/// What a listed video is read with: its own fields, its movie's record,
/// and its models' public records through the `videos_models` links.
const VIDEO_FIELDS: [&str; 3] = ["*", "movie.*", "models.platform_users_id.*"];

/// Where a video's links lead: the model's user.
const LINKED_USER: &str = "models.platform_users_id";

/// The list's order: newest first, ties by id (so that a read resumes
/// where the last one stopped), served by an index
/// (`schema::video_list_order`).
pub const LIST_ORDER: [&str; 2] = ["-upload_date", "-id"];

/// Where a list's models come from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Models {
    /// The read of the videos expands them (SDK 1.18: the users'
    /// private fields left out below the links).
    Expanded,
    /// Read apart, the links and then the users: the host refused a read
    /// that expands them ([`refused_as_one_read`]), or the list is every
    /// visible video ([`Models::EveryLink`]).
    Apart,
    /// Read apart, every link at once, once for the whole list (not once
    /// per read of videos): the list is every visible video, whose links
    /// are nearly every link, so one read of them all costs less than
    /// looking each video's up (the host's expansion would pass every
    /// video's key in a list). Any narrower list (a model's videos, a
    /// page, one video) looks its own links up, whatever the size of the
    /// catalogue.
    EveryLink,
}

/// Where the next read of a list resumes: after `ties` videos dated `date`,
/// the last date read (every video of that date read so far came last).
#[derive(Debug, Clone, PartialEq)]
struct Resume {
    date: String,
    ties: u64,
}

/// The resume point after a read from `from` gave `part` (`None` when it
/// gave no video, or one without a date).
fn resume_after(from: Option<&Resume>, part: &Part) -> Option<Resume> {
    let last = part.last.as_ref()?;
    // A read all of one date continues the run of the read before it.
    let carried = match from {
        Some(before) if before.date == last.date && last.len == part.count => before.ties,
        _ => 0,
    };
    Some(Resume {
        date: last.date.clone(),
        ties: carried + last.len,
    })
}

/// Writes the visible videos matching `extra` into `out` as the answer's
/// elements (no brackets), newest first (ties by id, descending), at most
/// `limit`, each with its `movie` (null when the file is gone), `models`
/// and live counts; gives how many. Read [`VIDEOS_PER_READ`] at a time
/// (see [`read_in_parts`]), each read's text written as it comes, the
/// models as `models` says to begin with.
fn write_videos(
    items: &Items<'_>,
    extra: Option<Value>,
    limit: Option<u64>,
    models: Models,
    out: &mut JsonOut,
) -> Result<u64, ItemsError> {
    let private = private_user_fields_below(LINKED_USER);
    // Every link, and every linked user, read once for the whole list,
    // whatever its number of parts.
    let every_link_text = match models {
        Models::EveryLink => Some(read_links(items, None)?),
        _ => None,
    };
    let every_link = every_link_text
        .as_deref()
        .map(|text| EveryLink::read(items, text))
        .transpose()?;
    let models = Cell::new(models);
    let read = |resume: Option<&Resume>, wanted: u64| {
        let query = list_query(extra.as_ref(), resume, wanted as i64);
        if models.get() == Models::Expanded {
            let expanded = query.clone().fields(&VIDEO_FIELDS).without(&private);
            match items.read_by_query_raw("videos", &expanded) {
                Err(e) if refused_as_one_read(&e) => models.set(Models::Apart),
                read => return read,
            }
        }
        items.read_by_query_raw("videos", &query.fields(&["*", "movie.*"]))
    };
    let mut written = 0;
    read_in_parts(VIDEOS_PER_READ, limit, read, |text| {
        let comma = written > 0;
        let part = match models.get() {
            Models::Expanded => write_part(items, text, out, comma)?,
            Models::Apart => write_part_apart(items, text, None, out, comma)?,
            Models::EveryLink => write_part_apart(items, text, every_link.as_ref(), out, comma)?,
        };
        written += part.count;
        Ok(part)
    })?;
    Ok(written)
}

/// The visible videos matching `extra`, in the list's order, the next
/// `limit` (`-1`: all) after `resume` (from the first when `None`).
fn list_query(extra: Option<&Value>, resume: Option<&Resume>, limit: i64) -> Query {
    let mut filter = vec![visible()];
    filter.extend(extra.cloned());
    let mut query = Query::new();
    if let Some(at) = resume {
        filter.push(json!({"upload_date": {"_lte": at.date}}));
        query = query.offset(at.ties);
    }
    query
        .filter(json!({ "_and": filter }))
        .sort(&LIST_ORDER)
        .limit(limit)
}

/// A list that one read holds (`limit` at most [`VIDEOS_PER_READ`], or no
/// limit and no more videos than that to list), read as the answer
/// itself (SDK 1.20): each video's links flattened to
/// their users, the users' private fields and `counts_exact` left out.
/// Only while every video's counters are exact, so that the stored
/// counters are the live counts; checked first, so the two reads are not
/// one snapshot: a counter written by someone other than the counters'
/// hook in between is answered once as written. `None` when the list is
/// to be written from its parts: a counter not exact, or the read refused
/// (more than one answer may hold, or a host older than 1.20).
fn list_as_read(
    ctx: &Context<'_>,
    items: &Items<'_>,
    extra: Option<&Value>,
    limit: Option<u64>,
) -> Result<Option<String>, ItemsError> {
    if limit.is_some_and(|n| n > VIDEOS_PER_READ) || !every_count_exact(ctx, items)? {
        return Ok(None);
    }
    if limit.is_none() && !one_read_holds_all(items, extra)? {
        return Ok(None);
    }
    let mut left_out = private_user_fields_below(LINKED_USER);
    left_out.push(counters::EXACT.to_string());
    // No limit: every video, however many came since they were counted.
    let query = list_query(extra, None, limit.map_or(-1, |n| n as i64))
        .fields(&VIDEO_FIELDS)
        .without(&left_out)
        .flatten(&[LINKED_USER]);
    match items.read_by_query_raw("videos", &query) {
        Err(e) if refused_as_one_read(&e) => Ok(None),
        read => read.map(Some),
    }
}

/// Whether the visible videos matching `extra` are at most
/// [`VIDEOS_PER_READ`]: none is listed past that many (one read of a key,
/// the list's index walked that far).
fn one_read_holds_all(items: &Items<'_>, extra: Option<&Value>) -> Result<bool, ItemsError> {
    let past = list_query(extra, None, 1)
        .offset(VIDEOS_PER_READ)
        .fields(&["id"]);
    Ok(raw_list("videos", &items.read_by_query_raw("videos", &past)?)?.is_empty())
}

/// Whether every video's counters are exact, kept while the data version
/// holds: the first entry of `schema::counts_exact_index` (false sorts
/// first), read in order whatever the database's statistics say of the
/// flag. Every video, shown yet or not, so that the answer does not move
/// with the clock.
fn every_count_exact(ctx: &Context<'_>, items: &Items<'_>) -> Result<bool, ItemsError> {
    static EVERY_COUNT_EXACT: Memo<bool> = Memo::new();
    EVERY_COUNT_EXACT.get_or_try(ctx, || {
        let first = Query::new()
            .fields(&[counters::EXACT])
            .sort(&[counters::EXACT])
            .limit(1);
        let first = items.read_by_query_raw("videos", &first)?;
        Ok(!first.contains("false"))
    })
}

/// Writes one read's videos (a comma first when `comma`): the host's text
/// in one pass when every counter in it is exact, else after counting the
/// records of the videos whose counters are not (two calls).
fn write_part(
    items: &Items<'_>,
    text: &str,
    out: &mut JsonOut,
    comma: bool,
) -> Result<Part, ItemsError> {
    let decode = |e| ItemsError::decode("videos", e);
    out.reserve(text.len());
    if let Some(part) = video_text::write_exact(text, out, comma).map_err(decode)? {
        return Ok(part);
    }
    let videos = raw_list("videos", text)?;
    let counted = live_counts(items, &videos)?;
    let models = |video: &RawRecord<'_>, _: &str| video_text::linked_users(video);
    video_text::write_counted(&videos, models, &counted, out, comma).map_err(decode)
}

/// The text of the links of these videos, each video's by id (`None`:
/// every link).
fn read_links(items: &Items<'_>, videos: Option<&[String]>) -> Result<String, ItemsError> {
    // By video first, which the links' covering index gives without a sort.
    let mut query = Query::new()
        .fields(&["videos_id", "platform_users_id"])
        .sort(&["videos_id", "id"])
        .limit(-1);
    if let Some(ids) = videos {
        query = query.filter(json!({"videos_id": {"_in": ids}}));
    }
    items.read_by_query_raw("videos_models", &query)
}

/// Each video's linked users' ids, in the order of the links' text.
type LinksByVideo<'t> = HashMap<Cow<'t, str>, Vec<Cow<'t, str>>>;

/// A link as [`read_links`] reads it, each side's JSON text.
#[derive(Deserialize)]
struct Link<'t> {
    #[serde(borrow, default)]
    videos_id: Option<&'t RawValue>,
    #[serde(borrow, default)]
    platform_users_id: Option<&'t RawValue>,
}

/// The links' text (from [`read_links`]) by video (a side that is not a
/// string skipped).
fn links_by_video(text: &str) -> Result<LinksByVideo<'_>, ItemsError> {
    let links: Vec<Link<'_>> =
        serde_json::from_str(text).map_err(|e| ItemsError::decode("links", e))?;
    // Sized once: growing would hash every key again at each step.
    let mut by_video: LinksByVideo<'_> = HashMap::with_capacity(links.len());
    for link in links {
        let video = link.videos_id.and_then(string_of);
        let user = link.platform_users_id.and_then(string_of);
        if let (Some(video), Some(user)) = (video, user) {
            by_video.entry(video).or_default().push(user);
        }
    }
    Ok(by_video)
}

/// Every link and the public record of every user they lead to, read once
/// for a list of every visible video ([`Models::EveryLink`]).
struct EveryLink<'t> {
    links: LinksByVideo<'t>,
    users: PublicUsers,
}

impl<'t> EveryLink<'t> {
    /// The links of `text` (every link, from [`read_links`]) and their
    /// users: one call.
    fn read(items: &Items<'_>, text: &'t str) -> Result<Self, ItemsError> {
        let links = links_by_video(text)?;
        let users = users_of(items, links.values().flatten())?;
        Ok(Self { links, users })
    }
}

/// The public records of these users (each read once): one call.
fn users_of<'a, 't: 'a>(
    items: &Items<'_>,
    users: impl Iterator<Item = &'a Cow<'t, str>>,
) -> Result<PublicUsers, ItemsError> {
    let mut seen = HashSet::new();
    let mut ids = Vec::new();
    for user in users {
        if seen.insert(user.as_ref()) {
            ids.push(user.to_string());
        }
    }
    public_users_by_id(items, &ids)
}

/// [`write_part`] of videos read without their models: their links and
/// their users (from `every_link` when the list read them all, else read
/// for these videos: two calls more).
fn write_part_apart(
    items: &Items<'_>,
    text: &str,
    every_link: Option<&EveryLink<'_>>,
    out: &mut JsonOut,
    comma: bool,
) -> Result<Part, ItemsError> {
    let videos = raw_list("videos", text)?;
    let own_text;
    let own;
    let (links, users) = match every_link {
        Some(every) => (&every.links, &every.users),
        None => {
            let ids = raw_ids_of(&videos, "id");
            own_text = match ids.is_empty() {
                true => "[]".to_string(),
                false => read_links(items, Some(&ids))?,
            };
            let links = links_by_video(&own_text)?;
            let of_videos = ids.iter().filter_map(|id| links.get(id.as_str())).flatten();
            let users = users_of(items, of_videos)?;
            own = (links, users);
            (&own.0, &own.1)
        }
    };
    let linked = |id: &str| links.get(id).map_or(&[][..], Vec::as_slice);
    let counted = live_counts(items, &videos)?;
    let models = |_: &RawRecord<'_>, id: &str| {
        let of_video = linked(id);
        let mut models = JsonOut::default();
        models.array(
            of_video.iter().filter_map(|user| users.get(user)),
            |o, text| o.raw(text),
        );
        Ok(models.into_string())
    };
    video_text::write_counted(&videos, models, &counted, out, comma)
        .map_err(|e| ItemsError::decode("videos", e))
}

/// The likes and plays counted of the videos whose counters are not
/// exact (none to two calls).
fn live_counts(items: &Items<'_>, videos: &[RawRecord<'_>]) -> Result<Counted, ItemsError> {
    let uncounted: Vec<String> = videos
        .iter()
        .filter(|v| !video_text::is_exact(v))
        .filter_map(|v| v.str("id").map(String::from))
        .collect();
    Ok(Counted {
        likes: counts_by(items, "video_likes", "video_id", &uncounted)?,
        plays: counts_by(items, "video_plays", "video_id", &uncounted)?,
    })
}

/// A list in `-upload_date, -id` order read `per_read` videos at a time,
/// at most `limit`: `read(resume, wanted)` gives the text of the next
/// `wanted` videos, those dated at or before `resume.date` past its
/// `ties` (all when `None`), and `take` uses it up. Each read resumes at
/// the last date read, at the few videos of that date already read, so
/// no read walks the ones before it. The reads are not one snapshot: a
/// video whose date changes in between may be listed twice or not at all.
fn read_in_parts(
    per_read: u64,
    limit: Option<u64>,
    mut read: impl FnMut(Option<&Resume>, u64) -> Result<String, ItemsError>,
    mut take: impl FnMut(&str) -> Result<Part, ItemsError>,
) -> Result<(), ItemsError> {
    let mut left = limit;
    let mut resume: Option<Resume> = None;
    loop {
        let wanted = left.map_or(per_read, |n| n.min(per_read));
        if wanted == 0 {
            return Ok(());
        }
        let part = take(&read(resume.as_ref(), wanted)?)?;
        left = left.map(|n| n.saturating_sub(part.count));
        // A short read is the end of the list, a read of all that was
        // left the end of the answer.
        if part.count < wanted || left == Some(0) {
            return Ok(());
        }
        // A full read is not empty, and every listed video has a date
        // (the visible filter says so).
        resume = resume_after(resume.as_ref(), &part);
        if resume.is_none() {
            return Err(ItemsError::Other {
                code: "INTERNAL".into(),
                message: "a listed video has no upload date".into(),
            });
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

/// `GET /videos`: `model_id` keeps the videos linked to that user; `limit`.
pub fn list(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let items = ctx.as_admin();
    upcoming::mark(ctx, &items, "videos", "upload_date", None).map_err(LIST.of())?;
    let limit = params::limit(req);
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
    let models = match extra.is_none() && limit.is_none() {
        true => Models::EveryLink,
        false => Models::Expanded,
    };
    if let Some(text) = list_as_read(ctx, &items, extra.as_ref(), limit).map_err(LIST.of())? {
        return Ok(Response::ok_raw(JsonOut::of_string(text)));
    }
    let mut out = JsonOut::default();
    out.byte(b'[');
    write_videos(&items, extra, limit, models, &mut out).map_err(LIST.of())?;
    out.byte(b']');
    Ok(Response::ok_raw(out))
}

/// `GET /videos/:slug`: a visible video by exact slug, 404 `Video not found`.
pub fn one(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let items = ctx.as_admin();
    let filter = json!({"slug": {"_eq": req.path_param("slug").unwrap_or_default()}});
    // Only this video's own date can change the answer by the clock.
    upcoming::mark(ctx, &items, "videos", "upload_date", Some(filter.clone())).map_err(ONE.of())?;
    let mut out = JsonOut::default();
    let found = write_videos(&items, Some(filter), Some(1), Models::Expanded, &mut out);
    if found.map_err(ONE.of())? == 0 {
        return Err(ApiError::not_found("Video not found"));
    }
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
                    let mut read = Vec::new();
                    let from = |resume: Option<&Resume>, wanted| {
                        reads += 1;
                        // A read that does not move on would read for ever.
                        assert!(reads <= 41, "{reads} reads");
                        assert!(wanted <= per_read);
                        Ok(read_from(&videos, resume, wanted))
                    };
                    read_in_parts(per_read, limit, from, |text| {
                        let part = raw_list("videos", text)?;
                        read.extend(
                            part.iter()
                                .map(|v| v.str("id").expect("an id").into_owned()),
                        );
                        Ok(video_text::part_of(&part))
                    })
                    .expect("read");
                    let n = limit.map_or(40, |l| l.min(40)) as usize;
                    assert_eq!(
                        read,
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
        /// The part of videos dated so, in list order.
        fn part(dates: &[&str]) -> Part {
            let text =
                Value::Array(dates.iter().map(|d| json!({"upload_date": d})).collect()).to_string();
            video_text::part_of(&raw_list("videos", &text).expect("a list"))
        }
        let first = resume_after(None, &part(&["b", "a", "a"])).expect("a resume");
        assert_eq!(
            first,
            Resume {
                date: "a".into(),
                ties: 2
            }
        );
        let next = resume_after(Some(&first), &part(&["a", "a"])).expect("a resume");
        assert_eq!(
            next,
            Resume {
                date: "a".into(),
                ties: 4
            }
        );
        let after = resume_after(Some(&next), &part(&["a", "b"])).expect("a resume");
        assert_eq!(
            after,
            Resume {
                date: "b".into(),
                ties: 1
            }
        );
        assert_eq!(resume_after(Some(&next), &part(&[])), None);
    }
}
