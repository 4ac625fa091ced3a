//! Concurrency soak: 64 client threads on loopback, for `SOAK_SECS`
//! seconds (default 20; set it for a longer run), mixing every public read,
//! recording creates, recording and video plays, play completions, likes / unlikes
//! (through `/svc` and through the items API), comments and administrators'
//! imports and deletions of point actions against one host. Afterwards:
//!
//! - no answer was a 5xx, and every answer had a status its endpoint may give
//!   for that call (e.g. 200/400 for a like, 201 for a valid create);
//! - no body ever mentioned a contended database: `database is locked` or
//!   `busy` (SQLite), a serialization failure or a deadlock (PostgreSQL);
//! - every video's stored `likes_count` / `plays_count` equals its like /
//!   play records, and no user liked a video twice;
//! - every `user_stats` row equals a from-scratch recompute written here from
//!   docs/service-api.md rules 2 and 3 (never from the implementation's code),
//!   and every user with points has a stats row.
//!
//! The figures printed at the end (requests, clients, duration, answers by
//! status) go into docs/reliability.md.

use platform_tests::time::{days_ago, now_ms, ts_ms};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use platform_tests::score::weighted;
use platform_tests::{
    encode, id_of, int_of, rec_body, str_of, Answer, Client, Host, HostOptions, Rng, ADMIN_TOKEN,
};
use serde_json::{json, Value};

const CLIENTS: usize = 64;
const VIEWERS: usize = 16;
const VIDEOS: usize = 8;
const REL_TOL: f64 = 1e-9;
const PAST: &str = "2001-01-01T00:00:00.000Z";

fn soak_duration() -> Duration {
    let secs = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(20);
    Duration::from_secs(secs.max(1))
}

// ---------------------------------------------------------------- time

// ---------------------------------------------------------------- client

// ---------------------------------------------------------------- fixture

struct World {
    viewer_tokens: Vec<String>,
    viewer_ids: Vec<String>,
    videos: Vec<(String, String)>,
    /// Recordings anyone may read (published and public): (id, owner token).
    public_recordings: Mutex<Vec<String>>,
    /// Every recording created: (id, owner token).
    recordings: Mutex<Vec<(String, String)>>,
}

/// A recording body of the soak, tagged (so writes carry a JSON array).
fn soak_recording(title: &str, status: &str) -> Value {
    let mut body = rec_body(title, Some(status));
    body["tags"] = json!(["soak"]);
    body
}

fn setup(host: &Host) -> World {
    let viewer_role = host.id_by_name("platform_roles", "Viewer");
    let model_role = host.id_by_name("platform_roles", "Model");
    let viewer_tokens: Vec<String> = (0..VIEWERS).map(|i| format!("soak-viewer-{i}")).collect();
    let rows: Vec<Value> = viewer_tokens
        .iter()
        .map(|t| {
            json!({"first_name": "Soak", "last_name": t, "email": format!("{t}@test.local"),
                   "token": t, "role": viewer_role, "artist_name": t})
        })
        .collect();
    let r = host.post("/items/platform_users", Some(ADMIN_TOKEN), &json!(rows));
    assert_eq!(r.status, 200, "create viewers: {}", r.body);
    let viewer_ids: Vec<String> = r.json()["data"]
        .as_array()
        .expect("viewers")
        .iter()
        .map(id_of)
        .collect();
    let mut models = Vec::new();
    for i in 0..2 {
        let m = host.admin_create(
            "platform_users",
            &json!({"first_name": "Model", "last_name": format!("{i}"),
                    "email": format!("soak-model-{i}@test.local"), "token": format!("soak-model-{i}"),
                    "role": model_role, "slug": format!("soak-model-{i}"),
                    "artist_name": format!("Model {i}")}),
        );
        models.push(id_of(&m));
    }
    let mut videos = Vec::new();
    for i in 0..VIDEOS {
        let slug = format!("soak-video-{i}");
        let v = host.admin_create(
            "videos",
            &json!({"slug": slug, "title": format!("Soak {i}"), "upload_date": PAST}),
        );
        let id = id_of(&v);
        host.admin_create(
            "videos_models",
            &json!({"videos_id": id, "platform_users_id": models[i % models.len()]}),
        );
        videos.push((id, slug));
    }
    for i in 0..3 {
        host.admin_create(
            "articles",
            &json!({"slug": format!("soak-article-{i}"), "title": "A", "featured": true,
                    "publish_date": PAST, "author": models[0]}),
        );
    }
    // Every viewer starts with one shared recording, so plays and comments
    // have targets from the first second.
    let mut public = Vec::new();
    let mut all = Vec::new();
    for t in &viewer_tokens {
        let r = host.post(
            "/svc/recordings",
            Some(t),
            &soak_recording("Seed wave", "published"),
        );
        assert_eq!(r.status, 201, "seed recording: {}", r.body);
        let id = id_of(&r.json());
        let p = host.patch(
            &format!("/svc/recordings/{id}"),
            Some(t),
            &json!({"public": true}),
        );
        assert_eq!(p.status, 200, "share seed recording: {}", p.body);
        public.push(id.clone());
        all.push((id, t.clone()));
    }
    World {
        viewer_tokens,
        viewer_ids,
        videos,
        public_recordings: Mutex::new(public),
        recordings: Mutex::new(all),
    }
}

