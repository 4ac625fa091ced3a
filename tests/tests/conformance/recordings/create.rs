use super::*;

// ---------------------------------------------------------------- POST /recordings

#[test]
fn create_requires_authentication() {
    let host = Host::in_process_svc();
    let r = host.post("/svc/recordings", None, &body("anon"));
    assert_error(&r, 401, "Unauthorized");
    assert_eq!(recordings_count(&host), 0);
}

#[test]
fn create_missing_or_falsy_required_fields_give_400() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    for field in ["title", "duration", "events", "device_info"] {
        let mut absent = body("x");
        absent.as_object_mut().expect("object").remove(field);
        let mut cases = vec![absent];
        for falsy in [json!(null), json!(false), json!(0), json!(""), json!(0.0)] {
            let mut b = body("x");
            b[field] = falsy;
            cases.push(b);
        }
        for b in cases {
            assert_create_refused(&host, "creator", &b, MISSING);
        }
    }
    // All four missing at once; an empty object body.
    assert_create_refused(&host, "creator", &json!({}), MISSING);
    assert_eq!(recordings_count(&host), 0);
}

#[test]
fn create_missing_fields_are_checked_before_events_and_types() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    for b in [
        json!({"title": "x", "duration": 5, "events": [], "device_info": null}),
        json!({"title": 7, "duration": 0, "events": [event(0)], "device_info": {}}),
        json!({"title": "", "duration": "x", "events": "nope", "device_info": {}, "tags": 1}),
        json!({"duration": 5, "events": [event(0)], "device_info": {}, "status": "bogus"}),
    ] {
        assert_create_refused(&host, "creator", &b, MISSING);
    }
    assert_eq!(recordings_count(&host), 0);
}

#[test]
fn create_empty_array_and_object_count_as_present() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    for info in [
        json!([]),
        json!({}),
        json!({"name": "D", "index": 0, "capabilities": []}),
    ] {
        let mut b = body("present");
        b["device_info"] = info.clone();
        let created = create(&host, "creator", &b);
        assert_eq!(created["device_info"], info);
    }
    assert_eq!(recordings_count(&host), 3);
}

#[test]
fn create_events_must_be_a_non_empty_array() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    for events in [
        json!([]),
        json!({}),
        json!({"0": event(0)}),
        json!("events"),
        json!(5),
        json!(true),
    ] {
        let mut b = body("x");
        b["events"] = events;
        assert_create_refused(&host, "creator", &b, EVENTS);
    }
    // Checked before the type checks.
    let b = json!({"title": 5, "duration": "x", "events": [], "device_info": {}, "tags": "t"});
    assert_create_refused(&host, "creator", &b, EVENTS);
    assert_eq!(recordings_count(&host), 0);
}

#[test]
fn create_wrong_types_give_exact_messages_in_order() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    let with = |pairs: &[(&str, Value)]| {
        let mut b = body("x");
        for (k, v) in pairs {
            b[*k] = v.clone();
        }
        b
    };
    let cases = [
        (with(&[("title", json!(5))]), "title must be a string"),
        (with(&[("title", json!(true))]), "title must be a string"),
        (with(&[("title", json!(["a"]))]), "title must be a string"),
        (
            with(&[("title", json!({"a": 1}))]),
            "title must be a string",
        ),
        (
            with(&[("duration", json!("1000"))]),
            "duration must be a number",
        ),
        (
            with(&[("duration", json!(true))]),
            "duration must be a number",
        ),
        (
            with(&[("duration", json!([1]))]),
            "duration must be a number",
        ),
        (
            with(&[("duration", json!({}))]),
            "duration must be a number",
        ),
        (with(&[("tags", json!("a,b"))]), "tags must be an array"),
        (with(&[("tags", json!({"a": 1}))]), "tags must be an array"),
        (with(&[("tags", json!(3))]), "tags must be an array"),
        (with(&[("tags", json!(true))]), "tags must be an array"),
        // Order: title, then duration, then tags.
        (
            with(&[
                ("title", json!(1)),
                ("duration", json!("d")),
                ("tags", json!("t")),
            ]),
            "title must be a string",
        ),
        (
            with(&[("duration", json!("d")), ("tags", json!("t"))]),
            "duration must be a number",
        ),
    ];
    for (b, msg) in cases {
        assert_create_refused(&host, "creator", &b, msg);
    }
    assert_eq!(recordings_count(&host), 0);
}

#[test]
fn create_status_must_be_draft_published_or_archived() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    for status in [
        json!("Draft"),
        json!("deleted"),
        json!("public"),
        json!(5),
        json!(["draft"]),
        json!(" draft"),
    ] {
        let mut b = body("x");
        b["status"] = status;
        assert_create_refused(&host, "creator", &b, "Invalid status");
    }
    assert_eq!(recordings_count(&host), 0);
    for status in ["draft", "published", "archived"] {
        let mut b = body(status);
        b["status"] = json!(status);
        assert_eq!(create(&host, "creator", &b)["status"], status);
    }
    assert_eq!(recordings_count(&host), 3);
}

