use super::*;

// ---------------------------------------------------------------- community

fn community_fixture(host: &Host) -> (String, String) {
    let a = host.user(Some("Model"), "maker-a");
    let b = host.user(Some("Viewer"), "maker-b");
    let mut items = Vec::new();
    for k in 0..55 {
        let i = (k * 17) % 55;
        let owner = if i % 2 == 0 { &a } else { &b };
        let mut r = owned(&format!("rec-{i:02}"), owner, &minute(i + 10));
        r["status"] = json!("published");
        r["public"] = json!(true);
        r["description"] = json!(format!("desc {i}"));
        r["tags"] = json!([format!("t{i}")]);
        items.push(r);
    }
    // Newer than all the shared ones, but not published + public.
    for (title, status, public) in [
        ("draft-public", "draft", true),
        ("published-private", "published", false),
        ("archived-public", "archived", true),
        ("draft-private", "draft", false),
    ] {
        let mut r = owned(title, &a, "2026-06-01T00:00:00.000Z");
        r["status"] = json!(status);
        r["public"] = json!(public);
        items.push(r);
    }
    admin_recordings(host, items);
    (a, b)
}

#[test]
fn community_lists_only_published_public_newest_first_with_defaults() {
    let host = Host::in_process_svc();
    community_fixture(&host);
    assert_eq!(titles(&community(&host, "")), newest_first(5..55));
    assert_eq!(titles(&community(&host, "?offset=50")), newest_first(0..5));
    assert_eq!(
        titles(&community(&host, "?limit=1000")),
        newest_first(0..55)
    );
    assert_eq!(
        titles(&community(&host, "?limit=10&offset=20")),
        newest_first(25..35)
    );
    assert_eq!(
        titles(&community(&host, "?offset=55")),
        Vec::<String>::new()
    );
    // Works with a valid token too.
    host.user(Some("Viewer"), "someone");
    let r = host.get("/svc/community-recordings?limit=2", Some("someone"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(titles(&r.json()["data"]), newest_first(53..55));
}

#[test]
fn community_invalid_limit_and_offset_fall_back_to_defaults() {
    let host = Host::in_process_svc();
    community_fixture(&host);
    for q in [
        "?limit=abc",
        "?limit=-1",
        "?limit=0",
        "?offset=-3",
        "?offset=abc",
        "?offset=1.5",
    ] {
        assert_eq!(titles(&community(&host, q)), newest_first(5..55), "{q}");
    }
}

#[test]
fn community_items_have_exactly_the_public_fields() {
    let host = Host::in_process_svc();
    let (a, b) = community_fixture(&host);
    let avatar = host.admin_create(
        "platform_files",
        &json!({"storage": "local", "filename_disk": "a.png", "filename_download": "a.png", "type": "image/png"}),
    )["id"]
        .clone();
    let r = host.patch(
        &format!("/items/platform_users/{a}"),
        Some(ADMIN_TOKEN),
        &json!({"avatar": avatar, "first_name": "Ada", "last_name": "Lovelace"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let data = community(&host, "?limit=1000");
    let expected_keys: BTreeSet<&str> = [
        "id",
        "title",
        "description",
        "slug",
        "duration",
        "tags",
        "date_created",
        "user_created",
    ]
    .into_iter()
    .collect();
    for item in data.as_array().expect("array") {
        assert_eq!(keys_of(item), expected_keys, "{item}");
        let i: usize = item["title"].as_str().expect("title")[4..]
            .parse()
            .expect("index");
        assert_eq!(item["description"], json!(format!("desc {i}")));
        assert_eq!(item["slug"], json!(format!("rec-{i:02}")));
        assert_eq!(item["tags"], json!([format!("t{i}")]));
        assert_eq!(item["duration"].as_f64(), Some(1500.5));
        assert_eq!(ts_ms(&item["date_created"]), ts_ms(&json!(minute(i + 10))));
        let user = &item["user_created"];
        let user_keys = BTreeSet::from(["avatar", "first_name", "id", "last_name"]);
        assert!(user.is_object(), "user_created not expanded: {item}");
        assert_eq!(keys_of(user), user_keys, "{user}");
        if i % 2 == 0 {
            assert_eq!(
                user,
                &json!({"id": a, "first_name": "Ada", "last_name": "Lovelace", "avatar": avatar})
            );
        } else {
            assert_eq!(
                user,
                &json!({"id": b, "first_name": "Test", "last_name": "maker-b", "avatar": null})
            );
        }
    }
    assert!(!host
        .get("/svc/community-recordings", None)
        .body
        .contains("@test.local"));
}
