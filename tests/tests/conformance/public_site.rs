//! The public site data of docs/service-api.md ("Public site data"): GET
//! /svc/models, /svc/models/:slug, /svc/videos, /svc/videos/:slug and
//! /svc/articles, black-box through HTTP against a real host with the svc
//! extension.
//!
//! Data is set up as admin through the platform's items API (docs/decisions.md
//! §6).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use platform_tests::{assert_error_for, id_of, int_of, Host, Resp, ADMIN_TOKEN};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Far in the past and far in the future: visibility without clock races.
const PAST: &str = "2001-01-01T00:00:00.000Z";
const FUTURE: &str = "2999-01-01T00:00:00.000Z";

fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// RFC 3339 UTC (milliseconds) of a Unix time.
fn iso_at(unix: i64) -> String {
    platform_tests::time::iso(unix * 1000)
}

/// A timestamp `offset` seconds from now.
fn from_now(offset: i64) -> String {
    iso_at(now_unix() + offset)
}

fn role_id(host: &Host, name: &str) -> String {
    host.id_by_name("platform_roles", name)
}

/// A file record; returns it as stored.
fn file(host: &Host, title: &str) -> Value {
    host.admin_create(
        "platform_files",
        &json!({
            "title": title, "filename_disk": format!("{title}.bin"),
            "filename_download": format!("{title}.bin"), "type": "image/jpeg",
            "filesize": 1234, "width": 640, "height": 480,
        }),
    )
}

/// A member with a full public profile (names, slug, description), a role
/// (by name) and secrets set, plus `extra` fields.
fn member(host: &Host, role: Option<&str>, slug: &str, extra: Value) -> Value {
    let mut body = json!({
        "first_name": format!("First {slug}"), "last_name": format!("Last {slug}"),
        "artist_name": format!("Artist {slug}"), "slug": slug,
        "email": format!("{slug}@secret-mail.test"), "password": "pw-secret-123",
        "token": format!("token-{slug}"), "description": format!("About {slug}"),
    });
    if let Some(role) = role {
        body["role"] = json!(role_id(host, role));
    }
    if let Some(extra) = extra.as_object() {
        for (k, v) in extra {
            body[k] = v.clone();
        }
    }
    host.admin_create("platform_users", &body)
}

fn model(host: &Host, slug: &str) -> Value {
    member(host, Some("Model"), slug, json!({}))
}

fn article(
    host: &Host,
    slug: &str,
    publish_date: Option<&str>,
    featured: bool,
    author: Option<&str>,
) -> Value {
    host.admin_create(
        "articles",
        &json!({
            "slug": slug, "title": format!("Article {slug}"), "excerpt": "ex", "content": "body",
            "publish_date": publish_date, "featured": featured, "author": author,
        }),
    )
}

/// A 200 answer with a JSON array body.
fn array(r: &Resp, what: &str) -> Vec<Value> {
    assert_eq!(r.status, 200, "{what}: {}", r.body);
    r.json()
        .as_array()
        .unwrap_or_else(|| panic!("{what}: not an array: {}", r.body))
        .clone()
}

fn field_list(list: &[Value], field: &str) -> Vec<String> {
    list.iter()
        .map(|v| v[field].as_str().unwrap_or("<none>").to_string())
        .collect()
}

fn slugs(list: &[Value]) -> Vec<String> {
    field_list(list, "slug")
}

fn ids(list: &[Value]) -> Vec<String> {
    field_list(list, "id")
}

/// The public form of a stored user: the admin's record without `email`.
fn public_user(host: &Host, id: &str) -> Value {
    let mut u = host.admin_item("platform_users", id);
    if let Some(o) = u.as_object_mut() {
        o.remove("email");
    }
    u
}

/// Every field of `expected` is in `actual` with the same value.
fn assert_contains(actual: &Value, expected: &Value, what: &str) {
    let exp = expected
        .as_object()
        .unwrap_or_else(|| panic!("{what}: expected an object"));
    for (k, v) in exp {
        assert_eq!(&actual[k], v, "{what}: field `{k}` of {actual}");
    }
}

