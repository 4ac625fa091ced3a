//! The recording endpoints of the svc extension, read straight from
//! docs/service-api.md ("Recording", "Recording status", "Recordings",
//! "Authentication", "Errors", "Limits") and docs/decisions.md (§3, §5, §6,
//! §7): listing, reading, creating, updating, archiving, duplicating, community
//! listing and plays.

use platform_tests::time::{now_ms, ts_ms};
use std::collections::BTreeSet;
use std::time::Duration;

use platform_tests::{
    assert_error, assert_error_for, encode, id_of, keys_of, Host, HostOptions, Resp, ADMIN_TOKEN,
};
use serde_json::{json, Value};

const MISSING: &str = "Missing required fields: title, duration, events, device_info";
const EVENTS: &str = "Events must be a non-empty array";

// ---------------------------------------------------------------- helpers

fn event(i: usize) -> Value {
    json!({"actuatorIndex": 0, "actuatorType": "Vibrate", "deviceIndex": 0,
           "deviceName": "D", "timestamp": i * 100, "value": (i * 37 % 100) as f64})
}

fn device_info() -> Value {
    json!([{"name": "D", "index": 0, "capabilities": ["Vibrate"]}])
}

/// A valid create body.
fn body(title: &str) -> Value {
    json!({
        "title": title, "duration": 1500.5, "device_info": device_info(),
        "events": [event(0), event(1), event(2)],
    })
}

fn err(r: &Resp) -> Value {
    r.json()["error"].clone()
}

/// POST /svc/recordings, expecting 201; the created recording.
fn create(host: &Host, token: &str, body: &Value) -> Value {
    let r = host.post("/svc/recordings", Some(token), body);
    assert_eq!(r.status, 201, "create: {}", r.body);
    let v = r.json();
    assert!(v["id"].is_string(), "no id in {v}");
    v
}

fn recordings_count(host: &Host) -> u64 {
    host.admin_count("recordings", None)
}

/// POST /svc/recordings of `b` as `token` must be refused: 400 and exactly
/// `{"error": error}`.
fn assert_create_refused(host: &Host, token: &str, b: &Value, error: &str) {
    let r = host.post("/svc/recordings", Some(token), b);
    assert_error_for(&b.to_string(), &r, 400, error);
}

/// Sends `raw` as the body of `method path`; the answer, and the body as
/// text to name the case in a failure.
fn send_raw(host: &Host, method: &str, path: &str, token: &str, raw: &[u8]) -> (Resp, String) {
    let r = host.request(method, path, Some(token), Some(raw));
    let case = format!("{method} {path} {:?}", String::from_utf8_lossy(raw));
    (r, case)
}

/// Each of `raws` sent as the body of `method path` gets 400
/// `{"error": "Invalid JSON body"}`.
fn assert_invalid_json(host: &Host, method: &str, path: &str, token: &str, raws: &[&[u8]]) {
    for raw in raws {
        let (r, case) = send_raw(host, method, path, token, raw);
        assert_error_for(&case, &r, 400, "Invalid JSON body");
    }
}

/// `got` has the same value as `want` in each of `keys`.
fn assert_same_fields(got: &Value, want: &Value, keys: &[&str], what: &str) {
    for k in keys {
        assert_eq!(got[k], want[k], "{what}: {k}");
    }
}

/// An answer of `status` whose content type is JSON; its body.
fn json_answer(r: &Resp, status: u16) -> Value {
    assert_eq!(r.status, status, "{}", r.body);
    assert!(
        r.content_type.starts_with("application/json"),
        "{}",
        r.content_type
    );
    r.json()
}

