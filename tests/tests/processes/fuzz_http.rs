//! Fuzzing over HTTP with proptest, against one running host per property:
//!
//! * random `filter`/`sort`/`fields`/`limit`/`offset`/`page`/`aggregate`/
//!   `groupBy` strings to `GET /items/videos` and `/items/recordings`, as
//!   admin, a viewer and anonymously: every answer is 200 `{data}` or a 4xx
//!   in the items error shape, never a 5xx, never a hang;
//! * random bodies to `POST /svc/recordings` and `PATCH /svc/recordings/:id`:
//!   201/200, or a 4xx `{error}`; the only 5xx allowed are
//!   docs/service-api.md's (a 500 `{error}`, with `details` on create), never a
//!   panic or a timeout;
//! * random `limit`/`offset`/`page`/filter values to the service's list
//!   endpoints: 200, never a 5xx (docs/decisions.md §7: unusable values are
//!   absent).
//!
//! Each property runs a fixed number of cases (printed) with no failure
//! persistence; every request has a 10 s deadline.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use platform_tests::{assert_no_secrets, encode, exchange, Host, HostOptions, ADMIN_TOKEN};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

const CASES: u32 = 1000;

/// A request with a 10 s deadline: a hang fails the property.
fn send(
    host: &Host,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
) -> (u16, String) {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build();
    let (status, body) = exchange(&agent, &host.base, method, path, token, body)
        .unwrap_or_else(|e| panic!("{e} (hang or crash?)"));
    assert_no_secrets(method, path, &body);
    (status, body)
}

// ---------------------------------------------------------------- strategies

const FIELDS: [&str; 22] = [
    "id",
    "slug",
    "title",
    "likes_count",
    "plays_count",
    "upload_date",
    "featured",
    "status",
    "tags",
    "user_created",
    "public",
    "duration",
    "events",
    "date_created",
    "description",
    "nope",
    "a.b",
    "models.platform_users_id",
    "*",
    "",
    "slug'",
    "1=1",
];

const OPS: [&str; 19] = [
    "_eq",
    "_neq",
    "_lt",
    "_lte",
    "_gt",
    "_gte",
    "_in",
    "_nin",
    "_null",
    "_nnull",
    "_contains",
    "_ncontains",
    "_icontains",
    "_starts_with",
    "_ends_with",
    "_between",
    "_bogus",
    "eq",
    "",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_.,*-]{0,12}",
        any::<String>(),
        prop::sample::select(vec![
            "'",
            "\"",
            ";",
            "--",
            "/*",
            "\\",
            "\0",
            "%",
            "$NOW",
            "$CURRENT_USER",
            "$NOW(-1 day)",
            "'; DROP TABLE videos; --",
        ])
        .prop_map(String::from),
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter_map("finite", serde_json::Number::from_f64)
            .prop_map(Value::Number),
        text().prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A filter shaped like the query language, with wrong parts mixed in.
fn filter() -> impl Strategy<Value = Value> {
    let condition = (
        prop_oneof![3 => prop::sample::select(VALID.to_vec()), 1 => prop::sample::select(FIELDS.to_vec())],
        prop_oneof![3 => prop::sample::select(OPS[..15].to_vec()), 1 => prop::sample::select(OPS.to_vec())],
        prop_oneof![
            scalar(),
            prop::collection::vec(scalar(), 0..4).prop_map(Value::Array)
        ],
    )
        .prop_map(|(f, op, v)| json!({ f: { op: v } }));
    condition.prop_recursive(3, 12, 3, |inner| {
        (
            prop::sample::select(vec!["_and", "_or", "_not", "slug"]),
            prop::collection::vec(inner, 0..3),
        )
            .prop_map(|(op, list)| json!({ op: list }))
    })
}

/// Fields both `videos` and `recordings` have.
const VALID: [&str; 4] = ["id", "slug", "title", "description"];

fn list_param() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(
            (any::<bool>(), prop::sample::select(VALID.to_vec())),
            1..4
        )
        .prop_map(|v| v
            .into_iter()
            .map(|(desc, f)| format!("{}{f}", if desc { "-" } else { "" }))
            .collect::<Vec<_>>()
            .join(",")),
        1 => prop::collection::vec((any::<bool>(), prop::sample::select(FIELDS.to_vec())), 0..4)
            .prop_map(|v| v
                .into_iter()
                .map(|(desc, f)| format!("{}{f}", if desc { "-" } else { "" }))
                .collect::<Vec<_>>()
                .join(",")),
        1 => text(),
    ]
}

