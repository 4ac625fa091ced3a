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

// ---------------------------------------------------------------- achievements endpoint

#[test]
fn achievements_endpoint_lists_the_17_seeded_in_sort_order() {
    let host = Host::in_process_svc();
    let r = host.get("/svc/gamification/achievements", None);
    assert_eq!(r.status, 200, "{}", r.body);
    let data = r.json()["data"].as_array().cloned().expect("data array");
    assert_eq!(data.len(), 17, "{data:?}");
    for (a, s) in data.iter().zip(seeded_achievements()) {
        assert_eq!(a["code"], s.code, "order by sort: {a}");
        assert_eq!(a["name"], s.name, "{a}");
        assert_eq!(a["category"], s.category, "{a}");
        assert_eq!(a["required_count"], s.required, "{a}");
        assert_eq!(a["points_reward"], s.reward, "{a}");
        for key in ["id", "description", "icon"] {
            assert!(a.get(key).is_some(), "{key} missing: {a}");
        }
        assert!(a["id"].is_string(), "{a}");
    }
    // The stored rows carry the sort values of the table and are published.
    for row in host.admin_all("achievements", "*") {
        let s = seeded(row["code"].as_str().expect("code"));
        assert_eq!(row["sort"], s.sort, "{row}");
        assert_eq!(row["status"], "published", "{row}");
    }
}

#[test]
fn achievements_endpoint_lists_only_published_ones_by_sort() {
    let host = Host::in_process_svc();
    let extra = create_achievement(&host, "mystery_code", "playback", 1, "published");
    create_achievement(&host, "hidden_code", "playback", 1, "draft");
    let data = host.get("/svc/gamification/achievements", None).json()["data"]
        .as_array()
        .cloned()
        .expect("data");
    let codes: Vec<&str> = data.iter().filter_map(|a| a["code"].as_str()).collect();
    assert_eq!(data.len(), 18, "{codes:?}");
    assert!(!codes.contains(&"hidden_code"), "{codes:?}");
    // sort 15 sits between completionist_100 (14) and first_comment (20).
    let pos = codes
        .iter()
        .position(|c| *c == "mystery_code")
        .expect("extra");
    assert_eq!(codes[pos - 1], "completionist_100", "{codes:?}");
    assert_eq!(codes[pos + 1], "first_comment", "{codes:?}");
    assert_eq!(data[pos]["id"], extra["id"]);
    assert_eq!(data[pos]["points_reward"], 10);
}

// ---------------------------------------------------------------- public access

#[test]
fn gamification_endpoints_need_no_token() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "pub-u");
    create_recording(&host, "pub-u", Some("published"));
    for path in [
        "/svc/gamification/leaderboard".to_string(),
        "/svc/gamification/achievements".to_string(),
        format!("/svc/gamification/user/{u}"),
    ] {
        let anon = host.get(&path, None);
        assert_eq!(anon.status, 200, "{path}: {}", anon.body);
        assert!(anon.content_type.contains("json"), "{path}");
        let authed = host.get(&path, Some("pub-u"));
        assert_eq!(authed.status, 200, "{path}: {}", authed.body);
        let admin = host.get(&path, Some(ADMIN_TOKEN));
        assert_eq!(admin.status, 200, "{path}: {}", admin.body);
        // docs/decisions.md §3: a token that matches no active user is refused.
        let bad = host.get(&path, Some("no-such-token"));
        assert_eq!(bad.status, 401, "{path}: {}", bad.body);
        assert_eq!(bad.json(), json!({"error": "Invalid token"}));
    }
    let lb = host.get("/svc/gamification/leaderboard", None).json();
    assert_eq!(lb["data"].as_array().map(Vec::len), Some(1), "{lb}");
}

#[test]
fn a_user_without_stats_row_gets_null_stats_and_empty_lists() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "nostats");
    create_recording(&host, "nostats", None); // a draft: no points
    assert_eq!(
        gam(&host, &u),
        json!({"stats": null, "achievements": [], "recent_points": []})
    );
    // An id that is no user at all answers the same, without an error.
    assert_eq!(
        gam(&host, "00000000-0000-4000-8000-000000000000"),
        json!({"stats": null, "achievements": [], "recent_points": []})
    );
    assert!(host.admin_all("user_stats", "*").is_empty());
}

// ---------------------------------------------------------------- point values and triggers

#[test]
fn creating_a_published_recording_awards_recording_create_50() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "rc-u");
    create_recording(&host, "rc-u", None);
    create_recording(&host, "rc-u", Some("draft"));
    assert!(stats(&host, &u).is_null(), "drafts earn nothing");
    assert!(actions(&host, &u).is_empty());
    let rec = create_recording(&host, "rc-u", Some("published"));
    let creates = named(&host, &u, "RECORDING_CREATE");
    assert_eq!(creates.len(), 1, "{creates:?}");
    assert_eq!(creates[0].points, 50);
    assert_eq!(creates[0].recording.as_deref(), Some(rec.as_str()));
    let s = stats(&host, &u);
    assert_eq!(s["recordings_count"], 1, "{s}");
    assert_eq!(s["total_raw_points"], 100, "50 + first_recording 50: {s}");
}

#[test]
fn publishing_a_draft_awards_recording_create() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "pd-u");
    let rec = create_recording(&host, "pd-u", None);
    assert!(actions(&host, &u).is_empty());
    set_status(&host, "pd-u", &rec, "published");
    let creates = named(&host, &u, "RECORDING_CREATE");
    assert_eq!(creates.len(), 1, "{creates:?}");
    assert_eq!(creates[0].points, 50);
    assert_eq!(creates[0].recording.as_deref(), Some(rec.as_str()));
    // From archived too (another recording).
    let rec2 = create_recording(&host, "pd-u", Some("archived"));
    assert_eq!(named(&host, &u, "RECORDING_CREATE").len(), 1);
    set_status(&host, "pd-u", &rec2, "published");
    let creates = named(&host, &u, "RECORDING_CREATE");
    assert_eq!(creates.len(), 2, "{creates:?}");
    assert!(creates
        .iter()
        .any(|a| a.recording.as_deref() == Some(rec2.as_str())));
    assert_eq!(stats(&host, &u)["recordings_count"], 2);
}

#[test]
fn publish_unpublish_publish_awards_recording_create_once() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "ppp-u");
    let rec = create_recording(&host, "ppp-u", None);
    set_status(&host, "ppp-u", &rec, "published");
    set_status(&host, "ppp-u", &rec, "draft");
    set_status(&host, "ppp-u", &rec, "published");
    set_status(&host, "ppp-u", &rec, "archived");
    set_status(&host, "ppp-u", &rec, "published");
    set_status(&host, "ppp-u", &rec, "published");
    let creates = named(&host, &u, "RECORDING_CREATE");
    assert_eq!(creates.len(), 1, "once per recording: {creates:?}");
    // A recording created published and republished: once as well.
    let rec2 = create_recording(&host, "ppp-u", Some("published"));
    set_status(&host, "ppp-u", &rec2, "draft");
    set_status(&host, "ppp-u", &rec2, "published");
    let creates = named(&host, &u, "RECORDING_CREATE");
    assert_eq!(creates.len(), 2, "{creates:?}");
    let per_rec: BTreeSet<String> = creates.iter().filter_map(|a| a.recording.clone()).collect();
    assert_eq!(per_rec, BTreeSet::from([rec, rec2]));
}

#[test]
fn featuring_awards_recording_featured_100_once() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "ft-u");
    let rec = create_recording(&host, "ft-u", Some("published"));
    // An update that leaves `featured` false earns nothing.
    let r = host.patch(
        &format!("/items/recordings/{rec}"),
        Some(ADMIN_TOKEN),
        &json!({"title": "Renamed"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(named(&host, &u, "RECORDING_FEATURED").is_empty());
    set_featured(&host, &rec, true);
    let f = named(&host, &u, "RECORDING_FEATURED");
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].points, 100);
    assert_eq!(f[0].recording.as_deref(), Some(rec.as_str()));
    set_featured(&host, &rec, true); // true -> true
    set_featured(&host, &rec, false);
    set_featured(&host, &rec, true); // false -> true again: once per recording
    assert_eq!(named(&host, &u, "RECORDING_FEATURED").len(), 1);
    // The admin gets nothing; the owner does.
    let admin_points = all_actions(&host)
        .into_iter()
        .filter(|a| a.user != u)
        .count();
    assert_eq!(admin_points, 0);
}

#[test]
fn a_play_by_another_user_awards_recording_play_10() {
    let host = Host::in_process_svc();
    let owner = viewer(&host, "pl-owner");
    let v = viewer(&host, "pl-v");
    let rec = create_recording(&host, "pl-owner", Some("published"));
    let owner_points = stats(&host, &owner)["total_raw_points"].clone();
    host.play_recording(&rec, Some("pl-v"));
    let plays = named(&host, &v, "RECORDING_PLAY");
    assert_eq!(plays.len(), 1, "{plays:?}");
    assert_eq!(plays[0].points, 10);
    assert_eq!(plays[0].recording.as_deref(), Some(rec.as_str()));
    assert_eq!(stats(&host, &v)["playbacks_count"], 1);
    host.play_recording(&rec, Some("pl-v"));
    // Any existing recording counts, a draft too (docs/service-api.md: "the
    // recording exists").
    let draft = create_recording(&host, "pl-owner", None);
    host.play_recording(&draft, Some("pl-v"));
    assert_eq!(named(&host, &v, "RECORDING_PLAY").len(), 3);
    let s = stats(&host, &v);
    assert_eq!(s["playbacks_count"], 3, "{s}");
    assert_eq!(s["total_raw_points"], 30 + 25, "3 plays + first_play: {s}");
    assert_eq!(stats(&host, &owner)["total_raw_points"], owner_points);
}

