//! Property tests of the request → extension → response marshalling.
//!
//! The extension below is exported with `export_extension!` exactly as a
//! real library is, and every request goes through the root module's
//! `handle` entry point: an `FfiRequest` in, the SDK's router and
//! `Request`/`Response`/`ApiError`, the items client calling back through a
//! `HostServices` trait object (a fake host keeping items in memory), and an
//! `FfiResponse` out. For arbitrary methods, paths, queries, headers and
//! bodies: no panic ever reaches the entry point (it would answer 500
//! `Internal extension error`), path parameters and query values arrive
//! decoded and intact, JSON bodies round-trip, items cross the boundary
//! both ways unchanged, and every error answer is `{error, details?}`.
//! The facade's pure parts (`Request::new`, `Response::json/text/error`,
//! `ApiError` from `ItemsError`) are checked directly too.

use std::collections::BTreeMap;
use std::sync::Mutex;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::sabi_types::{RMut, RRef};
use abi_stable::std_types::{RErr, ROk, ROption, RResult, RStr, RString, RVec, Tuple2};
use host_sdk::abi::{
    ExtensionModuleRef, FfiAccess, FfiAccountability, FfiContext, FfiError, FfiRequest,
    HostServices, HostServices_TO, TransactionBody_TO,
};
use host_sdk::prelude::*;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------- the extension

fn extension() -> Extension {
    Extension::new("prop", "Property test extension", "0.0.0").routes(|r| {
        r.get("/echo/:a/:b", |req, ctx| {
            Ok(Response::ok(&json!({
                "a": req.path_param("a"),
                "b": req.path_param("b"),
                "absent": req.path_param("nope"),
                "q": req.query("q"),
                "method": req.method(),
                "path": req.path(),
                "header": req.header("X-Test"),
                "user": ctx.user_id(),
            })))
        });
        r.post("/json", |req, _ctx| {
            let v: Value = req.body_as()?;
            Ok(Response::created(&v))
        });
        r.post("/items", |req, ctx| {
            let body: Value = req.body_as()?;
            let id = ctx.transaction(|tx| tx.as_admin().create_one("things", &body))?;
            Ok(Response::created(&json!({ "id": id })))
        });
        r.get("/items/:id", |req, ctx| {
            match ctx
                .as_caller()
                .read_one("things", req.path_param("id").unwrap_or_default())?
            {
                Some(v) => Ok(Response::ok(&v)),
                None => Err(ApiError::not_found("Thing not found")),
            }
        });
        r.patch("/error/:status", |req, _ctx| {
            let status = req.path_param_as("status").unwrap_or(400);
            let mut e = ApiError::new(status, req.query("message").unwrap_or_default());
            if let Some(d) = req.query("details") {
                e = e.with_details(d);
            }
            Err(e)
        });
        r.delete("/text", |req, _ctx| {
            Ok(Response::text(
                200,
                String::from_utf8_lossy(req.body()).into_owned(),
            ))
        });
    })
}

host_sdk::export_extension!(extension);

fn module() -> ExtensionModuleRef {
    __host_sdk_root_module()
}

// ---------------------------------------------------------------- a fake host

/// Items in memory; keys starting with `forbidden` are refused.
#[derive(Default)]
struct FakeHost {
    items: Mutex<BTreeMap<String, String>>,
}

fn refused(key: &str) -> Option<FfiError> {
    key.starts_with("forbidden").then(|| FfiError {
        code: "FORBIDDEN".into(),
        message: "You don't have permission to access this.".into(),
    })
}

fn unsupported() -> RResult<RString, FfiError> {
    RErr(FfiError {
        code: "INTERNAL".into(),
        message: "not supported by the fake host".into(),
    })
}

impl HostServices for FakeHost {
    fn read_by_query(
        &self,
        _access: FfiAccess,
        _collection: RStr<'_>,
        _query: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        let items = self.items.lock().expect("lock");
        ROk(format!(
            "[{}]",
            items.values().cloned().collect::<Vec<_>>().join(",")
        )
        .into())
    }