fn number_param() -> impl Strategy<Value = String> {
    prop_oneof![
        (0i64..50).prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        prop::sample::select(vec![
            "-1",
            "0",
            "1e9",
            "99999999999999999999",
            "1.5",
            " 3",
            "0x10",
            "",
            "+5",
            "-0",
        ])
        .prop_map(String::from),
        text(),
    ]
}

/// One items query string.
fn items_query() -> impl Strategy<Value = String> {
    (
        proptest::option::weighted(
            0.7,
            prop_oneof![
                4 => filter().prop_map(|f| f.to_string()),
                1 => json_value().prop_map(|v| v.to_string()),
                1 => text(),
            ],
        ),
        proptest::option::weighted(0.4, list_param()),
        proptest::option::weighted(0.4, list_param()),
        proptest::option::weighted(0.3, number_param()),
        proptest::option::weighted(0.3, number_param()),
        proptest::option::weighted(0.2, number_param()),
        proptest::option::weighted(
            0.15,
            (
                prop::sample::select(vec!["count", "sum", "avg", "min", "max", "nope"]),
                list_param(),
            ),
        ),
        proptest::option::weighted(0.1, list_param()),
    )
        .prop_map(
            |(filter, sort, fields, limit, offset, page, aggregate, group)| {
                let mut q = Vec::new();
                let mut push = |k: &str, v: Option<String>| {
                    if let Some(v) = v {
                        q.push(format!("{k}={}", encode(&v)));
                    }
                };
                push("filter", filter);
                push("sort", sort);
                push("fields", fields);
                push("limit", limit);
                push("offset", offset);
                push("page", page);
                if let Some((f, v)) = aggregate {
                    push(&format!("aggregate[{f}]"), Some(v));
                }
                push("groupBy", group);
                q.join("&")
            },
        )
}

/// A recording body: the known fields with random types, or anything.
fn recording_body() -> impl Strategy<Value = Vec<u8>> {
    let field = |name: &'static str, typed: BoxedStrategy<Value>| {
        proptest::option::weighted(
            0.9,
            prop_oneof![6 => typed, 1 => json_value()].prop_map(move |v| (name, v)),
        )
    };
    let object = (
        field("title", text().prop_map(Value::String).boxed()),
        field(
            "duration",
            any::<f64>()
                .prop_filter_map("finite", serde_json::Number::from_f64)
                .prop_map(Value::Number)
                .boxed(),
        ),
        field(
            "events",
            prop::collection::vec(json_value(), 0..3)
                .prop_map(Value::Array)
                .boxed(),
        ),
        field("device_info", json_value().boxed()),
        field(
            "tags",
            prop::collection::vec(text().prop_map(Value::String), 0..3)
                .prop_map(Value::Array)
                .boxed(),
        ),
        field(
            "status",
            prop::sample::select(vec!["draft", "published", "archived", "live"])
                .prop_map(Value::from)
                .boxed(),
        ),
        field("description", text().prop_map(Value::String).boxed()),
        field(
            "linked_video",
            prop_oneof![Just(Value::Null), text().prop_map(Value::String)].boxed(),
        ),
        field("public", any::<bool>().prop_map(Value::Bool).boxed()),
        field("featured", any::<bool>().prop_map(Value::Bool).boxed()),
    )
        .prop_map(|fields| {
            let (a, b, c, d, e, f, g, h, i, j) = fields;
            let mut m = serde_json::Map::new();
            for (k, v) in [a, b, c, d, e, f, g, h, i, j].into_iter().flatten() {
                m.insert(k.to_string(), v);
            }
            Value::Object(m).to_string().into_bytes()
        });
    prop_oneof![
        8 => object,
        1 => json_value().prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..40),
    ]
}

// ---------------------------------------------------------------- checks

