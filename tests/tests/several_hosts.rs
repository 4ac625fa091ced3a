//! Several hosts on one database, as behind a load balancer (DECISIONS
//! §8): what one host acknowledged, every host serves from then on;
//! counters and uniqueness hold when writes for the same rows arrive at
//! different hosts at once; a host killed mid-load loses nothing it
//! acknowledged; a schedule runs once per period across the hosts.
//!
//! Several hosts are PostgreSQL's configuration; these tests run on SQLite
//! too (hosts on one file take turns writing through its lock), so that the
//! rules are the storage core's, not one backend's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use platform_tests::{id_of, int_of, str_of, Host, HostOptions};
use serde_json::{json, Value};

const PAST: &str = "2001-01-01T00:00:00.000Z";

/// Two hosts with the svc extension on one new database.
fn two_hosts() -> (Host, Host) {
    let first = Host::start(HostOptions::svc());
    let second = first.start_beside(HostOptions::svc());
    (first, second)
}

fn slugs(answer: &Value) -> Vec<String> {
    answer
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {answer}"))
        .iter()
        .map(|v| str_of(&v["slug"]))
        .collect()
}

#[test]
fn a_write_through_one_host_is_served_by_the_other_at_once() {
    let (a, b) = two_hosts();
    let model = a.user(Some("Model"), "ryw-model");
    let first = a.admin_video("ryw-first", Some(PAST));
    a.link_model(&id_of(&first), &model);
    // The second host keeps its answers (cache on): warm them.
    for _ in 0..3 {
        assert_eq!(slugs(&b.get("/svc/videos", None).json()), ["ryw-first"]);
        assert_eq!(b.get("/svc/stats", None).json()["videos_count"], json!(1));
    }
    let second = a.admin_video("ryw-second", Some("2002-01-01T00:00:00.000Z"));
    // Acknowledged by the first host: the second serves it on its next answer.
    assert_eq!(
        slugs(&b.get("/svc/videos", None).json()),
        ["ryw-second", "ryw-first"]
    );
    assert_eq!(b.get("/svc/stats", None).json()["videos_count"], json!(2));

    // A like through one host shows in the other's kept detail at once.
    let viewer = "ryw-viewer";
    a.user(Some("Viewer"), viewer);
    let detail = |h: &Host| h.get("/svc/videos/ryw-second", None).json();
    assert_eq!(detail(&b)["likes_count"], json!(0));
    let liked = a.post(
        &format!("/svc/videos/{}/like", id_of(&second)),
        Some(viewer),
        &json!({}),
    );
    assert_eq!(liked.status, 200, "{}", liked.body);
    assert_eq!(detail(&b)["likes_count"], json!(1));
    let unliked = b.delete(
        &format!("/svc/videos/{}/like", id_of(&second)),
        Some(viewer),
    );
    assert_eq!(unliked.status, 200, "{}", unliked.body);
    assert_eq!(detail(&a)["likes_count"], json!(0));
}

#[test]
fn a_user_or_permission_revoked_through_one_host_is_refused_by_the_other() {
    let (a, b) = two_hosts();
    let user = a.user(Some("Viewer"), "revoked-user");
    a.user(Some("Viewer"), "revoked-rule");
    for _ in 0..3 {
        let r = b.get("/svc/recordings", Some("revoked-user"));
        assert_eq!(r.status, 200, "{}", r.body);
        let r = b.get("/items/recordings", Some("revoked-rule"));
        assert_eq!(r.status, 200, "{}", r.body);
    }
    a.admin_patch("platform_users", &user, &json!({"status": "suspended"}));
    let r = b.get("/svc/recordings", Some("revoked-user"));
    assert_eq!(r.status, 401, "{}", r.body);

    // A token changed through one host: the old one is refused by the other,
    // the new one accepted.
    let other = a.user(Some("Viewer"), "old-token");
    assert_eq!(b.get("/svc/recordings", Some("old-token")).status, 200);
    a.admin_patch("platform_users", &other, &json!({"token": "new-token"}));
    assert_eq!(b.get("/svc/recordings", Some("old-token")).status, 401);
    assert_eq!(b.get("/svc/recordings", Some("new-token")).status, 200);

    let viewer = a.id_by_name("platform_policies", "Viewer");
    let rules = a.admin_find(
        "platform_permissions",
        &json!({"policy": {"_eq": viewer}, "collection": {"_eq": "recordings"}, "action": {"_eq": "read"}}),
    );
    assert!(
        !rules.is_empty(),
        "no read rule of the Viewer on recordings"
    );
    for rule in &rules {
        a.admin_delete("platform_permissions", &id_of(rule));
    }
    let r = b.get("/items/recordings", Some("revoked-rule"));
    assert_eq!(r.status, 403, "{}", r.body);
}

