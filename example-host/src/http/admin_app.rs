//! `/admin`: the platform's admin app (built from `admin-app/` into
//! `admin-dist/`, committed, and embedded in the binary): its files by
//! path, and its page for every other path under `/admin/`, where the app
//! routes itself (`/admin/content/videos`, `/admin/reset-password?token=`,
//! the mailed link when no `reset_url` is given). Where Directus sends a
//! verified registration (`GET /users/register/verify-email`).

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "admin-dist/"]
struct Dist;

/// The app's own scripts only (no inline script), never framed; images
/// and media from the host or from files the app is about to upload.
/// Inline styles: the code editor and the charts set theirs at run time.
const POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' blob: data:; media-src 'self' blob:; connect-src 'self'; object-src 'none'; \
frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Vite names each built asset by a hash of its content: cached for good.
const HASHED: &str = "assets/";

/// How the browser may cache a file of the app.
fn cache_control(path: &str) -> &'static str {
    if path.starts_with(HASHED) {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    }
}

/// Text is UTF-8, as Vite writes it.
fn with_charset(mime: &str) -> String {
    if mime.starts_with("text/") || mime.ends_with("javascript") || mime.ends_with("json") {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_string()
    }
}

/// A file of the app, or `None` when there is no such file.
fn file(path: &str) -> Option<Response> {
    let found = Dist::get(path)?;
    let content_type = HeaderValue::from_str(&with_charset(found.metadata.mimetype()))
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    Some(
        (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, content_type),
                (
                    header::CONTENT_SECURITY_POLICY,
                    HeaderValue::from_static(POLICY),
                ),
                (
                    header::X_CONTENT_TYPE_OPTIONS,
                    HeaderValue::from_static("nosniff"),
                ),
                (
                    header::CACHE_CONTROL,
                    HeaderValue::from_static(cache_control(path)),
                ),
            ],
            found.data,
        )
            .into_response(),
    )
}

/// The app's page; a host built without it says so.
fn page() -> Response {
    file("index.html").unwrap_or_else(|| {
        (
            StatusCode::NOT_FOUND,
            "the admin app is not built into this host (admin-dist/index.html is missing)",
        )
            .into_response()
    })
}

/// `/admin`: on to `/admin/`, where the app's relative paths resolve.
pub async fn root() -> Redirect {
    Redirect::permanent("/admin/")
}

/// `/admin/`: the app's page.
pub async fn index() -> Response {
    page()
}

/// `/admin/{*path}`: a file of the app, or its page for the app's own
/// routes. A missing hashed asset is a 404, not the page.
pub async fn path(Path(path): Path<String>) -> Response {
    match file(&path) {
        Some(found) => found,
        None if path.starts_with(HASHED) => StatusCode::NOT_FOUND.into_response(),
        None => page(),
    }
}

#[cfg(test)]
mod tests {
    use super::cache_control;

    #[test]
    fn only_hashed_assets_are_cached_for_good() {
        assert_eq!(
            cache_control("assets/index-AbC123.js"),
            "public, max-age=31536000, immutable"
        );
        assert_eq!(cache_control("index.html"), "no-cache");
        assert_eq!(cache_control("favicon.svg"), "no-cache");
    }
}
