//! `/comments` as Directus 11 serves it: lists with the query parameters
//! and `aggregate`, one comment, and a comment's creation, change and
//! deletion by its author (any, by an administrator). A comment is seen by
//! whoever may read the collection it is on; it is made on an item that
//! exists and that its author may read; the hooks on comments run
//! whatever the path.

use platform_tests::{encode, id_of, rec_body, str_of, Host, Resp, ADMIN_TOKEN};
use serde_json::{json, Value};

/// A host with two viewers (`cv-a`, `cv-b`), a public recording of
/// `cv-a`'s and a private one; (host, a, b, public, private).
fn setup() -> (Host, String, String, String, String) {
    let host = Host::in_process_svc();
    let a = host.user(Some("Viewer"), "cv-a");
    let b = host.user(Some("Viewer"), "cv-b");
    let recording = |public: bool| {
        let mut body = rec_body("Wave", Some("published"));
        body["public"] = json!(public);
        let r = host.post("/svc/recordings", Some("cv-a"), &body);
        assert_eq!(r.status, 201, "{}", r.body);
        let id = str_of(&r.json()["id"]);
        host.admin_patch("recordings", &id, &json!({"public": public}));
        id
    };
    let public = recording(true);
    let private = recording(false);
    (host, a, b, public, private)
}

fn comment(host: &Host, token: &str, item: &str, text: &str) -> Resp {
    host.post(
        "/comments",
        Some(token),
        &json!({"collection": "recordings", "item": item, "comment": text}),
    )
}

#[test]
fn a_member_comments_on_an_item_they_may_read_and_the_hooks_run() {
    let (host, a, b, public, private) = setup();
    let r = comment(&host, "cv-b", &public, "nice");
    assert_eq!(r.status, 200, "{}", r.body);
    let created = r.json()["data"].clone();
    assert_eq!(created["user_created"], json!(b), "{created}");
    assert_eq!(created["collection"], "recordings");
    assert_eq!(created["item"], json!(public));
    assert_eq!(created["comment"], "nice");
    assert!(created["date_created"].is_string(), "{created}");

    // The svc extension's hook on comments ran: COMMENT_CREATE for b.
    let points = host.admin_find(
        "user_points",
        &json!({"user_id": b, "action": "COMMENT_CREATE"}),
    );
    assert_eq!(points.len(), 1, "{points:?}");

    // An item they may not read, a missing one, a collection that does
    // not exist: forbidden, as Directus answers.
    for (collection, item) in [
        ("recordings", private.as_str()),
        ("recordings", "00000000-0000-4000-8000-00000000dead"),
        ("no_such_collection", public.as_str()),
        ("videos", public.as_str()),
    ] {
        let r = host.post(
            "/comments",
            Some("cv-b"),
            &json!({"collection": collection, "item": item, "comment": "x"}),
        );
        assert_eq!(r.status, 403, "{collection}/{item}: {}", r.body);
        assert_eq!(r.error_code(), "FORBIDDEN");
    }
    // Its owner may comment on the private one.
    assert_eq!(comment(&host, "cv-a", &private, "mine").status, 200);
    let _ = a;

    // Missing members: 400, Directus's words.
    for (body, missing) in [
        (
            json!({"collection": "recordings", "item": public}),
            "comment",
        ),
        (json!({"item": public, "comment": "x"}), "collection"),
        (json!({"collection": "recordings", "comment": "x"}), "item"),
    ] {
        let r = host.post("/comments", Some("cv-b"), &body);
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(r.error_code(), "INVALID_PAYLOAD");
        assert_eq!(
            r.json()["errors"][0]["message"],
            format!("Invalid payload. \"{missing}\" is required.")
        );
    }
    // Anonymous callers may not comment; a bad token is 401.
    assert_eq!(comment(&host, "no-such-token", &public, "x").status, 401);
    let r = host.post(
        "/comments",
        None,
        &json!({"collection": "recordings", "item": public, "comment": "x"}),
    );
    assert_eq!(r.status, 403, "{}", r.body);
}