/// The owner (`token`) sets the `public` flag of recording `id`.
fn set_public(host: &Host, token: &str, id: &str, public: bool) {
    let r = host.patch(
        &format!("/svc/recordings/{id}"),
        Some(token),
        &json!({ "public": public }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Creates recordings as admin (explicit owner, dates, status...) in one
/// request; returns them.
fn admin_recordings(host: &Host, items: Vec<Value>) -> Vec<Value> {
    host.admin_create_many("recordings", &items)
}

/// An admin-created recording body with explicit owner and date.
fn owned(title: &str, owner: &str, date: &str) -> Value {
    let mut b = body(title);
    b["user_created"] = json!(owner);
    b["date_created"] = json!(date);
    b["slug"] = json!(title.to_lowercase());
    b
}

/// The minute `i` of 2025-01-01, as an RFC 3339 timestamp.
fn minute(i: usize) -> String {
    format!("2025-01-01T{:02}:{:02}:00.000Z", i / 60, i % 60)
}

fn titles(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|r| r["title"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn list(host: &Host, token: &str, query: &str) -> Value {
    let r = host.get(&format!("/svc/recordings{query}"), Some(token));
    assert_eq!(r.status, 200, "{query}: {}", r.body);
    let v = r.json();
    assert!(v.is_array(), "GET /recordings must be a JSON array: {v}");
    v
}

fn community(host: &Host, query: &str) -> Value {
    let r = host.get(&format!("/svc/community-recordings{query}"), None);
    assert_eq!(r.status, 200, "{query}: {}", r.body);
    let v = r.json();
    assert!(v["data"].is_array(), "{v}");
    v["data"].clone()
}

/// 55 recordings of `owner`, titled rec-00 (oldest) .. rec-54 (newest),
/// inserted in an order that is neither date order nor its reverse.
fn fifty_five(host: &Host, owner: &str) {
    let items = (0..55)
        .map(|k| (k * 17) % 55)
        .map(|i| owned(&format!("rec-{i:02}"), owner, &minute(i)))
        .collect();
    admin_recordings(host, items);
}

fn newest_first(range: std::ops::Range<usize>) -> Vec<String> {
    range.rev().map(|i| format!("rec-{i:02}")).collect()
}

// ---------------------------------------------------------------- GET /recordings

#[test]
fn list_requires_authentication() {
    let host = Host::in_process_svc();
    assert_error(&host.get("/svc/recordings", None), 401, "Unauthorized");
}

#[test]
fn invalid_or_inactive_tokens_get_401_invalid_token() {
    let host = Host::in_process_svc();
    let uid = host.user(Some("Viewer"), "soon-suspended");
    for path in ["/svc/recordings", "/svc/community-recordings"] {
        let r = host.get(path, Some("no-such-token"));
        assert_error_for(path, &r, 401, "Invalid token");
    }
    // The access_token query parameter authenticates too.
    let r = host.get("/svc/recordings?access_token=soon-suspended", None);
    assert_eq!(r.status, 200, "{}", r.body);
    let r = host.patch(
        &format!("/items/platform_users/{uid}"),
        Some(ADMIN_TOKEN),
        &json!({"status": "suspended"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = host.get("/svc/recordings", Some("soon-suspended"));
    assert_error(&r, 401, "Invalid token");
}

#[test]
fn list_returns_only_the_callers_own_recordings() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "alice");
    host.user(Some("Model"), "bob");
    create(&host, "alice", &body("alice one"));
    create(&host, "alice", &body("alice two"));
    let mut shared = body("bob public");
    shared["status"] = json!("published");
    let bob_rec = create(&host, "bob", &shared);
    // Bob's recording is published and public: still not in Alice's list.
    set_public(&host, "bob", &id_of(&bob_rec), true);
    admin_recordings(&host, vec![body("admin's own")]);

    let mine = list(&host, "alice", "");
    let mut t = titles(&mine);
    t.sort();
    assert_eq!(t, vec!["alice one", "alice two"]);
    assert_eq!(titles(&list(&host, "bob", "")), vec!["bob public"]);
    for r in mine.as_array().expect("array") {
        assert_eq!(r["user_created"], mine[0]["user_created"]);
    }
}

#[test]
fn list_is_sorted_by_date_created_descending() {
    let host = Host::in_process_svc();
    let uid = host.user(Some("Viewer"), "sorter");
    admin_recordings(
        &host,
        vec![
            owned("middle", &uid, "2025-06-01T00:00:00.000Z"),
            owned("oldest", &uid, "2024-01-01T00:00:00.000Z"),
            owned("newest", &uid, "2026-01-01T00:00:00.000Z"),
            owned("late-2025", &uid, "2025-12-31T23:59:59.999Z"),
        ],
    );
    assert_eq!(
        titles(&list(&host, "sorter", "")),
        vec!["newest", "late-2025", "middle", "oldest"]
    );
}

#[test]
fn list_limit_defaults_to_50_and_page_to_1() {
    let host = Host::in_process_svc();
    let uid = host.user(Some("Viewer"), "pager");
    fifty_five(&host, &uid);
    assert_eq!(titles(&list(&host, "pager", "")), newest_first(5..55));
    assert_eq!(
        titles(&list(&host, "pager", "?page=1")),
        newest_first(5..55)
    );
    assert_eq!(titles(&list(&host, "pager", "?page=2")), newest_first(0..5));
    assert_eq!(
        titles(&list(&host, "pager", "?page=3")),
        Vec::<String>::new()
    );
}

#[test]
fn list_limit_and_page_select_a_window_without_cap() {
    let host = Host::in_process_svc();
    let uid = host.user(Some("Viewer"), "pager");
    fifty_five(&host, &uid);
    assert_eq!(
        titles(&list(&host, "pager", "?limit=1000")),
        newest_first(0..55)
    );
    assert_eq!(
        titles(&list(&host, "pager", "?limit=10&page=3")),
        newest_first(25..35)
    );
    assert_eq!(
        titles(&list(&host, "pager", "?limit=20&page=3")),
        newest_first(0..15)
    );
    assert_eq!(titles(&list(&host, "pager", "?limit=1")), vec!["rec-54"]);
}

#[test]
fn list_invalid_limit_and_page_fall_back_to_defaults() {
    let host = Host::in_process_svc();
    let uid = host.user(Some("Viewer"), "pager");
    fifty_five(&host, &uid);
    for q in [
        "?limit=abc",
        "?limit=-5",
        "?limit=0",
        "?limit=",
        "?limit=2.5",
    ] {
        assert_eq!(
            titles(&list(&host, "pager", q)),
            newest_first(5..55),
            "{q} must give the default limit 50"
        );
    }
    for q in ["?page=0", "?page=-1", "?page=abc", "?page="] {
        assert_eq!(
            titles(&list(&host, "pager", &format!("{q}&limit=10"))),
            newest_first(45..55),
            "{q} must give page 1"
        );
    }
}

#[test]
fn list_filters_by_exact_status() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "st");
    for (title, status) in [("d", "draft"), ("p", "published"), ("a", "archived")] {
        let mut b = body(title);
        b["status"] = json!(status);
        create(&host, "st", &b);
    }
    assert_eq!(titles(&list(&host, "st", "?status=published")), vec!["p"]);
    assert_eq!(titles(&list(&host, "st", "?status=draft")), vec!["d"]);
    assert_eq!(titles(&list(&host, "st", "?status=archived")), vec!["a"]);
    // Exact: no prefix, substring or case-insensitive matches.
    for q in ["?status=publish", "?status=Published", "?status=ublished"] {
        assert!(titles(&list(&host, "st", q)).is_empty(), "{q}");
    }
    // No filter: every status of the caller, archived included.
    let mut all = titles(&list(&host, "st", ""));
    all.sort();
    assert_eq!(all, vec!["a", "d", "p"]);
}

#[test]
fn list_tags_filter_matches_whole_elements_only() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "tagger");
    for (title, tags) in [
        ("exact", json!(["foo", "bar"])),
        ("superstring", json!(["foobar"])),
        ("substring", json!(["fo"])),
        ("last", json!(["x", "foo"])),
        ("none", json!([])),
        ("case", json!(["FOO"])),
    ] {
        let mut b = body(title);
        b["tags"] = tags;
        create(&host, "tagger", &b);
    }
    let mut t = titles(&list(&host, "tagger", "?tags=foo"));
    t.sort();
    assert_eq!(t, vec!["exact", "last"]);
    assert!(titles(&list(&host, "tagger", "?tags=oo")).is_empty());
    assert_eq!(
        titles(&list(&host, "tagger", "?tags=fo")),
        vec!["substring"]
    );
    assert_eq!(titles(&list(&host, "tagger", "?tags=bar")), vec!["exact"]);
    assert!(titles(&list(&host, "tagger", "?tags=nothing")).is_empty());
    // Combined with status (both apply).
    assert!(titles(&list(&host, "tagger", "?tags=foo&status=published")).is_empty());
    assert_eq!(
        titles(&list(&host, "tagger", "?tags=bar&status=draft")),
        vec!["exact"]
    );
}

#[test]
fn list_tags_filter_with_special_characters() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "tagger");
    for (title, tags) in [
        ("quoted", json!(["a\"b"])),
        ("percent", json!(["100%"])),
        ("spaced", json!(["slow wave"])),
        ("other", json!(["100"])),
    ] {
        let mut b = body(title);
        b["tags"] = tags;
        create(&host, "tagger", &b);
    }
    for (tag, want) in [
        ("a\"b", "quoted"),
        ("100%", "percent"),
        ("slow wave", "spaced"),
        ("100", "other"),
    ] {
        assert_eq!(
            titles(&list(&host, "tagger", &format!("?tags={}", encode(tag)))),
            vec![want],
            "tag {tag}"
        );
    }
    assert!(titles(&list(&host, "tagger", &format!("?tags={}", encode("%")))).is_empty());
}

#[test]
fn list_filters_by_linked_video() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "linker");
    let v1 = host.admin_create("videos", &json!({"slug": "v1", "title": "V1"}))["id"].clone();
    let v2 = host.admin_create("videos", &json!({"slug": "v2", "title": "V2"}))["id"].clone();
    for (title, video) in [("one", &v1), ("two", &v2), ("one-b", &v1)] {
        let mut b = body(title);
        b["linked_video"] = video.clone();
        create(&host, "linker", &b);
    }
    create(&host, "linker", &body("unlinked"));
    let q = format!("?linked_video={}", v1.as_str().expect("id"));
    let mut t = titles(&list(&host, "linker", &q));
    t.sort();
    assert_eq!(t, vec!["one", "one-b"]);
    let q = format!("?linked_video={}", v2.as_str().expect("id"));
    assert_eq!(titles(&list(&host, "linker", &q)), vec!["two"]);
    let q = "?linked_video=00000000-0000-4000-8000-000000000000";
    assert!(titles(&list(&host, "linker", q)).is_empty());
}

// ---------------------------------------------------------------- GET /recordings/:id

#[test]
fn owner_reads_own_private_recording() {
    let host = Host::in_process_svc();
    let uid = host.user(Some("Viewer"), "owner");
    let mut b = body("Mine");
    b["description"] = json!("private notes");
    b["tags"] = json!(["t1"]);
    let created = create(&host, "owner", &b);
    let id = id_of(&created);
    let r = host.get(&format!("/svc/recordings/{id}"), Some("owner"));
    let got = json_answer(&r, 200);
    assert_eq!(got["id"], json!(id));
    assert_eq!(got["title"], "Mine");
    assert_eq!(got["description"], "private notes");
    assert_eq!(got["public"], false);
    assert_eq!(got["user_created"], json!(uid));
    assert_eq!(got["events"], b["events"]);
    assert_eq!(got["device_info"], b["device_info"]);
    assert_eq!(got["tags"], json!(["t1"]));
    assert_eq!(got["duration"].as_f64(), Some(1500.5));
}

#[test]
fn another_user_gets_403_on_a_private_recording() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    host.user(Some("Viewer"), "other");
    // Published but private: still forbidden.
    let mut b = body("Private");
    b["status"] = json!("published");
    let id = id_of(&create(&host, "owner", &b));
    let r = host.get(&format!("/svc/recordings/{id}"), Some("other"));
    assert_error(&r, 403, "Forbidden");
    // The ownership check is endpoint logic: it applies to admins too.
    let r = host.get(&format!("/svc/recordings/{id}"), Some(ADMIN_TOKEN));
    assert_error(&r, 403, "Forbidden");
}

