//! `/server/*`: liveness, health and the OpenAPI document.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Map, Value};

use super::AppState;
use crate::extensions::Registry;

pub async fn ping() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "pong",
    )
}

pub async fn health(State(state): State<AppState>) -> impl IntoResponse {
    let platform = state.platform.clone();
    let ok = super::blocking(move || {
        crate::storage::read_with(platform.store.as_ref(), |conn| {
            let _ = conn;
            Ok(())
        })
        .map_err(|e| super::HttpError::Internal(e.to_string()))
    })
    .await
    .is_ok();
    let status = if ok {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({"status": if ok { "ok" } else { "error" }})),
    )
}

/// Refuses callers without admin access.
async fn require_admin(
    state: &AppState,
    headers: &axum::http::HeaderMap,
    uri: &axum::http::Uri,
) -> Result<(), super::HttpError> {
    let platform = state.platform.clone();
    let token = super::credentials(&state.platform, headers, uri);
    let who = super::blocking(move || Ok(super::authenticate(&platform, &token)?)).await?;
    if who.is_some_and(|a| a.admin) {
        Ok(())
    } else {
        Err(crate::items::ItemsError::forbidden().into())
    }
}

/// Counters of the platform's work since start (administrators only).
pub async fn metrics(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
) -> Result<Json<Value>, super::HttpError> {
    require_admin(&state, &headers, &uri).await?;
    let m = &state.platform.metrics;
    let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    Ok(Json(json!({"data": {
        "items_calls": load(&m.items_calls),
        "extension_calls": load(&m.extension_calls),
        "events_delivered": load(&m.events_delivered),
        "events_before_commit": load(&m.events_before_commit),
        "database_round_trips": state.platform.store.round_trips(),
        "password_hashes": load(&crate::credentials::PASSWORD_HASHES),
        "database_rows_read": state.platform.store.rows_read(),
    }})))
}