#[test]
fn the_owner_playing_their_own_recording_earns_nothing() {
    let host = Host::in_process_svc();
    let o = viewer(&host, "own-o");
    let draft = create_recording(&host, "own-o", None);
    host.play_recording(&draft, Some("own-o"));
    assert!(stats(&host, &o).is_null(), "{}", stats(&host, &o));
    assert!(actions(&host, &o).is_empty());
    let rec = create_recording(&host, "own-o", Some("published"));
    let before = actions(&host, &o).len();
    host.play_recording(&rec, Some("own-o"));
    host.play_recording(&rec, Some("own-o"));
    assert_eq!(actions(&host, &o).len(), before);
    assert!(named(&host, &o, "RECORDING_PLAY").is_empty());
    let s = stats(&host, &o);
    assert_eq!(s["playbacks_count"], 0, "{s}");
    assert!(!user_achs(&host, &o).contains_key("first_play"));
    // The plays were recorded, with the owner as user.
    let plays = host.admin_find("recording_plays", &json!({"user_id": {"_eq": o}}));
    assert_eq!(plays.len(), 3);
}

#[test]
fn anonymous_plays_and_completions_earn_nothing() {
    let host = Host::in_process_svc();
    viewer(&host, "anon-o");
    let rec = create_recording(&host, "anon-o", Some("published"));
    let before = all_actions(&host).len();
    let p = host.play_recording(&rec, None);
    report(&host, &rec, &p, None, true);
    let p2 = host.play_recording(&rec, None);
    report(&host, &rec, &p2, None, false);
    assert_eq!(all_actions(&host).len(), before);
    let row = &host
        .admin_all("recording_plays", "*")
        .into_iter()
        .find(|r| r["id"] == json!(p))
        .expect("play row");
    assert!(row["user_id"].is_null(), "{row}");
    assert_eq!(row["completed"], true, "{row}");
    assert_eq!(
        host.admin_all("user_stats", "*").len(),
        1,
        "only the owner's row"
    );
}

#[test]
fn completing_a_play_awards_recording_complete_5_once() {
    let host = Host::in_process_svc();
    let o = viewer(&host, "cp-o");
    let v = viewer(&host, "cp-v");
    let rec = create_recording(&host, "cp-o", Some("published"));
    let p = host.play_recording(&rec, Some("cp-v"));
    report(&host, &rec, &p, Some("cp-v"), false);
    assert!(named(&host, &v, "RECORDING_COMPLETE").is_empty());
    report(&host, &rec, &p, Some("cp-v"), true);
    let c = named(&host, &v, "RECORDING_COMPLETE");
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].points, 5);
    assert_eq!(c[0].recording.as_deref(), Some(rec.as_str()));
    // A second completion of the same play earns nothing.
    report(&host, &rec, &p, Some("cp-v"), true);
    assert_eq!(named(&host, &v, "RECORDING_COMPLETE").len(), 1);
    // The owner completing a play of their own recording is an
    // authenticated caller: awarded to the caller.
    let own = host.play_recording(&rec, Some("cp-o"));
    report(&host, &rec, &own, Some("cp-o"), true);
    let oc = named(&host, &o, "RECORDING_COMPLETE");
    assert_eq!(oc.len(), 1, "{oc:?}");
    assert_eq!(oc[0].points, 5);
    // Raw points of v: play 10 + first_play 25 + complete 5.
    assert_eq!(stats(&host, &v)["total_raw_points"], 40);
    // A third user completing v's play is the authenticated caller.
    let w = viewer(&host, "cp-w");
    let p2 = host.play_recording(&rec, Some("cp-v"));
    report(&host, &rec, &p2, Some("cp-w"), true);
    let wc = named(&host, &w, "RECORDING_COMPLETE");
    assert_eq!(wc.len(), 1, "{wc:?}");
    assert_eq!(wc[0].points, 5);
    assert_eq!(named(&host, &v, "RECORDING_COMPLETE").len(), 1);
}

#[test]
fn a_comment_on_a_recording_awards_comment_create_5() {
    let host = Host::in_process_svc();
    viewer(&host, "cm-o");
    let v = viewer(&host, "cm-v");
    let rec = create_recording(&host, "cm-o", Some("published"));
    comment(&host, "cm-v", "recordings", &rec);
    let c = named(&host, &v, "COMMENT_CREATE");
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].points, 5);
    let s = stats(&host, &v);
    assert_eq!(s["comments_count"], 1, "{s}");
    assert_eq!(
        s["total_raw_points"],
        5 + 25,
        "comment + first_comment: {s}"
    );
    comment(&host, "cm-v", "recordings", &rec);
    assert_eq!(named(&host, &v, "COMMENT_CREATE").len(), 2);
    assert_eq!(stats(&host, &v)["comments_count"], 2);
}

#[test]
fn comments_on_other_collections_earn_nothing() {
    let host = Host::in_process_svc();
    viewer(&host, "oc-o");
    let v = viewer(&host, "oc-v");
    let rec = create_recording(&host, "oc-o", Some("published"));
    refused_comment(&host, "oc-v", "videos", &rec);
    refused_comment(&host, "oc-v", "articles", "a1");
    refused_comment(&host, "oc-v", "Recordings", &rec);
    assert!(stats(&host, &v).is_null());
    assert!(actions(&host, &v).is_empty());
    comment(&host, "oc-v", "recordings", &rec);
    let s = stats(&host, &v);
    assert_eq!(
        s["comments_count"], 1,
        "only recordings comments count: {s}"
    );
    assert_eq!(named(&host, &v, "COMMENT_CREATE").len(), 1);
}

// ---------------------------------------------------------------- rule 3

#[test]
fn stats_follow_rule_3_after_a_mixed_sequence() {
    let host = Host::in_process_svc();
    let a = viewer(&host, "mx-a");
    let b = viewer(&host, "mx-b");
    let r1 = create_recording(&host, "mx-a", Some("published"));
    let r2 = create_recording(&host, "mx-a", None);
    create_recording(&host, "mx-a", None);
    set_status(&host, "mx-a", &r2, "published");
    let own_b = create_recording(&host, "mx-b", None);
    host.play_recording(&own_b, Some("mx-b"));
    let p1 = host.play_recording(&r1, Some("mx-b"));
    host.play_recording(&r2, Some("mx-b"));
    host.play_recording(&r1, Some("mx-b"));
    host.play_recording(&r1, None);
    report(&host, &r1, &p1, Some("mx-b"), true);
    comment(&host, "mx-b", "recordings", &r1);
    comment(&host, "mx-b", "recordings", &r2);
    refused_comment(&host, "mx-b", "videos", &r2);
    comment(&host, "mx-a", "recordings", &r1);
    set_featured(&host, &r1, true);

    let t0 = now_ms();
    let sa = stats(&host, &a);
    let sb = stats(&host, &b);
    let t1 = now_ms();
    // a: 2 x create 50, first_recording 50, featured 100, featured_recording
    // 200, comment 5, first_comment 25.
    let fields = |s: &Value| {
        (
            s["total_raw_points"].clone(),
            s["recordings_count"].clone(),
            s["playbacks_count"].clone(),
            s["comments_count"].clone(),
            s["achievements_count"].clone(),
        )
    };
    assert_eq!(
        fields(&sa),
        (json!(480), json!(2), json!(0), json!(1), json!(3)),
        "{sa}"
    );
    // b: 3 plays 30, first_play 25, complete 5, 2 comments 10, first_comment 25.
    assert_eq!(
        fields(&sb),
        (json!(95), json!(0), json!(3), json!(2), json!(2)),
        "{sb}"
    );
    for (user, s) in [(&a, &sa), (&b, &sb)] {
        let acts = actions(&host, user);
        let refs: Vec<&Action> = acts.iter().collect();
        assert_weighted(&s["total_weighted_points"], &refs, t0, t1, user);
        let updated = ts_ms(&s["last_updated"]);
        assert!(updated <= t1 + 1 && updated >= t0 - 60_000, "{s}");
        assert_eq!(s["user_id"], json!(user));
    }
    assert_stats_follow_rules(&host, &a);
    assert_stats_follow_rules(&host, &b);
}

#[test]
fn user_stats_have_exactly_the_spec_fields_plus_rank() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "sf-u");
    create_recording(&host, "sf-u", Some("published"));
    let s = stats(&host, &u);
    let keys = keys_of(&s);
    let expected = BTreeSet::from([
        "id",
        "user_id",
        "total_raw_points",
        "total_weighted_points",
        "recordings_count",
        "playbacks_count",
        "comments_count",
        "achievements_count",
        "last_updated",
        "rank",
    ]);
    assert_eq!(keys, expected, "{s}");
    assert_eq!(s["rank"], 1);
    let row = &host.admin_all("user_stats", "*")[0];
    assert_eq!(s["id"], row["id"], "the stats row's id");
}

// ---------------------------------------------------------------- rule 4

