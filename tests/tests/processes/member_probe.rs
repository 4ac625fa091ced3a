//! What a hostile member (or an anonymous client) tried against the
//! platform and must not get: other users' data through their own record,
//! unbounded relational reads, password hashing on demand, large answers
//! and bodies held in memory, which emails exist, oversized profiles,
//! sign-in by a cross-site form, emails that differ only by case, and
//! which items exist through references. Every test runs on the suite's
//! backend (`TEST_DB`).

use std::time::Duration;

use platform_tests::raw::{bearer, chunked, head, open, raw};
use platform_tests::{encode, id_of, Host, HostOptions, ADMIN_TOKEN};
use serde_json::{json, Value};

/// Two models on one video, the first signed in by token `model-a`: the
/// second model's email must stay out of the first's answers.
struct CoModels {
    host: Host,
    other_email: String,
    other: String,
}

fn co_models() -> CoModels {
    let host = Host::start(HostOptions::svc());
    let a = host.user(Some("Model"), "model-a");
    let other = host.user(Some("Model"), "model-b");
    let video = id_of(&host.admin_video("shared", Some("2026-01-01T00:00:00.000Z")));
    host.link_model(&video, &a);
    host.link_model(&video, &other);
    CoModels {
        host,
        other_email: "model-b@test.local".into(),
        other,
    }
}

// ------------------------------------------------- 1. /users/me's relations

