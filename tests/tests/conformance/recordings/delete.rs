use super::*;

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