#[test]
fn the_check_writes_progress_for_every_achievement_of_its_category() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "cat-u");
    let v = viewer(&host, "cat-v");
    let rec = create_recording(&host, "cat-u", Some("published"));
    let rows = user_achs(&host, &u);
    assert_eq!(
        rows.keys().cloned().collect::<BTreeSet<_>>(),
        codes_of("recordings"),
        "{rows:?}"
    );
    for code in [
        "first_recording",
        "recording_10",
        "recording_50",
        "recording_100",
    ] {
        assert_eq!(progress_of(&rows, code), 1, "{code}");
    }
    assert_eq!(progress_of(&rows, "featured_recording"), 0);
    let open: Vec<&String> = rows
        .iter()
        .filter(|(_, r)| !r["date_unlocked"].is_null())
        .map(|(c, _)| c)
        .collect();
    assert_eq!(open, vec!["first_recording"]);

    host.play_recording(&rec, Some("cat-v"));
    let rows = user_achs(&host, &v);
    assert_eq!(
        rows.keys().cloned().collect::<BTreeSet<_>>(),
        codes_of("playback"),
        "{rows:?}"
    );
    for (code, p) in [
        ("first_play", 1),
        ("play_100", 1),
        ("play_500", 1),
        ("completionist_10", 0),
        ("completionist_100", 0),
    ] {
        assert_eq!(progress_of(&rows, code), p, "{code}");
    }
    comment(&host, "cat-v", "recordings", &rec);
    let rows = user_achs(&host, &v);
    let mut expected = codes_of("playback");
    expected.extend(codes_of("social"));
    assert_eq!(rows.keys().cloned().collect::<BTreeSet<_>>(), expected);
    for code in ["first_comment", "comment_50", "comment_250"] {
        assert_eq!(progress_of(&rows, code), 1, "{code}");
    }
    // Rows of u are untouched by v's actions; nobody has special rows yet.
    assert_eq!(
        user_achs(&host, &u)
            .keys()
            .cloned()
            .collect::<BTreeSet<_>>(),
        codes_of("recordings")
    );
}

#[test]
fn an_unlock_sets_date_unlocked_and_awards_the_reward() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "ul-u");
    let t0 = now_ms();
    let rec = create_recording(&host, "ul-u", Some("published"));
    let t1 = now_ms();
    let rows = user_achs(&host, &u);
    let first = rows["first_recording"].clone();
    let when = ts_ms(&first["date_unlocked"]);
    assert!(when >= t0 - 1 && when <= t1 + 1, "{first}");
    // Newly unlocked with no row before: ACHIEVEMENT_<code> with the reward.
    let bonus = named(&host, &u, "ACHIEVEMENT_first_recording");
    assert_eq!(bonus.len(), 1, "{bonus:?}");
    assert_eq!(bonus[0].points, 50);
    assert_eq!(bonus[0].recording, None);
    assert!(rows["featured_recording"]["date_unlocked"].is_null());
    assert_eq!(stats(&host, &u)["achievements_count"], 1);

    // A row that exists with progress 0 gets unlocked on update.
    set_featured(&host, &rec, true);
    let rows = user_achs(&host, &u);
    assert_eq!(progress_of(&rows, "featured_recording"), 1);
    assert!(unlocked(&rows, "featured_recording"));
    let bonus = named(&host, &u, "ACHIEVEMENT_featured_recording");
    assert_eq!(bonus.len(), 1, "{bonus:?}");
    assert_eq!(bonus[0].points, 200);
    assert_eq!(bonus[0].recording, None);

    // required_count matters: recording_10 at the 10th publication.
    for _ in 0..8 {
        create_recording(&host, "ul-u", Some("published"));
    }
    let rows = user_achs(&host, &u);
    assert_eq!(progress_of(&rows, "recording_10"), 9);
    assert!(!unlocked(&rows, "recording_10"));
    assert!(named(&host, &u, "ACHIEVEMENT_recording_10").is_empty());
    create_recording(&host, "ul-u", Some("published"));
    let rows = user_achs(&host, &u);
    assert_eq!(progress_of(&rows, "recording_10"), 10);
    assert!(unlocked(&rows, "recording_10"));
    let bonus = named(&host, &u, "ACHIEVEMENT_recording_10");
    assert_eq!(bonus.len(), 1);
    assert_eq!(bonus[0].points, 100);
    // Already unlocked achievements keep their date and give no second bonus.
    assert_eq!(
        rows["first_recording"]["date_unlocked"],
        first["date_unlocked"]
    );
    assert_eq!(named(&host, &u, "ACHIEVEMENT_first_recording").len(), 1);
    let s = stats(&host, &u);
    assert_eq!(s["achievements_count"], 3, "{s}");
    // 10 creates 500 + featured 100 + rewards 50 + 200 + 100.
    assert_eq!(s["total_raw_points"], 950, "{s}");
}

#[test]
fn date_unlocked_is_kept_when_progress_drops() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "drop-u");
    let rec = create_recording(&host, "drop-u", Some("published"));
    let before = user_achs(&host, &u)["first_recording"]["date_unlocked"].clone();
    assert!(!before.is_null());
    set_status(&host, "drop-u", &rec, "draft");
    recalc(&host);
    let rows = user_achs(&host, &u);
    assert_eq!(progress_of(&rows, "first_recording"), 0, "{rows:?}");
    assert_eq!(rows["first_recording"]["date_unlocked"], before);
    assert_eq!(named(&host, &u, "ACHIEVEMENT_first_recording").len(), 1);
    let s = stats(&host, &u);
    assert_eq!(s["recordings_count"], 0, "{s}");
    let unlocked_ids: Vec<Value> = gam(&host, &u)["achievements"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        unlocked_ids.iter().any(|a| a["code"] == "first_recording"),
        "still listed as unlocked: {unlocked_ids:?}"
    );
    assert_stats_follow_rules(&host, &u);
}

// ---------------------------------------------------------------- rule 5

#[test]
fn progress_follows_rule_5_for_every_code() {
    let host = Host::in_process_svc();
    let u = host.user_with(
        Some("Viewer"),
        "r5-u",
        &json!({"date_created": "2025-01-20T10:00:00.000Z"}),
    );
    viewer(&host, "r5-o");
    let extra = create_achievement(&host, "mystery_code", "social", 1, "published");
    let mine1 = create_recording(&host, "r5-u", Some("published"));
    create_recording(&host, "r5-u", Some("published"));
    let draft = create_recording(&host, "r5-u", None);
    set_featured(&host, &mine1, true);
    set_featured(&host, &draft, true);
    let other = create_recording(&host, "r5-o", Some("published"));
    let o1 = host.play_recording(&other, Some("r5-u"));
    host.play_recording(&other, Some("r5-u"));
    host.play_recording(&other, Some("r5-u"));
    let own = host.play_recording(&mine1, Some("r5-u"));
    host.play_recording(&mine1, Some("r5-u"));
    report(&host, &other, &o1, Some("r5-u"), true);
    report(&host, &mine1, &own, Some("r5-u"), true);
    comment(&host, "r5-u", "recordings", &other);
    comment(&host, "r5-u", "recordings", &mine1);
    refused_comment(&host, "r5-u", "videos", &other);
    // Someone else's completed play and comment are not u's.
    let op = host.play_recording(&mine1, Some("r5-o"));
    report(&host, &mine1, &op, Some("r5-o"), true);
    comment(&host, "r5-o", "recordings", &mine1);

    recalc(&host);
    let rows = user_achs(&host, &u);
    let expected: [(&str, i64); 18] = [
        ("first_recording", 2),
        ("recording_10", 2),
        ("recording_50", 2),
        ("recording_100", 2),
        ("featured_recording", 1),
        ("first_play", 3),
        ("play_100", 3),
        ("play_500", 3),
        ("completionist_10", 2),
        ("completionist_100", 2),
        ("first_comment", 2),
        ("comment_50", 2),
        ("comment_250", 2),
        ("early_adopter", 1),
        ("one_year", 1),
        ("balanced_creator", 0),
        ("top_10_rank", 1),
        ("mystery_code", 0),
    ];
    for (code, p) in expected {
        assert_eq!(progress_of(&rows, code), p, "progress of {code}: {rows:?}");
        let required = if code == "mystery_code" {
            1
        } else {
            seeded(code).required
        };
        assert_eq!(unlocked(&rows, code), p >= required, "unlock of {code}");
    }
    assert_eq!(rows.len(), 18, "{rows:?}");
    assert_eq!(
        rows["mystery_code"]["achievement_id"], extra["id"],
        "{rows:?}"
    );
    assert!(named(&host, &u, "ACHIEVEMENT_mystery_code").is_empty());
    assert_stats_follow_rules(&host, &u);
}

#[test]
fn unknown_codes_have_progress_0_and_never_unlock() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "unk-u");
    let extra = create_achievement(&host, "recordings_count", "recordings", 1, "published");
    // Not published: never checked, although progress 0 >= 0 would unlock it.
    create_achievement(&host, "draft_code", "recordings", 0, "draft");
    for _ in 0..2 {
        create_recording(&host, "unk-u", Some("published"));
    }
    let rows = user_achs(&host, &u);
    assert_eq!(progress_of(&rows, "recordings_count"), 0, "{rows:?}");
    assert!(!unlocked(&rows, "recordings_count"));
    assert!(!rows.contains_key("draft_code"), "{rows:?}");
    assert_eq!(rows["recordings_count"]["achievement_id"], extra["id"]);
    recalc(&host);
    let rows = user_achs(&host, &u);
    assert_eq!(progress_of(&rows, "recordings_count"), 0);
    assert!(!unlocked(&rows, "recordings_count"));
    assert!(!rows.contains_key("draft_code"), "{rows:?}");
    let names: Vec<String> = actions(&host, &u).into_iter().map(|a| a.action).collect();
    assert!(
        !names
            .iter()
            .any(|n| n.contains("recordings_count") || n.contains("draft_code")),
        "{names:?}"
    );
}

// ---------------------------------------------------------------- special achievements

