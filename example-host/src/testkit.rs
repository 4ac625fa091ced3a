//! A real host for an extension's own `cargo test`: the extension under
//! test (and the extensions it builds on) mounted in a fresh platform on a
//! throwaway database, called in process, with ordinary Rust types.
//!
//! The database is SQLite, or PostgreSQL when `TEST_DB=postgres`: a new
//! database, dropped with the host, on the server of `TEST_DATABASE_URL` or
//! on a throwaway cluster of the installed server binaries
//! (`platform_store::testing`).
//!
//! Everything is the host's own code: the platform's migrations and first
//! start (roles `Administrator`, `Model` and `Viewer`, their policies and
//! the member rules), the extension's migrations and grants, its `init`,
//! permissions, filters, transactions, in-transaction and after-commit
//! hooks, the answer cache, body rules and authentication. Only the socket
//! and the ABI are left out: the extension is linked, not loaded.
//!
//! ```no_run
//! use example_host::testkit::TestHost;
//! use serde_json::json;
//!
//! # fn extension() -> host_sdk::Extension { unimplemented!() }
//! let host = TestHost::start(extension()).unwrap();
//! let alice = host.create_user("alice@example.com", "Viewer").unwrap();
//!
//! let created = host.as_user(&alice).post("/notes", &json!({"title": "Hi"}));
//! assert_eq!(created.status, 201, "{}", created.text());
//! assert_eq!(host.anonymous().get("/notes").status, 401);
//!
//! // The extension's own functions, with the context a handler gets:
//! let mine = host.context(Some(&alice), |ctx| ctx.as_caller().count("notes", None));
//! assert_eq!(mine.unwrap(), 1);
//! ```
//!
//! Several extensions, mounted in order (each one's migrations before the
//! next one's); requests go to the first unless [`Client::on`] names
//! another. An extension built on another one shipped as a library (svc)
//! mounts that library beside itself:
//!
//! ```no_run
//! # use example_host::testkit::TestHost;
//! # fn bookmarks() -> host_sdk::Extension { unimplemented!() }
//! let svc = std::path::Path::new("target/debug/libsvc_extension.so");
//! let host = TestHost::start_with(&[svc], vec![bookmarks()]).unwrap();
//! assert_eq!(host.anonymous().get("/videos").status, 200);
//! assert_eq!(host.anonymous().on("bookmarks").get("/bookmarks/mine").status, 401);
//! ```

use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};

use crate::accounts::CallerAccount;
use crate::bootstrap::AdminSeed;
use crate::credentials;
use crate::extensions::services::ExtServices;
use crate::extensions::{facade_accountability, ExtRequest, Registry};
use crate::http::{call_extension, Credentials, HttpError};
use crate::items::{Session, Who};
use crate::platform::Platform;
use crate::platform::PlatformError;
use platform_store::query::WireQuery;
use platform_store::storage::{self, Location};
use platform_store::testing::{self, Backend};

/// The rule that lets hosts upgrade one at a time, for an extension's own
/// tests of its migrations: `not_additive("notes", &migrations(), &[])`
/// must be empty (docs/extensions.md "Migrations").
pub use crate::migration_rule::not_additive;

/// Why a test host could not do what it was asked.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TestKitError(String);

impl From<PlatformError> for TestKitError {
    fn from(e: PlatformError) -> Self {
        TestKitError(e.to_string())
    }
}

/// A user of the test platform.
#[derive(Debug, Clone)]
pub struct TestUser {
    /// The user's id.
    pub id: String,
    pub email: String,
    /// The role's id (`None` for a user without a role).
    pub role: Option<String>,
    /// Whether the user's role has admin access.
    pub admin: bool,
    /// The static token the test host authenticates the user's requests
    /// with, as a client would send it.
    token: String,
}

/// The seeded administrator's email.
const ADMIN_EMAIL: &str = "admin@example.com";

