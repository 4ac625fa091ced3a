//! Every error answer of the HTTP layer, mapped to a response in one place.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::items::ItemsError;

/// A failure of a host route (items API shape) or of an extension mount
/// (`{error}` shape).
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// An items-service failure on a host route.
    #[error(transparent)]
    Items(#[from] ItemsError),
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
            E::Forbidden => HttpError::Items(ItemsError::forbidden()),
            E::Items(e) => HttpError::Items(e),
            E::Store(e) => HttpError::Items(e.into()),
            E::Internal(m) => HttpError::Internal(m),
        }
    }
}

fn items_body(status: StatusCode, code: &str, message: &str) -> (StatusCode, String) {
    (
        status,
        json!({"errors": [{"message": message, "extensions": {"code": code}}]}).to_string(),
    )
}

fn simple_body(status: StatusCode, message: &str) -> (StatusCode, String) {
    (status, json!({ "error": message }).to_string())
}

pub fn items_status(e: &ItemsError) -> StatusCode {
    match e {
        ItemsError::Forbidden(_) => StatusCode::FORBIDDEN,
        ItemsError::NotFound(_) => StatusCode::NOT_FOUND,
        ItemsError::InvalidQuery(_) | ItemsError::InvalidPayload(_) | ItemsError::NotUnique(_) => {
            StatusCode::BAD_REQUEST
        }
        ItemsError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ItemsError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
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
        if matches!(self, HttpError::Busy) {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
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
            HttpError::Items(e @ ItemsError::Internal(_)) => {
                log::error!("items service failure: {e}");
                items_body(items_status(e), e.code(), UNEXPECTED)
            }
            HttpError::Items(e) => items_body(items_status(e), e.code(), &message),
            HttpError::InvalidCredentials => {
                items_body(StatusCode::UNAUTHORIZED, "INVALID_CREDENTIALS", &message)
            }
            HttpError::SignInRefused => {
                items_body(StatusCode::UNAUTHORIZED, "INVALID_CREDENTIALS", &message)
            }
            HttpError::ExtensionInvalidToken => simple_body(StatusCode::UNAUTHORIZED, &message),
            HttpError::PayloadTooLarge => simple_body(StatusCode::PAYLOAD_TOO_LARGE, &message),
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
        }
    }
}
