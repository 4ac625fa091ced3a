//! Video interaction and analytics of docs/service-api.md: POST/DELETE
//! /svc/videos/:id/like, GET /svc/videos/:id/like-status, POST
//! /svc/videos/:id/play, PATCH /svc/videos/:id/play/:playId and GET
//! /svc/analytics, black-box through HTTP, including concurrent callers.
//!
//! Data is set up as admin through the platform's items API (docs/decisions.md
//! §6).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Barrier;

use platform_tests::{analytics, assert_error, id_of, keys_of, rec_body, Host, Resp, ADMIN_TOKEN};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

const PAST: &str = "2001-01-01T00:00:00.000Z";
const FUTURE: &str = "2999-01-01T00:00:00.000Z";
/// A well-formed id that names no video.
const MISSING: &str = "00000000-0000-4000-8000-000000000000";

fn likes_of(host: &Host, video: &str) -> u64 {
    host.admin_count("video_likes", Some(&json!({"video_id": {"_eq": video}})))
}

fn plays_of(host: &Host, video: &str) -> u64 {
    host.admin_count("video_plays", Some(&json!({"video_id": {"_eq": video}})))
}

fn video(host: &Host, slug: &str) -> String {
    video_at(host, slug, PAST)
}

fn video_at(host: &Host, slug: &str, upload_date: &str) -> String {
    id_of(&host.admin_video(slug, Some(upload_date)))
}

fn like(host: &Host, video: &str, token: Option<&str>) -> Resp {
    host.post(&format!("/svc/videos/{video}/like"), token, &json!({}))
}

fn unlike(host: &Host, video: &str, token: Option<&str>) -> Resp {
    host.delete(&format!("/svc/videos/{video}/like"), token)
}

fn like_status(host: &Host, video: &str, token: Option<&str>) -> Resp {
    host.get(&format!("/svc/videos/{video}/like-status"), token)
}

fn play(host: &Host, video: &str, token: Option<&str>, body: &Value) -> Resp {
    host.post(&format!("/svc/videos/{video}/play"), token, body)
}

fn patch_play(host: &Host, video: &str, play: &str, body: &Value) -> Resp {
    host.patch(&format!("/svc/videos/{video}/play/{play}"), None, body)
}

fn ok(r: &Resp, what: &str) -> Value {
    assert_eq!(r.status, 200, "{what}: {}", r.body);
    r.json()
}

/// A play record created as admin with explicit values.
fn play_record(host: &Host, video: &str, date: &str, watched: f64, completed: bool) {
    host.admin_create(
        "video_plays",
        &json!({"video_id": video, "date_created": date, "duration_watched": watched,
                "completed": completed, "session_id": "seed"}),
    );
}

/// A like record created as admin with an explicit date.
fn like_record(host: &Host, video: &str, user: &str, date: &str) {
    host.admin_create(
        "video_likes",
        &json!({"video_id": video, "user_id": user, "date_created": date}),
    );
}

fn analytics(host: &Host, token: &str) -> Value {
    ok(&host.get("/svc/analytics", Some(token)), "analytics")
}

// ---------------------------------------------------------------------------
// POST /svc/videos/:id/like, DELETE /svc/videos/:id/like
// ---------------------------------------------------------------------------

#[test]
fn like_and_unlike_require_a_caller() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    assert_error(&like(&host, &v, None), 401, "Unauthorized");
    assert_error(&unlike(&host, &v, None), 401, "Unauthorized");
    assert_eq!(likes_of(&host, &v), 0);
    assert_eq!(host.admin_item("videos", &v)["likes_count"], 0);
}

#[test]
fn like_creates_the_like_and_answers_the_new_counter() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    let uid = host.users(Some("Viewer"), &["fan".into()]).remove(0);
    let r = like(&host, &v, Some("fan"));
    assert_eq!(ok(&r, "like"), json!({"liked": true, "likes_count": 1}));
    assert_eq!(host.admin_item("videos", &v)["likes_count"], 1);
    let rows = host.admin_find("video_likes", &json!({"video_id": {"_eq": v}}));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["user_id"], json!(uid), "{rows:?}");
    assert!(rows[0]["date_created"].is_string(), "{rows:?}");
}

#[test]
fn like_increments_the_stored_counter() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    host.admin_patch("videos", &v, &json!({"likes_count": 5}));
    host.users(Some("Viewer"), &["fan".into()]);
    let r = like(&host, &v, Some("fan"));
    assert_eq!(ok(&r, "like"), json!({"liked": true, "likes_count": 6}));
    assert_eq!(host.admin_item("videos", &v)["likes_count"], 6);
}

#[test]
fn liking_twice_is_already_liked() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    host.users(Some("Viewer"), &["fan".into()]);
    ok(&like(&host, &v, Some("fan")), "first like");
    assert_error(&like(&host, &v, Some("fan")), 400, "Already liked");
    assert_eq!(likes_of(&host, &v), 1);
    assert_eq!(host.admin_item("videos", &v)["likes_count"], 1);
}

#[test]
fn likes_of_different_users_add_up() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    host.users(Some("Viewer"), &["a".into(), "b".into()]);
    host.users(Some("Model"), &["m".into()]);
    assert_eq!(ok(&like(&host, &v, Some("a")), "a")["likes_count"], 1);
    assert_eq!(ok(&like(&host, &v, Some("b")), "b")["likes_count"], 2);
    assert_eq!(ok(&like(&host, &v, Some("m")), "m")["likes_count"], 3);
    assert_eq!(likes_of(&host, &v), 3);
}

#[test]
fn unlike_deletes_the_like_and_answers_the_new_counter() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    host.users(Some("Viewer"), &["a".into(), "b".into()]);
    ok(&like(&host, &v, Some("a")), "a");
    ok(&like(&host, &v, Some("b")), "b");
    let r = unlike(&host, &v, Some("a"));
    assert_eq!(ok(&r, "unlike"), json!({"liked": false, "likes_count": 1}));
    assert_eq!(likes_of(&host, &v), 1);
    assert_eq!(host.admin_item("videos", &v)["likes_count"], 1);
    // Liked again afterwards.
    let r = like(&host, &v, Some("a"));
    assert_eq!(ok(&r, "relike"), json!({"liked": true, "likes_count": 2}));
}

