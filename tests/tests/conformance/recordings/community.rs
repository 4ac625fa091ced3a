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
    items_have_exactly_the_public_fields(&Host::in_process_svc());
}

/// Past the host's bound on the related records of one answer, the page
/// reads its owners apart, and answers the same.
#[test]
fn community_past_the_bound_on_related_records_answers_the_same() {
    let host = Host::start_svc_with(&[("MAX_RELATED_RECORDS", "1")]);
    items_have_exactly_the_public_fields(&host);
    // The bound holds: the generic read of the same relation is refused.
    let r = host.get(
        "/items/recordings?fields=id,user_created.id&limit=-1",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 400, "{}", r.body);
}

fn items_have_exactly_the_public_fields(host: &Host) {
    let (a, b) = community_fixture(host);
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
    let data = community(host, "?limit=1000");
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

// ------------------------------------------------------------ deep pages

/// The listed recordings' ids in the list's order: newest first (no date
/// last), then by id.
fn listed_order(host: &Host) -> Vec<String> {
    let filter = json!({"_and": [{"status": {"_eq": "published"}}, {"public": {"_eq": true}}]});
    let mut rows: Vec<(Option<i64>, String)> = host
        .admin_find("recordings", &filter)
        .iter()
        .map(|r| {
            let date = Some(&r["date_created"]).filter(|d| !d.is_null()).map(ts_ms);
            (date, r["id"].as_str().expect("id").to_string())
        })
        .collect();
    rows.sort_by(|a, b| b.cmp(a));
    rows.into_iter().map(|(_, id)| id).collect()
}

/// Pages at offsets around and past the point where pages start from the
/// position tree hold the rows of the whole list's order.
fn check_deep_pages(host: &Host, step: usize) {
    let order = listed_order(host);
    let n = order.len();
    let from_end = |k: usize| n.saturating_sub(k);
    for offset in [
        0,
        998,
        999,
        1000,
        1001,
        1037,
        from_end(20),
        from_end(7),
        n,
        n + 3,
    ] {
        let page = community(host, &format!("?limit=40&offset={offset}"));
        let served: Vec<&str> = page
            .as_array()
            .expect("a page")
            .iter()
            .filter_map(|r| r["id"].as_str())
            .collect();
        let expected: Vec<&str> = order
            .iter()
            .skip(offset)
            .take(40)
            .map(String::as_str)
            .collect();
        assert_eq!(
            served, expected,
            "step {step}: the page at offset {offset} of {n}"
        );
    }
}

/// A creation date from a small pool: ties are common, and some dates lie
/// before 1970 or past what the tree's keys hold (2109).
fn a_date(rng: &mut Rng) -> String {
    match rng.below(8) {
        0 => "1969-07-20T20:17:40.000Z".to_string(),
        1 => "2150-01-01T00:00:00.000Z".to_string(),
        2 => format!(
            "2025-03-0{}T10:00:00.{:03}Z",
            1 + rng.below(3),
            rng.below(1000)
        ),
        _ => minute(rng.below(30)),
    }
}

/// Property: deep pages of the community list (from the position tree)
/// equal the list's order after creates, status and visibility changes,
/// date changes and deletes, whatever path made them.
#[test]
fn deep_community_pages_follow_every_write() {
    let host = Host::in_process_svc();
    let owner = host.user(Some("Model"), "deep-owner");
    let mut rng = Rng(1106);
    let listed = |i: usize| i % 8 != 0;
    for chunk in 0..5 {
        let items: Vec<Value> = (0..260)
            .map(|k| {
                let i = chunk * 260 + k;
                let mut r = owned(&format!("deep-{i:04}"), &owner, &a_date(&mut rng));
                r["status"] = json!(if listed(i) || i % 16 == 0 {
                    "published"
                } else {
                    "draft"
                });
                r["public"] = json!(listed(i));
                r
            })
            .collect();
        admin_recordings(&host, items);
    }
    check_deep_pages(&host, 0);
    let ids: Vec<String> = host
        .admin_all("recordings", "id")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_string())
        .collect();
    // Some without a date, more than the last page's few rows: a page can
    // start among them, or reach them from the dated ones.
    for id in ids.iter().step_by(97) {
        host.admin_patch("recordings", id, &json!({"date_created": null}));
    }
    let undated = json!({"date_created": {"_null": true}});
    assert_eq!(host.admin_count("recordings", Some(&undated)), 14);
    check_deep_pages(&host, 0);
    let mut gone = BTreeSet::new();
    for step in 1..=60 {
        let id = &ids[rng.below(ids.len())];
        if gone.contains(id) {
            continue;
        }
        match rng.below(6) {
            0 => host.admin_patch("recordings", id, &json!({"status": "draft"})),
            1 => host.admin_patch(
                "recordings",
                id,
                &json!({"status": "published", "public": true}),
            ),
            2 => host.admin_patch("recordings", id, &json!({"public": rng.below(2) == 0})),
            3 => host.admin_patch("recordings", id, &json!({"date_created": a_date(&mut rng)})),
            // Without a date: last in the list's order.
            4 if rng.below(2) == 0 => {
                host.admin_patch("recordings", id, &json!({"date_created": null}))
            }
            4 => {
                host.admin_delete("recordings", id);
                gone.insert(id.clone());
            }
            _ => {
                let mut r = owned(&format!("deep-new-{step}"), &owner, &a_date(&mut rng));
                r["status"] = json!("published");
                r["public"] = json!(true);
                admin_recordings(&host, vec![r]);
            }
        }
        if step % 15 == 0 {
            check_deep_pages(&host, step);
        }
    }
}

/// A tree that does not count every listed recording (recordings that
/// predate it, nodes written behind the service's back) and is not marked
/// counted is counted again by the first deep page asked for.
#[test]
fn a_community_tree_that_does_not_add_up_is_counted_again() {
    let host = Host::in_process_svc();
    let owner = host.user(Some("Model"), "recount-owner");
    let items: Vec<Value> = (0..1100)
        .map(|i| {
            let mut r = owned(&format!("recount-{i:04}"), &owner, &minute(i % 90));
            r["status"] = json!("published");
            r["public"] = json!(true);
            r
        })
        .collect();
    for chunk in items.chunks(275) {
        admin_recordings(&host, chunk.to_vec());
    }
    count_trees::spoil(
        &host,
        "community_recording_counts",
        "recordings",
        "community_counted",
    );
    check_deep_pages(&host, 0);
    assert_eq!(
        count_trees::counted(&host, "community_counted"),
        json!(true)
    );
}
