//! `platform-bench peers`: this host against PocketBase, side by side, on
//! the same data in one run.
//!
//! The data is `compare`'s (2,000 videos with one to three models and a
//! movie, 20,000 likes, 50,000 plays, 10,000 users with stats rows),
//! generated into the host through its items API, read back and loaded
//! into PocketBase (installed from PyPI, see [`pocketbase`]) through its
//! batch API, with the same ids. Each row is measured on a fresh process of
//! each side over its existing data (the host with its answer cache off),
//! with the same driver (c=16, keep-alive), and the ratios are checked
//! against the goals. The host may run on SQLite, PostgreSQL or both
//! (`--db both`: a column each, and their ratio).

mod mirror;
pub mod pocketbase;
mod scale;

pub use scale::parse_scale;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::Method;
use platform_tests::{encode, profile, Backend, Host, HostOptions, ADMIN_TOKEN};
use serde_json::Value;
use tempfile::TempDir;

use crate::api::Api;
use crate::cpu;
use crate::dataset::{new_recording_body, Dataset, Generator, Sizes};
use crate::driver::{self, Load, Outcome, Req, Source};
use crate::hosts;
use crate::report::{mb, Check};
use crate::stats::{ms, Samples};
use mirror::Member;
use pocketbase::{Install, PocketBase};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub seed: u64,
    pub warmup: Duration,
    pub measure: Duration,
    pub concurrency: usize,
    /// Threads of the load client (1, as `compare`: the same client for
    /// both sides, taking at most one of the two cores).
    pub client_threads: usize,
    /// Only these rows (ids of [`LINES`]).
    pub only: Option<Vec<String>>,
    /// Keep both data folders at the end (paths printed), to start either
    /// side on them by hand (profiling).
    pub keep: bool,
    /// Spawns per side for the cold start (the median is reported).
    pub cold_starts: usize,
    /// The host's databases: one column each.
    pub backends: Vec<Backend>,
    pub sizes: Sizes,
    /// `--scale large`: the host alone on `sizes` and on the large data
    /// at this factor (see [`scale`]).
    pub large_factor: Option<f64>,
}

impl Options {
    pub fn new(seed: u64, measure: Duration, backends: Vec<Backend>) -> Self {
        Self {
            seed,
            warmup: (measure / 2).min(Duration::from_secs(5)),
            measure,
            concurrency: 16,
            client_threads: 1,
            only: None,
            keep: false,
            cold_starts: 5,
            backends,
            sizes: crate::compare::directus_sizes(),
            large_factor: None,
        }
    }

    /// Tiny data, 1 s per row, two cold starts: that the comparison runs.
    pub fn smoke(seed: u64, backends: Vec<Backend>) -> Self {
        Self {
            warmup: Duration::from_millis(250),
            cold_starts: 2,
            sizes: Sizes::smoke(),
            ..Self::new(seed, Duration::from_secs(1), backends)
        }
    }
}

/// One row of the table.
#[derive(Debug)]
pub struct Line {
    pub id: &'static str,
    label: &'static str,
    /// host / PocketBase throughput, at least.
    goal: Option<f64>,
    /// A whole list: compared per record (PocketBase pages by 1,000).
    full_list: bool,
}

pub const LINES: [Line; 9] = [
    Line {
        id: "ping",
        label: "HTTP floor: `/server/ping` vs `/api/health`",
        goal: None,
        full_list: false,
    },
    Line {
        id: "videos-50",
        label: "50 videos + models + movie, generic API, admin",
        goal: Some(10.0),
        full_list: false,
    },
    Line {
        id: "svc-videos-50",
        label: "`/svc/videos?limit=50` vs the same list, anonymous",
        goal: Some(10.0),
        full_list: false,
    },
    Line {
        id: "videos-all",
        label: "all published videos expanded, generic API, admin (per record)",
        goal: Some(5.0),
        full_list: true,
    },
    Line {
        id: "svc-videos-all",
        label: "`/svc/videos` (all) vs the same list, anonymous (per record)",
        goal: Some(5.0),
        full_list: true,
    },
    Line {
        id: "stats-100",
        label: "stats top 100 + 2 user fields, generic API, admin",
        goal: None,
        full_list: false,
    },
    Line {
        id: "leaderboard",
        label: "`/svc/gamification/leaderboard` vs stats top 100, anonymous",
        goal: Some(20.0),
        full_list: false,
    },
    Line {
        id: "recording-create",
        label: "create a recording, 1,000 events, generic API, admin",
        goal: Some(3.0),
        full_list: false,
    },
    Line {
        id: "svc-recording",
        label: "`POST /svc/recordings` vs a member's create, 1,000 events",
        goal: Some(3.0),
        full_list: false,
    },
];

/// Each svc route and its generic twin: the same rows with the same
/// expansions through `/items`. What the extension boundary costs is the
/// ratio of their throughputs (goal: at least [`TWIN_GOAL`]).
pub const TWINS: [(&str, &str); 3] = [
    ("svc-videos-50", "videos-50"),
    ("svc-videos-all", "videos-all"),
    ("leaderboard", "stats-100"),
];
const TWIN_GOAL: f64 = 0.9;
/// Rounds of each twin pair on one host (half of them twin first).
const TWIN_ROUNDS: usize = 4;
/// PostgreSQL's throughput over SQLite's on every row, at least.
const POSTGRES_GOAL: f64 = 1.0 / 1.5;

