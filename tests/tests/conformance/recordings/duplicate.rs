use super::*;

// ---------------------------------------------------------------- duplicate

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
