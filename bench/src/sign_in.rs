//! `platform-bench sign-in`: what password hashing costs the platform.
//!
//! On a demo host: the time of a sign-in with a wrong password against one
//! with an unknown email (the decoy hash should make them alike), then the
//! latency of `GET /svc/stats` and `GET /server/health` alone and while
//! a flood of sign-ins runs (argon2 hashing is bounded to half the cores,
//! so the other routes should keep theirs).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::Method;
use platform_tests::HostOptions;

use crate::driver::{self, Load, Req};
use crate::hosts;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Sign-ins timed per kind.
    pub attempts: usize,
    pub measure: Duration,
    /// Concurrent sign-ins of the flood.
    pub flood: usize,
}

fn login_body(email: &str, password: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"email":"{email}","password":"{password}","mode":"json"}}"#
    ))
}

fn login(email: &str, password: &str) -> Req {
    Req::new(Method::POST, "/auth/login")
        .body(login_body(email, password))
        .tolerate(401)
}

/// The median latency of a sign-in with `email` and `password`, sent `n`
/// times one after another (a refusal is an answer like any other here).
fn median_ms(base: &str, email: &str, password: &str, n: usize) -> Result<f64, String> {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    let body = login_body(email, password);
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let result = agent
            .post(&format!("{base}/auth/login"))
            .set("Content-Type", "application/json")
            .send_bytes(&body);
        match result {
            Ok(_) | Err(ureq::Error::Status(_, _)) => {}
            Err(e) => return Err(format!("POST /auth/login: {e}")),
        }
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    Ok(times.get(times.len() / 2).copied().unwrap_or(f64::NAN))
}

/// p50 and p99 (ms) and throughput of `path` at c=4 for `measure`.
fn read_latency(base: &str, path: &str, measure: Duration) -> Result<(f64, f64, f64), String> {
    let outcome = driver::run(
        base,
        Load {
            concurrency: 4,
            warmup: Duration::from_millis(500),
            measure,
            paired: false,
            client_threads: Some(1),
        },
        Arc::new({
            let path = path.to_string();
            move |_, _| Req::get(path.clone())
        }),
    )?;
    Ok((outcome.p50_ms(), outcome.p99_ms(), outcome.throughput()))
}

pub fn run(opts: &Options) -> Result<(), String> {
    // What is measured is the cost of checking passwords: the sign-in
    // throttle (on by default) would answer most of the flood 429 without
    // checking any.
    let host = hosts::start("demo", || {
        let mut opts = HostOptions::svc().arg("--demo");
        opts.env
            .push(("LOGIN_THROTTLE_ENABLED".into(), "false".into()));
        opts
    })?;
    let base = host.base.clone();
    println!(
        "platform-bench sign-in: {} host, demo data, {} cores",
        platform_tests::profile(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let wrong = median_ms(&base, "victor@demo.local", "wrong", opts.attempts)?;
    let unknown = median_ms(&base, "nobody@demo.local", "wrong", opts.attempts)?;
    let right = median_ms(&base, "victor@demo.local", "demo-password", opts.attempts)?;
    println!(
        "\nsign-in median of {} each: wrong password {wrong:.1} ms, unknown email {unknown:.1} ms (ratio {:.2}), right password {right:.1} ms",
        opts.attempts,
        unknown / wrong.max(1e-9)
    );

    println!("\n| route | alone p50 ms | p99 ms | req/s | during {} concurrent sign-ins p50 ms | p99 ms | req/s |\n|---|---:|---:|---:|---:|---:|---:|", opts.flood);
    for path in ["/server/health", "/svc/stats"] {
        let alone = read_latency(&base, path, opts.measure)?;
        let logins = std::sync::atomic::AtomicU64::new(0);
        let during = std::thread::scope(|scope| {
            let (base, logins) = (&base, &logins);
            let flood = scope.spawn(move || {
                driver::run(
                    base,
                    Load {
                        concurrency: opts.flood,
                        warmup: Duration::ZERO,
                        measure: opts.measure + Duration::from_secs(2),
                        paired: false,
                        client_threads: Some(1),
                    },
                    Arc::new(|w, i| {
                        if (w + i as usize) % 2 == 0 {
                            login("victor@demo.local", "wrong")
                        } else {
                            login("nobody@demo.local", "wrong")
                        }
                    }),
                )
                .map(|o| {
                    logins.store(o.answers, std::sync::atomic::Ordering::Relaxed);
                })
            });
            // Let the flood fill its queue first.
            std::thread::sleep(Duration::from_millis(500));
            let measured = read_latency(base, path, opts.measure);
            let flooded = flood
                .join()
                .map_err(|_| "the sign-in flood panicked".to_string())
                .and_then(|r| r);
            flooded.and(measured)
        })?;
        println!(
            "| `GET {path}` | {:.2} | {:.2} | {:.0} | {:.2} | {:.2} | {:.0} |",
            alone.0, alone.1, alone.2, during.0, during.1, during.2
        );
        eprintln!(
            "  {path}: {} sign-ins answered during the flood",
            logins.load(std::sync::atomic::Ordering::Relaxed)
        );
    }
    Ok(())
}