/// The host's generic read of videos with their models and movie, newest
/// first, published only (`upload_date` at or before now: videos have no
/// status).
const HOST_VIDEOS: &str = "/items/videos?fields=*,models.platform_users_id.*,movie.*\
                           &filter%5Bupload_date%5D%5B_lte%5D=%24NOW&sort=-upload_date";
const HOST_STATS: &str =
    "/items/user_stats?fields=*,user_id.avatar,user_id.artist_name&sort=-decay_sum&limit=100";

/// PocketBase's records of videos, as the host's (no total count: the
/// host does not count either).
fn pb_videos(per_page: usize, page: usize) -> String {
    format!(
        "/api/collections/videos/records?expand=models,movie&filter={}&sort=-upload_date\
         &perPage={per_page}&page={page}&skipTotal=1",
        encode("upload_date <= @now")
    )
}

/// PocketBase's stats page with its users. The whole user records: asking
/// for the two fields (`fields=*,expand.user_id.avatar,...`) makes
/// PocketBase 2.5-3x slower (it filters the answer after writing it).
const PB_STATS: &str =
    "/api/collections/user_stats/records?sort=-decay_sum&perPage=100&skipTotal=1&expand=user_id";

const PB_CREATE: &str = "/api/collections/recordings/records";

/// PocketBase pages lists by 1,000 at most.
const PB_MAX_PAGE: usize = 1_000;

/// Which server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    PocketBase,
    Host(Backend),
}

fn backend_name(b: Backend) -> &'static str {
    match b {
        Backend::Sqlite => "SQLite",
        Backend::Postgres => "PostgreSQL",
    }
}

impl Side {
    fn name(self) -> String {
        match self {
            Side::PocketBase => format!("PocketBase {}", pocketbase::VERSION),
            Side::Host(b) => format!("host ({})", backend_name(b)),
        }
    }
}

/// What the requests need: tokens and bodies of both sides.
struct Fixtures {
    recording: Bytes,
    /// The recording with `author` set to each member.
    member_recordings: Vec<Bytes>,
    members: Vec<Member>,
    pb_superuser: String,
    /// The host's viewers.
    viewer_tokens: Vec<String>,
    /// Pages of PocketBase's full list.
    pb_pages: usize,
}

/// The request of `line` on `side` for worker `w`, iteration `i`.
fn request(line: &Line, side: Side, fx: &Fixtures, w: usize, i: u64) -> Req {
    let pb_list = |per_page: usize, page: usize, admin: bool| {
        let req = Req::get(pb_videos(per_page, page));
        if admin {
            req.token(&fx.pb_superuser)
        } else {
            req
        }
    };
    let page = 1 + (i as usize + w) % fx.pb_pages.max(1);
    match (side, line.id) {
        (Side::PocketBase, "ping") => Req::get("/api/health"),
        (Side::PocketBase, "videos-50") => pb_list(50, 1, true),
        (Side::PocketBase, "svc-videos-50") => pb_list(50, 1, false),
        (Side::PocketBase, "videos-all") => pb_list(PB_MAX_PAGE, page, true),
        (Side::PocketBase, "svc-videos-all") => pb_list(PB_MAX_PAGE, page, false),
        (Side::PocketBase, "stats-100") => Req::get(PB_STATS).token(&fx.pb_superuser),
        (Side::PocketBase, "leaderboard") => Req::get(PB_STATS),
        (Side::PocketBase, "recording-create") => Req::new(Method::POST, PB_CREATE)
            .body(fx.recording.clone())
            .token(&fx.pb_superuser),
        (Side::PocketBase, _) => {
            let k = w % fx.members.len().max(1);
            let req = Req::new(Method::POST, PB_CREATE);
            match (fx.member_recordings.get(k), fx.members.get(k)) {
                (Some(body), Some(m)) => req.body(body.clone()).token(&m.token),
                _ => req,
            }
        }
        (Side::Host(_), "ping") => Req::get("/server/ping"),
        (Side::Host(_), "videos-50") => {
            Req::get(format!("{HOST_VIDEOS}&limit=50")).token(ADMIN_TOKEN)
        }
        (Side::Host(_), "svc-videos-50") => Req::get("/svc/videos?limit=50"),
        (Side::Host(_), "videos-all") => {
            Req::get(format!("{HOST_VIDEOS}&limit=-1")).token(ADMIN_TOKEN)
        }
        (Side::Host(_), "svc-videos-all") => Req::get("/svc/videos"),
        (Side::Host(_), "stats-100") => Req::get(HOST_STATS).token(ADMIN_TOKEN),
        (Side::Host(_), "leaderboard") => Req::get("/svc/gamification/leaderboard"),
        (Side::Host(_), "recording-create") => Req::new(Method::POST, "/items/recordings")
            .body(fx.recording.clone())
            .token(ADMIN_TOKEN),
        (Side::Host(_), _) => {
            let req = Req::new(Method::POST, "/svc/recordings").body(fx.recording.clone());
            match fx.viewer_tokens.get(w % fx.viewer_tokens.len().max(1)) {
                Some(t) => req.token(t),
                None => req,
            }
        }
    }
}

