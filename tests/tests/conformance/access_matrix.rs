//! The access control matrix: every route of the platform (each `/svc`
//! route of docs/service-api.md, the `/items` routes of several collections,
//! `/server/*`) against every kind of caller, with the expected status, in one
//! table-driven test.
//!
//! Where the statuses come from:
//! * docs/service-api.md "Endpoints", "Authentication", "Errors": public
//!   routes, 401 `Unauthorized` (and `Authentication required` for duplicate),
//!   403 `Forbidden` on someone else's private recording, ownership checks.
//! * docs/decisions.md §3: a token that matches no active user is 401 on every
//!   route, public ones included (`{error: "Invalid token"}` under `/svc`,
//!   `INVALID_CREDENTIALS` on the host's routes).
//! * docs/decisions.md §5: Model and Viewer read their own recordings and
//!   public ones, create them, update and delete their own, and never write
//!   `featured`; read, create and delete their own video_likes; create and read
//!   platform_comments (those on collections they may read: `/comments` and
//!   `/items` alike; anyone sees the comments on what they may read, only
//!   members and admins comment); anonymous callers have no permissions on
//!   /items; admins may do everything; the ownership checks of the recording
//!   endpoints apply to admins too.
//! * docs/api.md: a non-admin asking /items for an item that is missing or not
//!   theirs gets 403; /server/extensions and /server/metrics are admin-only;
//!   a refusal by the platform's permissions inside a /svc endpoint is a 500
//!   with its message ("Behaviour the spec leaves open").
//!
//! The caller kinds: anonymous (no credentials), a bad token, a Viewer and a
//! Model who own nothing of the targets, the owner of the target recordings
//! and like (a Viewer), another user (authenticated, with no role and no
//! policy: no permissions at all), and the administrator.

use platform_tests::{encode, id_of, Host, ADMIN_TOKEN};
use serde_json::{json, Value};

const CALLERS: [&str; 7] = [
    "anonymous",
    "bad token",
    "viewer",
    "model",
    "owner",
    "other user",
    "admin",
];
const TOKENS: [Option<&str>; 7] = [
    None,
    Some("no-such-token-4711"),
    Some("am-viewer"),
    Some("am-model"),
    Some("am-owner"),
    Some("am-other"),
    Some(ADMIN_TOKEN),
];

/// One row: a route, how to call it, and the status of each caller kind
/// (in the order of [`CALLERS`]).
struct Row {
    method: &'static str,
    /// A path template: `{name}` is a fixture id; `{fresh_*}` is a new item
    /// created (as admin) for this one request.
    path: &'static str,
    /// A JSON body template (`{caller}` is replaced by the caller's index).
    body: Option<&'static str>,
    expect: [u16; 7],
}

const fn row(method: &'static str, path: &'static str, expect: [u16; 7]) -> Row {
    Row {
        method,
        path,
        body: None,
        expect,
    }
}

const fn with_body(
    method: &'static str,
    path: &'static str,
    body: &'static str,
    expect: [u16; 7],
) -> Row {
    Row {
        method,
        path,
        body: Some(body),
        expect,
    }
}

//                          anon  bad  viewer model owner other admin
const PUBLIC: [u16; 7] = [200, 401, 200, 200, 200, 200, 200];
const AUTH_ONLY: [u16; 7] = [401, 401, 200, 200, 200, 200, 200];
const MISSING_404: [u16; 7] = [404, 401, 404, 404, 404, 404, 404];
const ADMIN_ONLY: [u16; 7] = [403, 401, 403, 403, 403, 403, 200];
const ADMIN_ONLY_DELETE: [u16; 7] = [403, 401, 403, 403, 403, 403, 204];
// /svc routes that run under the caller's permissions: the user without
// any gets the platform's refusal, a 500.
const MEMBERS_SVC: [u16; 7] = [401, 401, 200, 200, 200, 500, 200];
const MEMBERS_SVC_CREATE: [u16; 7] = [401, 401, 201, 201, 201, 500, 201];
/// The recording's owner only: admins are not owners either.
const OWNER_SVC: [u16; 7] = [401, 401, 403, 403, 200, 500, 403];
// /items: members (by their policies) and the administrator.
const MEMBERS_ITEMS: [u16; 7] = [403, 401, 200, 200, 200, 403, 200];
const OWNER_ITEMS: [u16; 7] = [403, 401, 403, 403, 200, 403, 200];
const OWNER_ITEMS_DELETE: [u16; 7] = [403, 401, 403, 403, 204, 403, 204];
/// A missing item: 403 for non-admins (ids cannot be probed), 404 for admins.
const MISSING_ITEM: [u16; 7] = [403, 401, 403, 403, 403, 403, 404];

