//! Test harness: starts real `example-host` processes on a free port with a
//! chosen set of extension libraries, and talks HTTP to them.
//!
//! The binaries must be built first (`scripts/test.sh` does it):
//! `cargo build --workspace` and `scripts/build-fixtures.sh`.
//!
//! Every host runs on the backend `TEST_DB` names (`sqlite`, the default,
//! or `postgres`; [`Backend::from_env`]): on PostgreSQL each new host gets
//! a new database on the test process's server ([`postgres`]), and a host
//! restarted on a data folder gets that folder's database back. Tests
//! reach a host's database only through [`Host::sql`] and its kin, in SQL
//! both backends take.

pub mod analytics;
mod client;
pub mod count_trees;
pub mod database;
pub mod multipart;
pub mod node;
pub use platform_store::testing::postgres;
pub mod raw;
mod rng;
pub mod s3;
pub mod score;
pub mod smtp;
mod sqlite;
pub mod time;

pub use client::{exchange, Answer, Client};
pub use database::{Backend, Database};
pub use rng::Rng;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use example_host::testkit::{ServedHost, TestHost};
use platform_store::storage::Location;
use serde_json::Value;

/// The admin token every test host is started with.
pub const ADMIN_TOKEN: &str = "test-admin-token";

/// The name of the session cookie (`SESSION_COOKIE_NAME`'s default).
pub const SESSION_COOKIE: &str = "directus_session_token";

/// The most items a host takes in one array create by default
/// (`--max-batch-mutation`): [`Host::admin_create_many`] and the
/// benchmarks' imports send at most this many per request.
pub const MAX_BATCH: usize = 100;

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

fn require(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: build first with scripts/test.sh (cargo build --workspace && scripts/build-fixtures.sh)",
        path.display()
    );
    path
}

/// The build profile whose binaries a host runs: `debug` for tests, or the
/// value of `PLATFORM_PROFILE` (the benchmarks use `release`).
pub fn profile() -> String {
    std::env::var("PLATFORM_PROFILE").unwrap_or_else(|_| "debug".into())
}

/// A library built by the workspace (`svc_extension`, `fixture_ext`, ...).
pub fn library(name: &str) -> PathBuf {
    require(target_dir().join(profile()).join(format!("lib{name}.so")))
}

/// A library built by `scripts/build-fixtures.sh` (own workspaces).
pub fn fixture_library(name: &str) -> PathBuf {
    require(
        target_dir()
            .join("fixtures")
            .join("debug")
            .join(format!("lib{name}.so")),
    )
}

/// The host built with the `inprocess` feature (svc linked in),
/// `example-host-inprocess`, built by `scripts/test.sh` beside the plain one.
pub fn inprocess_host_binary() -> PathBuf {
    require(target_dir().join(profile()).join("example-host-inprocess"))
}

pub fn host_binary() -> PathBuf {
    require(target_dir().join(profile()).join("example-host"))
}

/// The previous release's host and svc library: the commit
/// `tests/fixtures/previous-release` names, built by `scripts/test.sh`
/// into `target/previous/target/debug` (a stamp there names the commit).
pub struct PreviousRelease {
    pub commit: String,
    pub host: PathBuf,
    pub svc: PathBuf,
}

/// The previous release's binaries; panics, saying how to build them,
/// when they are missing or of another commit.
pub fn previous_release() -> PreviousRelease {
    let pinned = workspace_root().join("tests/fixtures/previous-release");
    let commit = fs::read_to_string(&pinned)
        .unwrap_or_else(|e| panic!("{}: {e}", pinned.display()))
        .trim()
        .to_string();
    let dir = target_dir().join("previous").join("target").join("debug");
    let built = fs::read_to_string(dir.join("previous-release")).unwrap_or_default();
    let (host, svc) = (dir.join("example-host"), dir.join("libsvc_extension.so"));
    assert!(
        built.trim() == commit && host.exists() && svc.exists(),
        "the previous release ({commit}) is not built in {}: scripts/test.sh builds it (its \
         build_previous_release step, from this clone's history)",
        dir.display()
    );
    PreviousRelease { commit, host, svc }
}

/// `binary` (a host executable) on the database and extensions of a
/// host's data folder, with the admin token; add a subcommand such as
/// `schedule run <extension> <name>`. The folder's host may be stopped or
/// running.
pub fn host_command(binary: &Path, data_dir: &Path) -> Command {
    let mut cmd = host_process(binary);
    cmd.arg("--db")
        .arg(Database::of_data_dir(data_dir).arg())
        .arg("--extensions")
        .arg(data_dir.join("extensions"));
    cmd
}

