//! `peers --scale large`: the host alone (no PocketBase) on the default
//! data and on large data, on the same database, each row measured on both
//! in one run: what a row costs as the data grows 50-200 times. The goal
//! is a flat cost: the large figure keeps at least [`SCALE_GOAL`] of the
//! default's throughput (records per second for whole lists).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::Method;
use platform_tests::{Backend, HostOptions};
use serde_json::Value;
use tempfile::TempDir;

use super::{
    backend_name, figure, load, records_in, request, start_host, Figure, Fixtures, Line, Options,
    Side, LINES,
};
use crate::api::Api;
use crate::dataset::{new_recording_body, Dataset, Generator, Sizes};
use crate::driver::{self, Req, Source};
use crate::hosts;
use crate::report::{mb, Check};

/// Large throughput over default throughput, at least.
pub const SCALE_GOAL: f64 = 1.0 / 1.5;

/// Small records per request while generating: the host is started with
/// this `MAX_BATCH_MUTATION` (its own limit on one array create).
const IMPORT_CHUNK: usize = 5_000;

/// Import requests in flight at once: two on SQLite (the host parses and
/// answers one batch while it writes the other); one on PostgreSQL, where
/// two batches' counter updates could lock the same videos in opposite
/// orders.
fn importers(backend: Backend) -> usize {
    match backend {
        Backend::Sqlite => 2,
        Backend::Postgres => 1,
    }
}

/// The deepest community page asked for at full large scale (times the
/// factor), and its size.
const COMMUNITY_OFFSET: usize = 100_000;
const COMMUNITY_LIMIT: usize = 50;

/// `--scale` and `--large-factor`: `None` for the default sizes alone
/// (the side-by-side run), the factor of [`large_sizes`] otherwise.
pub fn parse_scale(scale: Option<&str>, factor: Option<&str>) -> Result<Option<f64>, String> {
    match (scale, factor) {
        (None | Some("default"), None) => Ok(None),
        (None | Some("default"), Some(_)) => Err("--large-factor goes with --scale large".into()),
        (Some("large"), None) => Ok(Some(1.0)),
        (Some("large"), Some(f)) => f
            .parse::<f64>()
            .ok()
            .filter(|f| *f > 0.0 && *f <= 1.0)
            .map(Some)
            .ok_or_else(|| format!("--large-factor {f}: a number above 0, at most 1")),
        (Some(other), _) => Err(format!(
            "--scale {other}: use large (or default, the compare sizes)"
        )),
    }
}

/// The large data at `factor` (1: 100,000 videos, 1,000,000 users with a
/// stats row, 10,000,000 video plays). The rest grows with the videos
/// (models, files, likes: x50 the default) or the users (point actions,
/// two per user as in the default); 220,000 recordings of 10 events give
/// over 100,000 published public ones (no row reads their events); the
/// analytics creator has 1,000 videos; articles and bench viewers stay.
pub fn large_sizes(factor: f64) -> Sizes {
    let full = Sizes {
        models: 10_000,
        videos: 100_000,
        files: 5_000,
        likes: 1_000_000,
        video_plays: 10_000_000,
        recordings: 220_000,
        events_per_recording: 10,
        users: 1_000_000,
        point_actions: 2_000_000,
        articles: 50,
        analytics_videos: 1_000,
        bench_users: 16,
    };
    let mut s = full.times(factor);
    s.articles = full.articles;
    s.analytics_videos = ((full.analytics_videos as f64 * factor).round() as usize)
        .max(50)
        .min(s.videos);
    s
}

/// Large over default (records per second for whole lists), and whether
/// it keeps [`SCALE_GOAL`].
pub fn verdict(default_rate: f64, large_rate: f64) -> (f64, bool) {
    let ratio = large_rate / default_rate.max(1e-9);
    (ratio, ratio >= SCALE_GOAL)
}

/// The rows only this run measures (the host's side).
const EXTRA: [Line; 6] = [
    Line {
        id: "user-low",
        label: "`/svc/gamification/user/:id`, a user near the bottom (rank, recent points)",
        goal: None,
        full_list: false,
    },
    Line {
        id: "user-mid",
        label: "`/svc/gamification/user/:id`, a user mid-table",
        goal: None,
        full_list: false,
    },
    Line {
        id: "videos-model",
        label: "`/svc/videos?model_id=` the analytics creator (per record)",
        goal: None,
        full_list: true,
    },
    Line {
        id: "analytics",
        label: "`/svc/analytics` of the creator (per video)",
        goal: None,
        full_list: true,
    },
    Line {
        id: "community-deep",
        label:
            "`/svc/community-recordings` at a deep offset, 50 (per record: the default data lists fewer)",
        goal: None,
        full_list: true,
    },
    Line {
        id: "leaderboard-deep",
        label: "`/svc/gamification/leaderboard` at 90% of the users, 100",
        goal: None,
        full_list: false,
    },
];