/// No public answer carries these private values of a user (its email,
/// its token); the harness checks every answer for secret members.
/// The answer holds none of the `private` values, and no user's secret
/// field at all: tokens and passwords are stored hashed, so their plain
/// text could never appear; the field's name is what would leak.
fn assert_hidden(r: &Resp, private: &[&str]) {
    for value in private {
        assert!(!r.body.contains(value), "{value} in {}", r.body);
    }
    fn secret_keys(v: &Value, found: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    if ["email", "token", "password"].contains(&k.as_str()) {
                        found.push(k.clone());
                    }
                    secret_keys(v, found);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| secret_keys(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    secret_keys(&r.json(), &mut found);
    assert!(found.is_empty(), "secret fields {found:?} in {}", r.body);
}

/// Creates `n` like or play records of a video as admin, each by a new user
/// for likes (one like per user and video).
fn likes(host: &Host, video_id: &str, n: usize, tag: &str) {
    let users: Vec<Value> = (0..n)
        .map(|i| json!({"first_name": format!("liker {tag} {i}"), "email": format!("liker-{tag}-{i}@x.test")}))
        .collect();
    let users = host.admin_create_many("platform_users", &users);
    let rows: Vec<Value> = users
        .iter()
        .map(|u| json!({"video_id": video_id, "user_id": id_of(u)}))
        .collect();
    host.admin_create_many("video_likes", &rows);
}

fn plays(host: &Host, video_id: &str, n: usize) {
    let rows: Vec<Value> = (0..n)
        .map(|i| json!({"video_id": video_id, "session_id": format!("s{i}"), "duration_watched": 10, "completed": false}))
        .collect();
    host.admin_create_many("video_plays", &rows);
}

/// Videos uploaded on January 1st of 2000, 2001... in this order; their ids.
fn dated_videos(host: &Host, slugs: &[&str]) -> Vec<String> {
    let dated = slugs.iter().enumerate();
    dated
        .map(|(i, s)| id_of(&host.admin_video(s, Some(&format!("200{i}-01-01T00:00:00Z")))))
        .collect()
}

/// Featured articles published on January 1st of 2010, 2011... in this order.
fn dated_articles(host: &Host, slugs: &[&str]) {
    for (i, s) in slugs.iter().enumerate() {
        let date = format!("201{i}-01-01T00:00:00Z");
        article(host, s, Some(&date), true, None);
    }
}

/// Values of `limit` that are no valid limit: treated as absent
/// (docs/service-api.md, "Limits").
const INVALID_LIMITS: [&str; 5] = ["limit=abc", "limit=-1", "limit=0", "limit=2.5", "limit="];

/// `featured` values, which the lists accept and ignore.
const FEATURED: [&str; 6] = [
    "featured=true",
    "featured=false",
    "featured=1",
    "featured=0",
    "featured=x",
    "featured=nope",
];

/// Each of `queries` on list `path` is ignored: the answer is the same as
/// without it. The answer without it.
fn assert_queries_ignored(host: &Host, path: &str, queries: &[&str]) -> Vec<Value> {
    let plain = array(&host.get(path, None), path);
    for q in queries {
        let list = array(&host.get(&format!("{path}?{q}"), None), q);
        assert_eq!(list, plain, "{path}?{q} must answer as {path}");
    }
    plain
}

/// Each of `paths` is a 404 with exactly `{"error": error}`.
fn assert_not_found(host: &Host, paths: &[&str], error: &str) {
    for path in paths {
        assert_error_for(path, &host.get(path, None), 404, error);
    }
}

/// `{base}/{slug}` finds the record of that slug; each of the `near` slugs
/// (prefixes, other cases, longer ones) is a 404 with `{"error": error}`.
fn assert_slug_matches_exactly(host: &Host, base: &str, slug: &str, near: &[&str], error: &str) {
    for other in near {
        let path = format!("{base}/{other}");
        assert_error_for(&path, &host.get(&path, None), 404, error);
    }
    let r = host.get(&format!("{base}/{slug}"), None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["slug"], slug);
}

/// Each of `paths` shows `member` (a [`member`] made with this slug) with
/// none of its private values or secret fields.
fn assert_shown_without_secrets(host: &Host, paths: &[&str], member: &Value, slug: &str) {
    let private = [format!("{slug}@secret-mail.test"), format!("token-{slug}")];
    for path in paths {
        let r = host.get(path, None);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert!(
            r.body.contains(&id_of(member)),
            "{path}: member missing: {}",
            r.body
        );
        assert_hidden(&r, &[&private[0], &private[1]]);
    }
}

/// A model as the public site shows it: the stored user without `email`,
/// its banner's file record and its photos' file records in this order.
fn expected_model(host: &Host, id: &str, banner: &Value, photos: &[&Value]) -> Value {
    let mut m = public_user(host, id);
    m["banner"] = host.admin_item("platform_files", &id_of(banner));
    m["photos"] = photos
        .iter()
        .map(|p| json!({"platform_files_id": host.admin_item("platform_files", &id_of(p))}))
        .collect();
    m
}

// ---------------------------------------------------------------------------
// GET /svc/models
// ---------------------------------------------------------------------------

#[test]
fn models_of_an_empty_platform_is_an_empty_array() {
    let host = Host::in_process_svc();
    member(&host, Some("Viewer"), "only-viewer", json!({}));
    assert_eq!(
        array(&host.get("/svc/models", None), "models"),
        Vec::<Value>::new()
    );
}

#[test]
fn models_lists_only_model_role_users_by_id_descending() {
    let host = Host::in_process_svc();
    let mut expected: Vec<String> = ["m1", "m2", "m3", "m4", "m5"]
        .iter()
        .map(|s| id_of(&model(&host, s)))
        .collect();
    member(&host, Some("Viewer"), "a-viewer", json!({}));
    member(&host, None, "no-role", json!({}));
    expected.sort();
    expected.reverse();
    let list = array(&host.get("/svc/models", None), "models");
    assert_eq!(ids(&list), expected, "ordered by id descending");
}

#[test]
fn models_limit_caps_the_count() {
    let host = Host::in_process_svc();
    let mut all: Vec<String> = ["a", "b", "c", "d"]
        .iter()
        .map(|s| id_of(&model(&host, s)))
        .collect();
    all.sort();
    all.reverse();
    let list = array(&host.get("/svc/models?limit=2", None), "limit=2");
    assert_eq!(ids(&list), all[..2].to_vec());
    let list = array(&host.get("/svc/models?limit=10", None), "limit=10");
    assert_eq!(ids(&list), all);
}

#[test]
fn models_invalid_limit_is_treated_as_absent() {
    let host = Host::in_process_svc();
    for s in ["a", "b", "c"] {
        model(&host, s);
    }
    let all = assert_queries_ignored(&host, "/svc/models", &INVALID_LIMITS);
    assert_eq!(all.len(), 3, "all models expected");
}

#[test]
fn models_featured_is_accepted_and_ignored() {
    let host = Host::in_process_svc();
    for s in ["a", "b", "c"] {
        model(&host, s);
    }
    let plain = assert_queries_ignored(&host, "/svc/models", &FEATURED);
    assert_eq!(plain.len(), 3);
}

#[test]
fn models_are_whole_user_records_with_photos_and_banner_expanded() {
    let host = Host::in_process_svc();
    let avatar = file(&host, "avatar");
    let banner = file(&host, "banner");
    let m = member(
        &host,
        Some("Model"),
        "starry",
        json!({"avatar": id_of(&avatar), "banner": id_of(&banner)}),
    );
    let mid = id_of(&m);
    let p1 = file(&host, "photo-1");
    let p2 = file(&host, "photo-2");
    let p3 = file(&host, "photo-3");
    // Inserted out of order: photos come by `sort`.
    for (f, sort) in [(&p3, 3), (&p1, 1), (&p2, 2)] {
        host.admin_create(
            "model_photos",
            &json!({"platform_users_id": mid, "platform_files_id": id_of(f), "sort": sort}),
        );
    }
    // Another model's photo is not included.
    let other = model(&host, "other");
    let op = file(&host, "other-photo");
    host.admin_create(
        "model_photos",
        &json!({"platform_users_id": id_of(&other), "platform_files_id": id_of(&op), "sort": 0}),
    );

    let expected = expected_model(&host, &mid, &banner, &[&p1, &p2, &p3]);
    let list = array(&host.get("/svc/models", None), "models");
    let got = list
        .iter()
        .find(|u| u["id"] == json!(mid))
        .unwrap_or_else(|| panic!("model missing: {list:?}"));
    assert_eq!(got, &expected);
}

#[test]
fn model_records_carry_the_documented_fields() {
    let host = Host::in_process_svc();
    let avatar = file(&host, "avatar");
    let m = member(
        &host,
        Some("Model"),
        "fields",
        json!({"avatar": id_of(&avatar)}),
    );
    let list = array(&host.get("/svc/models", None), "models");
    let got = &list[0];
    assert_eq!(got["id"], m["id"]);
    assert_eq!(got["slug"], "fields");
    assert_eq!(got["first_name"], "First fields");
    assert_eq!(got["last_name"], "Last fields");
    assert_eq!(got["artist_name"], "Artist fields");
    assert_eq!(got["role"], json!(role_id(&host, "Model")), "{got}");
    // Only photos and banner are expanded: the avatar stays a file id.
    assert_eq!(got["avatar"], json!(id_of(&avatar)), "{got}");
    assert!(got["date_created"].is_string(), "{got}");
}

#[test]
fn model_without_photos_or_banner_has_empty_photos_and_null_banner() {
    let host = Host::in_process_svc();
    model(&host, "plain");
    let list = array(&host.get("/svc/models", None), "models");
    assert_eq!(list[0]["photos"], json!([]), "{}", list[0]);
    assert_eq!(list[0]["banner"], Value::Null, "{}", list[0]);
}

#[test]
fn model_photos_with_equal_sort_are_ordered_by_id() {
    let host = Host::in_process_svc();
    let mid = id_of(&model(&host, "tied"));
    let files: Vec<Value> = (0..4).map(|i| file(&host, &format!("tie-{i}"))).collect();
    let mut rows: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let row = host.admin_create(
                "model_photos",
                &json!({"platform_users_id": mid, "platform_files_id": id_of(f), "sort": 5}),
            );
            (id_of(&row), id_of(f))
        })
        .collect();
    // A lower sort still comes first.
    let first = file(&host, "first");
    host.admin_create(
        "model_photos",
        &json!({"platform_users_id": mid, "platform_files_id": id_of(&first), "sort": 1}),
    );
    rows.sort();
    let mut expected = vec![id_of(&first)];
    expected.extend(rows.into_iter().map(|(_, f)| f));
    let r = host.get("/svc/models/tied", None);
    assert_eq!(r.status, 200, "{}", r.body);
    let got: Vec<String> = r.json()["photos"]
        .as_array()
        .unwrap_or_else(|| panic!("no photos: {}", r.body))
        .iter()
        .map(|p| {
            p["platform_files_id"]["id"]
                .as_str()
                .unwrap_or("?")
                .to_string()
        })
        .collect();
    assert_eq!(got, expected, "photos by sort then model_photos.id");
}