// ---------------------------------------------------------------- load

/// What one client saw.
#[derive(Default)]
struct Tally {
    requests: u64,
    by_status: BTreeMap<u16, u64>,
    by_op: BTreeMap<&'static str, u64>,
    /// (op, status, body) of answers with a status the endpoint may not give.
    unexpected: Vec<String>,
    /// Bodies mentioning a contended database (locked, busy, a failed
    /// serialization, a deadlock).
    locked: Vec<String>,
    transport: Vec<String>,
    latencies_ms: Vec<u32>,
}

impl Tally {
    fn record(&mut self, op: &'static str, allowed: &[u16], answer: &Answer, took: Duration) {
        self.requests += 1;
        *self.by_op.entry(op).or_default() += 1;
        self.latencies_ms.push(took.as_millis() as u32);
        match answer {
            Err(e) => self.transport.push(format!("{op}: {e}")),
            Ok((status, body)) => {
                *self.by_status.entry(*status).or_default() += 1;
                let lower = body.to_lowercase();
                let contended = [
                    "database is locked",
                    "busy",
                    "could not serialize",
                    "deadlock detected",
                ];
                if contended.iter().any(|text| lower.contains(text)) {
                    self.locked.push(format!("{op} {status}: {body}"));
                }
                if !allowed.contains(status) && self.unexpected.len() < 50 {
                    let body: String = body.chars().take(300).collect();
                    self.unexpected.push(format!("{op} {status}: {body}"));
                }
            }
        }
    }
}

fn json_of(answer: &Answer) -> Option<Value> {
    answer
        .as_ref()
        .ok()
        .and_then(|(_, b)| serde_json::from_str(b).ok())
}

