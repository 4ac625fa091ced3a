//! `/server/*`: liveness, health and the OpenAPI document.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::as_caller::AsCaller;
use super::routes::{Access, Body, Route, HOST_ROUTES};
use super::{AppState, HttpError};
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
        platform_store::storage::read_with(platform.store.as_ref(), |conn| {
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
        Err(crate::platform::PlatformError::forbidden().into())
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
        "database_full_scan_rows": state.platform.store.full_scan_rows(),
    }})))
}

/// The routes an extension serves, from its OpenAPI paths (relative to
/// its mount): `{method, path}` with the mount, in path order.
fn extension_routes(mount: &str, openapi: &Value) -> Vec<Value> {
    let Some(paths) = openapi.get("paths").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut routes: Vec<(String, String)> = paths
        .iter()
        .flat_map(|(path, operations)| {
            let methods = operations.as_object().into_iter().flat_map(|o| o.keys());
            methods.map(move |m| (format!("{mount}{path}"), m.to_uppercase()))
        })
        .collect();
    routes.sort();
    routes
        .into_iter()
        .map(|(path, method)| json!({"method": method, "path": path}))
        .collect()
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
            let mount = format!("/{}", e.id);
            json!({
                "id": e.id,
                "name": e.name,
                "version": e.version,
                "sdk_version": e.sdk_version,
                "abi_version": e.abi_version,
                "file": e.path.display().to_string(),
                "routes": extension_routes(&mount, &e.openapi),
                "mount": mount,
                "schedules": e.schedules.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(Json(json!({ "data": list })))
}

pub async fn openapi(State(state): State<AppState>, call: AsCaller) -> Result<Response, HttpError> {
    // Built at each request: a reload may have changed the extensions, a
    // migration the model, and the caller decides what of it they see.
    let items = call
        .run(|c| Ok(crate::schema_model::item_schemas(c.platform, &c.who)?))
        .await?;
    let mut doc = build_openapi(&state.registry);
    add_items(&mut doc, &items);
    Ok(Json(doc).into_response())
}

/// The items of each collection the caller may read, from the data model
/// (`schema_model::item_schemas`, the model `/fields` answers from): a
/// schema per collection (`Items<Name>`, as Directus names them) and its
/// `/items/<name>` and `/items/<name>/{id}` reads.
fn add_items(doc: &mut Value, items: &[(String, Value)]) {
    for (collection, schema) in items {
        let name = format!("Items{}", pascal_case(collection));
        let reference = json!({"$ref": format!("#/components/schemas/{name}")});
        doc["components"]["schemas"][&name] = schema.clone();
        let answer = |data: Value| {
            json!({
                "200": {"description": "The items", "content": {"application/json": {"schema": {
                    "type": "object", "properties": {"data": data}}}}},
                "default": {"description": "JSON response (an error: `{errors: [...]}`)"},
            })
        };
        doc["paths"][format!("/items/{collection}")] = json!({"get": {
            "summary": format!("Read items of {collection}"),
            "responses": answer(json!({"type": "array", "items": reference.clone()})),
        }});
        doc["paths"][format!("/items/{collection}/{{id}}")] = json!({"get": {
            "summary": format!("Read one item of {collection}"),
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": answer(reference),
        }});
    }
}

/// `videos_models` → `VideosModels`.
fn pascal_case(name: &str) -> String {
    name.split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// The OpenAPI operation of a host route.
fn operation(route: &Route) -> Value {
    let mut parameters: Vec<Value> = route
        .path_params()
        .map(|p| json!({"name": p, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect();
    parameters.extend(route.query.params().iter().map(|p| {
        json!({"name": p.name, "in": "query", "required": p.required, "schema": {"type": p.kind}})
    }));
    let mut op = json!({"summary": route.summary, "responses": {"default": {"description": "JSON response"}}});
    if !parameters.is_empty() {
        op["parameters"] = Value::Array(parameters);
    }
    match route.body {
        Body::None => {}
        Body::Json { required, schema } => {
            op["requestBody"] = json!({"required": required, "content": {"application/json": {"schema": schema()}}});
        }
        Body::JsonOrMultipart { schema } => {
            op["requestBody"] = json!({"required": true, "content": {
                "application/json": {"schema": schema()},
                "multipart/form-data": {"schema": {"type": "object", "properties": {
                    "title": {"type": "string"}, "folder": {"type": "string"},
                    "storage": {"type": "string"},
                    "file": {"type": "string", "format": "binary"}}}},
            }});
        }
    }
    match route.access {
        Access::Public => {}
        Access::Permissions => op["security"] = json!([{"bearer": []}, {"session": []}, {}]),
        Access::SignedIn | Access::Admin => {
            op["security"] = json!([{"bearer": []}, {"session": []}])
        }
    }
    op
}

/// The platform's OpenAPI document: the host's routes plus each
/// extension's part, prefixed with its mount point.
pub fn build_openapi(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for route in HOST_ROUTES {
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        entry[route.method.as_str()] = operation(route);
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
    use super::{build_openapi, HOST_ROUTES};
    use crate::extensions::Registry;

    #[test]
    fn the_document_lists_every_host_route_with_its_parameters() {
        let doc = build_openapi(&Registry::default());
        for route in HOST_ROUTES {
            let op = &doc["paths"][route.path][route.method.as_str()];
            assert!(
                op.is_object(),
                "{} {} not documented",
                route.method.as_str(),
                route.path
            );
            let listed: Vec<&str> = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["name"].as_str())
                .collect();
            let declared: Vec<&str> = route
                .path_params()
                .chain(route.query.params().iter().map(|p| p.name))
                .collect();
            assert_eq!(listed, declared, "{} {}", route.method.as_str(), route.path);
        }
    }
}
