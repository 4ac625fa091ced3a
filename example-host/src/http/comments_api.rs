//! `/comments` and `/comments/:id` (Directus 11's comments): requests in,
//! answers out; what they do is `crate::comments`.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::items_api::{caller, data_text, parse_query_string, ItemPath};
use super::{blocking, read_body, AppState, HttpError};
use crate::comments;

/// The body of a write, as a JSON value.
fn json_body(bytes: &[u8]) -> Result<Value, HttpError> {
    serde_json::from_slice(bytes).map_err(|_| HttpError::InvalidPayload("Invalid JSON body".into()))
}

pub async fn read_many(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, HttpError> {
    let platform = state.platform.clone();
    blocking(move || {
        let who = caller(&platform, &headers, &uri)?;
        let q = parse_query_string(uri.query())?;
        if q.aggregate.is_some() {
            let rows = comments::aggregate(&platform, &who, &q)?;
            Ok(Json(json!({ "data": rows })).into_response())
        } else {
            Ok(data_text(&comments::list(&platform, &who, &q)?))
        }
    })
    .await
}

pub async fn read_one(
    State(state): State<AppState>,
    ItemPath(id): ItemPath<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, HttpError> {
    let platform = state.platform.clone();
    blocking(move || {
        let who = caller(&platform, &headers, &uri)?;
        let q = parse_query_string(uri.query())?;
        Ok(data_text(&comments::read_one(&platform, &who, &id, &q)?))
    })
    .await
}

/// The comment just written, read back with the request's query; 204 when
/// the caller may not read it.
fn read_back(
    platform: &crate::items::Platform,
    who: &crate::items::Who,
    id: &str,
    uri: &Uri,
) -> Result<Response, HttpError> {
    let q = parse_query_string(uri.query())?;
    match comments::read_one(platform, who, id, &q) {
        Ok(record) => Ok(data_text(&record)),
        Err(comments::CommentError::Forbidden) => Ok(StatusCode::NO_CONTENT.into_response()),
        Err(e) => Err(e.into()),
    }
}

pub async fn create(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Result<Response, HttpError> {
    let bytes = read_body(body, &headers, &state.limits).await?;
    let platform = state.platform.clone();
    blocking(move || {
        let who = caller(&platform, &headers, &uri)?;
        let body = json_body(&bytes)?;
        let id = comments::create(&platform, &who, &body)?;
        read_back(&platform, &who, &id, &uri)
    })
    .await
}

pub async fn update(
    State(state): State<AppState>,
    ItemPath(id): ItemPath<String>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Result<Response, HttpError> {
    let bytes = read_body(body, &headers, &state.limits).await?;
    let platform = state.platform.clone();
    blocking(move || {
        let who = caller(&platform, &headers, &uri)?;
        let body = json_body(&bytes)?;
        let id = comments::update(&platform, &who, &id, &body)?;
        read_back(&platform, &who, &id, &uri)
    })
    .await
}

pub async fn delete(
    State(state): State<AppState>,
    ItemPath(id): ItemPath<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, HttpError> {
    let platform = state.platform.clone();
    blocking(move || {
        let who = caller(&platform, &headers, &uri)?;
        comments::delete(&platform, &who, &id)?;
        Ok(StatusCode::NO_CONTENT.into_response())
    })
    .await
}