/// Extensions mounted in a fresh platform (see the module docs).
pub struct TestHost {
    platform: Arc<Platform>,
    registry: Arc<Registry>,
    /// The mounts, in the order they were given; requests go to the first
    /// unless they name another.
    mounts: Vec<String>,
    admin: TestUser,
    /// The database, dropped with the host when it is on PostgreSQL.
    location: Location,
    // Dropped last: the SQLite files, and a served host's uploads, live here.
    dir: tempfile::TempDir,
}

impl Drop for TestHost {
    fn drop(&mut self) {
        testing::discard(&self.location);
    }
}

impl TestHost {
    /// A fresh platform with `extension` mounted at `/{id}`: the platform
    /// seeded, the extension's migrations applied and its `init` run. The
    /// answer cache is on, as in a host started with its defaults.
    pub fn start(extension: host_sdk::Extension) -> Result<TestHost, TestKitError> {
        Self::start_all(vec![extension])
    }

    /// A fresh platform with every extension of `extensions` mounted, in
    /// this order (an extension's migrations may then name the
    /// collections of those before it). Requests go to the first one
    /// unless [`Client::on`] names another.
    pub fn start_all(extensions: Vec<host_sdk::Extension>) -> Result<TestHost, TestKitError> {
        Self::start_with(&[], extensions)
    }

    /// A fresh platform with the extension libraries of `libraries` loaded
    /// (every check of the host's loader, through the ABI), in this order,
    /// then `extensions` linked. For an extension built on another one
    /// shipped as a library: `TestHost::start_with(&[svc_library],
    /// vec![mine()])`. (Two crates that each export a library's root
    /// module cannot be linked into one test binary, so an extension
    /// depended on is loaded as its library.) Requests go to the first
    /// mount unless [`Client::on`] names another.
    pub fn start_with(
        libraries: &[&std::path::Path],
        extensions: Vec<host_sdk::Extension>,
    ) -> Result<TestHost, TestKitError> {
        if extensions.is_empty() && libraries.is_empty() {
            return Err(TestKitError("no extension to mount".into()));
        }
        crate::extensions::loader::reserve_host_segments(crate::http::routes::first_segments());
        let dir = tempfile::tempdir()
            .map_err(|e| TestKitError(format!("cannot make a temporary folder: {e}")))?;
        let location = testing::fresh_database(Backend::from_env(), dir.path())
            .map_err(|e| TestKitError(format!("no test database: {e}")))?;
        let store = match storage::open(&location, Some(4)) {
            Ok(store) => store,
            Err(e) => {
                testing::discard(&location);
                return Err(TestKitError(format!("cannot open {location}: {e}")));
            }
        };
        let admin_token = credentials::generate_token();
        let seed = AdminSeed {
            email: ADMIN_EMAIL.into(),
            password: None,
            token: Some(admin_token.clone()),
        };
        let mounted = Self::mount_all(store, seed, libraries, extensions, admin_token);
        if mounted.is_err() {
            testing::discard(&location);
        }
        let (platform, registry, mounts, admin) = mounted?;
        Ok(TestHost {
            platform,
            registry,
            mounts,
            admin,
            location,
            dir,
        })
    }

    /// The platform on `store`, seeded, with `extensions` mounted.
    #[allow(clippy::type_complexity)]
    fn mount_all(
        store: Arc<dyn storage::Store>,
        seed: AdminSeed,
        libraries: &[&std::path::Path],
        extensions: Vec<host_sdk::Extension>,
        admin_token: String,
    ) -> Result<(Arc<Platform>, Arc<Registry>, Vec<String>, TestUser), TestKitError> {
        let platform =
            crate::app::open_platform(store, seed, Default::default()).map_err(TestKitError)?;
        let registry = Registry::default();
        let mut mounts = Vec::new();
        for library in libraries {
            registry
                .add_library(library, &platform)
                .map_err(TestKitError)?;
            if let Some(loaded) = registry.all().last() {
                mounts.push(loaded.id.clone());
            }
        }
        for extension in extensions {
            let mount = extension.id().to_string();
            registry
                .add_linked(&platform, Arc::new(extension))
                .map_err(|e| TestKitError(format!("extension `{mount}` refused: {e}")))?;
            mounts.push(mount);
        }
        let (platform, registry) = crate::app::mount(platform, registry, true);
        let admin = user_of(&platform, ADMIN_EMAIL, admin_token)?;
        Ok((platform, registry, mounts, admin))
    }

