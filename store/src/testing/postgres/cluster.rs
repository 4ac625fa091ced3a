//! A throwaway PostgreSQL cluster for one test process: `initdb` into a
//! temporary folder, then `postgres` on a free port of 127.0.0.1 with
//! durability off (the tests kill hosts, never the server).
//!
//! `initdb` and `postgres` refuse to run as root: when the tests do, both
//! run as the `postgres` system user. The server is spawned from a thread
//! that lives as long as the process, with a parent-death signal, so it
//! dies with the test process (statics are never dropped); its folder is
//! removed when the process exits.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

/// How to get the server binaries when they are missing.
pub const INSTALL_HINT: &str = "install PostgreSQL's server (Debian/Ubuntu: \
`apt-get install postgresql-15`; its binaries are then in the folder `pg_config --bindir` \
prints), or set TEST_DATABASE_URL to a postgres://user:password@host:port/database URL of a \
server where that user may create databases";

/// The folder of `initdb` and `postgres`, as `pg_config --bindir` names it.
pub fn bin_dir() -> Result<PathBuf, String> {
    let out = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .map_err(|e| {
            format!("PostgreSQL's server binaries: running `pg_config --bindir` failed ({e})")
        })?;
    if !out.status.success() {
        return Err(format!(
            "PostgreSQL's server binaries: `pg_config --bindir` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    for binary in ["initdb", "postgres"] {
        if !dir.join(binary).is_file() {
            return Err(format!(
                "PostgreSQL's server binaries: {} is missing",
                dir.join(binary).display()
            ));
        }
    }
    Ok(dir)
}

/// Starts a cluster and waits until it accepts connections; its
/// administrator's URL (user `postgres`, database `postgres`).
pub fn start() -> String {
    let bin = bin_dir().unwrap_or_else(|why| panic!("{why}: {INSTALL_HINT}"));
    let owner = server_user();
    let dir = tempfile::Builder::new()
        .prefix("platform-tests-pg-")
        .tempdir()
        .expect("temporary folder for the PostgreSQL cluster")
        .keep();
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
            .unwrap_or_else(|e| panic!("chown {} to postgres: {e}", dir.display()));
    }
    let data = dir.join("data");
    initdb(&bin, &data, owner);
    let port = free_port();
    let log = dir.join("server.log");
    let pid = spawn_server(&bin, &dir, port, owner, &log);
    remove_at_exit(pid, dir);
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    wait_ready(&url, &log);
    url
}

/// The uid and gid to run the server as: the `postgres` system user's
/// when this process is root (from /etc/passwd), else none (this user).
fn server_user() -> Option<(u32, u32)> {
    // SAFETY: getuid has no preconditions and cannot fail.
    if unsafe { libc::getuid() } != 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
    let ids = passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        match fields.as_slice() {
            ["postgres", _, uid, gid, ..] => Some((uid.parse().ok()?, gid.parse().ok()?)),
            _ => None,
        }
    });
    Some(ids.unwrap_or_else(|| {
        panic!(
            "the tests run as root, and initdb refuses root: a `postgres` system user is needed \
             (the postgresql-15 package creates it), or run the tests as another user"
        )
    }))
}

/// A command that runs as `owner` when given.
fn command(program: PathBuf, owner: Option<(u32, u32)>) -> Command {
    let mut cmd = Command::new(program);
    if let Some((uid, gid)) = owner {
        cmd.uid(uid).gid(gid);
    }
    cmd
}

fn initdb(bin: &Path, data: &Path, owner: Option<(u32, u32)>) {
    let out = command(bin.join("initdb"), owner)
        .arg("-D")
        .arg(data)
        .args(["-U", "postgres", "--auth=trust", "--no-sync"])
        .args(["-E", "UTF8", "--locale=C"])
        .current_dir(data.parent().unwrap_or(data))
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", bin.join("initdb").display()));
    assert!(
        out.status.success(),
        "initdb failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port for PostgreSQL")
}

/// Set once the server process has exited.
static SERVER_EXITED: AtomicBool = AtomicBool::new(false);

