//! Every host route, declared once: method, path, handler, what the
//! OpenAPI document says of it (summary, query, body, who may call it) and
//! the route layer it needs. The axum router ([`host_router`]), the host's
//! paths in `/server/specs/oas` (`server_api::build_openapi`) and the ids
//! no extension may take (`extensions::loader::is_reserved`) are derived
//! from [`HOST_ROUTES`]; a new route is its handler and one entry here.

use std::collections::BTreeMap;

use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;
use serde_json::{json, Value};

use super::collection_api::{
    self as fixed, Folders, Permissions as PermissionRows, Policies, Roles, Users,
};
use super::{
    access_api, admin_app, assets_api, auth_api, comments_api, files_api, items_api, schema_api,
    server_api, users_api, AppState,
};

/// The methods of host routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Method {
    Get,
    Post,
    Patch,
    Delete,
}

impl Method {
    /// Lower case, as OpenAPI names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Post => "post",
            Method::Patch => "patch",
            Method::Delete => "delete",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Method::Get => MethodFilter::GET,
            Method::Post => MethodFilter::POST,
            Method::Patch => MethodFilter::PATCH,
            Method::Delete => MethodFilter::DELETE,
        }
    }
}

/// A documented query parameter: its name, JSON Schema type, and whether
/// the route refuses a request without it.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub kind: &'static str,
    pub required: bool,
}

const fn optional(name: &'static str, kind: &'static str) -> Param {
    Param {
        name,
        kind,
        required: false,
    }
}

/// The query parameters of a list of items (`/items/{collection}` and the
/// routes that read a collection as it does).
pub const ITEMS_QUERY: &[Param] = &[
    optional("filter", "string"),
    optional("search", "string"),
    optional("sort", "string"),
    optional("fields", "string"),
    optional("limit", "integer"),
    optional("offset", "integer"),
    optional("page", "integer"),
    optional("groupBy", "string"),
    optional("aggregate", "string"),
];

/// What `/collections`, `/fields` and `/relations` take
/// (`schema_model`'s query).
const SCHEMA_QUERY: &[Param] = &[
    optional("filter", "string"),
    optional("sort", "string"),
    optional("fields", "string"),
    optional("limit", "integer"),
    optional("offset", "integer"),
    optional("page", "integer"),
];

/// An asset's transformation and `?download` (`files::transform`).
const ASSET_QUERY: &[Param] = &[
    optional("width", "integer"),
    optional("height", "integer"),
    optional("fit", "string"),
    optional("quality", "integer"),
    optional("format", "string"),
    optional("withoutEnlargement", "boolean"),
    optional("transforms", "string"),
    optional("key", "string"),
    optional("download", "boolean"),
];

/// What a route reads from its query.
#[derive(Debug, Clone, Copy)]
pub enum Query {
    None,
    Params(&'static [Param]),
}

impl Query {
    pub fn params(self) -> &'static [Param] {
        match self {
            Query::None => &[],
            Query::Params(params) => params,
        }
    }
}

/// What a route reads as its body; the schema is a JSON Schema.
#[derive(Debug, Clone, Copy)]
pub enum Body {
    None,
    Json {
        required: bool,
        schema: fn() -> Value,
    },
    /// JSON, or `multipart/form-data` with the file's fields and bytes.
    JsonOrMultipart {
        schema: fn() -> Value,
    },
}

/// Who may call a route, as the OpenAPI document says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, credentials or not.
    Public,
    /// Anyone, under the caller's permissions (the public policy's when
    /// not signed in).
    Permissions,
    SignedIn,
    Admin,
}

/// A layer run on a route's own requests (and not on its 405s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    None,
    /// Credentials that match no active user are refused, even on a route
    /// that needs none (`super::reject_bad_credentials`).
    RejectBadCredentials,
}

/// One host route.
#[derive(Clone, Copy)]
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    pub summary: &'static str,
    pub access: Access,
    pub query: Query,
    pub body: Body,
    pub layer: Layer,
    handler: fn(MethodFilter) -> MethodRouter<AppState>,
}

impl Route {
    const fn new(
        method: Method,
        path: &'static str,
        access: Access,
        handler: fn(MethodFilter) -> MethodRouter<AppState>,
        summary: &'static str,
    ) -> Self {
        Route {
            method,
            path,
            summary,
            access,
            query: Query::None,
            body: Body::None,
            layer: Layer::None,
            handler,
        }
    }

    const fn query(self, params: &'static [Param]) -> Self {
        Route {
            query: Query::Params(params),
            ..self
        }
    }