    /// The administrator seeded at first start.
    pub fn admin(&self) -> &TestUser {
        &self.admin
    }

    /// The same host, its administrator's static token now `token` (a
    /// client that knows it, such as a test speaking HTTP, signs in with
    /// it).
    pub fn with_admin_token(mut self, token: &str) -> Result<TestHost, TestKitError> {
        self.platform.update_one(
            &mut Session::Auto,
            &Who::system(),
            "platform_users",
            &self.admin.id,
            &json!({ "token": token }),
        )?;
        self.admin = user_of(&self.platform, ADMIN_EMAIL, token.to_string())?;
        Ok(self)
    }

    /// Where the host's database is (a SQLite file, or a PostgreSQL
    /// database's URL): to look at it from outside, as another process
    /// would. It is dropped with the host.
    pub fn database(&self) -> &Location {
        &self.location
    }

    /// The host serving the platform's whole HTTP surface (every route a
    /// host serves: the items API, users, sign-in, files and assets, each
    /// extension's mount) on a loopback port, from this process: for
    /// tests that speak HTTP. The server runs, with the extensions'
    /// schedules, on a runtime of its own until the [`ServedHost`] is
    /// dropped. Settings are a host's defaults and the environment's, as
    /// `example-host` started without options; files are kept in the
    /// host's temporary folder.
    pub fn serve(self) -> Result<ServedHost, TestKitError> {
        self.serve_with(&[])
    }