#[test]
fn early_adopter_unlocks_only_in_the_recalculation_up_to_2025_02_01() {
    let host = Host::in_process_svc();
    let at = host.user_with(
        Some("Viewer"),
        "ea-at",
        &json!({"date_created": "2025-02-01T00:00:00.000Z"}),
    );
    let after = host.user_with(
        Some("Viewer"),
        "ea-after",
        &json!({"date_created": "2025-02-01T00:00:00.001Z"}),
    );
    let early = host.user_with(
        Some("Viewer"),
        "ea-early",
        &json!({"date_created": "2024-06-01T12:00:00.000Z"}),
    );
    let late = viewer(&host, "ea-now");
    for t in ["ea-at", "ea-after", "ea-early", "ea-now"] {
        create_recording(&host, t, Some("published"));
    }
    for u in [&at, &after, &early, &late] {
        assert!(
            !user_achs(&host, u).contains_key("early_adopter"),
            "not checked yet"
        );
        assert!(named(&host, u, "ACHIEVEMENT_early_adopter").is_empty());
    }
    recalc(&host);
    for (u, expect) in [(&at, 1), (&after, 0), (&early, 1), (&late, 0)] {
        let rows = user_achs(&host, u);
        assert_eq!(progress_of(&rows, "early_adopter"), expect, "{u}");
        assert_eq!(unlocked(&rows, "early_adopter"), expect == 1, "{u}");
        let bonus = named(&host, u, "ACHIEVEMENT_early_adopter");
        assert_eq!(bonus.len() as i64, expect, "{u}: {bonus:?}");
        if expect == 1 {
            assert_eq!(bonus[0].points, 500);
        }
        assert_stats_follow_rules(&host, u);
    }
}

#[test]
fn one_year_unlocks_in_the_recalculation_for_year_old_accounts() {
    let host = Host::in_process_svc();
    let old = host.user_with(
        Some("Viewer"),
        "oy-old",
        &json!({"date_created": days_ago(367.0)}),
    );
    let young = host.user_with(
        Some("Viewer"),
        "oy-young",
        &json!({"date_created": days_ago(363.0)}),
    );
    for t in ["oy-old", "oy-young"] {
        create_recording(&host, t, Some("published"));
    }
    assert!(!unlocked(&user_achs(&host, &old), "one_year"));
    recalc(&host);
    let rows = user_achs(&host, &old);
    assert_eq!(progress_of(&rows, "one_year"), 1);
    assert!(unlocked(&rows, "one_year"));
    let bonus = named(&host, &old, "ACHIEVEMENT_one_year");
    assert_eq!(bonus.len(), 1);
    assert_eq!(bonus[0].points, 1000);
    let rows = user_achs(&host, &young);
    assert_eq!(progress_of(&rows, "one_year"), 0);
    assert!(!unlocked(&rows, "one_year"));
    assert!(named(&host, &young, "ACHIEVEMENT_one_year").is_empty());
}

#[test]
fn balanced_creator_needs_50_published_recordings_and_100_plays_on_others() {
    let host = Host::in_process_svc();
    viewer(&host, "bc-src");
    let src = create_recording(&host, "bc-src", Some("published"));
    let users = [
        (viewer(&host, "bc-yes"), "bc-yes", 50, 100, 1),
        (viewer(&host, "bc-49"), "bc-49", 49, 100, 0),
        (viewer(&host, "bc-99"), "bc-99", 50, 99, 0),
    ];
    for (u, token, recs, plays, _) in &users {
        let mut items: Vec<Value> = (0..*recs)
            .map(|i| {
                let mut b = rec_body(&format!("b{i}"), Some("published"));
                b["user_created"] = json!(u);
                b["slug"] = json!(format!("b{i}"));
                b
            })
            .collect();
        // Drafts and own plays do not count.
        let mut d = rec_body("draft", Some("draft"));
        d["user_created"] = json!(u);
        d["slug"] = json!("draft");
        items.push(d);
        let r = host.post("/items/recordings", Some(ADMIN_TOKEN), &Value::Array(items));
        assert_eq!(r.status, 200, "{}", r.body);
        let own = r.json()["data"][0]["id"].clone();
        let mut rows: Vec<Value> = (0..*plays)
            .map(|_| json!({"recording_id": src, "user_id": u, "duration_played": 0, "completed": false}))
            .collect();
        for _ in 0..5 {
            rows.push(json!({"recording_id": own, "user_id": u, "duration_played": 0, "completed": false}));
        }
        host.admin_create_many("recording_plays", &rows);
        // A comment refreshes the stats row through a trigger.
        comment(&host, token, "recordings", &src);
    }
    recalc(&host);
    for (u, _, _, _, expect) in &users {
        let rows = user_achs(&host, u);
        assert_eq!(progress_of(&rows, "balanced_creator"), *expect, "{u}");
        assert_eq!(unlocked(&rows, "balanced_creator"), *expect == 1, "{u}");
        assert_eq!(
            named(&host, u, "ACHIEVEMENT_balanced_creator").len() as i64,
            *expect
        );
        assert_stats_follow_rules(&host, u);
    }
    let s = stats(&host, &users[0].0);
    assert_eq!(s["recordings_count"], 50, "{s}");
    assert_eq!(s["playbacks_count"], 100, "{s}");
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

#[test]
fn top_10_rank_unlocks_in_the_recalculation_for_the_ten_best() {
    let host = Host::in_process_svc();
    let ids = ranked_users(&host, 12, 100);
    for u in &ids {
        assert!(stats(&host, u).is_object(), "stats row for {u}");
        assert!(!user_achs(&host, u).contains_key("top_10_rank"));
    }
    recalc(&host);
    for (i, u) in ids.iter().enumerate() {
        // i = 11 is rank 1, ..., i = 2 rank 10, i = 1 rank 11, i = 0 rank 12.
        let expect = i64::from(i >= 2);
        let rows = user_achs(&host, u);
        assert_eq!(progress_of(&rows, "top_10_rank"), expect, "user {i}");
        assert_eq!(unlocked(&rows, "top_10_rank"), expect == 1, "user {i}");
        let bonus = named(&host, u, "ACHIEVEMENT_top_10_rank");
        assert_eq!(bonus.len() as i64, expect, "user {i}");
        if expect == 1 {
            assert_eq!(bonus[0].points, 2000);
        }
        assert_eq!(stats(&host, u)["rank"], 12 - i as i64, "user {i}");
    }
}

// ---------------------------------------------------------------- rules 2 and 6

#[test]
fn weighted_points_decay_by_rule_2() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "dec-u");
    create_recording(&host, "dec-u", Some("published"));
    let old: Vec<Value> = [(10, 0.5), (50, 10.0), (100, 100.25), (7, 365.0), (1000, 1000.0)]
        .iter()
        .map(|(p, d)| {
            json!({"user_id": u, "action": "IMPORTED", "points": p, "date_created": days_ago(*d)})
        })
        .collect();
    let r = host.post("/items/user_points", Some(ADMIN_TOKEN), &Value::Array(old));
    assert_eq!(r.status, 200, "{}", r.body);
    recalc(&host);
    let acts = actions(&host, &u);
    let refs: Vec<&Action> = acts.iter().collect();
    let t0 = now_ms();
    let s = stats(&host, &u);
    let t1 = now_ms();
    assert_weighted(&s["total_weighted_points"], &refs, t0, t1, "user endpoint");
    let raw: i64 = acts.iter().map(|a| a.points).sum();
    assert_eq!(s["total_raw_points"], raw);
    let w = s["total_weighted_points"].as_f64().unwrap_or(0.0);
    assert!(w < raw as f64 - 900.0, "decayed: {w} vs raw {raw}");
    let t0 = now_ms();
    let lb = host.get("/svc/gamification/leaderboard", None).json();
    let t1 = now_ms();
    let item = lb["data"]
        .as_array()
        .and_then(|d| d.iter().find(|i| i["user_id"] == json!(u)).cloned())
        .expect("on the leaderboard");
    assert_weighted(&item["total_weighted_points"], &refs, t0, t1, "leaderboard");
    // Later reads give the value of their own instant (it keeps decaying).
    std::thread::sleep(Duration::from_millis(300));
    let t0 = now_ms();
    let later = stats(&host, &u);
    let t1 = now_ms();
    assert_weighted(&later["total_weighted_points"], &refs, t0, t1, "later read");
    assert!(later["total_weighted_points"].as_f64() < s["total_weighted_points"].as_f64());
}

