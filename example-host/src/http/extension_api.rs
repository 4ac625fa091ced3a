//! Everything outside the host's routes: `/{extension id}/...` goes to that
//! extension's handler, off the async workers.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use super::{
    authenticate_once, blocking, credentials, read_body_within, AppState, Credentials, HttpError,
    Resolved,
};
use host_sdk::BodyRule;
use serde_json::Value;

use crate::auth::AuthError;
use crate::extensions::{ExtRequest, Registry};
use crate::platform::Platform;

/// Splits `/svc/videos/x` into (`svc`, `/videos/x`).
fn split_mount(path: &str) -> (&str, String) {
    let trimmed = path.trim_start_matches('/');
    match trimmed.split_once('/') {
        Some((id, rest)) => (id, format!("/{rest}")),
        None => (trimmed, "/".to_string()),
    }
}

/// The query string without the caller's token: extensions never see it.
fn query_without_token(query: Option<&str>) -> String {
    let Some(q) = query else {
        return String::new();
    };
    q.split('&')
        .filter(|pair| !super::is_token_pair(pair))
        .collect::<Vec<_>>()
        .join("&")
}

pub async fn dispatch(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    resolved: Option<Extension<Resolved>>,
    body: Body,
) -> Result<Response, HttpError> {
    let (id, sub_path) = split_mount(uri.path());
    let Some(ext) = state.registry.get(id) else {
        return Err(HttpError::RouteNotFound(uri.path().to_string()));
    };
    // The route's own rule bounds what is read, before any of it is.
    let rule = ext.code.body_rule(method.as_str(), &sub_path);
    let limit = rule
        .max_bytes
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let id = id.to_string();
    let bytes = read_body_within(body, &headers, &state.limits, limit).await?;
    let token = credentials(&state.platform, &headers, &uri);
    let request = ExtRequest {
        method: method.as_str().to_string(),
        path: sub_path,
        query: query_without_token(uri.query()),
        headers: headers
            .iter()
            .filter(|(name, _)| *name != header::AUTHORIZATION && *name != header::COOKIE)
            .filter_map(|(name, value)| {
                value
                    .to_str()
                    .ok()
                    .map(|v| (name.as_str().to_string(), v.to_string()))
            })
            .collect(),
        body: bytes,
    };
    let platform = state.platform.clone();
    let registry = state.registry.clone();
    let call = format!("[{id}] {method} {}", uri.path());
    let resolved = resolved.map(|Extension(caller)| caller);
    let work = blocking(move || {
        call_extension(
            &platform,
            &registry,
            &id,
            rule,
            &token,
            resolved.as_ref(),
            request,
        )
    });
    // A handler that runs too long is answered 504; its thread finishes
    // (or not) in the background, and the other routes keep serving.
    let answer = match tokio::time::timeout(state.limits.extension_timeout, work).await {
        Ok(answer) => answer?,
        Err(_) => {
            log::warn!(
                "{call} exceeded {:?}; answered 504",
                state.limits.extension_timeout
            );
            return Err(HttpError::ExtensionTimeout);
        }
    };

    let status = StatusCode::from_u16(answer.status).map_err(|_| HttpError::Extension {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        message: "Internal extension error".into(),
    })?;
    let mut response = (status, answer.body).into_response();
    // No type for an answer without one (a 204).
    if answer.content_type.is_empty() {
        response.headers_mut().remove(header::CONTENT_TYPE);
    } else {
        let content_type = HeaderValue::from_str(answer.content_type.as_str())
            .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, content_type);
    }
    if let Some(allowed) = answer.allow {
        if let Ok(value) = HeaderValue::from_str(&allowed) {
            response.headers_mut().insert(header::ALLOW, value);
        }
    }
    Ok(response)
}

/// An extension's answer to one call, with the `Allow` of a 405.
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: bytes::Bytes,
    /// For a 405: the methods the path takes, comma-separated.
    pub allow: Option<String>,
}

