//! `platform-bench several-hosts`: two hosts on one database against one
//! host, for a read mix and a write mix, with the database round trips each
//! request cost (docs/decisions.md §8).
//!
//! On the data the Directus figures were measured on, each mix is driven at
//! the same concurrency first through one host, then through two hosts on
//! the same database (connections spread over both, as a balancer would).
//! Round trips per request are the hosts' `database_round_trips` metric,
//! summed over the hosts, divided by the answers they gave (warm-up
//! included, since the counter runs through it too).
//!
//! On one machine, two hosts share its cores with each other, the database
//! and the load client: their throughput shows the overhead of a second
//! host, not the scaling of a site. Round trips are what predicts scaling:
//! each host's requests cost the database that many exchanges, whichever
//! host serves them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::Method;
use platform_tests::{Host, HostOptions, ADMIN_TOKEN};
use tempfile::TempDir;

use crate::api::Api;
use crate::compare::directus_data;
use crate::dataset::Dataset;
use crate::driver::{self, Load, Req, Source};
use crate::hosts;
use crate::scenarios::pick;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub seed: u64,
    pub warmup: Duration,
    pub measure: Duration,
    pub concurrency: usize,
}

impl Options {
    pub fn new(seed: u64, measure: Duration) -> Self {
        Self {
            seed,
            warmup: (measure / 2).min(Duration::from_secs(3)),
            measure,
            concurrency: 16,
        }
    }
}

/// A mix of requests, and how its hosts are started.
struct Mix {
    label: &'static str,
    /// `--cache false`: every read goes to the database.
    cache_off: bool,
    /// Like and unlike come in pairs.
    paired: bool,
    source: Source,
}

/// Public reads (the answers every visitor asks for) and a signed-in read
/// of a recording, in turn.
fn read_source(data: &Dataset) -> Source {
    let data = data.clone();
    Arc::new(move |w, i| {
        let token = &data.bench_tokens[w % data.bench_tokens.len()];
        match i % 6 {
            0 => Req::get("/svc/videos?limit=50"),
            1 => {
                let slug = &data.video_slugs[pick(w, i, data.video_slugs.len())];
                Req::get(format!("/svc/videos/{slug}"))
            }
            2 => Req::get("/svc/models"),
            3 => Req::get("/svc/gamification/leaderboard"),
            4 => {
                let user = &data.stat_users[pick(w, i, data.stat_users.len())];
                Req::get(format!("/svc/gamification/user/{user}"))
            }
            _ => {
                let id = &data.public_recordings[pick(w, i, data.public_recordings.len())];
                Req::get(format!("/svc/recordings/{id}")).token(token)
            }
        }
    })
}

