//! Every `/svc` route whose storage fails answers its documented fallback
//! (docs/service-api.md "Errors"), one host for the whole table: each case
//! renames the table the route needs, checks the answer, renames it back
//! and checks that the same request now succeeds, so the failure was the
//! broken table's and nothing else's.

use platform_tests::{assert_error, id_of, rec_body, str_of, Host, HostOptions, Resp};
use serde_json::{json, Value};

const PAST: &str = "2001-01-01T00:00:00.000Z";

/// One route with a broken table.
struct Case {
    method: &'static str,
    path: String,
    token: Option<&'static str>,
    body: Option<Value>,
    /// The table renamed away while the route is called.
    table: &'static str,
    status: u16,
    error: &'static str,
    /// The answer also carries `details`, the failure's text (the create
    /// shape).
    details: bool,
}

fn case(method: &'static str, path: impl Into<String>, table: &'static str) -> Case {
    Case {
        method,
        path: path.into(),
        token: None,
        body: None,
        table,
        status: 500,
        error: "",
        details: false,
    }
}

impl Case {
    fn by(mut self, token: &'static str) -> Self {
        self.token = Some(token);
        self
    }

    fn body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    fn answers(mut self, status: u16, error: &'static str) -> Self {
        self.status = status;
        self.error = error;
        self
    }

    fn with_details(mut self) -> Self {
        self.details = true;
        self
    }

    fn check(&self, r: &Resp, what: &str) {
        if !self.details {
            return assert_error(r, self.status, self.error);
        }
        assert_eq!(r.status, self.status, "{what}: {}", r.body);
        let body = r.json();
        assert_eq!(body["error"], self.error, "{what}: {}", r.body);
        assert!(
            body["details"].is_string(),
            "{what}: no details: {}",
            r.body
        );
        assert_eq!(
            body.as_object().map(|o| o.len()),
            Some(2),
            "{what}: {}",
            r.body
        );
    }

    fn send(&self, host: &Host) -> Resp {
        let body = self.body.as_ref().map(|b| b.to_string().into_bytes());
        host.request(self.method, &self.path, self.token, body.as_deref())
    }
}

fn created(r: Resp, what: &str) -> Value {
    assert!(
        r.status == 200 || r.status == 201,
        "{what}: {} {}",
        r.status,
        r.body
    );
    r.json()
}

#[test]
fn every_route_answers_its_fallback_when_its_storage_fails() {
    let host = Host::start(HostOptions::svc().env_var("CACHE_ENABLED", "false"));

    // A model with a published video, an article, a viewer with a
    // published public recording, a video play and a recording play.
    let model = host.user_with(
        Some("Model"),
        "model",
        &json!({"slug": "luna", "artist_name": "Luna"}),
    );
    host.user(Some("Viewer"), "viewer");
    let video = id_of(&host.admin_video("v", Some(PAST)));
    host.link_model(&video, &model);
    host.admin_create(
        "articles",
        &json!({"slug": "a", "title": "A", "excerpt": "e", "content": "c", "publish_date": PAST}),
    );
    let recording = id_of(&created(
        host.post(
            "/svc/recordings",
            Some("viewer"),
            &rec_body("Mine", Some("published")),
        ),
        "create a recording",
    ));
    created(
        host.patch(
            &format!("/svc/recordings/{recording}"),
            Some("viewer"),
            &json!({"public": true}),
        ),
        "share it",
    );
    let video_play = str_of(
        &created(
            host.post(&format!("/svc/videos/{video}/play"), None, &json!({})),
            "play the video",
        )["play_id"],
    );
    let recording_play = str_of(
        &created(
            host.post(
                &format!("/svc/recordings/{recording}/play"),
                None,
                &json!({}),
            ),
            "play the recording",
        )["play_id"],
    );

    let rec = |rest: &str| format!("/svc/recordings/{recording}{rest}");
    let cases = [
        case("GET", "/svc/stats", "videos").answers(500, "Failed to fetch stats"),
        case("GET", "/svc/models", "platform_users").answers(500, "Failed to fetch models"),
        case("GET", "/svc/models/luna", "platform_users").answers(500, "Failed to fetch model"),
        case("GET", "/svc/videos", "videos").answers(500, "Failed to fetch videos"),
        case("GET", "/svc/videos/v", "videos").answers(500, "Failed to fetch video"),
        case("GET", "/svc/articles", "articles").answers(500, "Failed to fetch articles"),
        case("POST", format!("/svc/videos/{video}/like"), "video_likes")
            .by("viewer")
            .body(json!({}))
            .answers(500, "Failed to like video"),
        case(
            "GET",
            format!("/svc/videos/{video}/like-status"),
            "video_likes",
        )
        .by("viewer")
        .answers(500, "Failed to get like status"),
        case("DELETE", format!("/svc/videos/{video}/like"), "video_likes")
            .by("viewer")
            .answers(500, "Failed to unlike video"),
        case("POST", format!("/svc/videos/{video}/play"), "video_plays")
            .body(json!({"session_id": "s"}))
            .answers(500, "Failed to record play"),
        case(
            "PATCH",
            format!("/svc/videos/{video}/play/{video_play}"),
            "video_plays",
        )
        .body(json!({"duration_watched": 5, "completed": true}))
        .answers(500, "Failed to update play"),
        case("GET", "/svc/analytics", "videos")
            .by("model")
            .answers(500, "Failed to get analytics"),
        case("GET", "/svc/recordings", "recordings")
            .by("viewer")
            .answers(500, "Failed to fetch recordings"),
        // A single read that fails is the missing recording's answer.
        case("GET", rec(""), "recordings")
            .by("viewer")
            .answers(404, "Recording not found"),
        case("POST", "/svc/recordings", "recordings")
            .by("viewer")
            .body(rec_body("Another", None))
            .answers(500, "Failed to create recording")
            .with_details(),
        case("PATCH", rec(""), "recordings")
            .by("viewer")
            .body(json!({"title": "Renamed"}))
            .answers(500, "Failed to update recording"),
        case("POST", rec("/duplicate"), "recordings")
            .by("model")
            .answers(500, "Failed to duplicate recording"),
        case("GET", "/svc/community-recordings", "recordings")
            .answers(500, "Failed to list community recordings"),
        case("POST", rec("/play"), "recording_plays")
            .body(json!({}))
            .answers(500, "Failed to record play"),
        case(
            "PATCH",
            rec(&format!("/play/{recording_play}")),
            "recording_plays",
        )
        .body(json!({"completed": true}))
        .answers(500, "Failed to update play"),
        case("GET", "/svc/gamification/leaderboard", "user_stats")
            .answers(500, "Failed to get leaderboard"),
        case(
            "GET",
            format!("/svc/gamification/user/{model}"),
            "user_stats",
        )
        .answers(500, "Failed to get user gamification data"),
        case("GET", "/svc/gamification/achievements", "achievements")
            .answers(500, "Failed to get achievements"),
        // Last: it takes the recording away.
        case("DELETE", rec(""), "recordings")
            .by("viewer")
            .answers(500, "Failed to delete recording"),
    ];

    for case in &cases {
        let what = format!("{} {} without `{}`", case.method, case.path, case.table);
        host.break_table(case.table);
        let broken = case.send(&host);
        host.repair_table(case.table);
        case.check(&broken, &what);
        let repaired = case.send(&host);
        assert!(
            (200..300).contains(&repaired.status),
            "{what}, then repaired: {} {}",
            repaired.status,
            repaired.body
        );
    }
    host.assert_serving();
}