const RECORDING_BODY: &str = r#"{"title":"Matrix {caller}","duration":1200,
  "device_info":[{"name":"D","index":0,"capabilities":["Vibrate"]}],
  "events":[{"timestamp":0,"deviceIndex":0,"deviceName":"D","actuatorIndex":0,"actuatorType":"Vibrate","value":40}]}"#;

fn rows() -> Vec<Row> {
    vec![
        // ---- /server/*
        row("GET", "/server/ping", PUBLIC),
        row("GET", "/server/health", PUBLIC),
        row("GET", "/server/specs/oas", PUBLIC),
        row("GET", "/server/extensions", ADMIN_ONLY),
        row("GET", "/server/metrics", ADMIN_ONLY),
        // ---- sign-in: one's own record, for anyone signed in
        row("GET", "/users/me", AUTH_ONLY),
        // ---- /svc: public site data (docs/service-api.md auth rule 4)
        row("GET", "/svc/stats", PUBLIC),
        row("GET", "/svc/models", PUBLIC),
        row("GET", "/svc/models/am-model-slug", PUBLIC),
        row("GET", "/svc/models/no-such-model", MISSING_404),
        row("GET", "/svc/videos", PUBLIC),
        row("GET", "/svc/videos/am-video", PUBLIC),
        row("GET", "/svc/videos/no-such-video", MISSING_404),
        row("GET", "/svc/articles", PUBLIC),
        row("GET", "/svc/community-recordings", PUBLIC),
        row("GET", "/svc/gamification/leaderboard", PUBLIC),
        row("GET", "/svc/gamification/user/{owner}", PUBLIC),
        row("GET", "/svc/gamification/achievements", PUBLIC),
        // ---- /svc: video interaction. The like record is written under the
        // caller's permissions: a user without any is refused by the
        // platform, a 500 with its message (docs/api.md).
        row("POST", "/svc/videos/{video}/like", MEMBERS_SVC),
        row("GET", "/svc/videos/{video}/like-status", {
            [200, 401, 200, 200, 200, 500, 200]
        }),
        row("DELETE", "/svc/videos/{video}/like", MEMBERS_SVC),
        // Unliking again: 400 `Not liked`.
        row(
            "DELETE",
            "/svc/videos/{video}/like",
            [401, 401, 400, 400, 400, 500, 400],
        ),
        with_body(
            "POST",
            "/svc/videos/{video}/play",
            r#"{"session_id":"s-{caller}"}"#,
            PUBLIC,
        ),
        with_body(
            "PATCH",
            "/svc/videos/{video}/play/{video_play}",
            r#"{"duration_watched":10,"completed":false}"#,
            PUBLIC,
        ),
        row("GET", "/svc/analytics", AUTH_ONLY),
        // ---- /svc: recordings (auth; run under the caller's permissions)
        row("GET", "/svc/recordings", MEMBERS_SVC),
        with_body(
            "POST",
            "/svc/recordings",
            RECORDING_BODY,
            MEMBERS_SVC_CREATE,
        ),
        // Someone else's private recording: 403; a caller who cannot read
        // recordings at all: 404 (`any failure to read the record`).
        row(
            "GET",
            "/svc/recordings/{private_rec}",
            [401, 401, 403, 403, 200, 404, 403],
        ),
        row(
            "GET",
            "/svc/recordings/{public_rec}",
            [401, 401, 200, 200, 200, 404, 200],
        ),
        row(
            "GET",
            "/svc/recordings/00000000-0000-4000-8000-00000000dead",
            [401, 401, 404, 404, 404, 404, 404],
        ),
        with_body(
            "PATCH",
            "/svc/recordings/{private_rec}",
            r#"{"title":"Renamed by {caller}"}"#,
            OWNER_SVC,
        ),
        with_body(
            "PATCH",
            "/svc/recordings/{public_rec}",
            r#"{"description":"touched by {caller}"}"#,
            OWNER_SVC,
        ),
        row("DELETE", "/svc/recordings/{private_rec}", OWNER_SVC),
        row(
            "POST",
            "/svc/recordings/{public_rec}/duplicate",
            MEMBERS_SVC_CREATE,
        ),
        row(
            "POST",
            "/svc/recordings/{private_rec}/duplicate",
            [401, 401, 403, 403, 403, 403, 403],
        ),
        row("POST", "/svc/recordings/{public_rec}/play", PUBLIC),
        with_body(
            "PATCH",
            "/svc/recordings/{public_rec}/play/{recording_play}",
            r#"{"duration_played":100,"completed":false}"#,
            PUBLIC,
        ),
        row("GET", "/svc/no-such-route", MISSING_404),
        // ---- /items/recordings
        row("GET", "/items/recordings", MEMBERS_ITEMS),
        // Another member's private recording is not readable (docs/decisions.md
        // §5); a public one is.
        row("GET", "/items/recordings/{private_rec}", OWNER_ITEMS),
        row("GET", "/items/recordings/{public_rec}", MEMBERS_ITEMS),
        // `featured` is an administrator's act: a member may not write it,
        // not even on their own recording.
        with_body(
            "POST",
            "/items/recordings",
            r#"{"title":"Featured by {caller}","featured":true}"#,
            ADMIN_ONLY,
        ),
        with_body(
            "PATCH",
            "/items/recordings/{private_rec}",
            r#"{"featured":true}"#,
            ADMIN_ONLY,
        ),
        // Missing: 403 for non-admins (ids cannot be probed), 404 for admins.
        row(
            "GET",
            "/items/recordings/00000000-0000-4000-8000-00000000dead",
            MISSING_ITEM,
        ),
        with_body("POST", "/items/recordings", RECORDING_BODY, MEMBERS_ITEMS),
        with_body(
            "PATCH",
            "/items/recordings/{public_rec}",
            r#"{"description":"items {caller}"}"#,
            OWNER_ITEMS,
        ),
        row(
            "DELETE",
            "/items/recordings/{fresh_recording}",
            OWNER_ITEMS_DELETE,
        ),
        // ---- /items/video_likes: own rows only
        row("GET", "/items/video_likes", MEMBERS_ITEMS),
        row("GET", "/items/video_likes/{owner_like}", OWNER_ITEMS),
        with_body(
            "POST",
            "/items/video_likes",
            r#"{"video_id":"{video}"}"#,
            MEMBERS_ITEMS,
        ),
        with_body(
            "PATCH",
            "/items/video_likes/{owner_like}",
            r#"{"video_id":"{video2}"}"#,
            ADMIN_ONLY,
        ),
        row(
            "DELETE",
            "/items/video_likes/{fresh_like}",
            OWNER_ITEMS_DELETE,
        ),
        // ---- /items/platform_comments: members create and read them
        row("GET", "/items/platform_comments", MEMBERS_ITEMS),
        with_body(
            "POST",
            "/items/platform_comments",
            r#"{"collection":"recordings","item":"{public_rec}","comment":"hi from {caller}"}"#,
            MEMBERS_ITEMS,
        ),
        // ---- /comments: seen by whoever may read their collection (an
        // empty list for who may read none); made on items one may read
        row("GET", "/comments", PUBLIC),
        with_body(
            "POST",
            "/comments",
            r#"{"collection":"recordings","item":"{public_rec}","comment":"hi from {caller}"}"#,
            MEMBERS_ITEMS,
        ),
        with_body(
            "POST",
            "/comments",
            r#"{"collection":"recordings","item":"{private_rec}","comment":"hi from {caller}"}"#,
            OWNER_ITEMS,
        ),
        // ---- /users: the users collection's permissions (admin only)
        row("GET", "/users", ADMIN_ONLY),
        row("GET", "/users/{owner}", ADMIN_ONLY),
        // ---- /items/videos: not granted to members
        row("GET", "/items/videos", ADMIN_ONLY),
        row("GET", "/items/videos/{video}", ADMIN_ONLY),
        // ---- /items/platform_users: admin only
        row("GET", "/items/platform_users", ADMIN_ONLY),
        row("GET", "/items/platform_users/{owner}", ADMIN_ONLY),
        with_body(
            "POST",
            "/items/platform_users",
            r#"{"email":"matrix-{caller}@test.local","first_name":"M"}"#,
            ADMIN_ONLY,
        ),
        with_body(
            "PATCH",
            "/items/platform_users/{owner}",
            r#"{"first_name":"Changed {caller}"}"#,
            ADMIN_ONLY,
        ),
        row(
            "DELETE",
            "/items/platform_users/{fresh_user}",
            ADMIN_ONLY_DELETE,
        ),
        // ---- /items/platform_permissions: admin only
        row("GET", "/items/platform_permissions", ADMIN_ONLY),
        row(
            "GET",
            "/items/platform_permissions/{permission}",
            ADMIN_ONLY,
        ),
        with_body(
            "POST",
            "/items/platform_permissions",
            r#"{"policy":"{spare_policy}","collection":"videos","action":"read","fields":["*"]}"#,
            ADMIN_ONLY,
        ),
        with_body(
            "PATCH",
            "/items/platform_permissions/{spare_permission}",
            r#"{"fields":["id","slug"]}"#,
            ADMIN_ONLY,
        ),
        row(
            "DELETE",
            "/items/platform_permissions/{fresh_permission}",
            ADMIN_ONLY_DELETE,
        ),
        // ---- unknown collection: 403 for non-admins (like a forbidden
        // one: collections cannot be probed), 404 NOT_FOUND for admins.
        row("GET", "/items/no_such_collection", MISSING_ITEM),
    ]
}