fn client_loop(base: &str, world: &World, n: usize, deadline: Instant) -> Tally {
    let client = Client::new(base);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((n as u64 + 1) * 0x1000_0001));
    let me = n % VIEWERS;
    let token = world.viewer_tokens[me].as_str();
    let mut tally = Tally::default();
    let mut rec_plays: Vec<(String, String, bool)> = Vec::new();
    let mut video_plays: Vec<(String, String)> = Vec::new();
    let mut mine: Vec<String> = Vec::new();
    let mut imported: Vec<String> = Vec::new();
    let mut step = 0u64;
    while Instant::now() < deadline {
        step += 1;
        let video = &world.videos[rng.below(world.videos.len())];
        let public = {
            let list = world.public_recordings.lock().expect("public");
            list[rng.below(list.len())].clone()
        };
        let any_rec = {
            let list = world.recordings.lock().expect("recordings");
            list[rng.below(list.len())].0.clone()
        };
        let started = Instant::now();
        let dice = rng.below(100);
        let (op, allowed, answer): (&'static str, &[u16], Answer) = if dice < 35 {
            let (op, path, auth) = match rng.below(10) {
                0 => ("read stats", "/svc/stats".to_string(), None),
                1 => ("read videos", "/svc/videos?limit=20".to_string(), None),
                2 => ("read video", format!("/svc/videos/{}", video.1), None),
                3 => ("read models", "/svc/models".to_string(), None),
                4 => ("read articles", "/svc/articles".to_string(), None),
                5 => (
                    "read leaderboard",
                    "/svc/gamification/leaderboard?limit=20".to_string(),
                    None,
                ),
                6 => (
                    "read gamification user",
                    format!(
                        "/svc/gamification/user/{}",
                        world.viewer_ids[rng.below(VIEWERS)]
                    ),
                    None,
                ),
                7 => (
                    "read own recordings",
                    "/svc/recordings?limit=10".to_string(),
                    Some(token),
                ),
                8 => (
                    "read community",
                    "/svc/community-recordings?limit=10".to_string(),
                    None,
                ),
                _ => {
                    let id = if !mine.is_empty() && rng.chance(50) {
                        mine[rng.below(mine.len())].clone()
                    } else {
                        public.clone()
                    };
                    (
                        "read recording",
                        format!("/svc/recordings/{id}"),
                        Some(token),
                    )
                }
            };
            (op, &[200], client.call("GET", &path, auth, None))
        } else if dice < 45 {
            let status = if rng.chance(60) { "published" } else { "draft" };
            let answer = client.call(
                "POST",
                "/svc/recordings",
                Some(token),
                Some(&soak_recording(&format!("Soak {n} {step}"), status)),
            );
            if let Some(id) = json_of(&answer).and_then(|v| v["id"].as_str().map(String::from)) {
                world
                    .recordings
                    .lock()
                    .expect("recordings")
                    .push((id.clone(), token.to_string()));
                mine.push(id.clone());
                if status == "published" && rng.chance(50) {
                    let started = Instant::now();
                    let shared = client.call(
                        "PATCH",
                        &format!("/svc/recordings/{id}"),
                        Some(token),
                        Some(&json!({"public": true})),
                    );
                    if matches!(shared, Ok((200, _))) {
                        world.public_recordings.lock().expect("public").push(id);
                    }
                    tally.record("share recording", &[200], &shared, started.elapsed());
                }
            }
            ("create recording", &[201], answer)
        } else if dice < 58 {
            let auth = if rng.chance(80) { Some(token) } else { None };
            let answer = client.call(
                "POST",
                &format!("/svc/recordings/{any_rec}/play"),
                auth,
                None,
            );
            if let Some(play) =
                json_of(&answer).and_then(|v| v["play_id"].as_str().map(String::from))
            {
                rec_plays.push((any_rec.clone(), play, auth.is_some()));
            }
            ("play recording", &[200], answer)
        } else if dice < 68 && !rec_plays.is_empty() {
            let (rec, play, authed) = rec_plays.swap_remove(rng.below(rec_plays.len()));
            let completed = rng.chance(70);
            let answer = client.call(
                "PATCH",
                &format!("/svc/recordings/{rec}/play/{play}"),
                if authed { Some(token) } else { None },
                Some(&json!({"duration_played": 1200, "completed": completed})),
            );
            ("complete recording play", &[200], answer)
        } else if dice < 76 {
            let auth = if rng.chance(70) { Some(token) } else { None };
            let answer = client.call(
                "POST",
                &format!("/svc/videos/{}/play", video.0),
                auth,
                Some(&json!({"session_id": format!("s{n}-{step}")})),
            );
            if let Some(play) =
                json_of(&answer).and_then(|v| v["play_id"].as_str().map(String::from))
            {
                video_plays.push((video.0.clone(), play));
            }
            ("play video", &[200], answer)
        } else if dice < 80 && !video_plays.is_empty() {
            let (v, play) = video_plays.swap_remove(rng.below(video_plays.len()));
            let answer = client.call(
                "PATCH",
                &format!("/svc/videos/{v}/play/{play}"),
                None,
                Some(&json!({"duration_watched": 42, "completed": true})),
            );
            ("complete video play", &[200], answer)
        } else if dice < 84 {
            // Four clients share each viewer: "Already liked" / "Not liked"
            // (400) are expected answers here.
            if rng.chance(55) {
                let answer = client.call(
                    "POST",
                    &format!("/svc/videos/{}/like", video.0),
                    Some(token),
                    None,
                );
                ("like", &[200, 400], answer)
            } else {
                let answer = client.call(
                    "DELETE",
                    &format!("/svc/videos/{}/like", video.0),
                    Some(token),
                    None,
                );
                ("unlike", &[200, 400], answer)
            }
        } else if dice < 91 {
            // The same likes through the items API: a like another client
            // already made is not unique (400); one it already deleted is
            // forbidden (403, as for anything not one's own); a like that
            // another client deleted between its creation and its read-back
            // answers 204, as a create the caller cannot read back does.
            if rng.chance(55) {
                let answer = client.call(
                    "POST",
                    "/items/video_likes",
                    Some(token),
                    Some(&json!({"video_id": video.0, "user_id": world.viewer_ids[me]})),
                );
                ("like through /items", &[200, 204, 400], answer)
            } else {
                let filter =
                    json!({"video_id": {"_eq": video.0}, "user_id": {"_eq": "$CURRENT_USER"}});
                let found = client.call(
                    "GET",
                    &format!(
                        "/items/video_likes?fields=id&filter={}",
                        encode(&filter.to_string())
                    ),
                    Some(token),
                    None,
                );
                let like =
                    json_of(&found).and_then(|v| v["data"][0]["id"].as_str().map(String::from));
                match like {
                    Some(id) => {
                        tally.record("read own like", &[200], &found, started.elapsed());
                        let started = Instant::now();
                        let answer = client.call(
                            "DELETE",
                            &format!("/items/video_likes/{id}"),
                            Some(token),
                            None,
                        );
                        tally.record(
                            "unlike through /items",
                            &[204, 403],
                            &answer,
                            started.elapsed(),
                        );
                        continue;
                    }
                    None => ("read own like", &[200], found),
                }
            }
        } else if dice < 96 {
            let answer = client.call(
                "POST",
                "/items/platform_comments",
                Some(token),
                // A public one: a comment is on an item its author may read.
                Some(&json!({"collection": "recordings", "item": public, "comment": "x"})),
            );
            ("comment", &[200, 204], answer)
        } else if !imported.is_empty() && rng.chance(30) {
            let id = imported.swap_remove(rng.below(imported.len()));
            let answer = client.call(
                "DELETE",
                &format!("/items/user_points/{id}"),
                Some(ADMIN_TOKEN),
                None,
            );
            ("delete imported points", &[204], answer)
        } else {
            // An administrator imports old point actions of any viewer.
            let answer = client.call(
                "POST",
                "/items/user_points",
                Some(ADMIN_TOKEN),
                Some(&json!({"user_id": world.viewer_ids[rng.below(VIEWERS)],
                             "action": "SOAK_IMPORT", "points": 1 + rng.below(20),
                             "date_created": days_ago(rng.below(400) as f64)})),
            );
            if let Some(id) =
                json_of(&answer).and_then(|v| v["data"]["id"].as_str().map(String::from))
            {
                imported.push(id);
            }
            ("import points", &[200], answer)
        };
        tally.record(op, allowed, &answer, started.elapsed());
    }
    tally
}

