//! The gamification benchmark: the cost of a play award must not grow with
//! the player's history, and reads must stay cheap with many users.

use std::time::Instant;

use platform_tests::{Host, ADMIN_TOKEN};
use serde_json::{json, Value};

use crate::hosts;
use crate::stats::{ms, Samples};
use crate::time::days_ago;

pub struct Config {
    /// Prior point actions of the heavy player.
    pub prior_points: usize,
    /// Users having stats rows, for the leaderboard and ranks.
    pub users: usize,
    /// Measured requests per scenario.
    pub requests: usize,
}

/// Records per import request: as many as the host takes.
const CHUNK: usize = crate::api::MAX_BATCH;

/// Creates `items` in chunks through the items API (admin import).
fn import(
    host: &Host,
    collection: &str,
    items: impl Iterator<Item = Value>,
) -> Result<usize, String> {
    let mut batch = Vec::with_capacity(CHUNK);
    let mut total = 0;
    let flush = |batch: &mut Vec<Value>| -> Result<(), String> {
        if batch.is_empty() {
            return Ok(());
        }
        let r = host.post(
            &format!("/items/{collection}?fields=id"),
            Some(ADMIN_TOKEN),
            &Value::Array(std::mem::take(batch)),
        );
        hosts::succeeded(&r, &format!("import into {collection}"))
    };
    for item in items {
        batch.push(item);
        total += 1;
        if batch.len() == CHUNK {
            flush(&mut batch)?;
        }
    }
    flush(&mut batch)?;
    Ok(total)
}

fn timed(samples: &mut Samples, work: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let started = Instant::now();
    work()?;
    samples.push(started.elapsed());
    Ok(())
}

/// What the gamification benchmark measured.
pub struct Figures {
    pub prior_points: usize,
    pub users_with_stats: usize,
    pub light_plays: Samples,
    pub heavy_plays: Samples,
    pub board: Samples,
    pub summary: Samples,
}

impl Figures {
    /// p50 latency of a play award with `prior_points` / with 10 prior points.
    pub fn ratio(&self) -> f64 {
        ms(self.heavy_plays.median()) / ms(self.light_plays.median()).max(1e-9)
    }
}

/// Runs the benchmark and prints its figures; fails when the play award
/// ratio exceeds 2.
pub fn run(config: &Config) -> Result<(), String> {
    let figures = measure(config)?;
    print(&figures);
    let ratio = figures.ratio();
    if ratio > 2.0 {
        return Err(format!("play latency ratio {ratio:.2} exceeds 2"));
    }
    Ok(())
}