#[test]
fn lists_take_the_query_parameters_and_aggregates_in_one_shape() {
    let (host, a, b, public, _) = setup();
    for (token, text) in [("cv-a", "one"), ("cv-b", "two"), ("cv-b", "three")] {
        assert_eq!(comment(&host, token, &public, text).status, 200);
    }
    // Shorthand filters, sort, limit, fields.
    let filter = encode(&json!({"collection": "recordings", "item": public}).to_string());
    let r = host.get(
        &format!("/comments?filter={filter}&sort=-comment&fields=comment,user_created&limit=2"),
        Some("cv-a"),
    );
    let list = r.data_list();
    assert_eq!(
        list,
        vec![
            json!({"comment": "two", "user_created": b}),
            json!({"comment": "three", "user_created": b}),
        ]
    );
    let r = host.get(
        &format!("/comments?filter={filter}&sort=comment&page=2&limit=2&fields=comment"),
        Some("cv-a"),
    );
    assert_eq!(r.data_list(), vec![json!({"comment": "two"})]);
    // Bracketed filter shorthand, as a query string builder writes it.
    let r = host.get(
        &format!("/comments?filter[user_created]={a}&fields=comment"),
        Some("cv-b"),
    );
    assert_eq!(r.data_list(), vec![json!({"comment": "one"})]);

    // aggregate[count]=*, filtered.
    let by_b = encode(&json!({"user_created": b}).to_string());
    let r = host.get(
        &format!("/comments?aggregate[count]=*&filter={by_b}"),
        Some("cv-a"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let count = &r.json()["data"][0]["count"];
    assert!(count == &json!(2) || count == &json!("2"), "{}", r.body);
    // The same through /items, for a member.
    let r = host.get(
        &format!("/items/platform_comments?aggregate[count]=*&filter={by_b}"),
        Some("cv-a"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let count = &r.json()["data"][0]["count"];
    assert!(count == &json!(2) || count == &json!("2"), "{}", r.body);

    // One comment.
    let id = id_of(
        &host
            .get(&format!("/comments?filter={by_b}&limit=1"), Some("cv-a"))
            .data_list()[0],
    );
    let r = host.get(&format!("/comments/{id}"), Some("cv-a"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["id"], json!(id));
    // A missing comment: 403, to administrators too, as Directus answers.
    let missing = "00000000-0000-4000-8000-00000000beef";
    for token in ["cv-a", ADMIN_TOKEN] {
        let r = host.get(&format!("/comments/{missing}"), Some(token));
        assert_eq!(r.status, 403, "{}", r.body);
        assert_eq!(r.error_code(), "FORBIDDEN");
    }
    let r = host.patch(
        &format!("/comments/{missing}"),
        Some(ADMIN_TOKEN),
        &json!({"comment": "x"}),
    );
    assert_eq!(r.status, 403, "{}", r.body);
}

#[test]
fn comments_are_seen_on_the_collections_the_caller_may_read() {
    let (host, _, _, public, _) = setup();
    assert_eq!(
        comment(&host, "cv-b", &public, "on a recording").status,
        200
    );
    let video = id_of(&host.admin_video("commented", None));
    let r = host.post(
        "/comments",
        Some(ADMIN_TOKEN),
        &json!({"collection": "videos", "item": video, "comment": "on a video"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let video_comment = id_of(&r.json()["data"]);
    let texts = |token: Option<&str>| -> Vec<String> {
        host.get("/comments?fields=comment&sort=comment", token)
            .data_list()
            .iter()
            .map(|c| str_of(&c["comment"]))
            .collect()
    };
    // Members read recordings, not videos; anonymous callers neither.
    assert_eq!(texts(Some("cv-a")), vec!["on a recording"]);
    assert_eq!(
        texts(Some(ADMIN_TOKEN)),
        vec!["on a recording", "on a video"]
    );
    assert!(texts(None).is_empty());
    let r = host.get(&format!("/comments/{video_comment}"), Some("cv-a"));
    assert_eq!(r.status, 403, "{}", r.body);
    // /items agrees for members.
    let r = host.get("/items/platform_comments?fields=comment", Some("cv-a"));
    assert_eq!(r.data_list(), vec![json!({"comment": "on a recording"})]);
    // Once the public may read recordings, anonymous callers see their
    // comments.
    host.grant("Public", "recordings", json!({"action": "read"}));
    assert_eq!(texts(None), vec!["on a recording"]);
    // Related fields are read under the caller's permissions: members may
    // not read users.
    let r = host.get(
        "/comments?fields=comment,user_created.first_name",
        Some("cv-a"),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let r = host.get(
        "/comments?fields=comment,user_created.id",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn authors_change_and_delete_their_own_comments_administrators_any() {
    let (host, _, _, public, _) = setup();
    let r = comment(&host, "cv-b", &public, "first");
    let id = id_of(&r.json()["data"]);
    // Another member may neither change nor delete it.
    let r = host.patch(
        &format!("/comments/{id}"),
        Some("cv-a"),
        &json!({"comment": "x"}),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(
        host.delete(&format!("/comments/{id}"), Some("cv-a")).status,
        403
    );
    assert_eq!(host.delete(&format!("/comments/{id}"), None).status, 403);
    // Its author changes its text, and nothing else.
    let r = host.patch(
        &format!("/comments/{id}"),
        Some("cv-b"),
        &json!({"comment": "edited"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["comment"], "edited");
    let r = host.patch(
        &format!("/comments/{id}"),
        Some("cv-b"),
        &json!({"item": "elsewhere"}),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    // An administrator changes anyone's.
    let r = host.patch(
        &format!("/comments/{id}?fields=comment"),
        Some(ADMIN_TOKEN),
        &json!({"comment": "moderated"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"], json!({"comment": "moderated"}));
    // Its author deletes it; then it is gone.
    assert_eq!(
        host.delete(&format!("/comments/{id}"), Some("cv-b")).status,
        204
    );
    assert_eq!(
        host.get(&format!("/comments/{id}"), Some(ADMIN_TOKEN))
            .status,
        403
    );
    assert_eq!(
        host.admin_count("platform_comments", Some(&json!({"id": id}))),
        0
    );
    // An administrator deletes anyone's.
    let id = id_of(&comment(&host, "cv-a", &public, "second").json()["data"]);
    let r = host.delete(&format!("/comments/{id}"), Some(ADMIN_TOKEN));
    assert_eq!(r.status, 204, "{}", r.body);
}

/// The comments of a list or aggregate answer, as JSON values.
fn read_as(host: &Host, path: &str, token: &str) -> Vec<Value> {
    host.get(path, Some(token)).data_list()
}

#[test]
fn comments_follow_the_row_rule_of_their_item_on_every_path() {
    let (host, _, _, public, private) = setup();
    assert_eq!(comment(&host, "cv-a", &private, "secret").status, 200);
    assert_eq!(comment(&host, "cv-a", &public, "open").status, 200);
    let secret = id_of(&host.admin_find("platform_comments", &json!({"comment": "secret"}))[0]);
    // `cv-b` reads recordings, but not `cv-a`'s private one: nor its
    // comment, through either path; its owner sees both.
    for path in [
        "/comments?fields=comment,item&sort=comment",
        "/items/platform_comments?fields=comment,item&sort=comment",
    ] {
        assert_eq!(
            read_as(&host, path, "cv-b"),
            vec![json!({"comment": "open", "item": public})],
            "{path}"
        );
        assert_eq!(read_as(&host, path, "cv-a").len(), 2, "{path}");
    }
    // Nor in an aggregate grouped by item.
    for path in [
        "/comments?aggregate[count]=*&groupBy[]=item",
        "/items/platform_comments?aggregate[count]=*&groupBy[]=item",
    ] {
        let groups = read_as(&host, path, "cv-b");
        assert_eq!(groups.len(), 1, "{path}: {groups:?}");
        assert_eq!(groups[0]["item"], json!(public), "{path}");
        assert_eq!(read_as(&host, path, "cv-a").len(), 2, "{path}");
    }
    for path in [
        format!("/comments/{secret}"),
        format!("/items/platform_comments/{secret}"),
    ] {
        let r = host.get(&path, Some("cv-b"));
        assert_eq!(r.status, 403, "{path}: {}", r.body);
        assert_eq!(host.get(&path, Some("cv-a")).status, 200, "{path}");
    }
    // Once the recording is public, its comment is seen.
    host.admin_patch("recordings", &private, &json!({"public": true}));
    assert_eq!(read_as(&host, "/comments?fields=comment", "cv-b").len(), 2);
}

#[test]
fn items_writes_of_comments_are_held_to_the_rules_of_comments() {
    let (host, _, _, public, private) = setup();
    let write = |token: &str, collection: &str, item: &str, text: &str| {
        host.post(
            "/items/platform_comments",
            Some(token),
            &json!({"collection": collection, "item": item, "comment": text}),
        )
    };
    // A private item of another member's, a missing one, a collection the
    // member may not read or that does not exist: forbidden, as on
    // `/comments`.
    for (collection, item) in [
        ("recordings", private.as_str()),
        ("recordings", "00000000-0000-4000-8000-00000000dead"),
        ("videos", public.as_str()),
        ("no_such_collection", public.as_str()),
    ] {
        let r = write("cv-b", collection, item, "x");
        assert_eq!(r.status, 403, "{collection}/{item}: {}", r.body);
        assert_eq!(r.error_code(), "FORBIDDEN");
    }
    // A missing item or a collection no API serves, to an administrator.
    for (collection, item) in [
        ("recordings", "00000000-0000-4000-8000-00000000dead"),
        ("platform_signing_keys", "1"),
    ] {
        let r = write(ADMIN_TOKEN, collection, item, "x");
        assert_eq!(r.status, 403, "{collection}/{item}: {}", r.body);
    }
    assert_eq!(write("cv-b", "recordings", &public, "fine").status, 200);
    // Nor may a comment be moved onto such an item.
    let fine = id_of(&host.admin_find("platform_comments", &json!({"comment": "fine"}))[0]);
    let r = host.patch(
        &format!("/items/platform_comments/{fine}"),
        Some(ADMIN_TOKEN),
        &json!({"item": "00000000-0000-4000-8000-00000000dead"}),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(
        host.admin_count("platform_comments", Some(&json!({"item": public}))),
        1
    );

    // A comment's length is bounded on both paths.
    let longest = "x".repeat(10_000);
    let too_long = "x".repeat(10_001);
    assert_eq!(write("cv-b", "recordings", &public, &longest).status, 200);
    assert_eq!(comment(&host, "cv-b", &public, &longest).status, 200);
    let message = "\"comment\" is too long (10001 characters; at most 10000)";
    let refused = |r: Resp| {
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(r.error_code(), "INVALID_PAYLOAD");
        assert_eq!(r.json()["errors"][0]["message"], message, "{}", r.body);
    };
    refused(write("cv-b", "recordings", &public, &too_long));
    refused(comment(&host, "cv-b", &public, &too_long));
    refused(host.patch(
        &format!("/comments/{fine}"),
        Some("cv-b"),
        &json!({"comment": too_long}),
    ));
}
