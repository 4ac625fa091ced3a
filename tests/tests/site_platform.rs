//! What the site's own front end needs of the platform around the
//! extension (docs/decisions.md §9): the fields its pages read, present as
//! `null` until set and writable by their owners, and a line in the log for
//! every request it makes.

use platform_tests::{id_of, Host, HostOptions, ADMIN_TOKEN};
use serde_json::json;

#[test]
fn the_site_s_fields_read_as_null_until_set() {
    let host = Host::in_process_svc();
    let video = id_of(&host.admin_video("tagged", None));
    let r = host.get(&format!("/items/videos/{video}"), Some(ADMIN_TOKEN));
    assert_eq!(r.json()["data"]["tags"], json!(null), "{}", r.body);
    let article = host.admin_create("articles", &json!({"slug": "a", "title": "A"}));
    assert_eq!(article["tags"], json!(null), "{article}");
    assert_eq!(article["category"], json!(null), "{article}");
    let article = host.admin_create(
        "articles",
        &json!({"slug": "b", "title": "B", "category": "news", "tags": ["x", "y"]}),
    );
    assert_eq!(article["category"], "news");
    assert_eq!(article["tags"], json!(["x", "y"]));

    host.user(Some("Viewer"), "viewer-s");
    let me = host.get("/users/me", Some("viewer-s")).json();
    for field in [
        "tags",
        "location",
        "title",
        "language",
        "description",
        "join_date",
        "website",
    ] {
        assert_eq!(me["data"][field], json!(null), "{field}: {me}");
    }
    let profile = json!({"tags": ["rope", "art"], "location": "Lisbon", "title": "Rigger",
                         "language": "pt", "website": "https://example.com/me"});
    let r = host.patch("/users/me", Some("viewer-s"), &profile);
    assert_eq!(r.status, 200, "{}", r.body);
    for (field, value) in profile.as_object().expect("object") {
        assert_eq!(&r.json()["data"][field], value, "{field}: {}", r.body);
    }
}

#[test]
fn every_request_is_logged_once_without_its_credentials() {
    let host = Host::start(HostOptions::svc());
    let r = host.get(&format!("/svc/stats?access_token={ADMIN_TOKEN}&x=1"), None);
    assert_eq!(r.status, 200);
    let stats_bytes = r.body.len();
    let r = host.get("/items/nowhere", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 404);
    let log = host.log();
    let line = log
        .lines()
        .find(|l| l.contains("GET /svc/stats?"))
        .unwrap_or_else(|| panic!("no access line: {log}"));
    assert!(line.contains("?access_token=***&x=1 200 "), "{line}");
    assert!(line.ends_with(&format!(" {stats_bytes}B")), "{line}");
    assert!(!log.contains(ADMIN_TOKEN), "a token reached the log");
    assert_eq!(
        log.lines()
            .filter(|l| l.contains("GET /items/nowhere 404 "))
            .count(),
        1,
        "{log}"
    );
}
