//! `GET /gamification/leaderboard`, `/gamification/user/:id` and
//! `/gamification/achievements` (public). Weighted points are reported as
//! of the read (docs/decisions.md §7); ordering by the anchored sum is exact.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use host_sdk::raw::JsonOut;
use host_sdk::{ApiError, Context, Items, ItemsError, Memo, MemoMap, Query, Request, Response};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::ledger::anchor;
use super::time::now_ms;
use super::{ranks, score, shown_users};
use crate::failure::Failure;
use crate::params;
use crate::records::{keyed_by_id, str_field};

const LEADERBOARD: Failure = Failure::new("Failed to get leaderboard");
const USER: Failure = Failure::new("Failed to get user gamification data");
const ACHIEVEMENTS: Failure = Failure::new("Failed to get achievements");

/// Leaderboard size: default 100, at most 500; 0 or unusable → 100.
pub fn leaderboard_limit(req: &Request) -> u64 {
    params::limit(req).map(|n| n.min(500)).unwrap_or(100)
}

fn live_points(
    row: &Value,
    anchor: chrono::DateTime<chrono::Utc>,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let sum = row.get("decay_sum").and_then(Value::as_f64).unwrap_or(0.0);
    crate::analytics::js_number(score::weighted_at(sum, anchor, now))
}

/// The decay anchor, read once per data version.
static ANCHOR: Memo<DateTime<Utc>> = Memo::new();
/// Every achievement by id (a small table), once per data version.
static ACHIEVEMENT_DEFS: Memo<Arc<HashMap<String, Value>>> = Memo::new();
/// Leaderboard pages by (limit, offset), once per data version; the live
/// points are worked out at each read.
static PAGES: MemoMap<(u64, u64), Arc<Vec<KeptRow>>> = MemoMap::new(64);

/// A leaderboard row as kept: its JSON text, members in name order, but
/// for the two values worked out at each read, `rank` and
/// `total_weighted_points`, which go at `holes`; and the sum the points
/// come from.
struct KeptRow {
    text: String,
    holes: [usize; 2],
    decay_sum: f64,
}

/// A stats row of the leaderboard's read, as the host wrote it: each value
/// borrowed as its text (`None`: null), the copies of its user's fields
/// among them. Read in one pass over the page's text, nothing built per
/// member.
#[derive(Deserialize)]
struct StatsRow<'t> {
    #[serde(borrow, default)]
    id: Option<&'t RawValue>,
    #[serde(borrow, default)]
    decay_sum: Option<&'t RawValue>,
    #[serde(borrow, default)]
    total_raw_points: Option<&'t RawValue>,
    #[serde(borrow, default)]
    recordings_count: Option<&'t RawValue>,
    #[serde(borrow, default)]
    playbacks_count: Option<&'t RawValue>,
    #[serde(borrow, default)]
    achievements_count: Option<&'t RawValue>,
    #[serde(borrow, default)]
    user_id: Option<&'t RawValue>,
    #[serde(borrow, default)]
    display_name: Option<&'t RawValue>,
    #[serde(borrow, default)]
    avatar: Option<&'t RawValue>,
    #[serde(default)]
    user_copied: Option<bool>,
}

impl StatsRow<'_> {
    /// The row's id and its user's, when both are strings.
    fn ids(&self) -> Option<(String, String)> {
        let text = |v: Option<&RawValue>| serde_json::from_str::<String>(v?.get()).ok();
        Some((text(self.id)?, text(self.user_id)?))
    }

    /// Whether the row's copies are its user's.
    fn copied(&self) -> bool {
        self.user_copied == Some(true) && self.user_id.is_some_and(|u| u.get() != "null")
    }
}

/// What a leaderboard row shows of its user, as JSON texts.
struct Shown<'a> {
    id: &'a str,
    avatar: &'a str,
    display_name: &'a str,
}

impl Shown<'_> {
    /// A row without a user.
    const NONE: Shown<'static> = Shown {
        id: "null",
        avatar: "null",
        display_name: "null",
    };
}