    fn read_one(
        &self,
        _access: FfiAccess,
        _collection: RStr<'_>,
        key: RStr<'_>,
        _query: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        if let Some(e) = refused(key.as_str()) {
            return RErr(e);
        }
        let items = self.items.lock().expect("lock");
        ROk(items
            .get(key.as_str())
            .cloned()
            .unwrap_or_else(|| "null".into())
            .into())
    }

    fn create_one(
        &self,
        _access: FfiAccess,
        _collection: RStr<'_>,
        data: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        let mut items = self.items.lock().expect("lock");
        let key = format!("k{}", items.len());
        items.insert(key.clone(), data.as_str().to_string());
        ROk(Value::String(key).to_string().into())
    }

    fn create_many(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        unsupported()
    }

    fn update_one(
        &self,
        _: FfiAccess,
        _: RStr<'_>,
        _: RStr<'_>,
        _: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        unsupported()
    }

    fn delete_one(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        unsupported()
    }

    fn aggregate(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        unsupported()
    }

    fn transaction(&self, mut body: TransactionBody_TO<'_, RMut<'_, ()>>) -> RResult<(), FfiError> {
        body.run(HostServices_TO::from_ptr(RRef::new(self), TD_Opaque))
    }
}

/// One answer of the extension, decoded.
#[derive(Debug)]
struct Answer {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// Calls the library's `handle` entry point as a host does.
fn call(
    host: &FakeHost,
    user: Option<&str>,
    method: &str,
    path: &str,
    query: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Answer {
    let request = FfiRequest {
        method: method.into(),
        path: path.into(),
        query: query.into(),
        headers: headers
            .iter()
            .map(|(k, v)| Tuple2(RString::from(k.as_str()), RString::from(v.as_str())))
            .collect::<RVec<_>>(),
        body: body.to_vec().into(),
    };
    let ctx = FfiContext {
        accountability: match user {
            Some(u) => ROption::RSome(FfiAccountability {
                user: u.into(),
                role: ROption::RNone,
                admin: false,
            }),
            None => ROption::RNone,
        },
        services: HostServices_TO::from_ptr(RRef::new(host), TD_Opaque),
    };
    let response = (module().handle())(&request, &ctx);
    Answer {
        status: response.status,
        content_type: response.content_type.into_string(),
        body: response.body.into_vec(),
    }
}

/// Percent-encodes everything but unreserved characters.
fn pct(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// No handler of this extension panics: a 500 `Internal extension error`
/// means a panic escaped the facade.
fn assert_no_panic(a: &Answer) -> Result<(), TestCaseError> {
    prop_assert!(
        !(a.status == 500 && a.json()["error"] == "Internal extension error"),
        "a panic reached the entry point: {:?}",
        a
    );
    Ok(())
}

/// An error answer is exactly `{error: string, details?: string}`.
fn assert_error_shape(a: &Answer) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.content_type.as_str(), "application/json");
    let v = a.json();
    let Some(m) = v.as_object() else {
        return Err(TestCaseError::fail(format!(
            "error body not an object: {a:?}"
        )));
    };
    prop_assert!(m["error"].is_string(), "{:?}", m);
    prop_assert!(m.keys().all(|k| k == "error" || k == "details"), "{:?}", m);
    if let Some(d) = m.get("details") {
        prop_assert!(d.is_string());
    }
    Ok(())
}

// ---------------------------------------------------------------- strategies

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter_map("finite", serde_json::Number::from_f64)
            .prop_map(Value::Number),
        any::<String>().prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "GET", "POST", "PATCH", "DELETE", "PUT", "HEAD", "OPTIONS"
        ])
        .prop_map(String::from),
        "[A-Za-z]{0,8}",
        any::<String>(),
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "(/[a-z:%0-9A-F]{0,6}){0,5}/?",
        (
            prop::sample::select(vec!["echo", "json", "items", "error", "text", ""]),
            "[^/]{0,8}",
            "[^/]{0,8}",
            "/{0,3}",
        )
            .prop_map(|(a, b, c, slash)| format!("/{a}/{b}{slash}{c}")),
    ]
}

