//! `/auth/login`, `/auth/refresh`, `/auth/logout` (docs/decisions.md §3): the
//! HTTP shape of `signin`, with the tokens in the body or in cookies by mode;
//! `/auth/password/request` and `/auth/password/reset`, the password reset by
//! mail.

use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::browsers::{
    clear_cookie, cookie, cookie_form_refused, cookie_write_allowed, require_json, set_cookie,
};
use super::throttle::{login_attempt, mail_request, ClientAddress};
use super::{blocking, read_body, AppState, HttpError};
use crate::credentials::hash_password;
use crate::credentials::sessions::Presented;
use crate::platform::Platform;
use crate::signin::{Client, Issued, Mode, SignIn, SignInError};

/// A body that is a JSON object (an empty body reads as `{}`).
fn object_body(bytes: &[u8]) -> Result<Value, HttpError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(HttpError::InvalidPayload(
            "The body must be a JSON object".into(),
        )),
    }
}

fn text<'a>(body: &'a Value, key: &str) -> Result<Option<&'a str>, HttpError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(HttpError::InvalidPayload(format!(
            "\"{key}\" must be a string"
        ))),
    }
}

/// The answer of a sign-in or refresh in `mode`.
fn issued(signin: &SignIn, mode: Mode, issued: Issued) -> Response {
    let settings = &signin.settings;
    let mut headers = HeaderMap::new();
    let data = match mode {
        Mode::Json => json!({
            "access_token": issued.access_token,
            "expires": issued.expires_ms,
            "refresh_token": issued.refresh_token,
        }),
        Mode::Cookie => {
            headers.append(
                header::SET_COOKIE,
                set_cookie(
                    &settings.refresh_cookie,
                    &issued.refresh_token,
                    settings.refresh_ttl,
                ),
            );
            json!({"access_token": issued.access_token, "expires": issued.expires_ms})
        }
        Mode::Session => {
            // The cookie outlives the token in it: an expired token is
            // still how the session is refreshed.
            headers.append(
                header::SET_COOKIE,
                set_cookie(
                    &settings.session_cookie,
                    &issued.access_token,
                    settings.refresh_ttl,
                ),
            );
            json!({"expires": issued.expires_ms})
        }
    };
    (headers, axum::Json(json!({ "data": data }))).into_response()
}

