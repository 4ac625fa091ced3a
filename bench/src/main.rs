//! `platform-bench`: see the library's documentation and docs/benchmarks.md.

use std::process::ExitCode;
use std::time::Duration;

use platform_tests::Backend;

use platform_bench::{
    assets, compare, gamification, hit, load, memory, peers, recording_create, several_hosts,
    sign_in,
};

fn usage() -> ExitCode {
    eprintln!(
        "usage: platform-bench load [--scale N] [--seed S] [--duration-secs D] [--smoke] [--only ID,..] [--keep] [--db DB]\n\
         \x20      platform-bench gamification [--points N] [--users N] [--requests N] [--db DB]\n\
         \x20      platform-bench recording-create [--prior N] [--events N] [--requests N] [--db DB]\n\
         \x20      platform-bench memory [--db DB]\n\
         \x20      platform-bench assets [--duration-secs D] [--db DB]\n\
         \x20      platform-bench compare [--seed S] [--duration-secs D] [--only ID,..] [--client-threads N] [--keep] [--db DB]\n\
         \x20      platform-bench peers [--seed S] [--duration-secs D] [--only ID,..] [--cold-starts N] [--client-threads N] [--smoke] [--keep] [--db DB|both] [--scale large [--large-factor F]]\n\
         \x20      platform-bench several-hosts [--seed S] [--duration-secs D] [--concurrency N] [--db DB]\n\
         \x20      platform-bench sign-in [--attempts N] [--duration-secs D] [--flood N] [--db DB]\n\
         \x20      platform-bench hit URL [--token T] [--body FILE] [--duration-secs D] [--concurrency N]\n\
         \n  load           the issue's scenarios at concurrency 16 and 64 on generated data at\n\
         \x20                scale N and 4N (1 = the issue's default sizes), the ABI's own cost\n\
         \x20                (needs the in-process host), the play award's growth, and the targets\n\
         \x20 --smoke        tiny data, every scenario once at concurrency 2 (the test suite)\n\
         \x20 --only ID,..   only these scenarios, x1 data only (e.g. to profile one)\n\
         \x20 gamification   play-award latency with 10 vs N prior point actions, and the\n\
         \x20                leaderboard and user summary with N users having stats\n\
         \x20 recording-create  POST /svc/recordings (draft and published, 1,000 events) by an\n\
         \x20                owner with 10 vs N prior recordings (default 20,000 of 1,000 events)\n\
         \x20 memory         the host's peak RSS through 8 concurrent anonymous 14 MiB play\n\
         \x20                bodies and 2 concurrent 14 MiB recordings (target < 256 MB)\n\
         \x20 assets         GET /assets/:id (a ~100 KB JPEG, its kept 320 px WebP, a 1 MiB range)\n\
         \x20                against /server/ping at c=16 (default 5 s measured per row), the\n\
         \x20                first transformation of a 4000x3000 JPEG against the kept one, and\n\
         \x20                the host's peak RSS through 8 concurrent 100 MB uploads (target:\n\
         \x20                growth < 256 MB)\n\
         \x20 compare        the table against Directus 11 on the same data (2,000 videos, 20,000\n\
         \x20                likes, 50,000 plays, 10,000 stats rows): answer cache on, cache off,\n\
         \x20                signed in; a fresh host per row (default 10 s measured per row)\n\
         \x20 peers          this host (answer cache off) against PocketBase 0.40 (installed from\n\
         \x20                PyPI into target/bench-peers) on the compare data loaded into both,\n\
         \x20                a fresh process per row and side (default 5 s measured per row),\n\
         \x20                cold start and peak RSS, ratios against the goals; --db both adds\n\
         \x20                a PostgreSQL column; --smoke: tiny data, 1 s per row; --scale large:\n\
         \x20                the host alone on the compare data and on 100,000 videos, 1,000,000\n\
         \x20                users, 10,000,000 plays (times --large-factor F, default 1), every\n\
         \x20                row and a few deep reads on both, large / default throughput\n\
         \x20 several-hosts  two hosts on one database against one host, for a read mix (cache on\n\
         \x20                and off) and a write mix, with database round trips per request, on\n\
         \x20                the compare data (default 10 s measured per row, c=16)\n\
         \x20 sign-in        sign-in time for a wrong password against an unknown email, and the\n\
         \x20                latency of other routes alone and during a flood of sign-ins\n\
         \x20 hit            GET URL (or POST the JSON of --body FILE) on a server already running\n\
         \x20                (a host kept by --keep, under a profiler), c=16 by default\n\
         \x20 --client-threads N  threads of the load client (compare: 1, as wrk -t1 measured\n\
         \x20                Directus; the ping the targets divide by is bounded by it)\n\
         \x20 --db DB        sqlite (the default), postgres (a throwaway cluster of the installed\n\
         \x20                server binaries) or a postgres://user@host:port/database URL of a\n\
         \x20                server where the user may create databases (one per host started)\n\
         \nHosts run the binaries of PLATFORM_PROFILE (default release)."
    );
    ExitCode::from(2)
}