/// A user's shown fields read apart, as JSON texts: (avatar, display name).
type ShownTexts = HashMap<String, (String, String)>;

fn json_text(value: Option<&Value>) -> String {
    value.map_or_else(|| "null".to_string(), Value::to_string)
}

impl KeptRow {
    /// The row of a stats record and what it shows of its user (the values
    /// copied as the host wrote them).
    fn new(row: &StatsRow<'_>, user: &Shown<'_>) -> Self {
        fn text(value: Option<&RawValue>) -> &str {
            value.map_or("null", RawValue::get)
        }
        // In name order, as every record is written, each name with the
        // punctuation before it; `None`: a hole.
        let members = [
            (
                "{\"achievements_count\":",
                Some(text(row.achievements_count)),
            ),
            (",\"avatar\":", Some(user.avatar)),
            (",\"display_name\":", Some(user.display_name)),
            (",\"playbacks_count\":", Some(text(row.playbacks_count))),
            (",\"rank\":", None),
            (",\"recordings_count\":", Some(text(row.recordings_count))),
            (",\"total_raw_points\":", Some(text(row.total_raw_points))),
            (",\"total_weighted_points\":", None),
            (",\"user_id\":", Some(user.id)),
        ];
        let mut out = JsonOut::with_capacity(256);
        let mut holes = [0; 2];
        let mut next_hole = 0;
        for (name, value) in members {
            out.raw(name);
            match value {
                Some(text) => out.raw(text),
                None => {
                    if let Some(at) = holes.get_mut(next_hole) {
                        *at = out.len();
                    }
                    next_hole += 1;
                }
            }
        }
        out.byte(b'}');
        KeptRow {
            text: out.into_string(),
            holes,
            decay_sum: row
                .decay_sum
                .and_then(|v| v.get().parse().ok())
                .unwrap_or(0.0),
        }
    }
}

fn current_anchor(ctx: &Context<'_>, items: &Items<'_>) -> Result<DateTime<Utc>, ItemsError> {
    ANCHOR.get_or_try(ctx, || anchor(items))
}

fn achievement_defs(
    ctx: &Context<'_>,
    items: &Items<'_>,
) -> Result<Arc<HashMap<String, Value>>, ItemsError> {
    ACHIEVEMENT_DEFS.get_or_try(ctx, || {
        let all = items.read_by_query("achievements", &Query::new().limit(-1))?;
        Ok(Arc::new(keyed_by_id(all)))
    })
}

/// The stats values a leaderboard page reads, its order first: the
/// fields of the index that serves it (`schema::leaderboard_rows`).
pub const PAGE_STATS: [&str; 6] = [
    "-decay_sum",
    "user_id",
    "total_raw_points",
    "recordings_count",
    "playbacks_count",
    "achievements_count",
];