#[test]
fn unlike_without_a_like_is_not_liked() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    let other = video(&host, "other");
    host.users(Some("Viewer"), &["a".into(), "b".into()]);
    assert_error(&unlike(&host, &v, Some("a")), 400, "Not liked");
    // Another user's like, or a like of another video, is not the caller's.
    ok(&like(&host, &v, Some("b")), "b likes v");
    ok(&like(&host, &other, Some("a")), "a likes other");
    assert_error(&unlike(&host, &v, Some("a")), 400, "Not liked");
    assert_eq!(likes_of(&host, &v), 1);
    assert_eq!(host.admin_item("videos", &v)["likes_count"], 1);
}

#[test]
fn unlike_decrements_the_stored_counter() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    host.users(Some("Viewer"), &["a".into()]);
    ok(&like(&host, &v, Some("a")), "like");
    host.admin_patch("videos", &v, &json!({"likes_count": 10}));
    let r = unlike(&host, &v, Some("a"));
    assert_eq!(ok(&r, "unlike"), json!({"liked": false, "likes_count": 9}));
    assert_eq!(host.admin_item("videos", &v)["likes_count"], 9);
}

#[test]
fn unlike_never_takes_the_counter_below_zero() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    host.users(Some("Viewer"), &["a".into()]);
    ok(&like(&host, &v, Some("a")), "like");
    host.admin_patch("videos", &v, &json!({"likes_count": 0}));
    let r = unlike(&host, &v, Some("a"));
    assert_eq!(ok(&r, "unlike"), json!({"liked": false, "likes_count": 0}));
    assert_eq!(host.admin_item("videos", &v)["likes_count"], 0);
    assert_eq!(likes_of(&host, &v), 0);
}

#[test]
fn like_unlike_and_play_of_a_missing_video_are_404_and_write_nothing() {
    let host = Host::in_process_svc();
    video(&host, "exists");
    host.users(Some("Viewer"), &["a".into()]);
    assert_error(&like(&host, MISSING, Some("a")), 404, "Video not found");
    assert_error(&unlike(&host, MISSING, Some("a")), 404, "Video not found");
    assert_error(
        &play(&host, MISSING, None, &json!({"session_id": "s"})),
        404,
        "Video not found",
    );
    assert_error(
        &play(&host, MISSING, Some("a"), &json!({})),
        404,
        "Video not found",
    );
    assert_eq!(host.admin_count("video_likes", None), 0);
    assert_eq!(host.admin_count("video_plays", None), 0);
}

#[test]
fn a_caller_not_allowed_to_create_likes_fails_and_writes_nothing() {
    // docs/service-api.md: any unexpected failure is a 500 with the failure's
    // message; a refusal by the platform's permissions is one (README,
    // "Behaviour the spec leaves open").
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    host.users(None, &["roleless".into()]);
    let r = like(&host, &v, Some("roleless"));
    assert_error(&r, 500, "You don't have permission to access this.");
    assert_eq!(likes_of(&host, &v), 0);
    assert_eq!(host.admin_item("videos", &v)["likes_count"], 0);
}

#[test]
fn a_bad_token_is_refused_on_interaction_routes() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    for r in [
        like_status(&host, &v, Some("nope")),
        play(&host, &v, Some("nope"), &json!({})),
        like(&host, &v, Some("nope")),
        host.get("/svc/analytics", Some("nope")),
    ] {
        assert_error(&r, 401, "Invalid token");
    }
    assert_eq!(plays_of(&host, &v), 0);
}

// ---------------------------------------------------------------------------
// GET /svc/videos/:id/like-status
// ---------------------------------------------------------------------------

#[test]
fn like_status_of_an_anonymous_caller_is_false() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    host.users(Some("Viewer"), &["a".into()]);
    ok(&like(&host, &v, Some("a")), "like");
    let r = like_status(&host, &v, None);
    assert_eq!(ok(&r, "anonymous"), json!({"liked": false}));
}

#[test]
fn like_status_follows_the_callers_like() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    let other = video(&host, "other");
    host.users(Some("Viewer"), &["a".into(), "b".into()]);
    assert_eq!(
        ok(&like_status(&host, &v, Some("a")), "before"),
        json!({"liked": false})
    );
    ok(&like(&host, &v, Some("a")), "like");
    assert_eq!(
        ok(&like_status(&host, &v, Some("a")), "liked"),
        json!({"liked": true})
    );
    assert_eq!(
        ok(&like_status(&host, &v, Some("b")), "other user"),
        json!({"liked": false})
    );
    assert_eq!(
        ok(&like_status(&host, &other, Some("a")), "other video"),
        json!({"liked": false})
    );
    ok(&unlike(&host, &v, Some("a")), "unlike");
    assert_eq!(
        ok(&like_status(&host, &v, Some("a")), "unliked"),
        json!({"liked": false})
    );
}

// ---------------------------------------------------------------------------
// POST /svc/videos/:id/play
// ---------------------------------------------------------------------------

#[test]
fn anonymous_play_records_a_play_without_user() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    let body = ok(
        &play(&host, &v, None, &json!({"session_id": "sess-1"})),
        "play",
    );
    assert_eq!(body["success"], true, "{body}");
    assert_eq!(body["plays_count"], 1, "{body}");
    assert_eq!(
        keys_of(&body),
        BTreeSet::from(["success", "play_id", "plays_count"]),
        "{body}"
    );
    let pid = body["play_id"].as_str().unwrap_or_else(|| panic!("{body}"));
    let rec = host.admin_item("video_plays", pid);
    assert_eq!(rec["video_id"], json!(v), "{rec}");
    assert_eq!(rec["user_id"], Value::Null, "{rec}");
    assert_eq!(rec["session_id"], "sess-1", "{rec}");
    assert_eq!(host.admin_item("videos", &v)["plays_count"], 1);
}

#[test]
fn authenticated_play_records_the_caller() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    let uid = host.users(Some("Viewer"), &["a".into()]).remove(0);
    let body = ok(
        &play(&host, &v, Some("a"), &json!({"session_id": "s-a"})),
        "play",
    );
    assert_eq!(body["success"], true, "{body}");
    let rec = host.admin_item("video_plays", body["play_id"].as_str().unwrap_or("?"));
    assert_eq!(rec["user_id"], json!(uid), "{rec}");
    assert_eq!(rec["session_id"], "s-a", "{rec}");
}

#[test]
fn play_without_session_stores_null() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    let a = ok(&play(&host, &v, None, &json!({})), "empty object");
    let b = ok(
        &host.request("POST", &format!("/svc/videos/{v}/play"), None, None),
        "no body",
    );
    for body in [a, b] {
        let rec = host.admin_item("video_plays", body["play_id"].as_str().unwrap_or("?"));
        assert_eq!(rec["session_id"], Value::Null, "{rec}");
        assert_eq!(rec["user_id"], Value::Null, "{rec}");
    }
    assert_eq!(plays_of(&host, &v), 2);
}