    /// A required JSON body of this schema.
    const fn json(self, schema: fn() -> Value) -> Self {
        Route {
            body: Body::Json {
                required: true,
                schema,
            },
            ..self
        }
    }

    /// An optional JSON body of this schema.
    const fn optional_json(self, schema: fn() -> Value) -> Self {
        Route {
            body: Body::Json {
                required: false,
                schema,
            },
            ..self
        }
    }

    const fn json_or_multipart(self, schema: fn() -> Value) -> Self {
        Route {
            body: Body::JsonOrMultipart { schema },
            ..self
        }
    }

    const fn layer(self, layer: Layer) -> Self {
        Route { layer, ..self }
    }

    /// The path's parameters (`{name}` segments), in order.
    pub fn path_params(&self) -> impl Iterator<Item = &'static str> {
        self.path
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
    }

    /// The first segment of the path (`items` of `/items/{collection}`).
    pub fn first_segment(&self) -> &'static str {
        self.path
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or("")
    }
}

/// The handler of a route, for the method its declaration names.
macro_rules! handler {
    ($f:path) => {
        |filter| on(filter, $f)
    };
}

use Access::{Admin, Permissions, Public, SignedIn};
use Method::{Delete, Get, Patch, Post};

/// The host's routes.
pub const HOST_ROUTES: &[Route] = &[
    Route::new(
        Get,
        "/server/ping",
        Public,
        handler!(server_api::ping),
        "Liveness: answers pong",
    )
    .layer(Layer::RejectBadCredentials),
    Route::new(
        Get,
        "/server/health",
        Public,
        handler!(server_api::health),
        "Health of the platform and its database",
    )
    .layer(Layer::RejectBadCredentials),
    Route::new(
        Get,
        "/server/specs/oas",
        Public,
        handler!(server_api::openapi),
        "This OpenAPI document",
    )
    .layer(Layer::RejectBadCredentials),
    Route::new(
        Get,
        "/server/extensions",
        Admin,
        handler!(server_api::extensions),
        "Mounted extensions and their manifests (admin)",
    ),
    Route::new(
        Get,
        "/server/metrics",
        Admin,
        handler!(server_api::metrics),
        "Counters of the platform's work (admin)",
    ),
    Route::new(
        Get,
        "/items/{collection}",
        Permissions,
        handler!(items_api::read_many),
        "Read items (filter, sort, limit, offset, page, fields, aggregate, groupBy)",
    )
    .query(ITEMS_QUERY),
    Route::new(
        Post,
        "/items/{collection}",
        Permissions,
        handler!(items_api::create),
        "Create one item (object) or several (array)",
    )
    .json(any),
    Route::new(
        Patch,
        "/items/{collection}",
        Permissions,
        handler!(items_api::update_many),
        "Update many items in one transaction: {keys, data}, {query, data}, or an array of items each with its id",
    )
    .json(any),
    Route::new(
        Delete,
        "/items/{collection}",
        Permissions,
        handler!(items_api::delete_many),
        "Delete many items in one transaction: an array of keys, {keys} or {query} (204)",
    )
    .json(any),
    Route::new(
        Get,
        "/items/{collection}/{id}",
        Permissions,
        handler!(items_api::read_one),
        "Read one item",
    ),
    Route::new(
        Patch,
        "/items/{collection}/{id}",
        Permissions,
        handler!(items_api::update),
        "Update one item",
    )
    .json(any),
    Route::new(
        Delete,
        "/items/{collection}/{id}",
        Permissions,
        handler!(items_api::delete),
        "Delete one item",
    ),
    Route::new(
        Post,
        "/auth/login",
        Public,
        handler!(auth_api::login),
        "Sign in with email and password; mode json (tokens in the body), cookie (refresh token in an HttpOnly cookie) or session (access token in an HttpOnly cookie)",
    )
    .json(login_body),
    Route::new(
        Post,
        "/auth/refresh",
        Public,
        handler!(auth_api::refresh),
        "A new access token and refresh token for a session (the refresh token presented is used up)",
    )
    .optional_json(session_body),
    Route::new(
        Post,
        "/auth/logout",
        Public,
        handler!(auth_api::logout),
        "End a session (204)",
    )
    .optional_json(session_body),
    Route::new(
        Post,
        "/auth/password/request",
        Public,
        handler!(auth_api::password_request),
        "Mail a password-reset link to an active account (204 whatever the email)",
    )
    .json(password_request_body),
    Route::new(
        Post,
        "/auth/password/reset",
        Public,
        handler!(auth_api::password_reset),
        "Set a new password with a mailed reset token; the user's sessions end (204)",
    )
    .json(password_reset_body),
    Route::new(
        Get,
        "/users/me",
        SignedIn,
        handler!(users_api::read_me),
        "The signed-in user's own record",
    )
    .query(&[optional("fields", "string"), optional("filter", "string")]),
    Route::new(
        Patch,
        "/users/me",
        SignedIn,
        handler!(users_api::update_me),
        "Change one's own profile fields or password (never role, status or token)",
    )
    .json(any),
    Route::new(
        Post,
        "/users/register",
        Public,
        handler!(users_api::register),
        "Create an account when PUBLIC_REGISTRATION is on (204 whether or not the email was taken)",
    )
    .json(register_body),
    Route::new(
        Get,
        "/users/register/verify-email",
        Public,
        handler!(users_api::verify_email),
        "Verify a registration with its mailed token: the account is active (302 to /admin)",
    )
    .query(&[Param {
        name: "token",
        kind: "string",
        required: true,
    }]),
    Route::new(
        Get,
        "/users",
        Permissions,
        handler!(fixed::read_many::<Users>),
        "Read users under the caller's permissions (as /items/platform_users)",
    )
    .query(ITEMS_QUERY),
    Route::new(
        Post,
        "/users",
        Permissions,
        handler!(fixed::create::<Users>),
        "Create one user (object) or several (array), as /items/platform_users",
    )
    .json(any),
    Route::new(
        Patch,
        "/users",
        Permissions,
        handler!(fixed::update_many::<Users>),
        "Update many users: {keys, data}, {query, data}, or an array of users each with its id",
    )
    .json(any),
    Route::new(
        Delete,
        "/users",
        Permissions,
        handler!(fixed::delete_many::<Users>),
        "Delete many users: an array of keys, {keys} or {query} (204)",
    )
    .json(any),
    Route::new(
        Get,
        "/users/{id}",
        Permissions,
        handler!(fixed::read_one::<Users>),
        "Read one user (as /items/platform_users/{id})",
    ),
    Route::new(
        Patch,
        "/users/{id}",
        Permissions,
        handler!(fixed::update::<Users>),
        "Update one user",
    )
    .json(any),
    Route::new(
        Delete,
        "/users/{id}",
        Permissions,
        handler!(fixed::delete::<Users>),
        "Delete one user (204)",
    ),
    Route::new(
        Get,
        "/roles",
        Permissions,
        handler!(fixed::read_many::<Roles>),
        "Read roles under the caller's permissions (as /items/platform_roles)",
    )
    .query(ITEMS_QUERY),
    Route::new(
        Post,
        "/roles",
        Permissions,
        handler!(fixed::create::<Roles>),
        "Create one role (object) or several (array)",
    )
    .json(any),
    Route::new(
        Patch,
        "/roles",
        Permissions,
        handler!(fixed::update_many::<Roles>),
        "Update many roles: {keys, data}, {query, data}, or an array each with its id",
    )
    .json(any),
    Route::new(
        Delete,
        "/roles",
        Permissions,
        handler!(fixed::delete_many::<Roles>),
        "Delete many roles: an array of keys, {keys} or {query} (204)",
    )
    .json(any),
    Route::new(
        Get,
        "/roles/me",
        SignedIn,
        handler!(access_api::roles_me),
        "The caller's role and its parents, as far as the caller may read them",
    )
    .query(ITEMS_QUERY),
    Route::new(
        Get,
        "/roles/{id}",
        Permissions,
        handler!(fixed::read_one::<Roles>),
        "Read one role (403 when missing, as Directus answers)",
    ),
    Route::new(
        Patch,
        "/roles/{id}",
        Permissions,
        handler!(fixed::update::<Roles>),
        "Update one role",
    )
    .json(any),
    Route::new(
        Delete,
        "/roles/{id}",
        Permissions,
        handler!(fixed::delete::<Roles>),
        "Delete one role (204)",
    ),
    Route::new(
        Get,
        "/policies",
        Permissions,
        handler!(fixed::read_many::<Policies>),
        "Read policies under the caller's permissions (as /items/platform_policies)",
    )
    .query(ITEMS_QUERY),
    Route::new(
        Post,
        "/policies",
        Permissions,
        handler!(fixed::create::<Policies>),
        "Create one policy (object) or several (array)",
    )
    .json(any),
    Route::new(
        Patch,
        "/policies",
        Permissions,
        handler!(fixed::update_many::<Policies>),
        "Update many policies: {keys, data}, {query, data}, or an array each with its id",
    )
    .json(any),
    Route::new(
        Delete,
        "/policies",
        Permissions,
        handler!(fixed::delete_many::<Policies>),
        "Delete many policies: an array of keys, {keys} or {query} (204)",
    )
    .json(any),
    Route::new(
        Get,
        "/policies/me/globals",
        Public,
        handler!(access_api::policy_globals),
        "The caller's policies' flags: {app_access, admin_access, enforce_tfa} ({app_access: false} when not signed in)",
    ),
    Route::new(
        Get,
        "/policies/{id}",
        Permissions,
        handler!(fixed::read_one::<Policies>),
        "Read one policy (403 when missing, as Directus answers)",
    ),
    Route::new(
        Patch,
        "/policies/{id}",
        Permissions,
        handler!(fixed::update::<Policies>),
        "Update one policy",
    )
    .json(any),
    Route::new(
        Delete,
        "/policies/{id}",
        Permissions,
        handler!(fixed::delete::<Policies>),
        "Delete one policy (204)",
    ),
    Route::new(
        Get,
        "/permissions",
        Permissions,
        handler!(fixed::read_many::<PermissionRows>),
        "Read permissions under the caller's permissions (as /items/platform_permissions)",
    )
    .query(ITEMS_QUERY),
    Route::new(
        Post,
        "/permissions",
        Permissions,
        handler!(fixed::create::<PermissionRows>),
        "Create one permission (object) or several (array); each must name an action, a collection, fields and filters the platform can apply",
    )
    .json(any),
    Route::new(
        Patch,
        "/permissions",
        Permissions,
        handler!(fixed::update_many::<PermissionRows>),
        "Update many permissions: {keys, data}, {query, data}, or an array each with its id",
    )
    .json(any),
    Route::new(
        Delete,
        "/permissions",
        Permissions,
        handler!(fixed::delete_many::<PermissionRows>),
        "Delete many permissions: an array of keys, {keys} or {query} (204)",
    )
    .json(any),
    Route::new(
        Get,
        "/permissions/me",
        SignedIn,
        handler!(access_api::permissions_me),
        "The caller's effective permissions: per collection and action, access (none, partial, full), fields and presets",
    ),
    Route::new(
        Get,
        "/permissions/{id}",
        Permissions,
        handler!(fixed::read_one::<PermissionRows>),
        "Read one permission (403 when missing, as Directus answers)",
    ),
    Route::new(
        Patch,
        "/permissions/{id}",
        Permissions,
        handler!(fixed::update::<PermissionRows>),
        "Update one permission",
    )
    .json(any),
    Route::new(
        Delete,
        "/permissions/{id}",
        Permissions,
        handler!(fixed::delete::<PermissionRows>),
        "Delete one permission (204)",
    ),
    Route::new(
        Get,
        "/comments",
        Permissions,
        handler!(comments_api::read_many),
        "Read the comments on the collections the caller may read (query parameters and aggregate as /items)",
    )
    .query(ITEMS_QUERY),
    Route::new(
        Post,
        "/comments",
        Permissions,
        handler!(comments_api::create),
        "Comment on an item the caller may read, as the caller",
    )
    .json(comment_body),
    Route::new(
        Get,
        "/comments/{id}",
        Permissions,
        handler!(comments_api::read_one),
        "Read one comment",
    ),
    Route::new(
        Patch,
        "/comments/{id}",
        Permissions,
        handler!(comments_api::update),
        "Change one's own comment (administrators: any)",
    )
    .json(comment_change_body),
    Route::new(
        Delete,
        "/comments/{id}",
        Permissions,
        handler!(comments_api::delete),
        "Delete one's own comment (administrators: any)",
    ),
    Route::new(
        Get,
        "/collections",
        Permissions,
        handler!(schema_api::collections),
        "The collections the caller may read, as Directus's collection objects (filter, sort, limit, fields)",
    )
    .query(SCHEMA_QUERY),
    Route::new(
        Get,
        "/collections/{collection}",
        Permissions,
        handler!(schema_api::collection),
        "One collection the caller may read",
    ),
    Route::new(
        Get,
        "/fields",
        Permissions,
        handler!(schema_api::fields),
        "The fields the caller may read, of every collection (filter, sort, limit, fields)",
    )
    .query(SCHEMA_QUERY),
    Route::new(
        Get,
        "/fields/{collection}",
        Permissions,
        handler!(schema_api::fields_of),
        "The fields the caller may read of one collection",
    )
    .query(SCHEMA_QUERY),
    Route::new(
        Get,
        "/fields/{collection}/{field}",
        Permissions,
        handler!(schema_api::field),
        "One field the caller may read",
    ),
    Route::new(
        Get,
        "/relations",
        Permissions,
        handler!(schema_api::relations),
        "The many-to-one relations between what the caller may read (filter, sort, limit, fields)",
    )
    .query(SCHEMA_QUERY),
    Route::new(
        Get,
        "/relations/{collection}",
        Permissions,
        handler!(schema_api::relations_of),
        "The relations whose many side is this collection",
    )
    .query(SCHEMA_QUERY),
    Route::new(
        Get,
        "/relations/{collection}/{field}",
        Permissions,
        handler!(schema_api::relation),
        "The relation of one reference field",
    ),
    Route::new(
        Post,
        "/collections",
        Permissions,
        handler!(schema_api::refuse_write),
        "Refused (403 FORBIDDEN): the schema changes only through migrations",
    ),
    Route::new(
        Patch,
        "/collections/{collection}",
        Permissions,
        handler!(schema_api::refuse_write),
        "Refused (403 FORBIDDEN): the schema changes only through migrations",
    ),
    Route::new(
        Delete,
        "/collections/{collection}",
        Permissions,
        handler!(schema_api::refuse_write),
        "Refused (403 FORBIDDEN): the schema changes only through migrations",
    ),
    Route::new(
        Post,
        "/fields/{collection}",
        Permissions,
        handler!(schema_api::refuse_write),
        "Refused (403 FORBIDDEN): the schema changes only through migrations",
    ),
    Route::new(
        Patch,
        "/fields/{collection}/{field}",
        Permissions,
        handler!(schema_api::refuse_write),
        "Refused (403 FORBIDDEN): the schema changes only through migrations",
    ),
    Route::new(
        Delete,
        "/fields/{collection}/{field}",
        Permissions,
        handler!(schema_api::refuse_write),
        "Refused (403 FORBIDDEN): the schema changes only through migrations",
    ),
    Route::new(
        Post,
        "/relations",
        Permissions,
        handler!(schema_api::refuse_write),
        "Refused (403 FORBIDDEN): the schema changes only through migrations",
    ),
    Route::new(
        Patch,
        "/relations/{collection}/{field}",
        Permissions,
        handler!(schema_api::refuse_write),
        "Refused (403 FORBIDDEN): the schema changes only through migrations",
    ),
    Route::new(
        Delete,
        "/relations/{collection}/{field}",
        Permissions,
        handler!(schema_api::refuse_write),
        "Refused (403 FORBIDDEN): the schema changes only through migrations",
    ),
    Route::new(
        Get,
        "/files",
        Permissions,
        handler!(files_api::read_many),
        "Read file records (as /items/platform_files)",
    )
    .query(ITEMS_QUERY),
    Route::new(
        Post,
        "/files",
        Permissions,
        handler!(files_api::create),
        "Upload files (multipart/form-data, fields before each file) or create a record alone (JSON with type)",
    )
    .json_or_multipart(any),
    Route::new(
        Get,
        "/files/{id}",
        Permissions,
        handler!(files_api::read_one),
        "Read one file record",
    ),
    Route::new(
        Patch,
        "/files/{id}",
        Permissions,
        handler!(files_api::update),
        "Change a file record (JSON) or its bytes (multipart/form-data)",
    )
    .json_or_multipart(any),
    Route::new(
        Delete,
        "/files/{id}",
        Permissions,
        handler!(files_api::delete),
        "Delete a file record and its bytes (204)",
    ),
    Route::new(
        Get,
        "/folders",
        Permissions,
        handler!(fixed::read_many::<Folders>),
        "Read folders (as /items/platform_folders)",
    )
    .query(ITEMS_QUERY),
    Route::new(
        Post,
        "/folders",
        Permissions,
        handler!(fixed::create::<Folders>),
        "Create a folder",
    )
    .json(any),
    Route::new(
        Get,
        "/folders/{id}",
        Permissions,
        handler!(fixed::read_one::<Folders>),
        "Read one folder",
    ),
    Route::new(
        Patch,
        "/folders/{id}",
        Permissions,
        handler!(fixed::update::<Folders>),
        "Change a folder",
    )
    .json(any),
    Route::new(
        Delete,
        "/folders/{id}",
        Permissions,
        handler!(fixed::delete::<Folders>),
        "Delete a folder (204)",
    ),
    Route::new(
        Get,
        "/assets/{id}",
        Permissions,
        handler!(assets_api::asset),
        "A file's bytes: Range, ETag and Last-Modified, ?download, image transformations (width, height, fit, quality, format, withoutEnlargement, transforms, key)",
    )
    .query(ASSET_QUERY),
    Route::new(
        Get,
        "/assets/{id}/{filename}",
        Permissions,
        handler!(assets_api::asset_named),
        "A file's bytes, with a file name in the path",
    )
    .query(ASSET_QUERY),
    Route::new(
        Get,
        "/admin",
        Public,
        handler!(admin_app::root),
        "The admin app: on to /admin/ (308)",
    ),
    Route::new(
        Get,
        "/admin/",
        Public,
        handler!(admin_app::index),
        "The admin app (HTML)",
    ),
    Route::new(
        Get,
        "/admin/{*path}",
        Public,
        handler!(admin_app::path),
        "A file of the admin app, or its page for the app's own paths (/admin/content/videos, /admin/reset-password?token=...)",
    ),
];

