use super::*;

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
