//! The gamification layer of the svc extension, read straight from
//! docs/service-api.md ("Gamification": point values and rules 1–7, the
//! recording play endpoints, "Gamification (public)", "Errors", "Limits") and
//! docs/decisions.md (§5, §6, §7: the triggers of RECORDING_CREATE /
//! RECORDING_FEATURED / COMMENT_CREATE, the recalculation schedule
//! `recalculate-stats`, `total_weighted_points` as of the read, the 17 seeded
//! achievements, the special achievements unlocking only in the recalculation).
//!
//! Expected values are recomputed here from the raw records (read as admin
//! through the items API) with the rules as written, never from the
//! implementation's code.

use platform_tests::time::{days_ago, iso, now_ms, ts_ms};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use platform_tests::count_trees;
use platform_tests::score::{seeded_achievements, weighted, Seeded};
use platform_tests::{int_of, keys_of, rec_body, user_email, Host, HostOptions, Rng, ADMIN_TOKEN};
use serde_json::{json, Value};

const REL_TOL: f64 = 1e-9;

fn seeded(code: &str) -> Seeded {
    seeded_achievements()
        .into_iter()
        .find(|a| a.code == code)
        .unwrap_or_else(|| panic!("not seeded: {code}"))
}

fn codes_of(category: &str) -> BTreeSet<String> {
    seeded_achievements()
        .into_iter()
        .filter(|a| a.category == category)
        .map(|a| a.code)
        .collect()
}

// ---------------------------------------------------------------- time

fn pause() {
    std::thread::sleep(Duration::from_millis(15));
}

// ---------------------------------------------------------------- rule 2

/// A point action as stored.
#[derive(Debug, Clone)]
struct Action {
    user: String,
    action: String,
    points: i64,
    recording: Option<String>,
    created: i64,
}

fn action_of(v: &Value) -> Action {
    Action {
        user: v["user_id"].as_str().unwrap_or_default().to_string(),
        action: v["action"].as_str().unwrap_or_default().to_string(),
        points: v["points"]
            .as_i64()
            .unwrap_or_else(|| panic!("points not an integer: {v}")),
        recording: v["recording_id"].as_str().map(str::to_string),
        created: ts_ms(&v["date_created"]),
    }
}

/// The (points, created at) pairs of actions, for rule 2.
fn points_of<'a>(actions: &'a [&Action]) -> impl Iterator<Item = (i64, i64)> + 'a {
    actions.iter().map(|a| (a.points, a.created))
}

/// `actual` was read between `t0` and `t1`: it must lie between rule 2 at
/// those instants, within the relative tolerance.
fn assert_weighted(actual: &Value, actions: &[&Action], t0: i64, t1: i64, what: &str) {
    let actual = actual
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: total_weighted_points is not a number: {actual}"));
    let hi = weighted(points_of(actions), t0 - 1);
    let lo = weighted(points_of(actions), t1 + 1);
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    assert!(
        actual >= lo - lo.abs() * REL_TOL - 1e-12 && actual <= hi + hi.abs() * REL_TOL + 1e-12,
        "{what}: total_weighted_points {actual} is not rule 2's value (between {lo} and {hi})"
    );
}

// ---------------------------------------------------------------- HTTP helpers

fn viewer(host: &Host, token: &str) -> String {
    host.user(Some("Viewer"), token)
}

/// POST /svc/recordings; the new id.
fn create_recording(host: &Host, token: &str, status: Option<&str>) -> String {
    let r = host.post("/svc/recordings", Some(token), &rec_body("Wave", status));
    assert_eq!(r.status, 201, "create recording: {}", r.body);
    r.json()["id"].as_str().expect("recording id").to_string()
}

/// PATCH /svc/recordings/:id {status} as the owner.
fn set_status(host: &Host, token: &str, id: &str, status: &str) {
    let r = host.patch(
        &format!("/svc/recordings/{id}"),
        Some(token),
        &json!({ "status": status }),
    );
    assert_eq!(r.status, 200, "set status {status}: {}", r.body);
}

/// PATCH /items/recordings/:id {featured} as admin.
fn set_featured(host: &Host, id: &str, featured: bool) {
    let r = host.patch(
        &format!("/items/recordings/{id}"),
        Some(ADMIN_TOKEN),
        &json!({ "featured": featured }),
    );
    assert_eq!(r.status, 200, "feature: {}", r.body);
}

