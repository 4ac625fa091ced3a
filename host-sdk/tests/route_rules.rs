//! What routes answer by themselves (SDK 1.8): 401 for a route that needs
//! a caller, 405 for a known path with another method, and typed reads of
//! the path, the query and the body that say what was wrong.

mod common;

use common::NoServices;
use host_sdk::JsonSchema;
use host_sdk::{Accountability, Extension, Request, Response};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU32, Ordering};

#[derive(Deserialize, JsonSchema)]
struct Note {
    title: String,
    #[serde(default)]
    pinned: bool,
}

#[derive(Deserialize)]
struct Page {
    limit: u32,
    after: Option<String>,
}

fn extension() -> Extension {
    Extension::new("t", "T", "0.1.0").routes(|r| {
        r.get("/notes", |req, _| {
            let page: Page = req.query_as()?;
            Ok(Response::ok(
                &json!({"limit": page.limit, "after": page.after}),
            ))
        })
        .authenticated();
        r.post("/notes", |req, _| {
            let note: Note = req.body_as()?;
            Ok(Response::created(
                &json!({"title": note.title, "pinned": note.pinned}),
            ))
        });
        r.put("/notes/:n", |req, _| {
            let n: u32 = req.path_param_as("n")?;
            Ok(Response::ok(
                &json!({"n": n, "missing": req.path_param("nope")}),
            ))
        })
        .authenticated_with("Sign in first");
        // The readers' names before SDK 1.10, which answer as they did.
        #[allow(deprecated)]
        r.put("/old/:n", |req, _| {
            let n: u32 = req.param_as("n")?;
            Ok(Response::ok(
                &json!({"n": n, "missing": req.param("nope"), "got": req.param("n")}),
            ))
        });
        // SDK 1.9: one type parses and documents the body.
        r.patch_json("/typed/:n", |note: Note, req, _| {
            TYPED_CALLS.fetch_add(1, Ordering::Relaxed);
            Ok(Response::ok(
                &json!({"n": req.path_param("n"), "title": note.title, "pinned": note.pinned}),
            ))
        });
    })
}

/// Calls of `PATCH /typed/:n` that reached its handler.
static TYPED_CALLS: AtomicU32 = AtomicU32::new(0);

fn send(method: &str, target: &str, body: &str, user: Option<&str>) -> (u16, Value) {
    let caller = user.map(|u| Accountability {
        user: u.into(),
        role: None,
        admin: false,
    });
    let answer = extension().handle_direct(
        Request::new(method, target, body.as_bytes().to_vec()),
        caller,
        &NoServices::default(),
    );
    let body = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    (answer.status, body)
}

#[test]
fn a_route_that_needs_a_caller_answers_401_without_running() {
    assert_eq!(
        send("GET", "/notes?limit=5", "", None),
        (401, json!({"error": "Unauthorized"}))
    );
    assert_eq!(
        send("PUT", "/notes/3", "", None),
        (401, json!({"error": "Sign in first"}))
    );
    assert_eq!(
        send("GET", "/notes?limit=5", "", Some("u1")),
        (200, json!({"limit": 5, "after": null}))
    );
    // Documented as such.
    let paths = extension().router().openapi_paths();
    assert_eq!(
        paths["/notes"]["get"]["responses"]["401"]["description"],
        "Unauthorized"
    );
    assert_eq!(paths["/notes"]["get"]["security"], json!([{"bearer": []}]));
    assert!(paths["/notes"]["post"].get("security").is_none());
}

#[test]
fn a_known_path_with_another_method_is_405_and_an_unknown_one_404() {
    assert_eq!(
        send("DELETE", "/notes", "", Some("u1")),
        (405, json!({"error": "Method not allowed"}))
    );
    assert_eq!(send("GET", "/notes/3", "", Some("u1")).0, 405);
    assert_eq!(
        send("GET", "/elsewhere", "", Some("u1")),
        (404, json!({"error": "Route not found"}))
    );
    let ext = extension();
    assert_eq!(ext.router().allowed_methods("/notes"), ["GET", "POST"]);
    assert_eq!(ext.router().allowed_methods("/notes/7"), ["PUT"]);
    assert!(ext.router().allowed_methods("/notes/7/x").is_empty());
}

#[test]
fn typed_reads_keep_the_reason_in_details() {
    let (status, body) = send("POST", "/notes", r#"{"title": 5}"#, None);
    assert_eq!((status, &body["error"]), (400, &json!("Invalid JSON body")));
    let details = body["details"].as_str().unwrap_or_default();
    assert!(
        details.contains("invalid type: integer `5`, expected a string"),
        "{details}"
    );
    assert_eq!(
        send("POST", "/notes", r#"{"title": "a"}"#, None),
        (201, json!({"title": "a", "pinned": false}))
    );
    let (status, body) = send("POST", "/notes", "", None);
    assert_eq!(status, 400);
    assert!(
        body["details"]
            .as_str()
            .unwrap_or_default()
            .contains("missing field `title`"),
        "{body}"
    );

    let (status, body) = send("GET", "/notes?limit=many", "", Some("u1"));
    assert_eq!((status, &body["error"]), (400, &json!("Invalid query")));
    assert!(body["details"].is_string(), "{body}");
    assert_eq!(
        send("GET", "/notes?limit=2&after=x%20y&other=1", "", Some("u1")),
        (200, json!({"limit": 2, "after": "x y"}))
    );

    let (status, body) = send("PUT", "/notes/seven", "", Some("u1"));
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("Invalid path parameter \"n\""))
    );
    assert!(
        body["details"]
            .as_str()
            .unwrap_or_default()
            .contains("invalid digit"),
        "{body}"
    );
    assert_eq!(
        send("PUT", "/notes/7", "", Some("u1")),
        (200, json!({"n": 7, "missing": null}))
    );
}

#[test]
fn the_deprecated_path_readers_answer_as_the_new_ones() {
    // Same error, status and details as `path_param_as`.
    assert_eq!(
        send("PUT", "/old/seven", "", None),
        send("PUT", "/notes/seven", "", Some("u1"))
    );
    // `param` reads an absent parameter as "", where `path_param` is None.
    assert_eq!(
        send("PUT", "/old/7", "", None),
        (200, json!({"n": 7, "missing": "", "got": "7"}))
    );
}

#[test]
fn a_typed_route_parses_and_documents_its_body_with_one_type() {
    assert_eq!(
        send(
            "PATCH",
            "/typed/3",
            r#"{"title": "a", "pinned": true}"#,
            None
        ),
        (200, json!({"n": "3", "title": "a", "pinned": true}))
    );
    let reached = TYPED_CALLS.load(Ordering::Relaxed);
    let (status, body) = send("PATCH", "/typed/3", r#"{"title": ["x"]}"#, None);
    assert_eq!((status, &body["error"]), (400, &json!("Invalid JSON body")));
    let details = body["details"].as_str().unwrap_or_default();
    assert!(details.contains("expected a string"), "{details}");
    let (status, body) = send("PATCH", "/typed/3", "not json", None);
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        TYPED_CALLS.load(Ordering::Relaxed),
        reached,
        "a body that is not a Note never reaches the handler"
    );

    // The OpenAPI document describes the body as the type it parses into.
    let paths = extension().router().openapi_paths();
    let schema =
        &paths["/typed/{n}"]["patch"]["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(schema["properties"]["title"]["type"], "string", "{paths}");
    assert_eq!(schema["required"], json!(["title"]), "{paths}");
}