/// `--name value` of the arguments, parsed.
fn option<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.replace('_', "").parse().ok())
            .ok_or_else(|| format!("{name} takes a number")),
    }
}

fn check_known(args: &[String], known: &[&str]) -> Result<(), String> {
    let mut i = 1;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--smoke" || a == "--keep" {
            i += 1;
        } else if known.contains(&a) {
            i += 2;
        } else {
            return Err(format!("unknown argument {a}"));
        }
    }
    Ok(())
}

/// `--duration-secs D` (`default` when absent), a positive number of
/// seconds, as the time each row is measured.
fn measured_for(args: &[String], default: f64) -> Result<Duration, String> {
    let seconds: f64 = option(args, "--duration-secs", default)?;
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| "--duration-secs must be positive".to_string())
}

/// The text after `--name`, when given.
fn value_of(args: &[String], name: &str) -> Result<Option<String>, String> {
    args.iter()
        .position(|a| a == name)
        .map(|i| {
            args.get(i + 1)
                .cloned()
                .ok_or_else(|| format!("{name} takes a value"))
        })
        .transpose()
}

/// `--only ID,..`, split.
fn only_ids(args: &[String]) -> Result<Option<Vec<String>>, String> {
    args.iter()
        .position(|a| a == "--only")
        .map(|i| {
            args.get(i + 1)
                .map(|v| v.split(',').map(String::from).collect::<Vec<_>>())
                .ok_or_else(|| "--only takes scenario ids, comma-separated".to_string())
        })
        .transpose()
}

fn load_options(args: &[String]) -> Result<load::Options, String> {
    check_known(args, &["--scale", "--seed", "--duration-secs", "--only"])?;
    let seed = option(args, "--seed", 42u64)?;
    let only = only_ids(args)?;
    if args.iter().any(|a| a == "--smoke") {
        return Ok(load::Options {
            only,
            ..load::Options::smoke(seed)
        });
    }
    let scale: f64 = option(args, "--scale", 1.0)?;
    if !(scale > 0.0 && scale.is_finite()) {
        return Err("--scale must be positive".into());
    }
    let measure = measured_for(args, 5.0)?;
    Ok(load::Options {
        only,
        ..load::Options::full(scale, seed, measure)
    })
}

/// Takes `--db DB` out of the arguments and tells the test harness, which
/// starts the hosts, which database to give them.
fn select_database(args: &mut Vec<String>) -> Result<(), String> {
    let Some(i) = args.iter().position(|a| a == "--db") else {
        return Ok(());
    };
    let value = args
        .get(i + 1)
        .cloned()
        .ok_or("--db takes sqlite, postgres or a postgres:// URL")?;
    args.drain(i..i + 2);
    match value.as_str() {
        "sqlite" => std::env::set_var("TEST_DB", "sqlite"),
        "postgres" => std::env::set_var("TEST_DB", "postgres"),
        url if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            std::env::set_var("TEST_DB", "postgres");
            std::env::set_var("TEST_DATABASE_URL", url);
        }
        other => {
            return Err(format!(
                "--db {other}: use sqlite, postgres or a postgres:// URL"
            ))
        }
    }
    Ok(())
}

/// `peers --db both`: taken out of the arguments (the host runs on each
/// database in turn); any other `--db` is [`select_database`]'s.
fn take_db_both(args: &mut Vec<String>) -> bool {
    let at = args
        .windows(2)
        .position(|w| w[0] == "--db" && w[1] == "both");
    if let Some(i) = at {
        args.drain(i..i + 2);
    }
    at.is_some()
}

