//! The prologue the platform's routes share: on a blocking worker (the
//! items service is synchronous), who is calling, from the request's
//! credentials, and what the query string asks.

use std::convert::Infallible;
use std::sync::Arc;

use axum::http::request::Parts;
use axum::http::{HeaderMap, Uri};

use super::query_string::parse_query_string;
use super::{authenticate_once, blocking, credentials, AppState, HttpError, Resolved};
use crate::items::Who;
use crate::platform::Platform;
use platform_store::query::WireQuery;

/// A request to be served as its caller: an extractor that never fails
/// (credentials are checked by [`AsCaller::run`], on a blocking worker).
pub struct AsCaller {
    platform: Arc<Platform>,
    head: Arc<RequestHead>,
}

/// The request's headers and URI, copied once from the request and
/// shared (not copied again) with the blocking work and the route's own
/// later steps.
pub struct RequestHead {
    pub headers: HeaderMap,
    pub uri: Uri,
    /// The caller, when a layer resolved the credentials already.
    pub resolved: Option<Resolved>,
}

/// What a route's work is given: the platform, the caller, and the request.
pub struct Call<'a> {
    pub platform: &'a Platform,
    pub who: Who,
    pub uri: &'a Uri,
}

impl Call<'_> {
    /// The request's query string read as the items API's query.
    pub fn query(&self) -> Result<WireQuery, HttpError> {
        parse_query_string(self.uri.query())
    }
}

impl AsCaller {
    pub fn headers(&self) -> &HeaderMap {
        &self.head.headers
    }

    pub fn uri(&self) -> &Uri {
        &self.head.uri
    }

    /// The request's headers and URI, for a route's steps after [`run`]
    /// (which takes the caller).
    ///
    /// [`run`]: AsCaller::run
    pub fn head(&self) -> Arc<RequestHead> {
        self.head.clone()
    }

    /// The caller alone, for routes that do more than one blocking step.
    pub async fn who(&self) -> Result<Who, HttpError> {
        let (platform, head) = (self.platform.clone(), self.head.clone());
        blocking(move || caller(&platform, &head)).await
    }

    /// Runs `work` on a blocking worker as the request's caller; bad
    /// credentials answer before `work` runs.
    pub async fn run<T: Send + 'static>(
        self,
        work: impl FnOnce(Call<'_>) -> Result<T, HttpError> + Send + 'static,
    ) -> Result<T, HttpError> {
        blocking(move || {
            let who = caller(&self.platform, &self.head)?;
            work(Call {
                platform: &self.platform,
                who,
                uri: &self.head.uri,
            })
        })
        .await
    }
}

impl axum::extract::FromRequestParts<AppState> for AsCaller {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Infallible> {
        Ok(Self {
            platform: state.platform.clone(),
            head: Arc::new(RequestHead {
                headers: parts.headers.clone(),
                uri: parts.uri.clone(),
                resolved: parts.extensions.get::<Resolved>().cloned(),
            }),
        })
    }
}

/// Who the request's credentials name (anonymous without any).
pub(super) fn caller(platform: &Platform, head: &RequestHead) -> Result<Who, HttpError> {
    let presented = credentials(platform, &head.headers, &head.uri);
    let accountability = authenticate_once(platform, &presented, head.resolved.as_ref())?;
    Ok(Who::caller(accountability))
}
