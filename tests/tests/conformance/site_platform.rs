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

/// What the site's pages read of the demo (docs/decisions.md §9): every
/// demo user signs in with the printed password, tags are lists, the models
/// have join dates and their avatars sit in the `avatars` folder, articles
/// have covers, the movies their length, and members read their own email
/// (and no one else's).
#[test]
fn the_demo_seeds_what_the_site_s_pages_read() {
    let host = Host::start(HostOptions::svc().arg("--demo"));
    for email in [
        "aria@demo.local",
        "bianca@demo.local",
        "chloe@demo.local",
        "victor@demo.local",
        "wendy@demo.local",
    ] {
        let r = host.post(
            "/auth/login",
            None,
            &json!({"email": email, "password": "demo-password"}),
        );
        assert_eq!(r.status, 200, "{email}: {}", r.body);
    }
    let users = host.get(
        "/items/platform_users?fields=id,email,tags,join_date,slug&filter[email][_ends_with]=@demo.local&limit=-1",
        Some(ADMIN_TOKEN),
    );
    let users = users.json()["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(users.len(), 5, "{users:?}");
    for user in &users {
        assert!(user["tags"].is_array(), "{user}");
        assert!(user["join_date"].is_string(), "{user}");
    }
    for (collection, wanted) in [
        ("videos", "tags,movie.duration"),
        ("articles", "tags,image"),
    ] {
        let r = host.get(
            &format!("/items/{collection}?fields={wanted}&limit=-1"),
            None,
        );
        let items = r.json()["data"].as_array().cloned().unwrap_or_default();
        assert!(items.len() >= 3, "{collection}: {}", r.body);
        for item in &items {
            assert!(item["tags"].is_array(), "{collection}: {item}");
            if collection == "videos" {
                assert_eq!(item["movie"]["duration"], json!(6), "{item}");
            } else {
                assert!(item["image"].is_string(), "{item}");
            }
        }
    }
    let avatars = host.get(
        "/files?fields=filename_download&filter[folder][name][_eq]=avatars&limit=-1",
        Some(ADMIN_TOKEN),
    );
    let mut names: Vec<String> = avatars.json()["data"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|f| f["filename_download"].as_str().map(String::from))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "aria-vale-avatar.jpg",
            "bianca-moreau-avatar.jpg",
            "chloe-sato-avatar.jpg"
        ]
    );
    // A member reads their own email, and null for everyone else's.
    let r = host.get(
        "/items/platform_users?fields=email&filter[email][_nnull]=true",
        Some("demo-viewer-token"),
    );
    assert_eq!(
        r.json()["data"],
        json!([{"email": "victor@demo.local"}]),
        "{}",
        r.body
    );
    let r = host.get("/users/me?fields=email", Some("demo-model-token"));
    assert_eq!(r.json()["data"]["email"], json!("aria@demo.local"));
}
