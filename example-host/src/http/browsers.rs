//! What browsers need: cookies (read and set), CORS as Directus configures
//! it, and the rule that a request authenticated by cookie that changes
//! state is JSON, so that a cross-site form cannot make it.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cookie::{Cookie, SameSite};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::{credentials, AppState, Credentials, HttpError};
use crate::items::ItemsError;
use crate::signin::settings::{CookieSettings, CorsOrigin, CorsSettings};

/// The value of cookie `name` in the request, if sent.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name && !c.value().is_empty())
        .map(|c| c.value().to_string())
}

/// A `Set-Cookie` value: `value` kept for `max_age`, HttpOnly, on every
/// path, with the configured `SameSite`, `Secure` and `Domain`.
pub fn set_cookie(settings: &CookieSettings, value: &str, max_age: Duration) -> HeaderValue {
    let mut c = Cookie::build((settings.name.clone(), value.to_string()))
        .http_only(true)
        .path("/")
        .secure(settings.secure)
        .same_site(match settings.same_site.as_str() {
            "Strict" => SameSite::Strict,
            "None" => SameSite::None,
            _ => SameSite::Lax,
        })
        .max_age(cookie::time::Duration::seconds(
            i64::try_from(max_age.as_secs()).unwrap_or(i64::MAX),
        ))
        .build();
    if let Some(domain) = &settings.domain {
        c.set_domain(domain.clone());
    }
    HeaderValue::from_str(&c.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A `Set-Cookie` value that removes cookie `settings.name`.
pub fn clear_cookie(settings: &CookieSettings) -> HeaderValue {
    set_cookie(settings, "", Duration::ZERO)
}

/// Whether the request says its body is JSON.
pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Refuses a body that does not say it is JSON, where a cross-site form
/// must not be able to send it (sign-in, registration): a form can send
/// `text/plain` holding JSON, never `application/json`.
pub fn require_json(headers: &HeaderMap) -> Result<(), HttpError> {
    if is_json(headers) {
        Ok(())
    } else {
        Err(HttpError::InvalidPayload(
            "The body must be sent as application/json.".into(),
        ))
    }
}

/// The refusal of a state-changing request that a cookie authenticates and
/// that is not JSON.
pub fn cookie_form_refused() -> HttpError {
    HttpError::Items(ItemsError::Forbidden(
        "A request authenticated by cookie that changes data must be sent as application/json."
            .into(),
    ))
}

fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Refuses state-changing requests authenticated by the session cookie
/// unless they are JSON: a cross-site form can send the cookie, but not
/// that content type without the browser asking first (CORS).
pub async fn refuse_cookie_forms(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if changes_state(request.method())
        && !is_json(request.headers())
        && matches!(
            credentials(&state.platform, request.headers(), request.uri()),
            Credentials::Cookie(_)
        )
    {
        return cookie_form_refused().into_response();
    }
    next.run(request).await
}

/// The CORS layer of `CORS_*` (a layer that adds nothing when disabled).
pub fn cors(settings: Option<&CorsSettings>) -> CorsLayer {
    let Some(settings) = settings else {
        return CorsLayer::new();
    };
    let origin = match &settings.origin {
        CorsOrigin::Reflect => AllowOrigin::mirror_request(),
        CorsOrigin::Any => AllowOrigin::any(),
        CorsOrigin::List(list) => AllowOrigin::list(
            list.iter()
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect::<Vec<_>>(),
        ),
    };
    CorsLayer::new()
        .allow_origin(origin)
        .allow_methods([
            Method::GET,
            Method::POST,
            Method::PATCH,
            Method::PUT,
            Method::DELETE,
        ])
        .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION])
        .expose_headers([header::CONTENT_RANGE])
        .allow_credentials(settings.credentials)
        .max_age(Duration::from_secs(18_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> CookieSettings {
        CookieSettings {
            name: "directus_session_token".into(),
            secure: true,
            same_site: "Strict".into(),
            domain: Some("example.com".into()),
        }
    }

    #[test]
    fn cookies_carry_the_configured_attributes() {
        let v = set_cookie(&settings(), "abc", Duration::from_secs(60));
        let v = v.to_str().unwrap();
        for part in [
            "directus_session_token=abc",
            "HttpOnly",
            "Secure",
            "SameSite=Strict",
            "Path=/",
            "Domain=example.com",
            "Max-Age=60",
        ] {
            assert!(v.contains(part), "{part} missing from {v}");
        }
        let cleared = clear_cookie(&settings());
        assert!(cleared.to_str().unwrap().contains("Max-Age=0"));
    }

    #[test]
    fn a_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; directus_session_token=tok; b=2"),
        );
        assert_eq!(cookie(&h, "directus_session_token").as_deref(), Some("tok"));
        assert_eq!(cookie(&h, "missing"), None);
    }

    #[test]
    fn json_is_recognised_with_parameters() {
        let mut h = HeaderMap::new();
        assert!(!is_json(&h));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
        assert!(is_json(&h));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        assert!(!is_json(&h));
    }
}
