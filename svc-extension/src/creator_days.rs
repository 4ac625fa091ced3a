//! What `GET /analytics` shows per day, kept per creator and UTC day
//! (`creator_days`): the plays and likes of the videos linked to the
//! creator through `videos_models`. A creator's days then cost a row per
//! day, whatever the number of their videos and the size of their
//! audience.
//!
//! A creator's rows are *kept* when their header row (`day` null) says
//! `complete`, and only while every video of theirs is kept in
//! [`crate::video_days`]: the rows are moved from those videos' changes,
//! for the creators each video's header lists ([`follow`], in the writing
//! transaction of each play and like), so
//!
//! * a video that stops being kept makes its creators unkept
//!   ([`unkeep_creators_of`]);
//! * a link made, moved or removed makes its videos unkept (their headers
//!   list other creators now), and the creators on both sides of it
//!   ([`links_before_commit`]): their videos are no longer the ones their
//!   rows sum;
//! * a write of `creator_days` by anyone else makes the creators it
//!   touches unkept ([`before_write`]).
//!
//! An unkept creator's rows are counted afresh, from their videos' kept
//! rows, by their next analytics read ([`ensure_kept`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use host_sdk::{BoxError, Context, EventKind, ItemEvent, Items, ItemsError, PendingWrite, Query};
use serde_json::{json, Value};

use crate::own_writes;
use crate::records::str_field;
use crate::video_days::{self, one_of, Place, Sums};
use crate::videos::videos_of;

/// The collection.
pub const DAYS: &str = "creator_days";
/// On a creator's header row: their rows sum every play and like of
/// their videos (the same name as a video's: [`video_days::owners_touched`]
/// clears either).
pub const COMPLETE: &str = video_days::COMPLETE;
/// The links of videos to their creators.
pub const LINKS: &str = "videos_models";

/// Plays and likes of one creator and day.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct DaySums {
    plays: i64,
    likes: i64,
}

impl DaySums {
    fn is_zero(&self) -> bool {
        *self == DaySums::default()
    }
}

/// A stored row: its id, sums, and on a header whether it is complete.
struct Row {
    id: String,
    sums: DaySums,
    complete: bool,
}

/// The creators linked to each of `videos` (each once).
pub fn creators_of(
    items: &Items<'_>,
    videos: BTreeSet<&str>,
) -> Result<BTreeMap<String, BTreeSet<String>>, ItemsError> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    if videos.is_empty() {
        return Ok(out);
    }
    let links = items.read_by_query(
        LINKS,
        &Query::new()
            .filter(one_of("videos_id", videos))
            .fields(&["videos_id", "platform_users_id"])
            .limit(-1),
    )?;
    for link in &links {
        if let (Some(video), Some(user)) = (
            str_field(link, "videos_id"),
            str_field(link, "platform_users_id"),
        ) {
            out.entry(video.to_string())
                .or_default()
                .insert(user.to_string());
        }
    }
    Ok(out)
}

/// In the writing transaction of a play or a like, after
/// [`video_days::before_commit`] moved the rows of the kept videos in
/// `changes`: moves the days of their kept creators (`creators`, by video,
/// as their headers list them) the same way (a read of the rows, two for
/// several creators, and a write per row changed).
pub fn follow(
    items: &Items<'_>,
    changes: &[(Place, Sums)],
    creators: &HashMap<String, Vec<String>>,
) -> Result<(), ItemsError> {
    let dated: Vec<(&str, &str, &Sums)> = changes
        .iter()
        .filter_map(|((video, day), sums)| Some((video.as_str(), day.as_deref()?, sums)))
        .filter(|(_, _, sums)| sums.plays != 0 || sums.likes != 0)
        .collect();
    if dated.is_empty() {
        return Ok(());
    }
    let mut moves: BTreeMap<(String, String), DaySums> = BTreeMap::new();
    for (video, day, sums) in &dated {
        for creator in creators.get(*video).into_iter().flatten() {
            let m = moves.entry((creator.clone(), day.to_string())).or_default();
            m.plays += sums.plays;
            m.likes += sums.likes;
        }
    }
    moves.retain(|_, m| !m.is_zero());
    if moves.is_empty() {
        return Ok(());
    }
    let mut rows = rows_at(
        items,
        moves.keys().map(|(c, _)| c.as_str()).collect(),
        Some(moves.keys().map(|(_, d)| d.as_str()).collect()),
    )?;
    let kept = |creator: &str, rows: &BTreeMap<(String, Option<String>), Row>| {
        rows.get(&(creator.to_string(), None))
            .is_some_and(|row| row.complete)
    };
    own_writes::run(|| -> Result<(), ItemsError> {
        for ((creator, day), change) in &moves {
            if !kept(creator, &rows) {
                continue;
            }
            match rows.remove(&(creator.clone(), Some(day.clone()))) {
                Some(Row { id, mut sums, .. }) => {
                    sums.plays += change.plays;
                    sums.likes += change.likes;
                    if sums.is_zero() {
                        items.delete_one(DAYS, &id)?;
                    } else {
                        items.update_one(
                            DAYS,
                            &id,
                            &json!({"plays": sums.plays, "likes": sums.likes}),
                        )?;
                    }
                }
                None => {
                    items.create_one(
                        DAYS,
                        &json!({"user_id": creator, "day": day,
                                "plays": change.plays, "likes": change.likes}),
                    )?;
                }
            }
        }
        Ok(())
    })
}

