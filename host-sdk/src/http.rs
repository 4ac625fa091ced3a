//! Typed requests and responses of extension routes.

use std::collections::HashMap;

use serde::{de::DeserializeOwned, Serialize};

use abi_stable::std_types::{RArc, RVec};

use crate::abi::{FfiRequest, FfiResponse, FfiSharedResponse};
use crate::error::ApiError;
use crate::raw::RawJson;

/// An HTTP request routed to the extension.
///
/// Each part of the request has one reader, named after it:
/// [`path_param`](Request::path_param), [`query`](Request::query),
/// [`header`](Request::header) and [`body`](Request::body) give it as
/// sent (`None` when absent); the same name with `_as`
/// ([`path_param_as`](Request::path_param_as),
/// [`query_as`](Request::query_as), [`body_as`](Request::body_as)) parses
/// it into a type of yours, or answers 400 with the reason in `details`.
#[derive(Debug, Clone, Default)]
pub struct Request {
    method: String,
    path: String,
    params: HashMap<String, String>,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    /// A request as a host would deliver it; for tests of handlers.
    pub fn new(method: &str, path_and_query: &str, body: impl Into<Vec<u8>>) -> Self {
        let (path, query) = path_and_query
            .split_once('?')
            .unwrap_or((path_and_query, ""));
        Self {
            method: method.to_ascii_uppercase(),
            path: path.to_string(),
            params: HashMap::new(),
            query: parse_query(query),
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub(crate) fn from_ffi(r: &FfiRequest) -> Self {
        Self {
            method: r.method.to_string(),
            path: r.path.to_string(),
            params: HashMap::new(),
            query: parse_query(&r.query),
            headers: r
                .headers
                .iter()
                .map(|t| (t.0.to_string(), t.1.to_string()))
                .collect(),
            body: r.body.to_vec(),
        }
    }

    pub(crate) fn push_header(&mut self, name: &str, value: &str) {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_string()));
    }

    pub(crate) fn set_params(&mut self, params: HashMap<String, String>) {
        self.params = params;
    }

    /// The HTTP method, upper-case.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The path below the extension's mount point.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// A path parameter (`:name` in the route), `None` when the route has
    /// none of that name (SDK 1.8).
    pub fn path_param(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    /// A path parameter parsed as `T` (SDK 1.10; `param_as` before): 400
    /// `Invalid path parameter "name"`, with the parser's message as
    /// `details`, when it is absent or does not parse.
    pub fn path_param_as<T>(&self, name: &str) -> Result<T, ApiError>
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
    {
        let refused = || ApiError::bad_request(format!("Invalid path parameter \"{name}\""));
        let text = self
            .path_param(name)
            .ok_or_else(|| refused().with_details("the route has no such parameter"))?;
        text.parse()
            .map_err(|e: T::Err| refused().with_details(e.to_string()))
    }

    /// A path parameter; empty when absent.
    #[deprecated(
        since = "1.10.0",
        note = "use `path_param(name)` (an `Option`; `.unwrap_or_default()` reads \"\" as before)"
    )]
    pub fn param(&self, name: &str) -> &str {
        self.path_param(name).unwrap_or("")
    }

    /// [`Request::path_param_as`] under its SDK 1.8 name.
    #[deprecated(since = "1.10.0", note = "use `path_param_as`")]
    pub fn param_as<T>(&self, name: &str) -> Result<T, ApiError>
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
    {
        self.path_param_as(name)
    }

    /// The query parameters as `T` (SDK 1.8), by name; values parse into
    /// the field's type (`?limit=5` into a `u32`), an `Option` field may
    /// be absent, unknown parameters are ignored unless `T` denies them.
    /// 400 `Invalid query` with serde's message as `details` otherwise.
    pub fn query_as<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        serde_urlencoded::from_str(&self.encoded_query())
            .map_err(|e| ApiError::bad_request("Invalid query").with_details(e.to_string()))
    }

    /// The body as `T` (SDK 1.8): 400 `Invalid JSON body` with serde's
    /// message as `details` (`invalid type: integer `5`, expected a string
    /// at line 1 column 11`) when it does not parse as one. An empty body
    /// reads as `{}`.
    pub fn body_as<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        serde_json::from_slice(self.body_or_empty_object())
            .map_err(|e| ApiError::bad_request("Invalid JSON body").with_details(e.to_string()))
    }

    fn body_or_empty_object(&self) -> &[u8] {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &self.body
        }
    }

    /// The first value of a query parameter, percent-decoded.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A header value (names are case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The path and the decoded query, re-encoded: equal for requests a
    /// cached route must answer alike.
    pub(crate) fn cache_key(&self) -> String {
        let mut key = self.path.clone();
        if !self.query.is_empty() {
            key.push('?');
            key.push_str(&self.encoded_query());
        }
        key
    }

    /// The decoded query, encoded again.
    fn encoded_query(&self) -> String {
        let mut pairs = form_urlencoded::Serializer::new(String::new());
        for (k, v) in &self.query {
            pairs.append_pair(k, v);
        }
        pairs.finish()
    }

    /// The raw body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The body as JSON; an empty body reads as `{}`. Invalid JSON gives
    /// exactly 400 `{"error": "Invalid JSON body"}`, without `details`.
    #[deprecated(
        since = "1.10.0",
        note = "use `body_as` (its 400 adds serde's reason as `details`; \
                `.map_err(|e| ApiError { details: None, ..e })` keeps the bare text)"
    )]
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        serde_json::from_slice(self.body_or_empty_object())
            .map_err(|_| ApiError::bad_request("Invalid JSON body"))
    }
}

