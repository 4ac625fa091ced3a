//! Routes of an extension: method + path pattern → handler.

use std::collections::HashMap;

use once_cell::sync::OnceCell;
use serde_json::{json, Map, Value};

use crate::abi::FfiBodyRule;
use crate::cache::{AnswerCache, Lookup};

use crate::context::Context;
use crate::error::ApiError;
use crate::http::{Request, Response, SharedResponse};
use crate::openapi;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

/// What a route runs.
pub type Handler =
    Box<dyn Fn(&Request, &Context<'_>) -> Result<Response, ApiError> + Send + Sync + 'static>;

enum Segment {
    Literal(String),
    Param(String),
}

/// One registered route.
pub struct Route {
    method: String,
    pattern: String,
    segments: Vec<Segment>,
    summary: Option<String>,
    /// Documented query parameters (OpenAPI parameter objects).
    query: Vec<Value>,
    /// JSON Schema of the request body.
    body: Option<Value>,
    /// Documented answers: status, description, JSON Schema of the body.
    responses: Vec<(u16, String, Option<Value>)>,
    /// The answer to a request without an authenticated caller, when the
    /// route needs one.
    unauthenticated: Option<ApiError>,
    /// Whether anonymous answers are kept until the data changes.
    cached: bool,
    /// Whether the answer is the same whoever asks (signed-in callers
    /// share the kept answers too).
    same_for_every_caller: bool,
    /// What the route accepts as a body.
    body_rule: BodyRule,
    handler: Handler,
}

impl Route {
    /// A one-line description for the OpenAPI document.
    pub fn summary(&mut self, text: &str) -> &mut Self {
        self.summary = Some(text.to_string());
        self
    }

    /// Documents an optional query parameter (`kind`: a JSON Schema type).
    pub fn query(&mut self, name: &str, kind: &str) -> &mut Self {
        self.query.push(json!({
            "name": name, "in": "query", "required": false, "schema": {"type": kind}
        }));
        self
    }

    /// Documents the query parameters as the fields of `T`, the type the
    /// handler reads them into with [`Request::query_as`]: a field is
    /// required unless it is an `Option` or has a default; its doc comment
    /// is the parameter's description.
    pub fn query_type<T: JsonSchema>(&mut self) -> &mut Self {
        self.query.extend(openapi::query_parameters_of::<T>());
        self
    }

    /// Documents the (required) JSON body with a JSON Schema.
    pub fn body(&mut self, schema: Value) -> &mut Self {
        self.body = Some(schema);
        self
    }

    /// Documents the (required) JSON body as `T`, the type the handler
    /// reads it into with [`Request::body_as`].
    pub fn body_type<T: JsonSchema>(&mut self) -> &mut Self {
        self.body(openapi::schema_of::<T>())
    }

    /// Documents an answer. Error statuses (400 and above) get the
    /// `{"error": ..., "details": ...}` body of [`ApiError`]; give a
    /// success's body with [`Route::response_type`].
    pub fn response(&mut self, status: u16, description: &str) -> &mut Self {
        let schema = (status >= 400).then(openapi::error_schema);
        self.responses
            .push((status, description.to_string(), schema));
        self
    }

    /// Documents an answer whose JSON body is a `T`.
    pub fn response_type<T: JsonSchema>(&mut self, status: u16, description: &str) -> &mut Self {
        self.responses.push((
            status,
            description.to_string(),
            Some(openapi::schema_of::<T>()),
        ));
        self
    }

    /// Needs an authenticated caller: a request without one is answered
    /// 401 `{"error": "Unauthorized"}` before the handler runs (SDK 1.8;
    /// earlier SDKs only documented it). Documented in OpenAPI.
    pub fn authenticated(&mut self) -> &mut Self {
        self.authenticated_with("Unauthorized")
    }

    /// [`Route::authenticated`], answering 401 with this `message`.
    pub fn authenticated_with(&mut self, message: &str) -> &mut Self {
        self.unauthenticated = Some(ApiError::unauthorized(message));
        self
    }

    /// Keeps this route's answers to anonymous `GET`s until the stored data
    /// changes (or until the time the handler gave [`Context::fresh_until`]).
    ///
    /// Only for handlers whose anonymous answer depends on nothing but the
    /// path, the query, the stored data and, where the handler says so, the
    /// clock: not on headers, not on state outside the database. Answers
    /// other than 200, and authenticated requests (unless the route is
    /// [`Route::same_for_every_caller`]), bypass the cache.
    /// Without a host that reports its data version (SDK 1.3), nothing is
    /// kept.
    pub fn cached(&mut self) -> &mut Self {
        self.cached = true;
        self
    }

    /// Declares that the answer does not depend on who asks: the handler
    /// reads no accountability and reads items as the extension itself
    /// ([`Context::as_admin`](crate::Context::as_admin)), never as the
    /// caller. With [`Route::cached`], signed-in callers are then served
    /// the same kept answers as anonymous ones (their credentials are still
    /// checked by the host first: a bad token never reaches the route).
    pub fn same_for_every_caller(&mut self) -> &mut Self {
        self.same_for_every_caller = true;
        self
    }

    /// Refuses bodies over `bytes` (413, from the host, before it reads
    /// them); by default a route takes what the host takes.
    pub fn max_body(&mut self, bytes: u64) -> &mut Self {
        self.body_rule.max_bytes = Some(bytes);
        self
    }

    /// Refuses JSON bodies nested deeper than `levels` arrays and objects
    /// (400, from the host, before the handler parses them); by default
    /// [`BodyRule::DEFAULT_MAX_DEPTH`].
    pub fn max_depth(&mut self, levels: u32) -> &mut Self {
        self.body_rule.max_depth = Some(levels);
        self
    }

    /// Walks `path` along the route's segments, handing each parameter's
    /// part to `param`; whether a request of `method` for `path` reaches
    /// this route.
    fn walk<'p>(&self, method: &str, path: &'p str, mut param: impl FnMut(&str, &'p str)) -> bool {
        if self.method != method {
            return false;
        }
        let mut parts = path.trim_matches('/').split('/').filter(|s| !s.is_empty());
        self.segments
            .iter()
            .all(|segment| match (segment, parts.next()) {
                (Segment::Literal(lit), Some(part)) => lit == part,
                (Segment::Param(name), Some(part)) => {
                    param(name, part);
                    true
                }
                (_, None) => false,
            })
            && parts.next().is_none()
    }

    /// Whether a request reaches this route (no parameters collected).
    fn reaches(&self, method: &str, path: &str) -> bool {
        self.walk(method, path, |_, _| {})
    }

    /// Whether a request for `path`, of any method, reaches this route.
    fn has_path(&self, path: &str) -> bool {
        self.reaches(&self.method, path)
    }

    /// The route's parameters, percent-decoded, when the request reaches it.
    fn matches(&self, method: &str, path: &str) -> Option<HashMap<String, String>> {
        let mut params = HashMap::new();
        self.walk(method, path, |name, part| {
            params.insert(name.to_string(), percent_decode(part));
        })
        .then_some(params)
    }
}

fn run(route: &Route, request: &Request, ctx: &Context<'_>) -> Response {
    if let Some(refusal) = &route.unauthenticated {
        if ctx.accountability().is_none() {
            return Response::error(refusal);
        }
    }
    match (route.handler)(request, ctx) {
        Ok(response) => response,
        Err(error) => Response::error(&error),
    }
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// What a route accepts as a request body; the host enforces it before
/// the extension sees the body (SDK 1.6 hosts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub struct BodyRule {
    /// The largest body in bytes; `None`: the host's own limit.
    pub max_bytes: Option<u64>,
    /// The deepest nesting of JSON arrays and objects; `None`: unchecked.
    pub max_depth: Option<u32>,
}

impl BodyRule {
    /// The nesting a route accepts unless it says otherwise: far more than
    /// any JSON document a handler reads, far less than what would make a
    /// parser recurse dangerously.
    pub const DEFAULT_MAX_DEPTH: u32 = 32;

    /// A request that reaches no route is answered 404 whatever it sends:
    /// its body is refused beyond this size rather than read whole.
    pub const UNROUTED_MAX_BYTES: u64 = 64 * 1024;

    /// The host's limits alone: what a library without rules (SDK before
    /// 1.6) gets.
    pub const HOST_LIMITS: BodyRule = BodyRule {
        max_bytes: None,
        max_depth: None,
    };
}

impl Default for BodyRule {
    fn default() -> Self {
        Self {
            max_bytes: None,
            max_depth: Some(Self::DEFAULT_MAX_DEPTH),
        }
    }
}

impl From<BodyRule> for FfiBodyRule {
    fn from(rule: BodyRule) -> Self {
        Self {
            max_bytes: rule.max_bytes.unwrap_or(u64::MAX),
            max_depth: rule.max_depth.unwrap_or(u32::MAX),
        }
    }
}

impl From<FfiBodyRule> for BodyRule {
    fn from(rule: FfiBodyRule) -> Self {
        Self {
            max_bytes: (rule.max_bytes != u64::MAX).then_some(rule.max_bytes),
            max_depth: (rule.max_depth != u32::MAX).then_some(rule.max_depth),
        }
    }
}

/// Where the host's data version comes from (see [`crate::cache`]).
pub(crate) type DataVersion = Box<dyn Fn() -> u64 + Send + Sync>;

/// The extension's routes, matched in registration order.
#[derive(Default)]
pub struct Router {
    routes: Vec<Route>,
    cache: AnswerCache,
    data_version: OnceCell<DataVersion>,
}

impl Router {
    /// No routes yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a route; `pattern` is a path below the mount point whose
    /// `:name` segments are parameters (`/videos/:slug`).
    pub fn route<H>(&mut self, method: &str, pattern: &str, handler: H) -> &mut Route
    where
        H: Fn(&Request, &Context<'_>) -> Result<Response, ApiError> + Send + Sync + 'static,
    {
        let segments = pattern
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| match s.strip_prefix(':') {
                Some(name) => Segment::Param(name.to_string()),
                None => Segment::Literal(s.to_string()),
            })
            .collect();
        self.routes.push(Route {
            method: method.to_ascii_uppercase(),
            pattern: pattern.to_string(),
            segments,
            summary: None,
            query: Vec::new(),
            body: None,
            responses: Vec::new(),
            unauthenticated: None,
            cached: false,
            same_for_every_caller: false,
            body_rule: BodyRule::default(),
            handler: Box::new(handler),
        });
        let last = self.routes.len() - 1;
        &mut self.routes[last]
    }

    /// A `GET` route (see [`Router::route`]).
    pub fn get<H>(&mut self, pattern: &str, handler: H) -> &mut Route
    where
        H: Fn(&Request, &Context<'_>) -> Result<Response, ApiError> + Send + Sync + 'static,
    {
        self.route("GET", pattern, handler)
    }

    /// A `POST` route.
    pub fn post<H>(&mut self, pattern: &str, handler: H) -> &mut Route
    where
        H: Fn(&Request, &Context<'_>) -> Result<Response, ApiError> + Send + Sync + 'static,
    {
        self.route("POST", pattern, handler)
    }

    /// A `PUT` route (SDK 1.8).
    pub fn put<H>(&mut self, pattern: &str, handler: H) -> &mut Route
    where
        H: Fn(&Request, &Context<'_>) -> Result<Response, ApiError> + Send + Sync + 'static,
    {
        self.route("PUT", pattern, handler)
    }

    /// A `PATCH` route.
    pub fn patch<H>(&mut self, pattern: &str, handler: H) -> &mut Route
    where
        H: Fn(&Request, &Context<'_>) -> Result<Response, ApiError> + Send + Sync + 'static,
    {
        self.route("PATCH", pattern, handler)
    }

    /// A `DELETE` route.
    pub fn delete<H>(&mut self, pattern: &str, handler: H) -> &mut Route
    where
        H: Fn(&Request, &Context<'_>) -> Result<Response, ApiError> + Send + Sync + 'static,
    {
        self.route("DELETE", pattern, handler)
    }

    /// A `POST` route whose JSON body is read into `T` before `handler`
    /// runs, and documented as `T` in the OpenAPI document: one type both
    /// parses and describes the body (SDK 1.9). A body that is not a `T`
    /// answers 400 `Invalid JSON body` with serde's reason in `details`,
    /// and the handler is not called; an empty body reads as `{}`.
    pub fn post_json<T, H>(&mut self, pattern: &str, handler: H) -> &mut Route
    where
        T: DeserializeOwned + JsonSchema + 'static,
        H: Fn(T, &Request, &Context<'_>) -> Result<Response, ApiError> + Send + Sync + 'static,
    {
        self.route_json("POST", pattern, handler)
    }

    /// A `PUT` route whose JSON body is a `T` (see [`Router::post_json`]).
    pub fn put_json<T, H>(&mut self, pattern: &str, handler: H) -> &mut Route
    where
        T: DeserializeOwned + JsonSchema + 'static,
        H: Fn(T, &Request, &Context<'_>) -> Result<Response, ApiError> + Send + Sync + 'static,
    {
        self.route_json("PUT", pattern, handler)
    }

    /// A `PATCH` route whose JSON body is a `T` (see [`Router::post_json`]).
    pub fn patch_json<T, H>(&mut self, pattern: &str, handler: H) -> &mut Route
    where
        T: DeserializeOwned + JsonSchema + 'static,
        H: Fn(T, &Request, &Context<'_>) -> Result<Response, ApiError> + Send + Sync + 'static,
    {
        self.route_json("PATCH", pattern, handler)
    }

    fn route_json<T, H>(&mut self, method: &str, pattern: &str, handler: H) -> &mut Route
    where
        T: DeserializeOwned + JsonSchema + 'static,
        H: Fn(T, &Request, &Context<'_>) -> Result<Response, ApiError> + Send + Sync + 'static,
    {
        self.route(method, pattern, move |req, ctx| {
            handler(req.body_as::<T>()?, req, ctx)
        })
        .body_type::<T>()
    }

    /// Runs the first route matching the request; 405 `Method not
    /// allowed` when routes have its path but not its method (SDK 1.8:
    /// the host adds the `Allow` header from the OpenAPI paths), 404
    /// `Route not found` when none has its path.
    #[doc(hidden)]
    pub fn dispatch(&self, request: Request, ctx: &Context<'_>) -> Response {
        self.answer(request, ctx).into_response()
    }

    /// [`Router::dispatch`], with the body shared: an answer served from
    /// the cache is the kept bytes themselves, not a copy.
    #[doc(hidden)]
    pub fn answer(&self, mut request: Request, ctx: &Context<'_>) -> SharedResponse {
        for route in &self.routes {
            if let Some(params) = route.matches(request.method(), request.path()) {
                request.set_params(params);
                // Only a cacheable request pays for reading the version.
                let cacheable = route.cached
                    && request.method() == "GET"
                    && (route.same_for_every_caller || ctx.accountability().is_none());
                let Some(version) = cacheable.then(|| ctx.data_version()).flatten() else {
                    return run(route, &request, ctx).into();
                };
                let claim = match self.cache.lookup(&request.cache_key(), version) {
                    Lookup::Kept(kept) => return kept,
                    Lookup::Compute(claim) => claim,
                };
                ctx.keep_answer();
                let response = SharedResponse::from(run(route, &request, ctx));
                if response.status == 200 {
                    claim.keep(response.clone(), ctx.freshness());
                }
                return response;
            }
        }
        if self.routes.iter().any(|r| r.has_path(request.path())) {
            return Response::error(&ApiError::new(405, "Method not allowed")).into();
        }
        Response::error(&ApiError::not_found("Route not found")).into()
    }

    /// The methods of the routes that have `path`, in registration order
    /// (what an `Allow` header lists).
    #[doc(hidden)]
    pub fn allowed_methods(&self, path: &str) -> Vec<&str> {
        let mut methods: Vec<&str> = Vec::new();
        for route in self.routes.iter().filter(|r| r.has_path(path)) {
            if !methods.contains(&route.method.as_str()) {
                methods.push(&route.method);
            }
        }
        methods
    }

    /// What the route a request of `method` for `path` would reach accepts
    /// as a body (the first route that matches, as [`Router::answer`]
    /// picks it).
    #[doc(hidden)]
    pub fn body_rule(&self, method: &str, path: &str) -> BodyRule {
        self.routes
            .iter()
            .find(|route| route.reaches(method, path))
            .map_or(
                BodyRule {
                    max_bytes: Some(BodyRule::UNROUTED_MAX_BYTES),
                    ..BodyRule::default()
                },
                |route| route.body_rule,
            )
    }

    /// Lets cached routes keep answers, versioned by `source` (called by the
    /// entry points when the host hands its runtime over; once).
    pub(crate) fn attach_data_version(&self, source: DataVersion) {
        let _ = self.data_version.set(source);
    }

    /// The data version source attached, if any.
    pub(crate) fn data_version(&self) -> Option<&DataVersion> {
        self.data_version.get()
    }

    /// The routes as an OpenAPI `paths` object (paths relative to the mount).
    pub fn openapi_paths(&self) -> Value {
        let mut paths = Map::new();
        for route in &self.routes {
            let path: String = route
                .segments
                .iter()
                .map(|s| match s {
                    Segment::Literal(l) => format!("/{l}"),
                    Segment::Param(p) => format!("/{{{p}}}"),
                })
                .collect();
            let path = if path.is_empty() { "/".into() } else { path };
            let mut params: Vec<Value> = route
                .segments
                .iter()
                .filter_map(|s| match s {
                    Segment::Param(p) => Some(json!({
                        "name": p, "in": "path", "required": true, "schema": {"type": "string"}
                    })),
                    Segment::Literal(_) => None,
                })
                .collect();
            params.extend(route.query.iter().cloned());
            let mut op = Map::new();
            op.insert(
                "summary".into(),
                route
                    .summary
                    .clone()
                    .unwrap_or_else(|| route.pattern.clone())
                    .into(),
            );
            if !params.is_empty() {
                op.insert("parameters".into(), Value::Array(params));
            }
            if let Some(schema) = &route.body {
                op.insert(
                    "requestBody".into(),
                    json!({"required": true, "content": {"application/json": {"schema": schema}}}),
                );
            }
            let mut responses = Map::new();
            if let Some(refusal) = &route.unauthenticated {
                responses.insert(
                    "401".into(),
                    json!({"description": refusal.message, "content": {"application/json": {"schema": openapi::error_schema()}}}),
                );
            }
            for (status, description, schema) in &route.responses {
                let content = match schema {
                    Some(schema) => json!({"application/json": {"schema": schema}}),
                    None => json!({"application/json": {}}),
                };
                responses.insert(
                    status.to_string(),
                    json!({"description": description, "content": content}),
                );
            }
            responses.insert(
                "default".into(),
                json!({"description": "JSON answer; errors are {\"error\": message}"}),
            );
            op.insert("responses".into(), Value::Object(responses));
            if route.unauthenticated.is_some() {
                op.insert("security".into(), json!([{"bearer": []}]));
            }
            let entry = paths
                .entry(path)
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(methods) = entry {
                methods.insert(route.method.to_ascii_lowercase(), Value::Object(op));
            }
        }
        Value::Object(paths)
    }
}