// ---------------------------------------------------------------- checks

fn check_counters(host: &Host) -> Vec<String> {
    let mut failures = Vec::new();
    let likes = host.admin_all("video_likes", "id,video_id,user_id");
    let plays = host.admin_all("video_plays", "id,video_id");
    let mut like_count: HashMap<String, i64> = HashMap::new();
    let mut pairs: BTreeMap<(String, String), i64> = BTreeMap::new();
    for l in &likes {
        *like_count.entry(str_of(&l["video_id"])).or_default() += 1;
        *pairs
            .entry((str_of(&l["user_id"]), str_of(&l["video_id"])))
            .or_default() += 1;
    }
    for ((user, video), n) in &pairs {
        if *n > 1 {
            failures.push(format!("user {user} has {n} likes of video {video}"));
        }
    }
    let mut play_count: HashMap<String, i64> = HashMap::new();
    for p in &plays {
        *play_count.entry(str_of(&p["video_id"])).or_default() += 1;
    }
    let videos = host.admin_all("videos", "id,slug,likes_count,plays_count");
    for v in &videos {
        let id = str_of(&v["id"]);
        let stored = (
            int_of(&v["likes_count"], "likes_count"),
            int_of(&v["plays_count"], "plays_count"),
        );
        let records = (
            like_count.get(&id).copied().unwrap_or(0),
            play_count.get(&id).copied().unwrap_or(0),
        );
        if stored != records {
            failures.push(format!(
                "video {} stores (likes_count, plays_count) = {stored:?} but has {records:?} records",
                str_of(&v["slug"])
            ));
        }
    }
    println!(
        "soak: {} videos, {} like records, {} video play records",
        videos.len(),
        likes.len(),
        plays.len()
    );
    failures
}

