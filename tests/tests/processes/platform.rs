//! The platform core through HTTP: /svc/stats counts, the items API with
//! permissions, authentication, secrets, limits and restarts.

use platform_tests::{encode, image_dimensions, str_of, Database, Host, HostOptions, ADMIN_TOKEN};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn recording(title: &str) -> Value {
    json!({
        "title": title, "duration": 1000, "device_info": [{"name": "D", "index": 0, "capabilities": []}],
        "events": [{"timestamp": 0, "deviceIndex": 0, "deviceName": "D", "actuatorIndex": 0,
                    "actuatorType": "Vibrate", "value": 50}],
    })
}

#[test]
fn stats_counts_role_and_policy_named_users_and_all_videos() {
    let host = Host::in_process_svc();
    // Named by role.
    host.user(Some("Model"), "model-a");
    host.user(Some("Model"), "model-b");
    host.user(Some("Viewer"), "viewer-a");
    // A role of another name that carries the Model policy.
    let creator = host.admin_create("platform_roles", &json!({"name": "Creator"}))["id"].clone();
    let model_policy = host.id_by_name("platform_policies", "Model");
    host.admin_create(
        "platform_access",
        &json!({"role": creator, "policy": model_policy}),
    );
    let r = host.post(
        "/items/platform_users",
        Some(ADMIN_TOKEN),
        &json!({"email": "c@test.local", "role": creator}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // A user with no role and the Viewer policy attached directly.
    let direct = host.user(None, "direct-viewer");
    let viewer_policy = host.id_by_name("platform_policies", "Viewer");
    host.admin_create(
        "platform_access",
        &json!({"user": direct, "policy": viewer_policy}),
    );
    // Videos count with no date filter, future ones included.
    for (slug, date) in [
        ("past", "2020-01-01T00:00:00Z"),
        ("now", "2026-01-01T00:00:00Z"),
        ("future", "2999-01-01T00:00:00Z"),
    ] {
        host.admin_create(
            "videos",
            &json!({"slug": slug, "title": slug, "upload_date": date}),
        );
    }

    let r = host.get("/svc/stats", None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"models_count": 3, "viewers_count": 2, "videos_count": 3})
    );
}

#[test]
fn stats_of_an_empty_platform_are_zero() {
    let host = Host::in_process_svc();
    assert_eq!(
        host.get("/svc/stats", None).json(),
        json!({"models_count": 0, "viewers_count": 0, "videos_count": 0})
    );
}

