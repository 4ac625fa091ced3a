//! Relational `fields` in `/items` (DECISIONS §4): paths through
//! references, to any depth, each related collection read under the
//! caller's permissions on it.

use platform_tests::{Host, HostOptions, ADMIN_TOKEN};
use serde_json::json;

const RECORDING: &str = "00000000-0000-4000-b000-000000000001";

fn demo() -> Host {
    Host::start(HostOptions::svc().arg("--demo"))
}

#[test]
fn fields_follow_references_to_any_depth() {
    let host = demo();
    let r = host.get(
        &format!("/items/recordings/{RECORDING}?fields=id,title,user_created.first_name,user_created.role.name"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let data = &r.json()["data"];
    let owner = &data["user_created"];
    assert!(owner["first_name"].is_string(), "{}", r.body);
    assert!(owner["role"]["name"].is_string(), "{}", r.body);
    assert!(owner.get("id").is_none(), "only what was asked: {}", r.body);
    assert!(owner.get("password").is_none() && owner.get("token").is_none());

    // Lists too, with `*` below a reference.
    let r = host.get(
        "/items/recordings?fields=id,user_created.*&limit=3&sort=id",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let list = r.json()["data"].as_array().cloned().unwrap_or_default();
    assert!(!list.is_empty());
    for rec in &list {
        let owner = &rec["user_created"];
        assert!(owner.is_null() || owner["id"].is_string(), "{rec}");
    }
}

#[test]
fn a_signed_in_user_reads_their_role_name_through_users_me() {
    let host = demo();
    let r = host.get("/users/me?fields=*,role.name", Some("demo-viewer-token"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["data"]["role"],
        json!({"name": "Viewer"}),
        "{}",
        r.body
    );
    assert_eq!(r.json()["data"]["email"], "victor@demo.local");
}

#[test]
fn related_collections_are_read_under_the_callers_permissions() {
    let host = demo();
    // A viewer may read recordings, not users: a path into users is
    // refused as a field they may not read.
    let r = host.get(
        "/items/recordings?fields=id,user_created.email",
        Some("demo-viewer-token"),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    // Their own fields of recordings still read.
    let r = host.get(
        "/items/recordings?fields=id,title",
        Some("demo-viewer-token"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn paths_through_fields_that_refer_to_nothing_are_400() {
    let host = demo();
    for path in [
        "/items/recordings?fields=title.first",
        "/items/recordings?fields=nowhere.id",
    ] {
        let r = host.get(path, Some(ADMIN_TOKEN));
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        assert_eq!(r.json()["errors"][0]["extensions"]["code"], "INVALID_QUERY");
    }
}