/// The mounted extensions and their manifests (administrators only).
pub async fn extensions(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
) -> Result<Json<Value>, super::HttpError> {
    require_admin(&state, &headers, &uri).await?;
    let list: Vec<Value> = state
        .registry
        .all()
        .iter()
        .map(|e| {
            json!({
                "id": e.id,
                "name": e.name,
                "version": e.version,
                "sdk_version": e.sdk_version,
                "file": e.path.display().to_string(),
                "mount": format!("/{}", e.id),
                "schedules": e.schedules.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(Json(json!({ "data": list })))
}

pub async fn openapi(State(state): State<AppState>) -> impl IntoResponse {
    // Built at each request: a reload may have changed the extensions.
    Json(build_openapi(&state.registry))
}

/// Whether a host route's body is required, and its schema.
fn request_schema(path: &str) -> (bool, Value) {
    let string = json!({"type": "string"});
    let mode = json!({"type": "string", "enum": ["json", "cookie", "session"], "default": "json"});
    match path {
        "/auth/login" => (
            true,
            json!({"type": "object", "required": ["email", "password"], "properties": {
                "email": string, "password": string, "mode": mode}}),
        ),
        "/auth/refresh" | "/auth/logout" => (
            false,
            json!({"type": "object", "properties": {"refresh_token": string, "mode": mode}}),
        ),
        "/users/register" => (
            true,
            json!({"type": "object", "required": ["email", "password"], "properties": {
                "email": string, "password": string, "first_name": string, "last_name": string}}),
        ),
        "/comments" => (
            true,
            json!({"type": "object", "required": ["collection", "item", "comment"], "properties": {
                "collection": string, "item": string, "comment": string}}),
        ),
        "/comments/{id}" => (
            true,
            json!({"type": "object", "properties": {"comment": string}}),
        ),
        _ => (true, json!({})),
    }
}

/// The platform's OpenAPI document: the host's routes plus each
/// extension's part, prefixed with its mount point.
/// The host's own routes: path, method, summary.
const HOST_ROUTES: &[(&str, &str, &str)] = &[
    ("/server/ping", "get", "Liveness: answers pong"),
    (
        "/server/health",
        "get",
        "Health of the platform and its database",
    ),
    ("/server/specs/oas", "get", "This OpenAPI document"),
    (
        "/server/extensions",
        "get",
        "Mounted extensions and their manifests (admin)",
    ),
    (
        "/server/metrics",
        "get",
        "Counters of the platform's work (admin)",
    ),
    (
        "/items/{collection}",
        "get",
        "Read items (filter, sort, limit, offset, page, fields, aggregate, groupBy)",
    ),
    (
        "/items/{collection}",
        "post",
        "Create one item (object) or several (array)",
    ),
    (
        "/items/{collection}",
        "patch",
        "Update many items in one transaction: {keys, data}, {query, data}, or an array of items each with its id",
    ),
    (
        "/items/{collection}",
        "delete",
        "Delete many items in one transaction: an array of keys, {keys} or {query} (204)",
    ),
    ("/items/{collection}/{id}", "get", "Read one item"),
    ("/items/{collection}/{id}", "patch", "Update one item"),
    ("/items/{collection}/{id}", "delete", "Delete one item"),
    (
        "/auth/login",
        "post",
        "Sign in with email and password; mode json (tokens in the body), cookie (refresh token in an HttpOnly cookie) or session (access token in an HttpOnly cookie)",
    ),
    (
        "/auth/refresh",
        "post",
        "A new access token and refresh token for a session (the refresh token presented is used up)",
    ),
    ("/auth/logout", "post", "End a session (204)"),
    ("/users/me", "get", "The signed-in user's own record"),
    (
        "/users/me",
        "patch",
        "Change one's own profile fields or password (never role, status or token)",
    ),
    (
        "/users/register",
        "post",
        "Create an account when PUBLIC_REGISTRATION is on (204 whether or not the email was taken)",
    ),
    (
        "/users",
        "get",
        "Read users under the caller's permissions (as /items/platform_users)",
    ),
    (
        "/users",
        "post",
        "Create one user (object) or several (array), as /items/platform_users",
    ),
    (
        "/users",
        "patch",
        "Update many users: {keys, data}, {query, data}, or an array of users each with its id",
    ),
    (
        "/users",
        "delete",
        "Delete many users: an array of keys, {keys} or {query} (204)",
    ),
    ("/users/{id}", "get", "Read one user (as /items/platform_users/{id})"),
    ("/users/{id}", "patch", "Update one user"),
    ("/users/{id}", "delete", "Delete one user (204)"),
    (
        "/comments",
        "get",
        "Read the comments on the collections the caller may read (query parameters and aggregate as /items)",
    ),
    (
        "/comments",
        "post",
        "Comment on an item the caller may read, as the caller",
    ),
    ("/comments/{id}", "get", "Read one comment"),
    (
        "/comments/{id}",
        "patch",
        "Change one's own comment (administrators: any)",
    ),
    (
        "/comments/{id}",
        "delete",
        "Delete one's own comment (administrators: any)",
    ),
    ("/files", "get", "Read file records (as /items/platform_files)"),
    (
        "/files",
        "post",
        "Upload files (multipart/form-data, fields before each file) or create a record alone (JSON with type)",
    ),
    ("/files/{id}", "get", "Read one file record"),
    (
        "/files/{id}",
        "patch",
        "Change a file record (JSON) or its bytes (multipart/form-data)",
    ),
    ("/files/{id}", "delete", "Delete a file record and its bytes (204)"),
    ("/folders", "get", "Read folders (as /items/platform_folders)"),
    ("/folders", "post", "Create a folder"),
    ("/folders/{id}", "get", "Read one folder"),
    ("/folders/{id}", "patch", "Change a folder"),
    ("/folders/{id}", "delete", "Delete a folder (204)"),
    (
        "/assets/{id}",
        "get",
        "A file's bytes: Range, ETag and Last-Modified, ?download, image transformations (width, height, fit, quality, format, withoutEnlargement, transforms, key)",
    ),
    (
        "/assets/{id}/{filename}",
        "get",
        "A file's bytes, with a file name in the path",
    ),
];

pub fn build_openapi(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for &(path, method, summary) in HOST_ROUTES {
        let mut parameters: Vec<Value> = ["collection", "id", "filename"]
            .iter()
            .filter(|p| path.contains(&format!("{{{p}}}")))
            .map(|p| json!({"name": p, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let lists = ["/items/{collection}", "/users", "/comments"];
        if lists.contains(&path) && method == "get" {
            for (name, kind) in [
                ("filter", "string"),
                ("search", "string"),
                ("sort", "string"),
                ("fields", "string"),
                ("limit", "integer"),
                ("offset", "integer"),
                ("page", "integer"),
                ("groupBy", "string"),
                ("aggregate", "string"),
            ] {
                parameters.push(json!({"name": name, "in": "query", "required": false, "schema": {"type": kind}}));
            }
        }
        let mut op =
            json!({"summary": summary, "responses": {"default": {"description": "JSON response"}}});
        if !parameters.is_empty() {
            op["parameters"] = Value::Array(parameters);
        }
        if method == "post" || method == "patch" {
            let (required, schema) = request_schema(path);
            op["requestBody"] =
                json!({"required": required, "content": {"application/json": {"schema": schema}}});
            if path.starts_with("/files") {
                op["requestBody"]["content"]["multipart/form-data"] = json!({"schema": {"type": "object", "properties": {
                        "title": {"type": "string"}, "folder": {"type": "string"},
                        "storage": {"type": "string"},
                        "file": {"type": "string", "format": "binary"}}}});
            }
        }
        let served_to_anyone = [
            "/items",
            "/users",
            "/comments",
            "/files",
            "/folders",
            "/assets",
        ];
        if served_to_anyone.iter().any(|p| path.starts_with(p)) && path != "/users/register" {
            op["security"] = json!([{"bearer": []}, {"session": []}, {}]);
        } else if path == "/server/extensions" || path == "/server/metrics" {
            op["security"] = json!([{"bearer": []}, {"session": []}]);
        }
        let entry = paths.entry(path.to_string()).or_insert_with(|| json!({}));
        entry[method] = op;
    }
    for ext in registry.all().iter() {
        if let Some(ext_paths) = ext.openapi.get("paths").and_then(Value::as_object) {
            for (path, ops) in ext_paths {
                let full = if path == "/" {
                    format!("/{}", ext.id)
                } else {
                    format!("/{}{}", ext.id, path)
                };
                paths.insert(full, ops.clone());
            }
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "example-host", "version": env!("CARGO_PKG_VERSION")},
        "components": {"securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer"},
            "session": {"type": "apiKey", "in": "cookie", "name": "directus_session_token"},
        }},
        "paths": paths,
    })
}

#[cfg(test)]
mod tests {
    use super::HOST_ROUTES;

    #[test]
    fn no_extension_may_take_a_host_routes_first_segment() {
        for (path, _, _) in HOST_ROUTES {
            let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
            assert!(
                crate::extensions::loader::is_reserved(first),
                "{path}: an extension could be mounted at /{first}"
            );
        }
    }
}
