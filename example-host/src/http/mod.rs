//! The HTTP face of the platform: the host's routes, extension mounts,
//! authentication of each request, body limits and graceful shutdown.

mod access_api;
mod access_log;
mod admin_app;
mod as_caller;
mod assets_api;
mod auth_api;
mod browsers;
mod collection_api;
mod comments_api;
mod errors;
mod extension_api;
mod files_api;
mod items_api;
mod query_string;
pub mod routes;
mod schema_api;
mod server_api;
mod throttle;
mod unauthenticated;
mod users_api;

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Uri};
use axum::Router;
use http_body_util::BodyExt;
use tokio::sync::watch;

pub use errors::HttpError;
pub use extension_api::call_extension;
pub use unauthenticated::UnauthenticatedBodies;

use crate::accounts::CallerAccount;
use crate::auth::AuthError;
use crate::extensions::Registry;
use crate::platform::Platform;

/// Limits on clients and extensions.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_payload: usize,
    /// Most items of one array create on `/items` (`MAX_BATCH_MUTATION`).
    pub max_batch_mutation: usize,
    pub extension_timeout: Duration,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub platform: Arc<Platform>,
    pub registry: Arc<Registry>,
    pub limits: Limits,
    pub signin: Arc<crate::signin::SignIn>,
    /// What requests that are not authenticated may make the host hold.
    pub unauthenticated: Arc<UnauthenticatedBodies>,
    pub throttle: Arc<crate::throttle::Throttle>,
    /// File storage and the rules of uploads.
    pub files: Arc<crate::files::Files>,
}

pub fn router(state: AppState) -> Router {
    routes::host_router(&state)
        .fallback(extension_api::dispatch)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            browsers::refuse_cookie_forms,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            unauthenticated::bound_unauthenticated_bodies,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            throttle::limit_requests,
        ))
        .layer(browsers::cors(state.signin.settings.cors.as_ref()))
        .layer(axum::middleware::from_fn(access_log::log_requests))
        .with_state(state)
}

/// A host route asked with a method it does not serve: 405, in the items
/// API's JSON shape like every other error.
async fn method_not_allowed(method: axum::http::Method, uri: Uri) -> HttpError {
    HttpError::MethodNotAllowed(format!("{method} {}", uri.path()))
}

/// Serves the connections of `listener` until `stop` completes, then
/// tells the host's other tasks (`shutdown_tx`) and finishes in-flight
/// requests.
///
/// Connections are served by hyper directly (rather than `axum::serve`) for
/// its header-read timeout: a client that never finishes its headers is
/// dropped instead of holding a connection.
pub async fn serve_connections(
    listener: tokio::net::TcpListener,
    state: AppState,
    stop: impl std::future::Future<Output = ()>,
    shutdown_tx: watch::Sender<bool>,
) {
    let header_timeout = state.limits.header_timeout;
    let app = router(state);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        log::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                // The peer, for the throttles (`throttle::client_address`).
                let app = tower_layer::Layer::layer(
                    &axum::Extension(axum::extract::ConnectInfo(peer)),
                    app.clone(),
                );
                let service = hyper_util::service::TowerToHyperService::new(app);
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .keep_alive(true)
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    if let Err(e) = connection.await {
                        log::debug!("connection from {peer} ended: {e}");
                    }
                });
            }
            _ = &mut shutdown => break,
        }
    }
    log::info!("shutting down: finishing in-flight requests");
    let _ = shutdown_tx.send(true);
    drop(listener);
    if tokio::time::timeout(Duration::from_secs(30), graceful.shutdown())
        .await
        .is_err()
    {
        log::warn!("some connections did not finish within 30 s");
    }
}

