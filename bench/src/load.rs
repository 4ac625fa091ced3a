//! `platform-bench load`: the scenarios under load at scale ×1 and
//! ×4 (separate hosts and datasets), the ABI's own cost (dynamic vs
//! in-process host on the same data), the play award's cost growth, a
//! recording create's cost against its owner's history, and the targets as
//! PASS/MISS lines.

use std::time::{Duration, Instant};

use platform_tests::Host;

use crate::api::Api;
use crate::dataset::{Dataset, Generator, Sizes};
use crate::driver::{self, Load};
use crate::gamification;
use crate::hosts;
use crate::recording_create;
use crate::report::{self, Check, Row};
use crate::scenarios::{self, Scenario};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Multiplies the default sizes (smoke: the tiny sizes).
    pub scale: f64,
    pub seed: u64,
    pub warmup: Duration,
    pub measure: Duration,
    /// The first one is the one the targets are checked at.
    pub concurrencies: Vec<usize>,
    /// The data growth measured (×4).
    pub growth: f64,
    pub smoke: bool,
    /// The gamification benchmark's heavy player (prior point actions).
    pub play_points: usize,
    pub play_requests: usize,
    /// The recording-create benchmark's heavy owner (prior recordings).
    pub owner_recordings: usize,
    /// Only these scenarios, at ×1 data only (a focused run, e.g. to profile).
    pub only: Option<Vec<String>>,
}

impl Options {
    /// The full benchmark.
    pub fn full(scale: f64, seed: u64, duration: Duration) -> Self {
        Self {
            scale,
            seed,
            warmup: Duration::from_secs(1),
            measure: duration,
            concurrencies: vec![16, 64],
            growth: 4.0,
            smoke: false,
            play_points: 100_000,
            play_requests: 300,
            owner_recordings: 20_000,
            only: None,
        }
    }

    /// Tiny data, every scenario once at low concurrency, a few seconds.
    pub fn smoke(seed: u64) -> Self {
        Self {
            scale: 1.0,
            seed,
            warmup: Duration::from_millis(50),
            // Long enough for a slow write (a 1,000-event recording in a
            // debug build, on either database) to start inside the window.
            measure: Duration::from_millis(600),
            concurrencies: vec![2],
            growth: 4.0,
            smoke: true,
            play_points: 200,
            play_requests: 5,
            owner_recordings: 20,
            only: None,
        }
    }

    fn sizes(&self, factor: f64) -> Sizes {
        if self.smoke {
            Sizes::smoke().times(factor)
        } else {
            Sizes::at_scale(self.scale * factor)
        }
    }

    fn selected(&self, dataset: &Dataset) -> Result<Vec<Scenario>, String> {
        let all = scenarios::all(dataset)?;
        let Some(only) = &self.only else {
            return Ok(all);
        };
        if let Some(unknown) = only
            .iter()
            .find(|id| !scenarios::IDS.contains(&id.as_str()))
        {
            return Err(format!(
                "unknown scenario {unknown} (one of {})",
                scenarios::IDS.join(", ")
            ));
        }
        Ok(all
            .into_iter()
            .filter(|s| only.iter().any(|id| id == s.id))
            .collect())
    }

    fn primary(&self) -> usize {
        self.concurrencies.first().copied().unwrap_or(16)
    }
}

/// How long the host is left alone between the import and the load.
const SETTLE: Duration = Duration::from_secs(3);

/// A dataset on a running host, and its scenarios measured.
struct Measured {
    host: Host,
    dataset: Dataset,
    rows: Vec<Row>,
}

