//! What browsers need: cookies (read and set), CORS as Directus configures
//! it, and the rule that a request authenticated by cookie that changes
//! state is JSON or comes from an origin the host trusts, so that another
//! site cannot make it.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cookie::{Cookie, SameSite};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::{credentials, AppState, Credentials, HttpError};
use crate::platform::PlatformError;
use crate::signin::settings::{CookieSettings, CorsOrigin, CorsSettings, Settings};

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

/// The refusal of a state-changing request that a cookie authenticates,
/// that is not JSON and that no trusted origin vouches for.
pub fn cookie_form_refused() -> HttpError {
    HttpError::Items(PlatformError::Forbidden(
        "A request authenticated by cookie that changes data must be sent as application/json, \
         or come from the site itself: its Origin (or, without one, its Referer) must be the \
         host's own origin or one CORS_ORIGIN lists."
            .into(),
    ))
}

fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The origin (`scheme://host[:port]`) of a web address; `None` for
/// anything that is not an absolute `http` or `https` URL (`null`, a
/// `file:` page, a relative path).
fn web_origin(text: &str) -> Option<String> {
    let url = url::Url::parse(text.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    Some(url.origin().ascii_serialization())
}

/// The one value of header `name`; `None` when it is absent, sent twice
/// or not text.
fn single(headers: &HeaderMap, name: header::HeaderName) -> Option<Option<&str>> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    Some(match values.next() {
        Some(_) => None,
        None => first.to_str().ok(),
    })
}

/// Where the browser says a request comes from: its `Origin`, or, when it
/// sent none, the origin of its `Referer`. `None` when neither names a web
/// origin; an `Origin` that names none (`null`: a sandboxed page, a
/// redirect from another site) is not looked past.
pub fn request_origin(headers: &HeaderMap) -> Option<String> {
    match single(headers, header::ORIGIN) {
        Some(origin) => origin.and_then(web_origin),
        None => single(headers, header::REFERER)
            .flatten()
            .and_then(web_origin),
    }
}

/// Whether the host trusts `origin` with its cookie: its own origin (that
/// of `PUBLIC_URL` when that is an absolute URL, else the request's `Host`
/// over http or https), or one listed by `CORS_ORIGIN`. An origin that
/// CORS merely echoes (`CORS_ORIGIN=true`) or allows as any (`*`) is not
/// trusted: that would trust every site.
pub fn trusted_origin(origin: &str, host: Option<&str>, settings: &Settings) -> bool {
    let own = match web_origin(&settings.public_url) {
        Some(public) => public == origin,
        None => host.is_some_and(|host| {
            ["http", "https"]
                .iter()
                .any(|scheme| web_origin(&format!("{scheme}://{host}")).as_deref() == Some(origin))
        }),
    };
    own || settings
        .cors
        .as_ref()
        .is_some_and(|cors| match &cors.origin {
            CorsOrigin::List(list) => list
                .iter()
                .any(|listed| web_origin(listed).as_deref() == Some(origin)),
            CorsOrigin::Reflect | CorsOrigin::Any => false,
        })
}

/// Whether a state-changing request authenticated by cookie may go on: it
/// is JSON (a page of another site cannot send that type without the
/// browser asking first, CORS), or its origin is one the host trusts (a
/// page of another site cannot hide its own). A request that names no
/// origin at all is refused.
pub fn cookie_write_allowed(headers: &HeaderMap, settings: &Settings) -> bool {
    is_json(headers)
        || request_origin(headers).is_some_and(|origin| {
            let host = single(headers, header::HOST).flatten();
            trusted_origin(&origin, host, settings)
        })
}

