//! Throttling at the edge (see `crate::throttle`): the client's address,
//! Directus's rate limiter on every request, the sign-in throttle that
//! `/auth/login` consults before it checks a password (and the requests
//! that mail an account, before they do), and the throttle `/assets`
//! consults before it computes a transformation.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use super::{blocking, AppState, HttpError};
use crate::throttle::{now_ms, LoginThrottle, ThrottleError, Verdict};

/// The client's address as the throttles count it (see
/// [`client_address`]), set on every request by [`limit_requests`];
/// `None` when the connection's peer is unknown (a router called without
/// a socket).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddress(pub Option<IpAddr>);

/// The client's address: the connection's peer, or with `IP_TRUST_PROXY`
/// the last address of `X-Forwarded-For`, which the proxy in front of the
/// host appended (the ones before it are the client's own say). Without
/// the setting the header is ignored: any client could name any address.
pub fn client_address(
    peer: Option<SocketAddr>,
    headers: &HeaderMap,
    trust_proxy: bool,
) -> Option<IpAddr> {
    let forwarded = || {
        headers
            .get_all("x-forwarded-for")
            .iter()
            .next_back()?
            .to_str()
            .ok()?
            .rsplit(',')
            .next()?
            .trim()
            .parse::<IpAddr>()
            .ok()
    };
    trust_proxy
        .then(forwarded)
        .flatten()
        .or(peer.map(|p| p.ip()))
}

/// Runs a limiter's call where it belongs: on the database, off the async
/// workers; in memory, here.
async fn counted(
    blocks: bool,
    count: impl FnOnce() -> Result<Verdict, ThrottleError> + Send + 'static,
) -> Result<Verdict, HttpError> {
    if blocks {
        blocking(move || Ok(count()?)).await
    } else {
        Ok(count()?)
    }
}

/// The rate limiter (`RATE_LIMITER_*`): a point per request and client
/// address, 429 past the limit. Sets every request's [`ClientAddress`].
pub async fn limit_requests(
    State(state): State<AppState>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    let address = client_address(peer, request.headers(), state.throttle.trust_proxy);
    request.extensions_mut().insert(ClientAddress(address));
    if let (Some(limiter), Some(address)) = (&state.throttle.requests, address) {
        let limiter = limiter.clone();
        let subject = crate::throttle::address_subject(address);
        let verdict = counted(limiter.blocks(), move || {
            limiter.consume(&subject, now_ms())
        })
        .await;
        match verdict {
            Ok(Ok(())) => {}
            Ok(Err(refused)) => return HttpError::from(refused).into_response(),
            Err(e) => return e.into_response(),
        }
    }
    next.run(request).await
}

/// A sign-in attempt the throttle counted: settled when its answer is
/// known.
pub struct LoginAttempt {
    throttle: Option<Arc<LoginThrottle>>,
    email: String,
    address: Option<IpAddr>,
}

/// Counts an attempt to sign in as `email` from `client`, before anything
/// about the account is read: 429 past a bound, the same for an account
/// that exists and one that does not.
pub async fn login_attempt(
    state: &AppState,
    client: ClientAddress,
    email: &str,
) -> Result<LoginAttempt, HttpError> {
    let attempt = LoginAttempt {
        throttle: state.throttle.login.clone(),
        email: email.to_string(),
        address: client.0,
    };
    if let Some(throttle) = attempt.throttle.clone() {
        let (email, address) = (attempt.email.clone(), attempt.address);
        counted(throttle.blocks(), move || {
            throttle.attempt(&email, address, now_ms())
        })
        .await??;
    }
    Ok(attempt)
}

/// Counts a request that mails the account of `email` (a password
/// reset, a registration) from `client`: 429 past the sign-in throttle's
/// bounds per email and per address, the same whether or not the email
/// names an account. Counted and never given back.
pub async fn mail_request(
    state: &AppState,
    client: ClientAddress,
    email: &str,
) -> Result<(), HttpError> {
    if let Some(throttle) = state.throttle.login.clone() {
        let (email, address) = (email.to_string(), client.0);
        counted(throttle.blocks(), move || {
            throttle.mail_request(&email, address, now_ms())
        })
        .await??;
    }
    Ok(())
}

/// Counts a transformation that is not kept yet (so is to be computed)
/// against its caller, the signed-in `user` or else `client`'s address:
/// 429 past `ASSETS_TRANSFORM_THROTTLE_POINTS` a window.
pub async fn first_transform(
    state: &AppState,
    client: ClientAddress,
    user: Option<&str>,
) -> Result<(), HttpError> {
    let (Some(limiter), Some(subject)) = (
        state.throttle.transforms.clone(),
        crate::throttle::transform_subject(user, client.0),
    ) else {
        return Ok(());
    };
    counted(limiter.blocks(), move || {
        limiter.consume(&subject, now_ms())
    })
    .await??;
    Ok(())
}

impl LoginAttempt {
    /// Settles the count with the sign-in's outcome: a success clears the
    /// account's failures; a refusal of the credentials keeps its points;
    /// any other failure gives them back. A failure to settle is logged:
    /// it does not change the answer.
    pub async fn settle<T>(self, outcome: &Result<T, HttpError>) {
        let Some(throttle) = self.throttle else {
            return;
        };
        let succeeded = match outcome {
            Ok(_) => true,
            Err(HttpError::SignInRefused) => return,
            Err(_) => false,
        };
        let (email, address) = (self.email, self.address);
        let settled = counted(throttle.blocks(), move || {
            let now = now_ms();
            if succeeded {
                throttle.succeeded(&email, address, now)?;
            } else {
                throttle.not_judged(&email, address, now)?;
            }
            Ok(Ok(()))
        })
        .await;
        if let Err(e) = settled {
            log::warn!("the sign-in throttle could not settle an attempt: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(forwarded: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for f in forwarded {
            h.append("x-forwarded-for", f.parse().unwrap());
        }
        h
    }

    #[test]
    fn the_peer_is_the_client_unless_a_proxy_is_trusted() {
        let peer: Option<SocketAddr> = Some("10.0.0.5:4000".parse().unwrap());
        let via = headers(&["203.0.113.9, 198.51.100.2"]);
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        assert_eq!(client_address(peer, &via, false), ip("10.0.0.5"));
        // The last address is the one the proxy appended.
        assert_eq!(client_address(peer, &via, true), ip("198.51.100.2"));
        assert_eq!(
            client_address(peer, &headers(&["1.1.1.1", "2001:db8::7"]), true),
            ip("2001:db8::7")
        );
        // No header, or an unreadable one: the peer.
        assert_eq!(client_address(peer, &headers(&[]), true), ip("10.0.0.5"));
        assert_eq!(
            client_address(peer, &headers(&["not an address"]), true),
            ip("10.0.0.5")
        );
        assert_eq!(client_address(None, &headers(&[]), false), None);
    }
}