/// What the extra rows address in one dataset.
#[derive(Debug, Clone)]
struct Targets {
    low_user: String,
    mid_user: String,
    model_id: String,
    analytics_token: String,
    community_offset: usize,
    leaderboard_offset: usize,
}

/// The deepest community offset asked for: `wanted`, or the last full
/// page the data has.
fn community_offset(wanted: usize, public: usize) -> usize {
    wanted.min(public.saturating_sub(COMMUNITY_LIMIT))
}

fn extra_request(id: &str, t: &Targets) -> Req {
    match id {
        "user-low" => Req::get(format!("/svc/gamification/user/{}", t.low_user)),
        "user-mid" => Req::get(format!("/svc/gamification/user/{}", t.mid_user)),
        "videos-model" => Req::get(format!("/svc/videos?model_id={}", t.model_id)),
        "analytics" => Req::get("/svc/analytics").token(&t.analytics_token),
        "community-deep" => Req::get(format!(
            "/svc/community-recordings?limit={COMMUNITY_LIMIT}&offset={}",
            t.community_offset
        )),
        _ => Req::get(format!(
            "/svc/gamification/leaderboard?offset={}",
            t.leaderboard_offset
        )),
    }
}

/// The user at `offset` of the leaderboard.
fn ranked_user(api: &Api, offset: usize) -> Result<String, String> {
    let answer = api.get(
        &format!("/svc/gamification/leaderboard?limit=1&offset={offset}"),
        None,
    )?;
    answer["data"][0]["user_id"]
        .as_str()
        .map(String::from)
        .ok_or_else(|| format!("no user at offset {offset} of the leaderboard"))
}

/// Looks the extra rows' targets up on a host over `data`.
fn targets(
    data: &Dataset,
    community_wanted: usize,
    dir: TempDir,
) -> Result<(Targets, TempDir), String> {
    let host = start_host(dir)?;
    let api = Api::new(&host.base);
    let users = data.sizes.users;
    let found = (|| {
        let model = api.get("/svc/models/model-0", None)?;
        Ok::<_, String>(Targets {
            low_user: ranked_user(&api, users.saturating_sub(1 + users / 1_000))?,
            mid_user: ranked_user(&api, users / 2)?,
            model_id: model["id"]
                .as_str()
                .map(String::from)
                .ok_or("the analytics creator (model-0) has no id")?,
            analytics_token: data.analytics_token.clone(),
            community_offset: community_offset(community_wanted, data.public_recordings_total),
            leaderboard_offset: users * 9 / 10,
        })
    })();
    let dir = host.stop();
    found.map(|t| (t, dir))
}

/// One dataset on its data folder between rows.
struct Column {
    name: String,
    data: Option<TempDir>,
    dataset: Dataset,
    targets: Targets,
    generated_in: Duration,
}

fn generate(
    name: &str,
    sizes: Sizes,
    backend: Backend,
    seed: u64,
    community_wanted: usize,
) -> Result<Column, String> {
    eprintln!(
        "== generating the {name} data into a host on {} ({} videos, {} users with stats, {} video plays)",
        backend_name(backend),
        sizes.videos,
        sizes.users,
        sizes.video_plays
    );
    let chunk = IMPORT_CHUNK.to_string();
    let host = hosts::start("data", || {
        HostOptions::svc()
            .backend(backend)
            .arg("--max-batch-mutation")
            .arg(&chunk)
    })?;
    let started = Instant::now();
    let dataset = Generator::new(&Api::new(&host.base), sizes, seed, false)
        .with_chunk(IMPORT_CHUNK)
        .with_importers(importers(backend))
        .run();
    let generated_in = started.elapsed();
    let dir = host.stop();
    let dataset = dataset?;
    eprintln!("== {name} data generated in {generated_in:.1?}");
    let (targets, dir) = targets(&dataset, community_wanted, dir)?;
    eprintln!("   targets: {targets:?}");
    Ok(Column {
        name: name.to_string(),
        data: Some(dir),
        dataset,
        targets,
        generated_in,
    })
}

/// Records in the answer of `req` (checked 2xx JSON before the load);
/// the analytics answer counts its videos.
fn count(base: &str, line: &Line, req: &Req) -> Result<Option<f64>, String> {
    if req.method != Method::GET || line.id == "ping" {
        return Ok(None);
    }
    let token = req
        .auth
        .as_ref()
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "));
    let answer = Api::new(base)
        .get(&req.path, token)
        .map_err(|e| format!("{}: {e}", line.id))?;
    Ok(records_in(&answer)
        .or_else(|| answer.get("videos").and_then(Value::as_array).map(Vec::len))
        .map(|n| n as f64))
}

