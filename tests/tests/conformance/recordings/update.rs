use super::*;

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
