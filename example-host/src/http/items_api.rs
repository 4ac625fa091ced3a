//! `/items/:collection[/:id]`: the platform's REST API over the items
//! service, under the caller's permissions.

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::as_caller::{AsCaller, Call};
use super::{read_body, AppState, HttpError};
use crate::items::{Session, Who};
use crate::platform::Platform;
use crate::platform::PlatformError;
use platform_store::query::WireQuery;

/// The REST API's page size when a request gives no `limit` (`-1`: all).
pub(super) const DEFAULT_LIMIT: u64 = 100;

/// The path parameters of an items route; a path that does not decode (say
/// `%FF`, not UTF-8) is answered in the items API's JSON shape, not with
/// the router's plain text.
pub struct ItemPath<T>(pub T);

impl<S, T> axum::extract::FromRequestParts<S> for ItemPath<T>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned + Send,
{
    type Rejection = HttpError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, HttpError> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(ItemPath(value)),
            Err(e) => Err(HttpError::InvalidPayload(format!(
                "Invalid path: {}",
                e.body_text()
            ))),
        }
    }
}

pub(super) fn data(value: impl serde::Serialize) -> Response {
    Json(json!({ "data": value })).into_response()
}

/// `{"data": …}` around JSON text the items service wrote (records are
/// not built into trees on their way out).
pub(super) fn data_text(json: &[u8]) -> Response {
    let mut body = Vec::with_capacity(json.len() + 9);
    body.extend_from_slice(b"{\"data\":");
    body.extend_from_slice(json);
    body.push(b'}');
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

pub async fn read_many(
    ItemPath(collection): ItemPath<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    read_many_in(collection, call).await
}

/// `GET` of a collection's items (also the host's own routes over one
/// collection, such as `/folders`).
pub(super) async fn read_many_in(
    collection: impl Into<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    call.run(move |c| {
        let q = c.query()?;
        let mut session = Session::Auto;
        if q.aggregate.is_some() {
            Ok(data(c.platform.aggregate(
                &mut session,
                &c.who,
                &collection,
                &q,
            )?))
        } else {
            Ok(data_text(&c.platform.read_by_query_json(
                &mut session,
                &c.who,
                &collection,
                &q,
                Some(DEFAULT_LIMIT),
            )?))
        }
    })
    .await
}

/// A missing item reads as forbidden for non-admins, so that ids of other
/// users' items cannot be probed.
pub(super) fn missing(who: &Who, id: &str) -> HttpError {
    if who.is_admin() {
        HttpError::Items(PlatformError::NotFound(format!("Item \"{id}\" not found")))
    } else {
        HttpError::Items(PlatformError::forbidden())
    }
}

pub async fn read_one(
    ItemPath((collection, id)): ItemPath<(String, String)>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    read_one_in(collection, id, call).await
}

/// `GET` of one item.
pub(super) async fn read_one_in(
    collection: impl Into<String>,
    id: String,
    call: AsCaller,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    call.run(move |c| {
        match c
            .platform
            .read_one_json(&mut Session::Auto, &c.who, &collection, &id, &c.query()?)?
        {
            Some(record) => Ok(data_text(&record)),
            None => Err(missing(&c.who, &id)),
        }
    })
    .await
}

/// Reads back what a write produced; a caller who may not read it gets 204.
pub(super) fn read_back(
    platform: &Platform,
    who: &Who,
    collection: &str,
    keys: &[String],
    q: &WireQuery,
    many: bool,
) -> Result<Response, HttpError> {
    let mut records = Vec::with_capacity(keys.len());
    for key in keys {
        match platform.read_one_json(&mut Session::Auto, who, collection, key, q) {
            Ok(Some(r)) => records.push(r),
            Ok(None) | Err(PlatformError::Forbidden(_)) => {
                return Ok(StatusCode::NO_CONTENT.into_response())
            }
            Err(e) => return Err(e.into()),
        }
    }
    if many {
        Ok(data_text(&json_array(&records)))
    } else {
        Ok(data_text(
            records.first().map_or(b"null".as_slice(), Vec::as_slice),
        ))
    }
}

/// JSON texts as one array.
fn json_array(texts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(texts.iter().map(|t| t.len() + 1).sum::<usize>() + 2);
    out.push(b'[');
    for (i, text) in texts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(text);
    }
    out.push(b']');
    out
}

