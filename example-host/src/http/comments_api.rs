//! `/comments` and `/comments/:id` (Directus 11's comments): requests in,
//! answers out; what they do is `crate::comments`.

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::as_caller::{AsCaller, Call};
use super::items_api::{data_text, ItemPath};
use super::{read_body, AppState, HttpError};
use crate::comments;

/// The body of a write, as a JSON value.
fn json_body(bytes: &[u8]) -> Result<Value, HttpError> {
    serde_json::from_slice(bytes).map_err(|_| HttpError::InvalidPayload("Invalid JSON body".into()))
}

pub async fn read_many(call: AsCaller) -> Result<Response, HttpError> {
    call.run(|c| {
        let q = c.query()?;
        if q.aggregate.is_some() {
            let rows = comments::aggregate(c.platform, &c.who, &q)?;
            Ok(Json(json!({ "data": rows })).into_response())
        } else {
            Ok(data_text(&comments::list(c.platform, &c.who, &q)?))
        }
    })
    .await
}

pub async fn read_one(
    ItemPath(id): ItemPath<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    call.run(move |c| {
        Ok(data_text(&comments::read_one(
            c.platform,
            &c.who,
            &id,
            &c.query()?,
        )?))
    })
    .await
}

/// The comment just written, read back with the request's query; 204 when
/// the caller may not read it.
fn read_back(c: &Call<'_>, id: &str) -> Result<Response, HttpError> {
    match comments::read_one(c.platform, &c.who, id, &c.query()?) {
        Ok(record) => Ok(data_text(&record)),
        Err(comments::CommentError::Forbidden) => Ok(StatusCode::NO_CONTENT.into_response()),
        Err(e) => Err(e.into()),
    }
}

pub async fn create(
    State(state): State<AppState>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    let bytes = read_body(body, call.headers(), &state.limits).await?;
    call.run(move |c| {
        let id = comments::create(c.platform, &c.who, &json_body(&bytes)?)?;
        read_back(&c, &id)
    })
    .await
}

pub async fn update(
    State(state): State<AppState>,
    ItemPath(id): ItemPath<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    let bytes = read_body(body, call.headers(), &state.limits).await?;
    call.run(move |c| {
        let id = comments::update(c.platform, &c.who, &id, &json_body(&bytes)?)?;
        read_back(&c, &id)
    })
    .await
}

pub async fn delete(ItemPath(id): ItemPath<String>, call: AsCaller) -> Result<Response, HttpError> {
    call.run(move |c| {
        comments::delete(c.platform, &c.who, &id)?;
        Ok(StatusCode::NO_CONTENT.into_response())
    })
    .await
}