#[test]
fn models_never_expose_email_password_or_token() {
    let host = Host::in_process_svc();
    let m = model(&host, "secretive");
    let paths = ["/svc/models", "/svc/models/secretive"];
    assert_shown_without_secrets(&host, &paths, &m, "secretive");
}

// ---------------------------------------------------------------------------
// GET /svc/models/:slug
// ---------------------------------------------------------------------------

#[test]
fn model_by_slug_is_the_model_with_expansions() {
    let host = Host::in_process_svc();
    let banner = file(&host, "banner");
    let m = member(
        &host,
        Some("Model"),
        "luna",
        json!({"banner": id_of(&banner)}),
    );
    model(&host, "other");
    let photo = file(&host, "photo");
    host.admin_create(
        "model_photos",
        &json!({"platform_users_id": id_of(&m), "platform_files_id": id_of(&photo), "sort": 1}),
    );
    let expected = expected_model(&host, &id_of(&m), &banner, &[&photo]);
    let r = host.get("/svc/models/luna", None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json(), expected);
}

#[test]
fn model_by_unknown_slug_is_404() {
    let host = Host::in_process_svc();
    model(&host, "luna");
    assert_not_found(&host, &["/svc/models/nobody"], "Model not found");
}

#[test]
fn model_slug_must_match_exactly() {
    let host = Host::in_process_svc();
    model(&host, "luna-star");
    let near = ["luna", "LUNA-STAR", "luna-sta", "luna-star-x", "%25"];
    assert_slug_matches_exactly(&host, "/svc/models", "luna-star", &near, "Model not found");
}

#[test]
fn model_by_slug_of_a_user_without_the_model_role_is_404() {
    let host = Host::in_process_svc();
    member(&host, Some("Viewer"), "viewer-slug", json!({}));
    member(&host, None, "roleless-slug", json!({}));
    let paths = ["/svc/models/viewer-slug", "/svc/models/roleless-slug"];
    assert_not_found(&host, &paths, "Model not found");
}

// ---------------------------------------------------------------------------
// GET /svc/videos
// ---------------------------------------------------------------------------

#[test]
fn videos_of_an_empty_platform_is_an_empty_array() {
    let host = Host::in_process_svc();
    host.admin_video("future-only", Some(FUTURE));
    assert_eq!(
        array(&host.get("/svc/videos", None), "videos"),
        Vec::<Value>::new()
    );
}

#[test]
fn videos_are_the_uploaded_ones_newest_first() {
    let host = Host::in_process_svc();
    host.admin_video("mid", Some("2010-05-05T10:00:00.000Z"));
    host.admin_video("future", Some(FUTURE));
    host.admin_video("soon", Some(&from_now(3600)));
    host.admin_video("oldest", Some(PAST));
    host.admin_video("just-now", Some(&from_now(-2)));
    host.admin_video("undated", None);
    host.admin_video("newer", Some("2020-02-02T00:00:00.000Z"));
    let list = array(&host.get("/svc/videos", None), "videos");
    assert_eq!(slugs(&list), ["just-now", "newer", "mid", "oldest"]);
}