/// What a finished process printed: stdout, then stderr.
pub fn printed(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `example-host <args>` on the database and extensions of a host's data
/// folder ([`host_command`] with the debug host): how it exited, and what
/// it printed (stdout, then stderr).
pub fn run_host(dir: &Path, args: &[&str]) -> (std::process::Output, String) {
    let out = host_command(&host_binary(), dir)
        .args(args)
        .output()
        .expect("the host runs");
    let text = printed(&out);
    (out, text)
}

/// A create a host acknowledged: the new item's id, when the request was
/// sent and when its answer came.
#[derive(Debug, Clone)]
pub struct AckedWrite {
    pub id: String,
    pub sent: Instant,
    pub acked: Instant,
}

/// Write load: one thread per token creates recordings (`POST
/// /svc/recordings`) until `stop` is set, counting each acknowledged one
/// in `acked`; every create answered 201, in no particular order. A
/// refusal or a transport error fails the test.
pub fn create_recordings_until(
    host: &Host,
    tokens: &[String],
    stop: &std::sync::atomic::AtomicBool,
    acked: &std::sync::atomic::AtomicU64,
) -> Vec<AckedWrite> {
    use std::sync::atomic::Ordering;
    std::thread::scope(|scope| {
        let writers: Vec<_> = tokens
            .iter()
            .enumerate()
            .map(|(n, token)| {
                scope.spawn(move || {
                    let client = Client::new(&host.base);
                    let mut writes = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let sent = Instant::now();
                        let body = rec_body(&format!("Load {n} {}", writes.len()), None);
                        let (status, text) = client
                            .call("POST", "/svc/recordings", Some(token), Some(&body))
                            .unwrap_or_else(|e| panic!("create recording: {e}"));
                        assert_eq!(status, 201, "create recording: {text}");
                        let id = serde_json::from_str::<Value>(&text)
                            .ok()
                            .and_then(|v| v["id"].as_str().map(str::to_string))
                            .unwrap_or_else(|| panic!("no recording id in {text}"));
                        writes.push(AckedWrite {
                            id,
                            sent,
                            acked: Instant::now(),
                        });
                        acked.fetch_add(1, Ordering::Relaxed);
                    }
                    writes
                })
            })
            .collect();
        writers
            .into_iter()
            .flat_map(|w| w.join().expect("a writer panicked"))
            .collect()
    })
}

/// A host process with the tests' environment: the admin token, none of
/// the caller's database variables (`--db` alone says where the database
/// is), and schedules that run only when a test asks
/// ([`Host::run_schedule`]): svc's hourly recalculation, run at the turn
/// of an hour in the middle of a test, would award points the test does
/// not expect. The tests of the schedules' own running turn them on.
fn host_process(binary: &Path) -> Command {
    let mut cmd = Command::new(binary);
    cmd.env("ADMIN_TOKEN", ADMIN_TOKEN)
        .env("SCHEDULES_ENABLED", "false")
        .env_remove("DB_CLIENT")
        .env_remove("DB_FILENAME")
        .env_remove("DB_CONNECTION_STRING");
    cmd
}

/// How to start a host.
pub struct HostOptions {
    pub libraries: Vec<PathBuf>,
    pub extra_args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Reuse the data folder of a previous host (restart on the same database).
    pub data_dir: Option<tempfile::TempDir>,
    /// Another host executable (e.g. the `inprocess` build).
    pub binary: Option<PathBuf>,
    /// The backend of a new database, instead of the suite's (`TEST_DB`).
    /// A reused data folder keeps its own; asking for another one panics.
    pub backend: Option<Backend>,
}

impl HostOptions {
    /// svc's host with these environment variables.
    pub fn svc_with(env: &[(&str, &str)]) -> Self {
        let mut opts = Self::svc();
        for (k, v) in env {
            opts.env.push((k.to_string(), v.to_string()));
        }
        opts
    }

    pub fn with(libraries: Vec<PathBuf>) -> Self {
        Self {
            libraries,
            extra_args: Vec::new(),
            env: Vec::new(),
            data_dir: None,
            binary: None,
            backend: None,
        }
    }

    /// Just the svc extension.
    pub fn svc() -> Self {
        Self::with(vec![library("svc_extension")])
    }

    /// The previous release's host with its svc ([`previous_release`]).
    pub fn previous_release_svc() -> Self {
        let previous = previous_release();
        let mut opts = Self::with(vec![previous.svc]);
        opts.binary = Some(previous.host);
        opts
    }

    /// The svc extension beside the fixture extension
    /// (`tests/fixtures/fixture-ext`).
    pub fn svc_and_fixture() -> Self {
        Self::with(vec![library("svc_extension"), library("fixture_ext")])
    }

    pub fn arg(mut self, a: &str) -> Self {
        self.extra_args.push(a.to_string());
        self
    }

    /// An environment variable of the host.
    pub fn env_var(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// This host on `backend`, whatever the suite runs on.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = Some(backend);
        self
    }
}

/// A running host; killed when dropped, and its database with it (unless
/// [`Host::stop`] handed its data folder back for a restart).
pub struct Host {
    server: Server,
    pub base: String,
    dir: Option<tempfile::TempDir>,
    database: Database,
    /// The database is another host's ([`Host::start_beside`]), or the
    /// test kit's: it is not dropped with this one.
    borrows_database: bool,
}

/// Why a test of the in-process host ([`Host::in_process_svc`]) cannot do
/// what it asked.
const NOT_A_PROCESS: &str = "this needs a host process (Host::start), not the in-process host";

/// What serves a [`Host`].
enum Server {
    /// An `example-host` process, logging to `log_path`.
    Process { child: Child, log_path: PathBuf },
    /// The test kit's host (svc linked), serving from this test's process
    /// ([`Host::in_process_svc`]); it stops serving when dropped.
    InProcess { served: Box<ServedHost> },
}