/// 200 `{data: [...]}` (or aggregate rows), or a 4xx in the items shape.
fn check_items_answer(status: u16, body: &str) -> Result<(), String> {
    let v: Value = serde_json::from_str(body).map_err(|e| format!("not JSON ({e})"))?;
    match status {
        200 => {
            if v["data"].is_array() {
                Ok(())
            } else {
                Err("200 without a data array".into())
            }
        }
        400..=499 => {
            let e = &v["errors"][0];
            if e["message"].is_string() && e["extensions"]["code"].is_string() {
                Ok(())
            } else {
                Err("4xx without {errors: [{message, extensions: {code}}]}".into())
            }
        }
        _ => Err("a server error".into()),
    }
}

/// 2xx, a 4xx `{error}`, or a 500 as docs/service-api.md allows it (`{error}`,
/// with `details` on create) — never a panic or a timeout.
fn check_svc_answer(status: u16, body: &str, create: bool) -> Result<(), String> {
    let v: Value = serde_json::from_str(body).map_err(|e| format!("not JSON ({e})"))?;
    match status {
        200 | 201 => Ok(()),
        400..=499 if v["error"].is_string() => Ok(()),
        500 if v["error"] == "Internal extension error" => Err("a panic".into()),
        500 if v["error"].is_string() && (!create || v["details"].is_string()) => Ok(()),
        _ => Err("not an answer docs/service-api.md allows".into()),
    }
}

/// Fails unless at least `percent`% of a run's answers were 2xx: a run of
/// refusals alone would say nothing of what the server does with the
/// queries it accepts.
fn assert_successes(what: &str, seen: &BTreeMap<u16, u64>, percent: u64) {
    let ok: u64 = seen.range(200..300).map(|(_, n)| n).sum();
    let total: u64 = seen.values().sum();
    assert!(
        ok * 100 >= total * percent,
        "{what}: {ok} of {total} answers were 2xx, under {percent}%: {seen:?}"
    );
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        max_shrink_iters: 200,
        ..Config::default()
    })
}