#[test]
fn recordings_through_the_items_api_follow_permissions() {
    let host = Host::in_process_svc();
    let alice = host.user(Some("Viewer"), "alice-token");
    host.user(Some("Viewer"), "bob-token");

    // Anonymous callers have no permissions.
    assert_eq!(host.get("/items/recordings", None).status, 403);
    assert_eq!(
        host.post("/items/recordings", None, &recording("anon"))
            .status,
        403
    );

    // A viewer creates; the owner is forced to the caller.
    let mut body = recording("mine");
    body["user_created"] = json!("someone-else");
    let r = host.post("/items/recordings", Some("alice-token"), &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let created = r.json()["data"].clone();
    assert_eq!(created["user_created"], alice);
    assert_eq!(created["status"], "draft");
    assert_eq!(created["public"], false);
    assert_eq!(created["tags"], json!([]));
    let id = created["id"].as_str().expect("id").to_string();

    // Another viewer may not read it while it is private (docs/decisions.md
    // §5), may once it is public, and may never change or delete it.
    assert_eq!(
        host.get(&format!("/items/recordings/{id}"), Some("bob-token"))
            .status,
        403
    );
    let r = host.patch(
        &format!("/items/recordings/{id}"),
        Some("alice-token"),
        &json!({"public": true}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        host.get(&format!("/items/recordings/{id}"), Some("bob-token"))
            .status,
        200
    );
    let r = host.patch(
        &format!("/items/recordings/{id}"),
        Some("bob-token"),
        &json!({"title": "hijack"}),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json()["errors"][0]["extensions"]["code"], "FORBIDDEN");
    assert_eq!(
        host.delete(&format!("/items/recordings/{id}"), Some("bob-token"))
            .status,
        403
    );
    assert_eq!(
        host.patch(
            &format!("/items/recordings/{id}"),
            None,
            &json!({"title": "x"})
        )
        .status,
        403
    );
    assert_eq!(
        host.delete(&format!("/items/recordings/{id}"), None).status,
        403
    );

    // The owner can; user_created cannot be handed over.
    let r = host.patch(
        &format!("/items/recordings/{id}"),
        Some("alice-token"),
        &json!({"title": "renamed", "user_created": "someone-else"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["title"], "renamed");
    assert_eq!(r.json()["data"]["user_created"], alice);

    // An admin can change and delete anyone's.
    let r = host.patch(
        &format!("/items/recordings/{id}"),
        Some(ADMIN_TOKEN),
        &json!({"status": "published"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["status"], "published");
    assert_eq!(
        host.delete(&format!("/items/recordings/{id}"), Some(ADMIN_TOKEN))
            .status,
        204
    );
    assert_eq!(
        host.get(&format!("/items/recordings/{id}"), Some(ADMIN_TOKEN))
            .status,
        404
    );
}

#[test]
fn items_api_queries_filter_sort_page_and_aggregate() {
    let host = Host::in_process_svc();
    for (i, slug) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        host.admin_create(
            "videos",
            &json!({"slug": slug, "title": slug.to_uppercase(), "likes_count": i, "upload_date": format!("2026-01-0{}T00:00:00Z", i + 1)}),
        );
    }
    let filter = encode(&json!({"likes_count": {"_gte": 2}}).to_string());
    let r = host.get(
        &format!("/items/videos?filter={filter}&sort=-upload_date&fields=slug,likes_count&limit=2&page=1"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["data"],
        json!([{"slug": "e", "likes_count": 4}, {"slug": "d", "likes_count": 3}])
    );
    let r = host.get(
        &format!("/items/videos?filter={filter}&sort=-upload_date&fields=slug&limit=2&page=2"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.json()["data"], json!([{"slug": "c"}]));
    let r = host.get(
        "/items/videos?aggregate[count]=*&aggregate[sum]=likes_count",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(
        r.json()["data"],
        json!([{"count": 5, "sum": {"likes_count": 10}}])
    );

    // Only known fields reach the database.
    let bad = encode(&json!({"slug; DROP TABLE videos": {"_eq": 1}}).to_string());
    let r = host.get(&format!("/items/videos?filter={bad}"), Some(ADMIN_TOKEN));
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["errors"][0]["extensions"]["code"], "INVALID_QUERY");
    assert_eq!(
        host.get("/items/videos?sort=nope", Some(ADMIN_TOKEN))
            .status,
        400
    );
    assert_eq!(
        host.get("/items/videos?fields=slug,\"x\"", Some(ADMIN_TOKEN))
            .status,
        403
    );
    assert_eq!(
        host.get("/items/videos?filter=notjson", Some(ADMIN_TOKEN))
            .status,
        400
    );
    assert_eq!(
        host.get("/items/no_such_collection", Some(ADMIN_TOKEN))
            .status,
        404
    );
    assert_eq!(
        host.get("/items/videos?aggregate[count]=*", None).status,
        403
    );
    // Unique constraints hold.
    let r = host.post(
        "/items/videos",
        Some(ADMIN_TOKEN),
        &json!({"slug": "a", "title": "dup"}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json()["errors"][0]["extensions"]["code"],
        "RECORD_NOT_UNIQUE"
    );
    // Wrong types and unknown fields are refused, nothing written.
    let r = host.post(
        "/items/videos",
        Some(ADMIN_TOKEN),
        &json!({"slug": "z", "likes_count": "many"}),
    );
    assert_eq!(r.status, 400);
    let r = host.post(
        "/items/videos",
        Some(ADMIN_TOKEN),
        &json!({"slug": "z", "colour": "red"}),
    );
    assert_eq!(r.status, 400);
    let r = host.request(
        "POST",
        "/items/videos",
        Some(ADMIN_TOKEN),
        Some(b"{not json"),
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"][0]["extensions"]["code"],
        "INVALID_PAYLOAD"
    );
    assert_eq!(
        host.get("/items/videos?aggregate[count]=*", Some(ADMIN_TOKEN))
            .json()["data"][0]["count"],
        5
    );
}

#[test]
fn current_user_and_now_resolve_in_filters() {
    let host = Host::in_process_svc();
    host.user(Some("Viewer"), "cu-token");
    assert_eq!(
        host.post("/items/recordings", Some("cu-token"), &recording("mine"))
            .status,
        200
    );
    assert_eq!(
        host.post(
            "/items/recordings",
            Some(ADMIN_TOKEN),
            &json!({"title": "admin's", "public": true})
        )
        .status,
        200
    );
    let mine = encode(&json!({"user_created": {"_eq": "$CURRENT_USER"}}).to_string());
    let r = host.get(
        &format!("/items/recordings?filter={mine}&fields=title"),
        Some("cu-token"),
    );
    assert_eq!(r.json()["data"], json!([{"title": "mine"}]));
    let past = encode(&json!({"date_created": {"_lte": "$NOW"}}).to_string());
    let r = host.get(
        &format!("/items/recordings?filter={past}&fields=title"),
        Some("cu-token"),
    );
    assert_eq!(r.json()["data"].as_array().map(Vec::len), Some(2));
}

#[test]
fn tokens_are_stored_hashed_and_secrets_never_leave() {
    let host = Host::in_process_svc();
    let id = host.user(Some("Viewer"), "plain-secret-token");
    let r = host.patch(
        &format!("/items/platform_users/{id}"),
        Some(ADMIN_TOKEN),
        &json!({"password": "hunter2"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);

    let row = host.sql_query_one(&format!(
        "SELECT \"token\", \"password\" FROM \"platform_users\" WHERE \"id\" = '{id}'"
    ));
    let (token, password) = match row.as_slice() {
        [Some(token), Some(password)] => (token.clone(), password.clone()),
        other => panic!("user row: {other:?}"),
    };
    assert_ne!(token, "plain-secret-token");
    assert_eq!(token, hex::encode(Sha256::digest(b"plain-secret-token")));
    assert!(password.starts_with("$argon2"), "{password}");
    let admin_token = host.sql_query_one(
        "SELECT \"token\" FROM \"platform_users\" WHERE \"email\" = 'admin@example.com'",
    );
    let admin_token = admin_token[0].clone().expect("admin token");
    assert_ne!(admin_token, ADMIN_TOKEN);

    // The token works, and no answer carries a secret.
    assert_eq!(
        host.get("/items/recordings", Some("plain-secret-token"))
            .status,
        200
    );
    for path in [
        "/items/platform_users".to_string(),
        format!("/items/platform_users/{id}"),
        "/items/platform_users?fields=id,password,token".to_string(),
    ] {
        let r = host.get(&path, Some(ADMIN_TOKEN));
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert!(
            !r.body.contains("\"password\"") && !r.body.contains("\"token\""),
            "{path}: {}",
            r.body
        );
        assert!(
            !r.body.contains("argon2") && !r.body.contains(&token),
            "{path}: {}",
            r.body
        );
    }
    let probe = encode(&json!({"token": {"_eq": token}}).to_string());
    assert_eq!(
        host.get(
            &format!("/items/platform_users?filter={probe}"),
            Some(ADMIN_TOKEN)
        )
        .status,
        400
    );
}

#[test]
fn a_bad_token_is_refused_everywhere() {
    let host = Host::in_process_svc();
    let r = host.get("/svc/stats", Some("not-a-token"));
    assert_eq!(r.status, 401);
    assert_eq!(r.json(), json!({"error": "Invalid token"}));
    let r = host.get("/svc/stats?access_token=not-a-token", None);
    assert_eq!(r.status, 401);
    let r = host.get("/items/videos", Some("not-a-token"));
    assert_eq!(r.status, 401);
    assert_eq!(
        r.json()["errors"][0]["extensions"]["code"],
        "INVALID_CREDENTIALS"
    );
    // A suspended user's token stops working.
    let id = host.user(Some("Viewer"), "soon-suspended");
    assert_eq!(host.get("/svc/stats", Some("soon-suspended")).status, 200);
    host.patch(
        &format!("/items/platform_users/{id}"),
        Some(ADMIN_TOKEN),
        &json!({"status": "suspended"}),
    );
    assert_eq!(host.get("/svc/stats", Some("soon-suspended")).status, 401);
    // The query-string token works like the header.
    assert_eq!(
        host.get(
            &format!("/items/recordings?access_token={ADMIN_TOKEN}"),
            None
        )
        .status,
        200
    );
}

#[test]
fn server_routes_and_errors_have_their_shapes() {
    let host = Host::start(HostOptions::svc().arg("--max-payload").arg("1024"));
    let r = host.get("/server/ping", None);
    assert_eq!((r.status, r.body.as_str()), (200, "pong"));
    assert_eq!(
        host.get("/server/health", None).json(),
        json!({"status": "ok"})
    );
    let r = host.get("/svc/nope", None);
    assert_eq!(r.status, 404);
    assert_eq!(r.json(), json!({"error": "Route not found"}));
    // A known path with another method: 405, and `Allow` lists its methods.
    let r = host.delete("/svc/stats", None);
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(r.json(), json!({"error": "Method not allowed"}));
    assert_eq!(r.header_all("allow"), ["GET"]);
    let r = host.request("PUT", "/svc/recordings/x", Some(ADMIN_TOKEN), None);
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(r.header_all("allow"), ["DELETE, GET, PATCH"]);
    // A route that needs a caller answers 401 before reading the body.
    let r = host.post("/svc/recordings", None, &json!({"title": 5}));
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.json(), json!({"error": "Unauthorized"}));
    let r = host.get("/nowhere", None);
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json()["errors"][0]["extensions"]["code"],
        "ROUTE_NOT_FOUND"
    );
    let big = json!({"title": "x".repeat(4096)}).to_string();
    for path in ["/svc/stats", "/items/videos"] {
        let r = host.request("POST", path, Some(ADMIN_TOKEN), Some(big.as_bytes()));
        assert_eq!(r.status, 413, "{path}");
        assert_eq!(r.json(), json!({"error": "Payload too large"}));
    }
    assert_eq!(
        host.get("/items/videos?aggregate[count]=*", Some(ADMIN_TOKEN))
            .json()["data"][0]["count"],
        0
    );
    let oas = host.get("/server/specs/oas", None).json();
    assert_eq!(oas["openapi"], "3.1.0");
    assert!(oas["paths"]["/svc/stats"]["get"].is_object(), "{oas}");
}

#[test]
fn migrations_are_idempotent_across_restarts() {
    let host = Host::start(HostOptions::svc());
    host.admin_create("videos", &json!({"slug": "kept", "title": "Kept"}));
    assert!(host
        .log()
        .contains("[svc] applied migration 0001_collections"));
    let dir = host.stop();
    let mut opts = HostOptions::svc();
    opts.data_dir = Some(dir);
    let host = Host::start(opts);
    assert!(!host.log().contains("applied migration"), "{}", host.log());
    assert_eq!(host.get("/svc/stats", None).json()["videos_count"], 1);
    let r = host.get("/items/achievements?aggregate[count]=*", Some(ADMIN_TOKEN));
    assert_eq!(r.json()["data"][0]["count"], 17);
}

#[test]
fn extension_grants_apply_once_and_an_administrators_edit_stands() {
    let host = Host::start(HostOptions::svc());
    assert!(host
        .log()
        .contains("[svc] applied migration 0009_member_grants"));
    // svc's migration granted the members their rules, as docs/decisions.md §5
    // says.
    let viewer = host.id_by_name("platform_policies", "Viewer");
    let likes = host.admin_find(
        "platform_permissions",
        &json!({"policy": {"_eq": viewer}, "collection": {"_eq": "video_likes"}}),
    );
    let mut actions: Vec<&str> = likes.iter().filter_map(|r| r["action"].as_str()).collect();
    actions.sort();
    assert_eq!(actions, ["create", "delete", "read"]);
    let read = likes
        .iter()
        .find(|r| r["action"] == "read")
        .expect("read rule");
    assert_eq!(
        read["permissions"],
        json!({"user_id": {"_eq": "$CURRENT_USER"}})
    );
    let create = rules_of(&host, "Viewer")
        .into_iter()
        .find(|r| r["action"] == "create")
        .expect("create rule");
    assert!(
        !create["fields"].to_string().contains("featured"),
        "{create}"
    );
    assert_eq!(create["presets"], json!({"user_created": "$CURRENT_USER"}));
    // The rule works: a viewer reads their likes.
    host.user(Some("Viewer"), "grant-viewer");
    let r = host.get("/items/video_likes", Some("grant-viewer"));
    assert_eq!(r.status, 200, "{}", r.body);

    // An administrator takes one away; a restart does not grant it again.
    let id = read["id"].as_str().expect("id").to_string();
    host.admin_delete("platform_permissions", &id);
    assert_eq!(
        host.get("/items/video_likes", Some("grant-viewer")).status,
        403
    );
    let dir = host.stop();
    let mut opts = HostOptions::svc();
    opts.data_dir = Some(dir);
    let host = Host::start(opts);
    assert_eq!(
        host.get("/items/video_likes", Some("grant-viewer")).status,
        403
    );
    assert_eq!(
        host.admin_count(
            "platform_permissions",
            Some(&json!({"collection": {"_eq": "video_likes"}}))
        ),
        5,
        "Viewer's create and delete, Model's three"
    );
}

#[test]
fn the_host_stops_gracefully_on_sigterm() {
    // Without the answer cache, the last holder of the platform (hence of
    // the database's clients) is the serving task itself.
    for cache in ["true", "false"] {
        let host = Host::start(HostOptions::svc().arg("--cache").arg(cache));
        assert_eq!(host.get("/server/ping", None).status, 200);
        if let Err(e) = host.stop_gracefully() {
            panic!("the host (--cache {cache}) should exit 0 on SIGTERM: {e}");
        }
    }
}

#[test]
fn item_hooks_see_writes_and_a_failing_hook_never_fails_the_write() {
    let host = Host::start(HostOptions::svc_and_fixture());
    // The fixture's hook fails on purpose for videos titled "hook-fail".
    let r = host.post(
        "/items/videos",
        Some(ADMIN_TOKEN),
        &json!({"slug": "hf", "title": "hook-fail"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        host.log().contains("hook failed on items.create videos"),
        "{}",
        host.log()
    );
    let id = r.json()["data"]["id"].as_str().expect("id").to_string();
    let r = host.patch(
        &format!("/items/videos/{id}"),
        Some(ADMIN_TOKEN),
        &json!({"title": "renamed"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        host.delete(&format!("/items/videos/{id}"), Some(ADMIN_TOKEN))
            .status,
        204
    );
    let r = host.get("/fixture/events", None);
    assert_eq!(r.status, 200, "{}", r.body);
    let seen = r.json();
    let seen: Vec<&str> = seen
        .as_array()
        .map(|l| l.iter().filter_map(|e| e.as_str()).collect())
        .unwrap_or_default();
    let videos: Vec<&str> = seen
        .iter()
        .copied()
        .filter(|e| e.contains(" videos"))
        .collect();
    assert_eq!(
        videos,
        vec![
            "items.create videos",
            "items.update videos hook-fail -> renamed",
            "items.delete videos"
        ],
        "{seen:?}"
    );
}

#[test]
fn extensions_read_as_the_caller_or_as_admin() {
    let host = Host::start(HostOptions::svc_and_fixture());
    host.admin_create("videos", &json!({"slug": "v", "title": "V"}));
    host.user(Some("Viewer"), "reader-token");
    // The Public policy may not read videos; admin access may.
    let r = host.get("/fixture/count/videos", None);
    assert_eq!(
        (r.status, r.json()["error"].clone()),
        (403, json!("FORBIDDEN"))
    );
    assert_eq!(
        host.get("/fixture/count/videos?as=admin", None).json(),
        json!({"count": 1})
    );
    // A viewer may read recordings (none yet) but not videos.
    assert_eq!(
        host.get("/fixture/count/recordings", Some("reader-token"))
            .json(),
        json!({"count": 0})
    );
    assert_eq!(
        host.get("/fixture/count/videos", Some("reader-token"))
            .status,
        403
    );
}

/// What the fixture's after-commit hook saw of `fixture_notes` and
/// `fixture_pins` events: which members each payload and record carried.
fn members_seen(host: &Host) -> Vec<String> {
    let r = host.get("/fixture/members", None);
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_value(r.json()).expect("a list of lines")
}

#[test]
fn hooks_that_name_the_fields_they_read_get_only_those_and_the_key() {
    let host = Host::start(HostOptions::svc_and_fixture());
    // The fixture's hooks read only `title` of fixture_notes.
    let body = "a long body the hooks never read";
    let r = host.post(
        "/items/fixture_notes",
        Some(ADMIN_TOKEN),
        &json!({"title": "first", "body": body}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let note = &r.json()["data"];
    assert_eq!(note["body"], body, "the writer's answer stays whole");
    let path = format!("/items/fixture_notes/{}", str_of(&note["id"]));
    let r = host.patch(&path, Some(ADMIN_TOKEN), &json!({"body": "changed"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let r = host.patch(
        &path,
        Some(ADMIN_TOKEN),
        &json!({"title": "second", "body": "again"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["body"], "again");
    assert_eq!(host.delete(&path, Some(ADMIN_TOKEN)).status, 204);
    // fixture_pins named nothing: its events carry every member.
    let r = host.post(
        "/items/fixture_pins",
        Some(ADMIN_TOKEN),
        &json!({"video": null}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        members_seen(&host),
        vec![
            "items.create fixture_notes payload=title before= after=id,title",
            "items.update fixture_notes payload= before=id,title after=id,title",
            "items.update fixture_notes payload=title before=id,title after=id,title",
            "items.delete fixture_notes payload= before=id,title after=",
            "items.create fixture_pins payload=video before= after=id,video",
        ]
    );
}

#[test]
fn extension_transactions_commit_or_roll_back_as_a_whole() {
    let host = Host::start(HostOptions::svc_and_fixture());
    let count = || {
        host.get("/items/videos?aggregate[count]=*", Some(ADMIN_TOKEN))
            .json()["data"][0]["count"]
            .clone()
    };
    let r = host.post(
        "/fixture/tx",
        None,
        &json!({"slugs": ["t1", "t2"], "fail": true}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"], "rolled back");
    assert_eq!(count(), 0, "a failed transaction leaves nothing behind");
    // A unique violation in the middle also undoes the earlier write.
    let r = host.post("/fixture/tx", None, &json!({"slugs": ["t1", "t1"]}));
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"], "RECORD_NOT_UNIQUE");
    assert_eq!(count(), 0);
    let r = host.post("/fixture/tx", None, &json!({"slugs": ["t1", "t2"]}));
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(count(), 2);
    // Item events of a committed transaction are delivered after the commit.
    let seen = host.get("/fixture/events", None).json();
    let creates = seen
        .as_array()
        .map(|l| l.iter().filter(|e| *e == "items.create videos").count());
    assert_eq!(creates, Some(2), "{seen}");
}

fn ticks(host: &Host) -> Value {
    let filter = encode(&json!({"collection": {"_eq": "ticks"}}).to_string());
    host.get(
        &format!("/items/platform_comments?filter={filter}&aggregate[count]=*"),
        Some(ADMIN_TOKEN),
    )
    .json()["data"][0]["count"]
        .clone()
}

#[test]
fn schedules_run_in_the_background_and_on_demand() {
    let libs = vec![platform_tests::library("fixture_ext")];
    let host = Host::start(HostOptions::with(libs.clone()).env_var("SCHEDULES_ENABLED", "true"));
    assert!(
        host.log().contains("[fixture] schedule `tick` registered"),
        "{}",
        host.log()
    );
    // Background: every 2 s; wait for a first run, bounded.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while ticks(&host) == json!(0) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(ticks(&host).as_u64().unwrap_or(0) >= 1, "{}", host.log());
    assert!(host.log().contains("tick ran"));
    let before = ticks(&host).as_u64().unwrap_or(0);
    let dir = host.stop();

    // On demand, against the same database, then exit.
    let run = |name: &str| {
        platform_tests::host_command(&platform_tests::host_binary(), dir.path())
            .args(["schedule", "run", "fixture", name])
            .output()
            .expect("run schedule")
    };
    let ok = run("tick");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let bad = run("nope");
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("has no schedule `nope` (it has: tick)"),
        "{stderr}"
    );

    let mut opts = HostOptions::with(libs);
    opts.data_dir = Some(dir);
    let host = Host::start(opts);
    assert!(ticks(&host).as_u64().unwrap_or(0) > before);
}

#[test]
fn a_host_with_schedules_off_runs_them_only_on_demand() {
    let libs = vec![platform_tests::library("fixture_ext")];
    let host = Host::start(HostOptions::with(libs).env_var("SCHEDULES_ENABLED", "false"));
    // Where schedules are on, `tick` runs every 2 s: give it two periods
    // and a half.
    std::thread::sleep(std::time::Duration::from_millis(5_000));
    assert_eq!(ticks(&host), json!(0), "{}", host.log());
    assert!(
        host.log().contains("schedules are off on this host"),
        "{}",
        host.log()
    );
    assert!(!host.log().contains("schedule `tick` registered"));
    host.run_schedule("fixture", "tick");
    assert_eq!(ticks(&host), json!(1), "{}", host.log());
}

#[test]
fn demo_data_is_seeded_once_and_its_tokens_work() {
    let mut opts = HostOptions::svc().arg("--demo");
    opts.env.push(("ADMIN_TOKEN".into(), String::new()));
    let host = Host::start(opts);
    assert_eq!(
        host.get("/svc/stats", None).json(),
        json!({"models_count": 3, "viewers_count": 2, "videos_count": 6})
    );
    // The documented demo tokens work, with their roles' permissions.
    let r = host.get(
        "/items/recordings?fields=title,user_created",
        Some("demo-viewer-token"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // Their own and the public ones (docs/decisions.md §5).
    assert_eq!(r.json()["data"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        host.get("/server/extensions", Some("demo-admin-token"))
            .status,
        200
    );
    // The site's public collections are readable by visitors and members
    // (docs/decisions.md §9), users by their public fields only.
    for token in [None, Some("demo-model-token"), Some("demo-viewer-token")] {
        for path in [
            "/items/videos?fields=*,models.platform_users_id.first_name",
            "/items/articles",
            "/items/model_photos",
            "/items/platform_files",
            "/items/platform_comments",
            "/items/platform_users?fields=first_name,artist_name,avatar",
        ] {
            let r = host.get(path, token);
            assert_eq!(r.status, 200, "{path} as {token:?}: {}", r.body);
        }
        // Email: to members on their own row alone, to visitors not at all.
        let r = host.get("/items/platform_users?fields=email&limit=-1", token);
        match token {
            None => assert_eq!(r.status, 403, "{}", r.body),
            Some(_) => {
                assert_eq!(r.status, 200, "{}", r.body);
                let emails: Vec<Value> = r.json()["data"]
                    .as_array()
                    .map(|users| users.iter().map(|u| u["email"].clone()).collect())
                    .unwrap_or_default();
                assert_eq!(
                    emails.iter().filter(|e| !e.is_null()).count(),
                    1,
                    "{emails:?}"
                );
            }
        }
    }
    let videos = host.get("/items/videos", None);
    assert_eq!(videos.json()["data"].as_array().map(Vec::len), Some(6));
    let photos = host.get(
        "/items/model_photos?aggregate[count]=*",
        Some("demo-admin-token"),
    );
    assert_eq!(photos.json()["data"][0]["count"], 9);
    demo_files_are_served(&host);
    // A restart with --demo does not seed twice, nor store bytes again.
    let stored = host.stored_files();
    let dir = host.stop();
    let mut opts = HostOptions::svc().arg("--demo");
    opts.env.push(("ADMIN_TOKEN".into(), String::new()));
    opts.data_dir = Some(dir);
    let host = Host::start(opts);
    assert!(
        host.log().contains("demo content already present"),
        "{}",
        host.log()
    );
    assert_eq!(host.get("/svc/stats", None).json()["videos_count"], 6);
    assert_eq!(host.stored_files(), stored);
    assert_eq!(host.assert_files_served(None).len(), stored);
}

/// Every demo file has its bytes: the pictures decode at their records'
/// sizes and transform, the movies are WebM served in ranges.
fn demo_files_are_served(host: &Host) {
    let viewer = Some("demo-viewer-token");
    // Each model's avatar, banner and three photos; each video's poster
    // and movie.
    let files = host.assert_files_served(viewer);
    assert_eq!(files.len(), 3 * 5 + 6 * 2);
    assert_eq!(host.stored_files(), files.len(), "bytes without a record");
    let bearer = [("Authorization", "Bearer demo-viewer-token")];
    let find = |name: &str| -> &Value {
        files
            .iter()
            .find(|f| f["filename_download"] == name)
            .unwrap_or_else(|| panic!("no demo file {name}"))
    };

    let avatar = find("aria-vale-avatar.jpg");
    assert_eq!(avatar["type"], "image/jpeg");
    let users = host.get(
        "/items/platform_users?filter[slug][_eq]=aria-vale&fields=avatar",
        viewer,
    );
    assert_eq!(users.json()["data"][0]["avatar"], avatar["id"]);
    let got = host.get_bytes(&format!("/assets/{}", str_of(&avatar["id"])), &bearer);
    let size = (avatar["width"].as_u64(), avatar["height"].as_u64());
    let (width, height) = image_dimensions(&got.body);
    assert_eq!((Some(u64::from(width)), Some(u64::from(height))), size);

    let photo = str_of(&find("bianca-moreau-photo-2.jpg")["id"]);
    let got = host.get_bytes(&format!("/assets/{photo}?width=64"), &bearer);
    assert_eq!(got.status, 200);
    assert_eq!(image_dimensions(&got.body).0, 64);

    let video = host.get(
        "/items/videos/00000000-0000-4000-a000-000000000001?fields=movie.*",
        viewer,
    );
    let movie = video.json()["data"]["movie"].clone();
    assert_eq!(movie["type"], "video/webm", "{movie}");
    assert_eq!(movie["filename_download"], "sunset-session.webm");
    let movies = files.iter().filter(|f| f["type"] == "video/webm").count();
    assert_eq!(movies, 6);
    let got = host.get_bytes(
        &format!("/assets/{}", str_of(&movie["id"])),
        &[bearer[0], ("Range", "bytes=0-99")],
    );
    assert_eq!(got.status, 206);
    assert_eq!(got.body.len(), 100);
    assert_eq!(got.body[..4], [0x1A, 0x45, 0xDF, 0xA3], "WebM (EBML) magic");
}

/// (events delivered after commits, writes handed to in-transaction hooks)
fn events_delivered(host: &Host) -> (u64, u64) {
    let r = host.get("/server/metrics", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200, "{}", r.body);
    let data = &r.json()["data"];
    (
        data["events_delivered"].as_u64().unwrap_or(0),
        data["events_before_commit"].as_u64().unwrap_or(0),
    )
}

#[test]
fn events_are_built_only_for_collections_someone_watches() {
    // svc's in-transaction hooks watch recordings (among others); it has
    // no after-commit hook.
    let host = Host::in_process_svc();
    let (after, within) = events_delivered(&host);
    host.admin_create("articles", &json!({"slug": "quiet", "title": "Quiet"}));
    assert_eq!(
        events_delivered(&host),
        (after, within),
        "nobody watches articles"
    );
    host.admin_create("recordings", &recording("watched"));
    assert_eq!(
        events_delivered(&host),
        (after, within + 1),
        "svc watches recordings in the transaction only"
    );
    let achievement = host.get("/items/achievements?limit=1", Some(ADMIN_TOKEN));
    let id = achievement.json()["data"][0]["id"]
        .as_str()
        .expect("achievement id")
        .to_string();
    let r = host.patch(
        &format!("/items/achievements/{id}"),
        Some(ADMIN_TOKEN),
        &json!({"sort": 99}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        events_delivered(&host),
        (after, within + 1),
        "nobody watches achievements"
    );
    // Writes that change access always produce events (they clear the
    // auth caches when delivered).
    let id = host.user(Some("Viewer"), "watched-user");
    host.patch(
        &format!("/items/platform_users/{id}"),
        Some(ADMIN_TOKEN),
        &json!({"status": "suspended"}),
    );
    assert_eq!(host.get("/svc/stats", Some("watched-user")).status, 401);
}

/// The audit comments the fixture's in-transaction hook wrote, sorted.
fn video_audit(host: &Host) -> Vec<String> {
    let filter = encode(&json!({"collection": {"_eq": "video-audit"}}).to_string());
    let r = host.get(
        &format!("/items/platform_comments?filter={filter}&limit=-1"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let mut audit: Vec<String> = r.json()["data"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|c| c["comment"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    audit.sort();
    audit
}

fn video_slugs(host: &Host) -> Vec<String> {
    let r = host.get("/items/videos?fields=slug&sort=slug", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|v| v["slug"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn in_transaction_hooks_write_with_the_write_and_refuse_it_whole() {
    let host = Host::start(HostOptions::svc_and_fixture());
    // The hook sees the write inside its transaction and writes with it.
    let created = host.admin_create("videos", &json!({"slug": "kept", "title": "kept"}));
    let id = created["id"].as_str().expect("id").to_string();
    host.admin_patch("videos", &id, &json!({"title": "renamed"}));
    assert_eq!(
        video_audit(&host),
        vec!["create kept visible=1", "update renamed visible=1"]
    );

    // A refusal answers the hook's error; nothing of the write remains,
    // not even what the hook of an earlier write wrote in the transaction:
    // one item, a batch whose second item is refused, and an extension's
    // transaction whose second write is.
    let refused = [
        (
            "/items/videos",
            Some(ADMIN_TOKEN),
            json!({"slug": "no", "title": "refused"}),
        ),
        (
            "/items/videos",
            Some(ADMIN_TOKEN),
            json!([{"slug": "first", "title": "first"}, {"slug": "second", "title": "refused"}]),
        ),
        ("/fixture/tx", None, json!({"slugs": ["tx-one", "refused"]})),
    ];
    for (path, token, body) in &refused {
        let r = host.post(path, *token, body);
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        if path.starts_with("/items") {
            let error = &r.json()["errors"][0];
            assert_eq!(error["extensions"]["code"], "INVALID_PAYLOAD", "{}", r.body);
            assert_eq!(error["message"], "videos may not be titled \"refused\"");
        }
        assert_eq!(video_slugs(&host), vec!["kept"], "after {body}");
        assert_eq!(
            video_audit(&host),
            vec!["create kept visible=1", "update renamed visible=1"]
        );
    }

    // A panicking hook refuses the write with a 500 and the host goes on.
    let r = host.post(
        "/items/videos",
        Some(ADMIN_TOKEN),
        &json!({"slug": "boom", "title": "hook-panic"}),
    );
    assert_eq!(r.status, 500, "{}", r.body);
    assert_eq!(video_slugs(&host), vec!["kept"]);
    assert!(host.log().contains("fixture in-transaction hook panic"));

    // Refused writes reach no after-commit hook; committed ones do, with
    // the hook's own writes.
    host.admin_delete("videos", &id);
    assert!(video_audit(&host).contains(&"delete  visible=0".to_string()));
    let seen = host.get("/fixture/events", None).json();
    let seen: Vec<&str> = seen
        .as_array()
        .map(|l| l.iter().filter_map(|e| e.as_str()).collect())
        .unwrap_or_default();
    let of = |collection: &str| -> Vec<&str> {
        seen.iter()
            .copied()
            .filter(|e| e.ends_with(collection) || e.contains(&format!("{collection} ")))
            .collect()
    };
    assert_eq!(
        of("videos"),
        vec![
            "items.create videos",
            "items.update videos kept -> renamed",
            "items.delete videos"
        ],
        "{seen:?}"
    );
    // The audit's three comments; the `tick` schedule comments too when
    // the test runs past its period.
    let audit_comments = of("platform_comments")
        .into_iter()
        .filter(|e| *e == "items.create platform_comments on video-audit")
        .count();
    assert_eq!(audit_comments, 3, "{seen:?}");
}

/// The members' rules on recordings as a database seeded before
/// docs/decisions.md §5 narrowed them holds them: everything readable, every
/// field writable.
fn rules_of(host: &Host, policy: &str) -> Vec<Value> {
    let policy = host.id_by_name("platform_policies", policy);
    host.admin_find(
        "platform_permissions",
        &json!({"policy": {"_eq": policy}, "collection": {"_eq": "recordings"}}),
    )
}

#[test]
fn an_older_database_gets_the_narrowed_recording_rules_once() {
    let host = Host::start(HostOptions::svc());
    host.user(Some("Viewer"), "nr-viewer");
    host.user(Some("Model"), "nr-model");
    // Put the rules back as they were seeded before, except one the
    // administrator changed (the Model's update rule), and forget that the
    // narrowing ran.
    for policy in ["Viewer", "Model"] {
        for rule in rules_of(&host, policy) {
            let id = rule["id"].as_str().expect("id");
            let old = match (policy, rule["action"].as_str()) {
                (_, Some("read")) => json!({"permissions": null, "fields": ["*"]}),
                ("Model", Some("update")) => json!({"fields": ["title"]}),
                (_, Some("create" | "update")) => json!({"fields": ["*"]}),
                _ => continue,
            };
            host.admin_patch("platform_permissions", id, &old);
        }
    }
    let dir = host.stop();
    let forgotten = Database::of_data_dir(dir.path()).sql(
        "DELETE FROM \"platform_migrations\" WHERE \"owner\" = 'svc' AND \"id\" = '0011_member_recordings_narrowed'",
    );
    assert_eq!(forgotten, 1, "the narrowing's record");
    let mut opts = HostOptions::svc();
    opts.data_dir = Some(dir);
    let host = Host::start(opts);
    let log = host.log();
    let changed: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("0011_member_recordings_narrowed: changed 1"))
        .collect();
    assert_eq!(changed.len(), 5, "{log}");
    assert!(
        log.contains("kept 1 update rule(s) of `Model` on recordings"),
        "{log}"
    );

    // Members read their own and public recordings, nothing else.
    let private = host.admin_create(
        "recordings",
        &json!({"title": "Admin's draft", "public": false}),
    );
    let id = private["id"].as_str().expect("id");
    for token in ["nr-viewer", "nr-model"] {
        let r = host.get(&format!("/items/recordings/{id}"), Some(token));
        assert_eq!(r.status, 403, "{token}: {}", r.body);
        let r = host.post(
            "/items/recordings",
            Some(token),
            &json!({"title": "Mine", "featured": true}),
        );
        assert_eq!(r.status, 403, "{token}: {}", r.body);
    }
    // The administrator's own change stands.
    let model_update = rules_of(&host, "Model")
        .into_iter()
        .find(|r| r["action"] == "update")
        .expect("update rule");
    assert_eq!(model_update["fields"], json!(["title"]));

    // Once: a rule set back by the administrator after the narrowing
    // stays as they set it across restarts.
    let viewer_read = rules_of(&host, "Viewer")
        .into_iter()
        .find(|r| r["action"] == "read")
        .expect("read rule");
    host.admin_patch(
        "platform_permissions",
        viewer_read["id"].as_str().expect("id"),
        &json!({"permissions": null}),
    );
    let dir = host.stop();
    let mut opts = HostOptions::svc();
    opts.data_dir = Some(dir);
    let host = Host::start(opts);
    let r = host.get(&format!("/items/recordings/{id}"), Some("nr-viewer"));
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn a_reference_declared_refuse_keeps_its_item_until_released() {
    let host = Host::start(HostOptions::svc_and_fixture());
    let video = host.admin_create("videos", &json!({"slug": "pinned", "title": "P"}));
    let video = video["id"].as_str().expect("id").to_string();
    let pin = host.admin_create("fixture_pins", &json!({ "video": video }));
    let r = host.delete(&format!("/items/videos/{video}"), Some(ADMIN_TOKEN));
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json()["errors"][0]["extensions"]["code"],
        "INVALID_PAYLOAD"
    );
    assert_eq!(
        host.get(&format!("/items/videos/{video}"), Some(ADMIN_TOKEN))
            .status,
        200,
        "still there"
    );
    host.admin_delete("fixture_pins", pin["id"].as_str().expect("id"));
    host.admin_delete("videos", &video);
}

/// Before-write hooks of a loaded library (SDK 1.9, through the ABI) run
/// inside the write's transaction, before the reference rules: the
/// fixture's change the payload of a video, refuse one, and delete the
/// pins of a `cascade-` video so that its delete, which the reference rule
/// would refuse, goes through (docs/extensions.md, "The order of a write").
#[test]
fn before_write_hooks_of_a_library_change_refuse_and_cascade() {
    let host = Host::start(HostOptions::svc_and_fixture());
    let loud = host.admin_create("videos", &json!({"slug": "loud", "title": "shout: hello"}));
    assert_eq!(loud["title"], "HELLO", "{loud}");
    let id = loud["id"].as_str().expect("id").to_string();
    host.admin_patch("videos", &id, &json!({"title": "shout: again"}));
    assert_eq!(host.admin_item("videos", &id)["title"], "AGAIN");

    let r = host.post(
        "/items/videos",
        Some(ADMIN_TOKEN),
        &json!({"slug": "refuse-me", "title": "R"}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.body
            .contains("the slug refuse-me is refused before the write"),
        "{}",
        r.body
    );
    assert_eq!(
        host.admin_count("videos", Some(&json!({"slug": {"_eq": "refuse-me"}}))),
        0
    );

    let video = host.admin_create("videos", &json!({"slug": "cascade-1", "title": "C"}));
    let video = video["id"].as_str().expect("id").to_string();
    host.admin_create("fixture_pins", &json!({ "video": video }));
    host.admin_create("fixture_pins", &json!({ "video": video }));
    let r = host.delete(&format!("/items/videos/{video}"), Some(ADMIN_TOKEN));
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(host.admin_count("fixture_pins", None), 0);
    assert_eq!(
        host.get(&format!("/items/videos/{video}"), Some(ADMIN_TOKEN))
            .status,
        404,
        "gone"
    );
}

/// A write by another process (another host on the same database file,
/// `schedule run`, an operator's SQL) reaches the token and permission
/// caches at the next request, not at the next restart.
#[test]
fn a_token_or_permission_revoked_by_another_process_is_refused_at_once() {
    let host = Host::in_process_svc();
    let user = host.user(Some("Viewer"), "other-process");
    host.user(Some("Viewer"), "still-allowed");
    for _ in 0..3 {
        let r = host.get("/items/recordings", Some("still-allowed"));
        assert_eq!(r.status, 200, "{}", r.body);
        let r = host.get("/svc/recordings", Some("other-process"));
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let suspended = host.sql(&format!(
        "UPDATE \"platform_users\" SET \"status\" = 'suspended' WHERE \"id\" = '{user}'"
    ));
    assert_eq!(suspended, 1);
    let r = host.get("/svc/recordings", Some("other-process"));
    assert_eq!(r.status, 401, "{}", r.body);
    let viewer = host.id_by_name("platform_policies", "Viewer");
    let revoked = host.sql(&format!(
        "DELETE FROM \"platform_permissions\" WHERE \"policy\" = '{viewer}' \
         AND \"collection\" = 'recordings' AND \"action\" = 'read'"
    ));
    assert!(revoked >= 1, "no read rule of the Viewer on recordings");
    let r = host.get("/items/recordings", Some("still-allowed"));
    assert_eq!(r.status, 403, "{}", r.body);
}

/// Hosts started together on one empty database apply each migration and
/// the first-start seeding once, and serve the same platform. Several
/// hosts on one database is PostgreSQL's configuration (docs/decisions.md §8),
/// so this runs in the PostgreSQL pass only.
#[test]
fn hosts_starting_together_on_an_empty_database_set_it_up_once() {
    if platform_tests::Backend::from_env() != platform_tests::Backend::Postgres {
        eprintln!("skipped in the SQLite pass: several hosts share a PostgreSQL database");
        return;
    }
    let url = platform_tests::postgres::server().create_database();
    let folders: Vec<tempfile::TempDir> = (0..3)
        .map(|_| {
            let dir = tempfile::tempdir().expect("temp dir");
            std::fs::write(dir.path().join("database-url"), &url).expect("url file");
            dir
        })
        .collect();
    let hosts: Vec<Host> = std::thread::scope(|scope| {
        let starting: Vec<_> = folders
            .into_iter()
            .map(|dir| {
                scope.spawn(move || {
                    let mut opts = HostOptions::svc().arg("--demo");
                    opts.data_dir = Some(dir);
                    Host::start(opts)
                })
            })
            .collect();
        starting
            .into_iter()
            .map(|h| h.join().expect("host started"))
            .collect()
    });
    let db = hosts[0].database();
    let count = |sql: &str| -> i64 {
        db.sql_query_one(sql)[0]
            .as_deref()
            .and_then(|n| n.parse().ok())
            .expect("a count")
    };
    assert_eq!(
        count("SELECT count(*) FROM \"platform_users\" WHERE \"email\" = 'admin@example.com'"),
        1
    );
    assert_eq!(
        count("SELECT count(*) FROM \"platform_roles\" WHERE \"name\" = 'Viewer'"),
        1
    );
    assert_eq!(
        count("SELECT count(*) FROM \"achievements\""),
        count("SELECT count(DISTINCT \"code\") FROM \"achievements\""),
        "the seeded achievements were inserted once"
    );
    let applied = count("SELECT count(*) FROM \"platform_migrations\"");
    let distinct = count(
        "SELECT count(*) FROM (SELECT DISTINCT \"owner\", \"id\" FROM \"platform_migrations\") AS m",
    );
    assert_eq!(applied, distinct);
    // The demo was seeded once, and every host serves it.
    for host in &hosts {
        assert_eq!(host.get("/svc/stats", None).json()["videos_count"], 6);
        let r = host.get("/items/platform_users?limit=1", Some(ADMIN_TOKEN));
        assert_eq!(r.status, 200, "{}", r.body);
    }
    // Its files' bytes are in the seeding host's own folder; the others
    // removed whatever they stored before seeing the demo there.
    let files = count("SELECT count(*) FROM \"platform_files\"");
    let stored: Vec<usize> = hosts.iter().map(Host::stored_files).collect();
    assert_eq!(stored.iter().sum::<usize>() as i64, files, "{stored:?}");
    assert_eq!(stored.iter().filter(|&&n| n > 0).count(), 1, "{stored:?}");
}

/// `database_round_trips` of `/server/metrics`.
fn round_trips(host: &Host) -> u64 {
    let r = host.get("/server/metrics", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"]["database_round_trips"]
        .as_u64()
        .unwrap_or_else(|| panic!("no database_round_trips in {}", r.body))
}

#[test]
fn a_request_resolves_its_credentials_once() {
    let host = Host::start(HostOptions::svc().arg("--schedule-lease-secs").arg("3600"));
    let video = host.admin_create(
        "videos",
        &json!({"slug": "once", "title": "Once", "upload_date": "2020-01-01T00:00:00.000Z"}),
    );
    let path = format!("/svc/videos/{}/play", str_of(&video["id"]));
    // A token stored with its user: resolving it reads the database.
    host.user(Some("Viewer"), "once-viewer");
    let first = round_trips(&host);
    let own = round_trips(&host) - first;
    // The round trips of one play, the caches warm.
    let cost = |body: &[u8]| {
        let length = body.len().to_string();
        let headers = [
            ("Authorization", "Bearer once-viewer"),
            ("Content-Type", "application/json"),
            ("Content-Length", length.as_str()),
        ];
        let play = || host.request_with("POST", &path, &headers, Some(body));
        assert_eq!(play().status, 200);
        let before = round_trips(&host);
        let played = play();
        assert_eq!(played.status, 200, "{}", played.body);
        round_trips(&host) - before - own
    };
    // With a body, the layer bounding unauthenticated bodies resolves the
    // credentials first; the route takes its answer instead of reading
    // the data version again, so the body costs no round trip.
    assert_eq!(cost(b"{}"), cost(b""));
}

#[test]
fn metrics_count_the_database_round_trips_of_requests() {
    // A lease far away: no claim is looked at while the test counts.
    let host = Host::start(HostOptions::svc().arg("--schedule-lease-secs").arg("3600"));
    // What asking costs, measured the way the asking below is.
    let first = round_trips(&host);
    let own = round_trips(&host) - first;
    let before = round_trips(&host);
    assert_eq!(host.get("/svc/stats", None).status, 200);
    let computed = round_trips(&host) - before - own;
    assert!(
        computed > 1,
        "an answer computed from the database: {computed}"
    );
    let before = round_trips(&host);
    for _ in 0..10 {
        assert_eq!(host.get("/svc/stats", None).status, 200);
    }
    let kept = round_trips(&host) - before - own;
    assert_eq!(kept, 10, "a kept answer costs one data-version check");
    let before = round_trips(&host);
    host.admin_create("videos", &json!({"slug": "counted", "title": "Counted"}));
    assert!(
        round_trips(&host) - before - own > 2,
        "a write begins, writes and commits"
    );
}