#[test]
fn recalculation_restores_tampered_stats() {
    // A host process: the recalculation runs as the command line's
    // `schedule run` beside it, on its database.
    let host = Host::start(HostOptions::svc());
    let u = viewer(&host, "tm-u");
    let v = viewer(&host, "tm-v");
    let rec = create_recording(&host, "tm-u", Some("published"));
    host.play_recording(&rec, Some("tm-v"));
    comment(&host, "tm-v", "recordings", &rec);
    // Raw records written behind the triggers' back.
    let r = host.post(
        "/items/recording_plays",
        Some(ADMIN_TOKEN),
        &json!({"recording_id": rec, "user_id": v, "duration_played": 0, "completed": false}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = host.post(
        "/items/user_points",
        Some(ADMIN_TOKEN),
        &json!({"user_id": u, "action": "IMPORTED", "points": 33, "date_created": days_ago(3.0)}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    for row in host.admin_all("user_stats", "*") {
        let r = host.patch(
            &format!("/items/user_stats/{}", row["id"].as_str().expect("id")),
            Some(ADMIN_TOKEN),
            &json!({"total_raw_points": 1, "total_weighted_points": 99999.0,
                    "recordings_count": 42, "playbacks_count": 42, "comments_count": 42,
                    "achievements_count": 42, "last_updated": "2020-01-01T00:00:00.000Z"}),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
    // A stats row created by hand for a user without any point.
    let w = viewer(&host, "tm-w");
    host.admin_create("user_stats", &json!({"user_id": w, "total_raw_points": 7}));
    let started = now_ms();
    recalc(&host);
    for user in [&u, &v, &w] {
        assert_stats_follow_rules(&host, user);
        let s = stats(&host, user);
        assert!(ts_ms(&s["last_updated"]) >= started - 1, "{s}");
    }
    let sv = stats(&host, &v);
    assert_eq!(sv["playbacks_count"], 2, "{sv}");
    assert_eq!(sv["comments_count"], 1, "{sv}");
    let su = stats(&host, &u);
    assert_eq!(su["recordings_count"], 1, "{su}");
    let sw = stats(&host, &w);
    assert_eq!(sw["recordings_count"], 0, "{sw}");
    assert_eq!(sw["playbacks_count"], 0, "{sw}");
    // The only points w can have are those of achievements the full check
    // unlocked; with none, the score is 0.
    let w_actions = actions(&host, &w);
    assert!(
        w_actions
            .iter()
            .all(|a| a.action.starts_with("ACHIEVEMENT_")),
        "{w_actions:?}"
    );
}

#[test]
fn recalculation_leaves_users_without_stats_rows_alone() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "nr-u");
    let v = viewer(&host, "nr-v");
    create_recording(&host, "nr-u", Some("published"));
    let own = create_recording(&host, "nr-v", None);
    host.play_recording(&own, Some("nr-v"));
    refused_comment(&host, "nr-v", "videos", &own);
    let r = host.post(
        "/items/user_points",
        Some(ADMIN_TOKEN),
        &json!({"user_id": v, "action": "IMPORTED", "points": 40}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        stats(&host, &v).is_null(),
        "precondition: no stats row for v"
    );
    recalc(&host);
    assert!(stats(&host, &v).is_null(), "{}", stats(&host, &v));
    let rows: Vec<Value> = host.admin_all("user_stats", "*");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["user_id"], json!(u));
    assert!(user_achs(&host, &v).is_empty());
    assert_stats_follow_rules(&host, &u);
}

// ---------------------------------------------------------------- leaderboard

fn leaderboard(host: &Host, query: &str) -> Vec<Value> {
    let r = host.get(&format!("/svc/gamification/leaderboard{query}"), None);
    assert_eq!(r.status, 200, "{query}: {}", r.body);
    r.json()["data"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("{query}: no data array: {}", r.body))
}

#[test]
fn leaderboard_orders_ranks_pages_and_clamps() {
    let host = Host::in_process_svc();
    let ids = ranked_users(&host, 520, 10);
    // Best first: user 519 (imported 5200) .. user 0 (10).
    let order: Vec<String> = ids.iter().rev().cloned().collect();
    let users_of = |items: &[Value]| -> Vec<String> {
        items
            .iter()
            .map(|i| i["user_id"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let ranks_of = |items: &[Value]| -> Vec<i64> {
        items
            .iter()
            .map(|i| i["rank"].as_i64().unwrap_or(-1))
            .collect()
    };

    let default = leaderboard(&host, "");
    assert_eq!(default.len(), 100);
    assert_eq!(users_of(&default), order[..100].to_vec());
    assert_eq!(ranks_of(&default), (1..=100).collect::<Vec<_>>());
    for q in [
        "?limit=abc",
        "?limit=0",
        "?limit=-3",
        "?limit=1.5",
        "?offset=abc",
        "?offset=-2",
    ] {
        let items = leaderboard(&host, q);
        assert_eq!(users_of(&items), order[..100].to_vec(), "{q}");
        assert_eq!(ranks_of(&items), (1..=100).collect::<Vec<_>>(), "{q}");
    }
    let max = leaderboard(&host, "?limit=500");
    assert_eq!(max.len(), 500);
    assert_eq!(users_of(&max), order[..500].to_vec());
    let clamped = leaderboard(&host, "?limit=1000");
    assert_eq!(clamped.len(), 500, "limit clamped to 500");
    assert_eq!(users_of(&clamped), order[..500].to_vec());
    let weights: Vec<f64> = max
        .iter()
        .map(|i| i["total_weighted_points"].as_f64().expect("number"))
        .collect();
    assert!(weights.windows(2).all(|w| w[0] >= w[1]), "descending");

    let page = leaderboard(&host, "?limit=5&offset=7");
    assert_eq!(users_of(&page), order[7..12].to_vec());
    assert_eq!(ranks_of(&page), vec![8, 9, 10, 11, 12]);
    let tail = leaderboard(&host, "?offset=510");
    assert_eq!(users_of(&tail), order[510..].to_vec());
    assert_eq!(ranks_of(&tail), (511..=520).collect::<Vec<_>>());
    let tail = leaderboard(&host, "?offset=510&limit=1000");
    assert_eq!(tail.len(), 10);
    assert!(leaderboard(&host, "?offset=520").is_empty());

    // Item values: user i has 10 (i + 1) imported + comment 5 + first_comment 25.
    for item in page.iter().chain(tail.iter()) {
        let i = ids
            .iter()
            .position(|u| item["user_id"] == json!(u))
            .expect("known user");
        assert_eq!(item["total_raw_points"], 10 * (i as i64 + 1) + 30, "{item}");
        assert_eq!(item["display_name"], format!("Artist {i}"), "{item}");
        assert_eq!(item["achievements_count"], 1, "{item}");
        assert_eq!(item["recordings_count"], 0, "{item}");
        assert_eq!(item["playbacks_count"], 0, "{item}");
    }
    // The user endpoint's rank agrees.
    assert_eq!(stats(&host, &order[0])["rank"], 1);
    assert_eq!(stats(&host, &order[11])["rank"], 12);
    assert_eq!(stats(&host, &order[519])["rank"], 520);
}

#[test]
fn leaderboard_items_carry_the_users_profile_and_stats() {
    let host = Host::in_process_svc();
    let avatar = host.admin_create(
        "platform_files",
        &json!({"title": "av", "filename_disk": "av.jpg", "filename_download": "av.jpg",
                "type": "image/jpeg", "filesize": 10}),
    );
    let a = host.user_with(
        Some("Viewer"),
        "lb-a",
        &json!({"artist_name": "Aria", "avatar": avatar["id"]}),
    );
    let b = viewer(&host, "lb-b");
    let rec = create_recording(&host, "lb-a", Some("published"));
    set_featured(&host, &rec, true);
    host.play_recording(&rec, Some("lb-b"));
    let r = host.get("/svc/gamification/leaderboard", None);
    assert!(!r.body.contains("@test.local"), "no email: {}", r.body);
    let items = leaderboard(&host, "");
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0]["user_id"], json!(a));
    assert_eq!(items[1]["user_id"], json!(b));
    for item in &items {
        let keys = keys_of(item);
        for k in [
            "user_id",
            "display_name",
            "avatar",
            "total_weighted_points",
            "total_raw_points",
            "recordings_count",
            "playbacks_count",
            "achievements_count",
            "rank",
        ] {
            assert!(keys.contains(k), "{k} missing: {item}");
        }
        for k in ["email", "password", "token"] {
            assert!(!keys.contains(k), "{k} present: {item}");
        }
        let user = item["user_id"].as_str().expect("user_id");
        let s = stats(&host, user);
        for k in [
            "total_raw_points",
            "recordings_count",
            "playbacks_count",
            "achievements_count",
            "rank",
        ] {
            assert_eq!(item[k], s[k], "{k}: {item} vs {s}");
        }
    }
    assert_eq!(items[0]["display_name"], "Aria");
    let av = &items[0]["avatar"];
    let av_id = if av.is_object() { &av["id"] } else { av };
    assert_eq!(*av_id, avatar["id"], "{av}");
    assert!(items[1]["display_name"].is_null(), "{}", items[1]);
    assert!(items[1]["avatar"].is_null(), "{}", items[1]);
    assert_eq!(items[0]["rank"], 1);
    assert_eq!(items[1]["rank"], 2);
}

// ---------------------------------------------------------------- user endpoint lists

#[test]
fn user_endpoint_lists_unlocked_achievements_newest_first() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "ua-u");
    viewer(&host, "ua-o");
    let mine = create_recording(&host, "ua-u", Some("published"));
    pause();
    let other = create_recording(&host, "ua-o", Some("published"));
    host.play_recording(&other, Some("ua-u"));
    pause();
    comment(&host, "ua-u", "recordings", &other);
    pause();
    set_featured(&host, &mine, true);
    let list = gam(&host, &u)["achievements"]
        .as_array()
        .cloned()
        .expect("achievements");
    let codes: Vec<&str> = list.iter().filter_map(|a| a["code"].as_str()).collect();
    assert_eq!(
        codes,
        vec![
            "featured_recording",
            "first_comment",
            "first_play",
            "first_recording"
        ]
    );
    let by_id = achievements_by_id(&host);
    let rows = user_achs(&host, &u);
    for a in &list {
        let code = a["code"].as_str().expect("code");
        let id = a["id"].as_str().expect("id");
        let ach = by_id
            .get(id)
            .unwrap_or_else(|| panic!("id is the achievement's: {a}"));
        assert_eq!(ach["code"], a["code"]);
        for k in ["name", "description", "icon", "category", "required_count"] {
            assert_eq!(a[k], ach[k], "{k}: {a}");
        }
        assert_eq!(a["progress"], rows[code]["progress"], "{a}");
        assert_eq!(a["date_unlocked"], rows[code]["date_unlocked"], "{a}");
    }
    let dates: Vec<i64> = list.iter().map(|a| ts_ms(&a["date_unlocked"])).collect();
    assert!(dates.windows(2).all(|w| w[0] > w[1]), "{dates:?}");
}

#[test]
fn user_endpoint_returns_the_10_most_recent_points_newest_first() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "rp-u");
    let other = viewer(&host, "rp-other");
    let rec = "00000000-0000-4000-b000-0000000000aa";
    // Point actions name existing recordings (an import with its own id).
    host.admin_create("recordings", &json!({"id": rec, "title": "Imported"}));
    // 13 actions on distinct days, inserted in a shuffled order.
    let mut rows: Vec<(i64, Value)> = (0..13)
        .map(|k| (k * 7) % 13)
        .map(|d| {
            let rid = if d % 2 == 0 { json!(rec) } else { Value::Null };
            (
                d,
                json!({"user_id": u, "action": format!("ACT_{d}"), "points": d + 1,
                       "recording_id": rid, "date_created": days_ago(d as f64 + 0.5)}),
            )
        })
        .collect();
    // Someone else's newer action must not show.
    rows.push((
        -1,
        json!({"user_id": other, "action": "OTHER", "points": 1, "date_created": days_ago(0.01)}),
    ));
    let body = Value::Array(rows.iter().map(|(_, v)| v.clone()).collect());
    let r = host.post("/items/user_points", Some(ADMIN_TOKEN), &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let recent = gam(&host, &u)["recent_points"]
        .as_array()
        .cloned()
        .expect("recent_points");
    assert_eq!(recent.len(), 10, "{recent:?}");
    for (i, p) in recent.iter().enumerate() {
        let d = i as i64;
        assert_eq!(p["action"], format!("ACT_{d}"), "position {i}: {p}");
        assert_eq!(p["points"], d + 1, "{p}");
        let expected_rid = if d % 2 == 0 { json!(rec) } else { Value::Null };
        assert_eq!(p["recording_id"], expected_rid, "{p}");
        let stored = rows
            .iter()
            .find(|(k, _)| *k == d)
            .map(|(_, v)| v["date_created"].clone())
            .expect("row");
        assert_eq!(ts_ms(&p["date_created"]), ts_ms(&stored), "{p}");
    }
}

// ---------------------------------------------------------------- property test

struct MRec {
    id: String,
    owner: usize,
    published: bool,
    featured: bool,
}

struct MPlay {
    id: String,
    rec: usize,
    user: Option<usize>,
    completed: bool,
}

/// (user id, action, points, recording id) of an expected trigger action;
/// the recording is not compared for COMMENT_CREATE.
type Expected = (String, String, i64, Option<String>);

/// Everything the invariants compare before and after the recalculation.
#[derive(Debug, PartialEq)]
struct Snapshot {
    stats: BTreeMap<String, (i64, i64, i64, i64, i64)>,
    progress: BTreeMap<(String, String), (i64, Value)>,
}

/// Rules 2, 3 and 5 recomputed from every raw record, compared with what the
/// implementation stored and serves.
fn check_invariants(host: &Host, expected: &[Expected], after_recalc: bool) -> Snapshot {
    let recordings = host.admin_all("recordings", "*");
    let plays = host.admin_all("recording_plays", "*");
    let comments = host.admin_all("platform_comments", "*");
    let points: Vec<Action> = all_actions(host);
    let user_achs = host.admin_all("user_achievements", "*");
    let achievements = host.admin_all("achievements", "*");
    let stats_rows = host.admin_all("user_stats", "*");
    let users = host.admin_all("platform_users", "*");
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();

    let owner: HashMap<String, String> = recordings
        .iter()
        .map(|r| (s(&r["id"]), s(&r["user_created"])))
        .collect();
    let mut published: HashMap<String, i64> = HashMap::new();
    let mut featured_published: HashMap<String, i64> = HashMap::new();
    for r in &recordings {
        if r["status"] == "published" {
            *published.entry(s(&r["user_created"])).or_default() += 1;
            if r["featured"] == true {
                *featured_published.entry(s(&r["user_created"])).or_default() += 1;
            }
        }
    }
    let mut plays_others: HashMap<String, i64> = HashMap::new();
    let mut completed: HashMap<String, i64> = HashMap::new();
    for p in &plays {
        let Some(user) = p["user_id"].as_str() else {
            continue;
        };
        if owner.get(&s(&p["recording_id"])).map(String::as_str) != Some(user) {
            *plays_others.entry(user.to_string()).or_default() += 1;
        }
        if p["completed"] == true {
            *completed.entry(user.to_string()).or_default() += 1;
        }
    }
    let mut comment_count: HashMap<String, i64> = HashMap::new();
    for c in &comments {
        if c["collection"] == "recordings" {
            *comment_count.entry(s(&c["user_created"])).or_default() += 1;
        }
    }
    let ach: HashMap<String, &Value> = achievements.iter().map(|a| (s(&a["id"]), a)).collect();
    let mut by_user: HashMap<String, Vec<&Action>> = HashMap::new();
    for p in &points {
        by_user.entry(p.user.clone()).or_default().push(p);
    }
    let mut unlocked: HashMap<String, i64> = HashMap::new();
    for row in &user_achs {
        if !row["date_unlocked"].is_null() {
            *unlocked.entry(s(&row["user_id"])).or_default() += 1;
        }
    }
    let created: HashMap<String, i64> = users
        .iter()
        .map(|u| (s(&u["id"]), ts_ms(&u["date_created"])))
        .collect();

    // Users with a stats row are exactly the users with point actions.
    let with_row: BTreeSet<String> = stats_rows.iter().map(|r| s(&r["user_id"])).collect();
    assert_eq!(with_row.len(), stats_rows.len(), "one stats row per user");
    let with_points: BTreeSet<String> = by_user.keys().cloned().collect();
    assert_eq!(with_row, with_points, "stats rows vs users with points");

    // Rule 2 at a common instant, for the ranks.
    let t_ref = now_ms();
    let w_ref: BTreeMap<String, f64> = with_row
        .iter()
        .map(|u| (u.clone(), weighted(points_of(&by_user[u]), t_ref)))
        .collect();
    let rank_of = |u: &str| -> Option<i64> {
        let mine = w_ref[u];
        if w_ref
            .iter()
            .any(|(v, w)| v != u && (w - mine).abs() <= mine.abs().max(1.0) * 1e-9)
        {
            return None; // a near tie: the rank is not well defined here
        }
        Some(1 + w_ref.values().filter(|w| **w > mine).count() as i64)
    };

    let mut snapshot = Snapshot {
        stats: BTreeMap::new(),
        progress: BTreeMap::new(),
    };
    let get = |m: &HashMap<String, i64>, u: &str| m.get(u).copied().unwrap_or(0);
    for row in &stats_rows {
        let u = s(&row["user_id"]);
        let raw: i64 = by_user[&u].iter().map(|a| a.points).sum();
        let want = (
            raw,
            get(&published, &u),
            get(&plays_others, &u),
            get(&comment_count, &u),
            get(&unlocked, &u),
        );
        let got = (
            int_of(&row["total_raw_points"], "total_raw_points"),
            int_of(&row["recordings_count"], "recordings_count"),
            int_of(&row["playbacks_count"], "playbacks_count"),
            int_of(&row["comments_count"], "comments_count"),
            int_of(&row["achievements_count"], "achievements_count"),
        );
        assert_eq!(
            got, want,
            "stats of {u} (raw, recordings, playbacks, comments, achievements)"
        );
        let t0 = now_ms();
        let served = stats(host, &u);
        let t1 = now_ms();
        assert_weighted(&served["total_weighted_points"], &by_user[&u], t0, t1, &u);
        for (k, v) in [
            ("total_raw_points", want.0),
            ("recordings_count", want.1),
            ("playbacks_count", want.2),
            ("comments_count", want.3),
            ("achievements_count", want.4),
        ] {
            assert_eq!(served[k], v, "{k} served for {u}: {served}");
        }
        if let Some(rank) = rank_of(&u) {
            assert_eq!(served["rank"], rank, "rank of {u}");
        }
        snapshot.stats.insert(u, want);
    }

    // Rule 5 progress for every user achievement row, unlock consistent.
    let one_year_ago = |c: i64| -> bool {
        // At least one calendar year: the same date one year later is past.
        let s = iso(c);
        let next: i64 = s[..4].parse::<i64>().expect("year") + 1;
        let moved = format!("{next}{}", &s[4..]);
        let moved = if &moved[5..10] == "02-29" {
            moved.replacen("02-29", "03-01", 1)
        } else {
            moved
        };
        ts_ms(&json!(moved)) <= now_ms()
    };
    let mut rows_per_user: HashMap<String, BTreeSet<String>> = HashMap::new();
    for row in &user_achs {
        let u = s(&row["user_id"]);
        let a = ach
            .get(&s(&row["achievement_id"]))
            .unwrap_or_else(|| panic!("row for an unknown achievement: {row}"));
        let code = s(&a["code"]);
        rows_per_user
            .entry(u.clone())
            .or_default()
            .insert(s(&a["id"]));
        let progress = int_of(&row["progress"], "progress");
        let rule5 = match code.as_str() {
            "first_recording" | "recording_10" | "recording_50" | "recording_100" => {
                Some(get(&published, &u))
            }
            "featured_recording" => Some(get(&featured_published, &u)),
            "first_play" | "play_100" | "play_500" => Some(get(&plays_others, &u)),
            "completionist_10" | "completionist_100" => Some(get(&completed, &u)),
            "first_comment" | "comment_50" | "comment_250" => Some(get(&comment_count, &u)),
            "early_adopter" => Some(i64::from(
                created[&u] <= ts_ms(&json!("2025-02-01T00:00:00.000Z")),
            )),
            "one_year" => Some(i64::from(one_year_ago(created[&u]))),
            "balanced_creator" => Some(i64::from(
                get(&published, &u) >= 50 && get(&plays_others, &u) >= 100,
            )),
            "top_10_rank" => rank_of(&u).map(|r| i64::from(r <= 10)),
            _ => Some(0),
        };
        if let Some(v) = rule5 {
            assert_eq!(progress, v, "progress of {code} for {u}");
        }
        let required = int_of(&a["required_count"], "required_count");
        assert_eq!(
            !row["date_unlocked"].is_null(),
            progress >= required,
            "unlock of {code} for {u}: {row}"
        );
        snapshot
            .progress
            .insert((u, code), (progress, row["date_unlocked"].clone()));
    }
    if after_recalc {
        // The full check ran for every user with a stats row.
        let published_ids: BTreeSet<String> = achievements
            .iter()
            .filter(|a| a["status"] == "published")
            .map(|a| s(&a["id"]))
            .collect();
        for u in &with_row {
            assert_eq!(
                rows_per_user.get(u).cloned().unwrap_or_default(),
                published_ids,
                "rows of {u} after the full check"
            );
        }
    }

    // Achievement actions: one per unlocked achievement with a reward.
    let mut want_bonus: BTreeMap<(String, String), i64> = BTreeMap::new();
    for row in &user_achs {
        let a = ach[&s(&row["achievement_id"])];
        let reward = int_of(&a["points_reward"], "points_reward");
        if !row["date_unlocked"].is_null() && reward > 0 {
            want_bonus.insert(
                (s(&row["user_id"]), format!("ACHIEVEMENT_{}", s(&a["code"]))),
                reward,
            );
        }
    }
    let mut got_bonus: BTreeMap<(String, String), i64> = BTreeMap::new();
    for p in points
        .iter()
        .filter(|p| p.action.starts_with("ACHIEVEMENT_"))
    {
        assert_eq!(p.recording, None, "{p:?}");
        let key = (p.user.clone(), p.action.clone());
        assert!(
            got_bonus.insert(key, p.points).is_none(),
            "two {} for {}",
            p.action,
            p.user
        );
    }
    assert_eq!(got_bonus, want_bonus, "achievement actions");

    // Trigger actions, against the model of the sequence...
    let key = |e: &Expected| {
        let rec = if e.1 == "COMMENT_CREATE" {
            None
        } else {
            e.3.clone()
        };
        (e.0.clone(), e.1.clone(), e.2, rec)
    };
    let mut got: Vec<Expected> = points
        .iter()
        .filter(|p| !p.action.starts_with("ACHIEVEMENT_"))
        .map(|p| {
            key(&(
                p.user.clone(),
                p.action.clone(),
                p.points,
                p.recording.clone(),
            ))
        })
        .collect();
    let mut want: Vec<Expected> = expected.iter().map(key).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "trigger actions");
    // ...and against the raw records directly.
    let count = |user: &str, action: &str, rec: Option<&str>| {
        points
            .iter()
            .filter(|p| {
                p.user == user
                    && p.action == action
                    && (rec.is_none() || p.recording.as_deref() == rec)
            })
            .count() as i64
    };
    for r in &recordings {
        let id = s(&r["id"]);
        let o = s(&r["user_created"]);
        let creates = points
            .iter()
            .filter(|p| p.action == "RECORDING_CREATE" && p.recording.as_deref() == Some(&id))
            .count();
        assert_eq!(
            creates,
            usize::from(r["status"] == "published"),
            "RECORDING_CREATE of {id}"
        );
        assert_eq!(
            count(&o, "RECORDING_CREATE", Some(&id)) as usize,
            creates,
            "to its owner"
        );
        let features = points
            .iter()
            .filter(|p| p.action == "RECORDING_FEATURED" && p.recording.as_deref() == Some(&id))
            .count();
        assert_eq!(
            features,
            usize::from(r["featured"] == true),
            "RECORDING_FEATURED of {id}"
        );
        assert_eq!(
            count(&o, "RECORDING_FEATURED", Some(&id)) as usize,
            features
        );
    }
    for u in &with_row {
        assert_eq!(
            count(u, "RECORDING_PLAY", None),
            get(&plays_others, u),
            "plays of {u}"
        );
        assert_eq!(
            count(u, "RECORDING_COMPLETE", None),
            get(&completed, u),
            "completions of {u}"
        );
        assert_eq!(
            count(u, "COMMENT_CREATE", None),
            get(&comment_count, u),
            "comments of {u}"
        );
    }
    for p in &points {
        let value = match p.action.as_str() {
            "RECORDING_CREATE" => Some(50),
            "RECORDING_PLAY" => Some(10),
            "RECORDING_COMPLETE" => Some(5),
            "COMMENT_CREATE" => Some(5),
            "RECORDING_FEATURED" => Some(100),
            _ => None,
        };
        if let Some(v) = value {
            assert_eq!(p.points, v, "{p:?}");
        }
    }
    snapshot
}

fn random_sequence(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let host = Host::in_process_svc();
    host.admin_create(
        "achievements",
        &json!({"code": "mystery_play", "name": "Mystery", "description": "?", "icon": "help",
                "category": "playback", "required_count": 1, "points_reward": 10,
                "status": "published", "sort": 16}),
    );
    let n = 4 + rng.below(3);
    let tokens: Vec<String> = (0..n).map(|i| format!("prop{seed}-{i}")).collect();
    let ids: Vec<String> = tokens.iter().map(|t| viewer(&host, t)).collect();
    let mut recs: Vec<MRec> = Vec::new();
    let mut plays: Vec<MPlay> = Vec::new();
    let mut expected: Vec<Expected> = Vec::new();
    let mut log: Vec<String> = Vec::new();

    for _ in 0..60 {
        let r = rng.below(100);
        if recs.is_empty() || r < 18 {
            let owner = rng.below(n);
            let status = match rng.below(3) {
                0 => None,
                1 => Some("draft"),
                _ => Some("published"),
            };
            let id = create_recording(&host, &tokens[owner], status);
            let published = status == Some("published");
            if published {
                expected.push((
                    ids[owner].clone(),
                    "RECORDING_CREATE".into(),
                    50,
                    Some(id.clone()),
                ));
            }
            log.push(format!("create {status:?} by {owner}"));
            recs.push(MRec {
                id,
                owner,
                published,
                featured: false,
            });
        } else if r < 30 {
            let k = rng.below(recs.len());
            let rec = &mut recs[k];
            set_status(&host, &tokens[rec.owner], &rec.id, "published");
            if !rec.published {
                rec.published = true;
                expected.push((
                    ids[rec.owner].clone(),
                    "RECORDING_CREATE".into(),
                    50,
                    Some(rec.id.clone()),
                ));
            }
            log.push(format!("publish rec {k}"));
        } else if r < 38 {
            let k = rng.below(recs.len());
            let rec = &mut recs[k];
            set_featured(&host, &rec.id, true);
            if !rec.featured {
                rec.featured = true;
                expected.push((
                    ids[rec.owner].clone(),
                    "RECORDING_FEATURED".into(),
                    100,
                    Some(rec.id.clone()),
                ));
            }
            log.push(format!("feature rec {k}"));
        } else if r < 66 || plays.is_empty() {
            let k = rng.below(recs.len());
            let user = if rng.below(4) == 0 {
                None
            } else {
                Some(rng.below(n))
            };
            let id = host.play_recording(&recs[k].id, user.map(|u| tokens[u].as_str()));
            if let Some(u) = user {
                if u != recs[k].owner {
                    expected.push((
                        ids[u].clone(),
                        "RECORDING_PLAY".into(),
                        10,
                        Some(recs[k].id.clone()),
                    ));
                }
            }
            log.push(format!("play rec {k} by {user:?}"));
            plays.push(MPlay {
                id,
                rec: k,
                user,
                completed: false,
            });
        } else if r < 83 {
            let k = rng.below(plays.len());
            let p = &mut plays[k];
            // Reports come from the player; never un-complete a play.
            let completed = p.completed || rng.below(5) != 0;
            let rec_id = recs[p.rec].id.clone();
            report(
                &host,
                &rec_id,
                &p.id,
                p.user.map(|u| tokens[u].as_str()),
                completed,
            );
            if completed && !p.completed {
                if let Some(u) = p.user {
                    expected.push((ids[u].clone(), "RECORDING_COMPLETE".into(), 5, Some(rec_id)));
                }
            }
            p.completed |= completed;
            log.push(format!("report play {k} completed={completed}"));
        } else {
            let u = rng.below(n);
            let k = rng.below(recs.len());
            let collection = if rng.below(6) == 0 {
                "videos"
            } else {
                "recordings"
            };
            if collection == "recordings" {
                comment(&host, &tokens[u], collection, &recs[k].id);
                expected.push((ids[u].clone(), "COMMENT_CREATE".into(), 5, None));
            } else {
                refused_comment(&host, &tokens[u], collection, &recs[k].id);
            }
            log.push(format!("comment {collection} by {u} on rec {k}"));
        }
    }

    // The model agrees with the raw records.
    let stored: HashMap<String, Value> = host
        .admin_all("recordings", "*")
        .into_iter()
        .map(|r| (r["id"].as_str().unwrap_or_default().to_string(), r))
        .collect();
    for m in &recs {
        let r = &stored[&m.id];
        assert_eq!(r["status"] == "published", m.published, "{r}");
        assert_eq!(r["featured"] == true, m.featured, "{r}");
        assert_eq!(r["user_created"], json!(ids[m.owner]), "{r}");
    }
    let stored: HashMap<String, Value> = host
        .admin_all("recording_plays", "*")
        .into_iter()
        .map(|r| (r["id"].as_str().unwrap_or_default().to_string(), r))
        .collect();
    for p in &plays {
        let r = &stored[&p.id];
        assert_eq!(r["completed"] == true, p.completed, "{r}");
        assert_eq!(
            r["user_id"],
            p.user.map(|u| json!(ids[u])).unwrap_or(Value::Null)
        );
    }

    // Ten "whales" far ahead, so that the recalculation's top_10_rank goes
    // to them and leaves the values of the sequence's users unchanged.
    let whale_tokens: Vec<String> = (0..10).map(|i| format!("whale{seed}-{i}")).collect();
    let whales: Vec<String> = whale_tokens.iter().map(|t| viewer(&host, t)).collect();
    let imported: Vec<Value> = whales
        .iter()
        .enumerate()
        .map(|(i, w)| json!({"user_id": w, "action": "IMPORTED", "points": 100_000 + 1000 * i as i64}))
        .collect();
    let r = host.post(
        "/items/user_points",
        Some(ADMIN_TOKEN),
        &Value::Array(imported),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    for (i, (w, t)) in whales.iter().zip(&whale_tokens).enumerate() {
        comment(&host, t, "recordings", &recs[0].id);
        expected.push((
            w.clone(),
            "IMPORTED".into(),
            100_000 + 1000 * i as i64,
            None,
        ));
        expected.push((w.clone(), "COMMENT_CREATE".into(), 5, None));
    }

    let ctx = format!("seed {seed}, {n} users:\n{}", log.join("\n"));
    let before = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check_invariants(&host, &expected, false)
    }))
    .unwrap_or_else(|e| {
        eprintln!("{ctx}");
        std::panic::resume_unwind(e)
    });

    recalc(&host);
    let after = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check_invariants(&host, &expected, true)
    }))
    .unwrap_or_else(|e| {
        eprintln!("{ctx}");
        std::panic::resume_unwind(e)
    });
    // The sequence's users: identical values; their existing rows unchanged.
    for u in &ids {
        assert_eq!(
            before.stats.get(u),
            after.stats.get(u),
            "stats of {u} changed by the recalculation\n{ctx}"
        );
    }
    for ((u, code), v) in &before.progress {
        if ids.contains(u) {
            assert_eq!(
                after.progress.get(&(u.clone(), code.clone())),
                Some(v),
                "{code} of {u} changed by the recalculation\n{ctx}"
            );
        }
    }
    for w in &whales {
        assert_eq!(
            after
                .progress
                .get(&(w.clone(), "top_10_rank".to_string()))
                .map(|p| p.0),
            Some(1),
            "whale {w}"
        );
    }
}