/// Refuses state-changing requests authenticated by the session cookie
/// unless [`cookie_write_allowed`]: another site's page can make the
/// browser send the cookie, but neither as JSON (without CORS's say) nor
/// with the host's origin.
pub async fn refuse_cookie_forms(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if changes_state(request.method())
        && !cookie_write_allowed(request.headers(), &state.signin.settings)
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

    fn settings_of(vars: &[(&str, &str)]) -> Settings {
        Settings::from_env(&crate::settings::Env::of(vars)).expect("valid settings")
    }

    fn headers(pairs: &[(header::HeaderName, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(name.clone(), HeaderValue::from_static(value));
        }
        h
    }

    /// A multipart request to the host at `127.0.0.1:8055` with `pairs`.
    fn multipart_from(pairs: &[(header::HeaderName, &'static str)]) -> HeaderMap {
        let mut h = headers(pairs);
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8055"));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("multipart/form-data; boundary=x"),
        );
        h
    }

    #[test]
    fn the_origin_is_the_origin_header_else_the_referer() {
        assert_eq!(
            request_origin(&headers(&[(header::ORIGIN, "https://site.example")])).as_deref(),
            Some("https://site.example")
        );
        assert_eq!(
            request_origin(&headers(&[(
                header::REFERER,
                "http://127.0.0.1:8055/profile/edit?tab=avatar"
            )]))
            .as_deref(),
            Some("http://127.0.0.1:8055")
        );
        // The Origin wins over the Referer.
        assert_eq!(
            request_origin(&headers(&[
                (header::ORIGIN, "https://evil.example"),
                (header::REFERER, "https://site.example/page"),
            ]))
            .as_deref(),
            Some("https://evil.example")
        );
        // Default ports and case are the origin's, not the text's.
        assert_eq!(
            request_origin(&headers(&[(header::ORIGIN, "HTTPS://Site.Example:443")])).as_deref(),
            Some("https://site.example")
        );
        // None at all, `null`, and what is no web origin.
        assert_eq!(request_origin(&HeaderMap::new()), None);
        assert_eq!(request_origin(&headers(&[(header::ORIGIN, "null")])), None);
        assert_eq!(
            request_origin(&headers(&[
                (header::ORIGIN, "null"),
                (header::REFERER, "https://site.example/page"),
            ])),
            None,
            "a null Origin is not looked past"
        );
        assert_eq!(
            request_origin(&headers(&[(header::REFERER, "file:///home/me/page.html")])),
            None
        );
        assert_eq!(
            request_origin(&headers(&[
                (header::ORIGIN, "https://site.example"),
                (header::ORIGIN, "https://evil.example"),
            ])),
            None,
            "two Origins name none"
        );
    }

    #[test]
    fn the_hosts_own_origin_is_trusted() {
        let plain = settings_of(&[]);
        for origin in ["http://127.0.0.1:8055", "https://127.0.0.1:8055"] {
            assert!(
                trusted_origin(origin, Some("127.0.0.1:8055"), &plain),
                "{origin}"
            );
        }
        assert!(!trusted_origin(
            "http://127.0.0.1:9999",
            Some("127.0.0.1:8055"),
            &plain
        ));
        assert!(!trusted_origin(
            "https://evil.example",
            Some("127.0.0.1:8055"),
            &plain
        ));
        assert!(!trusted_origin("http://127.0.0.1:8055", None, &plain));
        assert!(trusted_origin(
            "http://site.example",
            Some("site.example:80"),
            &plain
        ));

        // With an absolute PUBLIC_URL, that is the host's origin.
        let public = settings_of(&[("PUBLIC_URL", "https://site.example/api/")]);
        assert!(trusted_origin(
            "https://site.example",
            Some("10.0.0.5:8055"),
            &public
        ));
        assert!(!trusted_origin(
            "http://10.0.0.5:8055",
            Some("10.0.0.5:8055"),
            &public
        ));
        assert!(!trusted_origin(
            "http://site.example",
            Some("site.example"),
            &public
        ));
    }

    #[test]
    fn cors_origins_are_trusted_only_when_listed() {
        let listed = settings_of(&[
            ("CORS_ENABLED", "true"),
            ("CORS_ORIGIN", "https://app.example, https://admin.example/"),
        ]);
        assert!(trusted_origin(
            "https://app.example",
            Some("api.example"),
            &listed
        ));
        assert!(trusted_origin(
            "https://admin.example",
            Some("api.example"),
            &listed
        ));
        assert!(!trusted_origin(
            "https://evil.example",
            Some("api.example"),
            &listed
        ));
        for echoing in ["true", "*"] {
            let mut vars = vec![("CORS_ENABLED", "true"), ("CORS_ORIGIN", echoing)];
            if echoing == "*" {
                vars.push(("CORS_CREDENTIALS", "false"));
            }
            let s = settings_of(&vars);
            assert!(
                !trusted_origin("https://evil.example", Some("api.example"), &s),
                "CORS_ORIGIN={echoing}"
            );
            assert!(trusted_origin(
                "https://api.example",
                Some("api.example"),
                &s
            ));
        }
        // A list CORS does not use (CORS off) trusts nobody else.
        let off = settings_of(&[("CORS_ORIGIN", "https://app.example")]);
        assert!(!trusted_origin(
            "https://app.example",
            Some("api.example"),
            &off
        ));
    }

    #[test]
    fn cookie_writes_need_json_or_a_trusted_origin() {
        let s = settings_of(&[]);
        // Trusted, by Origin or, without one, by Referer.
        assert!(cookie_write_allowed(
            &multipart_from(&[(header::ORIGIN, "http://127.0.0.1:8055")]),
            &s
        ));
        assert!(cookie_write_allowed(
            &multipart_from(&[(header::REFERER, "http://127.0.0.1:8055/profile")]),
            &s
        ));
        // Untrusted, missing, null.
        assert!(!cookie_write_allowed(
            &multipart_from(&[(header::ORIGIN, "https://evil.example")]),
            &s
        ));
        assert!(!cookie_write_allowed(
            &multipart_from(&[(
                header::REFERER,
                "https://evil.example/http://127.0.0.1:8055/"
            )]),
            &s
        ));
        assert!(!cookie_write_allowed(&multipart_from(&[]), &s));
        assert!(!cookie_write_allowed(
            &multipart_from(&[(header::ORIGIN, "null")]),
            &s
        ));
        // JSON goes whatever its origin says.
        let mut json = multipart_from(&[(header::ORIGIN, "https://evil.example")]);
        json.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        assert!(cookie_write_allowed(&json, &s));
    }
}