    /// [`TestHost::serve`] with settings given as on `example-host`'s
    /// command line, e.g. `&["--schedules", "false"]` for a host whose
    /// schedules run only when the test asks ([`TestHost::run_schedule`]),
    /// never at the turn of a period in the middle of the test.
    pub fn serve_with(self, args: &[&str]) -> Result<ServedHost, TestKitError> {
        let settings = <crate::config::Cli as clap::Parser>::try_parse_from(
            std::iter::once("example-host").chain(args.iter().copied()),
        )
        .map_err(|e| TestKitError(format!("the host's settings: {e}")))?;
        let state = crate::app::app_state(
            &settings.serve,
            &self.platform,
            &self.registry,
            &self.dir.path().join("uploads"),
        )
        .map_err(TestKitError)?;
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| TestKitError(format!("cannot listen on a loopback port: {e}")))?;
        let address = listener
            .local_addr()
            .map_err(|e| TestKitError(format!("no address to listen on: {e}")))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| TestKitError(format!("cannot start a runtime: {e}")))?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let schedules = crate::app::Schedules::of(&settings.serve);
        let thread = std::thread::Builder::new()
            .name(format!("test-host {address}"))
            .spawn(move || {
                runtime.block_on(async move {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => {
                            let stop = async {
                                let _ = stopped.await;
                            };
                            crate::app::serve_on(listener, state, schedules, None, stop).await;
                        }
                        Err(e) => log::error!("the test host cannot serve: {e}"),
                    }
                });
                runtime.shutdown_timeout(std::time::Duration::from_secs(5));
            })
            .map_err(|e| TestKitError(format!("cannot start the server's thread: {e}")))?;
        Ok(ServedHost {
            base: format!("http://{address}"),
            stop: Some(stop),
            thread: Some(thread),
            host: self,
        })
    }

    /// Creates an active user with the role named `role` (`"Model"`,
    /// `"Viewer"`, `"Administrator"`, or one the extension's migrations
    /// made).
    pub fn create_user(&self, email: &str, role: &str) -> Result<TestUser, TestKitError> {
        let who = Who::system();
        let found = self.platform.read_by_query(
            &mut Session::Auto,
            &who,
            "platform_roles",
            &WireQuery {
                filter: Some(json!({"name": {"_eq": role}})),
                limit: Some(1),
                ..Default::default()
            },
            None,
        )?;
        let Some(role_id) = found.first().and_then(|r| r.get("id")).cloned() else {
            return Err(TestKitError(format!("no role named `{role}`")));
        };
        let token = credentials::generate_token();
        self.platform.create_one(
            &mut Session::Auto,
            &who,
            "platform_users",
            &json!({"email": email, "role": role_id, "token": token, "status": "active"}),
        )?;
        user_of(&self.platform, email, token)
    }

    /// Requests to the extension from nobody signed in.
    pub fn anonymous(&self) -> Client<'_> {
        Client {
            host: self,
            caller: None,
            mount: &self.mounts[0],
        }
    }

    /// Requests to the extension as `user`.
    pub fn as_user<'h>(&'h self, user: &'h TestUser) -> Client<'h> {
        Client {
            host: self,
            caller: Some(user),
            mount: &self.mounts[0],
        }
    }

    /// Requests to the extension as the administrator.
    pub fn as_admin(&self) -> Client<'_> {
        self.as_user(&self.admin)
    }

    /// Runs `work` with the context a handler of `caller`'s request gets
    /// (`None`: anonymous): to test the extension's own functions, or to
    /// arrange and inspect data with `ctx.as_admin()`. Writes commit as
    /// they would in a handler, and their hooks run.
    pub fn context<T>(
        &self,
        caller: Option<&TestUser>,
        work: impl FnOnce(&host_sdk::Context<'_>) -> T,
    ) -> T {
        // A user no longer active is anonymous, as their token would be
        // refused.
        let accountability = caller.and_then(|user| self.accountability_of(user));
        let facade = accountability.as_ref().map(facade_accountability);
        let services = ExtServices::new(&self.platform, accountability);
        host_sdk::direct::with_context(facade, &services, work)
    }

    /// Runs the first extension's schedule `name` now, as
    /// `example-host schedule run` does.
    pub fn run_schedule(&self, name: &str) -> Result<(), TestKitError> {
        self.run_schedule_of(&self.mounts[0], name)
    }

    /// Runs the schedule `name` of the extension mounted at `mount` now.
    pub fn run_schedule_of(&self, mount: &str, name: &str) -> Result<(), TestKitError> {
        self.registry
            .run_schedule(&self.platform, mount, name)
            .map_err(TestKitError)
    }

    /// The host's view of a user (with its policies); `None` once the user
    /// is no longer active.
    fn accountability_of(&self, user: &TestUser) -> Option<CallerAccount> {
        self.platform
            .auth
            .authenticate(self.platform.store.as_ref(), &user.token)
            .ok()
    }

    fn send(&self, mount: &str, caller: Option<&TestUser>, request: ExtRequest) -> TestResponse {
        let ExtRequest {
            method, path, body, ..
        } = &request;
        let Some(ext) = self.registry.get(mount) else {
            return TestResponse::from_error(&HttpError::RouteNotFound(mount.to_string()));
        };
        let rule = ext.code.body_rule(method, path);
        if rule
            .max_bytes
            .is_some_and(|max| u64::try_from(body.len()).unwrap_or(u64::MAX) > max)
        {
            return TestResponse::from_error(&HttpError::PayloadTooLarge);
        }
        let credentials = caller.map_or(Credentials::Anonymous, |user| {
            Credentials::Token(user.token.clone())
        });
        match call_extension(
            &self.platform,
            &self.registry,
            mount,
            rule,
            &credentials,
            None,
            request,
        ) {
            Ok(answer) => TestResponse {
                status: answer.status,
                content_type: answer.content_type,
                body: answer.body.to_vec(),
                allow: answer.allow,
            },
            Err(e) => TestResponse::from_error(&e),
        }
    }
}