#[test]
fn another_user_reads_a_public_recording() {
    let host = Host::in_process_svc();
    host.user(Some("Model"), "owner");
    host.user(Some("Viewer"), "other");
    // public true is enough, whatever the status.
    let id = id_of(&create(&host, "owner", &body("Shared draft")));
    set_public(&host, "owner", &id, true);
    let r = host.get(&format!("/svc/recordings/{id}"), Some("other"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["title"], "Shared draft");
    assert_eq!(r.json()["public"], true);
    // Back to private: forbidden again.
    set_public(&host, "owner", &id, false);
    assert_eq!(
        host.get(&format!("/svc/recordings/{id}"), Some("other"))
            .status,
        403
    );
}

#[test]
fn single_read_requires_authentication() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    let id = id_of(&shared(&host, "owner", &body("Public one")));
    let r = host.get(&format!("/svc/recordings/{id}"), None);
    assert_error(&r, 401, "Unauthorized");
}

// ---------------------------------------------------------------- POST /recordings

#[test]
fn create_requires_authentication() {
    let host = Host::in_process_svc();
    let r = host.post("/svc/recordings", None, &body("anon"));
    assert_error(&r, 401, "Unauthorized");
    assert_eq!(recordings_count(&host), 0);
}

#[test]
fn create_missing_or_falsy_required_fields_give_400() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    for field in ["title", "duration", "events", "device_info"] {
        let mut absent = body("x");
        absent.as_object_mut().expect("object").remove(field);
        let mut cases = vec![absent];
        for falsy in [json!(null), json!(false), json!(0), json!(""), json!(0.0)] {
            let mut b = body("x");
            b[field] = falsy;
            cases.push(b);
        }
        for b in cases {
            assert_create_refused(&host, "creator", &b, MISSING);
        }
    }
    // All four missing at once; an empty object body.
    assert_create_refused(&host, "creator", &json!({}), MISSING);
    assert_eq!(recordings_count(&host), 0);
}

#[test]
fn create_missing_fields_are_checked_before_events_and_types() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    for b in [
        json!({"title": "x", "duration": 5, "events": [], "device_info": null}),
        json!({"title": 7, "duration": 0, "events": [event(0)], "device_info": {}}),
        json!({"title": "", "duration": "x", "events": "nope", "device_info": {}, "tags": 1}),
        json!({"duration": 5, "events": [event(0)], "device_info": {}, "status": "bogus"}),
    ] {
        assert_create_refused(&host, "creator", &b, MISSING);
    }
    assert_eq!(recordings_count(&host), 0);
}

#[test]
fn create_empty_array_and_object_count_as_present() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    for info in [
        json!([]),
        json!({}),
        json!({"name": "D", "index": 0, "capabilities": []}),
    ] {
        let mut b = body("present");
        b["device_info"] = info.clone();
        let created = create(&host, "creator", &b);
        assert_eq!(created["device_info"], info);
    }
    assert_eq!(recordings_count(&host), 3);
}

#[test]
fn create_events_must_be_a_non_empty_array() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    for events in [
        json!([]),
        json!({}),
        json!({"0": event(0)}),
        json!("events"),
        json!(5),
        json!(true),
    ] {
        let mut b = body("x");
        b["events"] = events;
        assert_create_refused(&host, "creator", &b, EVENTS);
    }
    // Checked before the type checks.
    let b = json!({"title": 5, "duration": "x", "events": [], "device_info": {}, "tags": "t"});
    assert_create_refused(&host, "creator", &b, EVENTS);
    assert_eq!(recordings_count(&host), 0);
}

#[test]
fn create_wrong_types_give_exact_messages_in_order() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    let with = |pairs: &[(&str, Value)]| {
        let mut b = body("x");
        for (k, v) in pairs {
            b[*k] = v.clone();
        }
        b
    };
    let cases = [
        (with(&[("title", json!(5))]), "title must be a string"),
        (with(&[("title", json!(true))]), "title must be a string"),
        (with(&[("title", json!(["a"]))]), "title must be a string"),
        (
            with(&[("title", json!({"a": 1}))]),
            "title must be a string",
        ),
        (
            with(&[("duration", json!("1000"))]),
            "duration must be a number",
        ),
        (
            with(&[("duration", json!(true))]),
            "duration must be a number",
        ),
        (
            with(&[("duration", json!([1]))]),
            "duration must be a number",
        ),
        (
            with(&[("duration", json!({}))]),
            "duration must be a number",
        ),
        (with(&[("tags", json!("a,b"))]), "tags must be an array"),
        (with(&[("tags", json!({"a": 1}))]), "tags must be an array"),
        (with(&[("tags", json!(3))]), "tags must be an array"),
        (with(&[("tags", json!(true))]), "tags must be an array"),
        // Order: title, then duration, then tags.
        (
            with(&[
                ("title", json!(1)),
                ("duration", json!("d")),
                ("tags", json!("t")),
            ]),
            "title must be a string",
        ),
        (
            with(&[("duration", json!("d")), ("tags", json!("t"))]),
            "duration must be a number",
        ),
    ];
    for (b, msg) in cases {
        assert_create_refused(&host, "creator", &b, msg);
    }
    assert_eq!(recordings_count(&host), 0);
}

#[test]
fn create_status_must_be_draft_published_or_archived() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    for status in [
        json!("Draft"),
        json!("deleted"),
        json!("public"),
        json!(5),
        json!(["draft"]),
        json!(" draft"),
    ] {
        let mut b = body("x");
        b["status"] = status;
        assert_create_refused(&host, "creator", &b, "Invalid status");
    }
    assert_eq!(recordings_count(&host), 0);
    for status in ["draft", "published", "archived"] {
        let mut b = body(status);
        b["status"] = json!(status);
        assert_eq!(create(&host, "creator", &b)["status"], status);
    }
    assert_eq!(recordings_count(&host), 3);
}

#[test]
fn create_invalid_json_or_utf8_gives_400() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    assert_invalid_json(
        &host,
        "POST",
        "/svc/recordings",
        "creator",
        &[
            b"{not json",
            b"{\"title\": \"x\",}",
            b"{\"title\": \"x\"",
            b"\xff\xfe\xfd",
            b"{\"title\": \"\xc3\x28\", \"duration\": 1, \"events\": [1], \"device_info\": {}}",
        ],
    );
    assert_eq!(recordings_count(&host), 0);
    host.assert_serving();
}

#[test]
fn create_returns_201_with_the_created_recording_and_defaults() {
    let host = Host::in_process_svc();
    let uid = host.user(Some("Viewer"), "creator");
    let before = now_ms();
    let b = body("My First Recording");
    let r = host.post("/svc/recordings", Some("creator"), &b);
    let after = now_ms();
    let c = json_answer(&r, 201);
    assert_eq!(c["title"], "My First Recording");
    assert_eq!(c["slug"], "my-first-recording");
    assert_eq!(c["status"], "draft");
    assert_eq!(c["public"], false);
    assert_eq!(c["tags"], json!([]));
    assert_eq!(c["linked_video"], Value::Null);
    assert_eq!(c["original_recording_id"], Value::Null);
    assert_ne!(c["featured"], json!(true));
    assert_eq!(c["user_created"], json!(uid));
    assert_eq!(c["events"], b["events"]);
    assert_eq!(c["device_info"], b["device_info"]);
    assert_eq!(c["duration"].as_f64(), Some(1500.5));
    let created_at = ts_ms(&c["date_created"]);
    assert!(
        created_at >= before - 1000 && created_at <= after + 1000,
        "date_created {} not within the request",
        c["date_created"]
    );
    // What was returned is what was stored.
    let s = host.admin_item("recordings", &id_of(&c));
    let stored = [
        "title",
        "slug",
        "status",
        "public",
        "tags",
        "user_created",
        "events",
        "device_info",
    ];
    assert_same_fields(&s, &c, &stored, "stored");
    assert_eq!(recordings_count(&host), 1);
}

