use super::*;

// ---------------------------------------------------------------- bad input

#[test]
fn create_with_non_object_bodies_is_a_400() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "creator");
    for raw in [
        &b""[..],
        b"[]",
        b"[{\"title\": \"x\", \"duration\": 1, \"events\": [1], \"device_info\": {}}]",
        b"null",
        b"\"a string\"",
        b"42",
        b"true",
    ] {
        let (r, case) = send_raw(&host, "POST", "/svc/recordings", "creator", raw);
        assert_eq!(r.status, 400, "{case}: {}", r.body);
        let e = err(&r);
        assert!(
            e == json!(MISSING) || e == json!("Invalid JSON body"),
            "{case}: {}",
            r.body
        );
    }
    assert_eq!(recordings_count(&host), 0);
    host.assert_serving();
}

/// A well-formed id that no recording and no play has.
const UNKNOWN_ID: &str = "00000000-0000-4000-8000-000000000000";

/// What a request naming an unknown or malformed id must answer.
#[derive(Clone, Copy)]
enum Expect {
    /// Exactly this status and body `{"error": text}`.
    Error(u16, &'static str),
    /// One of these statuses, with an `{error}` string.
    AnyErrorOf(&'static [u16]),
}

const NO_RECORDING: Expect = Expect::Error(404, "Recording not found");
const NO_PLAY: Expect = Expect::Error(404, "Play record not found");
/// DELETE and duplicate: docs/service-api.md says "Owner only, otherwise 403
/// Forbidden" (DELETE), "Source must be published and public" (duplicate),
/// so a missing or malformed id is a 4xx (403 or 404), not a server error.
const REFUSED: Expect = Expect::AnyErrorOf(&[404, 403]);

impl Expect {
    fn check(self, case: &str, r: &Resp) {
        match self {
            Expect::Error(status, text) => assert_error_for(case, r, status, text),
            Expect::AnyErrorOf(statuses) => {
                assert!(
                    statuses.contains(&r.status),
                    "{case}: {} {}",
                    r.status,
                    r.body
                );
                assert!(err(r).is_string(), "{case}: {}", r.body);
            }
        }
    }
}

/// Every route that takes a recording or play id, given a well-formed id
/// nothing has and malformed ones (not UUIDs, injections, a 2,000-character
/// id): the documented answer for each, nothing written, the host serving.
#[test]
fn unknown_and_malformed_ids_get_the_documented_answer_on_every_route() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "prober");
    let real = id_of(&create(&host, "prober", &body("Real")));
    let other = id_of(&create(&host, "prober", &body("Other")));
    let real_play = host.play_recording(&real, None);
    let (medium, long) = ("a".repeat(300), "z".repeat(2000));
    let malformed = [
        "not-a-uuid",
        "1",
        "00000000-0000-0000-0000-00000000000g",
        "%27--",
        "%27%20OR%20%271%27%3D%271",
        "%27%3B%20DROP%20TABLE%20recordings%3B--",
        "%22%7D%7B",
        "%E2%9C%93",
        medium.as_str(),
        long.as_str(),
    ];
    let completed = Some(r#"{"duration_played": 1, "completed": true}"#);
    // `{id}` is the probed id; `{real}` a recording and `{play}` its play.
    // (method, path, caller, body, answer to the unknown id, to a malformed one)
    let routes = [
        (
            "GET",
            "/svc/recordings/{id}",
            Some("prober"),
            None,
            NO_RECORDING,
            NO_RECORDING,
        ),
        // docs/service-api.md: a missing record on PATCH gives 500.
        (
            "PATCH",
            "/svc/recordings/{id}",
            Some("prober"),
            Some(r#"{"title": "ghost"}"#),
            Expect::AnyErrorOf(&[500]),
            Expect::AnyErrorOf(&[500, 404, 403]),
        ),
        (
            "DELETE",
            "/svc/recordings/{id}",
            Some("prober"),
            None,
            REFUSED,
            REFUSED,
        ),
        (
            "POST",
            "/svc/recordings/{id}/duplicate",
            Some("prober"),
            Some("{}"),
            REFUSED,
            REFUSED,
        ),
        (
            "POST",
            "/svc/recordings/{id}/play",
            None,
            Some("{}"),
            NO_RECORDING,
            NO_RECORDING,
        ),
        (
            "POST",
            "/svc/recordings/{id}/play",
            Some("prober"),
            Some("{}"),
            NO_RECORDING,
            NO_RECORDING,
        ),
        (
            "PATCH",
            "/svc/recordings/{real}/play/{id}",
            None,
            completed,
            NO_PLAY,
            NO_PLAY,
        ),
        (
            "PATCH",
            "/svc/recordings/{id}/play/{play}",
            None,
            completed,
            NO_PLAY,
            NO_PLAY,
        ),
    ];
    let stored = || {
        (
            host.admin_item("recordings", &real),
            host.admin_item("recordings", &other),
            stored_play(&host, &real_play),
            recordings_count(&host),
            host.admin_count("recording_plays", None),
        )
    };
    let before = stored();
    for (method, template, caller, body, unknown, bad) in routes {
        let ids = malformed.iter().map(|id| (*id, bad));
        for (id, expect) in std::iter::once((UNKNOWN_ID, unknown)).chain(ids) {
            let path = template
                .replace("{id}", id)
                .replace("{real}", &real)
                .replace("{play}", &real_play);
            let r = host.request(method, &path, caller, body.map(str::as_bytes));
            expect.check(&format!("{method} {path} as {caller:?}"), &r);
        }
        assert_eq!(stored(), before, "{method} {template} as {caller:?} wrote");
        host.assert_serving();
    }
    // A play is reached through its own recording only.
    let path = format!("/svc/recordings/{other}/play/{real_play}");
    let r = host.request("PATCH", &path, None, completed.map(str::as_bytes));
    NO_PLAY.check(&format!("PATCH {path} (another recording)"), &r);
    assert_eq!(stored(), before, "PATCH {path} wrote");
    assert_new_play(&stored_play(&host, &real_play), &real, Value::Null);
}