fn measure(
    line: &'static Line,
    column: &mut Column,
    fx: &Arc<Fixtures>,
    backend: Backend,
    opts: &Options,
) -> Result<Figure, String> {
    let source: Source = if LINES.iter().any(|l| l.id == line.id) {
        let fx = fx.clone();
        Arc::new(move |w, i| request(line, Side::Host(backend), &fx, w, i))
    } else {
        let targets = column.targets.clone();
        Arc::new(move |_, _| extra_request(line.id, &targets))
    };
    let dir = column.data.take().ok_or("a host's data folder is gone")?;
    let host = start_host(dir)?;
    let measured = (|| {
        let records = count(&host.base, line, &source(0, 0))?;
        let outcome = driver::run(&host.base, load(opts), source)
            .map_err(|e| format!("{} on the {} data: {e}", line.id, column.name))?;
        Ok::<_, String>(figure(&outcome, records, host.peak_rss_kib()))
    })();
    column.data = Some(host.stop());
    let f = measured?;
    super::say(line.id, &column.name, &f);
    Ok(f)
}

/// The figure of a row that failed: nothing served, one error.
fn failed(error: String) -> Figure {
    Figure {
        throughput: 0.0,
        p50_ms: 0.0,
        mean_bytes: 0.0,
        records: None,
        peak_rss_kib: None,
        errors: 1,
        first_error: Some(error),
        cost: None,
    }
}

fn describe(s: &Sizes) -> String {
    format!(
        "{} videos, {} users with stats, {} video plays, {} likes, {} models, {} recordings x {} events, {} point actions",
        s.videos, s.users, s.video_plays, s.likes, s.models, s.recordings, s.events_per_recording, s.point_actions
    )
}

pub fn run(opts: &Options, factor: f64) -> Result<(), String> {
    let started = Instant::now();
    let &[backend] = opts.backends.as_slice() else {
        return Err("--scale large runs on one database: --db sqlite or --db postgres".into());
    };
    let ids: Vec<&str> = LINES.iter().chain(&EXTRA).map(|l| l.id).collect();
    crate::report::check_only(opts.only.as_ref(), &ids)?;
    let wanted = |l: &&'static Line| {
        opts.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|id| id == l.id))
    };
    let rows: Vec<&'static Line> = LINES.iter().filter(wanted).collect();
    let extra: Vec<&'static Line> = EXTRA.iter().filter(wanted).collect();
    println!(
        "platform-bench peers --scale large (factor {factor}): {} host (answer cache off) on {}, \
         default data against large data, seed {}, c={} on {} client thread(s), {:.1} s measured \
         per row after {:.1} s warm-up, a fresh process per row and data. PocketBase is not \
         loaded at this scale (the host's side only).",
        platform_tests::profile(),
        backend_name(backend),
        opts.seed,
        opts.concurrency,
        opts.client_threads,
        opts.measure.as_secs_f64(),
        opts.warmup.as_secs_f64(),
    );
    let large = large_sizes(factor);
    let wanted = (COMMUNITY_OFFSET as f64 * factor).round() as usize;
    let mut columns = vec![
        generate(
            "default",
            opts.sizes.clone(),
            backend,
            opts.seed,
            usize::MAX,
        )?,
        generate("large", large, backend, opts.seed, wanted)?,
    ];

    let recording = new_recording_body(opts.seed, 1_000)?;
    let fx = Arc::new(Fixtures {
        recording: Bytes::from(recording),
        member_recordings: Vec::new(),
        members: Vec::new(),
        pb_superuser: String::new(),
        viewer_tokens: columns[0].dataset.bench_tokens.clone(),
        pb_pages: 1,
    });

    // Reads first, then the writes, which grow the databases.
    let is_write = |l: &&'static Line| matches!(l.id, "recording-create" | "svc-recording");
    let order: Vec<&'static Line> = rows
        .iter()
        .copied()
        .filter(|l| !is_write(l))
        .chain(extra)
        .chain(rows.iter().copied().filter(is_write))
        .collect();
    let mut measured = Vec::new();
    for line in order {
        let mut figures = Vec::new();
        for column in columns.iter_mut() {
            // A row the host refuses (or that fails) is reported and the
            // run goes on: the data took long to make.
            let figure = measure(line, column, &fx, backend, opts).unwrap_or_else(|e| {
                eprintln!("  {:<17} {:<22} FAILED: {e}", line.id, column.name);
                failed(e)
            });
            figures.push(figure);
        }
        measured.push((line, figures));
    }

    print_results(opts, factor, &columns, &measured);
    if opts.keep {
        for column in &mut columns {
            if let Some(data) = column.data.take() {
                let path = data.keep();
                println!(
                    "{} data kept: example-host --db {} --extensions {} --cache false",
                    column.name,
                    platform_tests::Database::of_data_dir(&path).arg(),
                    path.join("extensions").display()
                );
            }
        }
    }
    println!("\ntotal time {:.0?}", started.elapsed());
    Ok(())
}