#[test]
fn play_increments_the_stored_counter() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    host.admin_patch("videos", &v, &json!({"plays_count": 10}));
    let body = ok(&play(&host, &v, None, &json!({})), "play");
    assert_eq!(body["plays_count"], 11, "{body}");
    let body = ok(&play(&host, &v, None, &json!({})), "play");
    assert_eq!(body["plays_count"], 12, "{body}");
    assert_eq!(host.admin_item("videos", &v)["plays_count"], 12);
    assert_ne!(
        body["play_id"],
        Value::Null,
        "a play id is returned: {body}"
    );
}

#[test]
fn play_with_a_non_string_session_is_400_and_writes_nothing() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    for bad in [json!(42), json!(true), json!(["s"]), json!({"s": 1})] {
        assert_error(
            &play(&host, &v, None, &json!({"session_id": bad})),
            400,
            "session_id must be a string",
        );
    }
    assert_eq!(plays_of(&host, &v), 0);
    assert_eq!(host.admin_item("videos", &v)["plays_count"], 0);
}

#[test]
fn play_with_invalid_json_is_400() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    let r = host.request(
        "POST",
        &format!("/svc/videos/{v}/play"),
        None,
        Some(b"{nope"),
    );
    assert_error(&r, 400, "Invalid JSON body");
    assert_eq!(plays_of(&host, &v), 0);
}

// ---------------------------------------------------------------------------
// PATCH /svc/videos/:id/play/:playId
// ---------------------------------------------------------------------------

fn new_play(host: &Host, video: &str) -> String {
    let body = ok(
        &play(host, video, None, &json!({"session_id": "s"})),
        "play",
    );
    body["play_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no play_id: {body}"))
        .to_string()
}

#[test]
fn patch_play_updates_watch_time_and_completion_without_auth() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    let p = new_play(&host, &v);
    let r = patch_play(
        &host,
        &v,
        &p,
        &json!({"duration_watched": 42.5, "completed": true}),
    );
    assert_eq!(ok(&r, "patch"), json!({"success": true}));
    let rec = host.admin_item("video_plays", &p);
    assert_eq!(rec["duration_watched"].as_f64(), Some(42.5), "{rec}");
    assert_eq!(rec["completed"], true, "{rec}");
    let r = patch_play(
        &host,
        &v,
        &p,
        &json!({"duration_watched": 60, "completed": false}),
    );
    assert_eq!(ok(&r, "patch again"), json!({"success": true}));
    let rec = host.admin_item("video_plays", &p);
    assert_eq!(rec["duration_watched"].as_f64(), Some(60.0), "{rec}");
    assert_eq!(rec["completed"], false, "{rec}");
}

#[test]
fn patch_of_an_unknown_play_is_404() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    new_play(&host, &v);
    assert_error(
        &patch_play(
            &host,
            &v,
            MISSING,
            &json!({"duration_watched": 1, "completed": true}),
        ),
        404,
        "Play record not found",
    );
}

#[test]
fn patch_of_another_videos_play_is_404_and_changes_nothing() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    let w = video(&host, "w");
    let p = new_play(&host, &w);
    assert_error(
        &patch_play(
            &host,
            &v,
            &p,
            &json!({"duration_watched": 99, "completed": true}),
        ),
        404,
        "Play record not found",
    );
    let rec = host.admin_item("video_plays", &p);
    assert_eq!(rec["completed"], false, "{rec}");
    assert_ne!(rec["duration_watched"].as_f64(), Some(99.0), "{rec}");
}

#[test]
fn patch_play_checks_the_types() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    let p = new_play(&host, &v);
    for bad in [json!("10"), json!(true), json!([1]), json!({"n": 1})] {
        assert_error(
            &patch_play(
                &host,
                &v,
                &p,
                &json!({"duration_watched": bad, "completed": true}),
            ),
            400,
            "duration_watched must be a number",
        );
    }
    for bad in [json!("true"), json!(1), json!([true])] {
        assert_error(
            &patch_play(
                &host,
                &v,
                &p,
                &json!({"duration_watched": 10, "completed": bad}),
            ),
            400,
            "completed must be a boolean",
        );
    }
    let rec = host.admin_item("video_plays", &p);
    assert_eq!(rec["completed"], false, "nothing changed: {rec}");
    assert_ne!(rec["duration_watched"].as_f64(), Some(10.0), "{rec}");
}

#[test]
fn patch_play_with_invalid_json_is_400() {
    let host = Host::in_process_svc();
    let v = video(&host, "v");
    let p = new_play(&host, &v);
    let r = host.request(
        "PATCH",
        &format!("/svc/videos/{v}/play/{p}"),
        None,
        Some(b"not json"),
    );
    assert_error(&r, 400, "Invalid JSON body");
}

// ---------------------------------------------------------------------------
// GET /svc/analytics
// ---------------------------------------------------------------------------

#[test]
fn analytics_requires_a_caller() {
    let host = Host::in_process_svc();
    assert_error(&host.get("/svc/analytics", None), 401, "Unauthorized");
}

#[test]
fn analytics_without_linked_videos_is_the_empty_shape() {
    let host = Host::in_process_svc();
    let ids = host.users(Some("Model"), &["lonely".into(), "busy".into()]);
    // Another model's video, with plays and likes, does not count.
    let v = video(&host, "theirs");
    host.link_model(&v, &ids[1]);
    play_record(&host, &v, "2024-01-01T00:00:00Z", 10.0, true);
    host.admin_patch("videos", &v, &json!({"likes_count": 3, "plays_count": 1}));
    let want = json!({"total_videos": 0, "total_likes": 0, "total_plays": 0, "videos": []});
    assert_eq!(analytics(&host, "lonely"), want);
    assert_eq!(
        analytics(&host, ADMIN_TOKEN),
        want,
        "the admin has no videos"
    );
}