fn check_stats(host: &Host) -> Vec<String> {
    let mut failures = Vec::new();
    let recordings = host.admin_all("recordings", "id,user_created,status");
    let owner: HashMap<String, String> = recordings
        .iter()
        .map(|r| (str_of(&r["id"]), str_of(&r["user_created"])))
        .collect();
    let mut points: HashMap<String, Vec<(i64, i64)>> = HashMap::new();
    for p in host.admin_all("user_points", "user_id,points,date_created") {
        points
            .entry(str_of(&p["user_id"]))
            .or_default()
            .push((int_of(&p["points"], "points"), ts_ms(&p["date_created"])));
    }
    let mut published: HashMap<String, i64> = HashMap::new();
    for r in &recordings {
        if r["status"] == "published" {
            *published.entry(str_of(&r["user_created"])).or_default() += 1;
        }
    }
    let mut playbacks: HashMap<String, i64> = HashMap::new();
    let rec_plays = host.admin_all("recording_plays", "user_id,recording_id");
    for p in &rec_plays {
        let user = str_of(&p["user_id"]);
        if user.is_empty() {
            continue;
        }
        if owner.get(&str_of(&p["recording_id"])) != Some(&user) {
            *playbacks.entry(user).or_default() += 1;
        }
    }
    let mut comments: HashMap<String, i64> = HashMap::new();
    for c in host.admin_all("platform_comments", "user_created,collection") {
        if c["collection"] == "recordings" {
            *comments.entry(str_of(&c["user_created"])).or_default() += 1;
        }
    }
    let mut unlocked: HashMap<String, i64> = HashMap::new();
    for a in host.admin_all("user_achievements", "user_id,date_unlocked") {
        if !a["date_unlocked"].is_null() {
            *unlocked.entry(str_of(&a["user_id"])).or_default() += 1;
        }
    }
    let rows = host.admin_all("user_stats", "*");
    let mut with_row = BTreeSet::new();
    for row in &rows {
        let user = str_of(&row["user_id"]);
        if !with_row.insert(user.clone()) {
            failures.push(format!("user {user} has two stats rows"));
        }
        let get = |m: &HashMap<String, i64>| m.get(&user).copied().unwrap_or(0);
        let pts = points.get(&user).cloned().unwrap_or_default();
        let expected = (
            pts.iter().map(|p| p.0).sum::<i64>(),
            get(&published),
            get(&playbacks),
            get(&comments),
            get(&unlocked),
        );
        let stored = |r: &Value| {
            (
                int_of(&r["total_raw_points"], "total_raw_points"),
                int_of(&r["recordings_count"], "recordings_count"),
                int_of(&r["playbacks_count"], "playbacks_count"),
                int_of(&r["comments_count"], "comments_count"),
                int_of(&r["achievements_count"], "achievements_count"),
            )
        };
        if stored(row) != expected {
            failures.push(format!(
                "stats row of {user}: (raw, recordings, playbacks, comments, achievements) = {:?}, recomputed {expected:?}",
                stored(row)
            ));
        }
        // The endpoint's view: same counters, and rule 2 as of the read.
        let t0 = now_ms();
        let r = host.get(&format!("/svc/gamification/user/{user}"), None);
        let t1 = now_ms();
        assert_eq!(r.status, 200, "gamification user {user}: {}", r.body);
        let st = r.json()["stats"].clone();
        if !st.is_object() {
            failures.push(format!(
                "user {user} has a stats row but the endpoint says {st}"
            ));
            continue;
        }
        if stored(&st) != expected {
            failures.push(format!(
                "endpoint stats of {user}: {:?}, recomputed {expected:?}",
                stored(&st)
            ));
        }
        let actual = st["total_weighted_points"].as_f64().unwrap_or(f64::NAN);
        let (a, b) = (
            weighted(pts.iter().copied(), t0 - 1),
            weighted(pts.iter().copied(), t1 + 1),
        );
        let (lo, hi) = (a.min(b), a.max(b));
        let ok =
            actual >= lo - lo.abs() * REL_TOL - 1e-12 && actual <= hi + hi.abs() * REL_TOL + 1e-12;
        if !ok {
            failures.push(format!(
                "weighted points of {user}: {actual}, rule 2 gives {lo}..{hi}"
            ));
        }
    }
    for user in points.keys() {
        if !with_row.contains(user) {
            failures.push(format!("user {user} has point actions but no stats row"));
        }
    }
    println!(
        "soak: {} stats rows recomputed, {} recordings, {} recording plays, {} users with points",
        rows.len(),
        recordings.len(),
        rec_plays.len(),
        points.len()
    );
    failures
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// One soak at a time in this process: each has the machine to itself.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn soak_64_clients_mixed_load_keeps_every_invariant() {
    let host = Host::start(HostOptions::svc());
    soak(&[&host]);
}