/// PATCH /svc/recordings/:id/play/:playId.
fn report(host: &Host, rec: &str, play_id: &str, token: Option<&str>, completed: bool) {
    let r = host.patch(
        &format!("/svc/recordings/{rec}/play/{play_id}"),
        token,
        &json!({"duration_played": 1200, "completed": completed}),
    );
    assert_eq!(r.status, 200, "play update: {}", r.body);
    assert_eq!(r.json(), json!({"success": true}));
}

/// A comment on `collection`/`item` by the token's user, written by an
/// administrator on their behalf: members comment only on items they may
/// read (others' recordings are private), and the rules count a comment
/// by its author, whoever wrote it.
fn post_comment(host: &Host, token: &str, collection: &str, item: &str) -> platform_tests::Resp {
    let author = host.admin_find("platform_users", &json!({"email": user_email(token)}));
    host.post(
        "/items/platform_comments",
        Some(ADMIN_TOKEN),
        &json!({"collection": collection, "item": item, "comment": "nice",
                "user_created": author[0]["id"]}),
    )
}

/// [`post_comment`], which must be written.
#[track_caller]
fn comment(host: &Host, token: &str, collection: &str, item: &str) {
    let r = post_comment(host, token, collection, item);
    assert_eq!(r.status, 200, "comment: {}", r.body);
}

/// [`post_comment`] on an item that does not exist: refused, as every
/// comment on a missing item is.
#[track_caller]
fn refused_comment(host: &Host, token: &str, collection: &str, item: &str) {
    let r = post_comment(host, token, collection, item);
    assert_eq!(r.status, 403, "comment: {}", r.body);
}

/// GET /svc/gamification/user/:id without a token.
fn gam(host: &Host, user: &str) -> Value {
    let r = host.get(&format!("/svc/gamification/user/{user}"), None);
    assert_eq!(r.status, 200, "gamification user: {}", r.body);
    r.json()
}

fn stats(host: &Host, user: &str) -> Value {
    gam(host, user)["stats"].clone()
}

/// The user's point actions.
fn actions(host: &Host, user: &str) -> Vec<Action> {
    host.admin_find("user_points", &json!({"user_id": {"_eq": user}}))
        .iter()
        .map(action_of)
        .collect()
}

fn all_actions(host: &Host) -> Vec<Action> {
    host.admin_all("user_points", "*")
        .iter()
        .map(action_of)
        .collect()
}

/// The user's actions with this name.
fn named(host: &Host, user: &str, action: &str) -> Vec<Action> {
    actions(host, user)
        .into_iter()
        .filter(|a| a.action == action)
        .collect()
}

/// Achievement rows by id.
fn achievements_by_id(host: &Host) -> HashMap<String, Value> {
    host.admin_all("achievements", "*")
        .into_iter()
        .map(|a| (a["id"].as_str().expect("id").to_string(), a))
        .collect()
}

/// The user's user_achievements rows, by achievement code.
fn user_achs(host: &Host, user: &str) -> BTreeMap<String, Value> {
    let by_id = achievements_by_id(host);
    let mut out = BTreeMap::new();
    for row in host.admin_find("user_achievements", &json!({"user_id": {"_eq": user}})) {
        let a = &by_id[row["achievement_id"].as_str().expect("achievement_id")];
        let code = a["code"].as_str().expect("code").to_string();
        assert!(
            out.insert(code.clone(), row).is_none(),
            "two rows for {code}"
        );
    }
    out
}

fn progress_of(rows: &BTreeMap<String, Value>, code: &str) -> i64 {
    rows.get(code)
        .unwrap_or_else(|| panic!("no user achievement row for {code}: {rows:?}"))["progress"]
        .as_i64()
        .unwrap_or_else(|| panic!("progress of {code} not an integer"))
}

fn unlocked(rows: &BTreeMap<String, Value>, code: &str) -> bool {
    rows.get(code)
        .is_some_and(|r| !r["date_unlocked"].is_null())
}

/// Runs svc's `recalculate-stats` on the host's database while it serves
/// (as a cron job would): through the test kit for an in-process host, as
/// `example-host schedule run svc recalculate-stats` beside a host process.
fn recalc(host: &Host) {
    host.run_schedule("svc", "recalculate-stats");
}