/// Completes on SIGINT or SIGTERM. The handlers are installed when this is
/// called, not when the future is first polled: a signal that comes as
/// soon as the host answers must not meet the default action (the process
/// killed mid-write).
pub(crate) fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let (interrupt, terminate) = {
        use tokio::signal::unix::{signal, SignalKind};
        (
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let received = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = received(interrupt) => {}
                _ = received(terminate) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Reads a body up to the configured size, within the body timeout.
pub async fn read_body(
    body: Body,
    headers: &HeaderMap,
    limits: &Limits,
) -> Result<Bytes, HttpError> {
    read_body_within(body, headers, limits, limits.max_payload)
        .await
        .map(Bytes::from)
}

/// The body, refused (413) past `limit` bytes or the host's own limit,
/// whichever is smaller: a body declared larger is refused before any of it
/// is read, and the buffer is sized once from the declared length.
pub async fn read_body_within(
    body: Body,
    headers: &HeaderMap,
    limits: &Limits,
    limit: usize,
) -> Result<Vec<u8>, HttpError> {
    let limit = limit.min(limits.max_payload);
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > (limit + DRAIN_LIMIT) as u64) {
        return Err(HttpError::PayloadTooLarge);
    }
    let expected = declared.map_or(0, |n| (n as usize).min(limit));
    tokio::time::timeout(limits.body_timeout, collect_within(body, limit, expected))
        .await
        .map_err(|_| HttpError::BodyTimeout)?
}

/// How much of a refused body is still read and thrown away: answering
/// while the client is still sending makes the closing connection reset,
/// and the client may never see the 413.
const DRAIN_LIMIT: usize = 1024 * 1024;

/// Collects the body, or reads up to [`DRAIN_LIMIT`] past `limit` and
/// refuses it.
async fn collect_within(
    mut body: Body,
    limit: usize,
    expected: usize,
) -> Result<Vec<u8>, HttpError> {
    let mut data = Vec::with_capacity(expected);
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            if unauthenticated::is_length_limit(&e) {
                HttpError::PayloadTooLarge
            } else {
                HttpError::InvalidPayload(format!("could not read the body: {e}"))
            }
        })?;
        let Ok(chunk) = frame.into_data() else {
            continue;
        };
        seen += chunk.len();
        if seen > limit + DRAIN_LIMIT {
            return Err(HttpError::PayloadTooLarge);
        }
        if seen <= limit {
            data.extend_from_slice(&chunk);
        }
    }
    if seen > limit {
        return Err(HttpError::PayloadTooLarge);
    }
    Ok(data)
}

/// What a request presents as credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    Anonymous,
    Token(String),
    /// The access token of the session cookie: sent by the browser on its
    /// own, so a request it authenticates that changes state must be JSON
    /// (see `browsers`).
    Cookie(String),
    /// An `Authorization` header that is not `Bearer <token>` in UTF-8:
    /// refused like a wrong token, never taken for anonymous.
    Malformed,
}

/// The credentials of a request: `Authorization: Bearer …` or `?access_token=`,
/// else the session cookie (a token the client names wins over the one its
/// browser sends along, as in Directus).
/// Credentials that disagree (a header and a query token that differ, two
/// different query tokens) are refused like a wrong token (docs/decisions.md
/// §3): serving the request as one of them would let the other go unchecked.
pub fn credentials(platform: &Platform, headers: &HeaderMap, uri: &Uri) -> Credentials {
    match named_credentials(headers, uri) {
        Credentials::Anonymous => platform
            .auth
            .session_cookie()
            .and_then(|name| browsers::cookie(headers, name))
            .map_or(Credentials::Anonymous, Credentials::Cookie),
        named => named,
    }
}

/// The query parameter that carries a token.
const TOKEN_PARAMETER: &str = "access_token";

/// Whether a `name=value` pair of a raw query string carries a token: its
/// name, percent-decoded as every query is read, is `access_token`
/// (`access%5Ftoken` too). The one test of every reader of the query that
/// must find or hide the token: the credentials, the access log, the query
/// handed to extensions.
pub fn is_token_pair(pair: &str) -> bool {
    let name = pair.split_once('=').map_or(pair, |(name, _)| name);
    form_urlencoded::parse(name.as_bytes())
        .next()
        .is_some_and(|(name, _)| name == TOKEN_PARAMETER)
}