/// The seeded or created user with this email, and its token.
fn user_of(platform: &Platform, email: &str, token: String) -> Result<TestUser, TestKitError> {
    let acc = platform
        .auth
        .authenticate(platform.store.as_ref(), &token)
        .map_err(|e| TestKitError(format!("user {email} cannot sign in: {e}")))?;
    Ok(TestUser {
        id: acc.user,
        email: email.to_string(),
        role: acc.role,
        admin: acc.admin,
        token,
    })
}

/// A [`TestHost`] serving HTTP ([`TestHost::serve`]); it derefs to the
/// host, and stops serving (in-flight requests finished) when dropped.
pub struct ServedHost {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    host: TestHost,
}

impl ServedHost {
    /// The server's URL, `http://127.0.0.1:PORT`, without a final `/`.
    pub fn base_url(&self) -> &str {
        &self.base
    }
}

impl std::ops::Deref for ServedHost {
    type Target = TestHost;

    fn deref(&self) -> &TestHost {
        &self.host
    }
}

impl Drop for ServedHost {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Requests to an extension as one caller; paths are below its mount
/// (`/notes?limit=5` for `/{id}/notes?limit=5`).
pub struct Client<'h> {
    host: &'h TestHost,
    caller: Option<&'h TestUser>,
    mount: &'h str,
}

impl<'h> Client<'h> {
    /// The same caller's requests to the extension mounted at `mount`
    /// (one of [`TestHost::start_all`]'s); a mount the host does not
    /// have answers 404, as over HTTP.
    pub fn on(self, mount: &'h str) -> Client<'h> {
        Client { mount, ..self }
    }

    pub fn get(&self, path: &str) -> TestResponse {
        self.request("GET", path, &[], Vec::new())
    }

    pub fn delete(&self, path: &str) -> TestResponse {
        self.request("DELETE", path, &[], Vec::new())
    }

    /// `POST` with `body` as JSON.
    pub fn post(&self, path: &str, body: &impl Serialize) -> TestResponse {
        self.send_json("POST", path, body)
    }

    /// `PATCH` with `body` as JSON.
    pub fn patch(&self, path: &str, body: &impl Serialize) -> TestResponse {
        self.send_json("PATCH", path, body)
    }

    /// `PUT` with `body` as JSON.
    pub fn put(&self, path: &str, body: &impl Serialize) -> TestResponse {
        self.send_json("PUT", path, body)
    }

    fn send_json(&self, method: &str, path: &str, body: &impl Serialize) -> TestResponse {
        // A value that cannot be JSON is the test's own mistake.
        let bytes = serde_json::to_vec(body)
            .unwrap_or_else(|e| panic!("the test's {method} {path} body is not JSON: {e}"));
        self.request(method, path, &[("content-type", "application/json")], bytes)
    }

    /// Any request: another method, raw bytes, headers. `path` may carry a
    /// query string.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Vec<u8>>,
    ) -> TestResponse {
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let request = ExtRequest {
            method: method.to_ascii_uppercase(),
            path: path.to_string(),
            query: query.to_string(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
                .collect(),
            body: body.into(),
        };
        self.host.send(self.mount, self.caller, request)
    }
}

/// The answer to one request, as a client would read it.
#[derive(Debug, Clone)]
pub struct TestResponse {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    /// The `Allow` header of a 405.
    pub allow: Option<String>,
}

impl TestResponse {
    fn from_error(e: &HttpError) -> Self {
        let (status, body) = e.status_and_body();
        TestResponse {
            status: status.as_u16(),
            content_type: "application/json".into(),
            body: body.into_bytes(),
            allow: None,
        }
    }

    /// The body as text (lossy), for assertion messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; `Value::Null` when it is not JSON (the assertion
    /// that follows then shows it with [`TestResponse::text`]).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body read as `T`.
    pub fn json_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use host_sdk::prelude::*;
    use host_sdk::schema::{Collection, Field};

