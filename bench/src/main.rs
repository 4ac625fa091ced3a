//! `platform-bench`: measurements of the platform that print figures.
//!
//! Run through `scripts/bench.sh`, which builds the release host and
//! extension first. Figures are medians and ratios measured in one run:
//! this machine is shared, so absolute numbers vary more than ratios.

mod gamification;
mod stats;

use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: platform-bench gamification [--points N] [--users N] [--requests N]\n\
         \n  gamification   play-award latency with 10 vs N prior point actions, and the\n\
         \x20                leaderboard and user summary with N users having stats"
    );
    ExitCode::from(2)
}

/// `--name value` of the arguments, parsed.
fn option(args: &[String], name: &str, default: usize) -> Result<usize, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.replace('_', "").parse().ok())
            .ok_or_else(|| format!("{name} takes a whole number")),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if std::env::var_os("PLATFORM_PROFILE").is_none() {
        std::env::set_var("PLATFORM_PROFILE", "release");
    }
    let result = match args.first().map(String::as_str) {
        Some("gamification") => (|| {
            let config = gamification::Config {
                prior_points: option(&args, "--points", 100_000)?,
                users: option(&args, "--users", 100_000)?,
                requests: option(&args, "--requests", 300)?,
            };
            gamification::run(&config)
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
