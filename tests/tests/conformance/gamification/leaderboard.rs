use super::*;

// ---------------------------------------------------------------- leaderboard

fn leaderboard(host: &Host, query: &str) -> Vec<Value> {
    let r = host.get(&format!("/svc/gamification/leaderboard{query}"), None);
    assert_eq!(r.status, 200, "{query}: {}", r.body);
    r.json()["data"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("{query}: no data array: {}", r.body))
}

#[test]
fn leaderboard_orders_ranks_pages_and_clamps() {
    let host = Host::in_process_svc();
    let ids = ranked_users(&host, 520, 10);
    // Best first: user 519 (imported 5200) .. user 0 (10).
    let order: Vec<String> = ids.iter().rev().cloned().collect();
    let users_of = |items: &[Value]| -> Vec<String> {
        items
            .iter()
            .map(|i| i["user_id"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let ranks_of = |items: &[Value]| -> Vec<i64> {
        items
            .iter()
            .map(|i| i["rank"].as_i64().unwrap_or(-1))
            .collect()
    };

    let default = leaderboard(&host, "");
    assert_eq!(default.len(), 100);
    assert_eq!(users_of(&default), order[..100].to_vec());
    assert_eq!(ranks_of(&default), (1..=100).collect::<Vec<_>>());
    for q in [
        "?limit=abc",
        "?limit=0",
        "?limit=-3",
        "?limit=1.5",
        "?offset=abc",
        "?offset=-2",
    ] {
        let items = leaderboard(&host, q);
        assert_eq!(users_of(&items), order[..100].to_vec(), "{q}");
        assert_eq!(ranks_of(&items), (1..=100).collect::<Vec<_>>(), "{q}");
    }
    let max = leaderboard(&host, "?limit=500");
    assert_eq!(max.len(), 500);
    assert_eq!(users_of(&max), order[..500].to_vec());
    let clamped = leaderboard(&host, "?limit=1000");
    assert_eq!(clamped.len(), 500, "limit clamped to 500");
    assert_eq!(users_of(&clamped), order[..500].to_vec());
    let weights: Vec<f64> = max
        .iter()
        .map(|i| i["total_weighted_points"].as_f64().expect("number"))
        .collect();
    assert!(weights.windows(2).all(|w| w[0] >= w[1]), "descending");

    let page = leaderboard(&host, "?limit=5&offset=7");
    assert_eq!(users_of(&page), order[7..12].to_vec());
    assert_eq!(ranks_of(&page), vec![8, 9, 10, 11, 12]);
    let tail = leaderboard(&host, "?offset=510");
    assert_eq!(users_of(&tail), order[510..].to_vec());
    assert_eq!(ranks_of(&tail), (511..=520).collect::<Vec<_>>());
    let tail = leaderboard(&host, "?offset=510&limit=1000");
    assert_eq!(tail.len(), 10);
    assert!(leaderboard(&host, "?offset=520").is_empty());

    // Item values: user i has 10 (i + 1) imported + comment 5 + first_comment 25.
    for item in page.iter().chain(tail.iter()) {
        let i = ids
            .iter()
            .position(|u| item["user_id"] == json!(u))
            .expect("known user");
        assert_eq!(item["total_raw_points"], 10 * (i as i64 + 1) + 30, "{item}");
        assert_eq!(item["display_name"], format!("Artist {i}"), "{item}");
        assert_eq!(item["achievements_count"], 1, "{item}");
        assert_eq!(item["recordings_count"], 0, "{item}");
        assert_eq!(item["playbacks_count"], 0, "{item}");
    }
    // The user endpoint's rank agrees.
    assert_eq!(stats(&host, &order[0])["rank"], 1);
    assert_eq!(stats(&host, &order[11])["rank"], 12);
    assert_eq!(stats(&host, &order[519])["rank"], 520);
}

#[test]
fn leaderboard_items_carry_the_users_profile_and_stats() {
    let host = Host::in_process_svc();
    let avatar = host.admin_create(
        "platform_files",
        &json!({"title": "av", "filename_disk": "av.jpg", "filename_download": "av.jpg",
                "type": "image/jpeg", "filesize": 10}),
    );
    let a = host.user_with(
        Some("Viewer"),
        "lb-a",
        &json!({"artist_name": "Aria", "avatar": avatar["id"]}),
    );
    let b = viewer(&host, "lb-b");
    let rec = create_recording(&host, "lb-a", Some("published"));
    set_featured(&host, &rec, true);
    host.play_recording(&rec, Some("lb-b"));
    let r = host.get("/svc/gamification/leaderboard", None);
    assert!(!r.body.contains("@test.local"), "no email: {}", r.body);
    let items = leaderboard(&host, "");
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0]["user_id"], json!(a));
    assert_eq!(items[1]["user_id"], json!(b));
    for item in &items {
        let keys = keys_of(item);
        for k in [
            "user_id",
            "display_name",
            "avatar",
            "total_weighted_points",
            "total_raw_points",
            "recordings_count",
            "playbacks_count",
            "achievements_count",
            "rank",
        ] {
            assert!(keys.contains(k), "{k} missing: {item}");
        }
        for k in ["email", "password", "token"] {
            assert!(!keys.contains(k), "{k} present: {item}");
        }
        let user = item["user_id"].as_str().expect("user_id");
        let s = stats(&host, user);
        for k in [
            "total_raw_points",
            "recordings_count",
            "playbacks_count",
            "achievements_count",
            "rank",
        ] {
            assert_eq!(item[k], s[k], "{k}: {item} vs {s}");
        }
    }
    assert_eq!(items[0]["display_name"], "Aria");
    let av = &items[0]["avatar"];
    let av_id = if av.is_object() { &av["id"] } else { av };
    assert_eq!(*av_id, avatar["id"], "{av}");
    assert!(items[1]["display_name"].is_null(), "{}", items[1]);
    assert!(items[1]["avatar"].is_null(), "{}", items[1]);
    assert_eq!(items[0]["rank"], 1);
    assert_eq!(items[1]["rank"], 2);
}

/// Every row of the leaderboard shows its user's `artist_name` and
/// `avatar` as they are now (read as admin from `/users`).
fn assert_shows_current_users(host: &Host, what: &str) -> Vec<Value> {
    let items = leaderboard(host, "?limit=500");
    for item in &items {
        let id = item["user_id"].as_str().expect("user_id");
        let r = host.get(&format!("/users/{id}"), Some(ADMIN_TOKEN));
        assert_eq!(r.status, 200, "{what}: user {id}: {}", r.body);
        let user = &r.json()["data"];
        assert_eq!(item["display_name"], user["artist_name"], "{what}: {item}");
        assert_eq!(item["avatar"], user["avatar"], "{what}: {item}");
    }
    items
}

/// The stats row of `user`, read as admin.
fn stats_row(host: &Host, user: &str) -> Value {
    let rows = host.admin_find("user_stats", &json!({"user_id": {"_eq": user}}));
    assert_eq!(rows.len(), 1, "one stats row of {user}: {rows:?}");
    rows[0].clone()
}

#[test]
fn leaderboard_shows_each_user_as_they_are_whatever_path_changed_them() {
    let host = Host::in_process_svc();
    let file = |name: &str| {
        host.admin_create(
            "platform_files",
            &json!({"title": name, "filename_disk": format!("{name}.jpg"),
                    "filename_download": format!("{name}.jpg"), "type": "image/jpeg",
                    "filesize": 10}),
        )["id"]
            .as_str()
            .expect("file id")
            .to_string()
    };
    let (first, second) = (file("first"), file("second"));
    let a = host.user_with(
        Some("Viewer"),
        "shown-a",
        &json!({"artist_name": "Aria", "avatar": first}),
    );
    let b = host.user_with(Some("Viewer"), "shown-b", &json!({"artist_name": "Bo"}));
    let rec = create_recording(&host, "shown-a", Some("published"));
    set_featured(&host, &rec, true);
    host.play_recording(&rec, Some("shown-b"));
    let items = assert_shows_current_users(&host, "at first");
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(
        stats_row(&host, &a)["user_copied"],
        true,
        "a new row is copied"
    );

    // An administrator renames a user through the users API.
    let r = host.patch(
        &format!("/users/{a}"),
        Some(ADMIN_TOKEN),
        &json!({"artist_name": "Aria Two"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_shows_current_users(&host, "after an administrator's rename");

    // A user changes their own name and avatar.
    let r = host.patch(
        "/users/me",
        Some("shown-b"),
        &json!({"artist_name": "Bo Two", "avatar": second}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_shows_current_users(&host, "after a user's own change");

    // Deleting a file clears the avatars that named it.
    let r = host.delete(&format!("/files/{first}"), Some(ADMIN_TOKEN));
    assert_eq!(r.status, 204, "{}", r.body);
    let items = assert_shows_current_users(&host, "after the avatar's file is deleted");
    assert!(
        items.iter().all(|i| i["avatar"] != json!(first)),
        "{items:?}"
    );

    // Copies written by hand are not taken for the user's, whatever the
    // write claims; the next page copies the user again.
    let row = stats_row(&host, &a);
    let row_id = row["id"].as_str().expect("row id");
    host.admin_patch(
        "user_stats",
        row_id,
        &json!({"display_name": "Forged", "avatar": second, "user_copied": true}),
    );
    assert_eq!(
        stats_row(&host, &a)["user_copied"],
        false,
        "a write by hand"
    );
    assert_shows_current_users(&host, "after copies written by hand");
    let row = stats_row(&host, &a);
    assert_eq!(row["user_copied"], true, "copied again by the page: {row}");
    assert_eq!(row["display_name"], "Aria Two", "{row}");

    // A row whose copies are not known (a row of an earlier release) shows
    // its user read apart.
    host.admin_patch("user_stats", row_id, &json!({"user_copied": false}));
    host.patch(
        &format!("/users/{a}"),
        Some(ADMIN_TOKEN),
        &json!({"artist_name": "Aria Three"}),
    );
    assert_shows_current_users(&host, "a row not copied");

    // A deleted user's row goes with them.
    let r = host.delete(&format!("/users/{b}"), Some(ADMIN_TOKEN));
    assert_eq!(r.status, 204, "{}", r.body);
    let items = assert_shows_current_users(&host, "after a user's delete");
    assert_eq!(items.len(), 1, "{items:?}");
}