/// Any JSON the handler reads itself.
fn any() -> Value {
    json!({})
}

fn string() -> Value {
    json!({"type": "string"})
}

fn object(required: &[&str], properties: &[(&str, Value)]) -> Value {
    let properties: serde_json::Map<String, Value> = properties
        .iter()
        .map(|(name, schema)| (name.to_string(), schema.clone()))
        .collect();
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

fn mode() -> Value {
    json!({"type": "string", "enum": ["json", "cookie", "session"], "default": "json"})
}

fn login_body() -> Value {
    object(
        &["email", "password"],
        &[
            ("email", string()),
            ("password", string()),
            ("mode", mode()),
        ],
    )
}

fn session_body() -> Value {
    object(&[], &[("refresh_token", string()), ("mode", mode())])
}

fn password_request_body() -> Value {
    object(&["email"], &[("email", string()), ("reset_url", string())])
}

fn password_reset_body() -> Value {
    object(
        &["token", "password"],
        &[("token", string()), ("password", string())],
    )
}

fn register_body() -> Value {
    object(
        &["email", "password"],
        &[
            ("email", string()),
            ("password", string()),
            ("first_name", string()),
            ("last_name", string()),
            ("verification_url", string()),
        ],
    )
}

fn comment_body() -> Value {
    object(
        &["collection", "item", "comment"],
        &[
            ("collection", string()),
            ("item", string()),
            ("comment", string()),
        ],
    )
}

fn comment_change_body() -> Value {
    object(&[], &[("comment", string())])
}

/// The distinct first path segments of the host's routes, which no
/// extension may take (handed to `extensions::loader` at start).
pub fn first_segments() -> Vec<&'static str> {
    let mut segments: Vec<&'static str> = HOST_ROUTES.iter().map(|r| r.first_segment()).collect();
    segments.sort_unstable();
    segments.dedup();
    segments
}

