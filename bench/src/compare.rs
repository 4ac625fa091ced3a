//! `platform-bench compare`: the comparison table with Directus 11 on the
//! same data, for this host, answer cache on, cache off and signed in.
//!
//! The data is what the Directus figures were measured on: 2,000 videos
//! with one to three models and a movie each, 20,000 likes, 50,000 plays and
//! 10,000 users with stats rows. Every row is measured on a fresh host
//! process over the same database (c=16, keep-alive), so one row's
//! aftermath (a warm answer cache, recordings written) never helps another.
//! The targets are throughput as a share of `/server/ping` measured in the
//! same column, since this machine is noisy.

use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::Method;
use platform_tests::{Host, HostOptions};
use tempfile::TempDir;

use crate::api::Api;
use crate::dataset::{new_recording_body, Dataset, Generator, Sizes};
use crate::driver::{self, Load, Req};
use crate::hosts;
use crate::report::{mb, Check};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub seed: u64,
    pub warmup: Duration,
    pub measure: Duration,
    pub concurrency: usize,
    /// Only these rows (ids: ping, videos-50, videos-all, leaderboard,
    /// recording-post); ping is always measured, the targets need it.
    pub only: Option<Vec<String>>,
    /// Keep the data folder at the end (its path is printed), to start a
    /// host on it by hand (profiling).
    pub keep: bool,
    /// Threads of the load client: 1, as `wrk -t1` measured Directus and
    /// the figures, so the ping the targets divide by is bounded
    /// the same way.
    pub client_threads: usize,
}

impl Options {
    pub fn new(seed: u64, measure: Duration) -> Self {
        Self {
            seed,
            warmup: (measure / 2).min(Duration::from_secs(5)),
            measure,
            concurrency: 16,
            only: None,
            keep: false,
            client_threads: 1,
        }
    }
}

/// The data the Directus figures were measured on.
pub fn directus_sizes() -> Sizes {
    Sizes {
        models: 200,
        videos: 2_000,
        files: 500,
        likes: 20_000,
        video_plays: 50_000,
        // A few, so the dataset has every kind of record; the table reads
        // none of them.
        recordings: 20,
        events_per_recording: 1_000,
        users: 10_000,
        point_actions: 20_000,
        articles: 50,
        analytics_videos: 50,
        bench_users: 16,
    }
}

/// The data the Directus figures were measured on, generated through a
/// host that is then stopped: the dataset's handles and the data folder.
pub fn directus_data(seed: u64) -> Result<(Dataset, TempDir), String> {
    eprintln!("== generating the Directus-equivalent data");
    let host = hosts::dynamic(None)?;
    let dataset = Generator::new(&Api::new(&host.base), directus_sizes(), seed, false).run()?;
    Ok((dataset, host.stop()))
}

/// How the host is started and who asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    /// Default host, anonymous reads.
    CacheOn,
    /// `--cache false`, anonymous reads.
    CacheOff,
    /// Default host, every request with a viewer's token.
    SignedIn,
}

const COLUMNS: [Column; 3] = [Column::CacheOn, Column::CacheOff, Column::SignedIn];

impl Column {
    fn name(self) -> &'static str {
        match self {
            Column::CacheOn => "answer cache on",
            Column::CacheOff => "cache off",
            Column::SignedIn => "signed in",
        }
    }
}

/// One row of the table.
struct Line {
    id: &'static str,
    label: &'static str,
    /// Directus 11.13 on SQLite, same data, same load, req/s.
    directus: f64,
    /// Cache-off throughput as a percentage of ping, at least.
    target_percent: Option<f64>,
    /// Sent with a viewer's token whatever the column.
    always_signed_in: bool,
}

const LINES: [Line; 5] = [
    Line {
        id: "ping",
        label: "`GET /server/ping`",
        directus: 2_929.0,
        target_percent: None,
        always_signed_in: false,
    },
    Line {
        id: "videos-50",
        label: "`GET /svc/videos?limit=50`",
        directus: 60.0,
        target_percent: Some(5.0),
        always_signed_in: false,
    },
    Line {
        id: "videos-all",
        label: "`GET /svc/videos` (all)",
        directus: 5.0,
        target_percent: Some(0.2),
        always_signed_in: false,
    },
    Line {
        id: "leaderboard",
        label: "leaderboard, top 100",
        directus: 101.0,
        target_percent: Some(9.0),
        always_signed_in: false,
    },
    Line {
        id: "recording-post",
        label: "`POST /svc/recordings`, 1,000 events",
        directus: 28.8,
        target_percent: Some(1.8),
        always_signed_in: true,
    },
];

fn request(line: &Line, token: Option<&str>, recording: &Bytes) -> Req {
    let req = match line.id {
        "ping" => Req::get("/server/ping"),
        "videos-50" => Req::get("/svc/videos?limit=50"),
        "videos-all" => Req::get("/svc/videos"),
        "leaderboard" => Req::get("/svc/gamification/leaderboard"),
        _ => Req::new(Method::POST, "/svc/recordings").body(recording.clone()),
    };
    match token {
        Some(t) => req.token(t),
        None => req,
    }
}

/// One measurement.
#[derive(Debug, Clone, Copy)]
struct Figure {
    throughput: f64,
    p50_ms: f64,
    errors: u64,
    peak_rss_kib: Option<u64>,
}