fn query() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "([a-z%0-9A-F+=&]{0,8}){0,6}",
        prop::collection::vec((any::<String>(), any::<String>()), 0..4).prop_map(|pairs| {
            pairs
                .iter()
                .map(|(k, v)| format!("{}={}", pct(k), pct(v)))
                .collect::<Vec<_>>()
                .join("&")
        }),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        value().prop_map(|v| v.to_string().into_bytes()),
        "[ \t\r\n]{0,4}".prop_map(String::into_bytes),
        "[\\[{\"]{0,200}".prop_map(String::into_bytes),
    ]
}

fn segment() -> impl Strategy<Value = String> {
    // A path parameter: anything non-empty (after decoding).
    any::<String>().prop_filter("non-empty", |s| !s.is_empty())
}

// ---------------------------------------------------------------- across the ABI

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Anything a host could deliver: an answer with a valid status, never
    /// a panic, and errors in the `{error, details?}` shape.
    #[test]
    fn any_request_gets_a_well_formed_answer(
        method in method(),
        path in path(),
        query in query(),
        headers in prop::collection::vec((any::<String>(), any::<String>()), 0..4),
        body in body(),
        user in proptest::option::of("[a-z0-9-]{1,12}"),
    ) {
        let host = FakeHost::default();
        let a = call(&host, user.as_deref(), &method, &path, &query, &headers, &body);
        assert_no_panic(&a)?;
        prop_assert!((100..1000).contains(&a.status) || path.contains("error"), "{:?}", a);
        prop_assert!(!a.content_type.is_empty());
        if a.status >= 400 {
            assert_error_shape(&a)?;
        }
        // Nothing routed: exactly 404 `Route not found`.
        let routed = ["echo", "json", "items", "error", "text"]
            .iter()
            .any(|r| path.trim_start_matches('/').starts_with(r));
        if !routed {
            prop_assert_eq!(a.status, 404);
            prop_assert_eq!(a.json(), json!({"error": "Route not found"}));
        }
    }

    /// Path parameters arrive percent-decoded, query values form-decoded,
    /// headers case-insensitively, and the caller as given.
    #[test]
    fn parameters_query_and_headers_arrive_intact(
        a in segment(),
        b in segment(),
        q in any::<String>(),
        header in "[ -~]{0,40}",
        trailing_slash in any::<bool>(),
        user in proptest::option::of("[a-z0-9-]{1,12}"),
    ) {
        let host = FakeHost::default();
        let path = format!("/echo/{}/{}{}", pct(&a), pct(&b), if trailing_slash { "/" } else { "" });
        let query = format!("other=1&q={}&q=second", pct(&q));
        let headers = vec![("x-test".to_string(), header.clone())];
        let r = call(&host, user.as_deref(), "GET", &path, &query, &headers, b"");
        assert_no_panic(&r)?;
        prop_assert_eq!(r.status, 200, "{:?}", r);
        prop_assert_eq!(r.content_type.as_str(), "application/json");
        let v = r.json();
        prop_assert_eq!(&v["a"], &json!(a));
        prop_assert_eq!(&v["b"], &json!(b));
        prop_assert_eq!(&v["absent"], &json!(null));
        prop_assert_eq!(&v["q"], &json!(q));
        prop_assert_eq!(&v["method"], &json!("GET"));
        prop_assert_eq!(&v["path"], &json!(path));
        prop_assert_eq!(&v["header"], &json!(header));
        prop_assert_eq!(&v["user"], &json!(user));
    }

    /// A JSON body round-trips; an empty one reads as `{}`; anything else
    /// is 400 `Invalid JSON body`, with serde's reason as `details`.
    #[test]
    fn json_bodies_round_trip(v in value(), garbage in body()) {
        let host = FakeHost::default();
        let r = call(&host, None, "POST", "/json", "", &[], v.to_string().as_bytes());
        prop_assert_eq!(r.status, 201, "{:?}", r);
        prop_assert_eq!(r.json(), v.clone());
        let r = call(&host, None, "POST", "/json", "", &[], &garbage);
        assert_no_panic(&r)?;
        let blank = garbage.iter().all(u8::is_ascii_whitespace);
        match serde_json::from_slice::<Value>(&garbage) {
            _ if blank => prop_assert_eq!(r.json(), json!({})),
            Ok(parsed) => {
                prop_assert_eq!(r.status, 201);
                prop_assert_eq!(r.json(), parsed);
            }
            Err(_) => {
                prop_assert_eq!(r.status, 400);
                prop_assert_eq!(&r.json()["error"], &json!("Invalid JSON body"));
                prop_assert!(r.json()["details"].is_string(), "{:?}", r);
            }
        }
    }

    /// Items written and read through the host's services (a trait object
    /// across the boundary, inside a transaction) come back unchanged;
    /// the host's refusals become the SDK's default answers.
    #[test]
    fn items_cross_the_boundary_unchanged(v in value(), probe in segment()) {
        let host = FakeHost::default();
        let r = call(&host, Some("u1"), "POST", "/items", "", &[], v.to_string().as_bytes());
        prop_assert_eq!(r.status, 201, "{:?}", r);
        let id = r.json()["id"].as_str().map(String::from);
        prop_assert!(id.is_some(), "{:?}", r);
        let id = id.unwrap_or_default();
        let r = call(&host, Some("u1"), "GET", &format!("/items/{}", pct(&id)), "", &[], b"");
        // `null` reads as missing.
        if v.is_null() {
            prop_assert_eq!(r.status, 404);
        } else {
            prop_assert_eq!(r.status, 200, "{:?}", r);
            prop_assert_eq!(r.json(), v);
        }
        let r = call(&host, None, "GET", &format!("/items/{}", pct(&probe)), "", &[], b"");
        assert_no_panic(&r)?;
        if probe.starts_with("forbidden") {
            prop_assert_eq!(r.status, 403);
            prop_assert_eq!(r.json(), json!({"error": "You don't have permission to access this."}));
        } else if host.items.lock().expect("lock").contains_key(&probe) {
            prop_assert_eq!(r.status, 200);
        } else {
            prop_assert_eq!(r.status, 404);
            prop_assert_eq!(r.json(), json!({"error": "Thing not found"}));
        }
    }

    /// `ApiError` → answer: its status, `{error}` plus `details` when set.
    #[test]
    fn api_errors_keep_status_message_and_details(
        status in 400u16..600,
        message in any::<String>(),
        details in proptest::option::of(any::<String>()),
    ) {
        let host = FakeHost::default();
        let mut query = format!("message={}", pct(&message));
        if let Some(d) = &details {
            query.push_str(&format!("&details={}", pct(d)));
        }
        let r = call(&host, None, "PATCH", &format!("/error/{status}"), &query, &[], b"");
        prop_assert_eq!(r.status, status);
        assert_error_shape(&r)?;
        let mut want = json!({"error": message});
        if let Some(d) = details {
            want["details"] = json!(d);
        }
        prop_assert_eq!(r.json(), want);
    }

    /// Bodies arrive byte for byte; text answers leave byte for byte.
    #[test]
    fn bodies_and_text_answers_are_byte_exact(text in any::<String>()) {
        let host = FakeHost::default();
        let r = call(&host, None, "DELETE", "/text", "", &[], text.as_bytes());
        prop_assert_eq!(r.status, 200);
        prop_assert_eq!(r.content_type.as_str(), "text/plain; charset=utf-8");
        prop_assert_eq!(r.body, text.into_bytes());
    }
}