/// The host's routes as an axum router: the methods of one path merged,
/// each route with its layer.
pub(crate) fn host_router(state: &AppState) -> Router<AppState> {
    let mut paths: BTreeMap<&'static str, MethodRouter<AppState>> = BTreeMap::new();
    for route in HOST_ROUTES {
        let mut methods = (route.handler)(route.method.filter());
        match route.layer {
            Layer::None => {}
            Layer::RejectBadCredentials => {
                methods = methods.route_layer(axum::middleware::from_fn_with_state(
                    state.clone(),
                    super::reject_bad_credentials,
                ));
            }
        }
        let merged = match paths.remove(route.path) {
            Some(earlier) => earlier.merge(methods),
            None => methods,
        };
        paths.insert(route.path, merged);
    }
    paths
        .into_iter()
        .fold(Router::new(), |router, (path, methods)| {
            router.route(path, methods)
        })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::HOST_ROUTES;

    #[test]
    fn every_first_segment_is_reserved() {
        crate::extensions::loader::reserve_host_segments(super::first_segments());
        for route in HOST_ROUTES {
            let first = route.first_segment();
            assert!(
                crate::extensions::loader::is_reserved(first),
                "{}: an extension could be mounted at /{first}",
                route.path
            );
        }
    }

    #[test]
    fn each_method_and_path_is_declared_once() {
        let mut seen = BTreeSet::new();
        for route in HOST_ROUTES {
            assert!(
                seen.insert((route.path, route.method)),
                "{} {} declared twice",
                route.method.as_str(),
                route.path
            );
        }
    }
}
