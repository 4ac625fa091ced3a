//! Every error answer of the HTTP layer, mapped to a response in one place.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::platform::{ErrorPlace, PlatformError};

/// A failure of a host route (items API shape) or of an extension mount
/// (`{error}` shape).
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// An items-service failure on a host route.
    #[error(transparent)]
    Items(#[from] PlatformError),
    /// A token that matches no active user, on a host route.
    #[error("Invalid token")]
    InvalidCredentials,
    /// A wrong email or password, or a refresh token that is not (or no
    /// longer) valid.
    #[error("Invalid user credentials.")]
    SignInRefused,
    /// A token that matches no active user, under an extension's mount.
    #[error("Invalid token")]
    ExtensionInvalidToken,
    #[error("Payload too large")]
    PayloadTooLarge,
    /// An upload past `FILES_MAX_UPLOAD_SIZE` (Directus's answer).
    #[error("Uploaded content is too large.")]
    ContentTooLarge,
    /// A `Range` outside a file's bytes (Directus's answer, 416).
    #[error("Range \"{0}\" is invalid or the file's size doesn't match the requested range.")]
    RangeNotSatisfiable(String),
    /// An image too large (or of unknown size) to transform (Directus's
    /// answer).
    #[error("Illegal asset transformation: width, height.")]
    IllegalTransformation,
    /// File storage failed (Directus's answer, 503).
    #[error("Service \"files\" is unavailable. {0}.")]
    StorageUnavailable(String),
    /// Image transformations are at their bound (how many at once, or
    /// their memory): 503 as Directus answers, with `Retry-After`.
    #[error("Service \"files\" is unavailable. Server too busy.")]
    FilesBusy { retry_after_secs: u64 },
    /// A body nested deeper than its route accepts.
    #[error("Request body nested too deeply")]
    BodyTooDeep,
    /// The client sent its body too slowly.
    #[error("Request body timed out")]
    BodyTimeout,
    /// Too much is being received at once from unauthenticated clients.
    #[error("Too many unauthenticated request bodies at once: retry shortly.")]
    Busy,
    /// An extension handler ran past the per-call limit.
    #[error("Extension timed out")]
    ExtensionTimeout,
    /// Unreadable request body on a host route.
    #[error("{0}")]
    InvalidPayload(String),
    /// Unknown route outside any extension.
    #[error("Route {0} doesn't exist.")]
    RouteNotFound(String),
    /// A host route asked with a method it does not serve.
    #[error("Method not allowed: {0}.")]
    MethodNotAllowed(String),
    /// A failure around an extension call, in the `{error}` shape.
    #[error("{message}")]
    Extension { status: StatusCode, message: String },
    /// A failure of the host itself, items shape.
    #[error("{0}")]
    Internal(String),
    /// Past a throttle's limit (`crate::throttle`): 429 with `Retry-After`,
    /// in Directus's shape.
    #[error("Too many requests, retry after {}.", directus_ms(.0.retry_after_ms))]
    TooManyRequests(crate::throttle::Refusal),
}

impl From<crate::throttle::Refusal> for HttpError {
    fn from(r: crate::throttle::Refusal) -> Self {
        HttpError::TooManyRequests(r)
    }
}

/// The throttle's store failed: answered as a failure of the database.
impl From<crate::throttle::ThrottleError> for HttpError {
    fn from(e: crate::throttle::ThrottleError) -> Self {
        match e {
            crate::throttle::ThrottleError::Store(e) => HttpError::Items(e.into()),
        }
    }
}

/// A span of milliseconds as Directus words it (its `ms` package): `800ms`,
/// `3s`, `15m`, `2h`, `1d`, rounded.
fn directus_ms(ms: i64) -> String {
    const UNITS: [(i64, &str); 4] = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1_000, "s"),
    ];
    for (size, unit) in UNITS {
        if ms >= size {
            return format!("{}{unit}", (ms + size / 2) / size);
        }
    }
    format!("{ms}ms")
}

