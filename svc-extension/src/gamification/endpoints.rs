//! `GET /gamification/leaderboard`, `/gamification/user/:id` and
//! `/gamification/achievements` (public). Weighted points are reported as
//! of the read (DECISIONS §7); ordering by the anchored sum is exact.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use host_sdk::{ApiError, Context, Items, ItemsError, Memo, MemoMap, Query, Request, Response};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::ledger::anchor;
use super::time::now_ms;
use super::{ranks, score};
use crate::failure::Failure;
use crate::params;
use crate::records::{by_id, ids_of, keyed_by_id, str_field};

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
/// Leaderboard pages (stats rows and their users) by (limit, offset), once
/// per data version; the live points are worked out at each read.
static PAGES: MemoMap<(u64, u64), Arc<Page>> = MemoMap::new(64);

/// Stats rows of a leaderboard page and their users by id.
type Page = (Vec<Value>, HashMap<String, Value>);

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

fn page_rows(
    items: &Items<'_>,
    limit: u64,
    offset: u64,
) -> Result<(Vec<Value>, HashMap<String, Value>), ItemsError> {
    let rows = items.read_by_query(
        "user_stats",
        &Query::new()
            .fields(&[
                "user_id",
                "decay_sum",
                "total_raw_points",
                "recordings_count",
                "playbacks_count",
                "achievements_count",
            ])
            .sort(&["-decay_sum", "user_id"])
            .limit(limit as i64)
            .offset(offset),
    )?;
    let users = by_id(items, "platform_users", &ids_of(&rows, "user_id"))?;
    Ok((rows, users))
}

/// One leaderboard row as answered, borrowed from the kept page; fields in
/// the order a JSON object of them prints.
#[derive(Serialize)]
struct Entry<'a> {
    achievements_count: &'a Value,
    avatar: &'a Value,
    display_name: &'a Value,
    playbacks_count: &'a Value,
    rank: u64,
    recordings_count: &'a Value,
    total_raw_points: &'a Value,
    total_weighted_points: Value,
    user_id: &'a Value,
}

#[derive(Serialize)]
struct Leaderboard<'a> {
    data: Vec<Entry<'a>>,
}

static NULL: Value = Value::Null;

fn field<'a>(record: Option<&'a Value>, name: &str) -> &'a Value {
    record.and_then(|r| r.get(name)).unwrap_or(&NULL)
}

/// A leaderboard page: the kept rows, with the points live as of now.
/// Written straight from the kept page, without a tree per row.
fn leaderboard_answer(
    ctx: &Context<'_>,
    items: &Items<'_>,
    limit: u64,
    offset: u64,
) -> Result<Response, ItemsError> {
    let page = PAGES.get_or_try(ctx, &(limit, offset), || {
        page_rows(items, limit, offset).map(Arc::new)
    })?;
    let (rows, users) = (&page.0, &page.1);
    let (anchor, now) = (current_anchor(ctx, items)?, now_ms());
    let data = rows
        .iter()
        .enumerate()
        .map(|(position, row)| {
            let user = str_field(row, "user_id").and_then(|u| users.get(u));
            Entry {
                achievements_count: field(Some(row), "achievements_count"),
                avatar: field(user, "avatar"),
                display_name: field(user, "artist_name"),
                playbacks_count: field(Some(row), "playbacks_count"),
                rank: offset + position as u64 + 1,
                recordings_count: field(Some(row), "recordings_count"),
                total_raw_points: field(Some(row), "total_raw_points"),
                total_weighted_points: live_points(row, anchor, now),
                user_id: field(Some(row), "user_id"),
            }
        })
        .collect();
    Ok(Response::ok(&Leaderboard { data }))
}

/// `GET /gamification/leaderboard`: `limit`, `offset`.
pub fn leaderboard(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let offset = params::offset(req).unwrap_or(0);
    leaderboard_answer(ctx, &ctx.as_admin(), leaderboard_limit(req), offset)
        .map_err(LEADERBOARD.of())
}

/// Fields of a stats row that are bookkeeping, not part of the record.
const INTERNAL: [&str; 3] = ["decay_sum", "completions_count", super::ledger::VERIFIED];

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
    let body = user_summary(ctx, &ctx.as_admin(), req.param("id")).map_err(USER.of())?;
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
