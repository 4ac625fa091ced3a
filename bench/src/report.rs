//! Result rows, their tables, and the targets as PASS/MISS lines.

use crate::driver::Outcome;
use crate::scenarios::{Class, Scenario};

/// One scenario measured at one concurrency.
#[derive(Debug, Clone)]
pub struct Row {
    pub scenario: &'static str,
    pub label: &'static str,
    pub class: Class,
    pub concurrency: usize,
    pub throughput: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub requests: u64,
    pub errors: u64,
    pub tolerated: u64,
    pub mean_bytes: f64,
    /// The host's peak RSS so far (after this scenario).
    pub rss_kib: Option<u64>,
    pub first_error: Option<String>,
}

impl Row {
    pub fn new(s: &Scenario, concurrency: usize, o: &Outcome, rss_kib: Option<u64>) -> Self {
        Self {
            scenario: s.id,
            label: s.label,
            class: s.class,
            concurrency,
            throughput: o.throughput(),
            p50_ms: o.p50_ms(),
            p99_ms: o.p99_ms(),
            requests: o.requests,
            errors: o.errors,
            tolerated: o.tolerated,
            mean_bytes: o.mean_bytes,
            rss_kib,
            first_error: o.first_error.clone(),
        }
    }
}

/// Megabytes (10⁶ bytes) of KiB.
pub fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

fn rss(kib: Option<u64>) -> String {
    kib.map_or_else(|| "?".into(), |k| format!("{:.0}", mb(k)))
}

/// Prints rows as a Markdown table (pasted as is into docs/benchmarks.md).
pub fn print_table(title: &str, rows: &[Row]) {
    println!("\n{title}\n");
    println!(
        "| scenario | c | req/s | p50 ms | p99 ms | requests | errors | KB/answer | peak RSS MB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let tolerated = if r.tolerated > 0 {
            format!(" (+{} expected 400)", r.tolerated)
        } else {
            String::new()
        };
        println!(
            "| {} `{}` | {} | {:.0} | {:.2} | {:.2} | {} | {}{tolerated} | {:.1} | {} |",
            r.scenario,
            r.label,
            r.concurrency,
            r.throughput,
            r.p50_ms,
            r.p99_ms,
            r.requests,
            r.errors,
            r.mean_bytes / 1000.0,
            rss(r.rss_kib),
        );
    }
    for r in rows.iter().filter(|r| r.errors > 0) {
        println!(
            "errors in {} (c={}): first: {}",
            r.scenario,
            r.concurrency,
            r.first_error.as_deref().unwrap_or("?")
        );
    }
}

/// Prints each row's throughput as a share of `floor` req/s (the
/// `/server/ping` of the same run, the same client and concurrency).
pub fn print_against_floor(title: &str, rows: &[Row], floor: f64) {
    println!("\n{title}\n");
    println!("| request | c | req/s | ping req/s | ratio to ping |");
    println!("|---|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| `{}` | {} | {:.0} | {floor:.0} | {:.3} |",
            r.label,
            r.concurrency,
            r.throughput,
            r.throughput / floor.max(1e-9)
        );
    }
}

fn find<'a>(rows: &'a [Row], scenario: &str, concurrency: usize) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.scenario == scenario && r.concurrency == concurrency)
}

/// A measured figure against a target.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: String,
    pub value: f64,
    pub limit: f64,
    /// The target is a floor (≥) rather than a ceiling (≤).
    pub at_least: bool,
}

impl Check {
    pub fn at_most(name: impl Into<String>, value: f64, limit: f64) -> Self {
        Self {
            name: name.into(),
            value,
            limit,
            at_least: false,
        }
    }

    pub fn at_least(name: impl Into<String>, value: f64, limit: f64) -> Self {
        Self {
            name: name.into(),
            value,
            limit,
            at_least: true,
        }
    }

    pub fn pass(&self) -> bool {
        if self.at_least {
            self.value >= self.limit
        } else {
            self.value <= self.limit
        }
    }

    pub fn line(&self) -> String {
        format!(
            "{} {}: {:.2} (target {} {})",
            if self.pass() { "PASS" } else { "MISS" },
            self.name,
            self.value,
            if self.at_least { ">=" } else { "<=" },
            self.limit
        )
    }
}

