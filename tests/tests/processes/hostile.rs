//! Hostile input: bodies over the limit, deeply nested JSON, invalid UTF-8,
//! out-of-range paging values, SQL metacharacters in every part of an
//! `/items` query, unknown and traversal-looking collection names, very long
//! URLs and headers, and header tricks. Every answer must be a clear 4xx (or
//! a correct answer), never a 5xx or a crash: the host keeps serving, and
//! the database keeps every table and row.
//!
//! Requests that `ureq` cannot (or will not) send are written on a raw
//! `TcpStream`.

use platform_tests::raw::{bearer, chunked, head, raw};
use platform_tests::{encode, id_of, Backend, Host, HostOptions, Resp, ADMIN_TOKEN};
use serde_json::{json, Value};

const TOO_LARGE: &str = r#"{"error":"Payload too large"}"#;
const TOO_DEEP: &str = "Request body nested too deeply";

// ---------------------------------------------------------------- helpers

/// A body of exactly `size` bytes: a valid recording padded with spaces.
fn padded_recording(size: usize) -> Vec<u8> {
    let mut b = json!({
        "title": "Padded", "duration": 100,
        "device_info": [{"name": "D", "index": 0, "capabilities": []}],
        "events": [{"timestamp": 0, "deviceIndex": 0, "deviceName": "D", "actuatorIndex": 0,
                    "actuatorType": "Vibrate", "value": 1}],
    })
    .to_string()
    .into_bytes();
    assert!(b.len() <= size);
    b.resize(size, b' ');
    b
}

fn viewer_host(opts: HostOptions) -> Host {
    let host = Host::start(opts);
    host.user(Some("Viewer"), "h-viewer");
    host
}

/// Every table of the database and its row count, read from the
/// database itself. On SQLite the file must also pass its integrity check
/// (PostgreSQL has no such check of a database as a whole).
fn tables(host: &Host) -> Vec<(String, i64)> {
    if host.backend() == Backend::Sqlite {
        let integrity = host.sql_query("PRAGMA integrity_check");
        assert_eq!(integrity, [[Some("ok".to_string())]]);
    }
    host.database()
        .tables()
        .into_iter()
        .map(|n| {
            let count = host.sql_query_one(&format!("SELECT count(*) FROM \"{n}\""));
            let count = count[0]
                .as_deref()
                .and_then(|c| c.parse().ok())
                .unwrap_or_else(|| panic!("count of {n}: {count:?}"));
            (n, count)
        })
        .collect()
}

// ---------------------------------------------------------------- bodies

#[test]
fn bodies_over_the_limit_are_413_with_or_without_content_length() {
    const LIMIT: usize = 64 * 1024;
    let host = viewer_host(
        HostOptions::svc()
            .arg("--max-payload")
            .arg(&LIMIT.to_string()),
    );
    let viewer = bearer("h-viewer");
    let admin = bearer(ADMIN_TOKEN);
    let over = padded_recording(LIMIT + 1);
    let exact = padded_recording(LIMIT);

    let targets: [(&str, &str, &str); 4] = [
        ("POST", "/svc/recordings", &viewer),
        ("PATCH", "/svc/recordings/x", &viewer),
        ("POST", "/svc/videos/x/play", ""),
        ("POST", "/items/recordings", &admin),
    ];
    for (method, path, auth) in targets {
        let auth: Vec<&str> = if auth.is_empty() { vec![] } else { vec![auth] };
        // With a Content-Length one byte over.
        let cl = format!("Content-Length: {}", over.len());
        let mut req = head(method, path, &[&[cl.as_str()], auth.as_slice()].concat());
        req.extend_from_slice(&over);
        let r = raw(&host, &req);
        assert_eq!(r.status, Some(413), "{method} {path} CL: {r:?}");
        assert_eq!(r.body, TOO_LARGE, "{method} {path}");
        // Declared far over the limit, nothing sent: refused at once.
        let req = head(
            method,
            path,
            &[&["Content-Length: 1099511627776"], auth.as_slice()].concat(),
        );
        let r = raw(&host, &req);
        assert_eq!(r.status, Some(413), "{method} {path} declared: {r:?}");
        assert_eq!(r.body, TOO_LARGE);
        // Chunked, no Content-Length.
        let mut req = head(
            method,
            path,
            &[&["Transfer-Encoding: chunked"], auth.as_slice()].concat(),
        );
        req.extend_from_slice(&chunked(&over));
        let r = raw(&host, &req);
        assert_eq!(r.status, Some(413), "{method} {path} chunked: {r:?}");
        assert_eq!(r.body, TOO_LARGE);
    }

    // Exactly the limit is accepted, both ways.
    let cl = format!("Content-Length: {}", exact.len());
    let mut req = head("POST", "/svc/recordings", &[&cl, &viewer]);
    req.extend_from_slice(&exact);
    let r = raw(&host, &req);
    assert_eq!(r.status, Some(201), "{r:?}");
    let mut req = head(
        "POST",
        "/svc/recordings",
        &["Transfer-Encoding: chunked", &viewer],
    );
    req.extend_from_slice(&chunked(&exact));
    let r = raw(&host, &req);
    assert_eq!(r.status, Some(201), "{r:?}");
    host.assert_serving();
}

#[test]
fn the_default_limit_is_16_mib() {
    let host = viewer_host(HostOptions::svc());
    let over = padded_recording(16 * 1024 * 1024 + 1);
    let mut req = head(
        "POST",
        "/svc/recordings",
        &["Transfer-Encoding: chunked", &bearer("h-viewer")],
    );
    req.extend_from_slice(&chunked(&over));
    let r = raw(&host, &req);
    assert_eq!(r.status, Some(413), "{r:?}");
    assert_eq!(r.body, TOO_LARGE);
    host.assert_serving();
}

