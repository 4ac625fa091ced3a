//! Hosts upgrade one at a time (docs/operations.md "Upgrading"): on one
//! database, a host of this release starts and migrates while a host of
//! the previous release (tests/fixtures/previous-release, built by
//! scripts/test.sh) keeps serving under load; the previous release answers
//! no 5xx and no transport error during and after the migration, what it
//! wrote after it is served by the new host, and every field of the
//! previous release's database is still there with its type. It holds
//! because a release's migrations only add (example-host's
//! `migration_rule`, checked on the platform's and svc's migrations by
//! their unit tests). Runs on the suite's backend (`TEST_DB`): hosts on
//! one SQLite file take turns writing through its lock.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use platform_tests::{
    id_of, previous_release, rec_body, Answer, Client, Host, HostOptions, ADMIN_TOKEN,
};
use serde_json::{json, Value};

/// When a request of the load was sent, relative to the new host's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// Only the previous release serves.
    Before,
    /// The new host is starting: migrating the database.
    Migrating,
    /// The new host serves too.
    After,
}

impl Phase {
    fn of(value: u8) -> Phase {
        match value {
            0 => Phase::Before,
            1 => Phase::Migrating,
            _ => Phase::After,
        }
    }
}

/// One request of the load against the previous release's host.
struct Sent {
    phase: Phase,
    method: &'static str,
    path: String,
    answer: Answer,
}

/// The load's record: every request, and the recordings the previous
/// release created (id, phase).
#[derive(Default)]
struct Load {
    sent: Mutex<Vec<Sent>>,
    created: Mutex<Vec<(String, Phase)>>,
}