/// `Retry-After` in whole seconds, rounded up: a client that waits that
/// long finds the window over (never 0, which would invite a retry at
/// once).
fn retry_after_secs(ms: i64) -> i64 {
    ((ms + 999) / 1000).max(1)
}

/// A refused comment operation: in the items API's shapes and codes, as
/// Directus answers them.
impl From<crate::comments::CommentError> for HttpError {
    fn from(e: crate::comments::CommentError) -> Self {
        use crate::comments::CommentError as E;
        match e {
            E::Required(_) | E::InvalidPayload(_) => HttpError::InvalidPayload(e.to_string()),
            E::Forbidden => HttpError::Items(PlatformError::forbidden()),
            E::Items(e) => HttpError::Items(e),
        }
    }
}

/// A credential that matches no active user is 401 `INVALID_CREDENTIALS`
/// on the host's routes (an extension's route answers in its own shape,
/// [`HttpError::ExtensionInvalidToken`]).
impl From<crate::auth::AuthError> for HttpError {
    fn from(e: crate::auth::AuthError) -> Self {
        match e {
            crate::auth::AuthError::InvalidToken => HttpError::InvalidCredentials,
            crate::auth::AuthError::Store(e) => HttpError::Internal(e.to_string()),
        }
    }
}

impl From<crate::signin::SignInError> for HttpError {
    fn from(e: crate::signin::SignInError) -> Self {
        use crate::signin::SignInError as E;
        match e {
            E::InvalidCredentials => HttpError::SignInRefused,
            E::InvalidPayload(m) => HttpError::InvalidPayload(m),
            E::Forbidden => HttpError::Items(PlatformError::forbidden()),
            E::Items(e) => HttpError::Items(e),
            E::Store(e) => HttpError::Items(e.into()),
            E::Internal(m) => HttpError::Internal(m),
        }
    }
}

fn items_body(status: StatusCode, code: &str, message: &str) -> (StatusCode, String) {
    placed_body(status, code, message, None)
}

/// An error's body with, where the platform knows it, where the refused
/// value is (`extensions.collection`, `field`, `type`).
fn placed_body(
    status: StatusCode,
    code: &str,
    message: &str,
    place: Option<&ErrorPlace>,
) -> (StatusCode, String) {
    let mut extensions = place.map(ErrorPlace::extensions).unwrap_or_default();
    extensions.insert("code".into(), code.into());
    (
        status,
        json!({"errors": [{"message": message, "extensions": extensions}]}).to_string(),
    )
}

fn simple_body(status: StatusCode, message: &str) -> (StatusCode, String) {
    (status, json!({ "error": message }).to_string())
}

pub fn items_status(e: &PlatformError) -> StatusCode {
    match e {
        PlatformError::Forbidden(_) => StatusCode::FORBIDDEN,
        PlatformError::NotFound(_) => StatusCode::NOT_FOUND,
        PlatformError::InvalidQuery(_)
        | PlatformError::InvalidPayload(_)
        | PlatformError::NotUnique(..)
        | PlatformError::FailedValidation(..) => StatusCode::BAD_REQUEST,
        PlatformError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
        PlatformError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        PlatformError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// What a client reads of a failure it did not cause: the detail (a
/// database's message, say) goes to the log only.
pub const UNEXPECTED: &str = "An unexpected error occurred.";

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let (status, body) = self.status_and_body();
        let mut response =
            (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
        let retry_after = match &self {
            HttpError::Busy => Some(1),
            HttpError::FilesBusy { retry_after_secs } => {
                Some(i64::try_from(*retry_after_secs).unwrap_or(i64::MAX))
            }
            HttpError::TooManyRequests(r) => Some(retry_after_secs(r.retry_after_ms)),
            _ => None,
        };
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
        }
        response
    }
}