#[test]
fn property_random_sequence_seed_1() {
    random_sequence(1);
}

#[test]
fn property_random_sequence_seed_2() {
    random_sequence(2);
}

#[test]
fn property_random_sequence_seed_3() {
    random_sequence(3);
}

#[test]
fn top_10_rank_is_decided_on_the_refreshed_scores() {
    // Stats rows that are stale (all zero) while the point actions were
    // imported directly: the recalculation must rank users by the rebuilt
    // scores, so only the ten best unlock `top_10_rank`.
    let host = Host::in_process_svc();
    let mut users = Vec::new();
    for i in 0..14 {
        let user = viewer(&host, &format!("stale-{i}"));
        host.admin_create(
            "user_stats",
            &json!({"user_id": user, "total_raw_points": 0, "total_weighted_points": 0}),
        );
        host.admin_create(
            "user_points",
            &json!({"user_id": user, "action": "IMPORTED", "points": 100 + i * 10,
                    "date_created": days_ago(1.0)}),
        );
        users.push(user);
    }
    recalc(&host);
    for (i, user) in users.iter().enumerate() {
        let top = unlocked(&user_achs(&host, user), "top_10_rank");
        // Points 100 + 10·i: users 4..=13 are the ten best.
        assert_eq!(top, i >= 4, "user {i}: top_10_rank {top}");
        assert_eq!(stats(&host, user)["rank"], json!(14 - i), "user {i}");
    }
}

