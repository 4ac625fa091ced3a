//! The host's routes over one fixed collection through the items API
//! (`/folders`, `/roles`, `/policies`, `/permissions`, the directory part
//! of `/users`): each handler is generic over a [`FixedCollection`], read
//! and written under the caller's permissions with the items API's query
//! parameters and bodies.

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;

use super::as_caller::AsCaller;
use super::items_api::{
    create_in, data_text, delete_in, delete_many_in, read_many_in, read_one_in, update_in,
    update_many_in, ItemPath,
};
use super::{AppState, HttpError};
use crate::items::Session;
use crate::platform::PlatformError;

/// A collection served at a route of its own.
pub trait FixedCollection: Send + Sync + 'static {
    const COLLECTION: &'static str;
    /// A missing item reads as 403 to administrators too, as Directus
    /// answers its system collections; otherwise as `/items` answers
    /// (404 to administrators, 403 to anyone else).
    const MISSING_IS_FORBIDDEN: bool = true;
}

/// `/folders`.
pub struct Folders;
impl FixedCollection for Folders {
    const COLLECTION: &'static str = "platform_folders";
    const MISSING_IS_FORBIDDEN: bool = false;
}

/// `/users` (its directory: `/users/me` and registration are `users_api`'s).
pub struct Users;
impl FixedCollection for Users {
    const COLLECTION: &'static str = "platform_users";
}

/// `/roles`.
pub struct Roles;
impl FixedCollection for Roles {
    const COLLECTION: &'static str = "platform_roles";
}

/// `/policies`.
pub struct Policies;
impl FixedCollection for Policies {
    const COLLECTION: &'static str = "platform_policies";
}

/// `/permissions`.
pub struct Permissions;
impl FixedCollection for Permissions {
    const COLLECTION: &'static str = "platform_permissions";
}

/// `GET` of the items the caller may read.
pub async fn read_many<C: FixedCollection>(call: AsCaller) -> Result<Response, HttpError> {
    read_many_in(C::COLLECTION, call).await
}

/// `GET` of one item.
pub async fn read_one<C: FixedCollection>(
    ItemPath(id): ItemPath<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    if !C::MISSING_IS_FORBIDDEN {
        return read_one_in(C::COLLECTION, id, call).await;
    }
    call.run(move |c| {
        match c.platform.read_one_json(
            &mut Session::Auto,
            &c.who,
            C::COLLECTION,
            &id,
            &c.query()?,
        )? {
            Some(record) => Ok(data_text(&record)),
            None => Err(PlatformError::forbidden().into()),
        }
    })
    .await
}

/// `POST` of one item (an object) or several (an array).
pub async fn create<C: FixedCollection>(
    State(state): State<AppState>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    create_in(state, C::COLLECTION, call, body).await
}

/// `PATCH` of one item.
pub async fn update<C: FixedCollection>(
    State(state): State<AppState>,
    ItemPath(id): ItemPath<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    update_in(state, C::COLLECTION, id, call, body).await
}

/// `PATCH` of many items: `{keys, data}`, `{query, data}` or a batch.
pub async fn update_many<C: FixedCollection>(
    State(state): State<AppState>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    update_many_in(state, C::COLLECTION, call, body).await
}

/// `DELETE` of one item (204).
pub async fn delete<C: FixedCollection>(
    ItemPath(id): ItemPath<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    delete_in(C::COLLECTION, id, call).await
}

/// `DELETE` of many items: an array of keys, `{keys}` or `{query}` (204).
pub async fn delete_many<C: FixedCollection>(
    State(state): State<AppState>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    delete_many_in(state, C::COLLECTION, call, body).await
}
