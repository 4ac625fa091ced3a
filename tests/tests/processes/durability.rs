//! Crash durability (issue 7): in each of several rounds, writer threads run
//! a load of recording creates, recording plays, video plays and likes
//! against a host, which is killed with SIGKILL in the middle of it. Every
//! write the host acknowledged with a 2xx is remembered with its id. With the
//! host down, on SQLite, the database file must pass `PRAGMA
//! integrity_check` in WAL mode (on PostgreSQL the server is not what is
//! killed: its files are its own business). The host is then restarted on
//! the same data folder (the same database) and must serve again, every acknowledged write of every round
//! so far must be readable by id (as admin, through `/items`), and every
//! video's `likes_count` / `plays_count` must still equal its like / play
//! records (the counter moves in the write's own transaction, so a crash
//! cannot split them).
//!
//! Rounds: `DURABILITY_ROUNDS` (default 5). Prints rounds, acknowledged
//! writes and lost writes (which must be 0) for docs/reliability.md.

use std::collections::{BTreeSet, HashMap};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use platform_tests::{
    id_of, rec_body, str_of, Backend, Client, Database, Host, HostOptions, ADMIN_TOKEN,
};
use serde_json::{json, Value};

const WRITERS: usize = 6;
const VIDEOS: usize = 64;
/// Acknowledged writes to wait for in a round before the kill is armed.
const MIN_ACKS_BEFORE_KILL: u64 = 40;

fn rounds() -> usize {
    std::env::var("DURABILITY_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5usize)
        .max(1)
}

/// A write the host answered with a 2xx.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Ack {
    Recording(String),
    RecordingPlay(String),
    VideoPlay(String),
    /// (user id, video id)
    Like(String, String),
}

/// Fresh viewers for a round (each writer thread has its own, so each like
/// of the round is a first like): (token, id).
fn viewers(host: &Host, round: usize) -> Vec<(String, String)> {
    let tokens: Vec<String> = (0..WRITERS)
        .map(|i| format!("durable-r{round}-w{i}"))
        .collect();
    let ids = host.users(Some("Viewer"), &tokens);
    tokens.into_iter().zip(ids).collect()
}

