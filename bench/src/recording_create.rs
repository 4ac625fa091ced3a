//! The recording-create benchmark: `POST /svc/recordings` (1,000 events)
//! must cost the same for an owner with 10 prior recordings and for one
//! with 20,000, as a draft and published (its RECORDING_CREATE award and
//! the `recordings` achievement check): the owner's stats row follows each
//! publication by one, nothing recounts the owner's history.

use std::time::Instant;

use platform_tests::{Host, ADMIN_TOKEN};
use serde_json::{json, Value};

use crate::api::MAX_BATCH;
use crate::dataset::new_recording_body;
use crate::hosts;
use crate::stats::{ms, Samples};

pub struct Config {
    /// Prior recordings of the heavy owner (the light one has 10).
    pub prior: usize,
    /// Events of every recording, prior and posted.
    pub events: usize,
    /// Measured requests per owner and body.
    pub requests: usize,
}

/// Prior recordings of the light owner.
const LIGHT_PRIOR: usize = 10;

/// Recordings per import request: each carries its events (~110 KB for
/// 1,000), so a request stays far below the host's 16 MiB body limit.
const IMPORT_CHUNK: usize = 50;

/// Requests per owner whose database work is counted.
const COUNTED: u64 = 20;

/// One owner's figures for one body.
pub struct Series {
    pub latency: Samples,
    /// Database round trips per request.
    pub round_trips: f64,
    /// Rows the database returned per request.
    pub rows_read: f64,
}

/// What the benchmark measured: (light, heavy) per body.
pub struct Figures {
    pub prior: usize,
    pub events: usize,
    pub draft: (Series, Series),
    pub published: (Series, Series),
}

impl Figures {
    /// p50 latency, heavy owner / light owner.
    pub fn ratio(pair: &(Series, Series)) -> f64 {
        ms(pair.1.latency.median()) / ms(pair.0.latency.median()).max(1e-9)
    }
}