#[test]
fn create_keeps_given_optional_fields() {
    let host = Host::in_process_svc();
    host.user(Some("Model"), "creator");
    let video = host.admin_create("videos", &json!({"slug": "v", "title": "V"}))["id"].clone();
    let mut b = body("With extras");
    b["description"] = json!("a description");
    b["tags"] = json!(["slow", "wave"]);
    b["linked_video"] = video.clone();
    b["status"] = json!("published");
    let c = create(&host, "creator", &b);
    assert_eq!(c["description"], "a description");
    assert_eq!(c["tags"], json!(["slow", "wave"]));
    assert_eq!(c["linked_video"], video);
    assert_eq!(c["status"], "published");
    assert_eq!(c["public"], false);
}

#[test]
fn create_ignores_public_featured_owner_and_slug_in_the_body() {
    let host = Host::in_process_svc();
    let uid = host.user(Some("Viewer"), "creator");
    let other = host.user(Some("Viewer"), "someone-else");
    let src = id_of(&create(&host, "someone-else", &body("source")));
    let mut b = body("Sneaky");
    b["public"] = json!(true);
    b["featured"] = json!(true);
    b["user_created"] = json!(other);
    b["slug"] = json!("custom-slug");
    b["original_recording_id"] = json!(src);
    let c = create(&host, "creator", &b);
    assert_eq!(c["public"], false);
    assert_ne!(c["featured"], json!(true));
    assert_eq!(c["user_created"], json!(uid));
    assert_eq!(c["slug"], "sneaky");
    assert_eq!(c["original_recording_id"], Value::Null);
    let s = host.admin_item("recordings", &id_of(&c));
    assert_eq!(s["public"], false);
    assert_ne!(s["featured"], json!(true));
    assert_eq!(s["user_created"], json!(uid));
    assert_eq!(s["original_recording_id"], Value::Null);
}

#[test]
fn create_derives_the_slug_from_the_title() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "slugger");
    for (title, slug) in [
        ("  Hello, World!! 2 ", "hello-world-2"),
        ("Crème Brûlée", "cr-me-br-l-e"),
        ("ABC def", "abc-def"),
        ("---a---b---", "a-b"),
        ("snake_case_Title", "snake-case-title"),
        ("Tab\tand\nnewline", "tab-and-newline"),
        ("100% Pure", "100-pure"),
        ("\u{212A}elvin", "kelvin"),
        ("ΑΒΓ abc ΔΕ", "abc"),
        ("x", "x"),
    ] {
        let c = create(&host, "slugger", &body(title));
        assert_eq!(c["slug"], slug, "title {title:?}");
        assert_eq!(c["title"], title);
    }
}

#[test]
fn create_then_read_round_trips_through_get() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "rt");
    let c = create(&host, "rt", &body("Round Trip"));
    let r = host.get(&format!("/svc/recordings/{}", id_of(&c)), Some("rt"));
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), c);
}

// ---------------------------------------------------------------- permissions

/// Deletes the Viewer policy's `action` permission on recordings.
fn revoke_viewer(host: &Host, action: &str) {
    let policy = host.id_by_name("platform_policies", "Viewer");
    let filter = json!({"_and": [
        {"policy": {"_eq": policy}},
        {"collection": {"_eq": "recordings"}},
        {"action": {"_eq": action}},
    ]});
    let rows = host.admin_find("platform_permissions", &filter);
    assert_eq!(rows.len(), 1, "one {action} permission expected: {rows:?}");
    let pid = id_of(&rows[0]);
    let r = host.delete(
        &format!("/items/platform_permissions/{pid}"),
        Some(ADMIN_TOKEN),
    );
    assert!(r.status == 204 || r.status == 200, "{}", r.body);
}

#[test]
fn create_runs_under_the_callers_permissions() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "viewer");
    host.user(Some("Model"), "model");
    create(&host, "viewer", &body("before revoke"));
    revoke_viewer(&host, "create");

    let r = host.post("/svc/recordings", Some("viewer"), &body("after revoke"));
    assert_eq!(r.status, 500, "{}", r.body);
    let v = r.json();
    assert!(v["error"].is_string(), "{v}");
    assert!(v["details"].is_string(), "{v}");
    assert_eq!(recordings_count(&host), 1, "nothing written");
    let t = titles(&list(&host, "viewer", ""));
    assert_eq!(t, vec!["before revoke"]);

    // The Model policy is untouched.
    create(&host, "model", &body("model still creates"));
    assert_eq!(recordings_count(&host), 2);
}

#[test]
fn update_runs_under_the_callers_permissions() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "viewer");
    let id = id_of(&create(&host, "viewer", &body("locked")));
    revoke_viewer(&host, "update");
    let r = host.patch(
        &format!("/svc/recordings/{id}"),
        Some("viewer"),
        &json!({"title": "changed"}),
    );
    assert!(r.status >= 400, "{} {}", r.status, r.body);
    assert!(r.json()["error"].is_string(), "{}", r.body);
    assert_eq!(host.admin_item("recordings", &id)["title"], "locked");
}

// ---------------------------------------------------------------- PATCH /recordings/:id

#[test]
fn patch_requires_authentication_and_ownership() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    host.user(Some("Viewer"), "other");
    let id = id_of(&create(&host, "owner", &body("Original")));
    let path = format!("/svc/recordings/{id}");

    let r = host.patch(&path, None, &json!({"title": "anon"}));
    assert_error(&r, 401, "Unauthorized");

    let r = host.patch(
        &path,
        Some("other"),
        &json!({"title": "hijack", "public": true}),
    );
    assert_error(&r, 403, "Forbidden");

    // Admins are not owners either.
    let r = host.patch(&path, Some(ADMIN_TOKEN), &json!({"title": "admin"}));
    assert_error(&r, 403, "Forbidden");

    let s = host.admin_item("recordings", &id);
    assert_eq!(s["title"], "Original");
    assert_eq!(s["public"], false);
}

#[test]
fn patch_forbidden_on_a_public_recording_of_another_user() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    host.user(Some("Viewer"), "other");
    let id = id_of(&shared(&host, "owner", &body("Public")));
    let path = format!("/svc/recordings/{id}");
    let r = host.patch(&path, Some("other"), &json!({"title": "hijack"}));
    assert_error(&r, 403, "Forbidden");
    assert_eq!(host.admin_item("recordings", &id)["title"], "Public");
}