/// The rows of `creators` on `days` (all days: `None`) and their headers:
/// (creator, day) → row.
fn rows_at(
    items: &Items<'_>,
    creators: BTreeSet<&str>,
    days: Option<BTreeSet<&str>>,
) -> Result<BTreeMap<(String, Option<String>), Row>, ItemsError> {
    let query = Query::new()
        .fields(&["id", "user_id", "day", "plays", "likes", COMPLETE])
        .limit(-1);
    let rows = match days {
        Some(days) => {
            video_days::read_days_and_headers(items, DAYS, query, ("user_id", creators), days)?
        }
        None => items.read_by_query(DAYS, &query.filter(one_of("user_id", creators)))?,
    };
    let int = |row: &Value, f: &str| row.get(f).and_then(Value::as_i64).unwrap_or(0);
    Ok(rows
        .iter()
        .filter_map(|row| {
            let place = (
                str_field(row, "user_id")?.to_string(),
                str_field(row, "day").map(String::from),
            );
            let found = Row {
                id: str_field(row, "id")?.to_string(),
                sums: DaySums {
                    plays: int(row, "plays"),
                    likes: int(row, "likes"),
                },
                complete: row.get(COMPLETE).and_then(Value::as_bool) == Some(true),
            };
            Some((place, found))
        })
        .collect())
}

/// The ids of the complete headers of `creators` (at most `limit`).
fn complete_headers(
    items: &Items<'_>,
    creators: BTreeSet<&str>,
    limit: i64,
) -> Result<Vec<String>, ItemsError> {
    if creators.is_empty() {
        return Ok(Vec::new());
    }
    let headers = items.read_by_query(
        DAYS,
        &Query::new()
            .filter(json!({"_and": [
                one_of("user_id", creators),
                {"day": {"_null": true}},
                {COMPLETE: {"_eq": true}},
            ]}))
            .fields(&["id"])
            .limit(limit),
    )?;
    Ok(headers
        .iter()
        .filter_map(|h| str_field(h, "id").map(String::from))
        .collect())
}

/// Makes `creators` unkept: their complete headers say false.
fn unkeep(items: &Items<'_>, creators: BTreeSet<&str>) -> Result<(), ItemsError> {
    let headers = complete_headers(items, creators, -1)?;
    own_writes::run(|| -> Result<(), ItemsError> {
        for id in &headers {
            items.update_one(DAYS, id, &json!({ COMPLETE: false }))?;
        }
        Ok(())
    })
}

/// Makes the creators of `videos` unkept: those videos are no longer kept.
pub fn unkeep_creators_of(items: &Items<'_>, videos: &[String]) -> Result<(), ItemsError> {
    let creators = creators_of(items, videos.iter().map(String::as_str).collect())?;
    unkeep(
        items,
        creators.values().flatten().map(String::as_str).collect(),
    )
}

/// In the writing transaction of a link between a video and a creator:
/// for a link that changed, the videos on either side are unkept (their
/// headers list their creators), with every creator of theirs, and so are
/// the creators on either side (a link removed no longer names its
/// creator).
pub fn links_before_commit(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), BoxError> {
    let pair = |r: Option<&Value>| {
        r.map(|r| {
            (
                str_field(r, "videos_id").map(String::from),
                str_field(r, "platform_users_id").map(String::from),
            )
        })
    };
    let mut videos = BTreeSet::new();
    let mut creators = BTreeSet::new();
    for key in &event.keys {
        let before = pair(event.before_of(key)).filter(|_| event.kind != EventKind::Create);
        let after = pair(event.after_of(key)).filter(|_| event.kind != EventKind::Delete);
        if before == after {
            continue;
        }
        for (video, creator) in [before, after].into_iter().flatten() {
            videos.extend(video);
            creators.extend(creator);
        }
    }
    let items = ctx.as_admin();
    let videos: Vec<String> = videos.into_iter().collect();
    video_days::unkeep(&items, &videos)?;
    unkeep(&items, creators.iter().map(String::as_str).collect())?;
    Ok(())
}