/// The credentials a request names itself (header or query).
fn named_credentials(headers: &HeaderMap, uri: &Uri) -> Credentials {
    let mut presented: Vec<String> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|pair| is_token_pair(pair))
        .filter_map(|pair| form_urlencoded::parse(pair.as_bytes()).next())
        .map(|(_, v)| v.into_owned())
        .collect();
    let authorization = headers.get_all(axum::http::header::AUTHORIZATION);
    if authorization.iter().next().is_some() {
        for value in authorization {
            let Ok(value) = value.to_str() else {
                return Credentials::Malformed;
            };
            let mut parts = value.trim().splitn(2, ' ');
            match (parts.next(), parts.next()) {
                (Some(scheme), Some(token))
                    if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
                {
                    presented.push(token.trim().to_string());
                }
                _ => return Credentials::Malformed,
            }
        }
    } else {
        // Alone, an empty `access_token=` is no credential at all.
        presented.retain(|t| !t.is_empty());
    }
    match presented.split_first() {
        None => Credentials::Anonymous,
        Some((first, rest)) if rest.iter().all(|t| t == first) => Credentials::Token(first.clone()),
        Some(_) => Credentials::Malformed,
    }
}

/// The caller a layer resolved from this request's credentials, kept in
/// the request's extensions: what runs after it takes this instead of
/// resolving the same credentials again (each resolution reads the data
/// version, a round trip on PostgreSQL).
#[derive(Debug, Clone)]
pub struct Resolved(pub Option<CallerAccount>);

/// The request's caller: as a layer resolved it, or resolved now.
pub fn authenticate_once(
    platform: &Platform,
    credentials: &Credentials,
    resolved: Option<&Resolved>,
) -> Result<Option<CallerAccount>, AuthError> {
    match resolved {
        Some(Resolved(caller)) => Ok(caller.clone()),
        None => authenticate(platform, credentials),
    }
}

/// Resolves credentials (blocking: may read the database).
pub fn authenticate(
    platform: &Platform,
    credentials: &Credentials,
) -> Result<Option<CallerAccount>, AuthError> {
    match credentials {
        Credentials::Anonymous => Ok(None),
        Credentials::Malformed => Err(AuthError::InvalidToken),
        Credentials::Token(t) | Credentials::Cookie(t) => platform
            .auth
            .authenticate(platform.store.as_ref(), t)
            .map(Some),
    }
}

/// Refuses, on the host's public routes, credentials that match no active
/// user (docs/decisions.md §3: a bad token gets 401 on every route).
pub async fn reject_bad_credentials(
    axum::extract::State(state): axum::extract::State<AppState>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let credentials = credentials(&state.platform, request.headers(), request.uri());
    let known = request.extensions().get::<Resolved>().is_some();
    if credentials != Credentials::Anonymous && !known {
        let platform = state.platform.clone();
        let checked = blocking(move || Ok(authenticate(&platform, &credentials)?)).await;
        match checked {
            Ok(caller) => {
                request.extensions_mut().insert(Resolved(caller));
            }
            Err(e) => return axum::response::IntoResponse::into_response(e),
        }
    }
    next.run(request).await
}

/// Runs blocking work (database, extension calls) off the async workers.
///
/// At most [`work_slots`] such jobs run at once: more would only contend for
/// the cores and the database, and each holds its request's data in memory.
/// The slot belongs to the waiting request, not to the thread: a request
/// that gives up (an extension timeout) frees it.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, HttpError> + Send + 'static,
) -> Result<T, HttpError> {
    let _slot = WORK_SLOTS
        .get_or_init(|| tokio::sync::Semaphore::new(work_slots()))
        .acquire()
        .await
        .map_err(|e| HttpError::Internal(format!("worker slots closed: {e}")))?;
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(HttpError::Internal(format!("worker failed: {e}"))))
}

static WORK_SLOTS: once_cell::sync::OnceCell<tokio::sync::Semaphore> =
    once_cell::sync::OnceCell::new();

/// Blocking jobs at once: four per core, at least eight.
pub fn work_slots() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get() * 4)
        .unwrap_or(8)
        .max(8)
}
