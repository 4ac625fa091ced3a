//! The OpenAPI document at `GET /server/specs/oas` is kept true:
//! it is OpenAPI 3.1, every documented path and method exists (requested
//! with ids of the demo data, it never answers the router's 404 `Route not
//! found` / `ROUTE_NOT_FOUND` or a 405), every route docs/service-api.md
//! defines under `/svc` is documented, and every host route the router
//! serves (`example_host::routes`, from which the router is built) is
//! documented with its path and query parameters.

use std::collections::BTreeSet;

use example_host::routes::{HOST_ROUTES, ITEMS_QUERY};
use platform_tests::{Host, HostOptions, ADMIN_TOKEN};
use serde_json::{json, Value};

/// Every route of docs/service-api.md "Endpoints", below `/svc`.
const SPEC_ROUTES: [(&str, &str); 24] = [
    ("get", "/svc/stats"),
    ("get", "/svc/models"),
    ("get", "/svc/models/{}"),
    ("get", "/svc/videos"),
    ("get", "/svc/videos/{}"),
    ("get", "/svc/articles"),
    ("get", "/svc/recordings"),
    ("get", "/svc/recordings/{}"),
    ("post", "/svc/recordings"),
    ("patch", "/svc/recordings/{}"),
    ("delete", "/svc/recordings/{}"),
    ("post", "/svc/recordings/{}/duplicate"),
    ("get", "/svc/community-recordings"),
    ("post", "/svc/recordings/{}/play"),
    ("patch", "/svc/recordings/{}/play/{}"),
    ("post", "/svc/videos/{}/like"),
    ("delete", "/svc/videos/{}/like"),
    ("get", "/svc/videos/{}/like-status"),
    ("post", "/svc/videos/{}/play"),
    ("patch", "/svc/videos/{}/play/{}"),
    ("get", "/svc/analytics"),
    ("get", "/svc/gamification/leaderboard"),
    ("get", "/svc/gamification/user/{}"),
    ("get", "/svc/gamification/achievements"),
];

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// `/svc/videos/{slug}` → `/svc/videos/{}`.
fn shape(path: &str) -> String {
    path.split('/')
        .map(|s| {
            if s.starts_with('{') && s.ends_with('}') {
                "{}"
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Demo ids (docs/api.md, "Service endpoints").
const VIDEO: &str = "00000000-0000-4000-a000-000000000001";
const RECORDING: &str = "00000000-0000-4000-b000-000000000001";
/// An id no record has.
const NO_SUCH_ID: &str = "00000000-0000-4000-8000-000000000000";

fn is_route_not_found(status: u16, body: &str) -> bool {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    status == 405
        || (status == 404
            && (v["error"] == "Route not found"
                || v["errors"][0]["extensions"]["code"] == "ROUTE_NOT_FOUND"))
}

#[test]
fn the_document_matches_the_routes() {
    let host = Host::start(HostOptions::svc().arg("--demo"));
    let r = host.get("/server/specs/oas", None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.content_type.starts_with("application/json"));
    let doc = r.json();
    let version = doc["openapi"].as_str().unwrap_or_default();
    assert!(version.starts_with("3.1."), "openapi {version}");
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
    let paths = doc["paths"].as_object().expect("paths object");

    // Ids for the path parameters, from the demo data.
    let user = host
        .get("/svc/gamification/leaderboard?limit=1", None)
        .json()["data"][0]["user_id"]
        .as_str()
        .expect("a leaderboard user")
        .to_string();
    let video_play = host
        .post(&format!("/svc/videos/{VIDEO}/play"), None, &json!({}))
        .json()["play_id"]
        .as_str()
        .expect("video play")
        .to_string();
    let recording_play = host
        .post(
            &format!("/svc/recordings/{RECORDING}/play"),
            None,
            &json!({}),
        )
        .json()["play_id"]
        .as_str()
        .expect("recording play")
        .to_string();
    let throwaway = host.admin_create("videos", &json!({"slug": "oas-throwaway", "title": "T"}))
        ["id"]
        .as_str()
        .expect("id")
        .to_string();

    let mut documented = BTreeSet::new();
    let mut failures = Vec::new();
    let mut requested = 0;
    for (path, ops) in paths {
        let ops = ops.as_object().expect("path item object");
        for (method, op) in ops {
            if !METHODS.contains(&method.as_str()) {
                continue;
            }
            documented.insert((method.clone(), shape(path)));
            assert!(
                op["responses"].as_object().is_some_and(|r| !r.is_empty()),
                "{method} {path}: no responses"
            );
            // Declared path parameters match the template.
            let declared: BTreeSet<String> = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .chain(
                    ops.get("parameters")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten(),
                )
                .filter(|p| p["in"] == "path")
                .filter_map(|p| p["name"].as_str().map(String::from))
                .collect();
            let templated: BTreeSet<String> = path
                .split('/')
                .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
                .map(String::from)
                .collect();
            if declared != templated {
                failures.push(format!(
                    "{method} {path}: path parameters {declared:?} declared, {templated:?} in the template"
                ));
            }
            // Fill the template with real ids.
            let concrete = match shape(path).as_str() {
                "/items/{}" => "/items/videos".to_string(),
                "/items/{}/{}" if method == "delete" => format!("/items/videos/{throwaway}"),
                "/items/{}/{}" => format!("/items/videos/{VIDEO}"),
                "/svc/models/{}" => "/svc/models/aria-vale".to_string(),
                "/svc/videos/{}" if path.contains("slug") => "/svc/videos/sunset-session".into(),
                "/svc/videos/{}/play/{}" => format!("/svc/videos/{VIDEO}/play/{video_play}"),
                "/svc/recordings/{}/play/{}" => {
                    format!("/svc/recordings/{RECORDING}/play/{recording_play}")
                }
                "/svc/gamification/user/{}" => format!("/svc/gamification/user/{user}"),
                "/users/{}" => format!("/users/{user}"),
                "/assets/{}/{}" => format!("/assets/{NO_SUCH_ID}/a.txt"),
                s if s.starts_with("/svc/videos/{}") => s.replacen("{}", VIDEO, 1),
                s if s.starts_with("/svc/recordings/{}") => s.replacen("{}", RECORDING, 1),
                s if s.starts_with("/svc/") => s.to_string(),
                // Another host route: no such comment, file, folder…, which
                // the route answers all the same (no missing route).
                s => s.replace("{}", NO_SUCH_ID),
            };
            assert!(!concrete.contains('{'), "no id for {path}");
            let body = matches!(method.as_str(), "post" | "patch").then(|| {
                if path == "/items/{collection}" {
                    json!({"slug": "oas-created", "title": "C"}).to_string()
                } else {
                    "{}".to_string()
                }
            });
            let r = host.request(
                &method.to_ascii_uppercase(),
                &concrete,
                Some(ADMIN_TOKEN),
                body.as_deref().map(str::as_bytes),
            );
            requested += 1;
            if is_route_not_found(r.status, &r.body) {
                failures.push(format!(
                    "documented {method} {path} does not exist: {} {}",
                    r.status, r.body
                ));
            }
            let responses = op["responses"].as_object().expect("responses");
            if !responses.contains_key("default") && !responses.contains_key(&r.status.to_string())
            {
                failures.push(format!(
                    "{method} {concrete} answered {}, not documented",
                    r.status
                ));
            }
        }
    }

    for (method, route) in SPEC_ROUTES {
        if !documented.contains(&(method.to_string(), route.to_string())) {
            failures.push(format!(
                "{method} {route} is implemented but not documented"
            ));
        }
    }
    // Every route the router serves is documented (and so requested
    // above), with the parameters it reads.
    for route in HOST_ROUTES {
        let method = route.method.as_str();
        let op = &doc["paths"][route.path][method];
        if !op.is_object() {
            failures.push(format!(
                "{method} {} is served but not documented",
                route.path
            ));
            continue;
        }
        let listed = parameter_names(op);
        for name in route
            .path_params()
            .chain(route.query.params().iter().map(|p| p.name))
        {
            if !listed.contains(name) {
                failures.push(format!(
                    "{method} {}: parameter {name} not documented",
                    route.path
                ));
            }
        }
    }
    // Lists of files and folders take the items' query parameters; the
    // mailed links' routes take their token.
    for path in ["/files", "/folders", "/items/{collection}", "/users"] {
        let listed = parameter_names(&doc["paths"][path]["get"]);
        for p in ITEMS_QUERY.iter().filter(|p| !listed.contains(p.name)) {
            failures.push(format!("GET {path}: no {}", p.name));
        }
    }
    let verify = &doc["paths"]["/users/register/verify-email"]["get"]["parameters"][0];
    if (&verify["name"], &verify["in"], &verify["required"])
        != (&json!("token"), &json!("query"), &json!(true))
    {
        failures.push(format!("GET /users/register/verify-email: {verify}"));
    }
    for path in ["/auth/password/request", "/auth/password/reset"] {
        if !doc["paths"][path]["post"]["requestBody"].is_object() {
            failures.push(format!("POST {path}: no body documented"));
        }
    }
    // The check can fail: an undocumented path is the router's 404.
    let r = host.get("/svc/not-documented", Some(ADMIN_TOKEN));
    assert!(is_route_not_found(r.status, &r.body), "{}", r.body);

    println!(
        "openapi: {} documented operations requested, {} service API routes and {} host routes checked",
        requested,
        SPEC_ROUTES.len(),
        HOST_ROUTES.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The names of an operation's parameters.
fn parameter_names(op: &Value) -> BTreeSet<&str> {
    op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect()
}