/// Rule 3 values recomputed from raw records: (raw, recordings, playbacks,
/// comments, achievements).
fn recomputed(host: &Host, user: &str) -> (i64, i64, i64, i64, i64) {
    let recs = host.admin_all("recordings", "*");
    let owner: HashMap<String, String> = recs
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap_or_default().to_string(),
                r["user_created"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let raw = actions(host, user).iter().map(|a| a.points).sum();
    let published = recs
        .iter()
        .filter(|r| r["user_created"] == json!(user) && r["status"] == "published")
        .count() as i64;
    let playbacks = host
        .admin_find("recording_plays", &json!({"user_id": {"_eq": user}}))
        .iter()
        .filter(|p| {
            owner.get(p["recording_id"].as_str().unwrap_or_default()) != Some(&user.to_string())
        })
        .count() as i64;
    let comments = host
        .admin_find(
            "platform_comments",
            &json!({"user_created": {"_eq": user}, "collection": {"_eq": "recordings"}}),
        )
        .len() as i64;
    let achs = host
        .admin_find(
            "user_achievements",
            &json!({"user_id": {"_eq": user}, "date_unlocked": {"_nnull": true}}),
        )
        .len() as i64;
    (raw, published, playbacks, comments, achs)
}

/// The stats of the user endpoint equal the recomputation (and rule 2).
fn assert_stats_follow_rules(host: &Host, user: &str) {
    let t0 = now_ms();
    let s = stats(host, user);
    let t1 = now_ms();
    assert!(s.is_object(), "no stats for {user}");
    let (raw, rec, plays, comments, achs) = recomputed(host, user);
    let got = (
        s["total_raw_points"].as_i64().unwrap_or(-1),
        s["recordings_count"].as_i64().unwrap_or(-1),
        s["playbacks_count"].as_i64().unwrap_or(-1),
        s["comments_count"].as_i64().unwrap_or(-1),
        s["achievements_count"].as_i64().unwrap_or(-1),
    );
    assert_eq!(
        got,
        (raw, rec, plays, comments, achs),
        "stats (raw, recordings, playbacks, comments, achievements) of {user}: {s}"
    );
    let acts = actions(host, user);
    let refs: Vec<&Action> = acts.iter().collect();
    assert_weighted(&s["total_weighted_points"], &refs, t0, t1, user);
}

fn create_achievement(
    host: &Host,
    code: &str,
    category: &str,
    required: i64,
    status: &str,
) -> Value {
    host.admin_create(
        "achievements",
        &json!({
            "code": code, "name": format!("Name {code}"), "description": "extra",
            "icon": "help", "category": category, "required_count": required,
            "points_reward": 10, "status": status, "sort": 15,
        }),
    )
}

/// `n` users with imported points `base * (i + 1)` (dated 30 days ago) and a
/// comment each (which awards points and refreshes their stats row).
fn ranked_users(host: &Host, n: usize, base: i64) -> Vec<String> {
    let users: Vec<Value> = (0..n)
        .map(|i| {
            json!({"first_name": "R", "last_name": format!("{i}"),
                   "email": format!("rank{i}@test.local"), "artist_name": format!("Artist {i}")})
        })
        .collect();
    let ids: Vec<String> = host
        .admin_create_many("platform_users", &users)
        .iter()
        .map(|u| u["id"].as_str().expect("id").to_string())
        .collect();
    let date = days_ago(30.0);
    let points: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, u)| {
            json!({"user_id": u, "action": "IMPORTED", "points": base * (i as i64 + 1),
                   "recording_id": null, "date_created": date})
        })
        .collect();
    host.admin_create_many("user_points", &points);
    // COMMENT_CREATE needs an existing recording; a draft awards nobody.
    let on = host.admin_create("recordings", &rec_body("Ranked", None))["id"]
        .as_str()
        .expect("recording id")
        .to_string();
    let comments: Vec<Value> = ids
        .iter()
        .map(|u| json!({"collection": "recordings", "item": on, "comment": "c", "user_created": u}))
        .collect();
    host.admin_create_many("platform_comments", &comments);
    ids
}

mod achievements_endpoint;
mod leaderboard;
mod points_and_triggers;
mod property;
mod public_access;
mod ranks;
mod rule_3;
mod rule_4;
mod rule_5;
mod rules_2_and_6;
mod special_achievements;
mod user_lists;
mod write_paths;
