//! What a request nobody has vouched for may make the host hold. Bodies
//! are read whole before a handler runs, so without a bound anonymous
//! clients declaring large bodies could pin the host's memory until the
//! body timeout. A request with a body is authenticated first (cheap: the
//! credentials are cached); one that is anonymous, or whose credentials
//! fail, may send at most `ANONYMOUS_MAX_PAYLOAD_SIZE` bytes (413 past it,
//! before a byte is read when the length is declared), and all of them
//! together at most `ANONYMOUS_PAYLOAD_BUDGET` at once (503 with
//! `Retry-After` past it). Authenticated requests keep the host's and
//! their route's limits.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::Limited;
use tokio::sync::Semaphore;

use super::{authenticate, blocking, credentials, AppState, Credentials, HttpError, Resolved};

/// The bounds on unauthenticated bodies.
pub struct UnauthenticatedBodies {
    /// Largest body of one such request, in bytes.
    pub max_payload: usize,
    /// Bytes all of them may hold at once, in KiB permits.
    budget: Semaphore,
    budget_kib: usize,
}

impl UnauthenticatedBodies {
    pub fn new(max_payload: usize, budget_bytes: usize) -> Self {
        let budget_kib = (budget_bytes / 1024).clamp(1, Semaphore::MAX_PERMITS);
        Self {
            max_payload,
            budget: Semaphore::new(budget_kib),
            budget_kib,
        }
    }
}

/// Whether the request may carry a body at all.
fn has_body(method: &Method, headers: &HeaderMap) -> bool {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(n) => n > 0,
        None => {
            headers.contains_key(header::TRANSFER_ENCODING)
                || !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
        }
    }
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// The layer: authenticated requests pass as they are; the others are
/// held to the bounds above while they are served.
pub async fn bound_unauthenticated_bodies(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    if !has_body(request.method(), request.headers()) {
        return next.run(request).await;
    }
    let presented = credentials(&state.platform, request.headers(), request.uri());
    if presented != Credentials::Anonymous {
        let platform = state.platform.clone();
        let checked = blocking(move || Ok(authenticate(&platform, &presented).ok())).await;
        match checked {
            Ok(Some(caller)) => {
                // The route takes the caller from here.
                request.extensions_mut().insert(Resolved(caller));
                return next.run(request).await;
            }
            Ok(None) => {}
            Err(e) => return e.into_response(),
        }
    }
    let bounds = &state.unauthenticated;
    let declared = declared_length(request.headers());
    if declared.is_some_and(|n| n > bounds.max_payload as u64) {
        return HttpError::PayloadTooLarge.into_response();
    }
    let charge = declared
        .map_or(bounds.max_payload, |n| n as usize)
        .div_ceil(1024)
        .clamp(1, bounds.budget_kib) as u32;
    let Ok(_held) = bounds.budget.try_acquire_many(charge) else {
        log::warn!(
            "unauthenticated request bodies are at their budget: a request was answered 503"
        );
        return HttpError::Busy.into_response();
    };
    let (parts, body) = request.into_parts();
    let limited = Body::new(Limited::new(body, bounds.max_payload));
    next.run(Request::from_parts(parts, limited)).await
}

/// Whether a body error is the bound of [`Limited`] being passed.
pub fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_expected_from_its_headers_or_method() {
        let mut headers = HeaderMap::new();
        assert!(!has_body(&Method::GET, &headers));
        assert!(has_body(&Method::POST, &headers));
        headers.insert(header::CONTENT_LENGTH, "0".parse().unwrap());
        assert!(!has_body(&Method::POST, &headers));
        headers.insert(header::CONTENT_LENGTH, "12".parse().unwrap());
        assert!(has_body(&Method::GET, &headers));
    }

    #[test]
    fn the_budget_is_counted_in_kib() {
        let bounds = UnauthenticatedBodies::new(1024 * 1024, 4 * 1024 * 1024);
        assert_eq!(bounds.budget_kib, 4096);
        let held = bounds.budget.try_acquire_many(1024).unwrap();
        assert_eq!(bounds.budget.available_permits(), 3072);
        drop(held);
        assert_eq!(bounds.budget.available_permits(), 4096);
    }
}
