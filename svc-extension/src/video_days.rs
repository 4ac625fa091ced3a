//! What `GET /analytics` sums, kept per video and UTC day of
//! `date_created` (`video_days`): plays, likes, completed plays, and the
//! watch time of the plays that have one. A video's header row (the row
//! whose `day` is null) sums all of its records, dated or not, so a
//! creator's analytics read one row per video for its figures; the days
//! are summed once more per creator ([`crate::creator_days`]).
//!
//! A video's rows are *kept* when its header says `complete` and `whole`
//! (a header of an earlier release summed the undated records only).
//! Only kept videos are followed: an in-transaction hook moves their rows
//! with every write of a play or a like, whatever path made it. A video is
//! kept from the first analytics read that covers it ([`keep`] counts its
//! records once, in the reader's transaction), so a database made by an
//! earlier release needs no step of its own. Any write of `video_days` by
//! someone else than this module makes the videos it touches unkept again,
//! and their creators' rows with them: they are counted afresh at the next
//! read.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use host_sdk::{BoxError, Context, EventKind, ItemEvent, Items, ItemsError, PendingWrite, Query};
use serde_json::{json, Value};

use crate::creator_days;
use crate::own_writes;
use crate::records::str_field;

/// The collection.
pub const DAYS: &str = "video_days";
/// The collections whose records it sums.
pub const WATCHED: [&str; 2] = ["video_plays", "video_likes"];
/// On a video's header row: its rows sum every play and like of it.
pub const COMPLETE: &str = "complete";
/// On a video's header row: the header sums the whole video, not only its
/// undated records (migration 0023).
pub const WHOLE: &str = "whole";
/// On a kept video's header row: the ids of the creators its links name,
/// comma-separated, so that a play's hook need not read the links (a
/// link written makes its video unkept: [`creator_days`]).
pub const CREATORS: &str = "creators";

/// The most rows one create call writes while counting.
const WRITE_CHUNK: usize = 1_000;

/// The sums of one video and day (or of its undated records).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sums {
    pub plays: i64,
    pub likes: i64,
    pub completed: i64,
    /// The sum of the plays' `duration_watched` that are not null.
    pub watch_sum: f64,
    /// How many plays have a `duration_watched`.
    pub watch_count: i64,
}

impl Sums {
    fn add(&mut self, other: &Sums, sign: i64) {
        self.plays += sign * other.plays;
        self.likes += sign * other.likes;
        self.completed += sign * other.completed;
        self.watch_sum += sign as f64 * other.watch_sum;
        self.watch_count += sign * other.watch_count;
    }

    fn is_zero(&self) -> bool {
        *self == Sums::default()
    }

    fn of_row(row: &Value) -> Sums {
        let int = |f: &str| row.get(f).and_then(Value::as_i64).unwrap_or(0);
        Sums {
            plays: int("plays"),
            likes: int("likes"),
            completed: int("completed"),
            watch_sum: row.get("watch_sum").and_then(Value::as_f64).unwrap_or(0.0),
            watch_count: int("watch_count"),
        }
    }

    fn to_row(self) -> Value {
        json!({
            "plays": self.plays,
            "likes": self.likes,
            "completed": self.completed,
            "watch_sum": self.watch_sum,
            "watch_count": self.watch_count,
        })
    }

    /// A new row holding these sums at `place`.
    fn new_row(self, (video, day): &Place) -> Value {
        let mut row = self.to_row();
        row["video_id"] = json!(video);
        row["day"] = json!(day);
        row
    }
}

/// The UTC day a timestamp falls on, as the host's `date(field)` groups
/// it (the stored text's first ten characters); `None` without one.
pub fn day_of(timestamp: Option<&Value>) -> Option<String> {
    let text = timestamp?.as_str()?;
    Some(text.chars().take(10).collect())
}

/// A row's place: a video, and a day (`None`: the header).
pub type Place = (String, Option<String>);