#[test]
fn patch_changes_the_allowed_fields_and_returns_the_updated_recording() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    let video = host.admin_create("videos", &json!({"slug": "v", "title": "V"}))["id"].clone();
    let created = create(&host, "owner", &body("Original Title"));
    let id = id_of(&created);
    let r = host.patch(
        &format!("/svc/recordings/{id}"),
        Some("owner"),
        &json!({
            "title": "  Brand NEW title!! ",
            "description": "now described",
            "tags": ["a", "b"],
            "status": "published",
            "public": true,
            "linked_video": video,
        }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let u = r.json();
    assert_eq!(u["id"], json!(id));
    assert_eq!(u["title"], "  Brand NEW title!! ");
    assert_eq!(u["slug"], "brand-new-title");
    assert_eq!(u["description"], "now described");
    assert_eq!(u["tags"], json!(["a", "b"]));
    assert_eq!(u["status"], "published");
    assert_eq!(u["public"], true);
    assert_eq!(u["linked_video"], video);
    let untouched = [
        "events",
        "device_info",
        "duration",
        "user_created",
        "date_created",
    ];
    assert_same_fields(&u, &created, &untouched, "untouched");
    let changed = [
        "title",
        "slug",
        "description",
        "tags",
        "status",
        "public",
        "linked_video",
    ];
    let s = host.admin_item("recordings", &id);
    assert_same_fields(&s, &u, &changed, "stored");
}

#[test]
fn patch_applies_only_fields_that_are_present() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    let video = host.admin_create("videos", &json!({"slug": "v", "title": "V"}))["id"].clone();
    let mut b = body("Keep Me");
    b["description"] = json!("desc");
    b["tags"] = json!(["t"]);
    b["linked_video"] = video.clone();
    b["status"] = json!("published");
    let id = id_of(&create(&host, "owner", &b));
    let path = format!("/svc/recordings/{id}");

    // Only the description: nothing else moves, the slug is not regenerated.
    let r = host.patch(&path, Some("owner"), &json!({"description": "changed"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let s = host.admin_item("recordings", &id);
    assert_eq!(s["description"], "changed");
    assert_eq!(s["title"], "Keep Me");
    assert_eq!(s["slug"], "keep-me");
    assert_eq!(s["tags"], json!(["t"]));
    assert_eq!(s["linked_video"], video);
    assert_eq!(s["status"], "published");
    assert_eq!(s["public"], false);

    // An empty body changes nothing.
    let r = host.patch(&path, Some("owner"), &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(host.admin_item("recordings", &id), s);

    // linked_video present as null unlinks.
    let r = host.patch(&path, Some("owner"), &json!({"linked_video": null}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["linked_video"], Value::Null);
    assert_eq!(
        host.admin_item("recordings", &id)["linked_video"],
        Value::Null
    );
}

#[test]
fn patch_ignores_fields_that_cannot_be_changed() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    let other = host.user(Some("Viewer"), "other");
    let src = id_of(&create(&host, "other", &body("other's")));
    let created = create(&host, "owner", &body("Fixed"));
    let id = id_of(&created);
    let r = host.patch(
        &format!("/svc/recordings/{id}"),
        Some("owner"),
        &json!({
            "featured": true,
            "user_created": other,
            "events": [event(9)],
            "duration": 42,
            "device_info": {"name": "other"},
            "slug": "hand-made-slug",
            "original_recording_id": src,
            "date_created": "2000-01-01T00:00:00.000Z",
            "id": "00000000-0000-4000-8000-000000000000",
            "colour": "red",
            "description": "the only change",
        }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["id"], json!(id));
    let s = host.admin_item("recordings", &id);
    assert_eq!(s["description"], "the only change");
    assert_ne!(s["featured"], json!(true));
    let fixed = [
        "user_created",
        "events",
        "duration",
        "device_info",
        "slug",
        "original_recording_id",
        "date_created",
        "title",
        "status",
        "public",
    ];
    assert_same_fields(&s, &created, &fixed, "must not change");
    assert!(s.get("colour").is_none());
    // Still the owner's.
    assert_eq!(titles(&list(&host, "owner", "")), vec!["Fixed"]);
}

#[test]
fn patch_status_is_validated() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    let id = id_of(&create(&host, "owner", &body("Status")));
    let path = format!("/svc/recordings/{id}");
    for status in [json!("deleted"), json!("PUBLISHED"), json!(3), json!(true)] {
        let r = host.patch(
            &path,
            Some("owner"),
            &json!({"status": status, "title": "Renamed"}),
        );
        assert_error_for(&status.to_string(), &r, 400, "Invalid status");
    }
    let s = host.admin_item("recordings", &id);
    assert_eq!(s["status"], "draft");
    assert_eq!(s["title"], "Status", "no partial write");
}

#[test]
fn patch_status_moves_between_any_states() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    let id = id_of(&create(&host, "owner", &body("States")));
    let path = format!("/svc/recordings/{id}");
    for status in [
        "published",
        "archived",
        "draft",
        "archived",
        "published",
        "draft",
    ] {
        let r = host.patch(&path, Some("owner"), &json!({"status": status}));
        assert_eq!(r.status, 200, "{status}: {}", r.body);
        assert_eq!(r.json()["status"], status);
        assert_eq!(host.admin_item("recordings", &id)["status"], status);
    }
}

#[test]
fn patch_wrong_types_are_refused_with_4xx_and_nothing_changes() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    let created = create(&host, "owner", &body("Typed"));
    let id = id_of(&created);
    let path = format!("/svc/recordings/{id}");
    for b in [
        json!({"public": "yes"}),
        json!({"public": 1}),
        json!({"title": 5}),
        json!({"title": ["t"]}),
        json!({"tags": "a,b"}),
        json!({"tags": {"a": 1}}),
        json!({"description": 5, "public": "no"}),
    ] {
        let r = host.patch(&path, Some("owner"), &b);
        assert!(
            (400..500).contains(&r.status),
            "{b}: expected a 4xx, got {} {}",
            r.status,
            r.body
        );
        assert!(r.json()["error"].is_string(), "{b}: {}", r.body);
    }
    assert_eq!(stored_snapshot(&host, &created)["id"], json!(id));
    host.assert_serving();
}

/// The stored record must still equal what was created.
fn stored_snapshot(host: &Host, created: &Value) -> Value {
    let s = host.admin_item("recordings", &id_of(created));
    let kept = ["title", "slug", "tags", "public", "description", "status"];
    assert_same_fields(&s, created, &kept, "changed");
    s
}

#[test]
fn patch_invalid_json_and_non_object_bodies() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    let created = create(&host, "owner", &body("Body"));
    let id = id_of(&created);
    let path = format!("/svc/recordings/{id}");
    assert_invalid_json(
        &host,
        "PATCH",
        &path,
        "owner",
        &[b"{\"title\": ", b"\xff\xfe{}", b"{\"title\": \"\xc3\x28\"}"],
    );
    for raw in [&b"[{\"title\": \"arr\"}]"[..], b"\"title\"", b"42", b"null"] {
        let (r, case) = send_raw(&host, "PATCH", &path, "owner", raw);
        assert!(r.status < 500, "{case}: {} {}", r.status, r.body);
    }
    stored_snapshot(&host, &created);
    host.assert_serving();
}

// ---------------------------------------------------------------- DELETE /recordings/:id

#[test]
fn delete_archives_and_keeps_the_record() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    let mut b = body("To archive");
    b["status"] = json!("published");
    let created = create(&host, "owner", &b);
    let id = id_of(&created);
    let archive = || {
        let r = host.delete(&format!("/svc/recordings/{id}"), Some("owner"));
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json(), json!({"success": true}));
    };
    archive();
    let s = host.admin_item("recordings", &id);
    assert_eq!(s["status"], "archived");
    assert_eq!(s["title"], "To archive");
    assert_eq!(s["events"], created["events"]);
    assert_eq!(recordings_count(&host), 1);
    // Still readable by the owner, and listed as archived.
    let r = host.get(&format!("/svc/recordings/{id}"), Some("owner"));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "archived");
    assert_eq!(
        titles(&list(&host, "owner", "?status=archived")),
        vec!["To archive"]
    );
    // Archiving again is still a success.
    archive();
}

#[test]
fn delete_requires_authentication_and_ownership() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    host.user(Some("Viewer"), "other");
    let id = id_of(&create(&host, "owner", &body("Mine")));
    let path = format!("/svc/recordings/{id}");
    assert_error(&host.delete(&path, None), 401, "Unauthorized");
    for token in ["other", ADMIN_TOKEN] {
        assert_error_for(token, &host.delete(&path, Some(token)), 403, "Forbidden");
    }
    assert_eq!(host.admin_item("recordings", &id)["status"], "draft");
}

// ---------------------------------------------------------------- duplicate

/// A published, public recording of `token`'s user.
fn shared(host: &Host, token: &str, b: &Value) -> Value {
    let mut b = b.clone();
    b["status"] = json!("published");
    let id = id_of(&create(host, token, &b));
    set_public(host, token, &id, true);
    host.admin_item("recordings", &id)
}