#[test]
fn likes_and_plays_through_two_hosts_at_once_stay_exact() {
    let (a, b) = two_hosts();
    let video = id_of(&a.admin_video("contended", Some(PAST)));
    const USERS: usize = 24;
    let tokens: Vec<String> = (0..USERS).map(|i| format!("contender-{i}")).collect();
    a.users(Some("Viewer"), &tokens);
    let hosts = [&a, &b];
    let plays = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for (i, token) in tokens.iter().enumerate() {
            let host = hosts[i % 2];
            let (video, plays) = (&video, &plays);
            scope.spawn(move || {
                // Each user likes through one host, and plays through both.
                let r = host.post(
                    &format!("/svc/videos/{video}/like"),
                    Some(token),
                    &json!({}),
                );
                assert_eq!(r.status, 200, "{}", r.body);
                for round in 0..3 {
                    let h = hosts[(i + round) % 2];
                    let r = h.post(
                        &format!("/svc/videos/{video}/play"),
                        Some(token),
                        &json!({}),
                    );
                    assert_eq!(r.status, 200, "{}", r.body);
                    plays.fetch_add(1, Ordering::SeqCst);
                }
                // A second like of the same user, through the other host, is refused.
                let again = hosts[(i + 1) % 2].post(
                    &format!("/svc/videos/{video}/like"),
                    Some(token),
                    &json!({}),
                );
                assert_eq!(again.status, 400, "{}", again.body);
            });
        }
    });
    let stored = a.admin_item("videos", &video);
    let like_rows = a.admin_count("video_likes", Some(&json!({"video_id": {"_eq": video}})));
    let play_rows = a.admin_count("video_plays", Some(&json!({"video_id": {"_eq": video}})));
    assert_eq!(like_rows, USERS as u64);
    assert_eq!(int_of(&stored["likes_count"], "likes_count"), USERS as i64);
    assert_eq!(play_rows, plays.load(Ordering::SeqCst) as u64);
    assert_eq!(
        int_of(&stored["plays_count"], "plays_count"),
        play_rows as i64
    );
    for h in hosts {
        let detail = h.get("/svc/videos/contended", None).json();
        assert_eq!(detail["likes_count"], json!(USERS));
        assert_eq!(detail["plays_count"], json!(play_rows));
    }
}

#[test]
fn a_host_killed_mid_load_loses_nothing_it_acknowledged() {
    let (a, b) = two_hosts();
    let video = id_of(&a.admin_video("killed-mid-load", Some(PAST)));
    let acknowledged = std::sync::Mutex::new(Vec::<String>::new());
    let stop_at = Instant::now() + Duration::from_secs(20);
    let base = a.base.clone();
    let killer = std::sync::Mutex::new(Some(a));
    std::thread::scope(|scope| {
        for _ in 0..8 {
            let (base, video, acknowledged) = (&base, &video, &acknowledged);
            scope.spawn(move || {
                let agent = ureq::AgentBuilder::new()
                    .timeout(Duration::from_secs(10))
                    .build();
                while Instant::now() < stop_at {
                    let sent = agent
                        .post(&format!("{base}/svc/videos/{video}/play"))
                        .set("Content-Type", "application/json")
                        .send_string("{}");
                    match sent {
                        Ok(r) if r.status() == 200 => {
                            let body: Value = r.into_json().expect("json");
                            acknowledged
                                .lock()
                                .expect("acks")
                                .push(str_of(&body["play_id"]));
                        }
                        // Refused or cut off by the kill: not acknowledged.
                        _ => return,
                    }
                }
            });
        }
        // Kill once some writes were acknowledged.
        let deadline = Instant::now() + Duration::from_secs(15);
        while acknowledged.lock().expect("acks").len() < 50 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(host) = killer.lock().expect("host").take() {
            host.kill();
        }
    });
    let acknowledged = acknowledged.into_inner().expect("acks");
    assert!(
        acknowledged.len() >= 50,
        "only {} plays acknowledged",
        acknowledged.len()
    );
    // Every acknowledged play is there, read through the surviving host.
    let stored: std::collections::HashSet<String> = b
        .admin_find("video_plays", &json!({"video_id": {"_eq": video}}))
        .iter()
        .map(id_of)
        .collect();
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|id| !stored.contains(*id))
        .collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged plays lost: {lost:?}",
        lost.len()
    );
    // The counter is exact, and the survivor goes on serving writes.
    let r = b.post(&format!("/svc/videos/{video}/play"), None, &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    let count = int_of(&r.json()["plays_count"], "plays_count");
    assert_eq!(count as usize, stored.len() + 1);
}