/// What one record adds to its video's rows (the header's, and its day's
/// when it has one); `None` when it names no video.
fn share(collection: &str, record: &Value) -> Option<(Place, Sums)> {
    let video = str_field(record, "video_id")?.to_string();
    let day = day_of(record.get("date_created"));
    let sums = if collection == "video_likes" {
        Sums {
            likes: 1,
            ..Sums::default()
        }
    } else {
        let watched = record.get("duration_watched").and_then(Value::as_f64);
        Sums {
            plays: 1,
            likes: 0,
            completed: i64::from(record.get("completed").and_then(Value::as_bool) == Some(true)),
            watch_sum: watched.unwrap_or(0.0),
            watch_count: i64::from(watched.is_some()),
        }
    };
    Some(((video, day), sums))
}

/// The change a write makes to each place's sums: each record's share
/// before the write taken away, its share after added; a record whose
/// share did not change is skipped (an update of other fields writes
/// nothing, and no rounding of the watch time is left behind).
pub fn changes(event: &ItemEvent) -> BTreeMap<Place, Sums> {
    let share_of = |r: Option<&Value>| r.and_then(|r| share(&event.collection, r));
    let mut out: BTreeMap<Place, Sums> = BTreeMap::new();
    for key in &event.keys {
        let before = share_of(event.before_of(key)).filter(|_| event.kind != EventKind::Create);
        let after = share_of(event.after_of(key)).filter(|_| event.kind != EventKind::Delete);
        if before == after {
            continue;
        }
        for (share, sign) in [(before, -1), (after, 1)] {
            if let Some(((video, day), sums)) = share {
                if day.is_some() {
                    out.entry((video.clone(), day))
                        .or_default()
                        .add(&sums, sign);
                }
                out.entry((video, None)).or_default().add(&sums, sign);
            }
        }
    }
    out.retain(|_, sums| !sums.is_zero());
    out
}

/// The header rows of the kept ones of `videos` (id and sums), by video.
fn headers(
    items: &Items<'_>,
    videos: &[String],
) -> Result<HashMap<String, (String, Sums)>, ItemsError> {
    if videos.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = items.read_by_query(
        DAYS,
        &Query::new()
            .filter(json!({"_and": [
                {"video_id": {"_in": videos}},
                {"day": {"_null": true}},
                {COMPLETE: {"_eq": true}},
                {WHOLE: {"_eq": true}},
            ]}))
            .fields(&[
                "id",
                "video_id",
                "plays",
                "likes",
                "completed",
                "watch_sum",
                "watch_count",
            ])
            .limit(-1),
    )?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let id = str_field(r, "id")?.to_string();
            Some((str_field(r, "video_id")?.to_string(), (id, Sums::of_row(r))))
        })
        .collect())
}

/// In the writing transaction of a play or a like: moves the rows of the
/// kept videos it changes (one read, and a write per row changed), then
/// their creators' days.
pub fn before_commit(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), BoxError> {
    let changes = changes(event);
    if changes.is_empty() {
        return Ok(());
    }
    let items = ctx.as_admin();
    let mut rows = rows_at(&items, &changes)?;
    let kept = |video: &str| {
        rows.get(&(video.to_string(), None))
            .is_some_and(|row| row.kept)
    };
    let changes: Vec<(Place, Sums)> = changes
        .into_iter()
        .filter(|((video, _), _)| kept(video))
        .collect();
    if changes.is_empty() {
        return Ok(());
    }
    let creators: HashMap<String, Vec<String>> = changes
        .iter()
        .filter_map(|((video, _), _)| {
            let header = rows.get(&(video.clone(), None))?;
            Some((video.clone(), header.creators.clone()))
        })
        .collect();
    own_writes::run(|| -> Result<(), ItemsError> {
        for (place, change) in &changes {
            match rows.remove(place) {
                Some(Row { id, mut sums, .. }) => {
                    sums.add(change, 1);
                    if place.1.is_some() && sums.is_zero() {
                        items.delete_one(DAYS, &id)?;
                    } else {
                        items.update_one(DAYS, &id, &sums.to_row())?;
                    }
                }
                // A kept video always has its header; a day it has no row
                // for starts at zero.
                None => {
                    items.create_one(DAYS, &change.new_row(place))?;
                }
            }
        }
        Ok(())
    })?;
    creator_days::follow(&items, &changes, &creators)?;
    Ok(())
}

