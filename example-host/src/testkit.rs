//! A real host for an extension's own `cargo test`: the extension under
//! test mounted in a fresh platform on a throwaway SQLite database, called
//! in process, with ordinary Rust types.
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

use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};

use crate::accounts::Accountability;
use crate::bootstrap::AdminSeed;
use crate::credentials;
use crate::extensions::services::ExtServices;
use crate::extensions::{facade_accountability, ExtRequest, Registry};
use crate::http::{call_extension, Credentials, HttpError};
use crate::items::{ItemsError, Session, Who};
use crate::platform::Platform;
use crate::query::WireQuery;
use crate::storage::{self, Location};

/// Why a test host could not do what it was asked.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TestKitError(String);

impl From<ItemsError> for TestKitError {
    fn from(e: ItemsError) -> Self {
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

/// One extension mounted in a fresh platform (see the module docs).
pub struct TestHost {
    platform: Arc<Platform>,
    registry: Arc<Registry>,
    mount: String,
    admin: TestUser,
    // Dropped last: the database files live here.
    _dir: tempfile::TempDir,
}

impl TestHost {
    /// A fresh platform with `extension` mounted at `/{id}`: the platform
    /// seeded, the extension's migrations applied and its `init` run. The
    /// answer cache is on, as in a host started with its defaults.
    pub fn start(extension: host_sdk::Extension) -> Result<TestHost, TestKitError> {
        let dir = tempfile::tempdir()
            .map_err(|e| TestKitError(format!("cannot make a temporary folder: {e}")))?;
        let location = Location::File(dir.path().join("platform.db"));
        let store = storage::open(&location, Some(4))
            .map_err(|e| TestKitError(format!("cannot open {location}: {e}")))?;
        let admin_token = credentials::generate_token();
        let seed = AdminSeed {
            email: ADMIN_EMAIL.into(),
            password: None,
            token: Some(admin_token.clone()),
        };
        let platform =
            crate::app::open_platform(store, seed, Default::default()).map_err(TestKitError)?;
        let mount = extension.id().to_string();
        let mut registry = Registry::default();
        registry
            .add_linked(&platform, Arc::new(extension))
            .map_err(|e| TestKitError(format!("extension `{mount}` refused: {e}")))?;
        let (platform, registry) = crate::app::mount(platform, registry, true);
        let admin = user_of(&platform, ADMIN_EMAIL, admin_token)?;
        Ok(TestHost {
            platform,
            registry,
            mount,
            admin,
            _dir: dir,
        })
    }

    /// The administrator seeded at first start.
    pub fn admin(&self) -> &TestUser {
        &self.admin
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
        }
    }

    /// Requests to the extension as `user`.
    pub fn as_user<'h>(&'h self, user: &'h TestUser) -> Client<'h> {
        Client {
            host: self,
            caller: Some(user),
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

    /// Runs the extension's schedule `name` now, as
    /// `example-host schedule run` does.
    pub fn run_schedule(&self, name: &str) -> Result<(), TestKitError> {
        self.registry
            .run_schedule(&self.platform, &self.mount, name)
            .map_err(TestKitError)
    }

    /// The host's view of a user (with its policies); `None` once the user
    /// is no longer active.
    fn accountability_of(&self, user: &TestUser) -> Option<Accountability> {
        self.platform
            .auth
            .authenticate(self.platform.store.as_ref(), &user.token)
            .ok()
    }

    fn send(&self, caller: Option<&TestUser>, request: ExtRequest) -> TestResponse {
        let ExtRequest {
            method, path, body, ..
        } = &request;
        let Some(ext) = self.registry.get(&self.mount) else {
            return TestResponse::from_error(&HttpError::RouteNotFound(self.mount.clone()));
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
            &self.mount,
            rule,
            &credentials,
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

/// Requests to the extension as one caller; paths are below the mount
/// (`/notes?limit=5` for `/{id}/notes?limit=5`).
pub struct Client<'h> {
    host: &'h TestHost,
    caller: Option<&'h TestUser>,
}

impl Client<'_> {
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
        self.host.send(self.caller, request)
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