/// A list longer than svc reads at once (5,000 videos), with a run of one
/// date across the reads' boundary: every video once, newest first, ties
/// by id, descending, each with its models whichever read it came in;
/// and a limit past the boundary cuts the same order.
#[test]
fn a_list_longer_than_one_read_is_every_video_once_in_order() {
    let host = Host::in_process_svc();
    // Runs of 1,000 videos a date: the first read ends 950 videos into
    // the oldest run.
    let rows: Vec<Value> = (0..5_050)
        .map(|i| {
            json!({"slug": format!("v{i:05}"), "title": "t",
                   "upload_date": format!("2020-01-{:02}T00:00:00.000Z", 1 + i / 1_000)})
        })
        .collect();
    let mut made: Vec<(String, String)> = host
        .admin_create_many("videos", &rows)
        .iter()
        .map(|v| {
            let date = v["upload_date"].as_str().expect("a date").to_string();
            (date, id_of(v))
        })
        .collect();
    made.sort_by(|a, b| b.cmp(a));
    let want: Vec<String> = made.into_iter().map(|(_, id)| id).collect();
    // A model of the first read's first video, one of the second read's
    // last, and one of both.
    let (first, last) = (&want[0], &want[want.len() - 1]);
    let (a, b, both) = (
        id_of(&model(&host, "a")),
        id_of(&model(&host, "b")),
        id_of(&model(&host, "both")),
    );
    host.link_model(first, &a);
    host.link_model(last, &b);
    host.link_model(first, &both);
    host.link_model(last, &both);
    let list = array(&host.get("/svc/videos", None), "videos");
    assert_eq!(list.len(), want.len());
    assert!(
        ids(&list) == want,
        "the whole list is not every video once, in order"
    );
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    let models_of = |video: &Value| sorted(ids(video["models"].as_array().expect("models")));
    assert_eq!(models_of(&list[0]), sorted(vec![a, both.clone()]));
    assert_eq!(models_of(&list[want.len() - 1]), sorted(vec![b, both]));
    assert_eq!(models_of(&list[1]), Vec::<String>::new());
    assert_eq!(models_of(&list[want.len() - 2]), Vec::<String>::new());
    let cut = array(&host.get("/svc/videos?limit=5003", None), "videos");
    assert!(
        ids(&cut) == want[..5_003],
        "a limit past one read cuts another order"
    );
}

#[test]
fn videos_filter_by_model_id() {
    let host = Host::in_process_svc();
    let a = id_of(&model(&host, "a"));
    let b = id_of(&model(&host, "b"));
    let only_a = id_of(&host.admin_video("only-a", Some("2011-01-01T00:00:00Z")));
    let only_b = id_of(&host.admin_video("only-b", Some("2012-01-01T00:00:00Z")));
    let both = id_of(&host.admin_video("both", Some("2013-01-01T00:00:00Z")));
    let a_future = id_of(&host.admin_video("a-future", Some(FUTURE)));
    host.admin_video("nobody", Some("2014-01-01T00:00:00Z"));
    host.link_model(&only_a, &a);
    host.link_model(&only_b, &b);
    host.link_model(&both, &a);
    host.link_model(&both, &b);
    host.link_model(&a_future, &a);

    let list = array(&host.get(&format!("/svc/videos?model_id={a}"), None), "a");
    assert_eq!(slugs(&list), ["both", "only-a"]);
    let list = array(&host.get(&format!("/svc/videos?model_id={b}"), None), "b");
    assert_eq!(slugs(&list), ["both", "only-b"]);
    let list = array(
        &host.get(
            "/svc/videos?model_id=00000000-0000-4000-8000-000000000000",
            None,
        ),
        "unknown model",
    );
    assert!(list.is_empty(), "{list:?}");
    let list = array(&host.get("/svc/videos", None), "all");
    assert_eq!(list.len(), 4);
}

#[test]
fn videos_limit_caps_the_count() {
    let host = Host::in_process_svc();
    dated_videos(&host, &["v1", "v2", "v3", "v4"]);
    let list = array(&host.get("/svc/videos?limit=2", None), "limit=2");
    assert_eq!(slugs(&list), ["v4", "v3"]);
    let list = array(&host.get("/svc/videos?limit=100", None), "limit=100");
    assert_eq!(slugs(&list), ["v4", "v3", "v2", "v1"]);
}

#[test]
fn videos_limit_applies_after_the_model_filter() {
    let host = Host::in_process_svc();
    let m = id_of(&model(&host, "m"));
    // v1..v3 are the model's, x4 and x5 (newer) are not.
    for v in &dated_videos(&host, &["v1", "v2", "v3", "x4", "x5"])[..3] {
        host.link_model(v, &m);
    }
    let list = array(
        &host.get(&format!("/svc/videos?model_id={m}&limit=2"), None),
        "model_id+limit",
    );
    assert_eq!(slugs(&list), ["v3", "v2"]);
}

#[test]
fn videos_invalid_limit_is_treated_as_absent() {
    let host = Host::in_process_svc();
    dated_videos(&host, &["v1", "v2", "v3"]);
    let all = assert_queries_ignored(&host, "/svc/videos", &INVALID_LIMITS);
    assert_eq!(slugs(&all), ["v3", "v2", "v1"]);
}

#[test]
fn videos_expand_models_and_movie() {
    expands_models_and_movie(&Host::in_process_svc());
}

/// Past the host's bound on the related records of one answer, the list
/// and the detail read the models and movies in batches instead, and
/// answer the same.
#[test]
fn videos_past_the_bound_on_related_records_expand_the_same() {
    let host = Host::start_svc_with(&[("MAX_RELATED_RECORDS", "2")]);
    expands_models_and_movie(&host);
    // The bound holds: the generic read of the same relations is refused.
    let r = host.get(
        "/items/videos?fields=*,models.platform_users_id.*,movie.*",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 400, "{}", r.body);
}