// ------------------------------------------------- every write path (§7)

/// The id of an item created as admin.
fn admin_id(host: &Host, collection: &str, body: &Value) -> String {
    host.admin_create(collection, body)["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id creating {collection}"))
        .to_string()
}

#[test]
fn point_actions_written_through_items_count_in_the_stats() {
    let host = Host::in_process_svc();
    let owner = viewer(&host, "pi-o");
    let p = viewer(&host, "pi-p");
    let rec = create_recording(&host, "pi-o", Some("published"));
    host.play_recording(&rec, Some("pi-p"));
    let earned = stats(&host, &p)["total_raw_points"]
        .as_i64()
        .expect("raw points");
    // An administrator imports old point actions.
    let r = host.post(
        "/items/user_points",
        Some(ADMIN_TOKEN),
        &json!([
            {"user_id": p, "action": "IMPORTED", "points": 40, "date_created": days_ago(400.0)},
            {"user_id": p, "action": "IMPORTED", "points": 25, "date_created": days_ago(30.0)},
            {"user_id": p, "action": "IMPORTED", "points": 3},
        ]),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let ids: Vec<String> = r.json()["data"]
        .as_array()
        .expect("created")
        .iter()
        .map(|a| a["id"].as_str().expect("id").to_string())
        .collect();
    // Counted in the same transaction, before any award.
    assert_stats_follow_rules(&host, &p);
    assert_eq!(stats(&host, &p)["total_raw_points"], earned + 40 + 25 + 3);
    // Changed, deleted, and moved to another user.
    host.admin_patch("user_points", &ids[0], &json!({"points": 7}));
    host.admin_delete("user_points", &ids[1]);
    host.admin_patch("user_points", &ids[2], &json!({"user_id": owner}));
    assert_stats_follow_rules(&host, &p);
    assert_stats_follow_rules(&host, &owner);
    // The next award recomputes from all of them (rule 1, rule 3).
    host.play_recording(&rec, Some("pi-p"));
    assert_stats_follow_rules(&host, &p);
    assert_eq!(stats(&host, &p)["total_raw_points"], earned + 7 + 10);
}

#[test]
fn comments_earn_comment_create_only_on_an_existing_recording() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "ce-u");
    viewer(&host, "ce-o");
    let rec = create_recording(&host, "ce-o", Some("published"));
    // `item` names no recording at all: refused, as every comment on a
    // missing item is, and never rewarded.
    refused_comment(
        &host,
        "ce-u",
        "recordings",
        "00000000-0000-4000-8000-00000000dead",
    );
    assert!(named(&host, &u, "COMMENT_CREATE").is_empty());
    assert!(!unlocked(&user_achs(&host, &u), "first_comment"));
    assert!(stats(&host, &u).is_null(), "{}", stats(&host, &u));
    // An import on the user's behalf, on an existing recording: rewarded.
    let r = host.post(
        "/items/platform_comments",
        Some(ADMIN_TOKEN),
        &json!({"collection": "recordings", "item": rec, "comment": "c", "user_created": u}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(named(&host, &u, "COMMENT_CREATE").len(), 1);
    assert!(unlocked(&user_achs(&host, &u), "first_comment"));
    assert_stats_follow_rules(&host, &u);
    assert_eq!(stats(&host, &u)["comments_count"], 1);
    // And another on the recording.
    comment(&host, "ce-u", "recordings", &rec);
    assert_eq!(named(&host, &u, "COMMENT_CREATE").len(), 2);
    assert_stats_follow_rules(&host, &u);
}

#[test]
fn a_stats_row_written_by_hand_is_put_right_by_the_next_award() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "he-u");
    viewer(&host, "he-o");
    let rec = create_recording(&host, "he-o", Some("published"));
    host.play_recording(&rec, Some("he-u"));
    let row = host.admin_find("user_stats", &json!({"user_id": {"_eq": u}}));
    let junk = json!({"total_raw_points": 1, "total_weighted_points": 99999.0,
                      "recordings_count": 42, "playbacks_count": 42, "comments_count": 42,
                      "achievements_count": 42});
    host.admin_patch("user_stats", row[0]["id"].as_str().expect("id"), &junk);
    // The edit stands until the next award (docs/service-api.md rule 1)…
    assert_eq!(stats(&host, &u)["total_raw_points"], 1);
    // …which recomputes the row from scratch, and keeps it exact after.
    host.play_recording(&rec, Some("he-u"));
    assert_stats_follow_rules(&host, &u);
    host.play_recording(&rec, Some("he-u"));
    assert_stats_follow_rules(&host, &u);
    // A row created by hand for a user without one.
    let w = viewer(&host, "he-w");
    host.admin_create("user_stats", &json!({"user_id": w, "total_raw_points": 7}));
    host.play_recording(&rec, Some("he-w"));
    assert_stats_follow_rules(&host, &w);
    let earned: i64 = actions(&host, &w).iter().map(|a| a.points).sum();
    assert_eq!(stats(&host, &w)["total_raw_points"], earned);
    assert_ne!(earned, 7);
}

