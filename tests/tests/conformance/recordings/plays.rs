use super::*;

// ---------------------------------------------------------------- plays

/// PATCH /svc/recordings/:id/play/:play_id, which must answer 200
/// `{success: true}`.
fn update_play(host: &Host, id: &str, play_id: &str, token: Option<&str>, b: &Value) {
    let r = host.patch(&format!("/svc/recordings/{id}/play/{play_id}"), token, b);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json(), json!({"success": true}));
}

#[test]
fn anonymous_play_is_recorded_with_null_user() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    // A private draft: the play endpoint only needs the recording to exist.
    let id = id_of(&create(&host, "owner", &body("Played")));
    let before = now_ms();
    let play_id = host.play_recording(&id, None);
    let p = stored_play(&host, &play_id);
    assert_new_play(&p, &id, Value::Null);
    let created = ts_ms(&p["date_created"]);
    assert!(created >= before - 1000 && created <= now_ms() + 1000);
    assert_eq!(host.admin_count("recording_plays", None), 1);
}

#[test]
fn authenticated_play_stores_the_caller() {
    let host = Host::in_process_svc();
    host.user(Some("Model"), "owner");
    let listener = host.user(Some("Viewer"), "listener");
    let owner_id = host.user(Some("Viewer"), "owner2");
    let id = id_of(&shared(&host, "owner", &body("Played")));
    let p = stored_play(&host, &host.play_recording(&id, Some("listener")));
    assert_new_play(&p, &id, json!(listener));
    let p = stored_play(&host, &host.play_recording(&id, Some("owner2")));
    assert_eq!(p["user_id"], json!(owner_id));
    assert_eq!(host.admin_count("recording_plays", None), 2);
}

#[test]
fn play_update_sets_duration_completed_and_date_updated() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "owner");
    let id = id_of(&create(&host, "owner", &body("Played")));
    let play_id = host.play_recording(&id, None);
    let initial = stored_play(&host, &play_id);
    std::thread::sleep(Duration::from_millis(20));
    let before = now_ms();
    let b = json!({"duration_played": 1234.5, "completed": true});
    update_play(&host, &id, &play_id, None, &b);
    let after = now_ms();
    let p = stored_play(&host, &play_id);
    assert_eq!(p["duration_played"].as_f64(), Some(1234.5));
    assert_eq!(p["completed"], true);
    assert_eq!(p["user_id"], Value::Null);
    assert_eq!(p["recording_id"], json!(id));
    assert_eq!(p["date_created"], initial["date_created"]);
    let updated = ts_ms(&p["date_updated"]);
    assert!(
        updated >= before - 1000 && updated <= after + 1000,
        "date_updated {} not within the request",
        p["date_updated"]
    );
    assert_ne!(p["date_updated"], initial["date_updated"]);

    // Authenticated too, and back to not completed.
    host.user(Some("Viewer"), "listener");
    let b = json!({"duration_played": 10, "completed": false});
    update_play(&host, &id, &play_id, Some("listener"), &b);
    let p = stored_play(&host, &play_id);
    assert_eq!(p["duration_played"].as_f64(), Some(10.0));
    assert_eq!(p["completed"], false);
}