fn seed(host: &Host) -> String {
    host.user(Some("Viewer"), "fz-viewer");
    for i in 0..5 {
        host.admin_create(
            "videos",
            &json!({"slug": format!("v{i}"), "title": format!("Video {i}"), "likes_count": i,
                    "upload_date": format!("2024-01-0{}T00:00:00Z", i + 1)}),
        );
    }
    let r = host.post(
        "/svc/recordings",
        Some("fz-viewer"),
        &json!({"title": "Fuzz", "duration": 100, "events": [{"timestamp": 0}], "device_info": {},
                "tags": ["a"]}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()["id"].as_str().expect("id").to_string()
}

// ---------------------------------------------------------------- properties

#[test]
fn random_items_queries_never_fail_the_server() {
    let host = Host::start(HostOptions::svc());
    seed(&host);
    let before = host
        .get("/items/videos?aggregate[count]=*", Some(ADMIN_TOKEN))
        .body;
    let cases = AtomicU64::new(0);
    let seen = Mutex::new(BTreeMap::<u16, u64>::new());
    let started = Instant::now();
    let strategy = (
        items_query(),
        prop::sample::select(vec!["videos", "recordings"]),
        prop_oneof![3 => Just(Some(ADMIN_TOKEN)), 1 => Just(Some("fz-viewer")), 1 => Just(None)],
    );
    let result = runner().run(&strategy, |(query, collection, token)| {
        cases.fetch_add(1, Ordering::Relaxed);
        let path = format!("/items/{collection}?{query}");
        let (status, body) = send(&host, "GET", &path, token, None);
        *seen.lock().expect("lock").entry(status).or_insert(0) += 1;
        if let Err(why) = check_items_answer(status, &body) {
            return Err(TestCaseError::fail(format!(
                "GET {path} as {token:?}: {why}: {status} {body}"
            )));
        }
        Ok(())
    });
    println!(
        "fuzz items queries: {} cases in {:?}, statuses {:?}",
        cases.load(Ordering::Relaxed),
        started.elapsed(),
        seen.lock().expect("lock")
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    assert_successes("items queries", &seen.lock().expect("lock"), 3);
    // Read-only queries changed nothing.
    assert_eq!(
        host.get("/items/videos?aggregate[count]=*", Some(ADMIN_TOKEN))
            .body,
        before
    );
    assert_eq!(host.get("/server/ping", None).body, "pong");
}

#[test]
fn random_recording_bodies_get_spec_answers() {
    let host = Host::start(HostOptions::svc());
    let own = seed(&host);
    let cases = AtomicU64::new(0);
    let seen = Mutex::new(BTreeMap::<u16, u64>::new());
    let started = Instant::now();
    let strategy = (
        recording_body(),
        any::<bool>(),
        prop_oneof![
            8 => Just(own.clone()),
            1 => Just("00000000-0000-4000-8000-000000000000".to_string()),
            1 => text(),
        ],
    );
    let errors = Mutex::new(BTreeMap::<String, u64>::new());
    let result = runner().run(&strategy, |(body, create, id)| {
        cases.fetch_add(1, Ordering::Relaxed);
        let (method, path) = if create {
            ("POST", "/svc/recordings".to_string())
        } else {
            ("PATCH", format!("/svc/recordings/{}", encode(&id)))
        };
        let (status, answer) = send(&host, method, &path, Some("fz-viewer"), Some(&body));
        *seen.lock().expect("lock").entry(status).or_insert(0) += 1;
        if status >= 500 {
            let v: Value = serde_json::from_str(&answer).unwrap_or(Value::Null);
            let text = v["error"].as_str().unwrap_or_default().to_string();
            *errors
                .lock()
                .expect("lock")
                .entry(format!("{method} {status} {text}"))
                .or_insert(0) += 1;
        }
        if let Err(why) = check_svc_answer(status, &answer, create) {
            return Err(TestCaseError::fail(format!(
                "{method} {path} {}: {why}: {status} {answer}",
                String::from_utf8_lossy(&body)
            )));
        }
        // A recording the service answered for reads back.
        if status == 201 || (status == 200 && !create) {
            let v: Value = serde_json::from_str(&answer).unwrap_or(Value::Null);
            let Some(rid) = v["id"].as_str() else {
                return Err(TestCaseError::fail(format!(
                    "{status} without id: {answer}"
                )));
            };
            let (s, b) = send(
                &host,
                "GET",
                &format!("/svc/recordings/{rid}"),
                Some("fz-viewer"),
                None,
            );
            if s != 200 {
                return Err(TestCaseError::fail(format!(
                    "{method} {path} {} answered {status}, then GET answered {s} {b}",
                    String::from_utf8_lossy(&body)
                )));
            }
        }
        Ok(())
    });
    println!(
        "fuzz recording bodies: {} cases in {:?}, statuses {:?}, server errors {:?}",
        cases.load(Ordering::Relaxed),
        started.elapsed(),
        seen.lock().expect("lock"),
        errors.lock().expect("lock")
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    assert_successes("recording bodies", &seen.lock().expect("lock"), 2);
    let (s, _) = send(
        &host,
        "GET",
        "/svc/recordings?limit=-1",
        Some("fz-viewer"),
        None,
    );
    assert_eq!(s, 200);
}

#[test]
fn random_service_list_parameters_never_fail_the_server() {
    let host = Host::start(HostOptions::svc());
    seed(&host);
    let cases = AtomicU64::new(0);
    let seen = Mutex::new(BTreeMap::<u16, u64>::new());
    let started = Instant::now();
    let strategy = (
        prop::sample::select(vec![
            "/svc/models",
            "/svc/videos",
            "/svc/articles",
            "/svc/recordings",
            "/svc/community-recordings",
            "/svc/gamification/leaderboard",
        ]),
        prop::collection::vec(
            (
                prop::sample::select(vec![
                    "limit",
                    "offset",
                    "page",
                    "status",
                    "tags",
                    "linked_video",
                    "model_id",
                    "featured",
                ]),
                prop_oneof![number_param(), text()],
            ),
            0..4,
        ),
    );
    let result = runner().run(&strategy, |(route, params)| {
        cases.fetch_add(1, Ordering::Relaxed);
        let query = params
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let path = format!("{route}?{query}");
        let (status, body) = send(&host, "GET", &path, Some("fz-viewer"), None);
        *seen.lock().expect("lock").entry(status).or_insert(0) += 1;
        if status != 200 {
            return Err(TestCaseError::fail(format!("GET {path}: {status} {body}")));
        }
        Ok(())
    });
    println!(
        "fuzz service list parameters: {} cases in {:?}, statuses {:?}",
        cases.load(Ordering::Relaxed),
        started.elapsed(),
        seen.lock().expect("lock")
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}
