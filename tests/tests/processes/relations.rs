//! Relational `fields` in `/items` (docs/decisions.md §4): paths through
//! references and one-to-many aliases, to any depth, each related
//! collection read under the caller's permissions on it.

use std::collections::BTreeMap;

use platform_tests::{encode, str_of, Host, HostOptions, ADMIN_TOKEN};
use serde_json::{json, Value};

const RECORDING: &str = "00000000-0000-4000-b000-000000000001";

fn demo() -> Host {
    Host::start(HostOptions::svc().arg("--demo"))
}

#[test]
fn fields_follow_references_to_any_depth() {
    let host = demo();
    let r = host.get(
        &format!("/items/recordings/{RECORDING}?fields=id,title,user_created.first_name,user_created.role.name"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let data = &r.json()["data"];
    let owner = &data["user_created"];
    assert!(owner["first_name"].is_string(), "{}", r.body);
    assert!(owner["role"]["name"].is_string(), "{}", r.body);
    assert!(owner.get("id").is_none(), "only what was asked: {}", r.body);
    assert!(owner.get("password").is_none() && owner.get("token").is_none());

    // Lists too, with `*` below a reference.
    let r = host.get(
        "/items/recordings?fields=id,user_created.*&limit=3&sort=id",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let list = r.json()["data"].as_array().cloned().unwrap_or_default();
    assert!(!list.is_empty());
    for rec in &list {
        let owner = &rec["user_created"];
        assert!(owner.is_null() || owner["id"].is_string(), "{rec}");
    }
}

#[test]
fn a_signed_in_user_reads_their_role_name_through_users_me() {
    let host = demo();
    let r = host.get("/users/me?fields=*,role.name", Some("demo-viewer-token"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["data"]["role"],
        json!({"name": "Viewer"}),
        "{}",
        r.body
    );
    assert_eq!(r.json()["data"]["email"], "victor@demo.local");
}

#[test]
fn related_collections_are_read_under_the_callers_permissions() {
    let host = demo();
    // A viewer reads users' public fields only: a path into another
    // field of users is refused as a field they may not read.
    let r = host.get(
        "/items/recordings?fields=id,user_created.status",
        Some("demo-viewer-token"),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    // Their email is granted on their own row alone: others' read as null.
    let r = host.get(
        "/items/recordings?fields=id,user_created.email&limit=-1",
        Some("demo-viewer-token"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    for recording in r.json()["data"].as_array().cloned().unwrap_or_default() {
        let email = &recording["user_created"]["email"];
        assert!(
            email.is_null() || email == "victor@demo.local",
            "{recording}"
        );
    }
    // Their own fields of recordings still read.
    let r = host.get(
        "/items/recordings?fields=id,title",
        Some("demo-viewer-token"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn paths_through_fields_that_refer_to_nothing_are_refused() {
    let host = demo();
    let r = host.get("/items/recordings?fields=title.first", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["errors"][0]["extensions"]["code"], "INVALID_QUERY");
    // A field that does not exist, as Directus refuses it.
    let r = host.get("/items/recordings?fields=nowhere.id", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json()["errors"][0]["extensions"]["code"], "FORBIDDEN");
    assert_eq!(
        r.json()["errors"][0]["message"],
        "You don't have permission to access field \"nowhere\" in collection \"recordings\" or it does not exist. Queried in root."
    );
}

/// `{video id: [model ids]}` as the junction holds it, read as admin.
fn models_by_video(host: &Host) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for link in host.admin_all("videos_models", "videos_id,platform_users_id") {
        out.entry(str_of(&link["videos_id"]))
            .or_default()
            .push(str_of(&link["platform_users_id"]));
    }
    for models in out.values_mut() {
        models.sort();
    }
    out
}

#[test]
fn videos_list_their_models_through_the_declared_alias() {
    let host = demo();
    let expected = models_by_video(&host);
    assert!(!expected.is_empty(), "the demo links models to videos");
    let r = host.get(
        "/items/videos?fields=id,title,models.platform_users_id.id,models.platform_users_id.first_name&limit=-1",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let videos = r.json()["data"].as_array().cloned().unwrap_or_default();
    assert!(!videos.is_empty());
    for video in &videos {
        let links = video["models"]
            .as_array()
            .unwrap_or_else(|| panic!("{video}"));
        let mut ids: Vec<String> = links
            .iter()
            .map(|l| {
                assert!(l["platform_users_id"]["first_name"].is_string(), "{l}");
                assert_eq!(
                    l.as_object().map(|o| o.len()),
                    Some(1),
                    "only what was asked: {l}"
                );
                str_of(&l["platform_users_id"]["id"])
            })
            .collect();
        ids.sort();
        let want = expected
            .get(&str_of(&video["id"]))
            .cloned()
            .unwrap_or_default();
        assert_eq!(ids, want, "models of {}", video["title"]);
    }

    // Named alone, an alias is the ids of its items.
    let r = host.get(
        "/items/videos?fields=title,models&limit=-1",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let links = host.admin_all("videos_models", "id,videos_id");
    for video in r.json()["data"].as_array().cloned().unwrap_or_default() {
        assert!(video.get("id").is_none(), "id only when asked: {video}");
        let ids = video["models"].as_array().cloned().unwrap_or_default();
        assert!(
            ids.iter().all(|id| links.iter().any(|l| l["id"] == *id)),
            "{video}"
        );
    }
    let total: usize = expected.values().map(Vec::len).sum();
    assert_eq!(links.len(), total);

    // One video, as `readItems('videos', {fields: ['*', {models:
    // [{platform_users_id: ['*']}]}, 'movie.*']})` asks it.
    let (video, models) = expected.iter().next().expect("a video with models");
    let r = host.get(
        &format!("/items/videos/{video}?fields=*,models.platform_users_id.*,movie.*"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let data = &r.json()["data"];
    assert!(
        data["slug"].is_string() && data["movie"]["id"].is_string(),
        "{data}"
    );
    let got: Vec<&Value> = data["models"]
        .as_array()
        .map(|m| m.iter().map(|l| &l["platform_users_id"]["id"]).collect())
        .unwrap_or_default();
    assert_eq!(got.len(), models.len(), "{data}");
    // The field the links are found by, followed back to the video.
    let r = host.get(
        &format!("/items/videos/{video}?fields=id,models.videos_id.title"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let data = &r.json()["data"];
    let back: Vec<&Value> = data["models"]
        .as_array()
        .map(|m| m.iter().map(|l| &l["videos_id"]).collect())
        .unwrap_or_default();
    assert_eq!(back.len(), models.len(), "{data}");
    assert!(
        back.iter()
            .all(|v| v["title"].is_string() && v.get("id").is_none()),
        "{data}"
    );
    // A video without models lists none.
    let lonely = host.admin_video("lonely", None);
    let r = host.get(
        &format!("/items/videos/{}?fields=id,models.*", str_of(&lonely["id"])),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.json()["data"]["models"], json!([]), "{}", r.body);
}

#[test]
fn a_member_reading_models_never_sees_another_users_email() {
    let host = demo();
    // From no grant at all: without the reads the demo gives the site.
    for collection in ["videos", "videos_models", "platform_users"] {
        let filter =
            json!({"_and": [{"collection": {"_eq": collection}}, {"action": {"_eq": "read"}}]});
        for rule in host.admin_find("platform_permissions", &filter) {
            host.admin_delete("platform_permissions", &str_of(&rule["id"]));
        }
    }
    let viewer = Some("demo-viewer-token");
    let path = "/items/videos?fields=*,models.platform_users_id.*&limit=-1";
    // Without a grant on videos, nothing.
    assert_eq!(host.get(path, viewer).status, 403);
    host.grant("Viewer", "videos", json!({"action": "read"}));
    // Videos, but not the junction: the alias is a field they may not read.
    let r = host.get(path, viewer);
    assert_eq!(r.status, 403, "{}", r.body);
    host.grant("Viewer", "videos_models", json!({"action": "read"}));
    // Users' names only, and every field of their own row.
    host.grant(
        "Viewer",
        "platform_users",
        json!({"action": "read", "fields": ["id", "first_name", "last_name"]}),
    );
    let r = host.get(path, viewer);
    assert_eq!(r.status, 200, "{}", r.body);
    let mut seen = 0;
    for video in r.json()["data"].as_array().cloned().unwrap_or_default() {
        for link in video["models"].as_array().cloned().unwrap_or_default() {
            let model = &link["platform_users_id"];
            assert!(model["first_name"].is_string(), "{model}");
            assert!(model.get("email").is_none(), "an email leaked: {model}");
            assert!(model.get("password").is_none() && model.get("token").is_none());
            seen += 1;
        }
    }
    assert!(seen > 0, "the models were read: {}", r.body);
    // Asking for the email by name is refused, not silently dropped.
    let r = host.get(
        "/items/videos?fields=id,models.platform_users_id.email",
        viewer,
    );
    assert_eq!(r.status, 403, "{}", r.body);

    // A row filter on the related collection hides the rows it excludes.
    let hidden = host.admin_all("videos_models", "id,videos_id");
    let first = str_of(&hidden[0]["id"]);
    host.grant("Model", "videos", json!({"action": "read"}));
    host.grant(
        "Model",
        "videos_models",
        json!({"action": "read", "permissions": {"id": {"_neq": first}}}),
    );
    let model_token = "relations-model-token";
    host.user(Some("Model"), model_token);
    let r = host.get("/items/videos?fields=id,models&limit=-1", Some(model_token));
    assert_eq!(r.status, 200, "{}", r.body);
    let listed: usize = r.json()["data"]
        .as_array()
        .map(|v| {
            v.iter()
                .map(|v| v["models"].as_array().map_or(0, Vec::len))
                .sum()
        })
        .unwrap_or(0);
    assert_eq!(listed, hidden.len() - 1, "{}", r.body);
    assert!(!r.body.contains(&first));
}

#[test]
fn aliases_name_no_stored_field_and_refuse_writes() {
    let host = demo();
    // `*` is the stored fields: an alias is read only when named.
    let r = host.get("/items/videos?fields=*&limit=1", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.json()["data"][0].get("models").is_none(), "{}", r.body);
    // Users list their videos and photos the same way.
    let r = host.get(
        "/items/platform_users?fields=id,videos.videos_id.title,photos.id&limit=-1",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let users = r.json()["data"].as_array().cloned().unwrap_or_default();
    assert!(users
        .iter()
        .any(|u| u["videos"].as_array().is_some_and(|v| !v.is_empty())));
    // Writing an alias is an unknown field, as before.
    let video = host.admin_video("with-alias", None);
    let r = host.patch(
        &format!("/items/videos/{}", str_of(&video["id"])),
        Some(ADMIN_TOKEN),
        &json!({"models": []}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
}

/// A GET of `path` with `filter` (JSON) URL-encoded.
fn filtered(host: &Host, path: &str, filter: &Value, token: Option<&str>) -> platform_tests::Resp {
    let sep = if path.contains('?') { '&' } else { '?' };
    host.get(
        &format!("{path}{sep}filter={}", encode(&filter.to_string())),
        token,
    )
}

#[test]
fn filters_follow_references_to_any_depth() {
    let host = demo();
    let expected = models_by_video(&host);
    let (video, models) = expected.iter().next().expect("a video with models");
    let slug = str_of(&host.admin_item("videos", video)["slug"]);
    // One level: the junction rows of the video with this slug.
    let r = filtered(
        &host,
        "/items/videos_models?fields=platform_users_id&limit=-1",
        &json!({"videos_id": {"slug": {"_eq": slug}}}),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let mut got: Vec<String> = r.json()["data"]
        .as_array()
        .map(|l| l.iter().map(|l| str_of(&l["platform_users_id"])).collect())
        .unwrap_or_default();
    got.sort();
    assert_eq!(&got, models);

    // Two levels, inside `_or`, beside an operator on the reference itself.
    let filter = json!({"_or": [
        {"user_created": {"_nnull": true, "role": {"name": {"_eq": "Viewer"}}}},
        {"title": {"_eq": "no recording has this title"}},
    ]});
    let r = filtered(
        &host,
        "/items/recordings?fields=id,user_created.role.name&limit=-1",
        &filter,
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let found = r.json()["data"].as_array().cloned().unwrap_or_default();
    assert!(!found.is_empty(), "the demo viewer owns recordings");
    for rec in &found {
        assert_eq!(rec["user_created"]["role"]["name"], "Viewer", "{rec}");
    }
    let all = host.admin_all("recordings", "id,user_created.role.name");
    let viewers = all
        .iter()
        .filter(|r| r["user_created"]["role"]["name"] == "Viewer")
        .count();
    assert_eq!(found.len(), viewers);
    assert!(viewers < all.len(), "the filter excludes some");
    // Aggregates filter the same way.
    let r = filtered(
        &host,
        "/items/recordings?aggregate[count]=*",
        &filter,
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["data"][0]["count"].to_string().trim_matches('"'),
        viewers.to_string()
    );
    // Nothing matches: an empty list, not an error.
    let r = filtered(
        &host,
        "/items/videos_models",
        &json!({"videos_id": {"slug": {"_eq": "no-such-video"}}}),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.json()["data"], json!([]), "{}", r.body);
    // A field that refers to nothing cannot be filtered through.
    let r = filtered(
        &host,
        "/items/recordings",
        &json!({"title": {"first": {"_eq": "x"}}}),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["errors"][0]["extensions"]["code"], "INVALID_QUERY");
}

#[test]
fn filters_through_references_read_under_the_callers_permissions() {
    let host = demo();
    let viewer = Some("demo-viewer-token");
    let path = "/items/recordings?fields=id&limit=-1";
    let count = |filter: &Value| -> usize {
        let r = filtered(&host, path, filter, viewer);
        assert_eq!(r.status, 200, "{filter}: {}", r.body);
        r.json()["data"].as_array().map_or(0, Vec::len)
    };
    // A field of users they may not read is refused.
    let by_status = json!({"user_created": {"status": {"_eq": "active"}}});
    assert_eq!(filtered(&host, path, &by_status, viewer).status, 403);
    // Their email is granted on their own row alone: filtering by their
    // own finds their recordings, by anyone else's finds nothing, so
    // emails cannot be guessed one filter at a time.
    let by_email = |email: &str| json!({"user_created": {"email": {"_eq": email}}});
    assert!(count(&by_email("victor@demo.local")) > 0);
    assert_eq!(count(&by_email("wendy@demo.local")), 0);
    assert_eq!(count(&by_email("aria@demo.local")), 0);
    let me = host.get("/users/me?fields=first_name", viewer).json()["data"]["first_name"].clone();
    let r = filtered(
        &host,
        path,
        &json!({"user_created": {"first_name": {"_eq": me}}}),
        viewer,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let mine = r.json()["data"].as_array().map_or(0, Vec::len);
    assert!(mine > 0, "{}", r.body);
}

#[test]
fn a_bare_value_under_a_field_means_eq_at_any_depth() {
    let host = demo();
    let expected = models_by_video(&host);
    let (video, models) = expected.iter().next().expect("a video with models");
    let slug = str_of(&host.admin_item("videos", video)["slug"]);
    let ids = |filter: &Value| -> Vec<String> {
        let r = filtered(
            &host,
            "/items/videos_models?fields=platform_users_id&limit=-1",
            filter,
            Some(ADMIN_TOKEN),
        );
        assert_eq!(r.status, 200, "{filter}: {}", r.body);
        let mut got: Vec<String> = r.json()["data"]
            .as_array()
            .map(|l| l.iter().map(|l| str_of(&l["platform_users_id"])).collect())
            .unwrap_or_default();
        got.sort();
        got
    };
    // On the field itself, through a reference, and inside `_or`.
    assert_eq!(&ids(&json!({"videos_id": video})), models);
    assert_eq!(&ids(&json!({"videos_id": {"slug": slug}})), models);
    assert_eq!(
        &ids(&json!({"_or": [{"videos_id": {"slug": slug}}, {"videos_id": null}]})),
        models
    );
    // `null` is "is null", not a path.
    assert!(ids(&json!({"videos_id": null})).is_empty());
    // Two values: both must hold.
    let first = models[0].clone();
    assert_eq!(
        ids(&json!({"videos_id": video, "platform_users_id": first})),
        vec![first.clone()]
    );
    // In the bracket form a query-string builder writes.
    let r = host.get(
        &format!("/items/videos_models?fields=platform_users_id&filter[videos_id]={video}&filter[platform_users_id]={first}"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"], json!([{"platform_users_id": first}]));
    // A list is no value: refused, not taken for `_in`.
    let r = filtered(
        &host,
        "/items/videos_models",
        &json!({"videos_id": [video]}),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 400, "{}", r.body);
}

/// An extension's read that flattens a one-to-many alias (SDK 1.20,
/// `Query::flatten`), through the fixture's `/fixture/read`.
fn read_as_extension(host: &Host, query: Value) -> platform_tests::Resp {
    host.post("/fixture/read/videos", None, &query)
}

#[test]
fn a_flattened_alias_lists_the_records_its_links_name() {
    let host = Host::start(HostOptions::svc_and_fixture().arg("--demo"));
    // A link naming no user: listed as a link, left out once flattened.
    let some_video = str_of(&host.admin_all("videos", "id")[0]["id"]);
    let r = host.post(
        "/items/videos_models",
        Some(ADMIN_TOKEN),
        &json!({"videos_id": some_video, "platform_users_id": null}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let query = |flatten: Value| {
        json!({"fields": ["id", "models.platform_users_id.*"], "sort": ["id"],
               "without": ["models.platform_users_id.email"], "flatten": flatten})
    };
    let links = read_as_extension(&host, query(json!([])));
    assert_eq!(links.status, 200, "{}", links.body);
    let flat = read_as_extension(&host, query(json!(["models.platform_users_id"])));
    assert_eq!(flat.status, 200, "{}", flat.body);
    let (links, flat) = (links.json(), flat.json());
    let (links, flat) = (links.as_array().unwrap(), flat.as_array().unwrap());
    assert_eq!(links.len(), flat.len());
    let mut users_listed = 0;
    for (linked, flattened) in links.iter().zip(flat) {
        assert_eq!(linked["id"], flattened["id"]);
        let named: Vec<Value> = linked["models"]
            .as_array()
            .unwrap()
            .iter()
            .map(|link| link["platform_users_id"].clone())
            .filter(|user| !user.is_null())
            .collect();
        assert_eq!(flattened["models"], Value::Array(named.clone()), "{linked}");
        for user in &named {
            assert!(
                user["id"].is_string() && user.get("email").is_none(),
                "{user}"
            );
        }
        if linked["id"] == json!(some_video) {
            assert_eq!(
                linked["models"].as_array().unwrap().len(),
                named.len() + 1,
                "the link naming no user is listed unflattened"
            );
        }
        users_listed += named.len();
    }
    assert!(users_listed > 0, "the demo links models to videos");

    // Anything but an alias `fields` follows and a field it reads below is
    // refused, never answered in another shape.
    for (fields, flatten, why) in [
        (
            json!(["id", "models.platform_users_id.*"]),
            "models",
            "name a one-to-many alias",
        ),
        (
            json!(["id", "models.platform_users_id.*"]),
            "models.platform_users_id.id",
            "name a one-to-many alias",
        ),
        (
            json!(["id", "movie.*", "models.platform_users_id.*"]),
            "movie.id",
            "follows no one-to-many alias \"movie\"",
        ),
        (
            json!(["id", "models"]),
            "models.platform_users_id",
            "follows no one-to-many alias \"models\"",
        ),
        (
            json!(["id", "models.id"]),
            "models.platform_users_id",
            "reads no \"platform_users_id\"",
        ),
        (
            json!(["id"]),
            "models.platform_users_id",
            "follows no one-to-many alias of \"videos\"",
        ),
    ] {
        let r = read_as_extension(&host, json!({"fields": fields, "flatten": [flatten]}));
        assert_eq!(r.status, 400, "{fields} {flatten}: {}", r.body);
        let message = r.json()["error"].as_str().unwrap_or_default().to_string();
        assert!(
            message.contains("cannot be flattened") && message.contains(why),
            "{fields} {flatten}: {message}"
        );
    }
}