/// One HTTP answer.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub content_type: String,
    pub body: String,
    /// Every header of the answer, names in lower case, in order.
    pub headers: Vec<(String, String)>,
}

/// One HTTP answer whose body is bytes ([`Host::get_bytes`]).
#[derive(Debug, Clone)]
pub struct BytesResp {
    pub status: u16,
    /// Every header of the answer (the first value of each), names in
    /// lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl BytesResp {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The width and height of an image, decoded whole (PNG, JPEG, WebP, GIF).
pub fn image_dimensions(bytes: &[u8]) -> (u32, u32) {
    let img = image::load_from_memory(bytes)
        .unwrap_or_else(|e| panic!("not an image ({e}): {}", String::from_utf8_lossy(bytes)));
    (img.width(), img.height())
}

impl Resp {
    /// The code of the first error of an items-API error answer
    /// (`errors[0].extensions.code`); empty when there is none (or the
    /// body is not JSON).
    pub fn error_code(&self) -> String {
        self.first_error()["extensions"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The message of the first error of an items-API error answer.
    pub fn error_message(&self) -> String {
        self.first_error()["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    fn first_error(&self) -> Value {
        serde_json::from_str::<Value>(&self.body).unwrap_or(Value::Null)["errors"][0].clone()
    }

    /// The `data` list of a 200 answer (asserting the status).
    pub fn data_list(&self) -> Vec<Value> {
        assert_eq!(self.status, 200, "{}", self.body);
        self.json()["data"].as_array().cloned().unwrap_or_default()
    }

    /// The values of header `name` (lower case).
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The `Set-Cookie` of cookie `name`, if the answer sets it.
    pub fn set_cookie(&self, name: &str) -> Option<&str> {
        self.header_all("set-cookie")
            .into_iter()
            .find(|c| c.starts_with(&format!("{name}=")))
    }

    /// The value a `Set-Cookie` of cookie `name` gives it.
    pub fn cookie_value(&self, name: &str) -> Option<String> {
        let set = self.set_cookie(name)?;
        let pair = set.split(';').next()?;
        pair.split_once('=').map(|(_, v)| v.to_string())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
}

impl Host {
    pub fn start(opts: HostOptions) -> Host {
        let dir = match opts.data_dir {
            Some(d) => d,
            None => tempfile::tempdir().expect("temp dir"),
        };
        let database =
            Database::for_data_dir(dir.path(), opts.backend.unwrap_or_else(Backend::from_env));
        if let Some(backend) = opts.backend {
            assert_eq!(
                database.backend(),
                backend,
                "the reused data folder's database is on another backend"
            );
        }
        let ext_dir = dir.path().join("extensions");
        let _ = fs::remove_dir_all(&ext_dir);
        fs::create_dir_all(&ext_dir).expect("extensions dir");
        for lib in &opts.libraries {
            let name = lib.file_name().expect("library file name");
            fs::copy(lib, ext_dir.join(name)).expect("copy library");
        }
        let log_path = dir.path().join(format!("host-{}.log", unique()));
        let log = fs::File::create(&log_path).expect("log file");
        let mut cmd = host_process(&opts.binary.clone().unwrap_or_else(host_binary));
        cmd.arg("--db")
            .arg(database.arg())
            .arg("--extensions")
            .arg(&ext_dir)
            .args(["--port", "0"])
            .args(&opts.extra_args)
            .env_remove("RUST_LOG")
            .env("LOG_LEVEL", "info")
            // Uploads in the host's own folder, on either backend.
            .env("STORAGE_LOCAL_ROOT", dir.path().join("uploads"))
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("start example-host");
        let mut host = Host {
            server: Server::Process { child, log_path },
            base: String::new(),
            dir: Some(dir),
            database,
            borrows_database: false,
        };
        host.base = host.wait_listening();
        host.assert_on_its_database();
        host
    }

    /// A host with svc linked in, serving HTTP from this test's process
    /// (the test kit's [`TestHost::serve`]) on a fresh database of the
    /// suite's backend (`TEST_DB`), its administrator's token
    /// [`ADMIN_TOKEN`]: svc's contract as a client sees it over HTTP,
    /// without a process or a library to load. What needs a process (its
    /// log, signals, restarts, memory, the ABI) needs [`Host::start`].
    pub fn in_process_svc() -> Host {
        let served = TestHost::start(svc_extension::extension())
            .and_then(|host| host.with_admin_token(ADMIN_TOKEN))
            // Schedules only on demand, as in a host process
            // ([`host_process`]).
            .and_then(|host| host.serve_with(&["--schedules", "false"]))
            .unwrap_or_else(|e| panic!("the in-process host does not start: {e}"));
        let database = match served.database() {
            Location::File(path) => Database::Sqlite(path.clone()),
            Location::Postgres(url) => Database::Postgres(url.clone()),
        };
        Host {
            base: served.base_url().to_string(),
            server: Server::InProcess {
                served: Box::new(served),
            },
            dir: None,
            database,
            // The test kit drops it with its host.
            borrows_database: true,
        }
    }

    /// Whether the host serves from this test's process
    /// ([`Host::in_process_svc`]).
    pub fn is_in_process(&self) -> bool {
        matches!(self.server, Server::InProcess { .. })
    }

    /// Runs the schedule `name` of extension `extension` once, now, on the
    /// host's database, as `example-host schedule run` does: by that
    /// command beside a host process, or through the test kit for an
    /// in-process host. Panics when the run fails.
    pub fn run_schedule(&self, extension: &str, name: &str) {
        match &self.server {
            Server::InProcess { served } => served
                .run_schedule_of(extension, name)
                .unwrap_or_else(|e| panic!("schedule `{name}` of `{extension}` failed: {e}")),
            Server::Process { .. } => {
                let dir = self.dir.as_ref().expect("a running host's folder");
                let out = host_command(&host_binary(), dir.path())
                    .args(["schedule", "run", extension, name])
                    .output()
                    .expect("run example-host schedule run");
                assert!(
                    out.status.success(),
                    "schedule `{name}` of `{extension}` failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }

    /// The host's process; a test of a host in this process
    /// ([`Host::in_process_svc`]) that asks for one fails here.
    fn process(&mut self) -> &mut Child {
        match &mut self.server {
            Server::Process { child, .. } => child,
            Server::InProcess { .. } => panic!("{NOT_A_PROCESS}"),
        }
    }

    /// Another host on this host's database, with a data folder and
    /// extensions of its own (`opts.data_dir` and `opts.backend` must be
    /// unset): several hosts serving one platform, as behind a load
    /// balancer (docs/decisions.md §8). The database outlives this host; it
    /// goes with the first one.
    pub fn start_beside(&self, mut opts: HostOptions) -> Host {
        assert!(
            opts.data_dir.is_none() && opts.backend.is_none(),
            "a host beside another runs on that one's database"
        );
        let dir = tempfile::tempdir().expect("temp dir");
        self.database.share_into(dir.path());
        opts.data_dir = Some(dir);
        let mut host = Host::start(opts);
        host.borrows_database = true;
        host
    }

    /// This host now drops its database with it, as the host it was
    /// started beside ([`Host::start_beside`]) would have: that one was
    /// stopped ([`Host::stop`]), and its data folder, which holds a
    /// SQLite file, is kept until this host is dropped.
    pub fn adopt_database(&mut self) {
        self.borrows_database = false;
    }

    /// Kills the host at once (SIGKILL): no graceful shutdown, nothing
    /// flushed that was not already; the database stays for the others.
    pub fn kill(mut self) {
        let child = self.process();
        let _ = child.kill();
        let _ = child.wait();
        self.borrows_database = true;
    }

    /// A host given a PostgreSQL URL created its schema there (a host
    /// that took the URL for a file name would have served from SQLite).
    fn assert_on_its_database(&self) {
        if self.backend() == Backend::Postgres {
            assert!(
                !self.database.tables().is_empty(),
                "the host listens, but its PostgreSQL database {} has no tables; log:\n{}",
                self.db_arg(),
                self.log()
            );
        }
    }

    fn wait_listening(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let log = self.log();
            if let Some(pos) = log.find("listening on http://") {
                let rest = &log[pos + "listening on ".len()..];
                let url = rest.split_whitespace().next().unwrap_or_default();
                return url.to_string();
            }
            if let Ok(Some(status)) = self.process().try_wait() {
                panic!("host exited with {status} before listening; log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("host did not start listening in time; log:\n{}", self.log());
    }

    /// Everything the host has logged so far (an in-process host logs to
    /// the test's logger: nothing here).
    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Server::Process { log_path, .. } = &self.server {
            if let Ok(mut f) = fs::File::open(log_path) {
                let _ = f.read_to_string(&mut s);
            }
        }
        s
    }

    /// The host's process id.
    pub fn pid(&self) -> u32 {
        match &self.server {
            Server::Process { child, .. } => child.id(),
            Server::InProcess { .. } => panic!("{NOT_A_PROCESS}"),
        }
    }

    /// The host's peak resident set size in KiB (Linux `VmHWM`).
    pub fn peak_rss_kib(&self) -> Option<u64> {
        self.status_kib("VmHWM:")
    }

    /// The host's resident set size now, in KiB (Linux `VmRSS`).
    pub fn rss_kib(&self) -> Option<u64> {
        self.status_kib("VmRSS:")
    }

    fn status_kib(&self, field: &str) -> Option<u64> {
        let status = fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    }

    /// The host's database.
    pub fn database(&self) -> &Database {
        &self.database
    }

    pub fn backend(&self) -> Backend {
        self.database.backend()
    }

    /// What to pass as `--db` to another process on the host's database
    /// (`example-host schedule run`, a second host).
    pub fn db_arg(&self) -> String {
        self.database.arg()
    }

    /// Runs `statements` on the host's database from another connection,
    /// as another process would ([`Database::sql`]); the rows written.
    pub fn sql(&self, statements: &str) -> u64 {
        self.database.sql(statements)
    }

    /// The rows `query` answers on the host's database
    /// ([`Database::sql_query`]).
    pub fn sql_query(&self, query: &str) -> Vec<Vec<Option<String>>> {
        self.database.sql_query(query)
    }

    /// The one row `query` answers on the host's database
    /// ([`Database::sql_query_one`]).
    pub fn sql_query_one(&self, query: &str) -> Vec<Option<String>> {
        self.database.sql_query_one(query)
    }

    /// Renames a table under the running host, so that using it fails.
    pub fn break_table(&self, table: &str) {
        self.sql(&format!(
            "ALTER TABLE \"{table}\" RENAME TO \"{table}_gone\""
        ));
    }

    /// Undoes [`Host::break_table`]: the table is back under its name.
    pub fn repair_table(&self, table: &str) {
        self.sql(&format!(
            "ALTER TABLE \"{table}_gone\" RENAME TO \"{table}\""
        ));
    }

    /// Stops the host (SIGTERM, then kill) and hands back its data folder.
    pub fn stop(mut self) -> tempfile::TempDir {
        self.terminate();
        self.dir.take().expect("data dir")
    }

    fn send_term(&self) {
        #[cfg(unix)]
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
    }

    /// Waits up to 10 s for the process to exit.
    fn wait_exit(&mut self) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.process().try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    fn terminate(&mut self) {
        self.send_term();
        if self.wait_exit().is_none() {
            let child = self.process();
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM and waits up to 10 s for the host to exit 0; what
    /// happened instead, with the end of its log, when it does not.
    pub fn stop_gracefully(mut self) -> Result<(), String> {
        self.send_term();
        let status = self.wait_exit();
        if status.is_some_and(|s| s.success()) {
            return Ok(());
        }
        let log = self.log();
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(format!(
            "{}; the log's end:\n{}",
            match status {
                Some(status) => format!("exited with {status}"),
                None => "still running 10 s after SIGTERM".to_string(),
            },
            tail.join("\n")
        ))
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
    ) -> Resp {
        let headers = client::request_headers(token, body.is_some());
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        self.request_with(method, path, &headers, body)
    }

    /// A request with exactly these headers (cookies, a content type, an
    /// origin), and `body` if any.
    pub fn request_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Resp {
        // The host's own answer: a redirect is not followed.
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(120))
            .redirects(0)
            .build();
        let response = client::send_with(&agent, &self.base, method, path, headers, body)
            .unwrap_or_else(|e| panic!("{e}"));
        let status = response.status();
        let headers = response
            .headers_names()
            .into_iter()
            .flat_map(|name| {
                response
                    .all(&name)
                    .into_iter()
                    .map(|v| (name.to_ascii_lowercase(), v.to_string()))
                    .collect::<Vec<_>>()
            })
            .collect();
        let content_type = response
            .header("content-type")
            .unwrap_or_default()
            .to_string();
        let body = client::read_text(method, path, response).unwrap_or_else(|e| panic!("{e}"));
        assert_no_secrets(method, path, &body);
        Resp {
            status,
            content_type,
            body,
            headers,
        }
    }

    /// Sends `form` (multipart/form-data) with `method` to `path`.
    pub fn send_form(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        form: &multipart::Form,
    ) -> Resp {
        let headers = client::request_headers(token, false);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        self.send_form_with(method, path, &headers, form)
    }

    /// Sends `form` (multipart/form-data) with `method` to `path`, with
    /// these headers besides its `Content-Type` (a cookie, an origin).
    pub fn send_form_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        form: &multipart::Form,
    ) -> Resp {
        let content_type = form.content_type();
        let mut all = vec![("Content-Type", content_type.as_str())];
        all.extend_from_slice(headers);
        self.request_with(method, path, &all, Some(&form.body()))
    }

    /// Signs in with `email` and `password` in `session` mode; the
    /// `Cookie` header a browser then sends (`directus_session_token=…`).
    /// svc's host with these environment variables, started.
    pub fn start_svc_with(env: &[(&str, &str)]) -> Host {
        Host::start(HostOptions::svc_with(env))
    }

    /// `POST /auth/login` in json mode.
    pub fn login(&self, email: &str, password: &str) -> Resp {
        self.post(
            "/auth/login",
            None,
            &serde_json::json!({"email": email, "password": password}),
        )
    }

    /// `POST /auth/login` in `mode` (`json`, `cookie`, `session`).
    pub fn login_mode(&self, email: &str, password: &str, mode: &str) -> Resp {
        self.post(
            "/auth/login",
            None,
            &serde_json::json!({"email": email, "password": password, "mode": mode}),
        )
    }

    pub fn session_cookie(&self, email: &str, password: &str) -> String {
        let r = self.post(
            "/auth/login",
            None,
            &serde_json::json!({"email": email, "password": password, "mode": "session"}),
        );
        assert_eq!(r.status, 200, "session sign-in of {email}: {}", r.body);
        let value = r
            .cookie_value(SESSION_COOKIE)
            .unwrap_or_else(|| panic!("no session cookie for {email}: {:?}", r.headers));
        format!("{SESSION_COOKIE}={value}")
    }

    /// The host's data folder (its database, unless on PostgreSQL, and
    /// its extensions), for [`run_host`].
    pub fn data_dir(&self) -> &Path {
        self.dir.as_ref().expect("a running host's folder").path()
    }

    /// The folder the host loads its extension libraries from.
    pub fn extensions_dir(&self) -> PathBuf {
        self.dir
            .as_ref()
            .expect("a running host's folder")
            .path()
            .join("extensions")
    }

    /// The folder of the host's `local` storage location.
    pub fn uploads_dir(&self) -> PathBuf {
        self.dir
            .as_ref()
            .expect("a running host's folder")
            .path()
            .join("uploads")
    }

    pub fn get(&self, path: &str, token: Option<&str>) -> Resp {
        self.request("GET", path, token, None)
    }

    /// `GET path` with exactly `headers`, the body as bytes (an asset).
    pub fn get_bytes(&self, path: &str, headers: &[(&str, &str)]) -> BytesResp {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(60))
            .build();
        let response = client::send_with(&agent, &self.base, "GET", path, headers, None)
            .unwrap_or_else(|e| panic!("{e}"));
        let status = response.status();
        let headers = response
            .headers_names()
            .into_iter()
            .map(|n| {
                let v = response.header(&n).unwrap_or_default().to_string();
                (n.to_ascii_lowercase(), v)
            })
            .collect();
        let mut body = Vec::new();
        response
            .into_reader()
            .read_to_end(&mut body)
            .unwrap_or_else(|e| panic!("GET {path}: reading the answer failed: {e}"));
        BytesResp {
            status,
            headers,
            body,
        }
    }

    /// How many files' bytes the host's `local` location holds (the
    /// transformations, kept in a folder of their own, not counted).
    pub fn stored_files(&self) -> usize {
        fs::read_dir(self.uploads_dir())
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                    .count()
            })
            .unwrap_or(0)
    }

    /// Every file record `token` may read, each checked to be served
    /// whole: `GET /assets/:id` is 200 with the record's `type` and, as
    /// `Content-Length` and in bytes, its `filesize`. The records.
    pub fn assert_files_served(&self, token: Option<&str>) -> Vec<Value> {
        let r = self.get("/files?limit=-1", token);
        assert_eq!(r.status, 200, "{}", r.body);
        let records = r.json()["data"].as_array().cloned().unwrap_or_default();
        let headers = client::request_headers(token, false);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        for record in &records {
            let id = id_of(record);
            let got = self.get_bytes(&format!("/assets/{id}"), &headers);
            assert_eq!(got.status, 200, "the bytes of {record}");
            assert_eq!(
                got.header("content-type"),
                record["type"].as_str(),
                "{record}"
            );
            let size = record["filesize"].as_u64();
            assert_eq!(
                got.header("content-length").and_then(|v| v.parse().ok()),
                size,
                "{record}"
            );
            assert_eq!(Some(got.body.len() as u64), size, "{record}");
        }
        records
    }

    pub fn post(&self, path: &str, token: Option<&str>, body: &Value) -> Resp {
        self.request("POST", path, token, Some(body.to_string().as_bytes()))
    }

    pub fn patch(&self, path: &str, token: Option<&str>, body: &Value) -> Resp {
        self.request("PATCH", path, token, Some(body.to_string().as_bytes()))
    }

    pub fn delete(&self, path: &str, token: Option<&str>) -> Resp {
        self.request("DELETE", path, token, None)
    }

    /// Creates an item as admin and returns it.
    pub fn admin_create(&self, collection: &str, body: &Value) -> Value {
        let r = self.post(&format!("/items/{collection}"), Some(ADMIN_TOKEN), body);
        assert_eq!(r.status, 200, "create {collection}: {}", r.body);
        r.json()["data"].clone()
    }

    /// Creates many items as admin, in array POSTs of at most
    /// [`MAX_BATCH`] (one transaction each); returns them in order.
    pub fn admin_create_many(&self, collection: &str, rows: &[Value]) -> Vec<Value> {
        let mut created = Vec::with_capacity(rows.len());
        for chunk in rows.chunks(MAX_BATCH) {
            let r = self.post(
                &format!("/items/{collection}"),
                Some(ADMIN_TOKEN),
                &Value::Array(chunk.to_vec()),
            );
            assert_eq!(r.status, 200, "create many {collection}: {}", r.body);
            let data = r.json()["data"].clone();
            let list = data
                .as_array()
                .unwrap_or_else(|| panic!("array create of {collection} gave {data}"))
                .clone();
            assert_eq!(list.len(), chunk.len(), "{collection}: {data}");
            created.extend(list);
        }
        created
    }

    /// One item, read as admin.
    pub fn admin_item(&self, collection: &str, id: &str) -> Value {
        let r = self.get(&format!("/items/{collection}/{id}"), Some(ADMIN_TOKEN));
        assert_eq!(r.status, 200, "read {collection}/{id}: {}", r.body);
        r.json()["data"].clone()
    }

    /// Every item of a collection matching `filter`, read as admin.
    pub fn admin_find(&self, collection: &str, filter: &Value) -> Vec<Value> {
        let r = self.get(
            &format!(
                "/items/{collection}?limit=-1&filter={}",
                encode(&filter.to_string())
            ),
            Some(ADMIN_TOKEN),
        );
        assert_eq!(r.status, 200, "find in {collection}: {}", r.body);
        r.json()["data"].as_array().cloned().unwrap_or_default()
    }

    /// Applies changes to an item as admin.
    pub fn admin_patch(&self, collection: &str, id: &str, body: &Value) {
        let r = self.patch(
            &format!("/items/{collection}/{id}"),
            Some(ADMIN_TOKEN),
            body,
        );
        assert_eq!(r.status, 200, "patch {collection}/{id}: {}", r.body);
    }

    /// Deletes an item as admin.
    pub fn admin_delete(&self, collection: &str, id: &str) {
        let r = self.delete(&format!("/items/{collection}/{id}"), Some(ADMIN_TOKEN));
        assert_eq!(r.status, 204, "delete {collection}/{id}: {}", r.body);
    }

    /// The id of the seeded role (or policy) with this name.
    pub fn id_by_name(&self, collection: &str, name: &str) -> String {
        let filter = serde_json::json!({"name": {"_eq": name}}).to_string();
        let r = self.get(
            &format!("/items/{collection}?filter={}", encode(&filter)),
            Some(ADMIN_TOKEN),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["data"][0]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("no {collection} named {name}"))
            .to_string()
    }

    /// Grants the policy with this name a permission on `collection`, as
    /// admin. `rule` holds `action` and, where wanted, `permissions` (a
    /// row filter), `fields` (default all) and `presets`.
    pub fn grant(&self, policy: &str, collection: &str, rule: Value) {
        let mut body = serde_json::json!({
            "policy": self.id_by_name("platform_policies", policy),
            "collection": collection,
            "fields": ["*"],
        });
        for (k, v) in rule.as_object().cloned().unwrap_or_default() {
            body[k] = v;
        }
        self.admin_create("platform_permissions", &body);
    }

    /// Creates a user with a role (by name) and a token; returns its id.
    pub fn user(&self, role: Option<&str>, token: &str) -> String {
        self.user_with(role, token, &serde_json::json!({}))
    }

    /// Creates a user with a role (by name), a token and `extra` fields
    /// (e.g. `date_created`); returns its id.
    pub fn user_with(&self, role: Option<&str>, token: &str, extra: &Value) -> String {
        let mut body = user_body(token);
        if let Some(role) = role {
            body["role"] = Value::String(self.id_by_name("platform_roles", role));
        }
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            body[k] = v;
        }
        id_of(&self.admin_create("platform_users", &body))
    }

    /// Creates users with a role (by name) and these tokens in one call;
    /// their ids, in order.
    pub fn users(&self, role: Option<&str>, tokens: &[String]) -> Vec<String> {
        let role = role.map(|r| self.id_by_name("platform_roles", r));
        let rows: Vec<Value> = tokens
            .iter()
            .map(|t| {
                let mut body = user_body(t);
                body["role"] = serde_json::json!(role);
                body
            })
            .collect();
        self.admin_create_many("platform_users", &rows)
            .iter()
            .map(id_of)
            .collect()
    }

    /// Every item of a collection, these `fields` (`*` for all), read as
    /// admin.
    pub fn admin_all(&self, collection: &str, fields: &str) -> Vec<Value> {
        let r = self.get(
            &format!("/items/{collection}?limit=-1&fields={fields}"),
            Some(ADMIN_TOKEN),
        );
        assert_eq!(r.status, 200, "read {collection}: {}", r.body);
        r.json()["data"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("read {collection}: {}", r.body))
    }

    /// How many items of a collection (matching `filter`), counted as
    /// admin.
    pub fn admin_count(&self, collection: &str, filter: Option<&Value>) -> u64 {
        let filter = filter
            .map(|f| format!("&filter={}", encode(&f.to_string())))
            .unwrap_or_default();
        let r = self.get(
            &format!("/items/{collection}?aggregate[count]=*{filter}"),
            Some(ADMIN_TOKEN),
        );
        assert_eq!(r.status, 200, "count {collection}: {}", r.body);
        let n = r.json()["data"][0]["count"].clone();
        n.as_u64()
            .or_else(|| n.as_str().and_then(|s| s.parse().ok()))
            .unwrap_or_else(|| panic!("count {collection}: {}", r.body))
    }

    /// Creates a video as admin (title `Title <slug>`) and returns it.
    pub fn admin_video(&self, slug: &str, upload_date: Option<&str>) -> Value {
        self.admin_create(
            "videos",
            &serde_json::json!({
                "slug": slug, "title": format!("Title {slug}"), "upload_date": upload_date,
            }),
        )
    }

    /// Links a model (a user) to a video, as admin.
    pub fn link_model(&self, video: &str, user: &str) {
        self.admin_create(
            "videos_models",
            &serde_json::json!({"videos_id": video, "platform_users_id": user}),
        );
    }

    /// Starts a play of a recording (`POST /svc/recordings/:id/play`),
    /// which must answer exactly `{success: true, play_id}`; the play's id.
    pub fn play_recording(&self, recording: &str, token: Option<&str>) -> String {
        let r = self.post(
            &format!("/svc/recordings/{recording}/play"),
            token,
            &serde_json::json!({}),
        );
        assert_eq!(r.status, 200, "play {recording}: {}", r.body);
        let v = r.json();
        assert_eq!(v["success"], true, "{v}");
        assert_eq!(
            keys_of(&v),
            std::collections::BTreeSet::from(["play_id", "success"]),
            "{v}"
        );
        str_of(&v["play_id"])
    }

    /// A counter of `/server/metrics` (e.g. `extension_calls`, `items_calls`).
    pub fn metric(&self, name: &str) -> u64 {
        let r = self.get("/server/metrics", Some(ADMIN_TOKEN));
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["data"][name]
            .as_u64()
            .unwrap_or_else(|| panic!("no metric {name}: {}", r.body))
    }

    /// Rows the database has stepped over in full table scans, where it
    /// tells (`database_full_scan_rows`; `None` where it does not count them).
    pub fn full_scan_rows(&self) -> Option<u64> {
        let r = self.get("/server/metrics", Some(ADMIN_TOKEN));
        assert_eq!(r.status, 200, "{}", r.body);
        let value = &r.json()["data"]["database_full_scan_rows"];
        match value {
            Value::Null => None,
            v => Some(v.as_u64().unwrap_or_else(|| panic!("a count: {}", r.body))),
        }
    }

    /// The host still answers: `/server/ping` and (svc) `/svc/stats`.
    pub fn assert_serving(&self) {
        let r = self.get("/server/ping", None);
        assert_eq!(
            (r.status, r.body.as_str()),
            (200, "pong"),
            "host stopped serving"
        );
        let r = self.get("/svc/stats", None);
        assert_eq!(r.status, 200, "{}", r.body);
    }
}

/// A user's fields for a token: names, an email and the token.
fn user_body(token: &str) -> Value {
    serde_json::json!({
        "first_name": "Test", "last_name": token, "email": user_email(token),
        "token": token,
    })
}

/// The email of the user [`Host::user`] made with `token`.
pub fn user_email(token: &str) -> String {
    format!("{token}@test.local")
}

impl Drop for Host {
    fn drop(&mut self) {
        // An in-process host stops with its `ServedHost`.
        if let Server::Process { child, .. } = &mut self.server {
            if child.try_wait().ok().flatten().is_none() {
                self.terminate();
            }
        }
        if self.dir.is_some() && !self.borrows_database {
            self.database.discard();
        }
    }
}

/// Responses checked by [`assert_no_secrets`] in this test process.
pub static SCANNED_RESPONSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The `id` of a record.
pub fn id_of(v: &Value) -> String {
    v["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {v}"))
        .to_string()
}

/// The member names of a JSON object; panics, showing the value, on
/// anything else.
pub fn keys_of(v: &Value) -> std::collections::BTreeSet<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

/// A JSON string's text; empty for anything else.
pub fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// A JSON integer; panics, naming `what`, on anything else.
pub fn int_of(v: &Value, what: &str) -> i64 {
    v.as_i64()
        .unwrap_or_else(|| panic!("{what} is not an integer: {v}"))
}

/// A valid `POST /svc/recordings` body: one device, one event, this title
/// and (when given) status.
pub fn rec_body(title: &str, status: Option<&str>) -> Value {
    let mut body = serde_json::json!({
        "title": title, "duration": 2500,
        "device_info": [{"name": "D", "index": 0, "capabilities": ["Vibrate"]}],
        "events": [{"timestamp": 0, "deviceIndex": 0, "deviceName": "D",
                    "actuatorIndex": 0, "actuatorType": "Vibrate", "value": 40}],
    });
    if let Some(status) = status {
        body["status"] = Value::String(status.to_string());
    }
    body
}

/// An extension's error answer: this status and `{"error": text}`.
pub fn assert_error(r: &Resp, status: u16, text: &str) {
    assert_error_for("answer", r, status, text);
}

/// [`assert_error`] for one case of a table: a failure names `case`.
pub fn assert_error_for(case: &str, r: &Resp, status: u16, text: &str) {
    assert_eq!(r.status, status, "{case}: {}", r.body);
    assert_eq!(
        r.json(),
        serde_json::json!({ "error": text }),
        "{case}: {}",
        r.body
    );
}

/// Every answer of every test goes through this: no route ever returns a
/// `password` or `token` member or a password hash, and the service's
/// public records never carry an `email`.
pub fn assert_no_secrets(method: &str, path: &str, body: &str) {
    SCANNED_RESPONSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // The OpenAPI document names the sign-in body's `password`: a schema,
    // no value. A hash is still refused there.
    let keys: &[&str] = if path == "/server/specs/oas" {
        &["$argon2"]
    } else {
        &["\"password\":", "\"token\":", "$argon2"]
    };
    for key in keys {
        assert!(
            !body.contains(key),
            "{method} {path} answered {key}: {}",
            body.chars().take(500).collect::<String>()
        );
    }
    if path.starts_with("/svc/") {
        assert!(
            !body.contains("\"email\":"),
            "{method} {path} answered an email: {}",
            body.chars().take(500).collect::<String>()
        );
    }
}

/// Percent-encodes a query-string value.
pub fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

pub(crate) fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}