fn run_scenarios(
    opts: &Options,
    host: &Host,
    scenarios: &[Scenario],
    concurrencies: &[usize],
) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for &concurrency in concurrencies {
        for s in scenarios {
            let load = Load {
                concurrency,
                warmup: opts.warmup,
                measure: opts.measure,
                paired: s.paired,
                client_threads: None,
            };
            let outcome = driver::run(&host.base, load, s.source.clone())
                .map_err(|e| format!("{} (c={concurrency}): {e}", s.id))?;
            let row = Row::new(s, concurrency, &outcome, host.peak_rss_kib());
            eprintln!(
                "  {:<15} c={:<3} {:>8.0} req/s  p50 {:>8.2} ms  p99 {:>8.2} ms  errors {}",
                row.scenario, concurrency, row.throughput, row.p50_ms, row.p99_ms, row.errors
            );
            rows.push(row);
        }
    }
    Ok(rows)
}

fn measure_scale(opts: &Options, factor: f64) -> Result<Measured, String> {
    let sizes = opts.sizes(factor);
    eprintln!(
        "== data x{factor}: starting a {} host",
        platform_tests::profile()
    );
    let host = hosts::dynamic(None)?;
    let api = Api::new(&host.base);
    let dataset = Generator::new(&api, sizes, opts.seed, opts.smoke).run()?;
    let import_peak = host.peak_rss_kib();
    // Measure the peak under load, not the import's: the host hands free
    // memory back every 2 s, so the peak is reset once it has done so.
    let settle = if opts.smoke { Duration::ZERO } else { SETTLE };
    std::thread::sleep(settle);
    let settled = host.rss_kib();
    let reset = hosts::reset_peak_rss(&host);
    let mb = |kib: Option<u64>| kib.map_or_else(|| "?".into(), |k| format!("{:.0}", report::mb(k)));
    println!(
        "\nx{factor} data: host peak RSS during the import {} MB, {} MB {:.0} s after it{}",
        mb(import_peak),
        mb(settled),
        settle.as_secs_f64(),
        match &reset {
            Ok(()) => String::new(),
            Err(e) => format!(" (peak not reset, figures below include it: {e})"),
        }
    );
    let list = opts.selected(&dataset)?;
    eprintln!("== data x{factor}: load (host pid {})", host.pid());
    let rows = run_scenarios(opts, &host, &list, &opts.concurrencies)?;
    Ok(Measured {
        host,
        dataset,
        rows,
    })
}

/// Dynamic / in-process throughput of `/svc/stats` and `/svc/videos?limit=50`
/// on the same data: dynamic, in-process, dynamic again, each host started
/// on the finished data; the in-process figure is compared with the mean of
/// both dynamic runs.
fn abi_cost(opts: &Options, measured: Measured) -> Result<Vec<Check>, String> {
    let binary = hosts::inprocess_binary();
    if !binary.exists() {
        println!(
            "\nABI cost: skipped: in-process host not built ({} missing; scripts/bench.sh --inprocess builds it)",
            binary.display()
        );
        return Ok(Vec::new());
    }
    let c = opts.primary();
    let chosen: Vec<Scenario> = scenarios::all(&measured.dataset)?
        .into_iter()
        .filter(|s| s.id == "stats" || s.id == "videos-50")
        .collect();
    // Every host of the comparison starts on the finished data: the run
    // right after the import also pays for its after-effects (the WAL
    // checkpoint, a cold page cache), which are not the ABI's.
    eprintln!("== ABI cost: dynamic host restarted on the same data");
    let dynamic = hosts::dynamic(Some(measured.host.stop()))?;
    let first = run_scenarios(opts, &dynamic, &chosen, &[c])?;
    eprintln!("== ABI cost: in-process host on the same data");
    let inprocess = hosts::inprocess(dynamic.stop())?;
    let in_rows = run_scenarios(opts, &inprocess, &chosen, &[c])?;
    eprintln!("== ABI cost: dynamic host again");
    let dynamic = hosts::dynamic(Some(inprocess.stop()))?;
    let again = run_scenarios(opts, &dynamic, &chosen, &[c])?;
    drop(dynamic);

    println!("\nABI cost: dynamic / in-process throughput (same data, c={c})\n");
    println!("| scenario | dynamic req/s (1st) | in-process req/s | dynamic req/s (2nd) | ratio |");
    println!("|---|---:|---:|---:|---:|");
    let mut checks = Vec::new();
    for inp in &in_rows {
        let find = |rows: &[Row]| {
            rows.iter()
                .find(|r| r.scenario == inp.scenario)
                .map(|r| r.throughput)
        };
        let (Some(a), Some(b)) = (find(&first), find(&again)) else {
            continue;
        };
        let ratio = (a + b) / 2.0 / inp.throughput.max(1e-9);
        println!(
            "| {} | {a:.0} | {:.0} | {b:.0} | {ratio:.2} |",
            inp.label, inp.throughput
        );
        checks.push(Check::at_least(
            format!("FFI: dynamic / in-process throughput of {}", inp.label),
            ratio,
            0.90,
        ));
    }
    Ok(checks)
}