    fn base() -> host_sdk::Extension {
        host_sdk::Extension::new("base", "Base", "1.0.0")
            .migration(
                "0001_shelves",
                vec![Collection::new("shelves")
                    .field(Field::text("name"))
                    .build()],
            )
            .routes(|r| {
                r.get("/whoami", |_, _| {
                    Ok(Response::ok(&json!({"mount": "base"})))
                });
            })
    }

    /// Reads the collection of the extension mounted before it.
    fn addon() -> host_sdk::Extension {
        host_sdk::Extension::new("addon", "Add-on", "1.0.0").routes(|r| {
            r.get("/whoami", |_, _| {
                Ok(Response::ok(&json!({"mount": "addon"})))
            });
            r.get("/shelves", |_, ctx| {
                let count = ctx.as_admin().count("shelves", None)?;
                Ok(Response::ok(&json!({"shelves": count})))
            });
        })
    }

    /// An update's event carries the item as a read inside its transaction
    /// finds it after the write, for every type of field and however a
    /// value was given: the host lays the written values over `before`
    /// instead of reading the item again.
    #[test]
    fn an_update_event_carries_the_item_as_it_was_written() {
        // (event's after, the item read in the hook's transaction)
        static SEEN: std::sync::Mutex<Vec<(Value, Option<Value>)>> =
            std::sync::Mutex::new(Vec::new());
        fn compare(event: &ItemEvent, ctx: &Context<'_>) -> Result<(), BoxError> {
            if event.kind == EventKind::Update {
                let read = ctx.as_admin().read_one("kinds", &event.keys[0])?;
                let after = event.after.first().cloned().unwrap_or_default();
                SEEN.lock().map_err(|e| e.to_string())?.push((after, read));
            }
            Ok(())
        }
        let ext = host_sdk::Extension::new("kinds", "Kinds", "1.0.0")
            .migration(
                "0001_kinds",
                vec![Collection::new("kinds")
                    .field(Field::string("name"))
                    .field(Field::text("note"))
                    .field(Field::integer("count"))
                    .field(Field::float("ratio"))
                    .field(Field::boolean("flag"))
                    .field(Field::timestamp("at"))
                    .field(Field::json("doc"))
                    .field(Field::uuid("other"))
                    .build()],
            )
            .before_commit_in(&["kinds"], compare);
        let host = TestHost::start(ext).expect("host");
        let updates = [
            json!({"count": 7}),
            json!({"ratio": 5}),
            json!({"ratio": 0.1}),
            json!({"flag": true}),
            json!({"doc": {"b": "é\"\\", "n": null, "x": [1, 2.5, -0.0]}}),
            json!({"doc": [1, 2.5, "x"]}),
            json!({"doc": "text"}),
            json!({"doc": null}),
            json!({"name": "quote \" backslash \\ \u{1F600} \u{7}"}),
            json!({"note": null, "count": 9_007_199_254_740_993_i64}),
            json!({"at": "2026-11-29T01:02:03.004Z"}),
            json!({"at": "2026-11-29T01:02:03Z"}),
            json!({"other": "00000000-0000-4000-8000-000000000001", "flag": false}),
        ];
        let written = host.context(None, |ctx| {
            let items = ctx.as_admin();
            let key = items.create_one(
                "kinds",
                &json!({"name": "a", "note": "n", "count": 1, "ratio": 1.5, "flag": false,
                        "at": "2026-01-01T00:00:00.000Z", "doc": {"a": [1, 2]}}),
            )?;
            for update in &updates {
                items.update_one("kinds", &key, update)?;
            }
            Ok::<_, ItemsError>(key)
        });
        written.expect("the writes");
        let seen = SEEN.lock().expect("seen").clone();
        assert_eq!(seen.len(), updates.len(), "{seen:#?}");
        for ((after, read), update) in seen.iter().zip(&updates) {
            assert_eq!(Some(after), read.as_ref(), "after {update}");
        }
    }

