//! `/folders`: the items of `platform_folders` (`name`, `parent`) under
//! the caller's permissions, with the items API's query parameters.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;

use super::items_api::{create_in, delete_in, read_many_in, read_one_in, update_in, ItemPath};
use super::{AppState, HttpError};

/// The collection of folders.
const FOLDERS: &str = "platform_folders";

pub async fn read_many(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, HttpError> {
    read_many_in(state, FOLDERS.into(), headers, uri).await
}

pub async fn read_one(
    State(state): State<AppState>,
    ItemPath(id): ItemPath<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, HttpError> {
    read_one_in(state, FOLDERS.into(), id, headers, uri).await
}

pub async fn create(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Result<Response, HttpError> {
    create_in(state, FOLDERS.into(), headers, uri, body).await
}

pub async fn update(
    State(state): State<AppState>,
    ItemPath(id): ItemPath<String>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Result<Response, HttpError> {
    update_in(state, FOLDERS.into(), id, headers, uri, body).await
}

pub async fn delete(
    State(state): State<AppState>,
    ItemPath(id): ItemPath<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, HttpError> {
    delete_in(state, FOLDERS.into(), id, headers, uri).await
}
