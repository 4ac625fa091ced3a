//! `platform-bench memory`: the host's peak memory under hostile bodies.
//!
//! On a host with the demo data: 8 concurrent anonymous `POST
//! /svc/videos/:id/play` with a 14 MiB body of small numbers (under an
//! unknown key, then under `session_id`), then 2 concurrent viewers posting
//! 14 MiB recordings, then 2 concurrent administrators listing every
//! recording through the items API. The host's peak RSS (`VmHWM`, reset
//! after start and before the last phase) is printed after each phase;
//! the highest is held against the 256 MiB target.

use std::time::Instant;

use platform_tests::{HostOptions, ADMIN_TOKEN};

use crate::api::Api;
use crate::hosts;
use crate::report::mb;

/// About 14 MiB: the body size the platform accepts (16 MiB) less room.
const BODY_NUMBERS: usize = 7 * 1024 * 1024;
const TARGET_MB: f64 = 256.0;
const DEMO_VIDEO: &str = "00000000-0000-4000-a000-000000000001";

fn numbers() -> String {
    let mut s = String::with_capacity(BODY_NUMBERS * 2);
    for i in 0..BODY_NUMBERS {
        if i > 0 {
            s.push(',');
        }
        s.push('1');
    }
    s
}

/// A recording of about 14 MiB: events of the usual shape.
fn big_recording() -> Vec<u8> {
    let event = r#"{"timestamp":1,"deviceIndex":0,"deviceName":"D","actuatorIndex":0,"actuatorType":"Vibrate","value":0.5}"#;
    let count = 14 * 1024 * 1024 / (event.len() + 1);
    let events = vec![event; count].join(",");
    format!(
        r#"{{"title":"big","duration":1000,"device_info":[{{"index":0,"name":"D","capabilities":["Vibrate"]}}],"events":[{events}]}}"#
    )
    .into_bytes()
}

/// Sends `body` to `path` from `n` threads at once; the statuses.
fn concurrently(api: &Api, path: &str, tokens: &[Option<&str>], body: &[u8]) -> Vec<String> {
    std::thread::scope(|scope| {
        let sending: Vec<_> = tokens
            .iter()
            .map(|token| scope.spawn(move || api.post(path, *token, body)))
            .collect();
        sending
            .into_iter()
            .map(|s| match s.join() {
                Ok(Ok(_)) => "2xx".to_string(),
                // The status and error text (or the transport's error: a
                // host refusing a declared size answers before the body
                // is sent, and the client's write fails), after the
                // request line.
                Ok(Err(e)) => {
                    let what = e.strip_prefix(&format!("POST {path}: ")).unwrap_or(&e);
                    // A transport error names the URL first.
                    let what = match what.strip_prefix("transport error http") {
                        Some(rest) => rest.rsplit_once(": ").map_or(what, |(_, e)| e),
                        None => what,
                    };
                    what.chars().take(60).collect()
                }
                Err(_) => "panicked".into(),
            })
            .collect()
    })
}

pub fn run() -> Result<(), String> {
    let started = Instant::now();
    let host = hosts::start("demo", || HostOptions::svc().arg("--demo"))?;
    let api = Api::new(&host.base);
    hosts::reset_peak_rss(&host)?;
    let peak = || host.peak_rss_kib().map(mb).unwrap_or(f64::NAN);
    println!("host started, peak RSS reset: {:.0} MB", peak());
    let numbers = numbers();
    let play = format!("/svc/videos/{DEMO_VIDEO}/play");
    let anonymous = [None; 8];
    let mut worst: f64 = 0.0;
    for (what, body) in [
        (
            "8 anonymous plays, 14 MiB under an unknown key",
            format!(r#"{{"session_id":"s","junk":[{numbers}]}}"#),
        ),
        (
            "8 anonymous plays, 14 MiB under session_id",
            format!(r#"{{"session_id":[{numbers}]}}"#),
        ),
    ] {
        let answers = concurrently(&api, &play, &anonymous, body.as_bytes());
        worst = worst.max(peak());
        println!("{what}: peak RSS {:.0} MB ({answers:?})", peak());
    }
    drop(numbers);
    let recording = big_recording();
    let viewers = [Some("demo-viewer-token"), Some("demo-viewer2-token")];
    let answers = concurrently(&api, "/svc/recordings", &viewers, &recording);
    worst = worst.max(peak());
    println!(
        "2 viewers' recordings of {} MiB: peak RSS {:.0} MB ({answers:?})",
        recording.len() / (1024 * 1024),
        peak()
    );
    drop(recording);
    // This phase's own peak (the earlier ones are counted in `worst`).
    hosts::reset_peak_rss(&host)?;
    let lists: Vec<String> = std::thread::scope(|scope| {
        let reading: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| api.get("/items/recordings?limit=-1", Some(ADMIN_TOKEN))))
            .collect();
        reading
            .into_iter()
            .map(|r| match r.join() {
                Ok(Ok(_)) => "2xx".to_string(),
                Ok(Err(e)) => e.chars().take(60).collect(),
                Err(_) => "panicked".into(),
            })
            .collect()
    });
    worst = worst.max(peak());
    println!(
        "2 administrators listing /items/recordings (both recordings), peak reset before: peak RSS {:.0} MB ({lists:?})",
        peak()
    );
    let verdict = if worst < TARGET_MB { "PASS" } else { "MISS" };
    println!(
        "{verdict} host peak RSS through hostile bodies, MB: {worst:.0} (target < {TARGET_MB:.0})"
    );
    println!("total time {:.0}s", started.elapsed().as_secs_f64());
    Ok(())
}