/// The writes of a busy site: a like and its unlike on one video, an
/// anonymous video play, a signed-in recording play (which awards points
/// and checks achievements).
fn write_source(data: &Dataset) -> Source {
    let data = data.clone();
    let play_body = Bytes::from_static(br#"{"session_id":"bench"}"#);
    Arc::new(move |w, i| {
        let token = &data.bench_tokens[w % data.bench_tokens.len()];
        // One video per round of four, so the like and unlike match.
        let video = &data.video_ids[pick(w, i / 4, data.video_ids.len())];
        match i % 4 {
            0 => Req::new(Method::POST, format!("/svc/videos/{video}/like"))
                .token(token)
                .tolerate(400),
            1 => Req::new(Method::DELETE, format!("/svc/videos/{video}/like"))
                .token(token)
                .tolerate(400),
            2 => {
                Req::new(Method::POST, format!("/svc/videos/{video}/play")).body(play_body.clone())
            }
            _ => {
                let id = &data.public_recordings[pick(w, i, data.public_recordings.len())];
                Req::new(Method::POST, format!("/svc/recordings/{id}/play")).token(token)
            }
        }
    })
}

/// One mix driven through some hosts.
#[derive(Debug, Clone, Copy)]
struct Figure {
    throughput: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
    round_trips_per_request: f64,
}

/// The sum of the hosts' round-trip counters.
fn round_trips(hosts: &[&Host]) -> Result<u64, String> {
    let mut sum = 0;
    for host in hosts {
        let metrics = Api::new(&host.base).get("/server/metrics", Some(ADMIN_TOKEN))?;
        sum += metrics["data"]["database_round_trips"]
            .as_u64()
            .ok_or_else(|| format!("no database_round_trips in {metrics}"))?;
    }
    Ok(sum)
}

fn drive(opts: &Options, mix: &Mix, hosts: &[&Host]) -> Result<Figure, String> {
    let load = Load {
        concurrency: opts.concurrency,
        warmup: opts.warmup,
        measure: opts.measure,
        paired: mix.paired,
        client_threads: None,
    };
    let bases: Vec<&str> = hosts.iter().map(|h| h.base.as_str()).collect();
    let before = round_trips(hosts)?;
    let outcome = driver::run_across(&bases, load, mix.source.clone())
        .map_err(|e| format!("{} on {} host(s): {e}", mix.label, hosts.len()))?;
    // The metrics requests' own exchanges (token checks) are a handful
    // against thousands of answers.
    let after = round_trips(hosts)?;
    let figure = Figure {
        throughput: outcome.throughput(),
        p50_ms: outcome.p50_ms(),
        p99_ms: outcome.p99_ms(),
        errors: outcome.errors,
        round_trips_per_request: after.saturating_sub(before) as f64
            / outcome.answers.max(1) as f64,
    };
    eprintln!(
        "  {:<22} {} host(s) {:>8.0} req/s  p50 {:>7.2} ms  p99 {:>8.2} ms  round trips/request {:>5.2}  errors {}{}",
        mix.label,
        hosts.len(),
        figure.throughput,
        figure.p50_ms,
        figure.p99_ms,
        figure.round_trips_per_request,
        figure.errors,
        outcome
            .first_error
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default()
    );
    Ok(figure)
}

fn start(mix: &Mix, data: Option<TempDir>, beside: Option<&Host>) -> Result<Host, String> {
    let options = || {
        let options = HostOptions {
            data_dir: data,
            ..HostOptions::svc()
        };
        if mix.cache_off {
            options.arg("--cache").arg("false")
        } else {
            options
        }
    };
    match beside {
        None => hosts::start("first", options),
        Some(first) => hosts::start_beside("second", first, options),
    }
}

/// One host, then two, on the data in `data`; gives the data back.
fn measure_mix(opts: &Options, mix: &Mix, data: TempDir) -> Result<([Figure; 2], TempDir), String> {
    let first = start(mix, Some(data), None)?;
    let one = drive(opts, mix, &[&first])?;
    let second = start(mix, None, Some(&first))?;
    let two = drive(opts, mix, &[&first, &second])?;
    second.stop();
    Ok(([one, two], first.stop()))
}

pub fn run(opts: &Options) -> Result<(), String> {
    let started = Instant::now();
    let backend = std::env::var("TEST_DB").unwrap_or_else(|_| "sqlite".into());
    println!(
        "platform-bench several-hosts: {} hosts on {backend}, seed {}, c={} spread over the hosts, {:.0} s measured per row after {:.0} s warm-up",
        platform_tests::profile(),
        opts.seed,
        opts.concurrency,
        opts.measure.as_secs_f64(),
        opts.warmup.as_secs_f64(),
    );
    let (dataset, mut data) = directus_data(opts.seed)?;
    let mixes = [
        Mix {
            label: "read mix, cache on",
            cache_off: false,
            paired: false,
            source: read_source(&dataset),
        },
        Mix {
            label: "read mix, cache off",
            cache_off: true,
            paired: false,
            source: read_source(&dataset),
        },
        Mix {
            label: "write mix",
            cache_off: false,
            paired: true,
            source: write_source(&dataset),
        },
    ];
    let mut rows = Vec::new();
    for mix in &mixes {
        let (figures, back) = measure_mix(opts, mix, data)?;
        data = back;
        rows.push((mix.label, figures));
    }
    println!(
        "\n| mix | hosts | req/s | p50 ms | p99 ms | errors | round trips / request |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for (label, figures) in &rows {
        for (hosts, f) in [1, 2].iter().zip(figures) {
            println!(
                "| {label} | {hosts} | {:.0} | {:.2} | {:.2} | {} | {:.2} |",
                f.throughput, f.p50_ms, f.p99_ms, f.errors, f.round_trips_per_request
            );
        }
    }
    println!();
    for (label, [one, two]) in &rows {
        println!(
            "{label}: two hosts / one host throughput {:.2}, round trips per request {:.2} -> {:.2}",
            two.throughput / one.throughput.max(1e-9),
            one.round_trips_per_request,
            two.round_trips_per_request,
        );
    }
    println!(
        "(two hosts share this machine's {} cores with the database and the load client: throughput shows the second host's overhead, not scaling)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("total time {:.0}s", started.elapsed().as_secs_f64());
    Ok(())
}