/// Runs everything and prints the figures and the targets.
pub fn run(opts: &Options) -> Result<(), String> {
    let started = Instant::now();
    println!(
        "platform-bench load: {} host, seed {}, {}, concurrency {:?}, {:.2} s measured per scenario after {:.2} s warm-up",
        platform_tests::profile(),
        opts.seed,
        if opts.smoke {
            "smoke sizes".to_string()
        } else {
            format!("scale {}", opts.scale)
        },
        opts.concurrencies,
        opts.measure.as_secs_f64(),
        opts.warmup.as_secs_f64(),
    );
    let c = opts.primary();

    let small = measure_scale(opts, 1.0)?;
    report::print_table(
        &format!("Data x1 ({})", describe(&small.dataset.sizes)),
        &small.rows,
    );
    let small_rows = small.rows.clone();
    let mut checks = report::floor_checks(&small_rows, c);
    checks.extend(abi_cost(opts, small)?);
    if opts.only.is_some() {
        println!("\n(--only: no x{} data, no play award)", opts.growth);
        return Ok(());
    }

    let large = measure_scale(opts, opts.growth)?;
    drop(large.host);
    report::print_table(
        &format!("Data x{} ({})", opts.growth, describe(&large.dataset.sizes)),
        &large.rows,
    );
    checks.extend(report::growth(&small_rows, &large.rows, opts.growth, c));

    eprintln!("== play award: gamification benchmark");
    let play = gamification::measure(&gamification::Config {
        prior_points: opts.play_points,
        users: if opts.smoke { 10 } else { 1_000 },
        requests: opts.play_requests,
    })?;
    println!();
    gamification::print(&play);
    checks.push(Check::at_most(
        format!(
            "play award p50 latency, {}/10 prior point actions",
            opts.play_points
        ),
        play.ratio(),
        2.0,
    ));

    eprintln!("== recording create: against the owner's history");
    let create = recording_create::measure(&recording_create::Config {
        prior: opts.owner_recordings,
        events: 1_000,
        requests: if opts.smoke { 5 } else { 200 },
    })?;
    println!();
    recording_create::print(&create);
    checks.extend(recording_create::checks(&create));

    let errors = report::total_errors(&small_rows) + report::total_errors(&large.rows);
    checks.push(Check::at_most(
        "errors under load (every run)",
        errors as f64,
        0.0,
    ));
    for (rows, factor) in [(&small_rows, 1.0), (&large.rows, opts.growth)] {
        if let Some(kib) = report::peak_rss_kib(rows) {
            checks.push(Check::at_most(
                format!(
                    "host peak RSS under load, x{factor} data (scale {}), MB",
                    opts.scale * factor
                ),
                report::mb(kib),
                200.0,
            ));
        }
    }
    println!(
        "\nTargets{}",
        if opts.smoke {
            " (smoke sizes: not meaningful)"
        } else {
            ""
        }
    );
    for check in &checks {
        println!("{}", check.line());
    }
    println!("\ntotal time {:.0?}", started.elapsed());
    Ok(())
}

fn describe(s: &Sizes) -> String {
    format!(
        "{} users with stats, {} point actions, {} models, {} videos, {} recordings x {} events, {} likes, {} video plays",
        s.users, s.point_actions, s.models, s.videos, s.recordings, s.events_per_recording, s.likes, s.video_plays
    )
}