/// A video with a movie and two models: the list and the detail show the
/// file record, the video's own fields and both models' public records.
fn expands_models_and_movie(host: &Host) {
    let a = model(host, "a");
    let b = model(host, "b");
    let movie = file(host, "movie");
    let v = host.admin_create(
        "videos",
        &json!({"slug": "full", "title": "Title full", "upload_date": PAST,
                "movie": id_of(&movie), "views_count": 5, "description": "d"}),
    );
    host.link_model(&id_of(&v), &id_of(&a));
    host.link_model(&id_of(&v), &id_of(&b));
    let list = array(&host.get("/svc/videos", None), "videos");
    assert_eq!(list.len(), 1, "{list:?}");
    let one = host.get("/svc/videos/full", None);
    assert_eq!(one.status, 200, "{}", one.body);
    for got in [&list[0], &one.json()] {
        assert_eq!(
            got["movie"],
            host.admin_item("platform_files", &id_of(&movie)),
            "{got}"
        );
        let mut stored = host.admin_item("videos", &id_of(&v));
        if let Some(o) = stored.as_object_mut() {
            for k in ["movie", "likes_count", "plays_count", "counts_exact"] {
                o.remove(k);
            }
        }
        assert_contains(got, &stored, "video fields");
        assert!(got.get("counts_exact").is_none(), "{got}");
        let models = got["models"]
            .as_array()
            .unwrap_or_else(|| panic!("models not an array: {got}"));
        let mut got_ids = ids(models);
        got_ids.sort();
        let mut want = vec![id_of(&a), id_of(&b)];
        want.sort();
        assert_eq!(got_ids, want);
        for m in models {
            assert_contains(m, &public_user(host, &id_of(m)), "video model");
            assert!(m.get("email").is_none(), "{m}");
        }
    }
}

#[test]
fn videos_without_movie_or_models_keep_null_and_empty() {
    let host = Host::in_process_svc();
    host.admin_video("bare", Some(PAST));
    let list = array(&host.get("/svc/videos", None), "videos");
    assert_eq!(list[0]["movie"], Value::Null, "{}", list[0]);
    assert_eq!(list[0]["models"], json!([]), "{}", list[0]);
    let r = host.get("/svc/videos/bare", None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["movie"], Value::Null, "{}", r.body);
    assert_eq!(r.json()["models"], json!([]), "{}", r.body);
}

#[test]
fn videos_report_live_like_and_play_counts() {
    let host = Host::in_process_svc();
    let v = id_of(&host.admin_video("counted", Some(PAST)));
    let quiet = id_of(&host.admin_video("quiet", Some("2000-01-01T00:00:00Z")));
    likes(&host, &v, 2, "c");
    plays(&host, &v, 3);
    // The stored counters are wrong on purpose.
    host.admin_patch("videos", &v, &json!({"likes_count": 99, "plays_count": 77}));
    host.admin_patch(
        "videos",
        &quiet,
        &json!({"likes_count": 5, "plays_count": 6}),
    );
    let list = array(&host.get("/svc/videos", None), "videos");
    let counts: Vec<(Value, Value)> = list
        .iter()
        .map(|v| (v["likes_count"].clone(), v["plays_count"].clone()))
        .collect();
    assert_eq!(
        counts,
        [(json!(2), json!(3)), (json!(0), json!(0))],
        "{list:?}"
    );
    let r = host.get("/svc/videos/counted", None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["likes_count"], 2, "{}", r.body);
    assert_eq!(r.json()["plays_count"], 3, "{}", r.body);
}

/// A long list counts every group at once instead of looking each video
/// up: the counts must be the same either way.
#[test]
fn long_video_lists_report_the_same_live_counts_as_short_ones() {
    let host = Host::in_process_svc();
    let rows: Vec<Value> = (0..300)
        .map(|i| json!({"slug": format!("v{i:03}"), "title": "t", "upload_date": iso_at(now_unix() - 1000 - i)}))
        .collect();
    let videos: Vec<String> = host
        .admin_create_many("videos", &rows)
        .iter()
        .map(id_of)
        .collect();
    let hidden = id_of(&host.admin_video("later", Some(&from_now(86_400))));
    likes(&host, &videos[0], 2, "a");
    likes(&host, &videos[299], 1, "b");
    plays(&host, &videos[7], 3);
    plays(&host, &hidden, 4);
    let all = array(&host.get("/svc/videos", None), "videos");
    assert_eq!(all.len(), 300);
    let counts = |list: &[Value], slug: &str| {
        let v = list
            .iter()
            .find(|v| v["slug"] == slug)
            .unwrap_or_else(|| panic!("{slug}"));
        (
            int_of(&v["likes_count"], "likes"),
            int_of(&v["plays_count"], "plays"),
        )
    };
    assert_eq!(counts(&all, "v000"), (2, 0));
    assert_eq!(counts(&all, "v299"), (1, 0));
    assert_eq!(counts(&all, "v007"), (0, 3));
    assert_eq!(counts(&all, "v100"), (0, 0));
    let short = array(&host.get("/svc/videos?limit=10", None), "videos");
    for v in &short {
        let slug = v["slug"].as_str().unwrap_or_default();
        assert_eq!(counts(&short, slug), counts(&all, slug), "{slug}");
    }
}

/// The stored counters and their flag, and the live counts of records.
fn counters_and_records(host: &Host, video: &str) -> ((i64, i64), bool, (i64, i64)) {
    let v = host.admin_item("videos", video);
    let live = |collection: &str| {
        host.admin_count(collection, Some(&json!({"video_id": {"_eq": video}}))) as i64
    };
    (
        (
            int_of(&v["likes_count"], "likes"),
            int_of(&v["plays_count"], "plays"),
        ),
        v["counts_exact"] == true,
        (live("video_likes"), live("video_plays")),
    )
}