/// The caller's three videos (one not yet uploaded, one shared with another
/// model) next to another model's video; counters differ from the records
/// on purpose: totals and per-video likes/plays are the counters.
#[test]
fn analytics_sums_counters_and_groups_records_by_utc_day() {
    let host = Host::in_process_svc();
    let ids = host.users(Some("Model"), &["me".into(), "peer".into()]);
    let (me, peer) = (ids[0].clone(), ids[1].clone());
    let fans = host.users(Some("Viewer"), &["f1".into(), "f2".into(), "f3".into()]);

    let a = video_at(&host, "a", "2020-01-01T00:00:00Z");
    let b = video_at(&host, "b", FUTURE);
    let c = video_at(&host, "c", "2022-06-01T00:00:00Z");
    let d = video_at(&host, "d", "2021-01-01T00:00:00Z");
    video_at(&host, "nobodys", "2021-01-01T00:00:00Z");
    host.link_model(&a, &me);
    host.link_model(&b, &me);
    host.link_model(&b, &peer);
    host.link_model(&c, &me);
    host.link_model(&d, &peer);

    // a: 3 plays over two UTC days (+02:00 is still March 1st in UTC).
    play_record(&host, &a, "2024-03-01T10:00:00Z", 10.0, true);
    play_record(&host, &a, "2024-03-01T23:59:59Z", 20.0, false);
    play_record(&host, &a, "2024-03-02T01:00:00+02:00", 32.0, true);
    like_record(&host, &a, &fans[0], "2024-03-01T12:00:00Z");
    like_record(&host, &a, &fans[1], "2024-03-03T00:00:00Z");
    // b: mean 2.5 rounds half up like Math.round.
    play_record(&host, &b, "2024-03-02T00:00:00Z", 2.0, true);
    play_record(&host, &b, "2024-03-02T12:00:00Z", 3.0, false);
    like_record(&host, &b, &fans[0], "2024-03-02T08:00:00Z");
    // d: another model's only; never counted for the caller.
    play_record(&host, &d, "2024-03-05T00:00:00Z", 100.0, true);
    like_record(&host, &d, &fans[2], "2024-03-05T00:00:00Z");
    host.admin_patch("videos", &a, &json!({"likes_count": 7, "plays_count": 4}));
    host.admin_patch("videos", &b, &json!({"likes_count": 1, "plays_count": 3}));
    host.admin_patch("videos", &d, &json!({"likes_count": 50, "plays_count": 50}));

    let got = analytics(&host, "me");
    assert_eq!(
        keys_of(&got),
        BTreeSet::from([
            "total_videos",
            "total_likes",
            "total_plays",
            "plays_by_date",
            "likes_by_date",
            "videos"
        ]),
        "{got}"
    );
    assert_eq!(got["total_videos"], 3, "{got}");
    assert_eq!(got["total_likes"], 8, "{got}");
    assert_eq!(got["total_plays"], 7, "{got}");
    assert_eq!(
        got["plays_by_date"],
        json!({"2024-03-01": 3, "2024-03-02": 2}),
        "{got}"
    );
    assert_eq!(
        got["likes_by_date"],
        json!({"2024-03-01": 1, "2024-03-02": 1, "2024-03-03": 1}),
        "{got}"
    );

    let videos = got["videos"].as_array().cloned().unwrap_or_default();
    let order: Vec<&str> = videos
        .iter()
        .map(|v| v["slug"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(order, ["b", "c", "a"], "upload_date descending: {got}");
    let per_video = |id: &str| {
        let s = host.admin_item("videos", id);
        (s["title"].clone(), s["upload_date"].clone())
    };
    let (ta, ua) = per_video(&a);
    let (tc, uc) = per_video(&c);
    assert_eq!(
        videos[2],
        json!({"id": a, "title": ta, "slug": "a", "upload_date": ua, "likes": 7, "plays": 4,
               "completed_plays": 2, "completion_rate": 50, "avg_watch_time": 21}),
        "a: 62/3 rounds to 21; 2/4*100 is the integer 50"
    );
    assert_eq!(
        videos[1],
        json!({"id": c, "title": tc, "slug": "c", "upload_date": uc, "likes": 0, "plays": 0,
               "completed_plays": 0, "completion_rate": 0, "avg_watch_time": 0}),
        "c: no plays"
    );
    let vb = &videos[0];
    assert_eq!(vb["id"], json!(b), "{vb}");
    assert_eq!(
        (vb["likes"].clone(), vb["plays"].clone()),
        (json!(1), json!(3)),
        "{vb}"
    );
    assert_eq!(vb["completed_plays"], 1, "{vb}");
    assert_eq!(vb["avg_watch_time"], 3, "Math.round(2.5) is 3: {vb}");
    let rate = vb["completion_rate"].as_f64().unwrap_or(-1.0);
    assert!((rate - 1.0 / 3.0 * 100.0).abs() < 1e-9, "1/3*100: {vb}");
}

/// The caller's analytics against the same figures computed from the
/// records (the harness's `analytics::expected`).
fn assert_analytics_follow_records(host: &Host, token: &str, user: &str, after: &str) {
    let got = analytics::keyed(&analytics(host, token));
    let want = analytics::expected(host, user);
    assert_eq!(got, want, "after {after}");
}

/// The sums analytics read are kept per video and day, and per creator and
/// day, from the first read on; every later write of a play or a like,
/// through `/svc` or the items API, of any field, moves them; a link of a
/// video to a creator made, moved or removed, or a write of the sums
/// themselves, makes them counted again; a video deleted takes its sums
/// along.
#[test]
fn analytics_follow_every_write_once_their_sums_are_kept() {
    let host = Host::in_process_svc();
    let me = host.user(Some("Model"), "me");
    let fans = host.users(Some("Viewer"), &["f1".into(), "f2".into()]);
    let a = video_at(&host, "a", "2020-01-01T00:00:00Z");
    let b = video_at(&host, "b", "2021-01-01T00:00:00Z");
    host.link_model(&a, &me);
    host.link_model(&b, &me);
    play_record(&host, &a, "2024-03-01T10:00:00Z", 10.0, true);
    play_record(&host, &a, "2024-03-02T10:00:00Z", 21.0, false);
    like_record(&host, &a, &fans[0], "2024-03-01T12:00:00Z");
    // The first read counts the sums.
    assert_analytics_follow_records(&host, "me", &me, "the first read");
    assert_eq!(
        host.admin_count("video_days", Some(&json!({"day": {"_null": true}}))),
        2,
        "a header per video once kept"
    );

    // Creates through the items API: a new day, an undated play, no
    // duration.
    play_record(&host, &b, "2024-03-05T00:00:00Z", 7.0, true);
    host.admin_create(
        "video_plays",
        &json!({"video_id": a, "date_created": null, "duration_watched": 3, "completed": true}),
    );
    host.admin_create(
        "video_plays",
        &json!({"video_id": a, "date_created": "2024-03-01T11:00:00Z",
                "duration_watched": null}),
    );
    assert_analytics_follow_records(&host, "me", &me, "creates through the items API");

    // Updates of every field a sum reads, and a move to another video.
    let plays_of_a = host.admin_find("video_plays", &json!({"video_id": {"_eq": a}}));
    let first = plays_of_a[0]["id"].as_str().unwrap_or_default().to_string();
    let second = plays_of_a[1]["id"].as_str().unwrap_or_default().to_string();
    host.admin_patch(
        "video_plays",
        &first,
        &json!({"duration_watched": 40, "completed": false}),
    );
    host.admin_patch(
        "video_plays",
        &second,
        &json!({"date_created": "2024-04-01T00:00:00Z"}),
    );
    assert_analytics_follow_records(&host, "me", &me, "updates of duration, completion and day");
    host.admin_patch("video_plays", &second, &json!({"video_id": b}));
    assert_analytics_follow_records(&host, "me", &me, "a play moved to another video");

    // Through /svc: a like, a play and its update, an unlike.
    ok(&like(&host, &b, Some("f2")), "like");
    let p = new_play(&host, &b);
    ok(
        &patch_play(
            &host,
            &b,
            &p,
            &json!({"duration_watched": 30, "completed": true}),
        ),
        "patch",
    );
    assert_analytics_follow_records(&host, "me", &me, "a like and a play through /svc");
    ok(&unlike(&host, &b, Some("f2")), "unlike");
    host.admin_delete("video_plays", &first);
    assert_analytics_follow_records(&host, "me", &me, "an unlike and a play deleted");

    // A fan deleted: their likes go, their plays stay without a player.
    host.admin_delete("platform_users", &fans[0]);
    assert_analytics_follow_records(&host, "me", &me, "a fan deleted");

    // Someone else writes the sums: they are counted again.
    let row = host.admin_find(
        "video_days",
        &json!({"_and": [{"video_id": {"_eq": b}}, {"day": {"_nnull": true}}]}),
    );
    let row = row[0]["id"].as_str().unwrap_or_default().to_string();
    host.admin_patch("video_days", &row, &json!({"plays": 999}));
    // A play of that video before the next read: no longer followed per
    // video, so not per creator either.
    play_record(&host, &b, "2024-03-07T00:00:00Z", 2.0, false);
    assert_analytics_follow_records(&host, "me", &me, "a row of the sums written by hand");
    // Nobody else's word makes a video's sums complete.
    host.admin_create(
        "video_days",
        &json!({"video_id": a, "day": null, "complete": true, "plays": 999, "completed": 999}),
    );
    let claimed = host.admin_count(
        "video_days",
        Some(&json!({"_and": [{"video_id": {"_eq": a}}, {"complete": {"_eq": true}}]})),
    );
    assert_eq!(claimed, 0, "a header written by hand is not complete");
    assert_analytics_follow_records(&host, "me", &me, "a header written by hand");

    // The caller's videos change: a video linked with its history, a second
    // creator sharing a video, a link moved and one removed; each
    // creator's days follow, and so do later plays of shared videos.
    let other = host.user(Some("Model"), "other");
    let c = video_at(&host, "c", "2022-01-01T00:00:00Z");
    play_record(&host, &c, "2024-03-01T09:00:00Z", 5.0, true);
    host.link_model(&c, &me);
    assert_analytics_follow_records(&host, "me", &me, "a video with plays linked");
    host.link_model(&a, &other);
    assert_analytics_follow_records(&host, "other", &other, "a second creator's first read");
    play_record(&host, &a, "2024-03-01T08:00:00Z", 9.0, false);
    like_record(&host, &a, &fans[1], "2024-03-09T08:00:00Z");
    assert_analytics_follow_records(&host, "me", &me, "a play of a shared video");
    assert_analytics_follow_records(&host, "other", &other, "a play of a shared video");
    let link_of = |video: &str, user: &str| {
        let found = host.admin_find(
            "videos_models",
            &json!({"_and": [{"videos_id": {"_eq": video}}, {"platform_users_id": {"_eq": user}}]}),
        );
        // A link's key is a number or a string, as the schema says.
        found[0]["id"].to_string().trim_matches('"').to_string()
    };
    host.admin_patch(
        "videos_models",
        &link_of(&c, &me),
        &json!({"platform_users_id": other}),
    );
    assert_analytics_follow_records(&host, "me", &me, "a link moved away");
    assert_analytics_follow_records(&host, "other", &other, "a link moved in");
    host.admin_delete("videos_models", &link_of(&a, &other));
    play_record(&host, &a, "2024-03-01T07:00:00Z", 1.0, true);
    assert_analytics_follow_records(&host, "other", &other, "a link removed");
    assert_analytics_follow_records(&host, "me", &me, "a play after a link removed");
    // Someone else writes a creator's days: they are counted again, and a
    // header written by hand is not complete.
    let day = host.admin_find(
        "creator_days",
        &json!({"_and": [{"user_id": {"_eq": me}}, {"day": {"_nnull": true}}]}),
    );
    let day = day[0]["id"].as_str().unwrap_or_default().to_string();
    host.admin_patch("creator_days", &day, &json!({"plays": 999}));
    assert_analytics_follow_records(&host, "me", &me, "a creator's day written by hand");
    let mine = json!({"_and": [{"user_id": {"_eq": me}}, {"day": {"_null": true}}]});
    for header in host.admin_find("creator_days", &mine) {
        host.admin_delete("creator_days", header["id"].as_str().unwrap_or_default());
    }
    host.admin_create(
        "creator_days",
        &json!({"user_id": me, "day": null, "complete": true}),
    );
    let claimed = host.admin_count(
        "creator_days",
        Some(&json!({"_and": [{"user_id": {"_eq": me}}, {"complete": {"_eq": true}}]})),
    );
    assert_eq!(
        claimed, 0,
        "a creator's header written by hand is not complete"
    );
    assert_analytics_follow_records(&host, "me", &me, "a creator's header written by hand");

    // A video deleted takes its sums along.
    host.admin_delete("videos", &b);
    assert_eq!(
        host.admin_count("video_days", Some(&json!({"video_id": {"_eq": b}}))),
        0
    );
    assert_analytics_follow_records(&host, "me", &me, "a video deleted");
}

/// The rows a request made the database step over in full table scans,
/// where it counts them; its answer checked 2xx.
fn scanned_by(
    host: &Host,
    what: &'static str,
    request: impl FnOnce() -> Resp,
) -> (&'static str, Option<u64>) {
    let before = host.full_scan_rows();
    let r = request();
    assert!((200..300).contains(&r.status), "{what}: {}", r.body);
    let after = host.full_scan_rows();
    (what, before.zip(after).map(|(b, a)| a - b))
}

/// svc's reads of one item or one page, and its writes of one item (a
/// play or a like of a video shared by two creators whose sums are kept,
/// a recording's create, duplicate and archive), read through indexes: no
/// table is scanned, so their cost does not grow with the catalogue, the
/// audience or the days kept (where the database counts its scans). Left
/// out: the leaderboard's first pages, which walk its order's index from
/// the first entry as far as the page, and the achievement checks, which
/// read the achievements' few definitions whole.
#[test]
fn svc_reads_of_one_page_and_writes_of_one_item_scan_no_table() {
    let host = Host::in_process_svc();
    let one = host.user(Some("Model"), "one");
    let two = host.user(Some("Model"), "two");
    host.user(Some("Viewer"), "fan");
    host.user(Some("Viewer"), "other");
    let shared = video_at(&host, "shared", "2020-01-01T00:00:00Z");
    let own = video_at(&host, "own", "2020-01-01T00:00:00Z");
    host.link_model(&shared, &one);
    host.link_model(&shared, &two);
    host.link_model(&own, &two);
    for day in ["2024-03-01", "2024-03-02", "2024-03-03"] {
        play_record(&host, &shared, &format!("{day}T10:00:00Z"), 10.0, true);
        play_record(&host, &own, &format!("{day}T11:00:00Z"), 5.0, false);
    }
    assert_analytics_follow_records(&host, "one", &one, "the first read of one");
    assert_analytics_follow_records(&host, "two", &two, "the first read of two");

    let mut play_id = String::new();
    let scans = [
        scanned_by(&host, "a page of videos", || {
            host.get("/svc/videos?limit=50", None)
        }),
        scanned_by(&host, "one video", || host.get("/svc/videos/shared", None)),
        scanned_by(&host, "a model's videos", || {
            host.get(&format!("/svc/videos?model_id={two}"), None)
        }),
        scanned_by(&host, "a like's status", || {
            like_status(&host, &shared, Some("fan"))
        }),
        scanned_by(&host, "a like", || like(&host, &shared, Some("fan"))),
        scanned_by(&host, "a play", || {
            let r = play(&host, &shared, None, &json!({"session_id": "s"}));
            play_id = r.json()["play_id"].as_str().unwrap_or_default().to_string();
            r
        }),
        scanned_by(&host, "a play's update", || {
            patch_play(
                &host,
                &shared,
                &play_id,
                &json!({"duration_watched": 30, "completed": true}),
            )
        }),
        scanned_by(&host, "an unlike", || unlike(&host, &shared, Some("fan"))),
        scanned_by(&host, "analytics", || {
            host.get("/svc/analytics", Some("two"))
        }),
        scanned_by(&host, "the caller's recordings", || {
            host.get("/svc/recordings", Some("fan"))
        }),
    ];
    let mut recording = String::new();
    let created = scanned_by(&host, "a recording's create", || {
        let r = host.post("/svc/recordings", Some("fan"), &rec_body("Mine", None));
        recording = id_of(&r.json());
        r
    });
    let publish = json!({"status": "published", "public": true});
    let r = host.patch(
        &format!("/svc/recordings/{recording}"),
        Some("fan"),
        &publish,
    );
    assert_eq!(r.status, 200, "publish: {}", r.body);
    let recording_scans = [
        created,
        scanned_by(&host, "one recording", || {
            host.get(&format!("/svc/recordings/{recording}"), Some("fan"))
        }),
        scanned_by(&host, "a page of community recordings", || {
            host.get("/svc/community-recordings?limit=10", None)
        }),
        scanned_by(&host, "a duplicate", || {
            host.post(
                &format!("/svc/recordings/{recording}/duplicate"),
                Some("other"),
                &json!({}),
            )
        }),
        scanned_by(&host, "an archive", || {
            host.delete(&format!("/svc/recordings/{recording}"), Some("fan"))
        }),
    ];
    let scans = scans.into_iter().chain(recording_scans);
    for (what, scanned) in scans {
        if let Some(rows) = scanned {
            assert_eq!(rows, 0, "rows scanned by {what}");
        }
    }
    assert_analytics_follow_records(&host, "one", &one, "a play, a like and an unlike");
    assert_analytics_follow_records(&host, "two", &two, "a play, a like and an unlike");
}

/// A database of the release before 0023: each video's header summed its
/// undated records only, and no creator had days. Its first analytics
/// read counts them again, and plays from then on are followed.
#[test]
fn analytics_sums_of_an_earlier_release_are_counted_again() {
    let host = Host::in_process_svc();
    let me = host.user(Some("Model"), "me");
    let a = video_at(&host, "a", "2020-01-01T00:00:00Z");
    host.link_model(&a, &me);
    play_record(&host, &a, "2024-03-01T10:00:00Z", 10.0, true);
    play_record(&host, &a, "2024-03-02T10:00:00Z", 20.0, true);
    assert_analytics_follow_records(&host, "me", &me, "the first read");
    // As the earlier release left them: headers of undated records (none
    // here), said complete, and no days per creator.
    host.sql(
        "UPDATE video_days SET whole = false, plays = 0, completed = 0, watch_sum = 0, \
         watch_count = 0 WHERE day IS NULL; DELETE FROM creator_days",
    );
    assert_analytics_follow_records(&host, "me", &me, "the upgrade");
    play_record(&host, &a, "2024-03-03T10:00:00Z", 30.0, false);
    assert_analytics_follow_records(&host, "me", &me, "a play after the upgrade");
}

#[test]
fn analytics_integral_rates_are_json_integers() {
    let host = Host::in_process_svc();
    let me = host.users(Some("Model"), &["me".into()]).remove(0);
    let v = video(&host, "v");
    host.link_model(&v, &me);
    play_record(&host, &v, "2024-01-01T00:00:00Z", 4.0, true);
    play_record(&host, &v, "2024-01-01T00:00:01Z", 6.0, true);
    host.admin_patch("videos", &v, &json!({"plays_count": 2}));
    let r = host.get("/svc/analytics", Some("me"));
    let got = ok(&r, "analytics");
    assert_eq!(
        got["videos"][0]["completion_rate"],
        json!(100),
        "{}",
        r.body
    );
    assert!(got["videos"][0]["completion_rate"].is_u64(), "{}", r.body);
    assert_eq!(got["videos"][0]["avg_watch_time"], json!(5), "{}", r.body);
    assert!(r.body.contains("\"completion_rate\":100"), "{}", r.body);
    assert!(!r.body.contains("100.0"), "{}", r.body);
}

#[test]
fn analytics_completion_rate_is_zero_when_the_plays_counter_is_zero() {
    let host = Host::in_process_svc();
    let me = host.users(Some("Model"), &["me".into()]).remove(0);
    let v = video(&host, "v");
    host.link_model(&v, &me);
    play_record(&host, &v, "2024-01-01T00:00:00Z", 7.0, true);
    host.admin_patch("videos", &v, &json!({"plays_count": 0}));
    let got = analytics(&host, "me");
    let pv = &got["videos"][0];
    assert_eq!(pv["plays"], 0, "{got}");
    assert_eq!(pv["completed_plays"], 1, "{got}");
    assert_eq!(pv["completion_rate"], json!(0), "{got}");
    assert_eq!(pv["avg_watch_time"], json!(7), "{got}");
    assert_eq!(got["plays_by_date"], json!({"2024-01-01": 1}), "{got}");
    assert_eq!(got["likes_by_date"], json!({}), "{got}");
}

#[test]
fn analytics_reflect_likes_and_plays_made_through_the_endpoints() {
    let host = Host::in_process_svc();
    let me = host.users(Some("Model"), &["me".into()]).remove(0);
    host.users(Some("Viewer"), &["fan".into()]);
    let v = video(&host, "v");
    host.link_model(&v, &me);
    ok(&like(&host, &v, Some("fan")), "like");
    let p = new_play(&host, &v);
    ok(
        &patch_play(
            &host,
            &v,
            &p,
            &json!({"duration_watched": 30, "completed": true}),
        ),
        "patch",
    );
    new_play(&host, &v);
    let got = analytics(&host, "me");
    assert_eq!(got["total_videos"], 1, "{got}");
    assert_eq!(got["total_likes"], 1, "{got}");
    assert_eq!(got["total_plays"], 2, "{got}");
    let pv = &got["videos"][0];
    assert_eq!(pv["completed_plays"], 1, "{got}");
    assert_eq!(pv["completion_rate"], json!(50), "{got}");
    assert_eq!(pv["avg_watch_time"], json!(15), "{got}");
    let plays_total: u64 = got["plays_by_date"]
        .as_object()
        .map(|o| o.values().filter_map(Value::as_u64).sum())
        .unwrap_or(0);
    assert_eq!(plays_total, 2, "{got}");
    let day_ok = got["plays_by_date"]
        .as_object()
        .map(|o| {
            o.keys()
                .all(|k| k.len() == 10 && k.as_bytes()[4] == b'-' && k.as_bytes()[7] == b'-')
        })
        .unwrap_or(false);
    assert!(day_ok, "YYYY-MM-DD keys: {got}");
}

// ---------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------

/// 50 users like, unlike and like again in parallel, while 10 more each send
/// two racing likes: the counter ends equal to the records, one like per user.
#[test]
fn concurrent_likes_keep_the_counter_equal_to_the_records() {
    let host = Host::in_process_svc();
    let v = video(&host, "hot");
    let racers: Vec<String> = (0..50).map(|i| format!("racer-{i}")).collect();
    let doubles: Vec<String> = (0..10).map(|i| format!("double-{i}")).collect();
    let racer_ids = host.users(Some("Viewer"), &racers);
    let double_ids = host.users(Some("Viewer"), &doubles);
    let barrier = Barrier::new(racers.len() + 2 * doubles.len());

    let (racer_results, double_results) = std::thread::scope(|s| {
        let racer_handles: Vec<_> = racers
            .iter()
            .map(|t| {
                let (host, barrier, v) = (&host, &barrier, &v);
                s.spawn(move || {
                    barrier.wait();
                    vec![
                        like(host, v, Some(t)),
                        unlike(host, v, Some(t)),
                        like(host, v, Some(t)),
                    ]
                })
            })
            .collect();
        let double_handles: Vec<_> = doubles
            .iter()
            .flat_map(|t| [t, t])
            .map(|t| {
                let (host, barrier, v) = (&host, &barrier, &v);
                s.spawn(move || {
                    barrier.wait();
                    (t.clone(), like(host, v, Some(t)))
                })
            })
            .collect();
        let racer_results: Vec<Vec<Resp>> = racer_handles
            .into_iter()
            .map(|h| h.join().expect("racer thread"))
            .collect();
        let double_results: Vec<(String, Resp)> = double_handles
            .into_iter()
            .map(|h| h.join().expect("double thread"))
            .collect();
        (racer_results, double_results)
    });

    let total = (racers.len() + doubles.len()) as u64;
    let check_count = |r: &Resp| {
        let n = r.json()["likes_count"].as_i64();
        assert!(
            matches!(n, Some(n) if (0..=total as i64).contains(&n)),
            "likes_count out of range: {}",
            r.body
        );
    };
    for seq in &racer_results {
        for (r, liked) in seq.iter().zip([true, false, true]) {
            assert_eq!(r.status, 200, "{}", r.body);
            assert_eq!(r.json()["liked"], liked, "{}", r.body);
            check_count(r);
        }
    }
    let mut wins: BTreeMap<&str, usize> = BTreeMap::new();
    for (t, r) in &double_results {
        match r.status {
            200 => {
                assert_eq!(r.json()["liked"], true, "{}", r.body);
                check_count(r);
                *wins.entry(t.as_str()).or_default() += 1;
            }
            400 => assert_eq!(r.json(), json!({"error": "Already liked"}), "{}", r.body),
            s => panic!("double like of {t}: {s} {}", r.body),
        }
    }
    for t in &doubles {
        assert_eq!(
            wins.get(t.as_str()),
            Some(&1),
            "exactly one like of {t} wins: {wins:?}"
        );
    }

    let rows = host.admin_find("video_likes", &json!({"video_id": {"_eq": v}}));
    let mut per_user: BTreeMap<String, usize> = BTreeMap::new();
    for row in &rows {
        *per_user
            .entry(row["user_id"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    assert!(
        per_user.values().all(|&n| n == 1),
        "one like per user: {per_user:?}"
    );
    let expected_users: BTreeSet<String> = racer_ids.into_iter().chain(double_ids).collect();
    let got_users: BTreeSet<String> = per_user.keys().cloned().collect();
    assert_eq!(got_users, expected_users);
    assert_eq!(rows.len() as u64, total);
    let counter = host.admin_item("videos", &v)["likes_count"].clone();
    assert_eq!(counter, json!(total), "stored counter equals the records");
}

/// 200 parallel plays, half anonymous: every one is recorded, the counter
/// ends at 200 and each caller saw a different count; the analytics' kept
/// sums of that day count every one.
#[test]
fn concurrent_plays_are_all_counted() {
    let host = Host::in_process_svc();
    let v = video(&host, "popular");
    let owner = host.user(Some("Model"), "owner");
    host.link_model(&v, &owner);
    analytics(&host, "owner");
    let tokens: Vec<String> = (0..10).map(|i| format!("player-{i}")).collect();
    host.users(Some("Viewer"), &tokens);
    const N: usize = 200;
    let barrier = Barrier::new(N);
    let results: Vec<Resp> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..N)
            .map(|i| {
                let (host, barrier, v, tokens) = (&host, &barrier, &v, &tokens);
                s.spawn(move || {
                    let token = (i % 2 == 1).then(|| tokens[i % tokens.len()].as_str());
                    barrier.wait();
                    play(
                        host,
                        v,
                        token,
                        &json!({"session_id": format!("session-{i}")}),
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("play thread"))
            .collect()
    });
    let mut counts = Vec::new();
    let mut play_ids = BTreeSet::new();
    for r in &results {
        let body = ok(r, "concurrent play");
        assert_eq!(body["success"], true, "{body}");
        counts.push(
            body["plays_count"]
                .as_u64()
                .unwrap_or_else(|| panic!("{body}")),
        );
        play_ids.insert(
            body["play_id"]
                .as_str()
                .unwrap_or_else(|| panic!("{body}"))
                .to_string(),
        );
    }
    counts.sort_unstable();
    assert_eq!(
        counts,
        (1..=N as u64).collect::<Vec<_>>(),
        "distinct counts 1..=200"
    );
    assert_eq!(play_ids.len(), N, "distinct play ids");
    assert_eq!(host.admin_item("videos", &v)["plays_count"], json!(N));
    assert_eq!(plays_of(&host, &v), N as u64);
    let anonymous = host.admin_count(
        "video_plays",
        Some(&json!({"video_id": {"_eq": v}, "user_id": {"_null": true}})),
    );
    assert_eq!(anonymous, (N / 2) as u64);
    assert_analytics_follow_records(&host, "owner", &owner, "200 concurrent plays");
}

// ---------------------------------------------------------------------------
// The counters follow every write, whatever path made it (docs/decisions.md §7)
// ---------------------------------------------------------------------------

fn likes_count(host: &Host, video: &str) -> u64 {
    host.admin_item("videos", video)["likes_count"]
        .as_u64()
        .unwrap_or_else(|| panic!("likes_count of {video}"))
}

fn plays_count(host: &Host, video: &str) -> u64 {
    host.admin_item("videos", video)["plays_count"]
        .as_u64()
        .unwrap_or_else(|| panic!("plays_count of {video}"))
}

#[test]
fn likes_written_through_the_items_api_move_likes_count() {
    let host = Host::in_process_svc();
    let v = video(&host, "items-likes");
    let w = video(&host, "items-likes-other");
    let tokens: Vec<String> = ["il-a", "il-b", "il-c"].map(String::from).to_vec();
    let fans = host.users(Some("Viewer"), &tokens);
    let model = host.users(Some("Model"), &["il-model".to_string()]);
    host.link_model(&v, &model[0]);
    host.link_model(&w, &model[0]);

    // A member likes through /svc and deletes the like through /items,
    // again and again: the counter never keeps a like that is gone.
    for _ in 0..3 {
        ok(&like(&host, &v, Some("il-a")), "like");
        let mine = host.admin_find("video_likes", &json!({"user_id": {"_eq": fans[0]}}));
        assert_eq!(mine.len(), 1, "{mine:?}");
        let r = host.delete(
            &format!("/items/video_likes/{}", id_of(&mine[0])),
            Some("il-a"),
        );
        assert_eq!(r.status, 204, "{}", r.body);
        assert_eq!(likes_count(&host, &v), 0);
    }

    // A member's like created through /items counts, and /svc answers the
    // counter that includes it.
    let r = host.post(
        "/items/video_likes",
        Some("il-b"),
        &json!({"video_id": v, "user_id": fans[1]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(likes_count(&host, &v), 1);
    let answer = ok(&like(&host, &v, Some("il-a")), "like");
    assert_eq!(answer["likes_count"], 2, "{answer}");

    // As admin: created, moved to another video, deleted.
    let admin_like =
        id_of(&host.admin_create("video_likes", &json!({"video_id": v, "user_id": fans[2]})));
    assert_eq!((likes_count(&host, &v), likes_count(&host, &w)), (3, 0));
    host.admin_patch("video_likes", &admin_like, &json!({"video_id": w}));
    assert_eq!((likes_count(&host, &v), likes_count(&host, &w)), (2, 1));
    let r = host.delete(
        &format!("/items/video_likes/{admin_like}"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!((likes_count(&host, &v), likes_count(&host, &w)), (2, 0));

    // Every counter equals its records, and the creator's totals their sum.
    for video in [&v, &w] {
        assert_eq!(likes_count(&host, video), likes_of(&host, video));
    }
    let totals = analytics(&host, "il-model");
    assert_eq!(totals["total_likes"], 2, "{totals}");
}

#[test]
fn plays_written_through_the_items_api_move_plays_count_never_below_zero() {
    let host = Host::in_process_svc();
    let v = video(&host, "items-plays");
    let w = video(&host, "items-plays-other");
    ok(&play(&host, &v, None, &json!({})), "play");
    let imported = id_of(&host.admin_create(
        "video_plays",
        &json!({"video_id": v, "duration_watched": 12, "completed": true}),
    ));
    assert_eq!(plays_count(&host, &v), 2);
    let answer = ok(&play(&host, &v, None, &json!({})), "play");
    assert_eq!(answer["plays_count"], 3, "{answer}");
    host.admin_patch("video_plays", &imported, &json!({"video_id": w}));
    assert_eq!((plays_count(&host, &v), plays_count(&host, &w)), (2, 1));
    // A counter set by hand below its records is never taken below 0.
    host.admin_patch("videos", &w, &json!({"plays_count": 0}));
    let r = host.delete(&format!("/items/video_plays/{imported}"), Some(ADMIN_TOKEN));
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(plays_count(&host, &w), 0);
    assert_eq!(plays_count(&host, &v), plays_of(&host, &v));
    // A play naming no video is refused: a reference names an existing
    // item.
    let r = host.post(
        "/items/video_plays",
        Some(ADMIN_TOKEN),
        &json!({"video_id": MISSING}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
}
