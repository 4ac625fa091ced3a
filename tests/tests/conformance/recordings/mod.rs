//! The recording endpoints of the svc extension, read straight from
//! docs/service-api.md ("Recording", "Recording status", "Recordings",
//! "Authentication", "Errors", "Limits") and docs/decisions.md (§3, §5, §6,
//! §7): listing, reading, creating, updating, archiving, duplicating, community
//! listing and plays.

use platform_tests::count_trees;
use platform_tests::time::{now_ms, ts_ms};
use std::collections::BTreeSet;
use std::time::Duration;

use platform_tests::{
    assert_error, assert_error_for, encode, id_of, keys_of, Host, HostOptions, Resp, Rng,
    ADMIN_TOKEN,
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

/// A published, public recording of `token`'s user.
fn shared(host: &Host, token: &str, b: &Value) -> Value {
    let mut b = b.clone();
    b["status"] = json!("published");
    let id = id_of(&create(host, token, &b));
    set_public(host, token, &id, true);
    host.admin_item("recordings", &id)
}

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

mod bad_input;
mod community;
mod create;
mod delete;
mod duplicate;
mod large_bodies;
mod list;
mod permissions;
mod plays;
mod read_one;
mod update;