impl Load {
    fn call(
        &self,
        client: &Client,
        phase: &AtomicU8,
        method: &'static str,
        path: String,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Answer {
        let phase = Phase::of(phase.load(Ordering::SeqCst));
        let answer = client.call(method, &path, token, body);
        if let Ok((201, text)) = &answer {
            if let Some(id) = serde_json::from_str::<Value>(text)
                .ok()
                .and_then(|v| v["id"].as_str().map(str::to_string))
            {
                self.created.lock().expect("load").push((id, phase));
            }
        }
        self.sent.lock().expect("load").push(Sent {
            phase,
            method,
            path,
            answer: answer.clone(),
        });
        answer
    }
}

const VIDEOS: usize = 4;
const VIEWERS: usize = 4;

fn viewer(i: usize) -> String {
    format!("rolling-viewer-{i}")
}

fn slug(i: usize) -> String {
    format!("rolling-{i}")
}

/// Each field of the database as `platform_fields` declares it: its type,
/// whether it takes null and what it refers to, by collection and name.
fn fields(host: &Host) -> BTreeMap<(String, String), Value> {
    host.sql_query("SELECT collection, field, definition FROM platform_fields")
        .into_iter()
        .map(|row| {
            let cell = |i: usize| row[i].clone().unwrap_or_default();
            let definition: Value = serde_json::from_str(&cell(2)).unwrap_or(Value::Null);
            let shape = json!({
                "type": definition["type"],
                "nullable": definition["nullable"],
                "references": definition["references"],
            });
            ((cell(0), cell(1)), shape)
        })
        .collect()
}

fn migrations(host: &Host) -> BTreeSet<(String, String)> {
    host.sql_query("SELECT owner, id FROM platform_migrations")
        .into_iter()
        .map(|row| {
            (
                row[0].clone().unwrap_or_default(),
                row[1].clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn the_previous_release_serves_without_5xx_while_the_new_one_migrates() {
    let previous = previous_release();
    let old = Host::start(HostOptions::previous_release_svc());

    // Some data, made by the previous release.
    let viewers: Vec<String> = (0..VIEWERS).map(viewer).collect();
    old.users(Some("Viewer"), &viewers);
    let model = old.user(Some("Model"), "rolling-model");
    let videos: Vec<String> = (0..VIDEOS)
        .map(|i| id_of(&old.admin_video(&slug(i), Some("2001-01-01T00:00:00.000Z"))))
        .collect();
    for video in &videos {
        old.link_model(video, &model);
    }
    for (i, token) in viewers.iter().enumerate() {
        let r = old.post("/svc/recordings", Some(token), &rec_body("seed", None));
        assert_eq!(r.status, 201, "{}", r.body);
        let r = old.post(
            &format!("/svc/videos/{}/like", videos[i % VIDEOS]),
            Some(token),
            &json!({}),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let old_fields = fields(&old);
    let old_migrations = migrations(&old);

    let load = Load::default();
    let phase = AtomicU8::new(0);
    let stop = AtomicBool::new(false);
    let mut to_new: Vec<(String, u16)> = Vec::new();
    let mut migrated_in = Duration::ZERO;
    let new = std::thread::scope(|scope| {
        let (load, phase, stop, videos) = (&load, &phase, &stop, &videos);
        let base = old.base.as_str();
        let pause = || std::thread::sleep(Duration::from_millis(5));
        // Public reads of svc.
        scope.spawn(move || {
            let client = Client::new(base);
            for round in 0.. {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let path = match round % 3 {
                    0 => "/svc/videos".to_string(),
                    1 => format!("/svc/videos/{}", slug(round % VIDEOS)),
                    _ => "/svc/stats".to_string(),
                };
                let _ = load.call(&client, phase, "GET", path, None, None);
                pause();
            }
        });
        // Likes and unlikes, two viewers.
        for v in 0..2 {
            scope.spawn(move || {
                let client = Client::new(base);
                let token = viewer(v);
                for round in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    // Viewer v liked video v at seeding: it likes the others.
                    let video = &videos[(v + 1 + round % (VIDEOS - 1)) % VIDEOS];
                    let path = format!("/svc/videos/{video}/like");
                    let _ = load.call(
                        &client,
                        phase,
                        "POST",
                        path.clone(),
                        Some(&token),
                        Some(&json!({})),
                    );
                    pause();
                    let _ = load.call(&client, phase, "DELETE", path, Some(&token), None);
                    pause();
                }
            });
        }
        // Recordings created and listed by members, and /items reads.
        for v in 2..4 {
            scope.spawn(move || {
                let client = Client::new(base);
                let token = viewer(v);
                for round in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let _ = match round % 4 {
                        0 => load.call(
                            &client,
                            phase,
                            "POST",
                            "/svc/recordings".into(),
                            Some(&token),
                            Some(&rec_body(&format!("rolling {v} {round}"), None)),
                        ),
                        1 => load.call(
                            &client,
                            phase,
                            "GET",
                            "/svc/recordings".into(),
                            Some(&token),
                            None,
                        ),
                        2 => load.call(
                            &client,
                            phase,
                            "GET",
                            "/items/recordings?limit=20&fields=id,title".into(),
                            Some(&token),
                            None,
                        ),
                        _ => load.call(
                            &client,
                            phase,
                            "GET",
                            "/items/videos?fields=id,slug,likes_count".into(),
                            // Members are not granted /items/videos.
                            Some(ADMIN_TOKEN),
                            None,
                        ),
                    };
                    pause();
                }
            });
        }

        std::thread::sleep(Duration::from_millis(1500));
        phase.store(1, Ordering::SeqCst);
        let started = Instant::now();
        let new = old.start_beside(HostOptions::svc());
        migrated_in = started.elapsed();
        phase.store(2, Ordering::SeqCst);
        // The previous release keeps serving beside it for a few seconds;
        // the new one is asked too.
        let until = Instant::now() + Duration::from_secs(3);
        let token = viewer(0);
        while Instant::now() < until {
            for (method, path, body) in [
                ("GET", "/svc/videos".to_string(), None),
                ("GET", "/svc/stats".to_string(), None),
                ("GET", "/svc/recordings".to_string(), None),
                (
                    "POST",
                    "/svc/recordings".to_string(),
                    Some(rec_body("new host", None)),
                ),
                ("GET", "/items/recordings?fields=id,title".to_string(), None),
            ] {
                let r = new.request(
                    method,
                    &path,
                    Some(&token),
                    body.as_ref()
                        .map(|b| b.to_string())
                        .as_deref()
                        .map(str::as_bytes),
                );
                to_new.push((format!("{method} {path}"), r.status));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::SeqCst);
        new
    });
    let old_dir = old.stop();
    let mut new = new;
    new.adopt_database();

    // What the previous release answered, by phase and status.
    let sent = load.sent.into_inner().expect("load");
    let mut tally: BTreeMap<(Phase, String), usize> = BTreeMap::new();
    for s in &sent {
        let status = match &s.answer {
            Ok((status, _)) => status.to_string(),
            Err(_) => "transport error".to_string(),
        };
        *tally.entry((s.phase, status)).or_default() += 1;
    }
    eprintln!(
        "previous release {}: {} requests; the new host started (migrated) in {migrated_in:?}; by phase and status: {tally:?}",
        previous.commit,
        sent.len()
    );
    let failures: Vec<String> = sent
        .iter()
        .filter_map(|s| match &s.answer {
            Ok((status, _)) if *status < 500 => None,
            Ok((status, body)) => Some(format!(
                "{:?} {} {}: {status} {}",
                s.phase,
                s.method,
                s.path,
                body.chars().take(300).collect::<String>()
            )),
            Err(e) => Some(format!("{:?} {e}", s.phase)),
        })
        .collect();
    assert!(
        failures.is_empty(),
        "the previous release failed {} of {} requests:\n{}",
        failures.len(),
        sent.len(),
        failures.join("\n")
    );
    for p in [Phase::Before, Phase::Migrating, Phase::After] {
        assert!(
            sent.iter().any(|s| s.phase == p),
            "no request of the load in phase {p:?}"
        );
    }
    // What the load expects is what it got, before and after: members'
    // likes, recordings and reads are allowed.
    let refused: Vec<String> = sent
        .iter()
        .filter_map(|s| match &s.answer {
            Ok((status, body)) if !(200..300).contains(status) => Some(format!(
                "{:?} {} {}: {status} {}",
                s.phase,
                s.method,
                s.path,
                body.chars().take(300).collect::<String>()
            )),
            _ => None,
        })
        .collect();
    assert!(
        refused.is_empty(),
        "the previous release refused {} of {} requests:\n{}",
        refused.len(),
        sent.len(),
        refused.join("\n")
    );

    // The new host applied this release's migrations, and says so.
    let applied: Vec<(String, String)> = migrations(&new)
        .difference(&old_migrations)
        .cloned()
        .collect();
    assert!(!applied.is_empty(), "the new host applied no migration");
    let log = new.log();
    for (owner, id) in &applied {
        if owner != "platform" {
            assert!(
                log.contains(&format!("[{owner}] applied migration {id}")),
                "{owner}/{id} applied but not logged:\n{log}"
            );
        }
    }
    eprintln!("the new host applied {applied:?}");

    // The new host serves what both wrote; what the previous release
    // created after the migration included.
    let bad_new: Vec<&(String, u16)> = to_new
        .iter()
        .filter(|(_, s)| !(200..300).contains(s))
        .collect();
    assert!(bad_new.is_empty(), "the new host answered {bad_new:?}");
    new.assert_serving();
    let created = load.created.into_inner().expect("load");
    let after: Vec<&String> = created
        .iter()
        .filter(|(_, p)| *p == Phase::After)
        .map(|(id, _)| id)
        .collect();
    assert!(
        !after.is_empty(),
        "the previous release created nothing after the migration"
    );
    for id in &created {
        new.admin_item("recordings", &id.0);
    }
    let listed = new.get("/svc/videos", None).json();
    let listed: BTreeSet<String> = listed
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {listed}"))
        .iter()
        .map(|v| v["slug"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(listed, (0..VIDEOS).map(slug).collect::<BTreeSet<_>>());
    // Every like and unlike of the previous release counted: each video's
    // counter is its likes' number.
    for (i, video) in videos.iter().enumerate() {
        let likes = new.admin_count("video_likes", Some(&json!({"video_id": {"_eq": video}})));
        let detail = new
            .get(&format!("/svc/videos/{}", slug(i)), Some(ADMIN_TOKEN))
            .json();
        assert_eq!(detail["likes_count"], json!(likes), "{detail}");
    }

    // Every field of the previous release's database is still there, with
    // its type.
    let new_fields = fields(&new);
    let changed: Vec<String> = old_fields
        .iter()
        .filter(|(k, v)| new_fields.get(*k) != Some(*v))
        .map(|((c, f), v)| {
            format!(
                "{c}.{f}: {v} became {:?}",
                new_fields.get(&(c.clone(), f.clone()))
            )
        })
        .collect();
    assert!(changed.is_empty(), "fields removed or changed: {changed:?}");
    drop(new);
    drop(old_dir);
}