/// A leaderboard page: the stats rows in rank order, each with the two
/// fields shown of its user copied onto it (`shown_users`), in one read;
/// read as text, nothing built into trees. The users of rows not copied
/// (rows older than the copies, or written by hand) are read apart, and
/// copied for the next read. A deep page starts where the rank tree says
/// (a page read while scores change may then start a row early or late, as
/// two pages read one after the other may).
fn page_rows(
    ctx: &Context<'_>,
    items: &Items<'_>,
    limit: u64,
    offset: u64,
) -> Result<Vec<KeptRow>, ItemsError> {
    let start = if offset >= ranks::DEEP_OFFSET {
        let Some(start) = ranks::page_start(ctx, items, offset)? else {
            return Ok(Vec::new());
        };
        Some(start)
    } else {
        None
    };
    let mut fields: Vec<&str> = PAGE_STATS
        .iter()
        .map(|f| f.trim_start_matches('-'))
        .collect();
    fields.push("id");
    fields.extend(shown_users::COPIES.iter().map(|(copy, _)| *copy));
    fields.push(shown_users::COPIED);
    let read = |filter: Option<Value>, skip: u64, take: u64| {
        let mut query = Query::new()
            .fields(&fields)
            .sort(&PAGE_STATS[..2])
            .limit(take as i64)
            .offset(skip);
        if let Some(filter) = filter {
            query = query.filter(filter);
        }
        items.read_by_query_raw("user_stats", &query)
    };
    let parse = |text| {
        serde_json::from_str::<Vec<StatsRow<'_>>>(text).map_err(|e| ItemsError::decode("stats", e))
    };
    let (filter, skip) = match &start {
        Some(start) => {
            let (filter, skip) = start.first();
            (Some(filter), skip)
        }
        None => (None, offset),
    };
    let first_text = read(filter, skip, limit)?;
    let top_up_text: String;
    let mut rows: Vec<StatsRow<'_>> = parse(&first_text)?;
    if let Some((filter, take)) = start
        .as_ref()
        .and_then(|s| s.top_up(rows.len() as u64, limit))
    {
        top_up_text = read(Some(filter), 0, take)?;
        rows.extend(parse(&top_up_text)?);
    }
    let not_copied: Vec<(String, String)> = rows
        .iter()
        .filter(|row| !row.copied())
        .filter_map(StatsRow::ids)
        .collect();
    let users = if not_copied.is_empty() {
        HashMap::new()
    } else {
        let ids: Vec<&str> = not_copied.iter().map(|(_, user)| user.as_str()).collect();
        shown_users::read_users(items, &ids)?
    };
    let texts: ShownTexts = users
        .iter()
        .map(|(id, user)| {
            let copies = shown_users::copies_of(user);
            let avatar = json_text(copies.get("avatar"));
            (id.clone(), (avatar, json_text(copies.get("display_name"))))
        })
        .collect();
    let kept = rows
        .iter()
        .map(|row| {
            let shown = if row.copied() {
                Shown {
                    id: row.user_id.map_or("null", RawValue::get),
                    avatar: row.avatar.map_or("null", RawValue::get),
                    display_name: row.display_name.map_or("null", RawValue::get),
                }
            } else {
                match row.ids().and_then(|(_, user)| texts.get(&user)) {
                    Some((avatar, name)) => Shown {
                        id: row.user_id.map_or("null", RawValue::get),
                        avatar,
                        display_name: name,
                    },
                    None => Shown::NONE,
                }
            };
            KeptRow::new(row, &shown)
        })
        .collect();
    let not_copied: Vec<&str> = not_copied.iter().map(|(row, _)| row.as_str()).collect();
    shown_users::fill(ctx, &not_copied);
    Ok(kept)
}

/// A leaderboard page: the kept rows, with the points live as of now,
/// written as `{"data": [...]}` with each row's fields in name order.
fn leaderboard_answer(
    ctx: &Context<'_>,
    items: &Items<'_>,
    limit: u64,
    offset: u64,
) -> Result<Response, ItemsError> {
    let page = PAGES.get_or_try(ctx, &(limit, offset), || {
        page_rows(ctx, items, limit, offset).map(Arc::new)
    })?;
    let (anchor, now) = (current_anchor(ctx, items)?, now_ms());
    let size: usize = page.iter().map(|row| row.text.len() + 32).sum();
    let mut out = JsonOut::with_capacity(16 + size);
    out.raw("{\"data\":");
    // Each row's two numbers, written in one buffer over and over.
    let mut number = Vec::with_capacity(32);
    out.array(page.iter().enumerate(), |out, (position, row)| {
        let [rank_at, points_at] = row.holes;
        let rank = offset + position as u64 + 1;
        out.raw(&row.text[..rank_at]);
        number.clear();
        // Writing into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut number, &rank);
        out.raw(std::str::from_utf8(&number).unwrap_or("0"));
        out.raw(&row.text[rank_at..points_at]);
        number.clear();
        let points = score::weighted_at(row.decay_sum, anchor, now);
        crate::analytics::write_js_number(&mut number, points);
        out.raw(std::str::from_utf8(&number).unwrap_or("0"));
        out.raw(&row.text[points_at..]);
    });
    out.byte(b'}');
    Ok(Response::ok_raw(out))
}

