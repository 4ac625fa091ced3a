//! Where a row's CPU goes: the host's, its database server's (a
//! PostgreSQL server on this machine: the postmaster and every process it
//! started) and the load client's, read from `/proc` at the start and the
//! end of the measured window, and the host's exchanges with its database
//! (its `database_round_trips` metric). Divided by the requests answered
//! in the window, these say where a request's time goes on a machine whose
//! cores the three share.

use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use platform_tests::{Database, Host, ADMIN_TOKEN};

use crate::api::Api;

/// What `/proc/PID/stat` says of a process: its parent, and the CPU time
/// it has used so far (its exited threads included).
struct Stat {
    parent: u32,
    cpu: Duration,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

fn parse_stat(text: &str) -> Option<Stat> {
    let fields = after_command(text);
    // The parent is the 4th field; utime and stime the 14th and 15th: the
    // 2nd, 12th and 13th after the command.
    let number = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(Stat {
        parent: u32::try_from(number(1)?).ok()?,
        cpu: ticks_to_duration(number(11)? + number(12)?),
    })
}

fn process_cpu(pid: u32) -> Option<Duration> {
    stat(pid).map(|s| s.cpu)
}

/// The fields of a `/proc/PID/stat` line after `(command)`, which may
/// itself hold spaces and parentheses.
fn after_command(stat: &str) -> Vec<&str> {
    stat.rfind(')')
        .map(|end| stat[end + 1..].split_whitespace().collect())
        .unwrap_or_default()
}

fn ticks_to_duration(ticks: u64) -> Duration {
    // SAFETY: sysconf reads a constant of the system; no memory is shared.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let per_second = if per_second > 0 {
        per_second as u64
    } else {
        100
    };
    Duration::from_nanos(ticks.saturating_mul(1_000_000_000) / per_second)
}

/// CPU time of `root` and of every process whose parent it is (a
/// PostgreSQL server's backends and workers). A process that exits inside
/// the window takes its time with it; the host's pooled connections live
/// as long as the host.
fn tree_cpu(root: u32) -> Duration {
    let mut total = process_cpu(root).unwrap_or_default();
    let Ok(entries) = fs::read_dir("/proc") else {
        return total;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // One read of each process's stat gives its parent and its time.
        match stat(pid) {
            Some(child) if pid != root && child.parent == root => total += child.cpu,
            _ => {}
        }
    }
    total
}

/// The machine's busy and total CPU time so far (`/proc/stat`'s first
/// line, in ticks).
fn machine_ticks() -> Option<(u64, u64)> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...; guest time is
    // already in user.
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// The process of the PostgreSQL server behind a host's database, when it
/// runs on this machine: the parent of its checkpointer (a process that
/// lives as long as the server, where a backend of ours would exit with
/// its connection before its parent could be read). `None` on SQLite (the
/// host's own process does that work).
fn database_server(database: &Database) -> Option<u32> {
    let Database::Postgres(_) = database else {
        return None;
    };
    let rows =
        database.sql_query("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'");
    let checkpointer: u32 = rows.first()?.first()?.as_deref()?.parse().ok()?;
    stat(checkpointer).map(|s| s.parent)
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Instant,
    host: Duration,
    server: Option<Duration>,
    client: Duration,
    machine: Option<(u64, u64)>,
    exchanges: Option<u64>,
}

/// What one answered request cost, on average over the window.
#[derive(Debug, Clone, Copy)]
pub struct PerRequest {
    /// CPU milliseconds in the host's process.
    pub host_ms: f64,
    /// CPU milliseconds in the database server (None on SQLite).
    pub server_ms: Option<f64>,
    /// CPU milliseconds in the load client (this process).
    pub client_ms: f64,
    /// Exchanges with the database.
    pub exchanges: Option<f64>,
    /// The machine's CPU busy over the window, 0 to 1.
    pub machine_busy: Option<f64>,
}

impl PerRequest {
    /// The CPU milliseconds of the host, the server and the client.
    pub fn total_ms(&self) -> f64 {
        self.host_ms + self.server_ms.unwrap_or(0.0) + self.client_ms
    }
}

/// Samples a started host (and its database server) while a load runs.
pub struct Sampler {
    pid: u32,
    base: String,
    server: Option<u32>,
}

impl Sampler {
    pub fn new(host: &Host) -> Self {
        Self {
            pid: host.pid(),
            base: host.base.clone(),
            server: database_server(host.database()),
        }
    }