/// Records in one answer of a list (an array, or one under `data` or
/// `items`), `None` for anything else.
fn records_in(answer: &Value) -> Option<usize> {
    answer
        .as_array()
        .or_else(|| {
            answer
                .get("data")
                .or_else(|| answer.get("items"))
                .and_then(Value::as_array)
        })
        .map(Vec::len)
}

/// One side's measurement of one row.
#[derive(Debug, Clone)]
struct Figure {
    throughput: f64,
    p50_ms: f64,
    errors: u64,
    mean_bytes: f64,
    /// Records per answer of a list (checked once before the load).
    records: Option<f64>,
    peak_rss_kib: Option<u64>,
    first_error: Option<String>,
    /// Where a request's CPU went (the host's side only).
    cost: Option<cpu::PerRequest>,
}

impl Figure {
    /// Records per second for a whole list, requests per second otherwise.
    fn rate(&self, line: &Line) -> f64 {
        match (line.full_list, self.records) {
            (true, Some(r)) => self.throughput * r,
            _ => self.throughput,
        }
    }

    fn cell(&self, line: &Line) -> String {
        match (line.full_list, self.records) {
            (true, Some(r)) => format!(
                "{:.0} rec/s ({:.1} req/s x {:.0}, {:.0} ms)",
                self.rate(line),
                self.throughput,
                r,
                self.p50_ms
            ),
            _ => format!("{:.1} ({:.2} ms)", self.throughput, self.p50_ms),
        }
    }
}

/// Checks a list read before the load (2xx, JSON) and counts its
/// records; for PocketBase's full list, every page.
fn probe(base: &str, line: &Line, side: Side, fx: &Fixtures) -> Result<Option<f64>, String> {
    let first = request(line, side, fx, 0, 0);
    if first.method != Method::GET || line.id == "ping" {
        return Ok(None);
    }
    let api = Api::new(base);
    let pages = match (side, line.full_list) {
        (Side::PocketBase, true) => fx.pb_pages.max(1),
        _ => 1,
    };
    let mut total = 0;
    for p in 0..pages {
        let req = request(line, side, fx, p, 0);
        let token = req
            .auth
            .as_ref()
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "));
        let answer = api
            .get(&req.path, token)
            .map_err(|e| format!("{} on {}: {e}", line.id, side.name()))?;
        total += records_in(&answer).unwrap_or(0);
    }
    Ok(Some(total as f64 / pages as f64))
}

fn load(opts: &Options) -> Load {
    Load {
        concurrency: opts.concurrency,
        warmup: opts.warmup,
        measure: opts.measure,
        paired: false,
        client_threads: Some(opts.client_threads),
    }
}

/// Drives `line` against a started side.
fn drive(
    base: &str,
    line: &'static Line,
    side: Side,
    fx: &Arc<Fixtures>,
    opts: &Options,
) -> Result<Outcome, String> {
    let fx2 = fx.clone();
    let source: Source = Arc::new(move |w, i| request(line, side, &fx2, w, i));
    driver::run(base, load(opts), source)
        .map_err(|e| format!("{} on {}: {e}", line.id, side.name()))
}

fn figure(outcome: &Outcome, records: Option<f64>, peak_rss_kib: Option<u64>) -> Figure {
    Figure {
        throughput: outcome.throughput(),
        p50_ms: outcome.p50_ms(),
        errors: outcome.errors,
        mean_bytes: outcome.mean_bytes,
        records,
        peak_rss_kib,
        first_error: outcome.first_error.clone(),
        cost: None,
    }
}

/// A progress line: one row's figure on one side (or data).
fn say(id: &str, side: &str, f: &Figure) {
    eprintln!(
        "  {:<17} {:<22} {:>9.1} req/s  p50 {:>8.2} ms  {:>9.1} KB/answer  peak RSS {:>5.0} MB  errors {}{}",
        id,
        side,
        f.throughput,
        f.p50_ms,
        f.mean_bytes / 1000.0,
        f.peak_rss_kib.map(mb).unwrap_or(0.0),
        f.errors,
        f.first_error
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default()
    );
}

/// The host on `data` with the answer cache off.
fn start_host(data: TempDir) -> Result<Host, String> {
    hosts::start("cache-off", || {
        HostOptions {
            data_dir: Some(data),
            ..HostOptions::svc()
        }
        .arg("--cache")
        .arg("false")
    })
}

fn measure_host(
    line: &'static Line,
    backend: Backend,
    data: TempDir,
    fx: &Arc<Fixtures>,
    opts: &Options,
) -> Result<(Figure, TempDir), String> {
    let host = start_host(data)?;
    let side = Side::Host(backend);
    let records = probe(&host.base, line, side, fx)?;
    let (outcome, cost) = cpu::Sampler::new(&host).around(
        opts.warmup,
        opts.measure,
        || drive(&host.base, line, side, fx, opts),
        |o| o.as_ref().map_or(0.0, Outcome::throughput),
    );
    let f = Figure {
        cost,
        ..figure(&outcome?, records, host.peak_rss_kib())
    };
    say(line.id, &side.name(), &f);
    Ok((f, host.stop()))
}