/// A published, public recording of user `owner`, made as admin with
/// `fields` set (which the service's own create would not take).
fn shared_by_admin(host: &Host, owner: &str, title: &str, fields: Value) -> Value {
    let mut b = owned(title, owner, "2025-01-01T00:00:00.000Z");
    b["status"] = json!("published");
    b["public"] = json!(true);
    for (k, v) in fields.as_object().expect("fields object") {
        b[k] = v.clone();
    }
    admin_recordings(host, vec![b]).remove(0)
}

/// POST /svc/recordings/:id/duplicate as `token`.
fn duplicate(host: &Host, id: &str, token: Option<&str>) -> Resp {
    host.post(
        &format!("/svc/recordings/{id}/duplicate"),
        token,
        &json!({}),
    )
}

#[test]
fn duplicate_requires_authentication() {
    let host = Host::in_process_svc();
    host.user(Some("Model"), "owner");
    let src = shared(&host, "owner", &body("Shared"));
    let r = duplicate(&host, &id_of(&src), None);
    assert_error(&r, 401, "Authentication required");
    assert_eq!(recordings_count(&host), 1);
}

#[test]
fn duplicate_requires_a_published_and_public_source() {
    let host = Host::in_process_svc();
    host.user(Some("Model"), "owner");
    host.user(Some("Viewer"), "copier");
    // draft + public
    let draft_public = id_of(&create(&host, "owner", &body("draft public")));
    set_public(&host, "owner", &draft_public, true);
    // published + private
    let mut b = body("published private");
    b["status"] = json!("published");
    let published_private = id_of(&create(&host, "owner", &b));
    // archived + public
    let archived_public = id_of(&shared(&host, "owner", &body("archived public")));
    let r = host.patch(
        &format!("/svc/recordings/{archived_public}"),
        Some("owner"),
        &json!({"status": "archived"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let before = recordings_count(&host);
    for id in [&draft_public, &published_private, &archived_public] {
        for token in ["copier", "owner"] {
            let r = duplicate(&host, id, Some(token));
            let case = format!("{id} by {token}");
            assert_error_for(&case, &r, 403, "Recording is not publicly shared");
        }
    }
    assert_eq!(recordings_count(&host), before);
}

#[test]
fn duplicate_creates_a_private_draft_copy_owned_by_the_caller() {
    let host = Host::in_process_svc();
    let owner = host.user(Some("Model"), "owner");
    let copier = host.user(Some("Viewer"), "copier");
    let video = host.admin_create("videos", &json!({"slug": "v", "title": "V"}))["id"].clone();
    let mut b = body("Crème Brûlée");
    b["description"] = json!("sweet");
    b["tags"] = json!(["dessert", "slow"]);
    b["linked_video"] = video;
    b["duration"] = json!(12345.25);
    let src = shared(&host, "owner", &b);
    let src_id = id_of(&src);

    let before = now_ms();
    let r = duplicate(&host, &src_id, Some("copier"));
    let after = now_ms();
    assert_eq!(r.status, 201, "{}", r.body);
    let v = r.json();
    assert_eq!(keys_of(&v), BTreeSet::from(["data"]), "{v}");
    let d = &v["data"];
    let copy_id = id_of(d);
    assert_ne!(copy_id, src_id);
    assert_eq!(d["title"], "Crème Brûlée (Copy)");
    let slug = d["slug"].as_str().expect("slug");
    let suffix = slug
        .strip_prefix("cr-me-br-l-e-copy-")
        .unwrap_or_else(|| panic!("slug {slug}"));
    let ms: i64 = suffix
        .parse()
        .unwrap_or_else(|_| panic!("slug suffix {suffix} is not a number"));
    assert!(
        ms >= before && ms <= after,
        "slug time {ms} not within {before}..{after}"
    );
    assert_eq!(d["description"], "sweet");
    assert_eq!(d["duration"].as_f64(), Some(12345.25));
    assert_eq!(d["events"], src["events"]);
    assert_eq!(d["device_info"], src["device_info"]);
    assert_eq!(d["tags"], json!(["dessert", "slow"]));
    assert_eq!(d["status"], "draft");
    assert_eq!(d["public"], false);
    assert_eq!(d["original_recording_id"], json!(src_id));
    assert_eq!(d["user_created"], json!(copier));
    assert_ne!(d["featured"], json!(true));

    // Stored as answered; the source is untouched.
    let s = host.admin_item("recordings", &copy_id);
    let stored = [
        "title",
        "slug",
        "status",
        "public",
        "original_recording_id",
        "user_created",
        "events",
        "tags",
    ];
    assert_same_fields(&s, d, &stored, "stored");
    let src_after = host.admin_item("recordings", &src_id);
    assert_eq!(src_after, src);
    assert_eq!(src_after["user_created"], json!(owner));
    // The copy is the caller's: listed for them.
    assert_eq!(
        titles(&list(&host, "copier", "")),
        vec!["Crème Brûlée (Copy)"]
    );
    assert_eq!(recordings_count(&host), 2);
}

#[test]
fn duplicate_does_not_copy_linked_video_or_featured() {
    let host = Host::in_process_svc();
    let owner = host.user(Some("Model"), "owner");
    host.user(Some("Viewer"), "copier");
    let video = host.admin_create("videos", &json!({"slug": "v", "title": "V"}))["id"].clone();
    let fields = json!({"featured": true, "linked_video": video});
    let src = shared_by_admin(&host, &owner, "Featured", fields);
    let r = duplicate(&host, &id_of(&src), Some("copier"));
    assert_eq!(r.status, 201, "{}", r.body);
    let d = &r.json()["data"];
    assert_ne!(d["featured"], json!(true));
    assert_eq!(d["linked_video"], Value::Null);
}

#[test]
fn duplicate_of_a_source_with_null_tags_gives_empty_tags() {
    let host = Host::in_process_svc();
    let owner = host.user(Some("Model"), "owner");
    host.user(Some("Viewer"), "copier");
    let src = shared_by_admin(&host, &owner, "No Tags", json!({"tags": null}));
    assert_eq!(
        host.admin_item("recordings", &id_of(&src))["tags"],
        Value::Null
    );
    let r = duplicate(&host, &id_of(&src), Some("copier"));
    assert_eq!(r.status, 201, "{}", r.body);
    let d = &r.json()["data"];
    assert_eq!(d["tags"], json!([]));
    assert_eq!(host.admin_item("recordings", &id_of(d))["tags"], json!([]));
}

// ---------------------------------------------------------------- community

fn community_fixture(host: &Host) -> (String, String) {
    let a = host.user(Some("Model"), "maker-a");
    let b = host.user(Some("Viewer"), "maker-b");
    let mut items = Vec::new();
    for k in 0..55 {
        let i = (k * 17) % 55;
        let owner = if i % 2 == 0 { &a } else { &b };
        let mut r = owned(&format!("rec-{i:02}"), owner, &minute(i + 10));
        r["status"] = json!("published");
        r["public"] = json!(true);
        r["description"] = json!(format!("desc {i}"));
        r["tags"] = json!([format!("t{i}")]);
        items.push(r);
    }
    // Newer than all the shared ones, but not published + public.
    for (title, status, public) in [
        ("draft-public", "draft", true),
        ("published-private", "published", false),
        ("archived-public", "archived", true),
        ("draft-private", "draft", false),
    ] {
        let mut r = owned(title, &a, "2026-06-01T00:00:00.000Z");
        r["status"] = json!(status);
        r["public"] = json!(public);
        items.push(r);
    }
    admin_recordings(host, items);
    (a, b)
}

#[test]
fn community_lists_only_published_public_newest_first_with_defaults() {
    let host = Host::in_process_svc();
    community_fixture(&host);
    assert_eq!(titles(&community(&host, "")), newest_first(5..55));
    assert_eq!(titles(&community(&host, "?offset=50")), newest_first(0..5));
    assert_eq!(
        titles(&community(&host, "?limit=1000")),
        newest_first(0..55)
    );
    assert_eq!(
        titles(&community(&host, "?limit=10&offset=20")),
        newest_first(25..35)
    );
    assert_eq!(
        titles(&community(&host, "?offset=55")),
        Vec::<String>::new()
    );
    // Works with a valid token too.
    host.user(Some("Viewer"), "someone");
    let r = host.get("/svc/community-recordings?limit=2", Some("someone"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(titles(&r.json()["data"]), newest_first(53..55));
}

#[test]
fn community_invalid_limit_and_offset_fall_back_to_defaults() {
    let host = Host::in_process_svc();
    community_fixture(&host);
    for q in [
        "?limit=abc",
        "?limit=-1",
        "?limit=0",
        "?offset=-3",
        "?offset=abc",
        "?offset=1.5",
    ] {
        assert_eq!(titles(&community(&host, q)), newest_first(5..55), "{q}");
    }
}

#[test]
fn community_items_have_exactly_the_public_fields() {
    let host = Host::in_process_svc();
    let (a, b) = community_fixture(&host);
    let avatar = host.admin_create(
        "platform_files",
        &json!({"storage": "local", "filename_disk": "a.png", "filename_download": "a.png", "type": "image/png"}),
    )["id"]
        .clone();
    let r = host.patch(
        &format!("/items/platform_users/{a}"),
        Some(ADMIN_TOKEN),
        &json!({"avatar": avatar, "first_name": "Ada", "last_name": "Lovelace"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let data = community(&host, "?limit=1000");
    let expected_keys: BTreeSet<&str> = [
        "id",
        "title",
        "description",
        "slug",
        "duration",
        "tags",
        "date_created",
        "user_created",
    ]
    .into_iter()
    .collect();
    for item in data.as_array().expect("array") {
        assert_eq!(keys_of(item), expected_keys, "{item}");
        let i: usize = item["title"].as_str().expect("title")[4..]
            .parse()
            .expect("index");
        assert_eq!(item["description"], json!(format!("desc {i}")));
        assert_eq!(item["slug"], json!(format!("rec-{i:02}")));
        assert_eq!(item["tags"], json!([format!("t{i}")]));
        assert_eq!(item["duration"].as_f64(), Some(1500.5));
        assert_eq!(ts_ms(&item["date_created"]), ts_ms(&json!(minute(i + 10))));
        let user = &item["user_created"];
        let user_keys = BTreeSet::from(["avatar", "first_name", "id", "last_name"]);
        assert!(user.is_object(), "user_created not expanded: {item}");
        assert_eq!(keys_of(user), user_keys, "{user}");
        if i % 2 == 0 {
            assert_eq!(
                user,
                &json!({"id": a, "first_name": "Ada", "last_name": "Lovelace", "avatar": avatar})
            );
        } else {
            assert_eq!(
                user,
                &json!({"id": b, "first_name": "Test", "last_name": "maker-b", "avatar": null})
            );
        }
    }
    assert!(!host
        .get("/svc/community-recordings", None)
        .body
        .contains("@test.local"));
}

// ---------------------------------------------------------------- plays

fn stored_play(host: &Host, play_id: &str) -> Value {
    let r = host.get(
        &format!("/items/recording_plays/{play_id}"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"].clone()
}

/// A stored play just started: of `recording`, by `user`, not played yet.
fn assert_new_play(p: &Value, recording: &str, user: Value) {
    assert_eq!(p["recording_id"], json!(recording), "{p}");
    assert_eq!(p["user_id"], user, "{p}");
    assert_eq!(p["duration_played"].as_f64(), Some(0.0), "{p}");
    assert_eq!(p["completed"], false, "{p}");
}

/// PATCH /svc/recordings/:id/play/:play_id, which must answer 200
/// `{success: true}`.
fn update_play(host: &Host, id: &str, play_id: &str, token: Option<&str>, b: &Value) {
    let r = host.patch(&format!("/svc/recordings/{id}/play/{play_id}"), token, b);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json(), json!({"success": true}));
}

#[test]
fn anonymous_play_is_recorded_with_null_user() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    // A private draft: the play endpoint only needs the recording to exist.
    let id = id_of(&create(&host, "owner", &body("Played")));
    let before = now_ms();
    let play_id = host.play_recording(&id, None);
    let p = stored_play(&host, &play_id);
    assert_new_play(&p, &id, Value::Null);
    let created = ts_ms(&p["date_created"]);
    assert!(created >= before - 1000 && created <= now_ms() + 1000);
    assert_eq!(host.admin_count("recording_plays", None), 1);
}

#[test]
fn authenticated_play_stores_the_caller() {
    let host = Host::in_process_svc();
    host.user(Some("Model"), "owner");
    let listener = host.user(Some("Viewer"), "listener");
    let owner_id = host.user(Some("Viewer"), "owner2");
    let id = id_of(&shared(&host, "owner", &body("Played")));
    let p = stored_play(&host, &host.play_recording(&id, Some("listener")));
    assert_new_play(&p, &id, json!(listener));
    let p = stored_play(&host, &host.play_recording(&id, Some("owner2")));
    assert_eq!(p["user_id"], json!(owner_id));
    assert_eq!(host.admin_count("recording_plays", None), 2);
}

#[test]
fn play_update_sets_duration_completed_and_date_updated() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    let id = id_of(&create(&host, "owner", &body("Played")));
    let play_id = host.play_recording(&id, None);
    let initial = stored_play(&host, &play_id);
    std::thread::sleep(Duration::from_millis(20));
    let before = now_ms();
    let b = json!({"duration_played": 1234.5, "completed": true});
    update_play(&host, &id, &play_id, None, &b);
    let after = now_ms();
    let p = stored_play(&host, &play_id);
    assert_eq!(p["duration_played"].as_f64(), Some(1234.5));
    assert_eq!(p["completed"], true);
    assert_eq!(p["user_id"], Value::Null);
    assert_eq!(p["recording_id"], json!(id));
    assert_eq!(p["date_created"], initial["date_created"]);
    let updated = ts_ms(&p["date_updated"]);
    assert!(
        updated >= before - 1000 && updated <= after + 1000,
        "date_updated {} not within the request",
        p["date_updated"]
    );
    assert_ne!(p["date_updated"], initial["date_updated"]);

    // Authenticated too, and back to not completed.
    host.user(Some("Viewer"), "listener");
    let b = json!({"duration_played": 10, "completed": false});
    update_play(&host, &id, &play_id, Some("listener"), &b);
    let p = stored_play(&host, &play_id);
    assert_eq!(p["duration_played"].as_f64(), Some(10.0));
    assert_eq!(p["completed"], false);
}

// ---------------------------------------------------------------- large bodies

/// An authenticated exchange with a raw body.
fn big_request(host: &Host, method: &str, path: &str, token: &str, body: Option<&[u8]>) -> Resp {
    host.request(method, path, Some(token), body)
}

#[test]
fn a_recording_of_100000_events_round_trips_exactly() {
    let host = Host::in_process_svc();
    host.user(Some("Model"), "big");
    let events: Vec<Value> = (0..100_000usize)
        .map(|i| {
            json!({
                "actuatorIndex": i % 3,
                "actuatorType": if i % 2 == 0 { "Vibrate" } else { "Rotate" },
                "deviceIndex": i % 4,
                "deviceName": format!("Device {}", i % 4),
                "timestamp": i as f64 * 16.67,
                "value": (i * 37 % 1000) as f64 / 10.0,
            })
        })
        .collect();
    let events = Value::Array(events);
    let events_text = events.to_string();
    let mut b = body("Big one");
    b["events"] = events.clone();
    b["duration"] = json!(1_667_000.25);
    let text = b.to_string();
    // About 10 MB, under the default 16 MiB payload limit.
    assert!(
        text.len() > 10_000_000 && text.len() < 16 * 1024 * 1024,
        "{}",
        text.len()
    );
    let r = big_request(
        &host,
        "POST",
        "/svc/recordings",
        "big",
        Some(text.as_bytes()),
    );
    assert_eq!(r.status, 201, "{}", &r.body[..r.body.len().min(500)]);
    let created = r.json();
    let id = id_of(&created);
    assert!(
        created["events"] == events,
        "events differ in the create answer"
    );

    let r = big_request(&host, "GET", &format!("/svc/recordings/{id}"), "big", None);
    assert_eq!(r.status, 200, "{}", &r.body[..r.body.len().min(500)]);
    let got = r.json();
    let got_events = &got["events"];
    assert_eq!(got_events.as_array().map(Vec::len), Some(100_000));
    assert!(got_events == &events, "events differ after the round trip");
    let got_text = serde_json::to_string(got_events).expect("serialize");
    assert!(
        got_text == events_text,
        "serialized events differ after the round trip"
    );
    assert_eq!(got["duration"].as_f64(), Some(1_667_000.25));
    assert_eq!(recordings_count(&host), 1);
}

#[test]
fn a_body_over_max_payload_gets_413_and_writes_nothing() {
    let host = Host::start(HostOptions::svc().arg("--max-payload").arg("1024"));
    host.user(Some("Viewer"), "small");
    // Under the limit: fine.
    create(&host, "small", &body("small"));
    let mut b = body("too big");
    b["events"] = Value::Array((0..100).map(event).collect());
    assert!(b.to_string().len() > 1024);
    let r = host.post("/svc/recordings", Some("small"), &b);
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(r.json(), json!({"error": "Payload too large"}));
    let id = id_of(&list(&host, "small", "")[0]);
    let r = host.patch(
        &format!("/svc/recordings/{id}"),
        Some("small"),
        &json!({"description": "d".repeat(2000)}),
    );
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(r.json(), json!({"error": "Payload too large"}));
    assert_eq!(recordings_count(&host), 1);
    assert_eq!(
        host.admin_item("recordings", &id)["description"],
        Value::Null
    );
    host.assert_serving();
}

// ---------------------------------------------------------------- bad input

#[test]
fn create_with_non_object_bodies_is_a_400() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    for raw in [
        &b""[..],
        b"[]",
        b"[{\"title\": \"x\", \"duration\": 1, \"events\": [1], \"device_info\": {}}]",
        b"null",
        b"\"a string\"",
        b"42",
        b"true",
    ] {
        let (r, case) = send_raw(&host, "POST", "/svc/recordings", "creator", raw);
        assert_eq!(r.status, 400, "{case}: {}", r.body);
        let e = err(&r);
        assert!(
            e == json!(MISSING) || e == json!("Invalid JSON body"),
            "{case}: {}",
            r.body
        );
    }
    assert_eq!(recordings_count(&host), 0);
    host.assert_serving();
}

/// A well-formed id that no recording and no play has.
const UNKNOWN_ID: &str = "00000000-0000-4000-8000-000000000000";

/// What a request naming an unknown or malformed id must answer.
#[derive(Clone, Copy)]
enum Expect {
    /// Exactly this status and body `{"error": text}`.
    Error(u16, &'static str),
    /// One of these statuses, with an `{error}` string.
    AnyErrorOf(&'static [u16]),
}

const NO_RECORDING: Expect = Expect::Error(404, "Recording not found");
const NO_PLAY: Expect = Expect::Error(404, "Play record not found");
/// DELETE and duplicate: docs/service-api.md says "Owner only, otherwise 403
/// Forbidden" (DELETE), "Source must be published and public" (duplicate),
/// so a missing or malformed id is a 4xx (403 or 404), not a server error.
const REFUSED: Expect = Expect::AnyErrorOf(&[404, 403]);

impl Expect {
    fn check(self, case: &str, r: &Resp) {
        match self {
            Expect::Error(status, text) => assert_error_for(case, r, status, text),
            Expect::AnyErrorOf(statuses) => {
                assert!(
                    statuses.contains(&r.status),
                    "{case}: {} {}",
                    r.status,
                    r.body
                );
                assert!(err(r).is_string(), "{case}: {}", r.body);
            }
        }
    }
}

/// Every route that takes a recording or play id, given a well-formed id
/// nothing has and malformed ones (not UUIDs, injections, a 2,000-character
/// id): the documented answer for each, nothing written, the host serving.
#[test]
fn unknown_and_malformed_ids_get_the_documented_answer_on_every_route() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "prober");
    let real = id_of(&create(&host, "prober", &body("Real")));
    let other = id_of(&create(&host, "prober", &body("Other")));
    let real_play = host.play_recording(&real, None);
    let (medium, long) = ("a".repeat(300), "z".repeat(2000));
    let malformed = [
        "not-a-uuid",
        "1",
        "00000000-0000-0000-0000-00000000000g",
        "%27--",
        "%27%20OR%20%271%27%3D%271",
        "%27%3B%20DROP%20TABLE%20recordings%3B--",
        "%22%7D%7B",
        "%E2%9C%93",
        medium.as_str(),
        long.as_str(),
    ];
    let completed = Some(r#"{"duration_played": 1, "completed": true}"#);
    // `{id}` is the probed id; `{real}` a recording and `{play}` its play.
    // (method, path, caller, body, answer to the unknown id, to a malformed one)
    let routes = [
        (
            "GET",
            "/svc/recordings/{id}",
            Some("prober"),
            None,
            NO_RECORDING,
            NO_RECORDING,
        ),
        // docs/service-api.md: a missing record on PATCH gives 500.
        (
            "PATCH",
            "/svc/recordings/{id}",
            Some("prober"),
            Some(r#"{"title": "ghost"}"#),
            Expect::AnyErrorOf(&[500]),
            Expect::AnyErrorOf(&[500, 404, 403]),
        ),
        (
            "DELETE",
            "/svc/recordings/{id}",
            Some("prober"),
            None,
            REFUSED,
            REFUSED,
        ),
        (
            "POST",
            "/svc/recordings/{id}/duplicate",
            Some("prober"),
            Some("{}"),
            REFUSED,
            REFUSED,
        ),
        (
            "POST",
            "/svc/recordings/{id}/play",
            None,
            Some("{}"),
            NO_RECORDING,
            NO_RECORDING,
        ),
        (
            "POST",
            "/svc/recordings/{id}/play",
            Some("prober"),
            Some("{}"),
            NO_RECORDING,
            NO_RECORDING,
        ),
        (
            "PATCH",
            "/svc/recordings/{real}/play/{id}",
            None,
            completed,
            NO_PLAY,
            NO_PLAY,
        ),
        (
            "PATCH",
            "/svc/recordings/{id}/play/{play}",
            None,
            completed,
            NO_PLAY,
            NO_PLAY,
        ),
    ];
    let stored = || {
        (
            host.admin_item("recordings", &real),
            host.admin_item("recordings", &other),
            stored_play(&host, &real_play),
            recordings_count(&host),
            host.admin_count("recording_plays", None),
        )
    };
    let before = stored();
    for (method, template, caller, body, unknown, bad) in routes {
        let ids = malformed.iter().map(|id| (*id, bad));
        for (id, expect) in std::iter::once((UNKNOWN_ID, unknown)).chain(ids) {
            let path = template
                .replace("{id}", id)
                .replace("{real}", &real)
                .replace("{play}", &real_play);
            let r = host.request(method, &path, caller, body.map(str::as_bytes));
            expect.check(&format!("{method} {path} as {caller:?}"), &r);
        }
        assert_eq!(stored(), before, "{method} {template} as {caller:?} wrote");
        host.assert_serving();
    }
    // A play is reached through its own recording only.
    let path = format!("/svc/recordings/{other}/play/{real_play}");
    let r = host.request("PATCH", &path, None, completed.map(str::as_bytes));
    NO_PLAY.check(&format!("PATCH {path} (another recording)"), &r);
    assert_eq!(stored(), before, "PATCH {path} wrote");
    assert_new_play(&stored_play(&host, &real_play), &real, Value::Null);
}
