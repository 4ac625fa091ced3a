use super::*;

// ---------------------------------------------------------------- large bodies

/// An authenticated exchange with a raw body.
fn big_request(host: &Host, method: &str, path: &str, token: &str, body: Option<&[u8]>) -> Resp {
    host.request(method, path, Some(token), body)
}

#[test]
fn a_recording_of_100000_events_round_trips_exactly() {
    let host = Host::in_process_svc();
    host.user(Some("Model"), "big");
    let events: Vec<Value> = (0..100_000usize)
        .map(|i| {
            json!({
                "actuatorIndex": i % 3,
                "actuatorType": if i % 2 == 0 { "Vibrate" } else { "Rotate" },
                "deviceIndex": i % 4,
                "deviceName": format!("Device {}", i % 4),
                "timestamp": i as f64 * 16.67,
                "value": (i * 37 % 1000) as f64 / 10.0,
            })
        })
        .collect();
    let events = Value::Array(events);
    let events_text = events.to_string();
    let mut b = body("Big one");
    b["events"] = events.clone();
    b["duration"] = json!(1_667_000.25);
    let text = b.to_string();
    // About 10 MB, under the default 16 MiB payload limit.
    assert!(
        text.len() > 10_000_000 && text.len() < 16 * 1024 * 1024,
        "{}",
        text.len()
    );
    let r = big_request(
        &host,
        "POST",
        "/svc/recordings",
        "big",
        Some(text.as_bytes()),
    );
    assert_eq!(r.status, 201, "{}", &r.body[..r.body.len().min(500)]);
    let created = r.json();
    let id = id_of(&created);
    assert!(
        created["events"] == events,
        "events differ in the create answer"
    );

    let r = big_request(&host, "GET", &format!("/svc/recordings/{id}"), "big", None);
    assert_eq!(r.status, 200, "{}", &r.body[..r.body.len().min(500)]);
    let got = r.json();
    let got_events = &got["events"];
    assert_eq!(got_events.as_array().map(Vec::len), Some(100_000));
    assert!(got_events == &events, "events differ after the round trip");
    let got_text = serde_json::to_string(got_events).expect("serialize");
    assert!(
        got_text == events_text,
        "serialized events differ after the round trip"
    );
    assert_eq!(got["duration"].as_f64(), Some(1_667_000.25));
    assert_eq!(recordings_count(&host), 1);
}

#[test]
fn a_body_over_max_payload_gets_413_and_writes_nothing() {
    let host = Host::start(HostOptions::svc().arg("--max-payload").arg("1024"));
    host.user(Some("Viewer"), "small");
    // Under the limit: fine.
    create(&host, "small", &body("small"));
    let mut b = body("too big");
    b["events"] = Value::Array((0..100).map(event).collect());
    assert!(b.to_string().len() > 1024);
    let r = host.post("/svc/recordings", Some("small"), &b);
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(r.json(), json!({"error": "Payload too large"}));
    let id = id_of(&list(&host, "small", "")[0]);
    let r = host.patch(
        &format!("/svc/recordings/{id}"),
        Some("small"),
        &json!({"description": "d".repeat(2000)}),
    );
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(r.json(), json!({"error": "Payload too large"}));
    assert_eq!(recordings_count(&host), 1);
    assert_eq!(
        host.admin_item("recordings", &id)["description"],
        Value::Null
    );
    host.assert_serving();
}