fn parse_query(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// An HTTP response of an extension route.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` of the body.
    pub content_type: String,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A JSON response.
    pub fn json<T: Serialize + ?Sized>(status: u16, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(body) => Self {
                status,
                content_type: "application/json".into(),
                body,
            },
            Err(e) => Self::error(&ApiError::internal(format!(
                "could not encode response: {e}"
            ))),
        }
    }

    /// 200 with a JSON body.
    pub fn ok<T: Serialize + ?Sized>(value: &T) -> Self {
        Self::json(200, value)
    }

    /// 200 with JSON text as it is: a record read with
    /// [`Items::read_one_raw`](crate::Items::read_one_raw), or what a
    /// [`JsonOut`](crate::raw::JsonOut) wrote (SDK 1.10; `ok_written`
    /// before). No tree is built or printed.
    pub fn ok_raw(raw: impl RawJson) -> Self {
        Self::json_raw(200, raw)
    }

    /// 200 with the JSON text a [`JsonOut`](crate::raw::JsonOut) wrote.
    #[deprecated(since = "1.10.0", note = "use `Response::ok_raw(out)`")]
    pub fn ok_written(out: crate::raw::JsonOut) -> Self {
        Self::ok_raw(out)
    }

    /// 201 with JSON text as it is (see [`Response::ok_raw`]).
    pub fn created_raw(raw: impl RawJson) -> Self {
        Self::json_raw(201, raw)
    }

    /// A response of this status with JSON text as it is.
    fn json_raw(status: u16, raw: impl RawJson) -> Self {
        Self {
            status,
            content_type: "application/json".into(),
            body: raw.into_json_bytes(),
        }
    }

    /// 201 with a JSON body.
    pub fn created<T: Serialize + ?Sized>(value: &T) -> Self {
        Self::json(201, value)
    }

    /// 204 with no body (SDK 1.9).
    pub fn no_content() -> Self {
        Self {
            status: 204,
            content_type: String::new(),
            body: Vec::new(),
        }
    }

    /// A plain-text response.
    pub fn text(status: u16, text: impl Into<String>) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8".into(),
            body: text.into().into_bytes(),
        }
    }

    /// `{"error": message}` (plus `details`) with the error's status.
    pub fn error(error: &ApiError) -> Self {
        let mut body = serde_json::Map::new();
        body.insert("error".into(), error.message.clone().into());
        if let Some(details) = &error.details {
            body.insert("details".into(), details.clone().into());
        }
        Self {
            status: error.status,
            content_type: "application/json".into(),
            body: serde_json::Value::Object(body).to_string().into_bytes(),
        }
    }

    /// The body parsed as JSON (for tests).
    pub fn json_body(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    pub(crate) fn into_ffi(self) -> FfiResponse {
        FfiResponse {
            status: self.status,
            content_type: self.content_type.into(),
            body: self.body.into(),
        }
    }
}

/// Bytes of an answer that several holders may share: the answer cache and
/// every response being written from it. Cloning shares; it never copies.
#[derive(Clone)]
#[doc(hidden)]
pub struct SharedBody(RArc<RVec<u8>>);

impl SharedBody {
    /// Bytes to share.
    pub fn new(bytes: Vec<u8>) -> Self {
        // `RVec::from(Vec)` takes the allocation over: no copy.
        Self(RArc::new(RVec::from(bytes)))
    }

    pub(crate) fn into_ffi(self) -> RArc<RVec<u8>> {
        self.0
    }
}

/// A shared body as it crossed the boundary (a host receiving
/// [`FfiSharedResponse`]).
#[doc(hidden)]
impl From<RArc<RVec<u8>>> for SharedBody {
    fn from(bytes: RArc<RVec<u8>>) -> Self {
        Self(bytes)
    }
}

impl AsRef<[u8]> for SharedBody {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

impl std::ops::Deref for SharedBody {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

impl std::fmt::Debug for SharedBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedBody({} bytes)", self.0.len())
    }
}

/// An answer as the router gives it to a host: like [`Response`], with a
/// body that a kept answer shares with every request it serves.
#[derive(Debug, Clone)]
#[doc(hidden)]
pub struct SharedResponse {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` of the body.
    pub content_type: String,
    /// The body, shared.
    pub body: SharedBody,
}

#[doc(hidden)]
impl From<Response> for SharedResponse {
    fn from(r: Response) -> Self {
        Self {
            status: r.status,
            content_type: r.content_type,
            body: SharedBody::new(r.body),
        }
    }
}

impl SharedResponse {
    /// The answer as a [`Response`]; copies the body only when it is
    /// still shared.
    pub fn into_response(self) -> Response {
        let body = match RArc::try_unwrap(self.body.0) {
            Ok(bytes) => bytes.into_vec(),
            Err(shared) => shared.to_vec(),
        };
        Response {
            status: self.status,
            content_type: self.content_type,
            body,
        }
    }

    pub(crate) fn into_ffi(self) -> FfiSharedResponse {
        FfiSharedResponse {
            status: self.status,
            content_type: self.content_type.into(),
            body: self.body.into_ffi(),
        }
    }
}

impl From<ApiError> for Response {
    fn from(e: ApiError) -> Self {
        Response::error(&e)
    }
}
