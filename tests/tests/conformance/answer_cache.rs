//! The answers the svc extension's public routes keep (see docs/operations.md, "Answer
//! cache"): never served once the data they were computed from changed,
//! whoever changed it, nor once a scheduled item's date has passed.

use std::time::Duration;

use platform_tests::time::{iso, now_ms};
use platform_tests::{Host, HostOptions};
use serde_json::json;

fn slugs(host: &Host) -> Vec<String> {
    let r = host.get("/svc/videos", None);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
        .as_array()
        .unwrap_or_else(|| panic!("videos: {}", r.body))
        .iter()
        .filter_map(|v| v["slug"].as_str().map(String::from))
        .collect()
}

fn extension_calls(host: &Host) -> u64 {
    host.metric("extension_calls")
}

fn items_calls(host: &Host) -> u64 {
    host.metric("items_calls")
}

#[test]
fn a_kept_answer_reads_nothing_and_a_write_through_the_api_replaces_it() {
    let host = Host::in_process_svc();
    host.admin_video("first", Some(&iso(now_ms() - 60_000)));
    assert_eq!(slugs(&host), ["first"]);
    let before = items_calls(&host);
    for _ in 0..5 {
        assert_eq!(slugs(&host), ["first"]);
    }
    assert_eq!(
        items_calls(&host),
        before,
        "answers kept for anonymous callers read no items"
    );
    assert!(extension_calls(&host) >= 6, "the extension still answers");

    host.admin_video("second", Some(&iso(now_ms() - 30_000)));
    assert_eq!(slugs(&host), ["second", "first"]);

    // A like changes the counts in the answer.
    let r = host.get("/svc/videos/first", None);
    assert_eq!(r.json()["likes_count"], 0, "{}", r.body);
    let id = r.json()["id"].as_str().map(String::from).expect("id");
    let viewer = host.user(Some("Viewer"), "viewer-token");
    let liked = host.post(
        &format!("/svc/videos/{id}/like"),
        Some("viewer-token"),
        &json!({}),
    );
    assert_eq!(liked.status, 200, "{viewer}: {}", liked.body);
    let r = host.get("/svc/videos/first", None);
    assert_eq!(r.json()["likes_count"], 1, "{}", r.body);
}

#[test]
fn signed_in_callers_share_the_kept_public_answers() {
    let host = Host::in_process_svc();
    host.admin_video("first", Some(&iso(now_ms() - 60_000)));
    host.user(Some("Viewer"), "viewer-token");
    let signed_in = |path: &str| {
        let r = host.get(path, Some("viewer-token"));
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        r.body
    };
    let anonymous = host.get("/svc/videos", None).body;
    let before = items_calls(&host);
    for path in ["/svc/videos", "/svc/videos", "/svc/videos/first"] {
        let _ = signed_in(path);
    }
    assert_eq!(signed_in("/svc/videos"), anonymous);
    let after_one_computation = items_calls(&host);
    assert!(
        after_one_computation > before,
        "/svc/videos/first computed once"
    );
    for path in ["/svc/videos", "/svc/videos/first", "/svc/videos/first"] {
        let _ = signed_in(path);
    }
    assert_eq!(
        items_calls(&host),
        after_one_computation,
        "kept answers served to a signed-in caller read no items"
    );
    // A bad token is still refused before the route.
    assert_eq!(host.get("/svc/videos", Some("no-such-token")).status, 401);
    // A write replaces the answer for everyone.
    host.admin_video("second", Some(&iso(now_ms() - 30_000)));
    let body = signed_in("/svc/videos");
    assert!(body.contains("\"second\""), "{body}");
}

#[test]
fn a_write_by_another_process_replaces_kept_answers() {
    let host = Host::in_process_svc();
    host.admin_video("clip", Some(&iso(now_ms() - 60_000)));
    assert_eq!(
        host.get("/svc/videos/clip", None).json()["title"],
        "Title clip"
    );

    let changed = host.sql("UPDATE \"videos\" SET \"title\" = 'Renamed' WHERE \"slug\" = 'clip'");
    assert_eq!(changed, 1);

    assert_eq!(
        host.get("/svc/videos/clip", None).json()["title"],
        "Renamed"
    );
}

#[test]
fn a_scheduled_video_appears_when_its_date_passes() {
    let host = Host::in_process_svc();
    host.admin_video("now", Some(&iso(now_ms() - 60_000)));
    let due = now_ms() + 1_500;
    host.admin_video("scheduled", Some(&iso(due)));
    assert_eq!(slugs(&host), ["now"]);
    assert_eq!(host.get("/svc/videos/scheduled", None).status, 404);
    // Served from the cache while the date is ahead…
    assert_eq!(slugs(&host), ["now"]);
    // …and not after.
    let wait = (due - now_ms()).max(0) as u64 + 100;
    std::thread::sleep(Duration::from_millis(wait));
    assert_eq!(slugs(&host), ["scheduled", "now"]);
    assert_eq!(host.get("/svc/videos/scheduled", None).status, 200);
}

#[test]
fn the_cache_can_be_switched_off() {
    let host = Host::start(HostOptions::svc().arg("--cache").arg("false"));
    host.admin_video("first", Some(&iso(now_ms() - 60_000)));
    assert_eq!(slugs(&host), ["first"]);
    let before = items_calls(&host);
    assert_eq!(slugs(&host), ["first"]);
    assert!(
        items_calls(&host) > before,
        "every answer is computed afresh"
    );
}
