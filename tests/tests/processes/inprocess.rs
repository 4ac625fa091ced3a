//! The host built with the `inprocess` feature serves the svc extension
//! linked into it, without the ABI, with the same behaviour: routes, item
//! hooks and schedules.

use platform_tests::{host_command, inprocess_host_binary, Host, HostOptions, ADMIN_TOKEN};
use serde_json::json;

fn start() -> Host {
    let mut opts = HostOptions::with(Vec::new()).arg("--builtin-svc");
    opts.binary = Some(inprocess_host_binary());
    Host::start(opts)
}

#[test]
fn the_linked_svc_serves_its_routes_hooks_and_jobs() {
    let host = start();
    assert!(
        host.log().contains("linked extension `svc`"),
        "{}",
        host.log()
    );
    assert!(host
        .log()
        .contains("[svc] applied migration 0001_collections"));
    let r = host.get("/server/extensions", Some(ADMIN_TOKEN));
    assert_eq!(r.json()["data"][0]["id"], "svc", "{}", r.body);

    host.user(Some("Model"), "owner");
    host.user(Some("Viewer"), "player");
    assert_eq!(
        host.get("/svc/stats", None).json(),
        json!({"models_count": 1, "viewers_count": 1, "videos_count": 0})
    );
    // A published recording: the item hook awards RECORDING_CREATE.
    let r = host.post(
        "/svc/recordings",
        Some("owner"),
        &json!({"title": "Linked", "duration": 10, "events": [{"timestamp": 0}], "device_info": {},
                "status": "published"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let recording = r.json()["id"].as_str().expect("id").to_string();
    let owner = r.json()["user_created"]
        .as_str()
        .expect("owner")
        .to_string();
    // A play by someone else: RECORDING_PLAY in the endpoint's transaction.
    let r = host.request(
        "POST",
        &format!("/svc/recordings/{recording}/play"),
        Some("player"),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let board = host.get("/svc/gamification/leaderboard", None).json();
    let owner_row = board["data"]
        .as_array()
        .and_then(|rows| rows.iter().find(|row| row["user_id"] == owner.as_str()))
        .cloned()
        .unwrap_or_else(|| panic!("owner not on the board: {board}"));
    // 50 for publishing + 50 for `first_recording`.
    assert_eq!(owner_row["total_raw_points"], 100, "{board}");
    assert_eq!(board["data"].as_array().map(Vec::len), Some(2), "{board}");
    // Errors and panics are contained the same way.
    assert_eq!(
        host.get("/svc/nope", None).json(),
        json!({"error": "Route not found"})
    );

    // The schedule runs on demand with the same flag.
    let dir = host.stop();
    let out = host_command(&inprocess_host_binary(), dir.path())
        .args([
            "--builtin-svc",
            "schedule",
            "run",
            "svc",
            "recalculate-stats",
        ])
        .output()
        .expect("run the schedule");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("recalculate-stats: 2 users refreshed"),
        "{log}"
    );
}
