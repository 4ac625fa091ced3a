//! Several hosts on one database, as behind a load balancer (docs/decisions.md
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

use platform_tests::time::eventually;
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

/// Hosts with the fixture extension (its `tick` schedule runs every 2 s)
/// on one new database, with `env` and `args`.
fn fixture_hosts(env: &[(&str, &str)], args: &[&str]) -> (Host, Host) {
    let opts = || {
        let mut opts = HostOptions::with(vec![platform_tests::library("fixture_ext")])
            .env_var("SCHEDULES_ENABLED", "true");
        opts.env
            .extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        args.iter().fold(opts, |opts, a| opts.arg(a))
    };
    let first = Host::start(opts());
    let second = first.start_beside(opts());
    (first, second)
}

/// The comments a schedule of the fixture wrote on `collection`.
fn comments(host: &Host, collection: &str, comment: Option<&str>) -> u64 {
    let mut filter = json!({"collection": {"_eq": collection}});
    if let Some(c) = comment {
        filter["comment"] = json!({"_eq": c});
    }
    host.admin_count("platform_comments", Some(&filter))
}

/// The claimed runs of a schedule of the fixture, oldest first.
fn runs(host: &Host, schedule: &str) -> Vec<Value> {
    let mut rows = host.admin_find(
        "platform_schedule_runs",
        &json!({"extension": {"_eq": "fixture"}, "schedule": {"_eq": schedule}}),
    );
    rows.sort_by_key(|r| str_of(&r["period"]));
    rows
}

#[test]
fn a_schedule_runs_once_per_period_across_hosts() {
    let (a, b) = fixture_hosts(&[], &[]);
    let started = Instant::now();
    let first = Instant::now() + Duration::from_secs(20);
    while comments(&a, "ticks", None) == 0 && Instant::now() < first {
        std::thread::sleep(Duration::from_millis(100));
    }
    let before = comments(&a, "ticks", None);
    assert!(before >= 1, "no tick ran; logs:\n{}\n{}", a.log(), b.log());
    // A run finished long ago: forgotten after the next run.
    let old = a.admin_create(
        "platform_schedule_runs",
        &json!({"run": "fixture/tick/old", "extension": "fixture", "schedule": "tick",
                "period": PAST, "host": "gone", "lease_until": PAST, "finished_on": PAST}),
    );
    let window = Instant::now();
    std::thread::sleep(Duration::from_secs(9));
    let r = a.get(
        &format!("/items/platform_schedule_runs/{}", id_of(&old)),
        Some(platform_tests::ADMIN_TOKEN),
    );
    assert_eq!(r.status, 404, "an old finished run was kept: {}", r.body);
    let ticks = comments(&b, "ticks", None) - before;
    let periods = window.elapsed().as_secs_f64() / 2.0;
    // One run per 2 s period between the hosts; two hosts each running
    // every period would make twice as many.
    assert!(
        ticks as f64 <= periods + 1.0 && ticks as f64 >= periods - 2.0,
        "{ticks} ticks in {periods:.1} periods"
    );
    // Every tick had its period's claim, and each period one claim.
    let claimed = runs(&a, "tick");
    let total = comments(&a, "ticks", None);
    let finished = claimed
        .iter()
        .filter(|r| !r["finished_on"].is_null())
        .count() as u64;
    assert!(
        finished == total || finished + 1 == total,
        "{total} ticks, {finished} finished claims: {claimed:#?}"
    );
    let mut periods: Vec<String> = claimed.iter().map(|r| str_of(&r["period"])).collect();
    periods.dedup();
    assert_eq!(periods.len(), claimed.len(), "a period claimed twice");
    // Both hosts took part over time or one did all: either way, the two
    // hosts' runs add up to one per period.
    let hosts: std::collections::BTreeSet<String> =
        claimed.iter().map(|r| str_of(&r["host"])).collect();
    assert!(!hosts.is_empty() && hosts.len() <= 2, "{hosts:?}");
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_run_left_unfinished_by_a_killed_host_is_taken_over() {
    // A 3 s job period whose work takes 2 s, with 1 s leases.
    let (a, b) = fixture_hosts(
        &[("FIXTURE_SLOW_JOB_MS", "3000")],
        &["--schedule-lease-secs", "1"],
    );
    // Wait for a run in progress, and find its host.
    let running = eventually("a slow run started", Duration::from_secs(20), || {
        runs(&a, "slow")
            .into_iter()
            .find(|r| r["finished_on"].is_null())
            .ok_or_else(|| "no slow run started".to_string())
    });
    let holder = str_of(&running["host"]);
    let (victim, survivor) = if holder.starts_with(&format!("pid {} ", a.pid())) {
        (a, b)
    } else {
        assert!(
            holder.starts_with(&format!("pid {} ", b.pid())),
            "{holder} is neither host"
        );
        (b, a)
    };
    victim.kill();
    // The survivor takes the run over once the lease lapses, and finishes it.
    let run = eventually("the run taken over", Duration::from_secs(20), || {
        let run = survivor.admin_item("platform_schedule_runs", &id_of(&running));
        if run["finished_on"].is_null() {
            Err(format!(
                "the run was not taken over: {run}\n{}",
                survivor.log()
            ))
        } else {
            Ok(run)
        }
    });
    assert_ne!(str_of(&run["host"]), holder, "{run}");
    assert!(
        survivor.log().contains("lapsed unfinished"),
        "{}",
        survivor.log()
    );
    assert!(comments(&survivor, "slow-job", Some("finished")) >= 1);
}