/// `count` published recordings of `owner`, imported as admin through the
/// items API (their awards and stats follow, as for any write).
fn import_prior(host: &Host, owner: &str, recording: &Value, count: usize) -> Result<(), String> {
    let started = Instant::now();
    let mut done = 0;
    while done < count {
        let n = IMPORT_CHUNK.min(MAX_BATCH).min(count - done);
        let batch: Vec<Value> = (0..n)
            .map(|_| {
                let mut r = recording.clone();
                r["user_created"] = json!(owner);
                r["status"] = json!("published");
                r
            })
            .collect();
        let r = host.post(
            "/items/recordings?fields=id",
            Some(ADMIN_TOKEN),
            &Value::Array(batch),
        );
        hosts::succeeded(&r, "import recordings")?;
        done += n;
        if done % 2_000 < n || done == count {
            eprintln!(
                "  recordings of one owner: {done}/{count} in {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

/// The database counters of `/server/metrics`: (round trips, rows read).
fn counters(host: &Host) -> (u64, u64) {
    (
        host.metric("database_round_trips"),
        host.metric("database_rows_read"),
    )
}

fn create(host: &Host, token: &str, body: &[u8]) -> Result<(), String> {
    let r = host.request("POST", "/svc/recordings", Some(token), Some(body));
    hosts::succeeded(&r, "POST /svc/recordings")
}

/// Database work per request of `COUNTED` creates by `token`.
fn counted(host: &Host, token: &str, body: &[u8]) -> Result<(f64, f64), String> {
    let (trips, rows) = counters(host);
    for _ in 0..COUNTED {
        create(host, token, body)?;
    }
    let (trips_after, rows_after) = counters(host);
    let per = |a: u64, b: u64| a.saturating_sub(b) as f64 / COUNTED as f64;
    Ok((per(trips_after, trips), per(rows_after, rows)))
}

/// Light and heavy owners creating `body`, alternately.
fn series(host: &Host, body: &[u8], requests: usize) -> Result<(Series, Series), String> {
    let (light_trips, light_rows) = counted(host, "rec-light", body)?;
    let (heavy_trips, heavy_rows) = counted(host, "rec-heavy", body)?;
    let (mut light, mut heavy) = (Samples::default(), Samples::default());
    for _ in 0..requests {
        for (token, samples) in [("rec-light", &mut light), ("rec-heavy", &mut heavy)] {
            let started = Instant::now();
            create(host, token, body)?;
            samples.push(started.elapsed());
        }
    }
    Ok((
        Series {
            latency: light,
            round_trips: light_trips,
            rows_read: light_rows,
        },
        Series {
            latency: heavy,
            round_trips: heavy_trips,
            rows_read: heavy_rows,
        },
    ))
}

pub fn measure(config: &Config) -> Result<Figures, String> {
    eprintln!("starting a {} host…", platform_tests::profile());
    let host: Host = hosts::dynamic(None)?;
    let started = Instant::now();
    let light = host.user(Some("Viewer"), "rec-light");
    let heavy = host.user(Some("Viewer"), "rec-heavy");
    let draft = new_recording_body(7, config.events)?;
    let recording: Value =
        serde_json::from_slice(&draft).map_err(|e| format!("the recording body: {e}"))?;
    let mut published = recording.clone();
    published["status"] = json!("published");
    let published = serde_json::to_vec(&published).map_err(|e| format!("the body: {e}"))?;

    eprintln!(
        "importing 10 and {} recordings of {} events…",
        config.prior, config.events
    );
    import_prior(&host, &light, &recording, LIGHT_PRIOR)?;
    import_prior(&host, &heavy, &recording, config.prior)?;
    eprintln!("data ready in {:.1?}", started.elapsed());
    // Warm up (every statement prepared, caches filled).
    for _ in 0..5 {
        for token in ["rec-light", "rec-heavy"] {
            create(&host, token, &draft)?;
            create(&host, token, &published)?;
        }
    }
    Ok(Figures {
        prior: config.prior,
        events: config.events,
        draft: series(&host, &draft, config.requests)?,
        published: series(&host, &published, config.requests)?,
    })
}

pub fn print(f: &Figures) {
    println!(
        "recording-create benchmark ({} host, {} requests per owner and body, sequential keep-alive, owners alternating)",
        platform_tests::profile(),
        f.draft.0.latency.len()
    );
    println!(
        "{:<62} {:>9} {:>9} {:>12} {:>10}",
        format!("POST /svc/recordings, {} events", f.events),
        "p50 ms",
        "p95 ms",
        "round trips",
        "rows read"
    );
    for (kind, pair) in [("draft", &f.draft), ("published", &f.published)] {
        for (prior, s) in [(LIGHT_PRIOR, &pair.0), (f.prior, &pair.1)] {
            println!(
                "{:<62} {:>9.3} {:>9.3} {:>12.1} {:>10.1}",
                format!("{kind}, owner with {prior} prior recordings"),
                ms(s.latency.median()),
                ms(s.latency.quantile(0.95)),
                s.round_trips,
                s.rows_read
            );
        }
    }
    for (kind, pair) in [("draft", &f.draft), ("published", &f.published)] {
        println!(
            "create latency ratio {}/{LIGHT_PRIOR} prior recordings, {kind}: {:.2} (target <= 1.5)",
            f.prior,
            Figures::ratio(pair)
        );
    }
}

/// The target lines: the heavy owner's p50 within 1.5x of the light one's.
pub fn checks(f: &Figures) -> Vec<crate::report::Check> {
    [("draft", &f.draft), ("published", &f.published)]
        .into_iter()
        .map(|(kind, pair)| {
            crate::report::Check::at_most(
                format!(
                    "recording create p50 latency ({kind}), {}/{LIGHT_PRIOR} prior recordings",
                    f.prior
                ),
                Figures::ratio(pair),
                1.5,
            )
        })
        .collect()
}

/// Runs the benchmark and prints its figures and targets; fails when a
/// target is missed.
pub fn run(config: &Config) -> Result<(), String> {
    let figures = measure(config)?;
    print(&figures);
    println!();
    let checks = checks(&figures);
    for c in &checks {
        println!("{}", c.line());
    }
    match checks.iter().find(|c| !c.pass()) {
        Some(missed) => Err(format!("missed: {}", missed.line())),
        None => Ok(()),
    }
}
