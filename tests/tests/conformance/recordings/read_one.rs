use super::*;

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