/// The items the rows point at.
struct Fixture {
    ids: Vec<(&'static str, String)>,
}

impl Fixture {
    fn id(&self, name: &str) -> &str {
        self.ids
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no fixture {name}"))
    }
}

fn setup(host: &Host) -> Fixture {
    host.user(Some("Viewer"), "am-viewer");
    let model = host.user(Some("Model"), "am-model");
    let owner = host.user(Some("Viewer"), "am-owner");
    host.user(None, "am-other");
    let r = host.patch(
        &format!("/items/platform_users/{model}"),
        Some(ADMIN_TOKEN),
        &json!({"slug": "am-model-slug", "artist_name": "AM"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let video = id_of(&host.admin_create(
        "videos",
        &json!({"slug": "am-video", "title": "AM", "upload_date": "2024-01-01T00:00:00Z"}),
    ));
    let video2 = id_of(&host.admin_create(
        "videos",
        &json!({"slug": "am-video-2", "title": "AM 2", "upload_date": "2024-01-02T00:00:00Z"}),
    ));
    host.admin_create(
        "videos_models",
        &json!({"videos_id": video, "platform_users_id": model}),
    );
    host.admin_create(
        "articles",
        &json!({"slug": "am-article", "title": "A", "featured": true,
                "publish_date": "2024-01-01T00:00:00Z", "author": model}),
    );
    let create = |status: &str| {
        let body: Value =
            serde_json::from_str(&RECORDING_BODY.replace("{caller}", status)).expect("body");
        let r = host.post("/svc/recordings", Some("am-owner"), &body);
        assert_eq!(r.status, 201, "{}", r.body);
        id_of(&r.json())
    };
    let private_rec = create("private");
    let public_rec = create("public");
    let r = host.patch(
        &format!("/svc/recordings/{public_rec}"),
        Some("am-owner"),
        &json!({"status": "published", "public": true}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = host.post(&format!("/svc/videos/{video}/play"), None, &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    let video_play = r.json()["play_id"].as_str().expect("play_id").to_string();
    let r = host.post(
        &format!("/svc/recordings/{public_rec}/play"),
        None,
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let recording_play = r.json()["play_id"].as_str().expect("play_id").to_string();
    // The owner's like of video 2 (so the /svc like rows on video 1 start
    // from "not liked" for everyone).
    let r = host.post(
        &format!("/svc/videos/{video2}/like"),
        Some("am-owner"),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let filter = encode(&json!({"user_id": {"_eq": owner}}).to_string());
    let r = host.get(
        &format!("/items/video_likes?filter={filter}"),
        Some(ADMIN_TOKEN),
    );
    let owner_like = id_of(&r.json()["data"][0]);
    let r = host.get("/items/platform_permissions?limit=1", Some(ADMIN_TOKEN));
    let permission = id_of(&r.json()["data"][0]);
    let spare_policy = id_of(&host.admin_create(
        "platform_policies",
        &json!({"name": "Spare", "admin_access": false}),
    ));
    let spare_permission = id_of(&host.admin_create(
        "platform_permissions",
        &json!({"policy": spare_policy, "collection": "articles", "action": "read", "fields": ["*"]}),
    ));
    Fixture {
        ids: vec![
            ("owner", owner),
            ("video", video),
            ("video2", video2),
            ("private_rec", private_rec),
            ("public_rec", public_rec),
            ("video_play", video_play),
            ("recording_play", recording_play),
            ("owner_like", owner_like),
            ("permission", permission),
            ("spare_policy", spare_policy),
            ("spare_permission", spare_permission),
        ],
    }
}

/// A new item for a destructive request, created as admin.
fn fresh(host: &Host, fx: &Fixture, kind: &str, n: usize) -> String {
    let owner = fx.id("owner");
    match kind {
        "fresh_recording" => {
            let mut body: Value =
                serde_json::from_str(&RECORDING_BODY.replace("{caller}", "fresh")).expect("body");
            body["user_created"] = json!(owner);
            id_of(&host.admin_create("recordings", &body))
        }
        "fresh_like" => {
            let video = id_of(&host.admin_create(
                "videos",
                &json!({"slug": format!("fresh-{n}"), "title": "F", "upload_date": "2024-01-01T00:00:00Z"}),
            ));
            id_of(&host.admin_create(
                "video_likes",
                &json!({"video_id": video, "user_id": owner}),
            ))
        }
        "fresh_user" => id_of(&host.admin_create(
            "platform_users",
            &json!({"email": format!("fresh-{n}@test.local")}),
        )),
        "fresh_permission" => id_of(&host.admin_create(
            "platform_permissions",
            &json!({"policy": fx.id("spare_policy"), "collection": "videos", "action": "read", "fields": ["*"]}),
        )),
        other => panic!("unknown fresh item {other}"),
    }
}

fn fill(template: &str, host: &Host, fx: &Fixture, caller: usize, n: usize) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let len = after
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(after.len());
        if len == 0 || !after[len..].starts_with('}') {
            // Not a placeholder: a JSON brace.
            out.push('{');
            rest = after;
            continue;
        }
        let name = &after[..len];
        if name == "caller" {
            out.push_str(&caller.to_string());
        } else if name.starts_with("fresh_") {
            out.push_str(&fresh(host, fx, name, n));
        } else {
            out.push_str(fx.id(name));
        }
        rest = &after[len + 1..];
    }
    out.push_str(rest);
    out
}

/// What an answer's body must say besides its status.
fn check_shape(path: &str, caller: usize, status: u16, body: &str) -> Result<(), String> {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let svc = path.starts_with("/svc/");
    let items_code = v["errors"][0]["extensions"]["code"].as_str();
    match (svc, status) {
        (true, 401) => {
            let want = if caller == 1 {
                "Invalid token"
            } else if path.ends_with("/duplicate") {
                "Authentication required"
            } else {
                "Unauthorized"
            };
            if v["error"] != want {
                return Err(format!("expected error {want:?}"));
            }
        }
        (true, 403) => {
            let ok = ["Forbidden", "Recording is not publicly shared"];
            if !v["error"].as_str().is_some_and(|e| ok.contains(&e)) {
                return Err("expected error Forbidden".into());
            }
        }
        (true, s) if s >= 400 && !v["error"].is_string() => {
            return Err("expected {error}".into());
        }
        (false, 401) if items_code != Some("INVALID_CREDENTIALS") => {
            return Err("expected code INVALID_CREDENTIALS".into())
        }
        (false, 403) if items_code != Some("FORBIDDEN") => {
            return Err("expected code FORBIDDEN".into())
        }
        (false, 404) if items_code != Some("NOT_FOUND") => {
            return Err("expected code NOT_FOUND".into())
        }
        (false, 400) if items_code != Some("INVALID_QUERY") => {
            return Err("expected code INVALID_QUERY".into())
        }
        _ => {}
    }
    Ok(())
}

#[test]
fn every_route_against_every_caller_kind() {
    let host = Host::in_process_svc();
    let fx = setup(&host);
    let rows = rows();
    let mut failures = Vec::new();
    let mut cells = 0;
    let mut n = 0;
    for row in &rows {
        for (c, token) in TOKENS.iter().enumerate() {
            n += 1;
            let path = fill(row.path, &host, &fx, c, n);
            let body = row.body.map(|b| fill(b, &host, &fx, c, n));
            let r = host.request(
                row.method,
                &path,
                *token,
                body.as_deref().map(str::as_bytes),
            );
            cells += 1;
            let want = row.expect[c];
            if r.status != want {
                failures.push(format!(
                    "{} {} as {}: expected {want}, got {} {}",
                    row.method,
                    row.path,
                    CALLERS[c],
                    r.status,
                    r.body.chars().take(200).collect::<String>()
                ));
            } else if let Err(why) = check_shape(&path, c, r.status, &r.body) {
                failures.push(format!(
                    "{} {} as {}: {want} but {why}: {}",
                    row.method,
                    row.path,
                    CALLERS[c],
                    r.body.chars().take(200).collect::<String>()
                ));
            }
        }
    }
    // What the allowed writes changed, and only that.
    let read = |collection: &str, id: &str| {
        host.get(&format!("/items/{collection}/{id}"), Some(ADMIN_TOKEN))
            .json()["data"]
            .clone()
    };
    let private = read("recordings", fx.id("private_rec"));
    let public = read("recordings", fx.id("public_rec"));
    let owner = read("platform_users", fx.id("owner"));
    let state = [
        (&private["title"], json!("Renamed by 4")),
        (&private["status"], json!("archived")),
        (&public["status"], json!("published")),
        (&public["description"], json!("items 6")),
        (&owner["first_name"], json!("Changed 6")),
    ];
    for (got, want) in state {
        if *got != want {
            failures.push(format!("after the matrix: expected {want}, stored {got}"));
        }
    }
    // Featuring: only the administrator's attempts were stored.
    if private["featured"] != json!(true) {
        failures.push(format!(
            "the administrator's featuring was not stored: {private}"
        ));
    }
    let featured_titles: Vec<String> = host
        .get(
            &format!(
                "/items/recordings?limit=-1&fields=title&filter={}",
                encode(&json!({"title": {"_starts_with": "Featured by"}}).to_string())
            ),
            Some(ADMIN_TOKEN),
        )
        .json()["data"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r["title"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if featured_titles != ["Featured by 6"] {
        failures.push(format!(
            "recordings created with `featured`: {featured_titles:?}"
        ));
    }
    println!(
        "access matrix: {} routes x {} caller kinds = {cells} cells, {} failing; \
         {} answers scanned for secrets",
        rows.len(),
        CALLERS.len(),
        failures.len(),
        platform_tests::SCANNED_RESPONSES.load(std::sync::atomic::Ordering::Relaxed)
    );
    assert!(
        failures.is_empty(),
        "{} of {cells} cells differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
