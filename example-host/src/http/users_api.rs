//! `/users/me` and `/users/register` (DECISIONS §3).

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::items_api::{caller, data_text, json_body_text, parse_query_string, read_back};
use super::{blocking, read_body, AppState, HttpError};
use crate::items::{ItemsError, Session, Who};

const USERS: &str = "platform_users";

/// Fields of their own record a user may not change.
const NOT_SELF_SERVICE: [&str; 5] = ["id", "role", "status", "token", "date_created"];

/// The signed-in caller's id, or 401.
fn me(who: &Who) -> Result<String, HttpError> {
    who.accountability
        .as_ref()
        .map(|a| a.user.clone())
        .ok_or(HttpError::InvalidCredentials)
}

pub async fn read_me(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, HttpError> {
    let platform = state.platform.clone();
    blocking(move || {
        let who = caller(&platform, &headers, &uri)?;
        let id = me(&who)?;
        let q = parse_query_string(uri.query())?;
        // One's own record, whatever the policies say of the collection.
        let own = Who::admin(who.accountability.clone());
        match platform.read_one_json(&mut Session::Auto, &own, USERS, &id, &q)? {
            Some(record) => Ok(data_text(&record)),
            None => Err(HttpError::InvalidCredentials),
        }
    })
    .await
}

pub async fn update_me(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Result<Response, HttpError> {
    let bytes = read_body(body, &headers, &state.limits).await?;
    let platform = state.platform.clone();
    blocking(move || {
        let who = caller(&platform, &headers, &uri)?;
        let id = me(&who)?;
        let payload = json_body_text(&bytes)?;
        let fields: serde_json::Map<String, Value> = serde_json::from_str(payload)
            .map_err(|_| HttpError::InvalidPayload("The body must be a JSON object".into()))?;
        if let Some(field) = fields
            .keys()
            .find(|k| NOT_SELF_SERVICE.contains(&k.as_str()))
        {
            return Err(ItemsError::Forbidden(format!(
                "You don't have permission to change \"{field}\" of your own account."
            ))
            .into());
        }
        let q = parse_query_string(uri.query())?;
        let own = Who::admin(who.accountability.clone());
        let key = platform.update_one_json(&mut Session::Auto, &own, USERS, &id, payload)?;
        read_back(&platform, &own, USERS, &[key], &q, false)
    })
    .await
}

pub async fn register(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, HttpError> {
    let bytes = read_body(body, &headers, &state.limits).await?;
    let payload: Value = serde_json::from_slice(&bytes)
        .map_err(|_| HttpError::InvalidPayload("The body must be a JSON object".into()))?;
    super::auth_api::hashing(&state, move |signin, platform| {
        signin.register(platform, &payload)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