// ---------------------------------------------------------------- the facade alone

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// `Request::new` decodes the query (first value wins), never panics on
    /// any input, and `body_as` follows the body rules (as the deprecated
    /// `json` does, without `details`).
    #[test]
    fn request_parsing(
        method in method(),
        path in any::<String>(),
        pairs in prop::collection::vec(("[a-c]{1,2}", any::<String>()), 0..6),
        raw_query in any::<String>(),
        body in body(),
    ) {
        let query = pairs
            .iter()
            .map(|(k, v)| format!("{k}={}", pct(v)))
            .collect::<Vec<_>>()
            .join("&");
        let path = path.replace('?', "");
        let req = Request::new(&method, &format!("{path}?{query}"), body.clone());
        prop_assert_eq!(req.method(), method.to_ascii_uppercase());
        prop_assert_eq!(req.path(), path.as_str());
        prop_assert_eq!(req.path_param("anything"), None);
        #[allow(deprecated)]
        let old_param = req.param("anything");
        prop_assert_eq!(old_param, "");
        for (k, _) in &pairs {
            let first = pairs.iter().find(|(k2, _)| k2 == k).map(|(_, v)| v.as_str());
            prop_assert_eq!(req.query(k), first);
        }
        prop_assert_eq!(req.body(), body.as_slice());
        let parsed = req.body_as::<Value>();
        #[allow(deprecated)]
        let old = req.json::<Value>();
        if body.iter().all(u8::is_ascii_whitespace) {
            prop_assert_eq!(parsed.clone(), Ok(json!({})));
        } else {
            match serde_json::from_slice::<Value>(&body) {
                Ok(v) => prop_assert_eq!(parsed.clone(), Ok(v)),
                Err(e) => prop_assert_eq!(
                    parsed.clone(),
                    Err(ApiError::bad_request("Invalid JSON body").with_details(e.to_string()))
                ),
            }
        }
        // The old name: the same value, the same status and text, no details.
        prop_assert_eq!(old, parsed.map_err(|e| ApiError { details: None, ..e }));
        // Any raw query string parses.
        let req = Request::new(&method, &format!("/p?{raw_query}"), Vec::new());
        let _ = req.query("a");
    }

    /// `Response::json`, `text` and `error` round-trip their content.
    #[test]
    fn responses_round_trip(
        status in any::<u16>(),
        v in value(),
        text in any::<String>(),
        message in any::<String>(),
        details in proptest::option::of(any::<String>()),
    ) {
        let r = Response::json(status, &v);
        prop_assert_eq!(r.status, status);
        prop_assert_eq!(r.content_type.as_str(), "application/json");
        prop_assert_eq!(r.json_body(), Some(v));
        let r = Response::text(status, text.clone());
        prop_assert_eq!(r.body, text.into_bytes());
        let mut e = ApiError::new(status, message.clone());
        if let Some(d) = &details {
            e = e.with_details(d.clone());
        }
        let r = Response::from(e);
        prop_assert_eq!(r.status, status);
        let mut want = json!({"error": message});
        if let Some(d) = details {
            want["details"] = json!(d);
        }
        prop_assert_eq!(r.json_body(), Some(want));
    }

    /// `ItemsError` → `ApiError`: 403, 404, 400 or 500 by kind, the message kept.
    #[test]
    fn items_errors_map_to_statuses(kind in 0usize..6, message in any::<String>(), code in "[A-Z_]{1,12}") {
        let (e, status) = match kind {
            0 => (ItemsError::Forbidden(message.clone()), 403),
            1 => (ItemsError::NotFound(message.clone()), 404),
            2 => (ItemsError::InvalidQuery(message.clone()), 400),
            3 => (ItemsError::InvalidPayload(message.clone()), 400),
            4 => (ItemsError::NotUnique(message.clone()), 400),
            _ => (ItemsError::Other { code, message: message.clone() }, 500),
        };
        let api = ApiError::from(e);
        prop_assert_eq!(api.status, status);
        prop_assert_eq!(api.message, message);
        prop_assert_eq!(api.details, None);
    }
}
