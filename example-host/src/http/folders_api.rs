//! `/folders`: the items of `platform_folders` (`name`, `parent`) under
//! the caller's permissions, with the items API's query parameters.

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;

use super::as_caller::AsCaller;
use super::items_api::{create_in, delete_in, read_many_in, read_one_in, update_in, ItemPath};
use super::{AppState, HttpError};

/// The collection of folders.
const FOLDERS: &str = "platform_folders";

pub async fn read_many(call: AsCaller) -> Result<Response, HttpError> {
    read_many_in(FOLDERS, call).await
}

pub async fn read_one(
    ItemPath(id): ItemPath<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    read_one_in(FOLDERS, id, call).await
}

pub async fn create(
    State(state): State<AppState>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    create_in(state, FOLDERS, call, body).await
}

pub async fn update(
    State(state): State<AppState>,
    ItemPath(id): ItemPath<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    update_in(state, FOLDERS, id, call, body).await
}

pub async fn delete(ItemPath(id): ItemPath<String>, call: AsCaller) -> Result<Response, HttpError> {
    delete_in(FOLDERS, id, call).await
}