fn peers_options(args: &[String], both: bool) -> Result<peers::Options, String> {
    check_known(
        args,
        &[
            "--seed",
            "--duration-secs",
            "--only",
            "--client-threads",
            "--cold-starts",
            "--scale",
            "--large-factor",
        ],
    )?;
    let large_factor = peers::parse_scale(
        value_of(args, "--scale")?.as_deref(),
        value_of(args, "--large-factor")?.as_deref(),
    )?;
    if both && large_factor.is_some() {
        return Err("--scale large runs on one database: --db sqlite or --db postgres".into());
    }
    let seed = option(args, "--seed", 42u64)?;
    let backends = if both {
        vec![Backend::Sqlite, Backend::Postgres]
    } else {
        vec![Backend::from_env()]
    };
    let base = if args.iter().any(|a| a == "--smoke") {
        peers::Options::smoke(seed, backends)
    } else {
        let measure = measured_for(args, 5.0)?;
        peers::Options::new(seed, measure, backends)
    };
    Ok(peers::Options {
        only: only_ids(args)?,
        keep: args.iter().any(|a| a == "--keep"),
        client_threads: option(args, "--client-threads", 1usize)?.max(1),
        cold_starts: option(args, "--cold-starts", base.cold_starts)?.max(1),
        large_factor,
        ..base
    })
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let db_both = args.first().is_some_and(|a| a == "peers") && take_db_both(&mut args);
    if let Err(e) = select_database(&mut args) {
        eprintln!("platform-bench: {e}");
        return ExitCode::from(2);
    }
    eprintln!(
        "platform-bench: hosts on {}",
        if db_both {
            "sqlite and postgres".to_string()
        } else {
            std::env::var("TEST_DB").unwrap_or_else(|_| "sqlite".into())
        }
    );
    if std::env::var_os("PLATFORM_PROFILE").is_none() {
        std::env::set_var("PLATFORM_PROFILE", "release");
    }
    let result = match args.first().map(String::as_str) {
        Some("gamification") => (|| {
            check_known(&args, &["--points", "--users", "--requests"])?;
            let config = gamification::Config {
                prior_points: option(&args, "--points", 100_000)?,
                users: option(&args, "--users", 100_000)?,
                requests: option(&args, "--requests", 300)?,
            };
            gamification::run(&config)
        })(),
        Some("recording-create") => (|| {
            check_known(&args, &["--prior", "--events", "--requests"])?;
            recording_create::run(&recording_create::Config {
                prior: option(&args, "--prior", 20_000)?,
                events: option(&args, "--events", 1_000)?,
                requests: option(&args, "--requests", 200usize)?.max(1),
            })
        })(),
        Some("load") => load_options(&args).and_then(|o| load::run(&o)),
        Some("compare") => (|| {
            check_known(
                &args,
                &["--seed", "--duration-secs", "--only", "--client-threads"],
            )?;
            let measure = measured_for(&args, 10.0)?;
            compare::run(&compare::Options {
                only: only_ids(&args)?,
                keep: args.iter().any(|a| a == "--keep"),
                client_threads: option(&args, "--client-threads", 1usize)?.max(1),
                ..compare::Options::new(option(&args, "--seed", 42u64)?, measure)
            })
        })(),
        Some("peers") => peers_options(&args, db_both).and_then(|o| peers::run(&o)),
        Some("several-hosts") => (|| {
            check_known(&args, &["--seed", "--duration-secs", "--concurrency"])?;
            let measure = measured_for(&args, 10.0)?;
            several_hosts::run(&several_hosts::Options {
                concurrency: option(&args, "--concurrency", 16usize)?.max(1),
                ..several_hosts::Options::new(option(&args, "--seed", 42u64)?, measure)
            })
        })(),
        Some("sign-in") => (|| {
            check_known(&args, &["--attempts", "--duration-secs", "--flood"])?;
            let measure = measured_for(&args, 5.0)?;
            sign_in::run(&sign_in::Options {
                attempts: option(&args, "--attempts", 20usize)?.max(1),
                measure,
                flood: option(&args, "--flood", 32usize)?.max(1),
            })
        })(),
        Some("hit") => (|| {
            let url = args.get(1).filter(|a| !a.starts_with("--")).cloned();
            let url = url.ok_or("hit takes a URL: http://127.0.0.1:PORT/path")?;
            let rest: Vec<String> = args[1..].to_vec();
            check_known(
                &rest,
                &["--token", "--body", "--duration-secs", "--concurrency"],
            )?;
            let measure = measured_for(&args, 5.0)?;
            let text = |name: &str| {
                args.iter()
                    .position(|a| a == name)
                    .map(|i| {
                        args.get(i + 1)
                            .cloned()
                            .ok_or(format!("{name} takes a value"))
                    })
                    .transpose()
            };
            let body = text("--body")?
                .map(|path| std::fs::read(&path).map_err(|e| format!("--body {path}: {e}")))
                .transpose()?;
            hit::run(&hit::Options {
                url,
                token: text("--token")?,
                body,
                concurrency: option(&args, "--concurrency", 16usize)?.max(1),
                measure,
            })
        })(),
        Some("memory") => check_known(&args, &[]).and_then(|()| memory::run()),
        Some("assets") => (|| {
            check_known(&args, &["--duration-secs"])?;
            let measure = measured_for(&args, 5.0)?;
            assets::run(&assets::Options::new(measure))
        })(),
        _ => return usage(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("platform-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(duration: &str) -> Vec<String> {
        ["compare", "--duration-secs", duration]
            .iter()
            .map(|a| a.to_string())
            .collect()
    }

    #[test]
    fn a_measuring_time_must_be_a_positive_number_of_seconds() {
        assert_eq!(
            measured_for(&args("2.5"), 5.0),
            Ok(Duration::from_millis(2_500))
        );
        assert_eq!(
            measured_for(&["compare".to_string()], 5.0),
            Ok(Duration::from_secs(5))
        );
        for bad in ["0", "-1", "NaN", "inf", "1e300", "x"] {
            assert!(measured_for(&args(bad), 5.0).is_err(), "{bad}");
        }
    }
}