/// `GET /gamification/leaderboard`: `limit`, `offset`.
pub fn leaderboard(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let offset = params::offset(req).unwrap_or(0);
    leaderboard_answer(ctx, &ctx.as_admin(), leaderboard_limit(req), offset)
        .map_err(LEADERBOARD.of())
}

/// Fields of a stats row that are bookkeeping, not part of the record.
const INTERNAL: [&str; 6] = [
    "decay_sum",
    "completions_count",
    super::ledger::VERIFIED,
    shown_users::COPIES[0].0,
    shown_users::COPIES[1].0,
    shown_users::COPIED,
];

pub fn user_summary(ctx: &Context<'_>, items: &Items<'_>, user: &str) -> Result<Value, ItemsError> {
    let (anchor, now) = (current_anchor(ctx, items)?, now_ms());
    let rows = items.read_by_query(
        "user_stats",
        &Query::new()
            .filter(json!({"user_id": {"_eq": user}}))
            .limit(1),
    )?;
    let stats = match rows.into_iter().next() {
        None => Value::Null,
        Some(mut row) => {
            let sum = row.get("decay_sum").and_then(Value::as_f64).unwrap_or(0.0);
            let above = ranks::users_above(ctx, items, sum)?;
            let weighted = live_points(&row, anchor, now);
            if let Some(map) = row.as_object_mut() {
                for f in INTERNAL {
                    map.remove(f);
                }
                map.insert("total_weighted_points".into(), weighted);
                map.insert("rank".into(), json!(above + 1));
            }
            row
        }
    };

    let unlocked = items.read_by_query(
        "user_achievements",
        &Query::new()
            .filter(
                json!({"_and": [{"user_id": {"_eq": user}}, {"date_unlocked": {"_nnull": true}}]}),
            )
            .sort(&["-date_unlocked"]),
    )?;
    let defs = achievement_defs(ctx, items)?;
    let achievements: Vec<Value> = unlocked
        .iter()
        .filter_map(|ua| {
            let def = defs.get(str_field(ua, "achievement_id")?)?;
            let mut out = Map::new();
            for f in ["id", "code", "name", "description", "icon", "category"] {
                out.insert(f.into(), def.get(f).cloned().unwrap_or(Value::Null));
            }
            out.insert(
                "date_unlocked".into(),
                ua.get("date_unlocked").cloned().unwrap_or(Value::Null),
            );
            out.insert(
                "progress".into(),
                ua.get("progress").cloned().unwrap_or(Value::Null),
            );
            out.insert(
                "required_count".into(),
                def.get("required_count").cloned().unwrap_or(Value::Null),
            );
            Some(Value::Object(out))
        })
        .collect();

    let recent_points = items.read_by_query(
        "user_points",
        &Query::new()
            .filter(json!({"user_id": {"_eq": user}}))
            .fields(&["action", "points", "date_created", "recording_id"])
            .sort(&["-date_created"])
            .limit(10),
    )?;
    Ok(json!({"stats": stats, "achievements": achievements, "recent_points": recent_points}))
}

/// `GET /gamification/user/:id`.
pub fn user(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let body = user_summary(
        ctx,
        &ctx.as_admin(),
        req.path_param("id").unwrap_or_default(),
    )
    .map_err(USER.of())?;
    Ok(Response::ok(&body))
}

/// `GET /gamification/achievements`: published ones by `sort`.
pub fn achievements(_req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let data = ctx
        .as_admin()
        .read_by_query(
            "achievements",
            &Query::new()
                .filter(json!({"status": {"_eq": "published"}}))
                .fields(&[
                    "id",
                    "code",
                    "name",
                    "description",
                    "icon",
                    "category",
                    "required_count",
                    "points_reward",
                ])
                .sort(&["sort"]),
        )
        .map_err(ACHIEVEMENTS.of())?;
    Ok(Response::ok(&json!({ "data": data })))
}