/// A video's counters are served in place of counting its records only
/// while they are exact: a new video's zero counters are, the counters'
/// hook marks them so when they equal the records' counts, any other write
/// of a counter or of the mark unmarks them; lists never show the mark.
#[test]
fn exact_counters_are_marked_by_the_hook_alone() {
    let host = Host::in_process_svc();
    // A new video has no records yet: its zero counters are exact.
    let v = id_of(&host.admin_video("marked", Some(PAST)));
    assert_eq!(counters_and_records(&host, &v), ((0, 0), true, (0, 0)));
    likes(&host, &v, 2, "m");
    assert_eq!(counters_and_records(&host, &v), ((2, 0), true, (2, 0)));
    let shown = array(&host.get("/svc/videos", None), "videos");
    assert!(shown[0].get("counts_exact").is_none(), "{shown:?}");
    // Someone else's word is not taken, for the counters or the mark.
    host.admin_patch("videos", &v, &json!({"likes_count": 9}));
    assert_eq!(counters_and_records(&host, &v), ((9, 0), false, (2, 0)));
    host.admin_patch("videos", &v, &json!({"counts_exact": true}));
    assert_eq!(counters_and_records(&host, &v), ((9, 0), false, (2, 0)));
    let created = host.admin_create(
        "videos",
        &json!({"slug": "claimed", "title": "t", "upload_date": PAST, "likes_count": 5, "counts_exact": true}),
    );
    assert_eq!(
        counters_and_records(&host, &id_of(&created)),
        ((5, 0), false, (0, 0))
    );
    // A counter moved away from its records stays unmarked; one moved back
    // onto them is marked again.
    plays(&host, &v, 1);
    assert_eq!(counters_and_records(&host, &v), ((9, 1), false, (2, 1)));
    host.admin_patch("videos", &v, &json!({"likes_count": 2}));
    plays(&host, &v, 1);
    assert_eq!(counters_and_records(&host, &v), ((2, 2), true, (2, 2)));
    // An unrelated write keeps the mark.
    host.admin_patch("videos", &v, &json!({"title": "renamed"}));
    assert!(counters_and_records(&host, &v).1);
}

/// Whatever mix of writes reaches likes, plays and counters, by any path,
/// a marked video's counters equal its records' counts and the list and
/// detail answer the records' counts for every video.
#[test]
fn marked_counters_equal_the_records_under_any_writes() {
    let host = Host::in_process_svc();
    let videos: Vec<String> = (0..3)
        .map(|i| id_of(&host.admin_video(&format!("p{i}"), Some(PAST))))
        .collect();
    let users: Vec<String> = host
        .admin_create_many(
            "platform_users",
            &(0..6)
                .map(|i| json!({"first_name": "u", "email": format!("prop-{i}@x.test")}))
                .collect::<Vec<_>>(),
        )
        .iter()
        .map(id_of)
        .collect();
    let mut rng = platform_tests::Rng(7);
    for step in 0..120 {
        let video = &videos[rng.below(videos.len())];
        match rng.below(7) {
            0 => {
                // A user's second like of a video is refused, and counts nowhere.
                let user = &users[rng.below(users.len())];
                let like = json!({"video_id": video, "user_id": user});
                let r = host.post("/items/video_likes", Some(ADMIN_TOKEN), &like);
                assert!(
                    r.status == 200 || r.error_code() == "RECORD_NOT_UNIQUE",
                    "{}",
                    r.body
                );
            }
            1 => plays(&host, video, 1 + rng.below(2)),
            2 | 3 => {
                let collection = ["video_likes", "video_plays"][rng.below(2)];
                let rows = host.admin_find(collection, &json!({"video_id": {"_eq": video}}));
                if let Some(row) = rows.first() {
                    if rng.chance(50) {
                        host.admin_delete(collection, &id_of(row));
                    } else {
                        let to = &videos[rng.below(videos.len())];
                        let path = format!("/items/{collection}/{}", id_of(row));
                        let r = host.patch(&path, Some(ADMIN_TOKEN), &json!({"video_id": to}));
                        assert!(
                            r.status == 200 || r.error_code() == "RECORD_NOT_UNIQUE",
                            "{}",
                            r.body
                        );
                    }
                }
            }
            4 => {
                let counter = ["likes_count", "plays_count"][rng.below(2)];
                let value = rng.below(4);
                host.admin_patch("videos", video, &json!({ counter: value }));
            }
            5 => host.admin_patch("videos", video, &json!({"counts_exact": true})),
            _ => {
                let r = host.post(&format!("/svc/videos/{video}/play"), None, &json!({}));
                assert_eq!(r.status, 200, "{}", r.body);
            }
        }
        let whole = host.get("/svc/videos", None);
        // A page one read holds is that read itself while every counter
        // is exact, and written from its parts otherwise: the same bytes.
        let page = host.get("/svc/videos?limit=10", None);
        assert_eq!(page.body, whole.body, "step {step}");
        let list = array(&whole, "videos");
        for id in &videos {
            let (stored, exact, live) = counters_and_records(&host, id);
            if exact {
                assert_eq!(stored, live, "step {step}: video {id} is marked");
            }
            let shown = list
                .iter()
                .find(|v| v["id"] == *id.as_str())
                .expect("listed");
            assert_eq!(
                (
                    int_of(&shown["likes_count"], "likes"),
                    int_of(&shown["plays_count"], "plays")
                ),
                live,
                "step {step}: video {id}"
            );
        }
    }
}

#[test]
fn video_models_never_expose_email_password_or_token() {
    let host = Host::in_process_svc();
    let m = model(&host, "hidden");
    let v = host.admin_video("v", Some(PAST));
    host.link_model(&id_of(&v), &id_of(&m));
    assert_shown_without_secrets(
        &host,
        &["/svc/videos", "/svc/videos?limit=5", "/svc/videos/v"],
        &m,
        "hidden",
    );
}

