//! `/admin`: the platform's sign-in page, in the host's binary: sign-in on
//! the session cookie, sign-out, a password-reset request and, at
//! `/admin/reset-password?token=` (the mailed link when no `reset_url` is
//! given), a new password; all over the platform's own HTTP API. Where
//! Directus sends a verified registration
//! (`GET /users/register/verify-email`).

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

const INDEX: &str = include_str!("admin/index.html");
const APP: &str = include_str!("admin/app.js");

/// Its own scripts only, never framed.
const POLICY: &str = "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

fn page(content_type: &'static str, body: &'static str) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `/admin`: on to `/admin/`, where the page's relative links resolve.
pub async fn root() -> Redirect {
    Redirect::permanent("/admin/")
}

/// `/admin/` and `/admin/reset-password`: the page.
pub async fn index() -> Response {
    page("text/html; charset=utf-8", INDEX)
}

/// `/admin/app.js`: its script.
pub async fn script() -> Response {
    page("text/javascript; charset=utf-8", APP)
}