    /// Values an extension keeps in a `static` (`host_sdk::Memo`, per data
    /// version) are the process's: several platforms in one process (tests
    /// run side by side) must never hand one of them another's data
    /// version, or a value computed on one would be served by the other.
    #[test]
    fn values_kept_by_one_platform_are_never_served_by_another_in_the_process() {
        static NAMES: host_sdk::Memo<Vec<Value>> = host_sdk::Memo::new();
        let keeping = || {
            base().routes(|r| {
                r.get("/names", |_, ctx| {
                    let names = NAMES.get_or_try(ctx, || {
                        ctx.as_admin()
                            .read_by_query("shelves", &Query::new().fields(&["name"]))
                    })?;
                    Ok(Response::ok(&json!(names)))
                });
            })
        };
        let hosts = [
            TestHost::start(keeping()).expect("start"),
            TestHost::start(keeping()).expect("start"),
        ];
        // The same steps on both: their stores count the same commits.
        for (host, name) in hosts.iter().zip(["first", "second"]) {
            host.context(None, |ctx| {
                ctx.as_admin()
                    .create_one("shelves", &json!({"name": name}))
                    .map(|_| ())
            })
            .expect("a shelf");
        }
        for (host, name) in hosts.iter().zip(["first", "second"]) {
            assert_eq!(
                host.anonymous().get("/names").json(),
                json!([{"name": name}]),
                "the platform holding `{name}`"
            );
        }
    }

    /// One HTTP/1.1 exchange with `base` (`http://host:port`): the
    /// status line's code and the body.
    fn http(base: &str, request: &str) -> (u16, String) {
        use std::io::{Read, Write};
        let address = base.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(address).expect("connect");
        stream.write_all(request.as_bytes()).expect("send");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("read");
        let status = answer
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP answer: {answer}"));
        let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (status, body.to_string())
    }