/// Point reads against the `/server/ping` floor (throughput ratios).
pub fn floor_checks(rows: &[Row], concurrency: usize) -> Vec<Check> {
    let Some(ping) = find(rows, "ping", concurrency) else {
        return Vec::new();
    };
    [
        ("video-slug", 0.25),
        ("user", 0.25),
        ("recording-get", 0.25),
        ("videos-50", 0.10),
    ]
    .into_iter()
    .filter_map(|(id, limit)| {
        let row = find(rows, id, concurrency)?;
        Some(Check::at_least(
            format!("{} throughput / ping (c={concurrency})", row.label),
            row.throughput / ping.throughput.max(1e-9),
            limit,
        ))
    })
    .collect()
}

/// Prints the ×k/×1 ratios of every scenario and returns the growth checks.
pub fn growth(small: &[Row], large: &[Row], factor: f64, concurrency: usize) -> Vec<Check> {
    println!("\nCost growth, x{factor} / x1 data (c={concurrency})\n");
    println!(
        "| scenario | class | p50 ms x1 | p50 ms x{factor} | p50 ratio | req/s ratio | target |"
    );
    println!("|---|---|---:|---:|---:|---:|---|");
    let mut checks = Vec::new();
    for a in small.iter().filter(|r| r.concurrency == concurrency) {
        let Some(b) = find(large, a.scenario, concurrency) else {
            continue;
        };
        let ratio = b.p50_ms / a.p50_ms.max(1e-9);
        let target = a.class.growth_limit();
        println!(
            "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
            a.scenario,
            a.class.name(),
            a.p50_ms,
            b.p50_ms,
            ratio,
            b.throughput / a.throughput.max(1e-9),
            target.map_or_else(|| "-".into(), |t| format!("<= {t}")),
        );
        if let Some(limit) = target {
            checks.push(Check::at_most(
                format!(
                    "x{factor} data p50 cost of {} ({})",
                    a.label,
                    a.class.name()
                ),
                ratio,
                limit,
            ));
        }
    }
    checks
}

/// Adds the check that no request failed (`where_`: over which rows and
/// sides) and prints every check under "Goals".
pub fn print_goals(mut checks: Vec<Check>, errors: u64, where_: &str) {
    checks.push(Check::at_most(
        format!("errors ({where_})"),
        errors as f64,
        0.0,
    ));
    println!("\nGoals");
    for check in &checks {
        println!("{}", check.line());
    }
}

pub fn total_errors(rows: &[Row]) -> u64 {
    rows.iter().map(|r| r.errors).sum()
}

pub fn peak_rss_kib(rows: &[Row]) -> Option<u64> {
    rows.iter().filter_map(|r| r.rss_kib).max()
}

/// Refuses an `--only` row id that is not one of `ids`, naming them.
pub fn check_only(only: Option<&Vec<String>>, ids: &[&str]) -> Result<(), String> {
    match only
        .into_iter()
        .flatten()
        .find(|id| !ids.contains(&id.as_str()))
    {
        Some(unknown) => Err(format!("unknown row {unknown} (one of {})", ids.join(", "))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &'static str, class: Class, rps: f64, p50: f64) -> Row {
        Row {
            scenario: id,
            label: id,
            class,
            concurrency: 16,
            throughput: rps,
            p50_ms: p50,
            p99_ms: p50 * 2.0,
            requests: 10,
            errors: 0,
            tolerated: 0,
            mean_bytes: 100.0,
            rss_kib: Some(1000),
            first_error: None,
        }
    }

    #[test]
    fn checks_pass_and_miss() {
        assert!(Check::at_most("x", 1.5, 1.5).pass());
        assert!(!Check::at_most("x", 1.6, 1.5).pass());
        assert!(Check::at_least("x", 0.3, 0.25).pass());
        assert!(Check::at_least("x", 0.2, 0.25).line().starts_with("MISS"));
    }

    #[test]
    fn floor_ratios() {
        let rows = [
            row("ping", Class::Floor, 1000.0, 1.0),
            row("video-slug", Class::Point, 300.0, 1.0),
            row("videos-50", Class::Point, 50.0, 1.0),
        ];
        let checks = floor_checks(&rows, 16);
        assert_eq!(checks.len(), 2);
        assert!(checks[0].pass());
        assert!(!checks[1].pass());
    }

    #[test]
    fn growth_uses_the_class_limits() {
        let small = [
            row("ping", Class::Floor, 1000.0, 1.0),
            row("models", Class::List, 100.0, 2.0),
            row("user", Class::Point, 100.0, 2.0),
        ];
        let large = [
            row("ping", Class::Floor, 1000.0, 1.0),
            row("models", Class::List, 25.0, 8.0),
            row("user", Class::Point, 50.0, 4.0),
        ];
        let checks = growth(&small, &large, 4.0, 16);
        assert_eq!(checks.len(), 2);
        assert!(checks[0].pass());
        assert!(!checks[1].pass());
    }
}
