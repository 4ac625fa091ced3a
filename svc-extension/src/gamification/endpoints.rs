//! `GET /gamification/leaderboard`, `/gamification/user/:id` and
//! `/gamification/achievements` (public). Weighted points are reported as
//! of the read (DECISIONS §7); ordering by the anchored sum is exact.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use host_sdk::{ApiError, Context, Items, ItemsError, Memo, MemoMap, Query, Request, Response};
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

pub fn leaderboard_page(
    ctx: &Context<'_>,
    items: &Items<'_>,
    limit: u64,
    offset: u64,
) -> Result<Vec<Value>, ItemsError> {
    let page = PAGES.get_or_try(ctx, &(limit, offset), || {
        page_rows(items, limit, offset).map(Arc::new)
    })?;
    let (rows, users) = (&page.0, &page.1);
    let (anchor, now) = (current_anchor(ctx, items)?, now_ms());
    Ok(rows
        .iter()
        .enumerate()
        .map(|(position, row)| {
            let user = str_field(row, "user_id").and_then(|u| users.get(u));
            json!({
                "user_id": row.get("user_id"),
                "display_name": user.and_then(|u| u.get("artist_name")).cloned().unwrap_or(Value::Null),
                "avatar": user.and_then(|u| u.get("avatar")).cloned().unwrap_or(Value::Null),
                "total_weighted_points": live_points(row, anchor, now),
                "total_raw_points": row.get("total_raw_points"),
                "recordings_count": row.get("recordings_count"),
                "playbacks_count": row.get("playbacks_count"),
                "achievements_count": row.get("achievements_count"),
                "rank": offset + position as u64 + 1,
            })
        })
        .collect())
}

/// `GET /gamification/leaderboard`: `limit`, `offset`.
pub fn leaderboard(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let offset = params::offset(req).unwrap_or(0);
    let data = leaderboard_page(ctx, &ctx.as_admin(), leaderboard_limit(req), offset)
        .map_err(LEADERBOARD.of())?;
    Ok(Response::ok(&json!({ "data": data })))
}

/// Fields of a stats row that are bookkeeping, not part of the record.
const INTERNAL: [&str; 2] = ["decay_sum", "completions_count"];

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
