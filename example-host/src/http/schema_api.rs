//! `/collections`, `/fields` and `/relations`: the data model as Directus
//! 11 answers it, read-only (the schema comes from migrations); what they
//! answer is `crate::schema_model`.

use axum::response::Response;
use serde::Serialize;

use super::as_caller::{AsCaller, Call};
use super::items_api::{data, ItemPath};
use super::HttpError;
use crate::platform::PlatformError;
use crate::schema_model;

/// Answers `{"data": ..}` with what `read` finds of the model, as the
/// caller sees it.
async fn answer<T: Serialize>(
    call: AsCaller,
    read: impl FnOnce(&Call<'_>) -> Result<T, HttpError> + Send + 'static,
) -> Result<Response, HttpError> {
    call.run(move |c| Ok(data(read(&c)?))).await
}

pub async fn collections(call: AsCaller) -> Result<Response, HttpError> {
    answer(call, |c| {
        Ok(schema_model::collections(c.platform, &c.who, &c.query()?)?)
    })
    .await
}

pub async fn collection(
    ItemPath(name): ItemPath<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    answer(call, move |c| {
        Ok(schema_model::collection(c.platform, &c.who, &name)?)
    })
    .await
}

pub async fn fields(call: AsCaller) -> Result<Response, HttpError> {
    answer(call, |c| {
        Ok(schema_model::fields(c.platform, &c.who, None, &c.query()?)?)
    })
    .await
}

pub async fn fields_of(
    ItemPath(name): ItemPath<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    answer(call, move |c| {
        Ok(schema_model::fields(
            c.platform,
            &c.who,
            Some(&name),
            &c.query()?,
        )?)
    })
    .await
}

pub async fn field(
    ItemPath((collection, field)): ItemPath<(String, String)>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    answer(call, move |c| {
        Ok(schema_model::field(
            c.platform,
            &c.who,
            &collection,
            &field,
        )?)
    })
    .await
}

pub async fn relations(call: AsCaller) -> Result<Response, HttpError> {
    answer(call, |c| {
        Ok(schema_model::relations(
            c.platform,
            &c.who,
            None,
            &c.query()?,
        )?)
    })
    .await
}

pub async fn relations_of(
    ItemPath(name): ItemPath<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    answer(call, move |c| {
        Ok(schema_model::relations(
            c.platform,
            &c.who,
            Some(&name),
            &c.query()?,
        )?)
    })
    .await
}

pub async fn relation(
    ItemPath((collection, field)): ItemPath<(String, String)>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    answer(call, move |c| {
        Ok(schema_model::relation(
            c.platform,
            &c.who,
            &collection,
            &field,
        )?)
    })
    .await
}

/// Every write to the model: the schema changes only through migrations,
/// so no caller has schema rights (Directus's answer to one without them).
pub async fn refuse_write() -> Result<Response, HttpError> {
    Err(HttpError::Items(PlatformError::forbidden()))
}