#[test]
fn one_s_own_record_reads_its_relations_under_one_s_own_permissions() {
    let CoModels {
        host, other_email, ..
    } = co_models();
    // The caller may not read users through the items API...
    let r = host.get("/items/platform_users", Some("model-a"));
    assert_eq!(r.status, 403, "{}", r.body);
    // ...so their own record is no way to reach another user's.
    let path = "/users/me?fields=videos.videos_id.models.platform_users_id.email";
    let r = host.get(path, Some("model-a"));
    assert!(
        !r.body.contains(&other_email),
        "{path} answered another user's email: {}",
        r.body
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let r = host.patch(
        &format!("/users/me?{}", &path["/users/me?".len()..]),
        Some("model-a"),
        &json!({"first_name": "A"}),
    );
    assert!(!r.body.contains(&other_email), "{}", r.body);
    // One's own fields, and one's own role's name, stay readable.
    let r = host.get("/users/me?fields=*,role.name", Some("model-a"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["data"]["role"],
        json!({"name": "Model"}),
        "{}",
        r.body
    );
    assert_eq!(r.json()["data"]["email"], "model-a@test.local");
}

#[test]
fn an_avatar_pointed_at_someone_s_file_does_not_open_its_uploader() {
    let CoModels {
        host,
        other_email,
        other,
    } = co_models();
    let file = host.admin_create(
        "platform_files",
        &json!({"filename_download": "x.png", "uploaded_by": other}),
    );
    let viewer = host.user(Some("Viewer"), "viewer-v");
    assert!(!viewer.is_empty());
    let r = host.patch(
        "/users/me?fields=avatar.uploaded_by.*",
        Some("viewer-v"),
        &json!({"avatar": id_of(&file)}),
    );
    assert!(!r.body.contains(&other_email), "{}", r.body);
    let r = host.get("/users/me?fields=avatar.uploaded_by.*", Some("viewer-v"));
    assert!(!r.body.contains(&other_email), "{}", r.body);
    // Members read only the files they uploaded: someone else's reads as
    // nothing at all.
    assert!(
        r.status != 200 || r.json()["data"]["avatar"].is_null(),
        "{}",
        r.body
    );
    // A filter through references is read as the caller too: it cannot
    // tell whether the uploader's email is this one.
    let filter = nested_filter(
        &["avatar", "uploaded_by", "email"],
        json!({"_eq": other_email}),
    );
    let r = host.get(
        &format!("/users/me?fields=id&filter={}", encode(&filter.to_string())),
        Some("viewer-v"),
    );
    assert_eq!(r.status, 403, "{}", r.body);
}

/// `{a: {b: {c: condition}}}` for the path `a.b.c`.
fn nested_filter(path: &[&str], condition: Value) -> Value {
    path.iter()
        .rev()
        .fold(condition, |inner, field| json!({ *field: inner }))
}

// ---------------------------------------------- 2. bounded relational reads

/// `videos.videos_id.models.platform_users_id` repeated: each pass is four
/// levels through aliases.
fn alias_path(passes: usize, last: &str) -> String {
    let mut path = String::new();
    for _ in 0..passes {
        path.push_str("videos.videos_id.models.platform_users_id.");
    }
    path.push_str(last);
    path
}

#[test]
fn relational_fields_deeper_than_the_bound_are_refused_before_any_read() {
    let CoModels { host, .. } = co_models();
    // 2 passes + `id`: 9 levels, within the default 10.
    let within = alias_path(2, "id");
    let r = host.get(
        &format!("/items/platform_users?fields={within}"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // 11 levels.
    let deeper = alias_path(2, "videos.videos_id.id");
    let r = host.get(
        &format!("/items/platform_users?fields={deeper}"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.error_code(), "INVALID_QUERY");
    assert!(
        r.error_message().contains("Max relational depth exceeded"),
        "{}",
        r.body
    );
    // The same through a filter (avatar.uploaded_by, six times, then the
    // email: 13 levels), and through /users/me.
    let mut path = ["avatar", "uploaded_by"].repeat(6);
    path.push("email");
    let filter = nested_filter(&path, json!({"_eq": "x@test.local"}));
    let r = host.get(
        &format!(
            "/items/platform_users?filter={}",
            encode(&filter.to_string())
        ),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.error_code(), "INVALID_QUERY");
    let r = host.get(&format!("/users/me?fields={deeper}"), Some("model-a"));
    assert_eq!(r.status, 400, "{}", r.body);
}

#[test]
fn an_answer_holding_more_related_records_than_the_bound_is_refused() {
    let host = Host::start_svc_with(&[("MAX_RELATED_RECORDS", "40")]);
    let models: Vec<String> = (0..6)
        .map(|i| host.user(Some("Model"), &format!("m{i}")))
        .collect();
    for v in 0..6 {
        let video = id_of(&host.admin_video(&format!("v{v}"), None));
        for model in &models {
            host.link_model(&video, model);
        }
    }
    // 6 videos x 6 links: 36 related records.
    let r = host.get("/items/videos?fields=id,models.id", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["data"][0]["models"].as_array().map(Vec::len),
        Some(6)
    );
    // With the users inside the links: 72.
    let r = host.get(
        "/items/videos?fields=id,models.platform_users_id.id",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.error_code(), "INVALID_QUERY");
    assert!(
        r.error_message().contains("more than 40 related records"),
        "{}",
        r.body
    );
    // A user's videos, each with its models, each with their videos: a
    // fan-out refused at the level that passes the bound.
    let path = alias_path(1, "videos.videos_id.id");
    let r = host.get(
        &format!("/items/platform_users?fields={path}"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    host.assert_serving();
}

#[test]
fn a_large_record_named_by_many_parents_is_refused_past_the_byte_bound() {
    let host = Host::start_svc_with(&[("MAX_RESPONSE_BYTES", "33554432")]);
    host.user(Some("Viewer"), "viewer-r");
    // About 4 MiB of events, named by 24 of the member's own recordings:
    // an answer of about 96 MiB from 4 MiB of data.
    let r = host.post(
        "/svc/recordings",
        Some("viewer-r"),
        &large_recording("Large", 4 * 1024),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let large = id_of(&r.json());
    for i in 0..24 {
        let r = host.post(
            "/items/recordings",
            Some("viewer-r"),
            &json!({"title": format!("Copy {i}"), "original_recording_id": large}),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
    std::thread::sleep(Duration::from_millis(2500));
    let before = host.rss_kib().expect("the host's memory");
    // The high-water mark from now on.
    std::fs::write(format!("/proc/{}/clear_refs", host.pid()), "5").expect("clear_refs");
    let copies = "/items/recordings?fields=id,original_recording_id.*&filter[original_recording_id][_nnull]=true";
    let r = host.get(&format!("{copies}&limit=-1"), Some("viewer-r"));
    assert_eq!(r.status, 400, "{}", &r.body[..r.body.len().min(300)]);
    assert_eq!(r.error_code(), "INVALID_QUERY");
    assert!(
        r.error_message().contains("larger than 33554432 bytes"),
        "{}",
        r.body
    );
    // Refused before the copies were made: the host's peak grew by much
    // less than the answer would have held.
    let after = host.peak_rss_kib().expect("the host's memory");
    assert!(
        after.saturating_sub(before) < 80 * 1024,
        "peak resident memory grew from {before} KiB to {after} KiB"
    );
    // Under the bound the same read answers, every copy whole.
    let r = host.get(&format!("{copies}&limit=4"), Some("viewer-r"));
    assert_eq!(r.status, 200, "{}", &r.body[..r.body.len().min(300)]);
    let data = r.json()["data"].clone();
    assert_eq!(data.as_array().map(Vec::len), Some(4));
    assert_eq!(data[3]["original_recording_id"]["id"], json!(large));
    host.assert_serving();
}

// ------------------------------------------------ 4. hashing on demand

#[test]
fn a_new_password_is_hashed_only_once_the_rest_of_the_change_is_valid() {
    let host = Host::start(HostOptions::svc());
    host.user(Some("Viewer"), "viewer-h");
    let before = host.metric("password_hashes");
    let too_long = "x".repeat(300);
    for body in [
        // Fields the payload checks after `password`, in the order of
        // their names.
        json!({"password": "a new password", "slug": too_long}),
        json!({"password": "a new password", "zzz": 1}),
        json!({"password": "a new password", "email": "someone-else@test.local"}),
    ] {
        let r = host.patch("/users/me", Some("viewer-h"), &body);
        assert!(r.status >= 400, "{body}: {} {}", r.status, r.body);
    }
    assert_eq!(
        host.metric("password_hashes"),
        before,
        "a refused change hashed its password"
    );
    let r = host.patch(
        "/users/me",
        Some("viewer-h"),
        &json!({"password": "a new password", "first_name": "H"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(host.metric("password_hashes"), before + 1);
}

// ------------------------------------------- 5. large lists of recordings

/// A recording body of about `kib` KiB of events.
fn large_recording(title: &str, kib: usize) -> Value {
    let event = json!({"timestamp": 0, "deviceIndex": 0, "deviceName": "D",
                       "actuatorIndex": 0, "actuatorType": "Vibrate", "value": 0.5});
    let per_event = event.to_string().len() + 1;
    let events: Vec<Value> = (0..kib * 1024 / per_event)
        .map(|i| {
            let mut e = event.clone();
            e["timestamp"] = json!(i);
            e
        })
        .collect();
    json!({"title": title, "duration": events.len(),
           "device_info": [{"name": "D", "index": 0, "capabilities": ["Vibrate"]}],
           "events": events})
}

#[test]
fn a_page_of_large_recordings_costs_about_its_own_size_in_memory() {
    let host = Host::start(HostOptions::svc());
    host.user(Some("Viewer"), "viewer-l");
    for i in 0..8 {
        let r = host.post(
            "/svc/recordings",
            Some("viewer-l"),
            &large_recording(&format!("Large {i}"), 3 * 1024),
        );
        assert_eq!(r.status, 201, "{}", &r.body[..r.body.len().min(300)]);
    }
    std::thread::sleep(Duration::from_millis(2500));
    let baseline = host.rss_kib().expect("rss");
    // The high-water mark from now on.
    std::fs::write(format!("/proc/{}/clear_refs", host.pid()), "5").expect("clear_refs");
    let r = host.get("/svc/recordings?limit=1000", Some("viewer-l"));
    assert_eq!(r.status, 200);
    let answer_kib = (r.body.len() / 1024) as u64;
    let peak = host.peak_rss_kib().expect("peak");
    let extra = peak.saturating_sub(baseline);
    assert!(answer_kib > 20 * 1024, "answer of {answer_kib} KiB");
    assert!(
        extra <= 4 * answer_kib,
        "answering {answer_kib} KiB raised the host's memory by {extra} KiB"
    );
}

// ------------------------------------------ 6. bodies before authentication

#[test]
fn an_anonymous_body_past_its_bound_is_refused_before_it_is_read() {
    let host = Host::start(HostOptions::svc());
    let declared = head(
        "POST",
        "/items/recordings",
        &["Content-Type: application/json", "Content-Length: 16777216"],
    );
    let r = raw(&host, &declared);
    assert_eq!(r.status, Some(413), "{r:?}");
    // Not declared: cut off at the bound.
    let mut request = head(
        "POST",
        "/svc/recordings",
        &[
            "Content-Type: application/json",
            "Transfer-Encoding: chunked",
        ],
    );
    request.extend(chunked(&vec![b' '; 2 * 1024 * 1024]));
    let r = raw(&host, &request);
    assert_eq!(r.status, Some(413), "{r:?}");
    // A wrong token is no better than none.
    let declared = head(
        "POST",
        "/items/recordings",
        &[
            "Content-Type: application/json",
            "Content-Length: 16777216",
            &bearer("not-a-token"),
        ],
    );
    assert_eq!(raw(&host, &declared).status, Some(413));
    // A member's large body is read as before.
    host.user(Some("Viewer"), "viewer-b");
    let r = host.post(
        "/svc/recordings",
        Some("viewer-b"),
        &large_recording("Big", 3 * 1024),
    );
    assert_eq!(r.status, 201, "{}", &r.body[..r.body.len().min(300)]);
}

/// An anonymous `POST /items/recordings` of `{}`.
fn small_anonymous_post() -> Vec<u8> {
    let mut request = head(
        "POST",
        "/items/recordings",
        &["Content-Type: application/json", "Content-Length: 2"],
    );
    request.extend_from_slice(b"{}");
    request
}

#[test]
fn anonymous_bodies_together_are_held_to_a_budget() {
    let host = Host::start_svc_with(&[
        ("ANONYMOUS_MAX_PAYLOAD_SIZE", "1048576"),
        ("ANONYMOUS_PAYLOAD_BUDGET", "2097152"),
    ]);
    let slow = || {
        open(
            &host,
            &head(
                "POST",
                "/items/recordings",
                &["Content-Type: application/json", "Content-Length: 1048576"],
            ),
        )
    };
    let held = [slow(), slow()];
    std::thread::sleep(Duration::from_millis(500));
    let third = raw(&host, &small_anonymous_post());
    assert_eq!(third.status, Some(503), "{third:?}");
    assert!(
        third.head.to_ascii_lowercase().contains("retry-after: 1"),
        "{third:?}"
    );
    // Members are not held to it.
    host.user(Some("Viewer"), "viewer-c");
    let r = host.get("/users/me", Some("viewer-c"));
    assert_eq!(r.status, 200);
    let r = host.post(
        "/svc/recordings",
        Some("viewer-c"),
        &large_recording("Ok", 64),
    );
    assert_eq!(r.status, 201, "{}", &r.body[..r.body.len().min(300)]);
    drop(held);
    std::thread::sleep(Duration::from_millis(500));
    let r = raw(&host, &small_anonymous_post());
    assert_ne!(r.status, Some(503), "{r:?}");
}

// ---------------------------------------------- 7. email enumeration

#[test]
fn changing_one_s_email_tells_nothing_of_other_accounts() {
    let host = Host::start(HostOptions::svc());
    host.user(Some("Viewer"), "viewer-e");
    host.user(Some("Viewer"), "taken");
    let taken = host.patch(
        "/users/me",
        Some("viewer-e"),
        &json!({"email": "taken@test.local"}),
    );
    let free = host.patch(
        "/users/me",
        Some("viewer-e"),
        &json!({"email": "free@test.local"}),
    );
    assert_eq!((taken.status, &taken.body), (free.status, &free.body));
    assert_eq!(taken.status, 403, "{}", taken.body);
    // One's own address, however cased, is no change at all.
    let same = host.patch(
        "/users/me",
        Some("viewer-e"),
        &json!({"email": "Viewer-E@Test.Local", "first_name": "E"}),
    );
    assert_eq!(same.status, 200, "{}", same.body);
    assert_eq!(same.json()["data"]["email"], "viewer-e@test.local");
}

// ------------------------------------------------ 8. profile text lengths

#[test]
fn profile_text_has_a_length_limit_at_registration_and_on_one_s_profile() {
    let host = Host::start_svc_with(&[("PUBLIC_REGISTRATION", "true")]);
    let long = "n".repeat(256);
    let r = host.post(
        "/users/register",
        None,
        &json!({"email": "long@test.local", "password": "long enough", "first_name": long}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error_message().contains("at most 255"), "{}", r.body);
    assert_eq!(
        host.admin_count(
            "platform_users",
            Some(&json!({"email": {"_eq": "long@test.local"}}))
        ),
        0
    );
    host.user(Some("Viewer"), "viewer-p");
    let r = host.patch("/users/me", Some("viewer-p"), &json!({"last_name": long}));
    assert_eq!(r.status, 400, "{}", r.body);
    let r = host.patch(
        "/users/me",
        Some("viewer-p"),
        &json!({"description": "d".repeat(10_001)}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let r = host.patch(
        "/users/me",
        Some("viewer-p"),
        &json!({"last_name": "n".repeat(255), "description": "d".repeat(10_000)}),
    );
    assert_eq!(r.status, 200, "{}", &r.body[..r.body.len().min(200)]);
}

// ---------------------------------------- 9. sign-in by a cross-site form

#[test]
fn sign_in_and_registration_take_json_only() {
    let host = Host::start_svc_with(&[("PUBLIC_REGISTRATION", "true")]);
    host.admin_create(
        "platform_users",
        &json!({"email": "form@test.local", "password": "form password"}),
    );
    let body = json!({"email": "form@test.local", "password": "form password", "mode": "session"})
        .to_string();
    let r = host.request_with(
        "POST",
        "/auth/login",
        &[("Content-Type", "text/plain")],
        Some(body.as_bytes()),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.set_cookie("directus_session_token").is_none());
    let r = host.request_with(
        "POST",
        "/users/register",
        &[("Content-Type", "text/plain;charset=UTF-8")],
        Some(br#"{"email": "csrf@test.local", "password": "whatever"}"#),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let r = host.request_with(
        "POST",
        "/auth/login",
        &[("Content-Type", "application/json")],
        Some(body.as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

// ---------------------------------------------- 10. emails and their case

#[test]
fn emails_are_one_account_whatever_their_case() {
    let host = Host::start_svc_with(&[("PUBLIC_REGISTRATION", "true")]);
    let created = host.admin_create(
        "platform_users",
        &json!({"email": " Aria@Demo.Local ", "password": "aria password"}),
    );
    assert_eq!(created["email"], "aria@demo.local");
    let r = host.post(
        "/items/platform_users",
        Some(ADMIN_TOKEN),
        &json!({"email": "ARIA@demo.local"}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.error_code(), "RECORD_NOT_UNIQUE");
    // Registration takes nobody's address, in any case.
    let users_before = host.admin_count("platform_users", None);
    let r = host.post(
        "/users/register",
        None,
        &json!({"email": "aria@DEMO.local", "password": "captured"}),
    );
    assert_eq!(r.status, 204);
    let aria = json!({"email": {"_eq": "aria@demo.local"}});
    assert_eq!(host.admin_count("platform_users", Some(&aria)), 1);
    assert_eq!(host.admin_count("platform_users", None), users_before);
    let r = host.post(
        "/auth/login",
        None,
        &json!({"email": "ARIA@Demo.local", "password": "aria password"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn emails_stored_before_are_brought_to_lower_case_once() {
    let host = Host::start(HostOptions::svc());
    let user = id_of(&host.admin_create(
        "platform_users",
        &json!({"email": "later@test.local", "password": "later password"}),
    ));
    let clash = id_of(&host.admin_create("platform_users", &json!({"email": "twin@test.local"})));
    // As an older host left them: mixed case, one of them a twin.
    host.sql(&format!(
        "UPDATE platform_users SET email = 'Later@Test.LOCAL' WHERE id = '{user}'; \
         INSERT INTO platform_users (id, email, status) VALUES ('twin-2', 'Twin@Test.Local', 'active'); \
         DELETE FROM platform_migrations WHERE id = '0007_emails_lower_case'"
    ));
    let dir = host.stop();
    let host = Host::start(HostOptions {
        data_dir: Some(dir),
        ..HostOptions::svc()
    });
    assert_eq!(
        host.admin_item("platform_users", &user)["email"],
        "later@test.local"
    );
    assert_eq!(
        host.admin_item("platform_users", &clash)["email"],
        "twin@test.local"
    );
    assert_eq!(
        host.admin_item("platform_users", "twin-2")["email"],
        "Twin@Test.Local"
    );
    assert!(
        host.log().contains("Twin@Test.Local"),
        "the clash is not logged"
    );
    let r = host.post(
        "/auth/login",
        None,
        &json!({"email": "LATER@test.local", "password": "later password"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

// --------------------------------------- 11. existence through references

#[test]
fn a_reference_to_another_member_s_private_item_is_refused_as_a_missing_one() {
    let host = Host::start(HostOptions::svc());
    host.user(Some("Viewer"), "owner");
    host.user(Some("Viewer"), "prober");
    let private = host.post(
        "/items/recordings",
        Some("owner"),
        &json!({"title": "Mine", "public": false}),
    );
    assert_eq!(private.status, 200, "{}", private.body);
    let private = id_of(&private.json()["data"]);
    let public = host.post(
        "/items/recordings",
        Some("owner"),
        &json!({"title": "Shared", "public": true}),
    );
    let public = id_of(&public.json()["data"]);
    let missing = "00000000-0000-4000-8000-000000000000";
    let answer = |target: &str| {
        let r = host.post(
            "/items/recordings",
            Some("prober"),
            &json!({"title": "Copy", "original_recording_id": target}),
        );
        (r.status, r.body.replace(target, "<id>"))
    };
    let (to_private, to_missing) = (answer(&private), answer(missing));
    assert_eq!(to_private, to_missing);
    assert_eq!(to_private.0, 400, "{}", to_private.1);
    assert_eq!(answer(&public).0, 200);
}
