//! The benchmark harness cannot rot: `platform-bench load --smoke` generates
//! a tiny dataset through the items API, runs every scenario of the
//! benchmark issue at low concurrency against hosts of this profile (debug
//! unless `PLATFORM_PROFILE` says otherwise), at ×1 and ×4 data, and must
//! finish with no errors and a result row per scenario.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use platform_bench::scenarios::IDS as SCENARIOS;
use platform_tests::{profile, workspace_root};

fn bench_binary() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    target.join(profile()).join("platform-bench")
}

/// The cells of a result row `| id `label` | c | req/s | p50 | p99 |
/// requests | errors | KB | RSS |`, trimmed.
fn cells(row: &str) -> Vec<&str> {
    row.split('|').map(str::trim).collect()
}

#[test]
fn smoke_benchmark_runs_every_scenario_without_errors() {
    let binary = bench_binary();
    assert!(
        binary.exists(),
        "{} is missing: build first with scripts/test.sh (cargo build --workspace)",
        binary.display()
    );
    let started = Instant::now();
    let output = Command::new(&binary)
        .args(["load", "--smoke"])
        .env("PLATFORM_PROFILE", profile())
        .output()
        .expect("run platform-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "platform-bench load --smoke failed ({}):\n{stdout}\n{stderr}",
        output.status
    );

    for id in SCENARIOS {
        let rows: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with(&format!("| {id} `")))
            .collect();
        assert_eq!(
            rows.len(),
            2,
            "{id}: one result row at x1 and one at x4 data expected:\n{stdout}"
        );
        for row in rows {
            let c = cells(row);
            assert_eq!(c.len(), 11, "malformed row: {row}");
            let requests: u64 = c[6].parse().unwrap_or(0);
            let errors = c[7].split_whitespace().next().unwrap_or("?");
            assert!(requests > 0, "{id} measured no request: {row}");
            assert_eq!(errors, "0", "{id} had errors: {row}\n{stdout}");
        }
    }
    assert!(
        stdout.contains("ABI cost"),
        "the ABI cost part did not report:\n{stdout}"
    );
    assert!(
        stdout.contains("play latency ratio"),
        "the play award part did not report:\n{stdout}"
    );
    assert!(
        stdout.contains("create latency ratio"),
        "the recording create part did not report:\n{stdout}"
    );
    assert!(
        stdout.contains("PASS errors under load"),
        "errors under load:\n{stdout}"
    );
    assert!(
        // A guard against a hang, not a speed target (the machine may be
        // shared): the smoke run takes well under a minute when alone.
        started.elapsed() < Duration::from_secs(300),
        "the smoke benchmark took {:?}",
        started.elapsed()
    );
}