fn measure_pocketbase(
    line: &'static Line,
    install: &Install,
    fx: &Arc<Fixtures>,
    opts: &Options,
) -> Result<Figure, String> {
    let pb = install.start()?;
    let records = probe(&pb.base, line, Side::PocketBase, fx)?;
    let outcome = drive(&pb.base, line, Side::PocketBase, fx, opts)?;
    let f = figure(&outcome, records, pb.peak_rss_kib());
    say(line.id, &Side::PocketBase.name(), &f);
    pb.stop();
    Ok(f)
}

/// Spawn to the first answer of `/server/ping`, the host on its existing
/// data folder with the answer cache off.
fn host_cold_start(dir: &std::path::Path, n: usize) -> Result<Duration, String> {
    let binary = platform_tests::target_dir()
        .join(profile())
        .join("example-host");
    if !binary.exists() {
        return Err(format!(
            "{} is missing (cargo build --release -p example-host)",
            binary.display()
        ));
    }
    let port = pocketbase::free_port()?;
    let log_path = dir.join(format!("cold-start-{n}.log"));
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("creating {}: {e}", log_path.display()))?;
    let mut cmd = platform_tests::host_command(&binary, dir);
    cmd.args(["--port", &port.to_string(), "--cache", "false"])
        .env_remove("RUST_LOG")
        .env("LOG_LEVEL", "info,access=off")
        .env("STORAGE_LOCAL_ROOT", dir.join("uploads"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log);
    let (mut child, took) =
        pocketbase::spawn_until_ready(&mut cmd, port, "/server/ping", "the host", &log_path)?;
    pocketbase::stop_child(&mut child);
    Ok(took)
}

/// A twin pair's rounds: per host column, svc's rate over its twin's,
/// one ratio per round.
struct TwinRounds {
    svc: &'static str,
    twin: &'static str,
    ratios: Vec<Vec<f64>>,
}