/// One call of the extension mounted at `mount`, once the body is read
/// (within `rule`'s size): the nesting check, the caller, the handler.
/// Blocking: the HTTP layer runs it off the async workers; the test kit
/// calls it as it is.
pub fn call_extension(
    platform: &Platform,
    registry: &Registry,
    mount: &str,
    rule: BodyRule,
    credentials: &Credentials,
    resolved: Option<&Resolved>,
    request: ExtRequest,
) -> Result<Answer, HttpError> {
    if rule
        .max_depth
        .is_some_and(|max| host_sdk::json::nests_deeper_than(&request.body, max))
    {
        return Err(HttpError::BodyTooDeep);
    }
    let accountability = match authenticate_once(platform, credentials, resolved) {
        Ok(acc) => acc,
        Err(AuthError::InvalidToken) => return Err(HttpError::ExtensionInvalidToken),
        Err(AuthError::Store(e)) => {
            return Err(HttpError::Extension {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                message: e.to_string(),
            })
        }
    };
    let Some(ext) = registry.get(mount) else {
        return Err(HttpError::RouteNotFound(format!("/{mount}")));
    };
    let path = request.path.clone();
    let answer = Registry::handle(&ext, platform, accountability, request);
    // The extension's answer cannot carry headers: `Allow` comes from the
    // routes its OpenAPI paths describe.
    let allow = (answer.status == 405)
        .then(|| allowed_methods(&ext.openapi, &path))
        .filter(|methods| !methods.is_empty())
        .map(|methods| methods.join(", "));
    Ok(Answer {
        status: answer.status,
        content_type: answer.content_type,
        body: answer.body,
        allow,
    })
}

/// The methods an extension's OpenAPI `paths` (relative to its mount,
/// `{name}` for a parameter) give for `path`, upper-case, sorted.
fn allowed_methods(openapi: &Value, path: &str) -> Vec<String> {
    let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let fits = |template: &str| {
        let segments: Vec<&str> = template.split('/').filter(|s| !s.is_empty()).collect();
        segments.len() == parts.len()
            && segments
                .iter()
                .zip(&parts)
                .all(|(segment, part)| segment.starts_with('{') || segment == part)
    };
    let mut methods = Vec::new();
    for (template, operations) in openapi["paths"].as_object().into_iter().flatten() {
        if fits(template) {
            for method in operations.as_object().into_iter().flat_map(|o| o.keys()) {
                let method = method.to_ascii_uppercase();
                if !methods.contains(&method) {
                    methods.push(method);
                }
            }
        }
    }
    methods.sort();
    methods
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_methods_come_from_the_paths_that_fit() {
        let openapi = serde_json::json!({"paths": {
            "/recordings/{id}": {"get": {}, "patch": {}, "delete": {}},
            "/recordings/{id}/play": {"post": {}},
            "/recordings": {"get": {}, "post": {}},
        }});
        assert_eq!(
            allowed_methods(&openapi, "/recordings/abc"),
            ["DELETE", "GET", "PATCH"]
        );
        assert_eq!(allowed_methods(&openapi, "/recordings"), ["GET", "POST"]);
        assert!(allowed_methods(&openapi, "/nowhere").is_empty());
        assert!(allowed_methods(&Value::Null, "/recordings").is_empty());
    }

    #[test]
    fn mounts_split() {
        assert_eq!(
            split_mount("/svc/videos/a"),
            ("svc", "/videos/a".to_string())
        );
        assert_eq!(split_mount("/svc"), ("svc", "/".to_string()));
        assert_eq!(split_mount("/svc/"), ("svc", "/".to_string()));
    }

    #[test]
    fn tokens_are_removed_from_the_query() {
        assert_eq!(
            query_without_token(Some("a=1&access_token=x&b=2")),
            "a=1&b=2"
        );
        assert_eq!(
            query_without_token(Some("a=1&access%5Ftoken=x&%61ccess_token=y")),
            "a=1"
        );
        assert_eq!(query_without_token(Some("limit=5")), "limit=5");
        assert_eq!(query_without_token(None), "");
    }
}