/// A stored row of sums.
struct Row {
    id: String,
    sums: Sums,
    /// On a header: whether its video is kept.
    kept: bool,
    /// On a header: its video's creators ([`CREATORS`]).
    creators: Vec<String>,
}

/// The ids a [`CREATORS`] field lists.
fn creators_listed(row: &Value) -> Vec<String> {
    str_field(row, CREATORS)
        .map(|list| {
            list.split(',')
                .filter(|id| !id.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The stored rows at the places changed, and the headers of their
/// videos, in one read (two for several videos:
/// [`read_days_and_headers`]): place → row.
fn rows_at(
    items: &Items<'_>,
    changes: &BTreeMap<Place, Sums>,
) -> Result<HashMap<Place, Row>, ItemsError> {
    let videos: BTreeSet<&str> = changes.keys().map(|(v, _)| v.as_str()).collect();
    let days: BTreeSet<&str> = changes.keys().filter_map(|(_, d)| d.as_deref()).collect();
    let rows = read_days_and_headers(
        items,
        DAYS,
        Query::new().limit(-1),
        ("video_id", videos),
        days,
    )?;
    Ok(rows
        .iter()
        .filter_map(|row| {
            let video = str_field(row, "video_id")?.to_string();
            let day = str_field(row, "day").map(String::from);
            let found = Row {
                id: str_field(row, "id")?.to_string(),
                sums: Sums::of_row(row),
                kept: [COMPLETE, WHOLE]
                    .iter()
                    .all(|flag| row.get(*flag).and_then(Value::as_bool) == Some(true)),
                creators: creators_listed(row),
            };
            Some(((video, day), found))
        })
        .collect())
}

/// `field` equal to one of `values`: `_eq` for the one value a play or a
/// like names, which the database looks up directly in the unique index
/// (an `_in` list is first made into a table of its own).
pub fn one_of(field: &str, values: BTreeSet<&str>) -> Value {
    match values.first() {
        Some(only) if values.len() == 1 => json!({ field: { "_eq": only } }),
        _ => json!({ field: { "_in": values } }),
    }
}

/// The rows of `owners` (named by `owner`) on `days`, and their headers,
/// read from `collection` with `query`'s fields, each read served by the
/// `(owner, day)` unique index on both backends. One owner: one read, the
/// owner and a choice of days (`day` one of them or null). Several: the
/// days and then the headers, two reads. The choice beside a list of
/// owners is planned by SQLite as a scan of every row of the collection;
/// two branches each naming the list, by PostgreSQL.
pub fn read_days_and_headers(
    items: &Items<'_>,
    collection: &str,
    query: Query,
    (owner, owners): (&str, BTreeSet<&str>),
    days: BTreeSet<&str>,
) -> Result<Vec<Value>, ItemsError> {
    let header = json!({"day": {"_null": true}});
    let filters = match (owners.len(), days.is_empty()) {
        (_, true) => vec![json!({"_and": [one_of(owner, owners), header]})],
        (1, false) => vec![json!({"_and": [
            one_of(owner, owners),
            {"_or": [one_of("day", days), header]},
        ]})],
        (_, false) => vec![
            json!({"_and": [one_of(owner, owners.clone()), one_of("day", days)]}),
            json!({"_and": [one_of(owner, owners), header]}),
        ],
    };
    let mut rows = Vec::new();
    for filter in filters {
        rows.extend(items.read_by_query(collection, &query.clone().filter(filter))?);
    }
    Ok(rows)
}

/// Before a write of `video_days` that is not this module's (an
/// administrator's, an import's, a video's delete cascading): the videos
/// whose rows it touches are no longer kept, and nobody else's word makes
/// one kept (`complete` is written false). A hook before the write, not
/// after it: the host then builds no item event for this module's own
/// writes of the sums, which follow every play.
pub fn before_write(write: &mut PendingWrite, ctx: &Context<'_>) -> Result<(), BoxError> {
    if own_writes::active() {
        return Ok(());
    }
    let items = ctx.as_admin();
    let videos: Vec<String> = owners_touched(&items, write, DAYS, "video_id")?
        .into_iter()
        .collect();
    unkeep(&items, &videos)?;
    Ok(())
}

/// For a write of kept sums (`collection`, whose rows name their owner in
/// `owner`) by anyone but their keeper: the owners of the rows it touches,
/// before and after. Nobody else's word makes a header complete: the
/// payload's `complete` is written false.
pub fn owners_touched(
    items: &Items<'_>,
    write: &mut PendingWrite,
    collection: &str,
    owner: &str,
) -> Result<BTreeSet<String>, ItemsError> {
    let mut owners = BTreeSet::new();
    if !write.keys.is_empty() {
        let rows = items.read_by_query(
            collection,
            &Query::new()
                .filter(json!({"id": {"_in": write.keys}}))
                .fields(&[owner])
                .limit(-1),
        )?;
        owners.extend(
            rows.iter()
                .filter_map(|r| str_field(r, owner).map(String::from)),
        );
    }
    if write.kind != EventKind::Delete {
        if let Some(payload) = write.payload.as_object_mut() {
            if let Some(id) = payload.get(owner).and_then(Value::as_str) {
                owners.insert(id.to_string());
            }
            payload.insert(COMPLETE.into(), Value::Bool(false));
        }
    }
    Ok(owners)
}

/// Makes the kept ones of `videos` unkept (their headers say not
/// complete), and their creators' days with them: those are kept only
/// while all their videos are.
pub fn unkeep(items: &Items<'_>, videos: &[String]) -> Result<(), ItemsError> {
    let kept = headers(items, videos)?;
    if kept.is_empty() {
        return Ok(());
    }
    own_writes::run(|| -> Result<(), ItemsError> {
        for (id, _) in kept.values() {
            items.update_one(DAYS, id, &json!({ COMPLETE: false }))?;
        }
        Ok(())
    })?;
    let unkept: Vec<String> = kept.into_keys().collect();
    creator_days::unkeep_creators_of(items, &unkept)
}

/// A first count that takes this long is logged at `info`, others at
/// `debug`.
const SLOW_COUNT: std::time::Duration = std::time::Duration::from_secs(1);

/// Makes sure every one of `videos` (distinct) is kept: the ones that are
/// not have their rows counted, in one transaction.
pub fn ensure_kept(ctx: &Context<'_>, videos: &[String]) -> Result<(), ItemsError> {
    if headers(&ctx.as_admin(), videos)?.len() == videos.len() {
        return Ok(());
    }
    ctx.transaction(|tx| keep(&tx.as_admin(), videos))
}

/// Counts the rows of those of `videos` that are not kept, in the
/// caller's transaction (`items` bound to it), and makes them kept.
pub fn keep(items: &Items<'_>, videos: &[String]) -> Result<(), ItemsError> {
    let kept = headers(items, videos)?;
    let missing: Vec<String> = videos
        .iter()
        .filter(|v| !kept.contains_key(*v))
        .cloned()
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let rows = count(items, &missing)?;
    let creators = creator_days::creators_of(items, missing.iter().map(String::as_str).collect())?;
    own_writes::run(|| -> Result<(), ItemsError> {
        // Whatever rows they have are a count that is no longer whole.
        let stale = items.read_by_query(
            DAYS,
            &Query::new()
                .filter(json!({"video_id": {"_in": missing}}))
                .fields(&["id"])
                .limit(-1),
        )?;
        for row in &stale {
            if let Some(id) = str_field(row, "id") {
                items.delete_one(DAYS, id)?;
            }
        }
        let records: Vec<Value> = rows
            .iter()
            .map(|(place, sums)| {
                let mut row = sums.new_row(place);
                if place.1.is_none() {
                    row[COMPLETE] = json!(true);
                    row[WHOLE] = json!(true);
                    let of_video = creators.get(&place.0).into_iter().flatten();
                    row[CREATORS] = json!(of_video.cloned().collect::<Vec<_>>().join(","));
                }
                row
            })
            .collect();
        for chunk in records.chunks(WRITE_CHUNK) {
            items.create_many(DAYS, chunk)?;
        }
        Ok(())
    })?;
    let what = format!("{} videos", missing.len());
    log_count(DAYS, &what, rows.len(), started.elapsed());
    Ok(())
}

/// Logs a first count: one that took [`SLOW_COUNT`] or more is worth an
/// operator's eye (`info`), a quick one is not (`debug`).
pub fn log_count(collection: &str, what: &str, rows: usize, took: std::time::Duration) {
    let level = if took >= SLOW_COUNT {
        log::Level::Info
    } else {
        log::Level::Debug
    };
    log::log!(
        level,
        "{collection}: counted {what} into {rows} rows in {:.3} s",
        took.as_secs_f64()
    );
}

/// The rows of `videos` as their records give them, a header for each
/// that sums all of its video's.
fn count(items: &Items<'_>, videos: &[String]) -> Result<BTreeMap<Place, Sums>, ItemsError> {
    let mut rows: BTreeMap<Place, Sums> = videos
        .iter()
        .map(|v| ((v.clone(), None), Sums::default()))
        .collect();
    let group = ["video_id", "date(date_created)"];
    let each = |collection: &str,
                query: Query,
                only: Option<Value>,
                rows: &mut BTreeMap<Place, Sums>,
                add: &dyn Fn(&mut Sums, &Value)|
     -> Result<(), ItemsError> {
        let in_videos = json!({"video_id": {"_in": videos}});
        let filter = match only {
            Some(only) => json!({"_and": [in_videos, only]}),
            None => in_videos,
        };
        let query = query.filter(filter).group_by(&group);
        for row in items.aggregate(collection, &query)? {
            let Some(video) = str_field(&row, "video_id") else {
                continue;
            };
            let day = str_field(&row, "date(date_created)").map(String::from);
            add(rows.entry((video.to_string(), day)).or_default(), &row);
        }
        Ok(())
    };
    let count_of = |row: &Value| row.get("count").and_then(Value::as_i64).unwrap_or(0);
    each(
        "video_plays",
        Query::new()
            .aggregate("count", &["*"])
            .aggregate("sum", &["duration_watched"]),
        None,
        &mut rows,
        &|s, row| {
            s.plays = count_of(row);
            s.watch_sum = row
                .pointer("/sum/duration_watched")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
        },
    )?;
    each(
        "video_plays",
        Query::new().aggregate("count", &["duration_watched"]),
        None,
        &mut rows,
        &|s, row| {
            s.watch_count = row
                .pointer("/count/duration_watched")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        },
    )?;
    each(
        "video_plays",
        Query::new().aggregate("count", &["*"]),
        Some(json!({"completed": {"_eq": true}})),
        &mut rows,
        &|s, row| s.completed = count_of(row),
    )?;
    each(
        "video_likes",
        Query::new().aggregate("count", &["*"]),
        None,
        &mut rows,
        &|s, row| s.likes = count_of(row),
    )?;
    // The groups give each header the undated records; it sums them all.
    let dated: Vec<(String, Sums)> = rows
        .iter()
        .filter(|((_, day), _)| day.is_some())
        .map(|((video, _), sums)| (video.clone(), *sums))
        .collect();
    for (video, sums) in dated {
        rows.entry((video, None)).or_default().add(&sums, 1);
    }
    Ok(rows)
}

/// What analytics show of a kept video: its completed plays, and the mean
/// watch time (`None`: no play has one).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Figures {
    pub completed: u64,
    pub mean_watch: Option<f64>,
}

impl Figures {
    fn of(sums: &Sums) -> Figures {
        Figures {
            completed: sums.completed.max(0) as u64,
            mean_watch: (sums.watch_count > 0).then(|| sums.watch_sum / sums.watch_count as f64),
        }
    }
}

/// The figures of the kept ones of `videos`, from their headers: one row
/// each, whatever their calendars.
pub fn figures(
    items: &Items<'_>,
    videos: &[String],
) -> Result<HashMap<String, Figures>, ItemsError> {
    Ok(headers(items, videos)?
        .into_iter()
        .map(|(video, (_, sums))| (video, Figures::of(&sums)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(
        kind: EventKind,
        collection: &str,
        before: Vec<Value>,
        after: Vec<Value>,
    ) -> ItemEvent {
        ItemEvent {
            kind,
            collection: collection.into(),
            keys: vec!["p".into()],
            payload: json!({}),
            before,
            after,
            accountability: None,
        }
    }

    fn play(video: &str, at: Option<&str>, watched: Value, completed: bool) -> Value {
        json!({"id": "p", "video_id": video, "date_created": at,
               "duration_watched": watched, "completed": completed})
    }

    #[test]
    fn a_day_is_the_timestamps_first_ten_characters() {
        assert_eq!(
            day_of(Some(&json!("2026-11-28T23:59:59.999Z"))).as_deref(),
            Some("2026-11-28")
        );
        assert_eq!(day_of(Some(&Value::Null)), None);
        assert_eq!(day_of(None), None);
    }

    #[test]
    fn a_play_created_adds_to_its_day_and_its_videos_header() {
        let e = event(
            EventKind::Create,
            "video_plays",
            vec![],
            vec![play("v", Some("2026-01-02T10:00:00Z"), json!(30.5), true)],
        );
        let c = changes(&e);
        assert_eq!(c.len(), 2);
        let one = Sums {
            plays: 1,
            likes: 0,
            completed: 1,
            watch_sum: 30.5,
            watch_count: 1,
        };
        assert_eq!(c[&("v".to_string(), Some("2026-01-02".to_string()))], one);
        assert_eq!(c[&("v".to_string(), None)], one);
    }

    #[test]
    fn an_undated_play_without_duration_goes_to_the_header() {
        let e = event(
            EventKind::Create,
            "video_plays",
            vec![],
            vec![play("v", None, Value::Null, false)],
        );
        let sums = changes(&e)[&("v".to_string(), None)];
        assert_eq!(sums.plays, 1);
        assert_eq!(sums.watch_count, 0);
        assert_eq!(sums.completed, 0);
    }

    #[test]
    fn an_update_moves_between_videos_and_days_and_nothing_when_unchanged() {
        let before = play("v", Some("2026-01-02T10:00:00Z"), json!(10), false);
        let after = play("w", Some("2026-01-03T10:00:00Z"), json!(20), true);
        let c = changes(&event(
            EventKind::Update,
            "video_plays",
            vec![before.clone()],
            vec![after],
        ));
        assert_eq!(c[&("v".to_string(), Some("2026-01-02".into()))].plays, -1);
        assert_eq!(
            c[&("v".to_string(), Some("2026-01-02".into()))].watch_sum,
            -10.0
        );
        assert_eq!(
            c[&("w".to_string(), Some("2026-01-03".into()))].completed,
            1
        );
        assert_eq!(c[&("v".to_string(), None)].watch_sum, -10.0);
        assert_eq!(c[&("w".to_string(), None)].plays, 1);
        // A play whose player was set null sums the same.
        let mut same = before.clone();
        same["user_id"] = Value::Null;
        assert!(changes(&event(
            EventKind::Update,
            "video_plays",
            vec![before],
            vec![same]
        ))
        .is_empty());
    }

    #[test]
    fn a_like_deleted_takes_one_from_its_day() {
        let like = json!({"id": "p", "video_id": "v", "date_created": "2026-01-02T00:00:00Z"});
        let c = changes(&event(EventKind::Delete, "video_likes", vec![like], vec![]));
        assert_eq!(c[&("v".to_string(), Some("2026-01-02".into()))].likes, -1);
    }
}
