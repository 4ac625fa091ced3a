//! `/users/me`, `/users/register` and `/users/register/verify-email`
//! (docs/decisions.md §3). The directory of users, `/users` and
//! `/users/:id`, is `collection_api`'s over `platform_users`, under the
//! caller's permissions on it and on every related collection.

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde_json::Value;

use super::as_caller::{caller, AsCaller, RequestHead};
use super::items_api::{data_text, json_body_text};
use super::query_string::parse_query_string;
use super::throttle::{mail_request, ClientAddress};
use super::{blocking, read_body, AppState, HttpError, Resolved};
use crate::items::{Session, Who};
use crate::platform::Platform;
use crate::platform::PlatformError;
use platform_store::query::{ListParam, WireQuery};

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

pub async fn read_me(call: AsCaller) -> Result<Response, HttpError> {
    call.run(|c| {
        let id = me(&c.who)?;
        match c
            .platform
            .read_own_json(&mut Session::Auto, &c.who, USERS, &id, &c.query()?)?
        {
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
    resolved: Option<Extension<Resolved>>,
    body: Body,
) -> Result<Response, HttpError> {
    let bytes = read_body(body, &headers, &state.limits).await?;
    let payload = json_body_text(&bytes)?.to_string();
    let fields: serde_json::Map<String, Value> = serde_json::from_str(&payload)
        .map_err(|_| HttpError::InvalidPayload("The body must be a JSON object".into()))?;
    if let Some(field) = fields
        .keys()
        .find(|k| NOT_SELF_SERVICE.contains(&k.as_str()))
    {
        return Err(PlatformError::Forbidden(format!(
            "You don't have permission to change \"{field}\" of your own account."
        ))
        .into());
    }
    let sets_password = fields.contains_key("password");
    let work = move |platform: &Platform| {
        let head = RequestHead {
            headers,
            uri,
            resolved: resolved.map(|Extension(caller)| caller),
        };
        let who = caller(platform, &head)?;
        let uri = head.uri;
        let id = me(&who)?;
        let own = Who::admin(who.accountability.clone());
        let payload = without_unchanged_email(platform, &own, &id, fields, payload)?;
        let q = parse_query_string(uri.query())?;
        let key = platform.update_one_json(&mut Session::Auto, &own, USERS, &id, &payload)?;
        match platform.read_own_json(&mut Session::Auto, &who, USERS, &key, &q)? {
            Some(record) => Ok(data_text(&record)),
            None => Ok(StatusCode::NO_CONTENT.into_response()),
        }
    };
    // A new password is hashed within sign-in's bound on hashing, after
    // everything else in the payload was checked.
    if sets_password {
        super::auth_api::hashing(&state, move |_, platform| work(platform)).await
    } else {
        let platform = state.platform.clone();
        blocking(move || work(&platform)).await
    }
}

/// The payload without `email` when it names the caller's own address
/// (however cased); any other address is refused, the same way whether or
/// not another account has it, so that no answer tells which emails exist.
/// A member's email is changed by an administrator.
fn without_unchanged_email(
    platform: &Platform,
    own: &Who,
    id: &str,
    mut fields: serde_json::Map<String, Value>,
    payload: String,
) -> Result<String, HttpError> {
    let Some(asked) = fields.get("email") else {
        return Ok(payload);
    };
    let asked = asked.as_str().map(|e| e.trim().to_lowercase());
    let q = WireQuery {
        fields: Some(ListParam::List(vec!["email".into()])),
        ..Default::default()
    };
    let current = platform
        .read_one_json(&mut Session::Auto, own, USERS, id, &q)?
        .and_then(|text| serde_json::from_slice::<Value>(&text).ok())
        .and_then(|record| {
            record
                .get("email")
                .and_then(Value::as_str)
                .map(str::to_lowercase)
        });
    if asked.is_none() || asked != current {
        return Err(PlatformError::Forbidden(
            "You can't change the email address of your own account: an administrator can.".into(),
        )
        .into());
    }
    fields.remove("email");
    Ok(Value::Object(fields).to_string())
}

/// The shortest time a registration answers in (Directus's
/// `REGISTER_STALL_TIME`): a new account (its verification link written and
/// mailed) and a taken email end in the same time. Both hash the password.
const REGISTER_STALL: std::time::Duration = std::time::Duration::from_millis(750);

/// `POST /users/register`: each request costs a point of the sign-in
/// throttle to the email it names and to the client address, never given
/// back, as a password-reset request does: it may mail that email.
pub async fn register(
    State(state): State<AppState>,
    Extension(address): Extension<ClientAddress>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, HttpError> {
    let started = tokio::time::Instant::now();
    super::browsers::require_json(&headers)?;
    let bytes = read_body(body, &headers, &state.limits).await?;
    let payload: Value = serde_json::from_slice(&bytes)
        .map_err(|_| HttpError::InvalidPayload("The body must be a JSON object".into()))?;
    let email = payload.get("email").and_then(Value::as_str).unwrap_or("");
    mail_request(&state, address, email).await?;
    super::auth_api::hashing(&state, move |signin, platform| {
        Ok(signin.register(platform, &payload)?)
    })
    .await?;
    super::auth_api::stall(started, REGISTER_STALL).await;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /users/register/verify-email?token=`: the token's user becomes
/// active, and the caller is sent on to the admin app's sign-in
/// (`<PUBLIC_URL>/admin`, 302), as Directus answers, whether a person
/// opened a link to the host or a front end called with its link's token.
pub async fn verify_email(State(state): State<AppState>, uri: Uri) -> Result<Response, HttpError> {
    let token = form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| PlatformError::InvalidQuery("\"token\" is required".into()))?;
    let (platform, signin) = (state.platform.clone(), state.signin.clone());
    let admin = crate::signin::links::on_public_url(&signin.settings.public_url, "/admin");
    blocking(move || Ok(signin.verify_registration(&platform, &token)?)).await?;
    Ok((StatusCode::FOUND, [(header::LOCATION, admin)]).into_response())
}