pub fn measure(config: &Config) -> Result<Figures, String> {
    eprintln!("starting a {} host…", platform_tests::profile());
    let host: Host = hosts::dynamic(None)?;
    let started = Instant::now();

    host.user(Some("Model"), "bench-owner");
    let light = host.user(Some("Viewer"), "bench-light");
    let heavy = host.user(Some("Viewer"), "bench-heavy");
    let recording = host.post(
        "/svc/recordings",
        Some("bench-owner"),
        &json!({"title": "Bench", "duration": 1000, "device_info": [], "status": "published",
                "events": [{"timestamp": 0, "value": 1}]}),
    );
    hosts::succeeded(&recording, "create the recording")?;
    let recording = recording.json()["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    eprintln!(
        "importing {} point actions of one player…",
        config.prior_points
    );
    let n = config.prior_points.max(1);
    import(
        &host,
        "user_points",
        (0..n).map(|i| {
            json!({"user_id": heavy, "action": "RECORDING_PLAY", "points": 10, "recording_id": recording,
                   "date_created": days_ago(365.0 * (n - i) as f64 / n as f64)})
        }),
    )?;
    import(
        &host,
        "user_points",
        (0..10).map(|i| {
            json!({"user_id": light, "action": "RECORDING_PLAY", "points": 10, "recording_id": recording,
                   "date_created": days_ago(10.0 - i as f64)})
        }),
    )?;

    eprintln!("importing {} users with stats…", config.users);
    let mut user_ids = Vec::with_capacity(config.users);
    for chunk_start in (0..config.users).step_by(CHUNK) {
        let end = (chunk_start + CHUNK).min(config.users);
        let batch: Vec<Value> = (chunk_start..end)
            .map(|i| json!({"first_name": "User", "last_name": i.to_string(), "artist_name": format!("Artist {i}")}))
            .collect();
        let r = host.post(
            "/items/platform_users?fields=id",
            Some(ADMIN_TOKEN),
            &Value::Array(batch),
        );
        hosts::succeeded(&r, "import users")?;
        for u in r.json()["data"].as_array().into_iter().flatten() {
            if let Some(id) = u["id"].as_str() {
                user_ids.push(id.to_string());
            }
        }
    }
    // Spread sums so ranks are all different; stats as a recalculation
    // would leave them (an import, not the award path).
    import(
        &host,
        "user_stats",
        user_ids.iter().enumerate().map(|(i, id)| {
            let raw = (i % 5000) as i64 * 10;
            json!({"user_id": id, "total_raw_points": raw, "total_weighted_points": raw as f64 * 0.9,
                   "decay_sum": raw as f64 * 1.1 + i as f64 * 1e-6, "recordings_count": i % 7,
                   "playbacks_count": i % 11, "achievements_count": i % 3,
                   "last_updated": days_ago(0.0)})
        }),
    )?;
    eprintln!("data ready in {:.1?}", started.elapsed());

    let play = |token: &str| -> Result<(), String> {
        let r = host.request(
            "POST",
            &format!("/svc/recordings/{recording}/play"),
            Some(token),
            None,
        );
        hosts::succeeded(&r, "play")
    };
    // The first award of each player creates its stats row from scratch
    // (a one-time rescan); then warm up.
    for _ in 0..20 {
        play("bench-light")?;
        play("bench-heavy")?;
    }

    let (mut light_plays, mut heavy_plays) = (Samples::default(), Samples::default());
    for _ in 0..config.requests {
        timed(&mut light_plays, || play("bench-light"))?;
        timed(&mut heavy_plays, || play("bench-heavy"))?;
    }
    let mut board = Samples::default();
    let mut summary = Samples::default();
    for i in 0..config.requests {
        timed(&mut board, || {
            hosts::succeeded(
                &host.get("/svc/gamification/leaderboard", None),
                "leaderboard",
            )
        })?;
        let user = if i % 2 == 0 {
            heavy.clone()
        } else {
            user_ids[(i * 7919) % user_ids.len().max(1)].clone()
        };
        timed(&mut summary, || {
            hosts::succeeded(
                &host.get(&format!("/svc/gamification/user/{user}"), None),
                "user",
            )
        })?;
    }

    Ok(Figures {
        prior_points: config.prior_points,
        users_with_stats: user_ids.len() + 2,
        light_plays,
        heavy_plays,
        board,
        summary,
    })
}

pub fn print(f: &Figures) {
    println!(
        "gamification benchmark ({} host, {} requests per scenario, sequential keep-alive)",
        platform_tests::profile(),
        f.light_plays.len()
    );
    println!("{:<66} {:>9} {:>9}", "scenario", "p50 ms", "p95 ms");
    let row = |name: &str, s: &Samples| {
        println!(
            "{name:<66} {:>9.3} {:>9.3}",
            ms(s.median()),
            ms(s.quantile(0.95))
        );
    };
    row(
        "POST /svc/recordings/:id/play, player with 10 prior points",
        &f.light_plays,
    );
    row(
        &format!(
            "POST /svc/recordings/:id/play, player with {} prior points",
            f.prior_points
        ),
        &f.heavy_plays,
    );
    row(
        &format!(
            "GET /svc/gamification/leaderboard ({} users with stats)",
            f.users_with_stats
        ),
        &f.board,
    );
    row("GET /svc/gamification/user/:id (same)", &f.summary);
    println!(
        "play latency ratio {}/10 prior points: {:.2} (target <= 2)",
        f.prior_points,
        f.ratio()
    );
}
