use super::*;

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