fn print_results(
    opts: &Options,
    factor: f64,
    columns: &[Column],
    measured: &[(&'static Line, Vec<Figure>)],
) {
    for c in columns {
        println!(
            "\n{} data: {}; generated in {:.1} s; community offset {}, leaderboard offset {}, \
             the creator's videos {}",
            c.name,
            describe(&c.dataset.sizes),
            c.generated_in.as_secs_f64(),
            c.targets.community_offset,
            c.targets.leaderboard_offset,
            c.dataset.sizes.analytics_videos,
        );
    }
    println!(
        "\n| row | default data | large data (x{factor}) | large / default | goal >= {SCALE_GOAL:.2} |"
    );
    println!("|---|---:|---:|---:|---|");
    let mut checks = Vec::new();
    for (line, f) in measured {
        let (d, l) = (&f[0], &f[1]);
        let (ratio, pass) = verdict(d.rate(line), l.rate(line));
        println!(
            "| {} | {} | {} | {ratio:.2} | {} |",
            line.label,
            d.cell(line),
            l.cell(line),
            if pass { "PASS" } else { "MISS" }
        );
        checks.push(Check::at_least(
            format!("{}: large / default", line.id),
            ratio,
            SCALE_GOAL,
        ));
    }
    println!(
        "\nreq/s (p50 latency); whole lists in records per second (the analytics in videos per \
         second). c={}, keep-alive, {:.1} s after {:.1} s warm-up.",
        opts.concurrency,
        opts.measure.as_secs_f64(),
        opts.warmup.as_secs_f64()
    );
    for (line, f) in measured.iter().filter(|(l, _)| l.full_list) {
        let rss = |f: &Figure| {
            f.peak_rss_kib
                .map_or("?".into(), |k| format!("{:.0}", mb(k)))
        };
        println!(
            "peak RSS through {}: {} MB on the default data, {} MB on the large data",
            line.id,
            rss(&f[0]),
            rss(&f[1])
        );
    }
    let errors: u64 = measured
        .iter()
        .flat_map(|(_, f)| f.iter().map(|f| f.errors))
        .sum();
    crate::report::print_goals(checks, errors, "every row, both data");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_is_the_asked_sizes_and_scales_down() {
        let s = large_sizes(1.0);
        assert_eq!(
            (s.videos, s.users, s.video_plays, s.analytics_videos),
            (100_000, 1_000_000, 10_000_000, 1_000)
        );
        // Over COMMUNITY_OFFSET published public recordings (48% of them).
        assert!(s.recordings * 48 / 100 > COMMUNITY_OFFSET + COMMUNITY_LIMIT);
        let small = large_sizes(0.05);
        assert_eq!(
            (small.videos, small.users, small.video_plays),
            (5_000, 50_000, 500_000)
        );
        assert_eq!(small.analytics_videos, 50);
        assert_eq!((small.articles, small.bench_users), (50, 16));
    }

    #[test]
    fn a_row_passes_at_two_thirds_of_the_default_throughput() {
        let (ratio, pass) = verdict(300.0, 200.0);
        assert!((ratio - 2.0 / 3.0).abs() < 1e-12 && pass);
        assert!(!verdict(300.0, 199.0).1);
        assert!(verdict(100.0, 150.0).1);
        assert!(!verdict(0.0, 0.0).1);
    }

    #[test]
    fn scale_options_are_checked() {
        assert_eq!(parse_scale(None, None), Ok(None));
        assert_eq!(parse_scale(Some("default"), None), Ok(None));
        assert_eq!(parse_scale(Some("large"), None), Ok(Some(1.0)));
        assert_eq!(parse_scale(Some("large"), Some("0.05")), Ok(Some(0.05)));
        for bad in ["0", "-1", "1.5", "NaN", "x"] {
            assert!(parse_scale(Some("large"), Some(bad)).is_err(), "{bad}");
        }
        assert!(parse_scale(Some("huge"), None).is_err());
        assert!(parse_scale(Some("4"), None).is_err());
        assert!(parse_scale(None, Some("0.5")).is_err());
    }

    #[test]
    fn the_community_page_stays_full() {
        assert_eq!(community_offset(100_000, 105_000), 100_000);
        assert_eq!(community_offset(usize::MAX, 9), 0);
        assert_eq!(community_offset(usize::MAX, 1_000), 950);
    }
}
