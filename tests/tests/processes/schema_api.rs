//! The data model over HTTP (`/collections`, `/fields`, `/relations`), as
//! Directus 11 answers it: under the caller's permissions, read-only, and
//! true to what `/items` serves.

use platform_tests::{encode, Host, HostOptions, ADMIN_TOKEN};
use serde_json::{json, Value};

const VIEWER: &str = "demo-viewer-token";

fn demo() -> Host {
    Host::start(HostOptions::svc().arg("--demo"))
}

fn names(list: &[Value], key: &str) -> Vec<String> {
    list.iter()
        .filter_map(|v| v[key].as_str().map(String::from))
        .collect()
}

#[test]
fn collections_are_those_the_caller_may_read() {
    let host = demo();
    let admin = host.get("/collections", Some(ADMIN_TOKEN));
    assert_eq!(admin.status, 200, "{}", admin.body);
    let all = admin.data_list();
    let listed = names(&all, "collection");
    for name in ["videos", "recordings", "platform_users", "videos_models"] {
        assert!(listed.contains(&name.to_string()), "{name}: {listed:?}");
    }
    assert!(!listed.contains(&"platform_signing_keys".to_string()));
    let users = all.iter().find(|c| c["collection"] == "platform_users");
    assert_eq!(
        users.map(|c| c["meta"]["system"].clone()),
        Some(json!(true))
    );
    let videos = all.iter().find(|c| c["collection"] == "videos").cloned();
    let videos = videos.unwrap_or_default();
    assert_eq!(videos["schema"]["name"], "videos");
    assert!(videos["meta"].get("system").is_none(), "{videos}");
    for key in [
        "icon",
        "note",
        "hidden",
        "singleton",
        "sort_field",
        "archive_field",
    ] {
        assert!(videos["meta"].get(key).is_some(), "{key}: {videos}");
    }

    for token in [None, Some(VIEWER)] {
        let r = host.get("/collections", token);
        assert_eq!(r.status, 200, "{}", r.body);
        let theirs = names(&r.data_list(), "collection");
        assert!(theirs.contains(&"videos".to_string()), "{theirs:?}");
        assert!(!theirs.contains(&"platform_permissions".to_string()));
        assert!(theirs.len() < listed.len(), "{theirs:?}");
        for name in &theirs {
            let items = host.get(&format!("/items/{name}?limit=1&fields=id"), token);
            assert_eq!(items.status, 200, "{name} listed but not readable");
            let one = host.get(&format!("/collections/{name}"), token);
            assert_eq!(one.json()["data"]["collection"], name.as_str());
        }
    }
    // Unknown, internal and unreadable collections answer alike.
    for (path, token) in [
        ("/collections/nothing_here", Some(ADMIN_TOKEN)),
        ("/collections/platform_signing_keys", Some(ADMIN_TOKEN)),
        ("/collections/nothing_here", None),
        ("/collections/platform_permissions", None),
        ("/collections/platform_permissions", Some(VIEWER)),
    ] {
        let r = host.get(path, token);
        assert_eq!(
            (r.status, r.error_code()),
            (403, "FORBIDDEN".into()),
            "{path}"
        );
    }
}