impl HttpError {
    /// The answer's status and JSON body (a host failure's detail is
    /// logged here, never sent).
    pub fn status_and_body(&self) -> (StatusCode, String) {
        let message = self.to_string();
        match self {
            HttpError::Items(e @ PlatformError::Internal(_)) => {
                log::error!("items service failure: {e}");
                items_body(items_status(e), e.code(), UNEXPECTED)
            }
            HttpError::Items(e) => placed_body(items_status(e), e.code(), &message, e.place()),
            HttpError::InvalidCredentials => {
                items_body(StatusCode::UNAUTHORIZED, "INVALID_CREDENTIALS", &message)
            }
            HttpError::SignInRefused => {
                items_body(StatusCode::UNAUTHORIZED, "INVALID_CREDENTIALS", &message)
            }
            HttpError::ExtensionInvalidToken => simple_body(StatusCode::UNAUTHORIZED, &message),
            HttpError::PayloadTooLarge => simple_body(StatusCode::PAYLOAD_TOO_LARGE, &message),
            HttpError::ContentTooLarge => {
                items_body(StatusCode::PAYLOAD_TOO_LARGE, "CONTENT_TOO_LARGE", &message)
            }
            HttpError::IllegalTransformation => items_body(
                StatusCode::BAD_REQUEST,
                "ILLEGAL_ASSET_TRANSFORMATION",
                &message,
            ),
            HttpError::RangeNotSatisfiable(_) => items_body(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "RANGE_NOT_SATISFIABLE",
                &message,
            ),
            HttpError::StorageUnavailable(_) | HttpError::FilesBusy { .. } => items_body(
                StatusCode::SERVICE_UNAVAILABLE,
                "SERVICE_UNAVAILABLE",
                &message,
            ),
            HttpError::BodyTooDeep => simple_body(StatusCode::BAD_REQUEST, &message),
            HttpError::BodyTimeout => simple_body(StatusCode::REQUEST_TIMEOUT, &message),
            HttpError::ExtensionTimeout => simple_body(StatusCode::GATEWAY_TIMEOUT, &message),
            HttpError::Busy => simple_body(StatusCode::SERVICE_UNAVAILABLE, &message),
            HttpError::InvalidPayload(_) => {
                items_body(StatusCode::BAD_REQUEST, "INVALID_PAYLOAD", &message)
            }
            HttpError::RouteNotFound(_) => {
                items_body(StatusCode::NOT_FOUND, "ROUTE_NOT_FOUND", &message)
            }
            HttpError::MethodNotAllowed(_) => items_body(
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                &message,
            ),
            HttpError::Extension { status, .. } => simple_body(*status, &message),
            HttpError::Internal(m) => {
                log::error!("host failure: {m}");
                items_body(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", UNEXPECTED)
            }
            HttpError::TooManyRequests(r) => {
                let reset = chrono::DateTime::from_timestamp_millis(r.reset_ms)
                    .unwrap_or_default()
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    json!({"errors": [{"message": message, "extensions": {
                        "code": "REQUESTS_EXCEEDED",
                        "limit": r.limit,
                        "reset": reset,
                    }}]})
                    .to_string(),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::throttle::Refusal;

    #[test]
    fn spans_are_worded_as_directus_words_them() {
        assert_eq!(directus_ms(800), "800ms");
        assert_eq!(directus_ms(1_000), "1s");
        assert_eq!(directus_ms(1_500), "2s");
        assert_eq!(directus_ms(59_000), "59s");
        assert_eq!(directus_ms(900_000), "15m");
        assert_eq!(directus_ms(7_200_000), "2h");
        assert_eq!(directus_ms(86_400_000), "1d");
    }

    #[test]
    fn too_many_requests_is_429_with_retry_after_in_directus_shape() {
        let refused = HttpError::TooManyRequests(Refusal {
            limit: 5,
            retry_after_ms: 1_200,
            reset_ms: 1_700_000_000_000,
        });
        let (status, body) = refused.status_and_body();
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body,
            json!({"errors": [{
                "message": "Too many requests, retry after 1s.",
                "extensions": {
                    "code": "REQUESTS_EXCEEDED",
                    "limit": 5,
                    "reset": "2023-11-14T22:13:20.000Z"
                }
            }]})
        );
        let response = refused.into_response();
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
        assert_eq!(retry_after_secs(1), 1);
        assert_eq!(retry_after_secs(1_000), 1);
    }
}