#[test]
fn create_invalid_json_or_utf8_gives_400() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    assert_invalid_json(
        &host,
        "POST",
        "/svc/recordings",
        "creator",
        &[
            b"{not json",
            b"{\"title\": \"x\",}",
            b"{\"title\": \"x\"",
            b"\xff\xfe\xfd",
            b"{\"title\": \"\xc3\x28\", \"duration\": 1, \"events\": [1], \"device_info\": {}}",
        ],
    );
    assert_eq!(recordings_count(&host), 0);
    host.assert_serving();
}

#[test]
fn create_returns_201_with_the_created_recording_and_defaults() {
    let host = Host::in_process_svc();
    let uid = host.user(Some("Viewer"), "creator");
    let before = now_ms();
    let b = body("My First Recording");
    let r = host.post("/svc/recordings", Some("creator"), &b);
    let after = now_ms();
    let c = json_answer(&r, 201);
    assert_eq!(c["title"], "My First Recording");
    assert_eq!(c["slug"], "my-first-recording");
    assert_eq!(c["status"], "draft");
    assert_eq!(c["public"], false);
    assert_eq!(c["tags"], json!([]));
    assert_eq!(c["linked_video"], Value::Null);
    assert_eq!(c["original_recording_id"], Value::Null);
    assert_ne!(c["featured"], json!(true));
    assert_eq!(c["user_created"], json!(uid));
    assert_eq!(c["events"], b["events"]);
    assert_eq!(c["device_info"], b["device_info"]);
    assert_eq!(c["duration"].as_f64(), Some(1500.5));
    let created_at = ts_ms(&c["date_created"]);
    assert!(
        created_at >= before - 1000 && created_at <= after + 1000,
        "date_created {} not within the request",
        c["date_created"]
    );
    // What was returned is what was stored.
    let s = host.admin_item("recordings", &id_of(&c));
    let stored = [
        "title",
        "slug",
        "status",
        "public",
        "tags",
        "user_created",
        "events",
        "device_info",
    ];
    assert_same_fields(&s, &c, &stored, "stored");
    assert_eq!(recordings_count(&host), 1);
}

#[test]
fn create_keeps_given_optional_fields() {
    let host = Host::in_process_svc();
    host.user(Some("Model"), "creator");
    let video = host.admin_create("videos", &json!({"slug": "v", "title": "V"}))["id"].clone();
    let mut b = body("With extras");
    b["description"] = json!("a description");
    b["tags"] = json!(["slow", "wave"]);
    b["linked_video"] = video.clone();
    b["status"] = json!("published");
    let c = create(&host, "creator", &b);
    assert_eq!(c["description"], "a description");
    assert_eq!(c["tags"], json!(["slow", "wave"]));
    assert_eq!(c["linked_video"], video);
    assert_eq!(c["status"], "published");
    assert_eq!(c["public"], false);
}

#[test]
fn create_ignores_public_featured_owner_and_slug_in_the_body() {
    let host = Host::in_process_svc();
    let uid = host.user(Some("Viewer"), "creator");
    let other = host.user(Some("Viewer"), "someone-else");
    let src = id_of(&create(&host, "someone-else", &body("source")));
    let mut b = body("Sneaky");
    b["public"] = json!(true);
    b["featured"] = json!(true);
    b["user_created"] = json!(other);
    b["slug"] = json!("custom-slug");
    b["original_recording_id"] = json!(src);
    let c = create(&host, "creator", &b);
    assert_eq!(c["public"], false);
    assert_ne!(c["featured"], json!(true));
    assert_eq!(c["user_created"], json!(uid));
    assert_eq!(c["slug"], "sneaky");
    assert_eq!(c["original_recording_id"], Value::Null);
    let s = host.admin_item("recordings", &id_of(&c));
    assert_eq!(s["public"], false);
    assert_ne!(s["featured"], json!(true));
    assert_eq!(s["user_created"], json!(uid));
    assert_eq!(s["original_recording_id"], Value::Null);
}

#[test]
fn create_derives_the_slug_from_the_title() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "slugger");
    for (title, slug) in [
        ("  Hello, World!! 2 ", "hello-world-2"),
        ("Crème Brûlée", "cr-me-br-l-e"),
        ("ABC def", "abc-def"),
        ("---a---b---", "a-b"),
        ("snake_case_Title", "snake-case-title"),
        ("Tab\tand\nnewline", "tab-and-newline"),
        ("100% Pure", "100-pure"),
        ("\u{212A}elvin", "kelvin"),
        ("ΑΒΓ abc ΔΕ", "abc"),
        ("x", "x"),
    ] {
        let c = create(&host, "slugger", &body(title));
        assert_eq!(c["slug"], slug, "title {title:?}");
        assert_eq!(c["title"], title);
    }
}

#[test]
fn create_then_read_round_trips_through_get() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "rt");
    let c = create(&host, "rt", &body("Round Trip"));
    let r = host.get(&format!("/svc/recordings/{}", id_of(&c)), Some("rt"));
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), c);
}