fn start(column: Column, data: TempDir) -> Result<Host, String> {
    hosts::start(column.name(), || {
        let options = HostOptions {
            data_dir: Some(data),
            ..HostOptions::svc()
        };
        match column {
            Column::CacheOff => options.arg("--cache").arg("false"),
            _ => options,
        }
    })
}

fn measure(
    opts: &Options,
    column: Column,
    line: &Line,
    data: TempDir,
    dataset: &Dataset,
    recording: &Bytes,
) -> Result<(Figure, TempDir), String> {
    let host = start(column, data)?;
    hosts::reset_peak_rss(&host)?;
    let tokens = dataset.bench_tokens.clone();
    let signed_in = line.always_signed_in || column == Column::SignedIn;
    let req = |worker: usize| {
        let token = signed_in.then(|| tokens[worker % tokens.len()].as_str());
        request(line, token, recording)
    };
    let load = Load {
        concurrency: opts.concurrency,
        warmup: opts.warmup,
        measure: opts.measure,
        paired: false,
        client_threads: Some(opts.client_threads),
    };
    let requests: Vec<Req> = (0..opts.concurrency).map(req).collect();
    let outcome = driver::run(
        &host.base,
        load,
        std::sync::Arc::new(move |w, _| requests[w % requests.len()].clone()),
    )
    .map_err(|e| format!("{} ({}): {e}", line.id, column.name()))?;
    let figure = Figure {
        throughput: outcome.throughput(),
        p50_ms: outcome.p50_ms(),
        errors: outcome.errors,
        peak_rss_kib: host.peak_rss_kib(),
    };
    eprintln!(
        "  {:<15} {:<16} {:>9.1} req/s  p50 {:>8.2} ms  errors {}{}",
        line.id,
        column.name(),
        figure.throughput,
        figure.p50_ms,
        figure.errors,
        outcome
            .first_error
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default()
    );
    Ok((figure, host.stop()))
}

pub fn run(opts: &Options) -> Result<(), String> {
    let started = Instant::now();
    println!(
        "platform-bench compare: {} host, seed {}, c={} on {} client thread(s), {:.0} s measured per row after {:.0} s warm-up, a fresh host per row",
        platform_tests::profile(),
        opts.seed,
        opts.concurrency,
        opts.client_threads,
        opts.measure.as_secs_f64(),
        opts.warmup.as_secs_f64(),
    );
    let (dataset, mut data) = directus_data(opts.seed)?;
    let recording = Bytes::from(new_recording_body(opts.seed, 1_000)?);

    let ids: Vec<&str> = LINES.iter().map(|l| l.id).collect();
    crate::report::check_only(opts.only.as_ref(), &ids)?;
    let lines: Vec<&Line> = LINES
        .iter()
        .filter(|l| {
            l.id == "ping"
                || opts
                    .only
                    .as_ref()
                    .is_none_or(|only| only.iter().any(|id| id == l.id))
        })
        .collect();
    // figures[line][column]
    let mut figures = Vec::new();
    for line in &lines {
        let mut row = Vec::new();
        for column in COLUMNS {
            let (figure, back) = measure(opts, column, line, data, &dataset, &recording)?;
            data = back;
            row.push(figure);
        }
        figures.push(row);
    }

    println!(
        "\n| request | Directus 11 | this host, {} | {} | {} |",
        COLUMNS[0].name(),
        COLUMNS[1].name(),
        COLUMNS[2].name()
    );
    println!("|---|---:|---:|---:|---:|");
    for (line, row) in lines.iter().zip(&figures) {
        let cells: Vec<String> = row
            .iter()
            .map(|f| format!("{:.1} ({:.2} ms)", f.throughput, f.p50_ms))
            .collect();
        println!(
            "| {} | {} | {} |",
            line.label,
            line.directus,
            cells.join(" | ")
        );
    }
    println!(
        "\nreq/s (p50 latency). Directus 11.13 on SQLite: measured on this machine with wrk \
         (one thread, keep-alive, c=16, 10 s after a 5 s warm-up) in November 2026."
    );

    let ping = &figures[0];
    let mut checks = Vec::new();
    for (line, row) in lines.iter().zip(&figures) {
        let Some(percent) = line.target_percent else {
            continue;
        };
        let off = row[1].throughput / ping[1].throughput.max(1e-9);
        checks.push(Check::at_least(
            format!("{} cache off, % of ping", line.label),
            off * 100.0,
            percent,
        ));
        if !line.always_signed_in {
            // Public answers that do not depend on the caller come from the
            // cache for signed-in callers too: near the anonymous figure.
            checks.push(Check::at_least(
                format!("{} signed in / anonymous (cache on)", line.label),
                row[2].throughput / row[0].throughput.max(1e-9),
                0.5,
            ));
        }
    }
    let errors: u64 = figures.iter().flatten().map(|f| f.errors).sum();
    checks.push(Check::at_most("errors (every row)", errors as f64, 0.0));
    let peak = figures
        .iter()
        .flatten()
        .filter_map(|f| f.peak_rss_kib)
        .max();
    if let Some(kib) = peak {
        println!("highest host peak RSS over the rows: {:.0} MB", mb(kib));
    }
    println!("\nTargets");
    for check in &checks {
        println!("{}", check.line());
    }
    if opts.keep {
        let path = data.keep();
        println!(
            "\ndata kept in {} (example-host --db {} --extensions {})",
            path.display(),
            platform_tests::Database::of_data_dir(&path).arg(),
            path.join("extensions").display()
        );
    }
    println!("\ntotal time {:.0?}", started.elapsed());
    Ok(())
}