/// Each route says what body it takes (svc: 64 KiB and 8 levels for a
/// play or a like; the host's limit and 32 levels for a recording). The
/// host refuses a body past its route's rule before the extension is
/// called, so nothing ever parses it: no extension call is counted.
#[test]
fn a_body_past_its_routes_rule_is_refused_before_the_extension_sees_it() {
    let host = viewer_host(HostOptions::svc());
    let video = host.admin_video("rules", Some("2024-01-01T00:00:00Z"));
    let play = format!("/svc/videos/{}/play", id_of(&video));
    let nested = |levels: usize| {
        format!(
            r#"{{"title":"t","duration":1,"events":{}1{}}}"#,
            "[".repeat(levels - 1),
            "]".repeat(levels - 1)
        )
    };
    let calls = host.metric("extension_calls");

    // Over 64 KiB for a play: refused whole, declared or not.
    let big_play = format!(r#"{{"session_id":"s","junk":"{}"}}"#, "x".repeat(64 * 1024));
    let r = host.request("POST", &play, None, Some(big_play.as_bytes()));
    assert_eq!((r.status, r.body.as_str()), (413, TOO_LARGE));
    let mut req = head("POST", &play, &["Transfer-Encoding: chunked"]);
    req.extend_from_slice(&chunked(big_play.as_bytes()));
    assert_eq!(raw(&host, &req).status, Some(413));
    // Nested past the route's depth: a play takes 8 levels, a recording 32.
    let deep_play = format!(r#"{{"session_id":{}"s"{}}}"#, "[".repeat(8), "]".repeat(8));
    let r = host.request("POST", &play, None, Some(deep_play.as_bytes()));
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"], TOO_DEEP);
    let r = host.request(
        "POST",
        "/svc/recordings",
        Some("h-viewer"),
        Some(nested(33).as_bytes()),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"], TOO_DEEP);
    // Brackets inside strings are text, not nesting.
    let r = host.request(
        "POST",
        &play,
        None,
        Some(format!(r#"{{"session_id":"{}"}}"#, "[".repeat(50)).as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        host.metric("extension_calls"),
        calls + 1,
        "only the acceptable body reached the extension"
    );

    // Within the rules, the route answers as before.
    let r = host.request("POST", &play, None, Some(br#"{"session_id":"ok"}"#));
    assert_eq!(r.status, 200, "{}", r.body);
    let r = host.request(
        "POST",
        "/svc/recordings",
        Some("h-viewer"),
        Some(nested(32).as_bytes()),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_ne!(r.json()["error"], TOO_DEEP, "32 levels reach the handler");
    assert_eq!(host.metric("extension_calls"), calls + 3);
    // A route that does not exist reads no large body either.
    let r = host.request("POST", "/svc/nowhere", None, Some(big_play.as_bytes()));
    assert_eq!(r.status, 413, "{}", r.body);
    host.assert_serving();
}

// ---------------------------------------------------------------- nesting

#[test]
fn deeply_nested_json_is_a_clear_400_never_a_crash() {
    let host = viewer_host(HostOptions::svc());
    let video = host.admin_create(
        "videos",
        &json!({"slug": "v", "title": "V", "upload_date": "2024-01-01T00:00:00Z"}),
    )["id"]
        .as_str()
        .expect("id")
        .to_string();
    let deep_array = "[".repeat(100_000).into_bytes();
    let deep_object = "{\"a\":".repeat(100_000).into_bytes();
    // 100,000 levels are too deep for a recording, and too large for a
    // play (64 KiB); 1,000 levels are small enough and too deep for both.
    let shallow_array = "[".repeat(1_000).into_bytes();
    for body in [&deep_array, &deep_object, &shallow_array] {
        for (method, path) in [
            ("POST", "/svc/recordings".to_string()),
            ("PATCH", "/svc/recordings/x".to_string()),
            ("POST", format!("/svc/videos/{video}/play")),
            ("PATCH", format!("/svc/videos/{video}/play/x")),
        ] {
            let r = host.request(method, &path, Some("h-viewer"), Some(body));
            if path.contains("play") && body.len() > 64 * 1024 {
                assert_eq!(
                    (r.status, r.body.as_str()),
                    (413, TOO_LARGE),
                    "{method} {path}"
                );
            } else {
                assert_eq!(r.status, 400, "{method} {path}: {}", r.body);
                assert_eq!(r.json()["error"], TOO_DEEP);
            }
        }
        let r = host.request("POST", "/items/recordings", Some(ADMIN_TOKEN), Some(body));
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(r.error_code(), "INVALID_PAYLOAD");
    }

    // In a filter: 100,000 levels make a URL too long (414); 10,000 are
    // refused as a query.
    let r = raw(
        &host,
        &head(
            "GET",
            &format!("/items/videos?filter={}", "%5B".repeat(100_000)),
            &[&bearer(ADMIN_TOKEN)],
        ),
    );
    assert!(
        matches!(r.status, Some(400..=499)),
        "100,000 levels in a filter: {r:?}"
    );
    let r = host.get(
        &format!("/items/videos?filter={}", "%5B".repeat(10_000)),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.error_code(), "INVALID_QUERY");
    // Well-formed but deep `_and` / `_or` trees: answered or refused.
    for depth in [5, 20, 40, 60, 100, 126, 1000] {
        let mut text = String::from(r#"{"slug":{"_eq":"v"}}"#);
        for i in 0..depth {
            let op = if i % 2 == 0 { "_and" } else { "_or" };
            text = format!("{{\"{op}\":[{text}]}}");
        }
        let r = host.get(
            &format!("/items/videos?fields=slug&filter={}", encode(&text)),
            Some(ADMIN_TOKEN),
        );
        match r.status {
            200 => assert_eq!(r.json()["data"], json!([{"slug": "v"}]), "depth {depth}"),
            400 => assert_eq!(r.error_code(), "INVALID_QUERY", "depth {depth}"),
            s => panic!("depth {depth}: {s} {}", r.body),
        }
    }
    host.assert_serving();
}

/// A recording whose JSON fields nest as deep as the body parser allows is
/// either refused or stored so that every read of it still works.
#[test]
fn deeply_nested_stored_json_does_not_break_later_reads() {
    let host = viewer_host(HostOptions::svc());
    let mut failures = Vec::new();
    for depth in [100, 120, 124, 125, 126] {
        let nested = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let body = format!(
            r#"{{"title":"deep {depth}","duration":5,"events":[{{"timestamp":0}}],"device_info":{nested}}}"#
        );
        let r = host.request(
            "POST",
            "/svc/recordings",
            Some("h-viewer"),
            Some(body.as_bytes()),
        );
        match r.status {
            400 => continue,
            201 => {}
            s => panic!("create at depth {depth}: {s} {}", r.body),
        }
        let id = r.json()["id"].as_str().expect("id").to_string();
        for path in [
            "/svc/recordings".to_string(),
            format!("/svc/recordings/{id}"),
            "/items/recordings?limit=-1".to_string(),
        ] {
            let r = host.get(&path, Some("h-viewer"));
            if r.status != 200 {
                failures.push(format!(
                    "device_info nested {depth} deep was stored (201), then GET {path} answered {} {}",
                    r.status, r.body
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    host.assert_serving();
}

// ---------------------------------------------------------------- documents

/// A JSON field's document goes from the body to the database as text, in
/// both write paths: it is stored as written (members in the caller's
/// order, whitespace between tokens dropped), which a round trip through
/// a tree (members sorted by name) would not keep. The hook watching the
/// write still reads the record it needs (a published recording earns
/// RECORDING_CREATE).
#[test]
fn json_documents_are_stored_as_written_never_rebuilt_as_trees() {
    let host = Host::start(HostOptions::svc());
    let viewer = host.user(Some("Viewer"), "h-viewer");
    let body = br#"{"title":"order","duration":5,"status":"published",
        "events":[ {"value":0.5, "timestamp":1} ],"device_info":{"z":1, "a":[2, 3]}}"#;
    let r = host.request("POST", "/svc/recordings", Some("h-viewer"), Some(body));
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["id"].as_str().expect("id").to_string();
    for text in [
        r#""events":[{"value":0.5,"timestamp":1}]"#,
        r#""device_info":{"z":1,"a":[2,3]}"#,
    ] {
        assert!(r.body.contains(text), "{text} in {}", r.body);
        let read = host.get(&format!("/items/recordings/{id}"), Some(ADMIN_TOKEN));
        assert!(read.body.contains(text), "{text} in {}", read.body);
    }
    let created = host
        .admin_all("user_points", "*")
        .into_iter()
        .filter(|p| p["user_id"] == viewer.as_str() && p["action"] == "RECORDING_CREATE")
        .count();
    assert_eq!(created, 1, "the hook saw the published recording");

    let r = host.request(
        "PATCH",
        &format!("/items/recordings/{id}"),
        Some(ADMIN_TOKEN),
        Some(br#"{"device_info": {"y" : true, "b" : null}}"#),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains(r#""device_info":{"y":true,"b":null}"#),
        "{}",
        r.body
    );
}

// ---------------------------------------------------------------- UTF-8

#[test]
fn invalid_utf8_bodies_and_query_strings() {
    let host = viewer_host(HostOptions::svc());
    let bodies: [&[u8]; 4] = [
        b"\xff\xfe\xfd",
        b"{\"title\":\"\xff\xfe\",\"duration\":1,\"events\":[1],\"device_info\":{}}",
        b"{\"title\":\"ok\",\"duration\":1,\"events\":[\"\xc0\xaf\"],\"device_info\":{}}",
        b"{\"\xed\xa0\x80\":1}",
    ];
    for body in bodies {
        let r = host.request("POST", "/svc/recordings", Some("h-viewer"), Some(body));
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(r.json()["error"], "Invalid JSON body");
        let r = host.request("POST", "/items/recordings", Some(ADMIN_TOKEN), Some(body));
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(r.error_code(), "INVALID_PAYLOAD");
        let r = host.request(
            "PATCH",
            "/items/recordings/x",
            Some(ADMIN_TOKEN),
            Some(body),
        );
        assert_eq!(r.status, 400, "{}", r.body);
    }
    // Percent-encoded invalid UTF-8 in query values.
    for q in [
        "filter=%FF%FE",
        "filter=%7B%22slug%22%3A%7B%22_eq%22%3A%22%FF%22%7D%7D",
        "sort=%C0%AF",
        "fields=%FF",
        "groupBy=%FF&aggregate[count]=*",
        "limit=%FF",
    ] {
        let r = host.get(&format!("/items/videos?{q}"), Some(ADMIN_TOKEN));
        match r.status {
            200 => assert_eq!(r.json()["data"], json!([]), "{q}"),
            400 => assert_eq!(r.error_code(), "INVALID_QUERY", "{q}"),
            // A field that does not exist, as Directus refuses it.
            403 if q.starts_with("fields=") => assert_eq!(r.error_code(), "FORBIDDEN", "{q}"),
            s => panic!("{q}: {s} {}", r.body),
        }
    }
    for path in [
        "/svc/recordings?status=%FF&tags=%FE&linked_video=%C0",
        "/svc/videos?model_id=%FF&limit=%FE",
        "/svc/community-recordings?limit=%FF&offset=%FE",
        "/svc/gamification/leaderboard?limit=%FF",
    ] {
        let r = host.get(path, Some("h-viewer"));
        assert_eq!(r.status, 200, "{path}: {}", r.body);
    }
    for path in [
        "/svc/videos/%FF%FE",
        "/svc/models/%C0%AF",
        "/svc/recordings/%FF",
    ] {
        let r = host.get(path, Some("h-viewer"));
        assert_eq!(r.status, 404, "{path}: {}", r.body);
    }
    // Invalid UTF-8 in a path segment of /items: refused by the router's
    // path decoding (400, a plain-text answer) before anything is read.
    for (path, token) in [
        ("/items/%FF%FE", "h-viewer"),
        ("/items/%FF%FE", ADMIN_TOKEN),
        ("/items/videos/%FF%FE", ADMIN_TOKEN),
    ] {
        let r = host.get(path, Some(token));
        assert!(
            matches!(r.status, 400 | 403 | 404),
            "{path}: {} {}",
            r.status,
            r.body
        );
    }
    // Raw (not percent-encoded) bytes in the request line: 400 from the
    // HTTP layer.
    for target in [&b"/svc/videos/\xff\xfe"[..], b"/items/videos?filter=\xff"] {
        let mut req = b"GET ".to_vec();
        req.extend_from_slice(target);
        req.extend_from_slice(b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let r = raw(&host, &req);
        assert!(matches!(r.status, Some(400..=499)), "{r:?}");
    }
    host.assert_serving();
}

/// docs/decisions.md §3: a token that matches no active user is 401 on every
/// route; one that is not even valid UTF-8 cannot match one either.
#[test]
fn an_authorization_header_that_is_not_utf8_is_401_not_anonymous() {
    let host = Host::start(HostOptions::svc());
    for path in ["/svc/stats", "/items/recordings"] {
        let mut req =
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n").into_bytes();
        req.extend_from_slice(b"Authorization: Bearer \xff\xfe-token\r\n\r\n");
        let r = raw(&host, &req);
        assert_eq!(
            r.status,
            Some(401),
            "GET {path} with a non-UTF-8 bearer token: {r:?}"
        );
    }
}

// ---------------------------------------------------------------- paging

#[test]
fn huge_and_negative_paging_values_on_items() {
    let host = Host::start(HostOptions::svc());
    host.admin_create("videos", &json!({"slug": "a", "title": "A"}));
    let cases: [(&str, u16); 16] = [
        ("limit=99999999999999999999", 400),
        ("limit=1e9", 400),
        ("limit=1.5", 400),
        ("limit=0x10", 400),
        ("limit=-2", 400),
        ("limit=-1", 200),
        ("limit=9223372036854775807", 200),
        ("limit=9223372036854775807&page=3", 200),
        ("limit=9223372036854775807&page=9223372036854775807", 200),
        ("offset=-1", 400),
        ("offset=-9223372036854775808", 400),
        ("offset=9223372036854775807", 200),
        ("offset=99999999999999999999", 400),
        ("page=0", 400),
        ("page=-1", 400),
        ("limit=1&page=99999999999999999999", 400),
    ];
    for (q, want) in cases {
        let r = host.get(&format!("/items/videos?{q}"), Some(ADMIN_TOKEN));
        assert_eq!(r.status, want, "{q}: {}", r.body);
        if want == 400 {
            assert_eq!(r.error_code(), "INVALID_QUERY", "{q}");
        }
    }
}

/// docs/decisions.md §7: `limit`/`offset`/`page` values the service cannot use
/// are treated as absent; a number too large for the platform is no reason for
/// a 500 (and its text must not leak the parser's internals).
#[test]
fn svc_paging_values_out_of_range_are_not_server_errors() {
    let host = viewer_host(HostOptions::svc());
    let mut failures = Vec::new();
    for route in [
        "/svc/models",
        "/svc/videos",
        "/svc/articles",
        "/svc/recordings",
        "/svc/community-recordings",
        "/svc/gamification/leaderboard",
    ] {
        for q in [
            "limit=99999999999999999999",
            "limit=1e9",
            "limit=-5",
            "limit=9223372036854775807",
            "limit=9223372036854775808",
            "limit=18446744073709551615",
            "offset=-1",
            "offset=9223372036854775808",
            "offset=18446744073709551615",
            "page=-3",
            "page=18446744073709551615",
            "limit=9223372036854775807&page=3",
        ] {
            let r = host.get(&format!("{route}?{q}"), Some("h-viewer"));
            if r.status != 200 {
                failures.push(format!("GET {route}?{q}: {} {}", r.status, r.body));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} answers were not 200:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------- SQL

const EVIL: [&str; 14] = [
    "'",
    "\"",
    ";",
    "--",
    "/*",
    "*/",
    "\\",
    "\0",
    "%",
    "_",
    "'; DROP TABLE videos; --",
    "\" OR 1=1 --",
    "a') OR ('1'='1",
    "x\\'; DELETE FROM platform_users; /*",
];

#[test]
fn sql_metacharacters_are_bound_or_refused_and_nothing_is_lost() {
    let host = viewer_host(HostOptions::svc());
    for (i, title) in ["Plain", "O'Brien \"quoted\" -- /* x */ \\ ;"]
        .iter()
        .enumerate()
    {
        host.admin_create(
            "videos",
            &json!({"slug": format!("v{i}"), "title": title, "likes_count": i}),
        );
    }
    // A value made of metacharacters is stored and matched as a value.
    let stored = "'; DROP TABLE videos; --";
    host.admin_create("videos", &json!({"slug": stored, "title": "evil slug"}));
    // A recording of the viewer's own, so that the service's filters on
    // their recordings are evaluated against a row.
    let mut mine = platform_tests::rec_body("mine", None);
    mine["tags"] = json!(["tagged"]);
    let r = host.post("/svc/recordings", Some("h-viewer"), &mine);
    assert_eq!(r.status, 201, "{}", r.body);
    let before = tables(&host);
    let admin = Some(ADMIN_TOKEN);
    let get = |q: &str, token: Option<&str>| host.get(&format!("/items/videos?{q}"), token);
    let mut answers = 0;

    for evil in EVIL {
        let e = encode(evil);
        // As a value of every operator: bound, so it matches only itself.
        for op in [
            "_eq",
            "_neq",
            "_lt",
            "_gt",
            "_contains",
            "_ncontains",
            "_icontains",
            "_starts_with",
            "_ends_with",
        ] {
            let f = json!({"slug": {op: evil}});
            let r = get(
                &format!("fields=slug&filter={}", encode(&f.to_string())),
                admin,
            );
            answers += 1;
            assert_eq!(r.status, 200, "{op} {evil:?}: {}", r.body);
            let slugs: Vec<String> = r.json()["data"]
                .as_array()
                .expect("data")
                .iter()
                .filter_map(|v| v["slug"].as_str().map(String::from))
                .collect();
            let all = ["v0", "v1", stored];
            let expected: Vec<&str> = all
                .iter()
                .copied()
                .filter(|s| match op {
                    "_eq" => *s == evil,
                    "_neq" => *s != evil,
                    "_lt" => *s < evil,
                    "_gt" => *s > evil,
                    "_contains" | "_icontains" => s.contains(evil),
                    "_ncontains" => !s.contains(evil),
                    "_starts_with" => s.starts_with(evil),
                    "_ends_with" => s.ends_with(evil),
                    _ => unreachable!(),
                })
                .collect();
            let mut got = slugs.clone();
            got.sort();
            let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
            want.sort();
            assert_eq!(got, want, "{op} {evil:?}");
        }
        for f in [
            json!({"slug": {"_in": [evil, "v0"]}}),
            json!({"slug": {"_nin": [evil]}}),
            json!({"_or": [{"title": {"_eq": evil}}, {"slug": {"_eq": evil}}]}),
        ] {
            let r = get(&format!("filter={}", encode(&f.to_string())), admin);
            answers += 1;
            assert_eq!(r.status, 200, "{f}: {}", r.body);
        }
        // As a field name, an operator, a sort, a field list, a group or
        // an aggregate: unknown, refused (a field list as Directus refuses
        // a field that does not exist: 403).
        let refused = [
            format!(
                "filter={}",
                encode(&json!({ evil: {"_eq": 1} }).to_string())
            ),
            format!(
                "filter={}",
                encode(&json!({"slug": { evil: 1 }}).to_string())
            ),
            format!(
                "filter={}",
                encode(&json!({ format!("slug{evil}"): {"_eq": 1} }).to_string())
            ),
            format!("sort={e}"),
            format!("sort=-{e}"),
            format!("sort=slug,{e}"),
            format!("sort=slug{e}"),
            format!("fields={e}"),
            format!("fields=slug,{e}"),
            format!("fields=slug{e}"),
            format!("groupBy={e}&aggregate[count]=*"),
            format!("aggregate[count]={e}"),
            format!("aggregate[sum]={e}"),
            format!("aggregate[{e}]=likes_count"),
        ];
        for q in refused {
            let r = get(&q, admin);
            answers += 1;
            if q.starts_with("fields=") {
                assert_eq!(r.status, 403, "{q}: {}", r.body);
                assert_eq!(r.error_code(), "FORBIDDEN", "{q}");
            } else {
                assert_eq!(r.status, 400, "{q}: {}", r.body);
                assert_eq!(r.error_code(), "INVALID_QUERY", "{q}");
            }
        }
        // As a collection or an id.
        let r = host.get(&format!("/items/{e}"), admin);
        answers += 1;
        assert!(
            matches!(r.status, 400 | 404),
            "collection {evil:?}: {} {}",
            r.status,
            r.body
        );
        let r = host.get(&format!("/items/{e}"), Some("h-viewer"));
        answers += 1;
        assert_eq!(r.status, 403, "collection {evil:?} as viewer: {}", r.body);
        // As an id (ids are UUIDs: nothing matches, nothing is deleted).
        let r = host.get(&format!("/items/videos/{e}"), admin);
        answers += 1;
        assert_eq!(r.status, 404, "id {evil:?}: {}", r.body);
        let r = host.request("DELETE", &format!("/items/videos/{e}"), admin, None);
        answers += 1;
        assert!(
            matches!(r.status, 403 | 404),
            "delete id {evil:?}: {} {}",
            r.status,
            r.body
        );
        // In the service's query parameters and path segments.
        for path in [
            format!("/svc/recordings?status={e}&tags={e}&linked_video={e}"),
            // Each alone too: with another condition false, a database may
            // never evaluate this one.
            format!("/svc/recordings?status={e}"),
            format!("/svc/recordings?tags={e}"),
            format!("/svc/recordings?linked_video={e}"),
            format!("/svc/videos?model_id={e}"),
        ] {
            let r = host.get(&path, Some("h-viewer"));
            answers += 1;
            assert_eq!(r.status, 200, "{path}: {}", r.body);
            assert_eq!(r.json(), json!([]), "{path}");
        }
        for path in [format!("/svc/videos/{e}"), format!("/svc/models/{e}")] {
            let r = host.get(&path, None);
            answers += 1;
            assert_eq!(r.status, 404, "{path}: {}", r.body);
        }
    }
    // The stored metacharacters come back exactly.
    let f = json!({"slug": {"_eq": stored}});
    let r = get(&format!("filter={}", encode(&f.to_string())), admin);
    assert_eq!(r.json()["data"][0]["title"], "evil slug");
    let after = tables(&host);
    assert_eq!(before, after, "tables or row counts changed");
    assert!(after.iter().any(|(t, _)| t == "videos"));
    assert!(after.iter().any(|(t, _)| t == "platform_users"));
    println!(
        "sql metacharacters: {} values, {answers} answers, {} tables intact",
        EVIL.len(),
        after.len()
    );
    host.assert_serving();
}

// ---------------------------------------------------------------- names

#[test]
fn unknown_and_traversal_looking_collection_names_reveal_nothing() {
    let host = viewer_host(HostOptions::svc());
    let names = [
        "no_such_collection",
        "..%2Fplatform_users",
        "%2E%2E%2Fplatform_users",
        "..%5Cplatform_users",
        "platform_users%00",
        "platform_users%2F..",
        "recordings%2F..%2Fplatform_users",
        "sqlite_master",
        "pg_class",
        "information_schema.tables",
        "platform_migrations",
        "PLATFORM_USERS",
        "%20platform_users",
    ];
    for name in names {
        let r = host.get(&format!("/items/{name}"), Some("h-viewer"));
        assert_eq!(r.status, 403, "{name} as viewer: {}", r.body);
        let r = host.get(&format!("/items/{name}"), None);
        assert_eq!(r.status, 403, "{name} anonymous: {}", r.body);
        let r = host.get(&format!("/items/{name}"), Some(ADMIN_TOKEN));
        assert!(
            matches!(r.status, 400 | 403 | 404),
            "{name} as admin: {} {}",
            r.status,
            r.body
        );
        assert!(!r.body.contains("@test.local"), "{name}: {}", r.body);
    }
    // Dot segments sent as is (ureq would normalise them).
    for target in [
        "/items/../platform_users",
        "/items/./platform_users/..",
        "/svc/../items/platform_users",
        "/svc/%2E%2E/items/platform_users",
        "/items/recordings/../../items/platform_users",
    ] {
        let r = raw(&host, &head("GET", target, &[&bearer("h-viewer")]));
        let status = r.status.unwrap_or(0);
        assert!(matches!(status, 400..=404), "{target}: {r:?}");
        assert!(!r.body.contains("@test.local"), "{target}: {}", r.body);
    }
}

// ---------------------------------------------------------------- size

#[test]
fn very_long_urls_and_headers_are_refused_cleanly() {
    let host = viewer_host(HostOptions::svc());
    for target in [
        format!("/svc/videos/{}", "a".repeat(200_000)),
        format!("/items/videos?fields={}", "a,".repeat(500_000)),
        format!("/svc/recordings?{}", "x=1&".repeat(200_000)),
        format!("/{}", "svc/".repeat(100_000)),
    ] {
        let r = raw(&host, &head("GET", &target, &[&bearer("h-viewer")]));
        let status = r.status.unwrap_or(0);
        assert!(
            (400..500).contains(&status),
            "URL of {} bytes: {status} {}",
            target.len(),
            r.head
        );
    }
    // Long, but within the HTTP layer's limits: answered by the route.
    let r = host.get(&format!("/svc/videos/{}", "a".repeat(8_000)), None);
    assert_eq!(r.status, 404, "{}", r.body);
    let fields = vec!["slug"; 500].join(",");
    let r = host.get(&format!("/items/videos?fields={fields}"), Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200, "{}", r.body);
    let fields = vec!["slug"; 2_000].join(",");
    let r = host.get(&format!("/items/videos?fields={fields}"), Some(ADMIN_TOKEN));
    assert_eq!(r.status, 400, "{}", r.body);
    let many: Vec<String> = (0..2_000).map(|i| format!("v{i}")).collect();
    let f = json!({"slug": {"_in": many}});
    let r = host.get(
        &format!("/items/videos?filter={}", encode(&f.to_string())),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // A huge header and very many headers.
    let big = format!("X-Big: {}", "b".repeat(1_000_000));
    let r = raw(&host, &head("GET", "/svc/stats", &[&big]));
    assert!(matches!(r.status, Some(400..=499)), "{}", r.head);
    let lines: Vec<String> = (0..5_000).map(|i| format!("X-H{i}: v")).collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let r = raw(&host, &head("GET", "/svc/stats", &refs));
    assert!(matches!(r.status, Some(400..=499)), "{}", r.head);
    host.assert_serving();
}

// ---------------------------------------------------------------- headers

#[test]
fn header_injection_attempts_do_not_reach_responses_or_grant_access() {
    let host = viewer_host(HostOptions::svc());
    // CR/LF in path and query values never become response headers.
    for target in [
        "/svc/models/x%0D%0ASet-Cookie:%20evil=1",
        "/svc/videos/x%0D%0A%0D%0A%3Chtml%3E",
        "/svc/recordings?status=x%0D%0ALocation:%20http://evil",
        "/items/videos%0D%0ASet-Cookie:%20evil=1",
    ] {
        let r = raw(&host, &head("GET", target, &[&bearer("h-viewer")]));
        let status = r.status.unwrap_or(0);
        assert!((200..500).contains(&status), "{target}: {r:?}");
        let lower = r.head.to_ascii_lowercase();
        assert!(
            !lower.contains("set-cookie") && !lower.contains("location:"),
            "{target}: {}",
            r.head
        );
    }
    // A token carrying CR/LF matches nobody.
    let r = host.get(
        "/svc/stats?access_token=x%0D%0AAuthorization:%20Bearer%20y",
        None,
    );
    assert_eq!(r.status, 401, "{}", r.body);

    // Header lines that try to smuggle an admin Authorization: refused by
    // the HTTP layer, or at least not admin.
    let admin = bearer(ADMIN_TOKEN);
    let attempts: Vec<Vec<u8>> = vec![
        // obs-fold continuation line
        head("GET", "/server/metrics", &["X-A: b", &format!(" {admin}")]),
        // bare CR inside a value
        head("GET", "/server/metrics", &[&format!("X-A: b\r{admin}")]),
        // NUL inside a value
        head("GET", "/server/metrics", &[&format!("X-A: b\0{admin}")]),
        // two Authorization headers that disagree: refused
        head("GET", "/server/metrics", &[&bearer("h-viewer"), &admin]),
        // a header and a query parameter that disagree: refused
        head(
            "GET",
            &format!("/server/metrics?access_token={ADMIN_TOKEN}"),
            &[&bearer("h-viewer")],
        ),
        // the token in another header
        head(
            "GET",
            "/server/metrics",
            &[&format!("X-Authorization: Bearer {ADMIN_TOKEN}")],
        ),
        head(
            "GET",
            "/server/metrics",
            &[&format!("Cookie: access_token={ADMIN_TOKEN}")],
        ),
    ];
    for req in attempts {
        let r = raw(&host, &req);
        let status = r.status.unwrap_or(0);
        assert!(
            (400..500).contains(&status),
            "{}: {status} {}",
            String::from_utf8_lossy(&req).escape_debug(),
            r.body
        );
    }

    // Content-Length and Transfer-Encoding together: one request, answered
    // once; the bytes after the chunked body are not a second request.
    let mut req = head(
        "POST",
        "/svc/recordings",
        &[
            "Content-Length: 5",
            "Transfer-Encoding: chunked",
            &bearer("h-viewer"),
        ],
    );
    req.extend_from_slice(
        format!("0\r\n\r\nGET /server/metrics HTTP/1.1\r\nHost: x\r\n{admin}\r\n\r\n").as_bytes(),
    );
    let r = raw(&host, &req);
    let status = r.status.unwrap_or(0);
    assert!((400..500).contains(&status), "{r:?}");
    assert_eq!(r.body.matches("HTTP/1.1").count(), 0, "{r:?}");
    assert!(!r.body.contains("items_calls"), "{r:?}");
    host.assert_serving();
}

/// docs/decisions.md §3: credentials that disagree get 401, like a bad token,
/// on the host's routes and under an extension's mount alike.
#[test]
fn credentials_that_disagree_are_refused() {
    let host = Host::start(HostOptions::svc());
    host.user(Some("Viewer"), "cd-viewer");
    host.user(Some("Viewer"), "cd-other");
    for path in ["/svc/stats", "/items/recordings", "/server/health"] {
        let sep = if path.contains('?') { '&' } else { '?' };
        // A valid header and a query token that matches nobody.
        let r = host.get(&format!("{path}{sep}access_token=nope"), Some("cd-viewer"));
        assert_eq!(r.status, 401, "{path}: {}", r.body);
        // Two valid tokens of different users.
        let r = host.get(
            &format!("{path}{sep}access_token=cd-other"),
            Some("cd-viewer"),
        );
        assert_eq!(r.status, 401, "{path}: {}", r.body);
        // Two query tokens that differ.
        let r = host.get(
            &format!("{path}{sep}access_token=cd-viewer&access_token=nope"),
            None,
        );
        assert_eq!(r.status, 401, "{path}: {}", r.body);
        // The same token twice is one credential.
        let r = host.get(
            &format!("{path}{sep}access_token=cd-viewer"),
            Some("cd-viewer"),
        );
        assert_eq!(r.status, 200, "{path}: {}", r.body);
    }
    let r = raw(
        &host,
        &head(
            "GET",
            "/svc/stats",
            &[&bearer("cd-viewer"), &bearer("nope")],
        ),
    );
    assert_eq!(r.status, Some(401), "{r:?}");
}

/// An answer in the items API's error shape with this status and code;
/// its message names no database.
fn assert_items_error(r: &Resp, status: u16, code: &str) -> String {
    assert_eq!(r.status, status, "{}", r.body);
    let body: Value =
        serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.body));
    assert_eq!(body["errors"][0]["extensions"]["code"], code, "{}", r.body);
    let message = body["errors"][0]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no message: {}", r.body))
        .to_string();
    for database_text in [
        "SQLITE",
        "sqlite",
        "constraint failed",
        "no such",
        "syntax error",
        "postgres",
        "Postgres",
        "SQLSTATE",
        "duplicate key",
        "violates",
        "relation \"",
    ] {
        assert!(!message.contains(database_text), "{}", r.body);
    }
    message
}

#[test]
fn oversized_queries_are_refused_before_the_database() {
    let host = Host::start(HostOptions::svc());
    let branches: Vec<Value> = (0..1000)
        .map(|i| json!({"slug": {"_eq": format!("s{i}")}}))
        .collect();
    let filter = encode(&json!({ "_or": branches }).to_string());
    let sort = vec!["slug"; 2001].join(",");
    let group = vec!["slug"; 2000].join(",");
    let fields = vec!["slug"; 1000].join(",");
    for (what, query) in [
        ("filter", format!("filter={filter}")),
        ("sort", format!("sort={sort}")),
        ("groupBy", format!("aggregate[count]=*&groupBy={group}")),
        ("fields", format!("fields={fields}")),
    ] {
        let r = host.get(&format!("/items/videos?{query}"), Some(ADMIN_TOKEN));
        let message = assert_items_error(&r, 400, "INVALID_QUERY");
        assert!(message.starts_with("too many"), "{what}: {message}");
    }
    // Within the limits, the same shapes are answered.
    let r = host.get(
        "/items/videos?sort=slug,-title&fields=slug,slug",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    host.assert_serving();
}

#[test]
fn failures_are_worded_for_clients_in_the_json_shape() {
    let host = Host::start(HostOptions::svc());
    host.admin_create("videos", &json!({"slug": "taken", "title": "T"}));
    let r = host.post(
        "/items/videos",
        Some(ADMIN_TOKEN),
        &json!({"slug": "taken"}),
    );
    let message = assert_items_error(&r, 400, "RECORD_NOT_UNIQUE");
    assert_eq!(
        message,
        "Value for field \"slug\" in collection \"videos\" has to be unique."
    );
    // A path that is not UTF-8, a method a host route does not serve.
    let r = host.get("/items/recordings/%FF", Some(ADMIN_TOKEN));
    assert_items_error(&r, 400, "INVALID_PAYLOAD");
    let r = host.request("PUT", "/items/videos/x", Some(ADMIN_TOKEN), None);
    assert_items_error(&r, 405, "METHOD_NOT_ALLOWED");
    // An unexpected storage failure: a generic message; the detail is
    // logged.
    host.break_table("articles");
    let r = host.get("/items/articles", Some(ADMIN_TOKEN));
    let message = assert_items_error(&r, 500, "INTERNAL");
    assert_eq!(message, "An unexpected error occurred.");
    let detail = match host.backend() {
        Backend::Sqlite => "no such table",
        Backend::Postgres => "does not exist",
    };
    assert!(host.log().contains(detail), "{}", host.log());
}

#[test]
fn durations_must_be_finite_and_non_negative() {
    let host = Host::start(HostOptions::svc());
    let model = host.user(Some("Model"), "dv-model");
    host.user(Some("Viewer"), "dv-viewer");
    let video = host.admin_create("videos", &json!({"slug": "dv", "title": "DV"}))["id"]
        .as_str()
        .expect("video id")
        .to_string();
    host.admin_create(
        "videos_models",
        &json!({"videos_id": video, "platform_users_id": model}),
    );
    let play = host.post(&format!("/svc/videos/{video}/play"), None, &json!({}));
    let play = play.json()["play_id"]
        .as_str()
        .expect("play id")
        .to_string();
    for bad in [json!(1e308), json!(-1), json!(-0.5)] {
        let r = host.patch(
            &format!("/svc/videos/{video}/play/{play}"),
            None,
            &json!({ "duration_watched": bad }),
        );
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert_eq!(
            r.json(),
            json!({"error": "duration_watched must be a non-negative number"})
        );
    }
    let r = host.patch(
        &format!("/svc/videos/{video}/play/{play}"),
        None,
        &json!({"duration_watched": 42}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let analytics = host.get("/svc/analytics", Some("dv-model")).json();
    assert_eq!(analytics["videos"][0]["avg_watch_time"], 42, "{analytics}");

    let mut body = json!({"title": "Negative", "duration": -5, "events": [{"timestamp": 0}],
                          "device_info": []});
    let r = host.post("/svc/recordings", Some("dv-viewer"), &body);
    assert_eq!(
        r.json(),
        json!({"error": "duration must be a non-negative number"})
    );
    body["duration"] = json!(1000);
    body["status"] = json!("published");
    let rec = host
        .post("/svc/recordings", Some("dv-viewer"), &body)
        .json()["id"]
        .as_str()
        .expect("recording id")
        .to_string();
    let play = host.post(&format!("/svc/recordings/{rec}/play"), None, &json!({}));
    let play = play.json()["play_id"]
        .as_str()
        .expect("play id")
        .to_string();
    let r = host.patch(
        &format!("/svc/recordings/{rec}/play/{play}"),
        None,
        &json!({"duration_played": -1}),
    );
    assert_eq!(
        (r.status, r.json()),
        (
            400,
            json!({"error": "duration_played must be a non-negative number"})
        )
    );
}

#[test]
fn integers_and_references_are_checked_on_every_write() {
    let host = Host::start(HostOptions::svc());
    let viewer = host.user(Some("Viewer"), "rv-viewer");
    let video = host.admin_create("videos", &json!({"slug": "rv", "title": "RV"}))["id"]
        .as_str()
        .expect("video id")
        .to_string();
    // Integers: whole numbers within 64 bits only.
    for bad in [json!(1.5), json!(18_446_744_073_709_551_615u64), json!("7")] {
        let r = host.post(
            "/items/videos",
            Some(ADMIN_TOKEN),
            &json!({"slug": format!("int-{bad}"), "likes_count": bad}),
        );
        assert_items_error(&r, 400, "INVALID_PAYLOAD");
        let r = host.patch(
            &format!("/items/videos/{video}"),
            Some(ADMIN_TOKEN),
            &json!({ "plays_count": bad }),
        );
        assert_items_error(&r, 400, "INVALID_PAYLOAD");
    }
    // References name existing items, through /items and through /svc.
    let nothing = "00000000-0000-4000-8000-00000000dead";
    let r = host.post(
        "/items/video_likes",
        Some("rv-viewer"),
        &json!({"video_id": nothing, "user_id": viewer}),
    );
    assert_items_error(&r, 400, "INVALID_PAYLOAD");
    let r = host.post(
        "/svc/recordings",
        Some("rv-viewer"),
        &json!({"title": "Linked", "duration": 10, "events": [{"timestamp": 0}],
                "device_info": [], "linked_video": nothing}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let rec = host.post(
        "/svc/recordings",
        Some("rv-viewer"),
        &json!({"title": "Linked", "duration": 10, "events": [{"timestamp": 0}],
                "device_info": [], "linked_video": video}),
    );
    assert_eq!(rec.status, 201, "{}", rec.body);
    let rec = rec.json()["id"].as_str().expect("id").to_string();
    let r = host.patch(
        &format!("/items/recordings/{rec}"),
        Some("rv-viewer"),
        &json!({ "linked_video": nothing }),
    );
    assert_items_error(&r, 400, "INVALID_PAYLOAD");
    let r = host.patch(
        &format!("/svc/recordings/{rec}"),
        Some("rv-viewer"),
        &json!({ "linked_video": nothing }),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let r = host.get("/items/video_likes?limit=-1", Some(ADMIN_TOKEN));
    assert_eq!(r.json()["data"], json!([]), "nothing stored");
}

#[test]
fn deletes_follow_the_rule_of_each_reference() {
    let host = Host::start(HostOptions::svc());
    let fan = host.user(Some("Viewer"), "dr-fan");
    host.user(Some("Viewer"), "dr-owner");
    let id = |v: Value| v["id"].as_str().expect("id").to_string();
    let video = id(host.admin_create("videos", &json!({"slug": "dr", "title": "DR"})));
    assert_eq!(
        host.post(
            &format!("/svc/videos/{video}/like"),
            Some("dr-fan"),
            &json!({})
        )
        .status,
        200
    );
    host.post(&format!("/svc/videos/{video}/play"), None, &json!({}));
    let rec = host.post(
        "/svc/recordings",
        Some("dr-owner"),
        &json!({"title": "Linked", "duration": 10, "events": [{"timestamp": 0}],
                "device_info": [], "linked_video": video, "status": "published"}),
    );
    let rec = id(rec.json());
    host.post(
        &format!("/svc/recordings/{rec}/play"),
        Some("dr-fan"),
        &json!({}),
    );
    let count = |collection: &str| {
        host.get(&format!("/items/{collection}?limit=-1"), Some(ADMIN_TOKEN))
            .json()["data"]
            .as_array()
            .map(Vec::len)
            .unwrap_or(0)
    };
    assert_eq!((count("video_likes"), count("video_plays")), (1, 1));

    // Cascade: a video's likes and plays go with it; set null: a
    // recording keeps itself and loses the link.
    host.admin_delete("videos", &video);
    assert_eq!((count("video_likes"), count("video_plays")), (0, 0));
    let kept = host.get(&format!("/items/recordings/{rec}"), Some(ADMIN_TOKEN));
    assert_eq!(
        kept.json()["data"]["linked_video"],
        Value::Null,
        "{}",
        kept.body
    );

    // A recording's plays go with it, and the stats follow (hooks see the
    // cascaded deletes).
    host.admin_delete("recordings", &rec);
    assert_eq!(count("recording_plays"), 0);
    let stats = host
        .get(&format!("/svc/gamification/user/{fan}"), None)
        .json();
    assert_eq!(stats["stats"]["playbacks_count"], 0, "{stats}");

    // A role that users have: set null on them; its access links go with
    // it.
    let viewer_role = host.id_by_name("platform_roles", "Viewer");
    let r = host.delete(
        &format!("/items/platform_roles/{viewer_role}"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    let user = host.get(&format!("/items/platform_users/{fan}"), Some(ADMIN_TOKEN));
    assert_eq!(user.json()["data"]["role"], Value::Null, "{}", user.body);
}