/// Starts `postgres` on `dir/data` from a thread that waits for it as long
/// as the process lives; its pid. The server gets SIGQUIT (immediate
/// shutdown) when that thread, hence the process, ends.
fn spawn_server(bin: &Path, dir: &Path, port: u16, owner: Option<(u32, u32)>, log: &Path) -> u32 {
    let log = std::fs::File::create(log).expect("PostgreSQL log file");
    let mut cmd = command(bin.join("postgres"), owner);
    cmd.arg("-D")
        .arg(dir.join("data"))
        .args(["-p", &port.to_string()])
        .arg("-k")
        .arg(dir)
        .args(["-c", "listen_addresses=127.0.0.1"])
        .args(["-c", "fsync=off"])
        .args(["-c", "synchronous_commit=off"])
        .args(["-c", "full_page_writes=off"])
        .args(["-c", "max_connections=400"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    // SAFETY: the closure only calls prctl, which is async-signal-safe.
    // It runs after the switch to `owner` (a change of credentials would
    // clear the parent-death signal).
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (started, pid) = mpsc::channel();
    std::thread::Builder::new()
        .name("postgres-server".into())
        .spawn(move || match cmd.spawn() {
            Ok(mut child) => {
                let _ = started.send(Ok(child.id()));
                let _ = child.wait();
                SERVER_EXITED.store(true, Ordering::SeqCst);
            }
            Err(e) => {
                let _ = started.send(Err(e));
            }
        })
        .expect("thread for the PostgreSQL server");
    pid.recv()
        .expect("the PostgreSQL server thread answers")
        .unwrap_or_else(|e| panic!("start {}: {e}", bin.join("postgres").display()))
}

/// Waits up to 30 s for the server to accept connections.
fn wait_ready(url: &str, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match postgres::Client::connect(url, postgres::NoTls) {
            Ok(_) => return,
            Err(e) => {
                let exited = SERVER_EXITED.load(Ordering::SeqCst);
                if exited || Instant::now() > deadline {
                    panic!(
                        "PostgreSQL did not accept connections ({}; {e}); its log:\n{}",
                        if exited { "it exited" } else { "30 s" },
                        std::fs::read_to_string(log).unwrap_or_default()
                    );
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The server to stop and the folder to remove when the process exits.
static AT_EXIT: OnceLock<(u32, PathBuf)> = OnceLock::new();

fn remove_at_exit(pid: u32, dir: PathBuf) {
    if AT_EXIT.set((pid, dir)).is_ok() {
        // SAFETY: registers a function without arguments that never
        // unwinds.
        unsafe {
            libc::atexit(stop_and_remove);
        }
    }
}

extern "C" fn stop_and_remove() {
    let Some((pid, dir)) = AT_EXIT.get() else {
        return;
    };
    if let Ok(pid) = i32::try_from(*pid) {
        // SAFETY: signals the server this process started.
        unsafe {
            libc::kill(pid, libc::SIGQUIT);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while !SERVER_EXITED.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The running cluster's server pid and folder, if this process started one.
pub fn running() -> Option<(u32, PathBuf)> {
    AT_EXIT.get().cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run in a child process by [`the_cluster_goes_with_its_process`]:
    /// starts a cluster, prints its pid and folder, and ends the process
    /// normally, or at once (`_exit`, no exit handlers) when
    /// `CLUSTER_CHILD_EXIT=abrupt`.
    #[test]
    #[ignore = "run in a child process by the_cluster_goes_with_its_process"]
    fn start_a_cluster_and_exit() {
        crate::testing::postgres::server();
        let (pid, dir) = running().expect("a cluster");
        println!("cluster: {pid} {}", dir.display());
        if std::env::var("CLUSTER_CHILD_EXIT").is_ok_and(|v| v == "abrupt") {
            use std::io::Write;
            let _ = std::io::stdout().flush();
            // SAFETY: ends the process without running anything else.
            unsafe { libc::_exit(0) };
        }
    }

    /// The server stops, and its folder goes, when its test process ends;
    /// the server stops even when the process ends without its exit
    /// handlers (the parent-death signal).
    #[test]
    fn the_cluster_goes_with_its_process() {
        if let Err(why) = bin_dir() {
            assert!(
                !crate::testing::postgres::required(),
                "{why}: {INSTALL_HINT}"
            );
            eprintln!("the cluster's life: not checked ({why}): {INSTALL_HINT}");
            return;
        }
        for exit in ["normal", "abrupt"] {
            let out = Command::new(std::env::current_exe().expect("this test binary"))
                .args([
                    "--exact",
                    "testing::postgres::cluster::tests::start_a_cluster_and_exit",
                ])
                .args(["--ignored", "--nocapture", "--test-threads=1"])
                .env_remove("TEST_DATABASE_URL")
                .env("CLUSTER_CHILD_EXIT", exit)
                .output()
                .expect("run the child");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{exit}: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let line = stdout
                .lines()
                .find_map(|l| l.split_once("cluster: ").map(|(_, rest)| rest))
                .unwrap_or_else(|| panic!("{exit}: no cluster line: {stdout}"));
            let (pid, dir) = line.split_once(' ').expect("pid and folder");
            let deadline = Instant::now() + Duration::from_secs(10);
            while alive(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(
                !alive(pid),
                "{exit}: the server {pid} outlived its test process"
            );
            if exit == "normal" {
                assert!(!Path::new(dir).exists(), "{exit}: {dir} is left behind");
            } else {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    /// Whether process `pid` exists and is not a zombie.
    fn alive(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            // The state follows the command name in parentheses.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
    }
}