#[test]
fn fields_are_those_the_caller_may_read() {
    let host = demo();
    let r = host.get("/fields/platform_users", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200, "{}", r.body);
    let admin_fields = names(&r.data_list(), "field");
    assert!(admin_fields.contains(&"status".to_string()));
    assert!(
        !admin_fields.contains(&"password".to_string()),
        "secrets are left out"
    );
    assert!(!admin_fields.contains(&"token".to_string()));

    let r = host.get("/fields/platform_users", Some(VIEWER));
    assert_eq!(r.status, 200, "{}", r.body);
    let viewer_fields = names(&r.data_list(), "field");
    assert!(
        !viewer_fields.contains(&"status".to_string()),
        "{viewer_fields:?}"
    );
    assert!(viewer_fields.len() < admin_fields.len());

    // Every field listed to a caller is one `/items` serves them.
    for token in [None, Some(VIEWER)] {
        let r = host.get("/fields", token);
        assert_eq!(r.status, 200, "{}", r.body);
        for f in r.data_list() {
            let (c, name) = (f["collection"].as_str(), f["field"].as_str());
            let (Some(c), Some(name)) = (c, name) else {
                panic!("{f}")
            };
            let items = host.get(&format!("/items/{c}?limit=1&fields={name}"), token);
            assert_eq!(items.status, 200, "{c}.{name} listed: {}", items.body);
        }
    }

    let one = host.get("/fields/videos/title", Some(VIEWER));
    assert_eq!(one.status, 200, "{}", one.body);
    let title = one.json()["data"].clone();
    assert_eq!(title["type"], "string");
    assert_eq!(title["schema"]["table"], "videos");
    assert_eq!(title["meta"]["collection"], "videos");
    let id = host.get("/fields/videos/id", Some(ADMIN_TOKEN)).json()["data"].clone();
    assert_eq!(id["meta"]["special"], json!(["uuid"]));
    assert_eq!(id["schema"]["is_primary_key"], json!(true));
    let models = host.get("/fields/videos/models", Some(ADMIN_TOKEN)).json()["data"].clone();
    assert_eq!(models["type"], "alias");
    assert_eq!(models["schema"], Value::Null);

    for (path, token) in [
        ("/fields/platform_users/status", Some(VIEWER)),
        ("/fields/platform_users/password", Some(ADMIN_TOKEN)),
        ("/fields/videos/nothing_here", Some(ADMIN_TOKEN)),
        ("/fields/nothing_here", None),
        ("/fields/platform_signing_keys", Some(ADMIN_TOKEN)),
    ] {
        let r = host.get(path, token);
        assert_eq!(
            (r.status, r.error_code()),
            (403, "FORBIDDEN".into()),
            "{path}"
        );
    }
}

#[test]
fn relations_are_those_fields_expand() {
    let host = demo();
    let r = host.get("/relations/videos_models", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200, "{}", r.body);
    let list = r.data_list();
    let to_videos = list.iter().find(|r| r["field"] == "videos_id").cloned();
    let to_videos = to_videos.unwrap_or_default();
    assert_eq!(to_videos["related_collection"], "videos");
    assert_eq!(to_videos["meta"]["one_field"], "models");
    assert_eq!(to_videos["meta"]["junction_field"], "platform_users_id");
    assert_eq!(to_videos["schema"]["on_delete"], "CASCADE");
    let one = host.get("/relations/videos_models/videos_id", Some(ADMIN_TOKEN));
    assert_eq!(one.json()["data"], to_videos);

    for token in [None, Some(VIEWER), Some(ADMIN_TOKEN)] {
        let r = host.get("/relations", token);
        assert_eq!(r.status, 200, "{}", r.body);
        for rel in r.data_list() {
            let (c, f) = (&rel["collection"], &rel["field"]);
            let (Some(c), Some(f)) = (c.as_str(), f.as_str()) else {
                panic!("{rel}")
            };
            let items = host.get(&format!("/items/{c}?limit=1&fields={f}.*"), token);
            assert_eq!(items.status, 200, "{c}.{f} listed: {}", items.body);
        }
    }
    let r = host.get("/relations/platform_permissions", Some(VIEWER));
    assert_eq!((r.status, r.error_code()), (403, "FORBIDDEN".into()));
}