    fn sample(&self) -> Sample {
        // The metrics request's own exchange (its token check) is one
        // against thousands of answers.
        let exchanges = Api::new(&self.base)
            .get("/server/metrics", Some(ADMIN_TOKEN))
            .ok()
            .and_then(|m| m["data"]["database_round_trips"].as_u64());
        Sample {
            at: Instant::now(),
            host: process_cpu(self.pid).unwrap_or_default(),
            server: self.server.map(tree_cpu),
            client: process_cpu(std::process::id()).unwrap_or_default(),
            machine: machine_ticks(),
            exchanges,
        }
    }

    /// Runs `load` (a driver run of `warmup` then `measure`) and samples
    /// the window between; `answered` says how many requests per second
    /// the load measured.
    pub fn around<T>(
        &self,
        warmup: Duration,
        measure: Duration,
        load: impl FnOnce() -> T,
        answered: impl Fn(&T) -> f64,
    ) -> (T, Option<PerRequest>) {
        thread::scope(|scope| {
            let window = scope.spawn(|| {
                thread::sleep(warmup);
                let start = self.sample();
                thread::sleep(measure);
                (start, self.sample())
            });
            let out = load();
            let per_request = window
                .join()
                .ok()
                .and_then(|(start, end)| per_request(&start, &end, answered(&out)));
            (out, per_request)
        })
    }
}

fn per_request(start: &Sample, end: &Sample, per_second: f64) -> Option<PerRequest> {
    let seconds = end.at.duration_since(start.at).as_secs_f64();
    let requests = per_second * seconds;
    if requests < 1.0 {
        return None;
    }
    let ms = |a: Duration, b: Duration| b.saturating_sub(a).as_secs_f64() * 1000.0 / requests;
    Some(PerRequest {
        host_ms: ms(start.host, end.host),
        server_ms: start.server.zip(end.server).map(|(a, b)| ms(a, b)),
        client_ms: ms(start.client, end.client),
        exchanges: start
            .exchanges
            .zip(end.exchanges)
            .map(|(a, b)| b.saturating_sub(a) as f64 / requests),
        machine_busy: start
            .machine
            .zip(end.machine)
            .and_then(|((b0, t0), (b1, t1))| {
                (t1 > t0).then(|| (b1 - b0) as f64 / (t1 - t0) as f64)
            }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_after_a_command_with_spaces_and_parentheses() {
        let text = "42 (a (b) c) S 7 42 42 0 -1 4194560 1 0 0 0 15 9 0 0 20";
        let fields = after_command(text);
        assert_eq!(fields[0], "S");
        assert_eq!(fields[1], "7");
        assert_eq!((fields[11], fields[12]), ("15", "9"));
        let parsed = parse_stat(text).expect("a stat line");
        assert_eq!(parsed.parent, 7);
        assert_eq!(parsed.cpu, ticks_to_duration(24));
        assert!(parse_stat("42 (a) S").is_none());
    }

    #[test]
    fn this_process_uses_cpu_and_has_a_parent() {
        let before = process_cpu(std::process::id()).expect("own stat");
        let mut x = 0u64;
        let until = Instant::now() + Duration::from_millis(60);
        while Instant::now() < until {
            x = x.wrapping_mul(31).wrapping_add(1);
        }
        std::hint::black_box(x);
        let after = process_cpu(std::process::id()).expect("own stat");
        assert!(after > before, "{before:?} then {after:?}");
        assert!(stat(std::process::id()).is_some_and(|s| s.parent > 0));
    }

    #[test]
    fn a_window_divides_by_the_requests_in_it() {
        let at = Instant::now();
        let start = Sample {
            at,
            host: Duration::from_millis(100),
            server: Some(Duration::from_millis(50)),
            client: Duration::ZERO,
            machine: Some((10, 100)),
            exchanges: Some(1_000),
        };
        let end = Sample {
            at: at + Duration::from_secs(2),
            host: Duration::from_millis(1_100),
            server: Some(Duration::from_millis(1_050)),
            client: Duration::from_millis(200),
            machine: Some((160, 300)),
            exchanges: Some(5_000),
        };
        // 500 requests a second for 2 s: 1,000 requests.
        let r = per_request(&start, &end, 500.0).expect("requests");
        assert!((r.host_ms - 1.0).abs() < 1e-9);
        assert_eq!(r.server_ms.map(|s| (s * 1e6).round()), Some(1e6));
        assert!((r.client_ms - 0.2).abs() < 1e-9);
        assert!((r.total_ms() - 2.2).abs() < 1e-9);
        assert_eq!(r.exchanges, Some(4.0));
        assert_eq!(r.machine_busy, Some(0.75));
        assert!(per_request(&start, &end, 0.1).is_none());
    }
}