/// 2,000 videos with 1–3 models and a movie each: the list is read in a
/// few item-service calls, however many videos it shows.
#[test]
fn video_list_uses_a_constant_number_of_reads() {
    let host = Host::in_process_svc();
    const N: usize = 2000;
    let role = role_id(&host, "Model");
    let models: Vec<String> = host.admin_create_many(
        "platform_users",
        &(0..20)
            .map(|i| json!({"first_name": format!("M{i}"), "slug": format!("m{i}"), "role": role, "email": format!("m{i}@x.test")}))
            .collect::<Vec<_>>(),
    )
    .iter()
    .map(id_of)
    .collect();
    let mut files = Vec::new();
    for chunk in (0..N).collect::<Vec<_>>().chunks(500) {
        let rows: Vec<Value> = chunk
            .iter()
            .map(|i| json!({"title": format!("movie {i}"), "type": "video/mp4", "filename_disk": format!("m{i}.mp4")}))
            .collect();
        files.extend(
            host.admin_create_many("platform_files", &rows)
                .iter()
                .map(id_of),
        );
    }
    let base = 978_307_200; // 2001-01-01
    let mut videos = Vec::new();
    for chunk in (0..N).collect::<Vec<_>>().chunks(500) {
        let rows: Vec<Value> = chunk
            .iter()
            .map(|&i| json!({"slug": format!("v{i:04}"), "title": format!("V {i}"), "movie": files[i], "upload_date": iso_at(base + i as i64 * 60)}))
            .collect();
        videos.extend(host.admin_create_many("videos", &rows).iter().map(id_of));
    }
    let mut expected: BTreeMap<String, (BTreeSet<String>, String)> = BTreeMap::new();
    let mut links = Vec::new();
    for (i, vid) in videos.iter().enumerate() {
        let mut set = BTreeSet::new();
        for k in 0..(i % 3 + 1) {
            let m = &models[(i + k * 7) % 20];
            set.insert(m.clone());
            links.push(json!({"videos_id": vid, "platform_users_id": m}));
        }
        expected.insert(format!("v{i:04}"), (set, files[i].clone()));
    }
    for chunk in links.chunks(1000) {
        host.admin_create_many("videos_models", chunk);
    }
    likes(&host, &videos[0], 3, "n1");
    plays(&host, &videos[1], 4);

    let calls = || {
        let r = host.get("/server/metrics", Some(ADMIN_TOKEN));
        assert_eq!(r.status, 200, "metrics: {}", r.body);
        r.json()["data"]["items_calls"]
            .as_u64()
            .unwrap_or_else(|| panic!("no items_calls: {}", r.body))
    };
    let m0 = calls();
    let m1 = calls();
    let overhead = m1 - m0;
    let all = host.get("/svc/videos", None);
    let m2 = calls();
    let ten = host.get("/svc/videos?limit=10", None);
    let m3 = calls();
    let full = m2 - m1 - overhead;
    let limited = m3 - m2 - overhead;
    // A page expands its models in its one read; the whole list reads
    // every link and then the users apart. Neither grows with the list.
    assert!(
        full <= 10 && limited <= 10,
        "item calls: {full} for all, {limited} for 10"
    );

    let list = array(&all, "all videos");
    assert_eq!(list.len(), N);
    let want_order: Vec<String> = (0..N).rev().map(|i| format!("v{i:04}")).collect();
    assert_eq!(slugs(&list), want_order);
    for v in &list {
        let slug = v["slug"].as_str().unwrap_or_default();
        let (models, movie) = &expected[slug];
        let got: BTreeSet<String> = v["models"]
            .as_array()
            .unwrap_or_else(|| panic!("{slug}: models {v}"))
            .iter()
            .map(id_of)
            .collect();
        assert_eq!(&got, models, "{slug}: models");
        assert_eq!(v["movie"]["id"], json!(movie), "{slug}: movie {v}");
        assert!(v["movie"]["title"].is_string(), "{slug}: movie {v}");
    }
    let v0 = list.iter().find(|v| v["slug"] == "v0000").cloned();
    assert_eq!(v0.map(|v| v["likes_count"].clone()), Some(json!(3)));
    let v1 = list.iter().find(|v| v["slug"] == "v0001").cloned();
    assert_eq!(v1.map(|v| v["plays_count"].clone()), Some(json!(4)));
    assert_eq!(slugs(&array(&ten, "ten")), want_order[..10].to_vec());
}

// ---------------------------------------------------------------------------
// GET /svc/videos/:slug
// ---------------------------------------------------------------------------

#[test]
fn video_by_slug_has_the_list_expansions() {
    let host = Host::in_process_svc();
    let m = model(&host, "star");
    let movie = file(&host, "movie");
    let v = host.admin_create(
        "videos",
        &json!({"slug": "detail", "title": "Title detail", "upload_date": PAST,
                "movie": id_of(&movie)}),
    );
    host.admin_video("other", Some(PAST));
    host.link_model(&id_of(&v), &id_of(&m));
    likes(&host, &id_of(&v), 1, "d");
    plays(&host, &id_of(&v), 2);
    host.admin_patch(
        "videos",
        &id_of(&v),
        &json!({"likes_count": 40, "plays_count": 41}),
    );
    let r = host.get("/svc/videos/detail", None);
    assert_eq!(r.status, 200, "{}", r.body);
    let got = r.json();
    assert_eq!(got["id"], v["id"]);
    assert_eq!(got["slug"], "detail");
    assert_eq!(got["title"], "Title detail");
    assert_eq!(
        got["movie"],
        host.admin_item("platform_files", &id_of(&movie))
    );
    assert_eq!(got["likes_count"], 1, "{got}");
    assert_eq!(got["plays_count"], 2, "{got}");
    let models = got["models"].as_array().cloned().unwrap_or_default();
    assert_eq!(ids(&models), [id_of(&m)], "{got}");
    assert_contains(&models[0], &public_user(&host, &id_of(&m)), "video model");
}

#[test]
fn video_by_unknown_slug_is_404() {
    let host = Host::in_process_svc();
    host.admin_video("known", Some(PAST));
    assert_not_found(&host, &["/svc/videos/unknown"], "Video not found");
}

#[test]
fn video_not_yet_uploaded_is_404() {
    let host = Host::in_process_svc();
    host.admin_video("later", Some(FUTURE));
    host.admin_video("in-an-hour", Some(&from_now(3600)));
    host.admin_video("undated", None);
    let paths = [
        "/svc/videos/later",
        "/svc/videos/in-an-hour",
        "/svc/videos/undated",
    ];
    assert_not_found(&host, &paths, "Video not found");
    host.admin_video("a-moment-ago", Some(&from_now(-2)));
    assert_eq!(host.get("/svc/videos/a-moment-ago", None).status, 200);
}

#[test]
fn video_slug_must_match_exactly() {
    let host = Host::in_process_svc();
    host.admin_video("hello", Some(PAST));
    host.admin_video("hello-world", Some(PAST));
    let near = ["hell", "HELLO", "hello-", "ello"];
    assert_slug_matches_exactly(&host, "/svc/videos", "hello", &near, "Video not found");
}

// ---------------------------------------------------------------------------
// GET /svc/articles
// ---------------------------------------------------------------------------

#[test]
fn articles_of_an_empty_platform_is_an_empty_array() {
    let host = Host::in_process_svc();
    article(&host, "not-featured", Some(PAST), false, None);
    article(&host, "future", Some(FUTURE), true, None);
    assert_eq!(
        array(&host.get("/svc/articles", None), "articles"),
        Vec::<Value>::new()
    );
}