/// A write's body as JSON text, checked to be one JSON value without
/// building it into a tree (a JSON field's document stays text down to
/// the database).
pub(super) fn json_body_text(bytes: &[u8]) -> Result<&str, HttpError> {
    let invalid = || HttpError::InvalidPayload("Invalid JSON body".into());
    let text = std::str::from_utf8(bytes).map_err(|_| invalid())?;
    serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|_| invalid())?;
    Ok(text.trim())
}

pub async fn create(
    State(state): State<AppState>,
    ItemPath(collection): ItemPath<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    create_in(state, collection, call, body).await
}

/// Reads the request's JSON body within the caller's bounds, then runs
/// `write` on a blocking worker as the caller, with the body's text, the
/// request's query and the most items one write may hold.
async fn with_json_body(
    state: AppState,
    call: AsCaller,
    body: Body,
    write: impl FnOnce(Call<'_>, &str, WireQuery, usize) -> Result<Response, HttpError> + Send + 'static,
) -> Result<Response, HttpError> {
    let bytes = read_body(body, call.headers(), &state.limits).await?;
    let max_batch = state.limits.max_batch_mutation;
    call.run(move |c| {
        let payload = json_body_text(&bytes)?;
        let q = c.query()?;
        write(c, payload, q, max_batch)
    })
    .await
}

/// `POST` of one item or an array of them.
pub(super) async fn create_in(
    state: AppState,
    collection: impl Into<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    with_json_body(state, call, body, move |c, payload, q, max_batch| {
        let many = payload.starts_with('[');
        let keys = if many {
            c.platform.create_many_json_at_most(
                &mut Session::Auto,
                &c.who,
                &collection,
                payload,
                max_batch,
            )?
        } else {
            vec![c
                .platform
                .create_one_json(&mut Session::Auto, &c.who, &collection, payload)?]
        };
        read_back(c.platform, &c.who, &collection, &keys, &q, many)
    })
    .await
}

pub async fn update(
    State(state): State<AppState>,
    ItemPath((collection, id)): ItemPath<(String, String)>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    update_in(state, collection, id, call, body).await
}

/// `PATCH` of one item.
pub(super) async fn update_in(
    state: AppState,
    collection: impl Into<String>,
    id: String,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    with_json_body(state, call, body, move |c, payload, q, _| {
        let key =
            c.platform
                .update_one_json(&mut Session::Auto, &c.who, &collection, &id, payload)?;
        read_back(c.platform, &c.who, &collection, &[key], &q, false)
    })
    .await
}

pub async fn update_many(
    State(state): State<AppState>,
    ItemPath(collection): ItemPath<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    update_many_in(state, collection, call, body).await
}

/// `PATCH` of many items: by keys, by query, or a batch (see
/// `Platform::update_many_json`); answers them read back.
pub(super) async fn update_many_in(
    state: AppState,
    collection: impl Into<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    with_json_body(state, call, body, move |c, payload, q, max_batch| {
        let keys =
            c.platform
                .update_many_json(&c.who, &collection, payload, max_batch, DEFAULT_LIMIT)?;
        read_back(c.platform, &c.who, &collection, &keys, &q, true)
    })
    .await
}

pub async fn delete_many(
    State(state): State<AppState>,
    ItemPath(collection): ItemPath<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    delete_many_in(state, collection, call, body).await
}

/// `DELETE` of many items: a list of keys, `{"keys"}` or `{"query"}`.
pub(super) async fn delete_many_in(
    state: AppState,
    collection: impl Into<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    with_json_body(state, call, body, move |c, payload, _, max_batch| {
        c.platform
            .delete_many(&c.who, &collection, payload, max_batch, DEFAULT_LIMIT)?;
        Ok(StatusCode::NO_CONTENT.into_response())
    })
    .await
}

pub async fn delete(
    ItemPath((collection, id)): ItemPath<(String, String)>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    delete_in(collection, id, call).await
}

/// `DELETE` of one item.
pub(super) async fn delete_in(
    collection: impl Into<String>,
    id: String,
    call: AsCaller,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    call.run(move |c| {
        c.platform
            .delete_one(&mut Session::Auto, &c.who, &collection, &id)?;
        Ok(StatusCode::NO_CONTENT.into_response())
    })
    .await
}