#[test]
fn list_queries_filter_sort_and_limit() {
    let host = demo();
    let filter = encode(r#"{"collection":{"_eq":"videos"},"type":{"_eq":"alias"}}"#);
    let r = host.get(&format!("/fields?filter={filter}"), Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(names(&r.data_list(), "field"), vec!["models"]);

    let r = host.get(
        "/fields?filter[collection][_eq]=recordings&sort=-field&limit=2&fields=field",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let list = r.data_list();
    assert_eq!(list.len(), 2, "{}", r.body);
    assert!(list.iter().all(|f| f.get("meta").is_none()), "{}", r.body);
    assert!(list[0]["field"].as_str() > list[1]["field"].as_str());

    let r = host.get("/collections?limit=1", Some(ADMIN_TOKEN));
    assert_eq!(r.data_list().len(), 1);
    let r = host.get("/fields?filter[meta][_eq]=1", Some(ADMIN_TOKEN));
    assert_eq!((r.status, r.error_code()), (400, "INVALID_QUERY".into()));
}

#[test]
fn metadata_set_by_migrations_is_served() {
    let host = demo();
    let events = host.get("/fields/recordings/events", Some(ADMIN_TOKEN));
    assert_eq!(events.status, 200, "{}", events.body);
    let meta = events.json()["data"]["meta"].clone();
    assert_eq!(meta["interface"], "recording-timeline", "{meta}");
    assert_eq!(
        meta["special"],
        json!(["cast-json"]),
        "defaults stay: {meta}"
    );
    let status = host.get("/fields/recordings/status", Some(ADMIN_TOKEN));
    let meta = status.json()["data"]["meta"].clone();
    assert_eq!(meta["interface"], "select-dropdown");
    assert_eq!(meta["width"], "half");
    let videos = host.get("/collections/videos", None);
    assert_eq!(videos.status, 200, "{}", videos.body);
    let meta = videos.json()["data"]["meta"].clone();
    assert_eq!(meta["icon"], "movie", "{meta}");
    assert_eq!(meta["display_template"], "{{title}}");
    assert_eq!(meta["hidden"], json!(false), "defaults stay: {meta}");
}

#[test]
fn the_model_is_read_only() {
    let host = demo();
    let body = json!({"collection": "mine", "meta": {"note": "x"}});
    for (method, path) in [
        ("POST", "/collections"),
        ("PATCH", "/collections/videos"),
        ("DELETE", "/collections/videos"),
        ("POST", "/fields/videos"),
        ("PATCH", "/fields/videos/title"),
        ("DELETE", "/fields/videos/title"),
        ("POST", "/relations"),
        ("PATCH", "/relations/videos_models/videos_id"),
        ("DELETE", "/relations/videos_models/videos_id"),
    ] {
        let r = match method {
            "POST" => host.post(path, Some(ADMIN_TOKEN), &body),
            "PATCH" => host.patch(path, Some(ADMIN_TOKEN), &body),
            _ => host.delete(path, Some(ADMIN_TOKEN)),
        };
        assert_eq!(
            (r.status, r.error_code()),
            (403, "FORBIDDEN".into()),
            "{method} {path}"
        );
    }
    let r = host.get("/fields/videos/title", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200);
}

/// `/server/specs/oas` describes the items of the collections the caller
/// may read from the same model `/fields` answers from: a schema per
/// collection whose properties are the fields listed, and its reads.
#[test]
fn the_openapi_document_describes_the_items_of_the_same_model() {
    let host = demo();
    for token in [Some(ADMIN_TOKEN), Some("demo-viewer-token"), None] {
        let doc = host.get("/server/specs/oas", token).json();
        let fields = host.get("/fields/videos", token).json();
        let mut listed = names(fields["data"].as_array().expect("fields"), "field");
        listed.sort();
        let schema = &doc["components"]["schemas"]["ItemsVideos"];
        let mut described: Vec<String> = schema["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{token:?}: no ItemsVideos: {schema}"))
            .keys()
            .cloned()
            .collect();
        described.sort();
        assert_eq!(described, listed, "{token:?}");
        assert!(
            doc["paths"]["/items/videos"]["get"].is_object(),
            "{token:?}"
        );
        assert!(
            doc["paths"]["/items/videos/{id}"]["get"].is_object(),
            "{token:?}"
        );
        // What the caller may not read is not described.
        let recordings = &doc["components"]["schemas"]["ItemsRecordings"];
        assert_eq!(recordings.is_object(), token.is_some(), "{token:?}");
        assert!(doc["components"]["schemas"]["ItemsPlatformSigningKeys"].is_null());
    }
    // A secret is never described.
    let doc = host.get("/server/specs/oas", Some(ADMIN_TOKEN)).json();
    let users = &doc["components"]["schemas"]["ItemsPlatformUsers"]["properties"];
    assert!(
        users["email"].is_object() && users["password"].is_null(),
        "{users}"
    );
}