pub async fn login(
    State(state): State<AppState>,
    Extension(address): Extension<ClientAddress>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, HttpError> {
    require_json(&headers)?;
    let bytes = read_body(body, &headers, &state.limits).await?;
    let body = object_body(&bytes)?;
    let (Some(email), Some(password)) = (text(&body, "email")?, text(&body, "password")?) else {
        return Err(HttpError::InvalidPayload(
            "\"email\" and \"password\" are required".into(),
        ));
    };
    let mode = Mode::parse(text(&body, "mode")?)?;
    let (email, password) = (email.to_string(), password.to_string());
    let client = Client {
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(String::from),
    };
    // Counted before any password is hashed: past a bound, 429 here.
    let attempt = login_attempt(&state, address, &email).await?;
    let out = hashing(&state, move |signin, platform| {
        Ok(signin.login(platform, &email, &password, mode, &client)?)
    })
    .await;
    attempt.settle(&out).await;
    Ok(issued(&state.signin, mode, out?))
}

/// The shortest time `/auth/password/request` answers in (Directus's
/// stall): the work for a known email (a token written, a mail queued)
/// and for an unknown one (a read) end in the same time.
const PASSWORD_REQUEST_STALL: Duration = Duration::from_millis(500);

/// Waits until `floor` has passed since `started` (on the timer, holding
/// no worker).
pub(super) async fn stall(started: Instant, floor: Duration) {
    tokio::time::sleep_until(started + floor).await;
}

/// `POST /auth/password/request {email, reset_url?}`: 204 whether or not
/// the email names an account; an active account is mailed a link that
/// resets its password. Each request costs a point of the sign-in
/// throttle to the email and to the client address, as a sign-in does, so
/// the same bounds hold against mail flooding (with no pass past the
/// email's bound for a fresh address).
pub async fn password_request(
    State(state): State<AppState>,
    Extension(address): Extension<ClientAddress>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, HttpError> {
    let started = Instant::now();
    require_json(&headers)?;
    let bytes = read_body(body, &headers, &state.limits).await?;
    let body = object_body(&bytes)?;
    let Some(email) = text(&body, "email")? else {
        return Err(HttpError::InvalidPayload(
            "Invalid payload. \"email\" field is required.".into(),
        ));
    };
    let email = email.to_string();
    let url = text(&body, "reset_url")?.map(String::from);
    mail_request(&state, address, &email).await?;
    let (platform, signin) = (state.platform.clone(), state.signin.clone());
    blocking(move || Ok(signin.request_password_reset(&platform, &email, url.as_deref())?)).await?;
    stall(started, PASSWORD_REQUEST_STALL).await;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /auth/password/reset {token, password}`: sets the password of the
/// token's user and ends their sessions; the token is used up.
pub async fn password_reset(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, HttpError> {
    require_json(&headers)?;
    let bytes = read_body(body, &headers, &state.limits).await?;
    let body = object_body(&bytes)?;
    let Some(token) = text(&body, "token")?.map(String::from) else {
        return Err(HttpError::InvalidPayload(
            "Invalid payload. \"token\" field is required.".into(),
        ));
    };
    let Some(password) = text(&body, "password")?
        .filter(|p| !p.is_empty())
        .map(String::from)
    else {
        return Err(HttpError::InvalidPayload(
            "Invalid payload. \"password\" field is required.".into(),
        ));
    };
    hashing(&state, move |signin, platform| {
        let hash = hash_password(&password).map_err(HttpError::Internal)?;
        Ok(signin.reset_password(platform, &token, &hash)?)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Runs sign-in work that hashes a password: it waits for a hashing slot
/// first, before taking a worker, so a flood of it queues here.
pub(super) async fn hashing<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(&SignIn, &Platform) -> Result<T, HttpError> + Send + 'static,
) -> Result<T, HttpError> {
    let _slot = state
        .signin
        .hashing
        .acquire()
        .await
        .map_err(|e| HttpError::Internal(format!("hashing slots closed: {e}")))?;
    let (signin, platform) = (state.signin.clone(), state.platform.clone());
    blocking(move || work(&signin, &platform)).await
}

/// The session a refresh or logout is about: the body's refresh token,
/// else the session cookie (mode `session`), else the refresh cookie. A
/// cookie counts only on a JSON request or one from a trusted origin
/// (`browsers::cookie_write_allowed`).
fn presented(
    signin: &SignIn,
    headers: &HeaderMap,
    body: &Value,
    mode: Mode,
) -> Result<Option<Presented>, HttpError> {
    if let Some(token) = text(body, "refresh_token")? {
        return Ok(Some(Presented::RefreshToken(token.to_string())));
    }
    let settings = &signin.settings;
    let from_session = || {
        cookie(headers, &settings.session_cookie.name)
            .map(|t| signin.session_of(&t).map(Presented::SessionCookie))
    };
    let from_refresh =
        || cookie(headers, &settings.refresh_cookie.name).map(|t| Some(Presented::RefreshToken(t)));
    let found = if mode == Mode::Session {
        from_session().or_else(from_refresh)
    } else {
        from_refresh().or_else(from_session)
    };
    match found {
        None => Ok(None),
        Some(_) if !cookie_write_allowed(headers, settings) => Err(cookie_form_refused()),
        // A session cookie whose token is not ours names no session.
        Some(None) => Err(SignInError::InvalidCredentials.into()),
        Some(p) => Ok(p),
    }
}

/// The mode and the session of a refresh or logout request.
async fn session_request(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Mode, Presented), HttpError> {
    let bytes = read_body(body, headers, &state.limits).await?;
    let body = object_body(&bytes)?;
    let mode = Mode::parse(text(&body, "mode")?)?;
    match presented(&state.signin, headers, &body, mode)? {
        Some(p) => Ok((mode, p)),
        None => Err(HttpError::InvalidPayload(
            "The refresh token is required in either the payload or cookie.".into(),
        )),
    }
}

pub async fn refresh(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, HttpError> {
    let (mode, presented) = session_request(&state, &headers, body).await?;
    let (platform, signin) = (state.platform.clone(), state.signin.clone());
    let out = blocking(move || Ok(signin.refresh(&platform, &presented)?)).await?;
    Ok(issued(&state.signin, mode, out))
}

pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, HttpError> {
    let (_, presented) = session_request(&state, &headers, body).await?;
    let (platform, signin) = (state.platform.clone(), state.signin.clone());
    blocking(move || Ok(signin.logout(&platform, &presented)?)).await?;
    let settings = &state.signin.settings;
    let mut headers = HeaderMap::new();
    headers.append(header::SET_COOKIE, clear_cookie(&settings.refresh_cookie));
    headers.append(header::SET_COOKIE, clear_cookie(&settings.session_cookie));
    Ok((StatusCode::NO_CONTENT, headers).into_response())
}