/// The same soak with the clients split between two hosts on one database
/// (docs/decisions.md §8): the invariants are the database's, whichever host
/// wrote.
#[test]
fn soak_split_across_two_hosts_keeps_every_invariant() {
    let first = Host::start(HostOptions::svc());
    let second = first.start_beside(HostOptions::svc());
    soak(&[&first, &second]);
}

/// Runs the soak's clients against `hosts` (client `n` on host `n mod
/// len`), then checks every invariant through the first.
fn soak(hosts: &[&Host]) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let host = hosts[0];
    let world = Arc::new(setup(host));
    let duration = soak_duration();
    let started = Instant::now();
    let deadline = started + duration;
    let handles: Vec<_> = (0..CLIENTS)
        .map(|n| {
            let world = world.clone();
            let base = hosts[n % hosts.len()].base.clone();
            std::thread::Builder::new()
                .name(format!("soak-{n}"))
                .spawn(move || client_loop(&base, &world, n, deadline))
                .expect("spawn client")
        })
        .collect();
    let mut total = Tally::default();
    for h in handles {
        let t = match h.join() {
            Ok(t) => t,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        total.requests += t.requests;
        for (k, v) in t.by_status {
            *total.by_status.entry(k).or_default() += v;
        }
        for (k, v) in t.by_op {
            *total.by_op.entry(k).or_default() += v;
        }
        total.unexpected.extend(t.unexpected);
        total.locked.extend(t.locked);
        total.transport.extend(t.transport);
        total.latencies_ms.extend(t.latencies_ms);
    }
    let elapsed = started.elapsed();
    total.latencies_ms.sort_unstable();
    let server_errors: u64 = total
        .by_status
        .iter()
        .filter(|(k, _)| **k >= 500)
        .map(|(_, v)| v)
        .sum();
    println!(
        "soak: {} requests from {CLIENTS} clients on {} host(s) in {:.1} s ({:.0} req/s; SOAK_SECS={})",
        total.requests,
        hosts.len(),
        elapsed.as_secs_f64(),
        total.requests as f64 / elapsed.as_secs_f64(),
        duration.as_secs()
    );
    println!("soak: answers by status {:?}", total.by_status);
    println!("soak: requests by operation {:?}", total.by_op);
    println!(
        "soak: latency ms p50 {} p99 {} max {}",
        percentile(&total.latencies_ms, 0.5),
        percentile(&total.latencies_ms, 0.99),
        total.latencies_ms.last().copied().unwrap_or(0)
    );
    println!(
        "soak: {} transport errors, {} 5xx, {} unexpected statuses, {} locked/busy bodies",
        total.transport.len(),
        server_errors,
        total.unexpected.len(),
        total.locked.len()
    );
    let logs: Vec<String> = hosts.iter().map(|h| h.log()).collect();
    let logged_failures = logs
        .iter()
        .flat_map(|log| log.lines())
        .filter(|l| {
            (l.contains("hook") && (l.contains("fail") || l.contains("error")))
                || l.contains("gave up")
                || l.contains("busy")
        })
        .take(5)
        .map(String::from)
        .collect::<Vec<_>>();
    let gave_up = logs
        .iter()
        .flat_map(|log| log.lines())
        .filter(|l| l.contains("gave up"))
        .count();
    println!("soak: write transactions that kept conflicting until given up: {gave_up}");
    if !logged_failures.is_empty() {
        println!("soak: failures in the host logs: {logged_failures:#?}");
    }

    assert!(total.requests > 0, "no request was made");
    assert!(
        total.transport.is_empty(),
        "transport errors: {:#?}",
        &total.transport[..total.transport.len().min(10)]
    );
    assert_eq!(
        server_errors, 0,
        "5xx answers: {:?}; first unexpected: {:#?}",
        total.by_status, total.unexpected
    );
    assert!(
        total.locked.is_empty(),
        "bodies mention a locked or busy database: {:#?}",
        &total.locked[..total.locked.len().min(10)]
    );
    assert!(
        total.unexpected.is_empty(),
        "answers with a status the endpoint may not give: {:#?}",
        total.unexpected
    );

    let mut failures = check_counters(host);
    failures.extend(check_stats(host));
    assert!(
        failures.is_empty(),
        "{} invariant failures after the soak:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The hosts are still alive and healthy.
    for h in hosts {
        let health = h.get("/server/health", None);
        assert_eq!(health.status, 200, "{}", health.body);
    }
}