#[test]
fn recordings_and_plays_written_through_items_count_in_the_stats() {
    let host = Host::in_process_svc();
    let a = viewer(&host, "rp-a");
    let b = viewer(&host, "rp-b");
    let seed = create_recording(&host, "rp-b", Some("published"));
    host.play_recording(&seed, Some("rp-a"));
    // A member's recording created through /items, published: rewarded once.
    let r = host.post(
        "/items/recordings",
        Some("rp-a"),
        &rec_body("Through items", Some("published")),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let rec = r.json()["data"]["id"].as_str().expect("id").to_string();
    assert_eq!(named(&host, &a, "RECORDING_CREATE").len(), 1);
    host.admin_patch("recordings", &rec, &json!({"status": "draft"}));
    host.admin_patch("recordings", &rec, &json!({"status": "published"}));
    assert_eq!(named(&host, &a, "RECORDING_CREATE").len(), 1);
    // Plays written by an administrator: b's (completed) on a's
    // recording, a's on their own.
    let b_play = admin_id(
        &host,
        "recording_plays",
        &json!({"recording_id": rec, "user_id": b, "completed": true}),
    );
    admin_id(
        &host,
        "recording_plays",
        &json!({"recording_id": rec, "user_id": a}),
    );
    for user in [&a, &b] {
        assert_stats_follow_rules(&host, user);
    }
    // The recording changes owner: a's play is now on another's recording,
    // b's on their own.
    host.admin_patch("recordings", &rec, &json!({"user_created": b}));
    for user in [&a, &b] {
        assert_stats_follow_rules(&host, user);
    }
    // A play moved to another player, then deleted; the recording deleted.
    host.admin_patch("recording_plays", &b_play, &json!({"user_id": a}));
    for user in [&a, &b] {
        assert_stats_follow_rules(&host, user);
    }
    host.admin_delete("recording_plays", &b_play);
    host.admin_delete("recordings", &rec);
    // Awards after all that start from exact rows.
    host.play_recording(&seed, Some("rp-a"));
    let other = create_recording(&host, "rp-a", Some("published"));
    host.play_recording(&other, Some("rp-b"));
    for user in [&a, &b] {
        assert_stats_follow_rules(&host, user);
    }
}