/// Before a write of `creator_days` that is not this module's: the
/// creators whose rows it touches are unkept, and nobody else's word makes
/// one kept (`complete` is written false).
pub fn before_write(write: &mut PendingWrite, ctx: &Context<'_>) -> Result<(), BoxError> {
    if own_writes::active() {
        return Ok(());
    }
    let items = ctx.as_admin();
    let creators = video_days::owners_touched(&items, write, DAYS, "user_id")?;
    unkeep(&items, creators.iter().map(String::as_str).collect())?;
    Ok(())
}

/// Whether `user`'s days are kept.
fn is_kept(items: &Items<'_>, user: &str) -> Result<bool, ItemsError> {
    Ok(!complete_headers(items, BTreeSet::from([user]), 1)?.is_empty())
}

/// A sum of counts as a backend gives it back (an integer, or a number
/// with no fraction); 0 for none.
fn whole(value: Option<&Value>) -> i64 {
    value
        .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f.round() as i64)))
        .unwrap_or(0)
}

/// Makes sure `user`'s days are kept: if not, their videos are made kept
/// and their days counted from those videos' rows, in one transaction
/// (the videos read in it, so a link made meanwhile is either counted or
/// unkeeps them again).
pub fn ensure_kept(ctx: &Context<'_>, user: &str) -> Result<(), ItemsError> {
    if is_kept(&ctx.as_admin(), user)? {
        return Ok(());
    }
    ctx.transaction(|tx| {
        let items = tx.as_admin();
        if is_kept(&items, user)? {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let videos = videos_of(&items, user)?;
        video_days::keep(&items, &videos)?;
        let mut rows = vec![json!({"user_id": user, "day": null, COMPLETE: true})];
        if !videos.is_empty() {
            let by_day = items.aggregate(
                video_days::DAYS,
                &Query::new()
                    .filter(json!({"_and": [
                        {"video_id": {"_in": videos}},
                        {"day": {"_nnull": true}},
                    ]}))
                    .aggregate("sum", &["plays", "likes"])
                    .group_by(&["day"]),
            )?;
            for row in &by_day {
                let Some(day) = str_field(row, "day") else {
                    continue;
                };
                let sum = |f: &str| whole(row.get("sum").and_then(|s| s.get(f)));
                let sums = DaySums {
                    plays: sum("plays"),
                    likes: sum("likes"),
                };
                if !sums.is_zero() {
                    rows.push(json!({"user_id": user, "day": day,
                                     "plays": sums.plays, "likes": sums.likes}));
                }
            }
        }
        own_writes::run(|| -> Result<(), ItemsError> {
            // Whatever rows they have are a count that is no longer whole.
            let stale = rows_at(&items, BTreeSet::from([user]), None)?;
            for row in stale.values() {
                items.delete_one(DAYS, &row.id)?;
            }
            for chunk in rows.chunks(1_000) {
                items.create_many(DAYS, chunk)?;
            }
            Ok(())
        })?;
        let what = format!("a creator's {} videos", videos.len());
        video_days::log_count(DAYS, &what, rows.len(), started.elapsed());
        Ok(())
    })
}

/// A count per `YYYY-MM-DD` day.
pub type PerDay = BTreeMap<String, u64>;

/// A kept creator's plays and likes per day (days with none left out).
pub fn by_day(items: &Items<'_>, user: &str) -> Result<(PerDay, PerDay), ItemsError> {
    let rows = rows_at(items, BTreeSet::from([user]), None)?;
    let (mut plays, mut likes) = (PerDay::new(), PerDay::new());
    for ((_, day), row) in rows {
        let Some(day) = day else {
            continue;
        };
        if row.sums.plays > 0 {
            plays.insert(day.clone(), row.sums.plays as u64);
        }
        if row.sums.likes > 0 {
            likes.insert(day, row.sums.likes as u64);
        }
    }
    Ok((plays, likes))
}