/// Each selected twin pair on one host per column: svc's route and its
/// twin in turn for [`TWIN_ROUNDS`] rounds, the order alternating, so
/// that both meet the same machine (one ratio per round). The rows
/// measure each route once, on its own host, one after the other; on a
/// shared machine their ratio swings by more than the goal's margin.
fn measure_twins(
    lines: &[&'static Line],
    columns: &mut [HostColumn],
    fx: &Arc<Fixtures>,
    opts: &Options,
) -> Result<Vec<TwinRounds>, String> {
    let line = |id: &str| lines.iter().copied().find(|l| l.id == id);
    let pairs: Vec<(&'static Line, &'static Line)> = TWINS
        .iter()
        .filter_map(|(svc, twin)| Some((line(svc)?, line(twin)?)))
        .collect();
    let mut out: Vec<TwinRounds> = pairs
        .iter()
        .map(|(svc, twin)| TwinRounds {
            svc: svc.id,
            twin: twin.id,
            ratios: Vec::new(),
        })
        .collect();
    if pairs.is_empty() {
        return Ok(out);
    }
    let round = Options {
        warmup: opts.warmup.min(Duration::from_secs(1)),
        measure: (opts.measure / 2).max(Duration::from_millis(500)),
        ..opts.clone()
    };
    eprintln!(
        "== twins: {TWIN_ROUNDS} alternating rounds of {:.1} s each on one host",
        round.measure.as_secs_f64()
    );
    for column in columns.iter_mut() {
        let data = column.data.take().ok_or("a host's data folder is gone")?;
        let host = start_host(data)?;
        let side = Side::Host(column.backend);
        for ((svc, twin), rounds) in pairs.iter().zip(out.iter_mut()) {
            let records = [svc, twin].map(|l| probe(&host.base, l, side, fx));
            let [svc_records, twin_records] = records;
            let (svc_records, twin_records) = (svc_records?, twin_records?);
            let rate = |line: &'static Line, records: Option<f64>| -> Result<f64, String> {
                let outcome = drive(&host.base, line, side, fx, &round)?;
                if outcome.errors > 0 {
                    return Err(format!(
                        "{} on {}: {} error(s) in a twin round",
                        line.id,
                        side.name(),
                        outcome.errors
                    ));
                }
                Ok(figure(&outcome, records, None).rate(line))
            };
            let mut ratios = Vec::with_capacity(TWIN_ROUNDS);
            for r in 0..TWIN_ROUNDS {
                let (a, b) = if r % 2 == 0 {
                    let a = rate(svc, svc_records)?;
                    (a, rate(twin, twin_records)?)
                } else {
                    let b = rate(twin, twin_records)?;
                    (rate(svc, svc_records)?, b)
                };
                ratios.push(a / b.max(1e-9));
            }
            eprintln!(
                "  {} / {} on {}: {}",
                svc.id,
                twin.id,
                side.name(),
                ratios
                    .iter()
                    .map(|r| format!("{r:.2}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            rounds.ratios.push(ratios);
        }
        column.data = Some(host.stop());
    }
    Ok(out)
}

/// The median of `values` (the mean of the middle two for an even count).
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// A host column: its database and data folder between rows.
struct HostColumn {
    backend: Backend,
    data: Option<TempDir>,
    dataset: Dataset,
}

fn generate(opts: &Options, backend: Backend) -> Result<(Host, Dataset), String> {
    eprintln!(
        "== generating the data into a host on {} (seed {})",
        backend_name(backend),
        opts.seed
    );
    let host = hosts::start("data", || HostOptions::svc().backend(backend))?;
    let dataset =
        Generator::new(&Api::new(&host.base), opts.sizes.clone(), opts.seed, false).run()?;
    Ok((host, dataset))
}

/// PocketBase on a fresh data folder of the bench's, with the host's data
/// and the members; its setup and the members' tokens.
fn set_up_pocketbase(
    exe: std::path::PathBuf,
    data: &mirror::HostData,
    members: usize,
) -> Result<(Install, TempDir, String, Vec<Member>), String> {
    let root = pocketbase::bench_dir();
    std::fs::create_dir_all(&root).map_err(|e| format!("creating {}: {e}", root.display()))?;
    let dir = tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(&root)
        .map_err(|e| format!("creating a run folder in {}: {e}", root.display()))?;
    let install = Install {
        exe,
        dir: dir.path().to_path_buf(),
    };
    eprintln!(
        "== loading the same data into PocketBase {} ({})",
        pocketbase::VERSION,
        install.data_dir().display()
    );
    install.upsert_superuser()?;
    let pb: PocketBase = install.start()?;
    let token = pb.superuser_token()?;
    let api = Api::new(&pb.base);
    pocketbase::configure(&api, &token)?;
    mirror::load(&api, &token, data)?;
    let members = mirror::members(&api, &token, members)?;
    pb.stop();
    Ok((install, dir, token, members))
}

/// The recording body with `author` set to `member`.
fn with_author(body: &[u8], member: &str) -> Result<Bytes, String> {
    let mut v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the recording body: {e}"))?;
    v.as_object_mut()
        .ok_or("the recording body is not an object")?
        .insert(mirror::AUTHOR.into(), Value::String(member.to_string()));
    serde_json::to_vec(&v)
        .map(Bytes::from)
        .map_err(|e| format!("the recording body: {e}"))
}

fn selected(opts: &Options) -> Result<Vec<&'static Line>, String> {
    let ids: Vec<&str> = LINES.iter().map(|l| l.id).collect();
    crate::report::check_only(opts.only.as_ref(), &ids)?;
    Ok(LINES
        .iter()
        .filter(|l| {
            opts.only
                .as_ref()
                .is_none_or(|only| only.iter().any(|id| id == l.id))
        })
        .collect())
}

/// Figures of one row: PocketBase's, then each host column's.
struct Measured {
    line: &'static Line,
    pb: Figure,
    hosts: Vec<Figure>,
}

pub fn run(opts: &Options) -> Result<(), String> {
    let started = Instant::now();
    if opts.backends.is_empty() {
        return Err("no database for the host".into());
    }
    if let Some(factor) = opts.large_factor {
        return scale::run(opts, factor);
    }
    let lines = selected(opts)?;
    println!(
        "platform-bench peers: {} host (answer cache off) on {} against PocketBase {}, seed {}, \
         c={} on {} client thread(s), {:.1} s measured per row after {:.1} s warm-up, \
         a fresh process per row and side",
        profile(),
        opts.backends
            .iter()
            .map(|b| backend_name(*b))
            .collect::<Vec<_>>()
            .join(" and "),
        pocketbase::VERSION,
        opts.seed,
        opts.concurrency,
        opts.client_threads,
        opts.measure.as_secs_f64(),
        opts.warmup.as_secs_f64(),
    );
    // Fail early when PocketBase cannot be had.
    let exe = pocketbase::install()?;

    let mut columns = Vec::new();
    let mut exported = None;
    for &backend in &opts.backends {
        let (host, dataset) = generate(opts, backend)?;
        if exported.is_none() {
            eprintln!("== reading the data back from the host");
            exported = Some(mirror::export(&Api::new(&host.base))?);
        }
        columns.push(HostColumn {
            backend,
            data: Some(host.stop()),
            dataset,
        });
    }
    let exported = exported.ok_or("no data generated")?;
    let viewer_tokens = columns[0].dataset.bench_tokens.clone();
    let (install, pb_dir, pb_superuser, members) =
        set_up_pocketbase(exe, &exported, viewer_tokens.len().clamp(1, 16))?;
    drop(exported);

    let recording = new_recording_body(opts.seed, 1_000)?;
    let member_recordings = members
        .iter()
        .map(|m| with_author(&recording, &m.id))
        .collect::<Result<Vec<_>, _>>()?;
    let visible = {
        let pb = install.start()?;
        let answer = Api::new(&pb.base).get(
            &pb_videos(1, 1).replace("&skipTotal=1", ""),
            Some(&pb_superuser),
        )?;
        pb.stop();
        answer["totalItems"].as_u64().unwrap_or(0) as usize
    };
    let fx = Arc::new(Fixtures {
        recording: Bytes::from(recording),
        member_recordings,
        members,
        pb_superuser,
        viewer_tokens,
        pb_pages: visible.div_ceil(PB_MAX_PAGE).max(1),
    });
    eprintln!(
        "== {} published videos: PocketBase's full list is {} page(s) of at most {PB_MAX_PAGE}",
        visible, fx.pb_pages
    );

    // Reads first; the cold start on the loaded data; then the writes,
    // which grow both databases.
    let (reads, writes): (Vec<&'static Line>, Vec<&'static Line>) = lines
        .iter()
        .partition(|l| !matches!(l.id, "recording-create" | "svc-recording"));
    let mut measured = Vec::new();
    let mut measure_rows =
        |rows: &[&'static Line], columns: &mut Vec<HostColumn>| -> Result<(), String> {
            for &line in rows {
                let pb = measure_pocketbase(line, &install, &fx, opts)?;
                let mut hosts_figures = Vec::new();
                for column in columns.iter_mut() {
                    let data = column.data.take().ok_or("a host's data folder is gone")?;
                    let (f, back) = measure_host(line, column.backend, data, &fx, opts)?;
                    column.data = Some(back);
                    hosts_figures.push(f);
                }
                measured.push(Measured {
                    line,
                    pb,
                    hosts: hosts_figures,
                });
            }
            Ok(())
        };
    measure_rows(&reads, &mut columns)?;
    let twins = measure_twins(&reads, &mut columns, &fx, opts)?;

    eprintln!(
        "== cold start: spawn to first answer on the existing data, {} time(s) each",
        opts.cold_starts
    );
    let mut pb_starts = Samples::default();
    let mut host_starts: Vec<Samples> = columns.iter().map(|_| Samples::default()).collect();
    for n in 0..opts.cold_starts.max(1) {
        let pb = install.start()?;
        pb_starts.push(pb.ready_after);
        pb.stop();
        for (column, samples) in columns.iter().zip(host_starts.iter_mut()) {
            let dir = column.data.as_ref().ok_or("a host's data folder is gone")?;
            samples.push(host_cold_start(dir.path(), n)?);
        }
    }

    measure_rows(&writes, &mut columns)?;

    print_results(opts, &measured, &twins, &columns, &pb_starts, &host_starts);

    if opts.keep {
        let pb_path = pb_dir.keep();
        println!(
            "\nPocketBase data kept: {} serve --dir {} --automigrate=false",
            install.exe.display(),
            pb_path.join("pb_data").display()
        );
        for column in &mut columns {
            if let Some(data) = column.data.take() {
                let path = data.keep();
                let throwaway = column.backend == Backend::Postgres
                    && std::env::var_os("TEST_DATABASE_URL").is_none();
                println!(
                    "host data kept ({}): example-host --db {} --extensions {} --cache false{}",
                    backend_name(column.backend),
                    platform_tests::Database::of_data_dir(&path).arg(),
                    path.join("extensions").display(),
                    if throwaway {
                        " (the throwaway PostgreSQL cluster stops with the bench: \
                         --db postgres://... keeps a server of yours)"
                    } else {
                        ""
                    }
                );
            }
        }
    }
    println!("\ntotal time {:.0?}", started.elapsed());
    Ok(())
}

/// Where each row's CPU went on the host's side, per request: the host's
/// process, the database server's (PostgreSQL), the load client's, the
/// exchanges with the database, and how busy the machine was.
fn print_costs(measured: &[Measured], columns: &[HostColumn]) {
    let mut header = String::from("\n| row |");
    let mut rule = String::from("|---|");
    for c in columns {
        let on = backend_name(c.backend);
        header.push_str(&format!(
            " {on}: host | server | client | total | exchanges | machine busy |"
        ));
        rule.push_str(&"---:|".repeat(6));
    }
    println!("{header}\n{rule}");
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    for m in measured {
        let mut row = format!("| {} |", m.line.id);
        for f in &m.hosts {
            match f.cost {
                Some(c) => row.push_str(&format!(
                    " {} | {} | {} | {} | {} | {} |",
                    ms(Some(c.host_ms)),
                    ms(c.server_ms),
                    ms(Some(c.client_ms)),
                    ms(Some(c.total_ms())),
                    c.exchanges.map_or("-".to_string(), |e| format!("{e:.1}")),
                    c.machine_busy
                        .map_or("-".to_string(), |b| format!("{:.0}%", b * 100.0)),
                )),
                None => row.push_str(&" - |".repeat(6)),
            }
        }
        println!("{row}");
    }
    println!(
        "\nCPU milliseconds per request over the measured window (/proc): the host's process, \
         its database server's processes (PostgreSQL on this machine; SQLite works inside the \
         host), the load client's; the host's exchanges with its database per request."
    );
}

fn print_results(
    opts: &Options,
    measured: &[Measured],
    twins: &[TwinRounds],
    columns: &[HostColumn],
    pb_starts: &Samples,
    host_starts: &[Samples],
) {
    let both = columns.len() > 1;
    let mut header = format!("\n| row | PocketBase {} |", pocketbase::VERSION);
    let mut rule = String::from("|---|---:|");
    for c in columns {
        header.push_str(&format!(
            " this host, {} | host / PocketBase |",
            backend_name(c.backend)
        ));
        rule.push_str("---:|---:|");
    }
    if both {
        header.push_str(" PostgreSQL / SQLite |");
        rule.push_str("---:|");
    }
    header.push_str(" goal |");
    rule.push_str("---|");
    println!("{header}\n{rule}");
    for m in measured {
        let pb_rate = m.pb.rate(m.line);
        let mut row = format!("| {} | {} |", m.line.label, m.pb.cell(m.line));
        for f in &m.hosts {
            row.push_str(&format!(
                " {} | {:.2}x |",
                f.cell(m.line),
                f.rate(m.line) / pb_rate.max(1e-9)
            ));
        }
        if both {
            let (a, b) = (&m.hosts[0], &m.hosts[1]);
            let (sqlite, postgres) = match columns[0].backend {
                Backend::Sqlite => (a, b),
                Backend::Postgres => (b, a),
            };
            row.push_str(&format!(
                " {:.2} |",
                postgres.rate(m.line) / sqlite.rate(m.line).max(1e-9)
            ));
        }
        row.push_str(&format!(
            " {} |",
            m.line.goal.map_or("-".to_string(), |g| format!(">= {g}x"))
        ));
        println!("{row}");
    }
    println!(
        "\nreq/s (p50 latency); whole lists in records per second (PocketBase pages them by \
         {PB_MAX_PAGE}). c={}, keep-alive, {:.1} s after {:.1} s warm-up.",
        opts.concurrency,
        opts.measure.as_secs_f64(),
        opts.warmup.as_secs_f64()
    );

    println!("\n| row | KB per answer, PocketBase | KB per answer, host | peak RSS MB, PocketBase | peak RSS MB, host |");
    println!("|---|---:|---:|---:|---:|");
    let list = |f: &dyn Fn(&Figure) -> String, figures: &[Figure]| {
        figures.iter().map(f).collect::<Vec<_>>().join(" / ")
    };
    for m in measured {
        println!(
            "| {} | {:.1} | {} | {} | {} |",
            m.line.id,
            m.pb.mean_bytes / 1000.0,
            list(&|f| format!("{:.1}", f.mean_bytes / 1000.0), &m.hosts),
            m.pb.peak_rss_kib
                .map_or("?".into(), |k| format!("{:.0}", mb(k))),
            list(
                &|f| f
                    .peak_rss_kib
                    .map_or("?".into(), |k| format!("{:.0}", mb(k))),
                &m.hosts
            ),
        );
    }

    print_costs(measured, columns);

    let pb_cold = ms(pb_starts.median());
    let host_cold: Vec<f64> = host_starts.iter().map(|s| ms(s.median())).collect();
    println!(
        "\ncold start (spawn to first answer, existing data, median of {}): PocketBase {:.1} ms; {}",
        pb_starts.len(),
        pb_cold,
        columns
            .iter()
            .zip(&host_cold)
            .map(|(c, t)| format!("host on {} {:.1} ms", backend_name(c.backend), t))
            .collect::<Vec<_>>()
            .join(", ")
    );

    let mut checks = Vec::new();
    println!(
        "\n| svc route / its generic twin (same rows, same expansions; one host, median of {TWIN_ROUNDS} alternating rounds) | {} |",
        columns
            .iter()
            .map(|c| backend_name(c.backend))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---:|".repeat(columns.len()));
    for pair in twins {
        let (svc, twin) = (pair.svc, pair.twin);
        let medians: Vec<f64> = pair.ratios.iter().map(|r| median(r)).collect();
        println!(
            "| {svc} / {twin} | {} |",
            pair.ratios
                .iter()
                .zip(&medians)
                .map(|(rounds, m)| format!(
                    "{m:.2} ({})",
                    rounds
                        .iter()
                        .map(|r| format!("{r:.2}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        for (k, m) in medians.into_iter().enumerate() {
            checks.push(Check::at_least(
                format!("{svc} / {twin} ({})", backend_name(columns[k].backend)),
                m,
                TWIN_GOAL,
            ));
        }
    }
    if both {
        let sqlite = usize::from(columns[0].backend != Backend::Sqlite);
        for m in measured {
            checks.push(Check::at_least(
                format!("{}: PostgreSQL / SQLite", m.line.id),
                m.hosts[1 - sqlite].rate(m.line) / m.hosts[sqlite].rate(m.line).max(1e-9),
                POSTGRES_GOAL,
            ));
        }
    }
    for (k, c) in columns.iter().enumerate() {
        let on = if both {
            format!(" ({})", backend_name(c.backend))
        } else {
            String::new()
        };
        for m in measured {
            if let Some(goal) = m.line.goal {
                checks.push(Check::at_least(
                    format!("{}{on}: host / PocketBase", m.line.id),
                    m.hosts[k].rate(m.line) / m.pb.rate(m.line).max(1e-9),
                    goal,
                ));
            }
        }
        checks.push(Check::at_most(
            format!("cold start{on}: host / PocketBase"),
            host_cold[k] / pb_cold.max(1e-9),
            1.0,
        ));
        if let Some(m) = measured.iter().find(|m| m.line.id == "videos-all") {
            if let (Some(h), Some(p)) = (m.hosts[k].peak_rss_kib, m.pb.peak_rss_kib) {
                println!(
                    "peak RSS through the full expanded list{on}: host {:.0} MB, PocketBase {:.0} MB",
                    mb(h),
                    mb(p)
                );
                checks.push(Check::at_most(
                    format!("peak RSS, full list{on}: host / PocketBase (below 1)"),
                    h as f64 / p as f64,
                    0.999,
                ));
            }
        }
    }
    let errors: u64 = measured
        .iter()
        .map(|m| m.pb.errors + m.hosts.iter().map(|f| f.errors).sum::<u64>())
        .sum();
    crate::report::print_goals(checks, errors, "every row, both sides");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixtures() -> Fixtures {
        Fixtures {
            recording: Bytes::from_static(b"{}"),
            member_recordings: vec![Bytes::from_static(b"{\"author\":\"m0\"}")],
            members: vec![Member {
                id: "m0".into(),
                token: "pb-member".into(),
            }],
            pb_superuser: "pb-admin".into(),
            viewer_tokens: vec!["viewer".into()],
            pb_pages: 2,
        }
    }

    fn auth(r: &Req) -> Option<&str> {
        r.auth.as_ref().and_then(|h| h.to_str().ok())
    }

    #[test]
    fn a_median_is_the_middle_round() {
        assert_eq!(median(&[0.9, 0.7, 1.1]), 0.9);
        assert_eq!(median(&[1.0, 0.6, 0.8, 2.0]), 0.9);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn every_twin_names_two_rows_of_the_table() {
        for (svc, twin) in TWINS {
            for id in [svc, twin] {
                assert!(LINES.iter().any(|l| l.id == id), "{id}");
            }
        }
    }

    #[test]
    fn every_row_has_a_request_on_both_sides() {
        let fx = fixtures();
        for line in &LINES {
            for side in [Side::PocketBase, Side::Host(Backend::Sqlite)] {
                let r = request(line, side, &fx, 3, 1);
                assert!(r.path.starts_with('/'), "{} {:?}", line.id, side);
                let pb = side == Side::PocketBase;
                assert_eq!(r.path.starts_with("/api/"), pb, "{}", r.path);
            }
        }
    }

    #[test]
    fn admin_rows_carry_the_admin_tokens_and_anonymous_rows_none() {
        let fx = fixtures();
        let line = |id: &str| LINES.iter().find(|l| l.id == id).expect("row");
        let pb = request(line("videos-50"), Side::PocketBase, &fx, 0, 0);
        assert_eq!(auth(&pb), Some("Bearer pb-admin"));
        assert!(pb.path.contains("expand=models,movie") && pb.path.contains("perPage=50"));
        let host = request(line("videos-50"), Side::Host(Backend::Sqlite), &fx, 0, 0);
        assert_eq!(auth(&host), Some(format!("Bearer {ADMIN_TOKEN}").as_str()));
        assert!(host.path.ends_with("&limit=50"));
        for id in ["svc-videos-50", "svc-videos-all", "leaderboard"] {
            for side in [Side::PocketBase, Side::Host(Backend::Sqlite)] {
                assert!(request(line(id), side, &fx, 0, 0).auth.is_none(), "{id}");
            }
        }
        let member = request(line("svc-recording"), Side::PocketBase, &fx, 5, 0);
        assert_eq!(auth(&member), Some("Bearer pb-member"));
        assert_eq!(member.body.as_deref(), Some(&b"{\"author\":\"m0\"}"[..]));
    }

    #[test]
    fn the_full_list_walks_every_page() {
        let fx = fixtures();
        let line = LINES.iter().find(|l| l.id == "videos-all").expect("row");
        let pages: Vec<String> = (0..4)
            .map(|i| request(line, Side::PocketBase, &fx, 0, i).path)
            .collect();
        assert!(pages[0].contains("&page=1&") && pages[1].contains("&page=2&"));
        assert_eq!(pages[0], pages[2]);
    }

    #[test]
    fn whole_lists_compare_per_record() {
        let line = LINES.iter().find(|l| l.id == "videos-all").expect("row");
        let f = Figure {
            throughput: 10.0,
            p50_ms: 1.0,
            errors: 0,
            mean_bytes: 0.0,
            records: Some(970.0),
            peak_rss_kib: None,
            first_error: None,
            cost: None,
        };
        assert_eq!(f.rate(line), 9_700.0);
        assert_eq!(f.rate(&LINES[0]), 10.0);
    }

    #[test]
    fn the_author_is_added_to_the_body() {
        let body = with_author(br#"{"title":"t"}"#, "m1").expect("body");
        let v: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(v["author"], "m1");
        assert_eq!(v["title"], "t");
        assert!(with_author(b"[]", "m1").is_err());
    }

    #[test]
    fn lists_are_counted_in_either_shape() {
        assert_eq!(records_in(&serde_json::json!({"data": [1, 2]})), Some(2));
        assert_eq!(records_in(&serde_json::json!({"items": [1]})), Some(1));
        assert_eq!(records_in(&serde_json::json!([1, 2, 3])), Some(3));
        assert_eq!(records_in(&serde_json::json!("pong")), None);
    }
}