#[test]
fn articles_are_published_featured_ones_newest_first() {
    let host = Host::in_process_svc();
    article(&host, "old", Some(PAST), true, None);
    article(&host, "plain", Some("2015-01-01T00:00:00Z"), false, None);
    article(&host, "future", Some(FUTURE), true, None);
    article(&host, "soon", Some(&from_now(3600)), true, None);
    article(&host, "undated", None, true, None);
    article(&host, "recent", Some(&from_now(-2)), true, None);
    article(&host, "mid", Some("2012-06-01T00:00:00Z"), true, None);
    let list = array(&host.get("/svc/articles", None), "articles");
    assert_eq!(slugs(&list), ["recent", "mid", "old"]);
}

#[test]
fn articles_featured_query_is_accepted_and_ignored() {
    let host = Host::in_process_svc();
    article(&host, "feat", Some(PAST), true, None);
    article(&host, "plain", Some(PAST), false, None);
    let plain = assert_queries_ignored(&host, "/svc/articles", &FEATURED);
    assert_eq!(slugs(&plain), ["feat"]);
}

#[test]
fn articles_limit_caps_the_count() {
    let host = Host::in_process_svc();
    dated_articles(&host, &["a1", "a2", "a3"]);
    let list = array(&host.get("/svc/articles?limit=2", None), "limit=2");
    assert_eq!(slugs(&list), ["a3", "a2"]);
    let list = array(
        &host.get("/svc/articles?limit=1&featured=true", None),
        "limit=1",
    );
    assert_eq!(slugs(&list), ["a3"]);
}

#[test]
fn articles_invalid_limit_is_treated_as_absent() {
    let host = Host::in_process_svc();
    dated_articles(&host, &["a1", "a2", "a3"]);
    let all = assert_queries_ignored(&host, "/svc/articles", &INVALID_LIMITS);
    assert_eq!(slugs(&all), ["a3", "a2", "a1"]);
}

#[test]
fn articles_expand_the_author_without_secrets() {
    let host = Host::in_process_svc();
    let author = model(&host, "writer");
    let a = article(
        &host,
        "by-writer",
        Some("2012-01-01T00:00:00Z"),
        true,
        Some(&id_of(&author)),
    );
    article(&host, "anonymous", Some("2011-01-01T00:00:00Z"), true, None);
    let r = host.get("/svc/articles", None);
    let list = array(&r, "articles");
    assert_eq!(slugs(&list), ["by-writer", "anonymous"]);
    assert_eq!(list[0]["id"], a["id"]);
    assert_eq!(list[0]["title"], "Article by-writer");
    assert_eq!(list[0]["content"], "body");
    assert!(list[0]["author"].is_object(), "{}", list[0]);
    assert_contains(
        &list[0]["author"],
        &public_user(&host, &id_of(&author)),
        "author",
    );
    assert_eq!(list[1]["author"], Value::Null, "{}", list[1]);
    assert_hidden(&r, &["writer@secret-mail.test", "token-writer"]);
}

/// Past the host's bound on the related records of one answer, the
/// articles read their authors apart, and answer the same.
#[test]
fn articles_past_the_bound_on_related_records_expand_the_same() {
    let host = Host::start_svc_with(&[("MAX_RELATED_RECORDS", "1")]);
    let author = model(&host, "writer");
    for (slug, date) in [
        ("one", "2012-01-01T00:00:00Z"),
        ("two", "2011-01-01T00:00:00Z"),
    ] {
        article(&host, slug, Some(date), true, Some(&id_of(&author)));
    }
    article(&host, "anonymous", Some("2010-01-01T00:00:00Z"), true, None);
    let r = host.get("/svc/articles", None);
    let list = array(&r, "articles");
    assert_eq!(slugs(&list), ["one", "two", "anonymous"]);
    for shown in &list[..2] {
        assert_contains(
            &shown["author"],
            &public_user(&host, &id_of(&author)),
            "author",
        );
    }
    assert_eq!(list[2]["author"], Value::Null, "{}", list[2]);
    assert_hidden(&r, &["writer@secret-mail.test", "token-writer"]);
    // The bound holds: the generic read of the same relation is refused.
    let r = host.get("/items/articles?fields=*,author.*", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 400, "{}", r.body);
}

#[test]
fn iso_helper_formats_known_instants() {
    assert_eq!(iso_at(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(iso_at(978_307_200), "2001-01-01T00:00:00.000Z");
    assert_eq!(iso_at(1_709_337_599), "2024-03-01T23:59:59.000Z");
    assert_eq!(iso_at(951_782_400), "2000-02-29T00:00:00.000Z");
}

/// A model's videos read their own links and counts, however many: the
/// rest of the catalogue's links and plays are never read (a model with
/// hundreds of videos among many more used to read every link).
#[test]
fn a_models_videos_read_only_their_own_links() {
    let host = Host::in_process_svc();
    let (ours, theirs) = (model(&host, "many-videos"), model(&host, "other-videos"));
    let videos = |prefix: &str, n: usize| -> Vec<String> {
        let rows: Vec<Value> = (0..n)
            .map(|i| json!({"slug": format!("{prefix}-{i}"), "title": format!("T {i}"), "upload_date": from_now(-3600)}))
            .collect();
        host.admin_create_many("videos", &rows)
            .iter()
            .map(|v| v["id"].as_str().expect("video id").to_string())
            .collect()
    };
    let link = |videos: &[String], model: &Value| {
        let rows: Vec<Value> = videos
            .iter()
            .map(|v| json!({"videos_id": v, "platform_users_id": model["id"]}))
            .collect();
        host.admin_create_many("videos_models", &rows);
    };
    let (our_videos, their_videos) = (videos("ours", 300), videos("theirs", 1200));
    link(&our_videos, &ours);
    link(&their_videos, &theirs);
    let path = format!(
        "/svc/videos?model_id={}",
        ours["id"].as_str().expect("model id")
    );
    let before = host.metric("database_rows_read");
    let r = host.get(&path, None);
    let read = host.metric("database_rows_read") - before;
    assert_eq!(array(&r, "videos").len(), 300);
    assert!(
        read < their_videos.len() as u64,
        "{read} rows read for a model's 300 videos beside 1,200 others"
    );
}