/// One writer: creates, plays and likes until its first transport error
/// (the kill) or until `stop`.
struct Writer {
    n: usize,
    base: String,
    token: String,
    user: String,
    videos: Vec<String>,
    seed_recordings: Vec<String>,
    acked: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

/// Returns the acknowledged writes, the refused ones, and whether the
/// writer was cut off by a transport error (the kill) rather than `stop`.
fn writer(w: Writer) -> (Vec<Ack>, Vec<String>, bool) {
    let Writer {
        n,
        base,
        token,
        user,
        videos,
        seed_recordings,
        acked,
        stop,
    } = w;
    let (token, user) = (token.as_str(), user.as_str());
    let client = Client::new(&base);
    let mut acks = Vec::new();
    let mut refusals = Vec::new();
    let mut recordings: Vec<String> = seed_recordings.to_vec();
    let mut next_like = 0usize;
    let mut step = 0usize;
    while !stop.load(Ordering::Relaxed) {
        step += 1;
        let pick = (step * 7 + n * 3) % 10;
        let result = if pick < 3 {
            let status = if step % 2 == 0 { "published" } else { "draft" };
            client
                .call(
                    "POST",
                    "/svc/recordings",
                    Some(token),
                    Some(&rec_body(&format!("Durable {n} {step}"), Some(status))),
                )
                .map(|(code, body)| {
                    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                    match (code, v["id"].as_str()) {
                        (201, Some(id)) => {
                            recordings.push(id.to_string());
                            Some(Ack::Recording(id.to_string()))
                        }
                        _ => {
                            refusals.push(format!("create recording {code}: {body}"));
                            None
                        }
                    }
                })
        } else if pick < 6 {
            let rec = &recordings[step % recordings.len()];
            client
                .call(
                    "POST",
                    &format!("/svc/recordings/{rec}/play"),
                    Some(token),
                    None,
                )
                .map(|(code, body)| {
                    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                    match (code, v["play_id"].as_str()) {
                        (200, Some(id)) => Some(Ack::RecordingPlay(id.to_string())),
                        _ => {
                            refusals.push(format!("play recording {code}: {body}"));
                            None
                        }
                    }
                })
        } else if pick < 8 {
            let video = &videos[step % videos.len()];
            client
                .call(
                    "POST",
                    &format!("/svc/videos/{video}/play"),
                    Some(token),
                    Some(&json!({"session_id": format!("d{n}-{step}")})),
                )
                .map(|(code, body)| {
                    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                    match (code, v["play_id"].as_str()) {
                        (200, Some(id)) => Some(Ack::VideoPlay(id.to_string())),
                        _ => {
                            refusals.push(format!("play video {code}: {body}"));
                            None
                        }
                    }
                })
        } else if next_like < videos.len() {
            let video = videos[next_like].clone();
            next_like += 1;
            client
                .call(
                    "POST",
                    &format!("/svc/videos/{video}/like"),
                    Some(token),
                    None,
                )
                .map(|(code, body)| {
                    if code == 200 {
                        Some(Ack::Like(user.to_string(), video))
                    } else {
                        refusals.push(format!("like {code}: {body}"));
                        None
                    }
                })
        } else {
            continue;
        };
        match result {
            Ok(Some(ack)) => {
                acks.push(ack);
                acked.fetch_add(1, Ordering::Relaxed);
            }
            Ok(None) => {}
            // The host is gone: stop writing.
            Err(_) => return (acks, refusals, true),
        }
    }
    (acks, refusals, false)
}

/// A SQLite file's journal mode and `PRAGMA integrity_check` answer.
fn integrity_check(db: &Database) -> (String, String) {
    let text = |query: &str| -> String {
        db.sql_query(query)
            .into_iter()
            .map(|row| row.into_iter().flatten().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    (text("PRAGMA journal_mode"), text("PRAGMA integrity_check"))
}

/// The acknowledged writes that the restarted host does not have.
fn lost_writes(host: &Host, acks: &[Ack]) -> Vec<Ack> {
    let client = Client::new(&host.base);
    let likes: BTreeSet<(String, String)> = host
        .admin_all("video_likes", "user_id,video_id")
        .iter()
        .map(|l| (str_of(&l["user_id"]), str_of(&l["video_id"])))
        .collect();
    let mut lost = Vec::new();
    for ack in acks {
        let path = match ack {
            Ack::Recording(id) => format!("/items/recordings/{id}"),
            Ack::RecordingPlay(id) => format!("/items/recording_plays/{id}"),
            Ack::VideoPlay(id) => format!("/items/video_plays/{id}"),
            Ack::Like(user, video) => {
                if !likes.contains(&(user.clone(), video.clone())) {
                    lost.push(ack.clone());
                }
                continue;
            }
        };
        match client.call("GET", &path, Some(ADMIN_TOKEN), None) {
            Ok((200, body)) => {
                let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let id = match ack {
                    Ack::Recording(id) | Ack::RecordingPlay(id) | Ack::VideoPlay(id) => id,
                    Ack::Like(..) => unreachable!(),
                };
                if v["data"]["id"] != json!(id) {
                    lost.push(ack.clone());
                }
            }
            Ok((404, _)) => lost.push(ack.clone()),
            Ok((code, body)) => panic!("GET {path} as admin answered {code}: {body}"),
            Err(e) => panic!("GET {path}: {e}"),
        }
    }
    lost
}

/// Videos whose stored counters differ from their records.
fn counter_mismatches(host: &Host) -> Vec<String> {
    let mut likes: HashMap<String, i64> = HashMap::new();
    for l in host.admin_all("video_likes", "video_id") {
        *likes.entry(str_of(&l["video_id"])).or_default() += 1;
    }
    let mut plays: HashMap<String, i64> = HashMap::new();
    for p in host.admin_all("video_plays", "video_id") {
        *plays.entry(str_of(&p["video_id"])).or_default() += 1;
    }
    host.admin_all("videos", "id,slug,likes_count,plays_count")
        .iter()
        .filter_map(|v| {
            let id = str_of(&v["id"]);
            let stored = (
                v["likes_count"].as_i64().unwrap_or(-1),
                v["plays_count"].as_i64().unwrap_or(-1),
            );
            let records = (
                likes.get(&id).copied().unwrap_or(0),
                plays.get(&id).copied().unwrap_or(0),
            );
            (stored != records).then(|| {
                format!(
                    "video {} stores (likes_count, plays_count) {stored:?}, records {records:?}",
                    str_of(&v["slug"])
                )
            })
        })
        .collect()
}

fn start_on(dir: Option<tempfile::TempDir>) -> Host {
    let mut opts = HostOptions::svc();
    opts.data_dir = dir;
    Host::start(opts)
}

#[test]
fn acknowledged_writes_survive_sigkill_and_the_database_stays_intact() {
    let rounds = rounds();
    let mut host = start_on(None);
    // Shared targets: videos to play and like, and a published, public
    // recording of an owner no writer is.
    let rows: Vec<Value> = (0..VIDEOS)
        .map(|i| {
            json!({"slug": format!("durable-{i}"), "title": format!("Durable {i}"),
                   "upload_date": "2001-01-01T00:00:00.000Z"})
        })
        .collect();
    let r = host.post("/items/videos", Some(ADMIN_TOKEN), &json!(rows));
    assert_eq!(r.status, 200, "create videos: {}", r.body);
    let videos: Vec<String> = r.json()["data"]
        .as_array()
        .expect("videos")
        .iter()
        .map(id_of)
        .collect();
    host.user(Some("Viewer"), "durable-owner");
    let r = host.post(
        "/svc/recordings",
        Some("durable-owner"),
        &rec_body("Shared", Some("published")),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let shared = vec![id_of(&r.json())];

    let mut acks: Vec<Ack> = Vec::new();
    let mut refusals: Vec<String> = Vec::new();
    let mut total_lost = 0usize;
    for round in 1..=rounds {
        let users = viewers(&host, round);
        let acked = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = users
            .iter()
            .enumerate()
            .map(|(n, (token, user))| {
                let w = Writer {
                    n,
                    base: host.base.clone(),
                    token: token.clone(),
                    user: user.clone(),
                    videos: videos.clone(),
                    seed_recordings: shared.clone(),
                    acked: acked.clone(),
                    stop: stop.clone(),
                };
                std::thread::spawn(move || writer(w))
            })
            .collect();
        // Let the load get going, then kill at a different point each round.
        let armed_by = Instant::now() + Duration::from_secs(60);
        while acked.load(Ordering::Relaxed) < MIN_ACKS_BEFORE_KILL {
            if Instant::now() > armed_by {
                stop.store(true, Ordering::Relaxed);
                panic!(
                    "round {round}: only {} writes acknowledged in 60 s",
                    acked.load(Ordering::Relaxed)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(137 + 311 * round as u64 % 900));
        let pid = host.pid();
        let killed = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(killed.success(), "kill -KILL {pid} failed");
        let mut round_acks = Vec::new();
        let mut cut_off = 0;
        for h in handles {
            let (a, r, interrupted) = match h.join() {
                Ok(x) => x,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            round_acks.extend(a);
            refusals.extend(r);
            cut_off += usize::from(interrupted);
        }
        stop.store(true, Ordering::Relaxed);
        // The kill landed in the middle of the load: writers were cut off.
        assert_eq!(
            cut_off, WRITERS,
            "round {round}: only {cut_off} of {WRITERS} writers were writing at the kill"
        );
        // The process is dead: `stop` only reaps it and hands the folder back.
        let dir = host.stop();

        // The file a killed SQLite host leaves must be whole. On
        // PostgreSQL the host holds no files: the server, which was not
        // killed, keeps its own; what matters there is the checks below.
        let db = Database::of_data_dir(dir.path());
        if db.backend() == Backend::Sqlite {
            let (mode, integrity) = integrity_check(&db);
            assert_eq!(mode, "wal", "round {round}: journal mode");
            assert_eq!(
                integrity, "ok",
                "round {round}: PRAGMA integrity_check after SIGKILL"
            );
        }

        host = start_on(Some(dir));
        let health = host.get("/server/health", None);
        assert_eq!(health.status, 200, "round {round}: health {}", health.body);
        let stats = host.get("/svc/stats", None);
        assert_eq!(stats.status, 200, "round {round}: stats {}", stats.body);

        let acked_this_round = round_acks.len();
        acks.extend(round_acks);
        // Every acknowledged write of every round so far.
        let lost = lost_writes(&host, &acks);
        total_lost = lost.len();
        println!(
            "durability: round {round}: {acked_this_round} writes acknowledged before SIGKILL, {} in total so far, {} lost",
            acks.len(),
            lost.len()
        );
        assert!(
            lost.is_empty(),
            "round {round}: {} acknowledged writes lost after SIGKILL: {:?}",
            lost.len(),
            &lost[..lost.len().min(20)]
        );
        let mismatches = counter_mismatches(&host);
        assert!(
            mismatches.is_empty(),
            "round {round}: counters differ from records after SIGKILL:\n{}",
            mismatches.join("\n")
        );
        // And it takes writes again.
        let r = host.post(
            "/svc/recordings",
            Some("durable-owner"),
            &rec_body("After the crash", Some("draft")),
        );
        assert_eq!(
            r.status, 201,
            "round {round}: write after restart: {}",
            r.body
        );
    }
    let mut kinds: HashMap<&str, usize> = HashMap::new();
    for a in &acks {
        let k = match a {
            Ack::Recording(_) => "recording creates",
            Ack::RecordingPlay(_) => "recording plays",
            Ack::VideoPlay(_) => "video plays",
            Ack::Like(..) => "likes",
        };
        *kinds.entry(k).or_default() += 1;
    }
    println!(
        "durability: {rounds} SIGKILL rounds survived; {} acknowledged writes ({kinds:?}), {total_lost} lost",
        acks.len()
    );
    assert!(
        refusals.is_empty(),
        "writes refused during the load (not a crash symptom, but each should have succeeded): {:?}",
        &refusals[..refusals.len().min(10)]
    );
}