    #[test]
    fn a_served_host_answers_every_route_of_the_platform_over_http() {
        let host = TestHost::start(base())
            .and_then(|h| h.with_admin_token("served-admin"))
            .and_then(TestHost::serve)
            .expect("serve");
        let get = |path: &str, token: Option<&str>| {
            let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
            http(
                host.base_url(),
                &format!("GET {path} HTTP/1.1\r\nHost: test\r\n{auth}Connection: close\r\n\r\n"),
            )
        };
        assert_eq!(get("/server/ping", None), (200, "pong".to_string()));
        let (status, body) = get("/base/whoami", None);
        assert_eq!((status, body.as_str()), (200, r#"{"mount":"base"}"#));
        // The items API, with the token the host was given.
        host.context(None, |ctx| {
            ctx.as_admin()
                .create_one("shelves", &json!({"name": "top"}))
                .map(|_| ())
        })
        .expect("a shelf");
        let (status, body) = get("/items/shelves?fields=name", Some("served-admin"));
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            serde_json::from_str::<Value>(&body).expect("JSON"),
            json!({"data": [{"name": "top"}]})
        );
        assert_eq!(get("/items/shelves", Some("not-a-token")).0, 401);
        assert_eq!(host.admin().token, "served-admin");
        // Dropping it stops the server: the port no longer answers.
        let base = host.base_url().to_string();
        drop(host);
        assert!(std::net::TcpStream::connect(base.trim_start_matches("http://")).is_err());
    }

    #[test]
    fn several_extensions_are_mounted_and_reached_by_name() {
        let host = TestHost::start_all(vec![base(), addon()]).expect("start");
        host.context(None, |ctx| {
            ctx.as_admin()
                .create_one("shelves", &json!({"name": "top"}))
                .map(|_| ())
        })
        .expect("a shelf");

        let anyone = || host.anonymous();
        assert_eq!(anyone().get("/whoami").json(), json!({"mount": "base"}));
        assert_eq!(
            anyone().on("addon").get("/whoami").json(),
            json!({"mount": "addon"})
        );
        assert_eq!(
            anyone().on("addon").get("/shelves").json(),
            json!({"shelves": 1})
        );
        assert_eq!(anyone().on("nothing").get("/whoami").status, 404);
    }

    /// An extension built on `base`'s shelves: pins refer to a shelf (a
    /// delete of a shelf with pins is refused by the reference rule), and
    /// before-write hooks on shelves: a name is trimmed and upper-cased,
    /// `forbidden` is refused, and a shelf about to be deleted loses its
    /// pins first, inside the delete's transaction.
    fn pins() -> host_sdk::Extension {
        use host_sdk::schema::OnDelete;
        host_sdk::Extension::new("pins", "Pins", "1.0.0")
            .migration(
                "0001_pins",
                vec![Collection::new("pins")
                    .field(Field::reference_with("shelf", "shelves", OnDelete::Refuse))
                    .build()],
            )
            .before_write_in(&["shelves"], |write, ctx| {
                match write.kind {
                    EventKind::Create | EventKind::Update => {
                        let name = write.payload["name"].as_str().unwrap_or_default();
                        if name == "forbidden" {
                            return Err(
                                ApiError::bad_request("That name is taken by policy").into()
                            );
                        }
                        write.payload["name"] = json!(name.trim().to_uppercase());
                    }
                    EventKind::Delete => {
                        let admin = ctx.as_admin();
                        for key in &write.keys {
                            let filter = json!({"shelf": {"_eq": key}});
                            for pin in admin.read_by_query("pins", &Query::new().filter(filter))? {
                                admin.delete_one("pins", pin["id"].as_str().unwrap_or_default())?;
                            }
                        }
                    }
                }
                Ok(())
            })
    }

    #[test]
    fn before_write_hooks_change_refuse_and_clear_the_way_of_a_write() {
        let host = TestHost::start_all(vec![base(), pins()]).expect("start");
        let admin = |work: &dyn Fn(&host_sdk::Items<'_>) -> Result<Value, host_sdk::ItemsError>| {
            host.context(None, |ctx| work(&ctx.as_admin()))
        };

        // The payload as the hook changed it is what is written.
        let shelf = admin(&|items| {
            items
                .create_one("shelves", &json!({"name": " top "}))
                .map(Value::from)
        })
        .expect("a shelf");
        let shelf = shelf.as_str().unwrap_or_default().to_string();
        let stored = admin(&|items| {
            items
                .read_one("shelves", &shelf)
                .map(|r| r.unwrap_or(Value::Null))
        })
        .expect("read back");
        assert_eq!(stored["name"], "TOP");
        admin(&|items| {
            items
                .update_one("shelves", &shelf, &json!({"name": "middle"}))
                .map(Value::from)
        })
        .expect("an update");
        let stored = admin(&|items| {
            items
                .read_one("shelves", &shelf)
                .map(|r| r.unwrap_or(Value::Null))
        })
        .expect("read back");
        assert_eq!(stored["name"], "MIDDLE");

        // A refusal is the writer's error, and nothing is written.
        let refused = admin(&|items| {
            items
                .create_one("shelves", &json!({"name": "forbidden"}))
                .map(Value::from)
        });
        assert_eq!(
            refused.err().map(|e| e.to_string()),
            Some("That name is taken by policy".to_string())
        );
        assert_eq!(
            admin(&|items| items.count("shelves", None).map(Value::from)).ok(),
            Some(json!(1))
        );

        // The reference rule would refuse the delete of a shelf with pins:
        // the hook deletes them first, in the same transaction.
        admin(&|items| {
            items
                .create_one("pins", &json!({"shelf": shelf}))
                .map(Value::from)
        })
        .expect("a pin");
        admin(&|items| items.delete_one("shelves", &shelf).map(|_| Value::Null))
            .expect("the delete");
        assert_eq!(
            admin(&|items| items.count("pins", None).map(Value::from)).ok(),
            Some(json!(0))
        );
        assert_eq!(
            admin(&|items| items.count("shelves", None).map(Value::from)).ok(),
            Some(json!(0))
        );
    }

    #[test]
    fn no_extension_is_a_clear_error() {
        let err = TestHost::start_all(Vec::new()).err().expect("refused");
        assert_eq!(err.to_string(), "no extension to mount");
    }
}
