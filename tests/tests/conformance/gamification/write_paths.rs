use super::*;

// ------------------------------------------------- every write path (§7)

/// The id of an item created as admin.
fn admin_id(host: &Host, collection: &str, body: &Value) -> String {
    host.admin_create(collection, body)["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id creating {collection}"))
        .to_string()
}

#[test]
fn point_actions_written_through_items_count_in_the_stats() {
    let host = Host::in_process_svc();
    let owner = viewer(&host, "pi-o");
    let p = viewer(&host, "pi-p");
    let rec = create_recording(&host, "pi-o", Some("published"));
    host.play_recording(&rec, Some("pi-p"));
    let earned = stats(&host, &p)["total_raw_points"]
        .as_i64()
        .expect("raw points");
    // An administrator imports old point actions.
    let r = host.post(
        "/items/user_points",
        Some(ADMIN_TOKEN),
        &json!([
            {"user_id": p, "action": "IMPORTED", "points": 40, "date_created": days_ago(400.0)},
            {"user_id": p, "action": "IMPORTED", "points": 25, "date_created": days_ago(30.0)},
            {"user_id": p, "action": "IMPORTED", "points": 3},
        ]),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let ids: Vec<String> = r.json()["data"]
        .as_array()
        .expect("created")
        .iter()
        .map(|a| a["id"].as_str().expect("id").to_string())
        .collect();
    // Counted in the same transaction, before any award.
    assert_stats_follow_rules(&host, &p);
    assert_eq!(stats(&host, &p)["total_raw_points"], earned + 40 + 25 + 3);
    // Changed, deleted, and moved to another user.
    host.admin_patch("user_points", &ids[0], &json!({"points": 7}));
    host.admin_delete("user_points", &ids[1]);
    host.admin_patch("user_points", &ids[2], &json!({"user_id": owner}));
    assert_stats_follow_rules(&host, &p);
    assert_stats_follow_rules(&host, &owner);
    // The next award recomputes from all of them (rule 1, rule 3).
    host.play_recording(&rec, Some("pi-p"));
    assert_stats_follow_rules(&host, &p);
    assert_eq!(stats(&host, &p)["total_raw_points"], earned + 7 + 10);
}

#[test]
fn comments_earn_comment_create_only_on_an_existing_recording() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "ce-u");
    viewer(&host, "ce-o");
    let rec = create_recording(&host, "ce-o", Some("published"));
    // `item` names no recording at all: refused, as every comment on a
    // missing item is, and never rewarded.
    refused_comment(
        &host,
        "ce-u",
        "recordings",
        "00000000-0000-4000-8000-00000000dead",
    );
    assert!(named(&host, &u, "COMMENT_CREATE").is_empty());
    assert!(!unlocked(&user_achs(&host, &u), "first_comment"));
    assert!(stats(&host, &u).is_null(), "{}", stats(&host, &u));
    // An import on the user's behalf, on an existing recording: rewarded.
    let r = host.post(
        "/items/platform_comments",
        Some(ADMIN_TOKEN),
        &json!({"collection": "recordings", "item": rec, "comment": "c", "user_created": u}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(named(&host, &u, "COMMENT_CREATE").len(), 1);
    assert!(unlocked(&user_achs(&host, &u), "first_comment"));
    assert_stats_follow_rules(&host, &u);
    assert_eq!(stats(&host, &u)["comments_count"], 1);
    // And another on the recording.
    comment(&host, "ce-u", "recordings", &rec);
    assert_eq!(named(&host, &u, "COMMENT_CREATE").len(), 2);
    assert_stats_follow_rules(&host, &u);
}

#[test]
fn a_stats_row_written_by_hand_is_put_right_by_the_next_award() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "he-u");
    viewer(&host, "he-o");
    let rec = create_recording(&host, "he-o", Some("published"));
    host.play_recording(&rec, Some("he-u"));
    let row = host.admin_find("user_stats", &json!({"user_id": {"_eq": u}}));
    let junk = json!({"total_raw_points": 1, "total_weighted_points": 99999.0,
                      "recordings_count": 42, "playbacks_count": 42, "comments_count": 42,
                      "achievements_count": 42});
    host.admin_patch("user_stats", row[0]["id"].as_str().expect("id"), &junk);
    // The edit stands until the next award (docs/service-api.md rule 1)…
    assert_eq!(stats(&host, &u)["total_raw_points"], 1);
    // …which recomputes the row from scratch, and keeps it exact after.
    host.play_recording(&rec, Some("he-u"));
    assert_stats_follow_rules(&host, &u);
    host.play_recording(&rec, Some("he-u"));
    assert_stats_follow_rules(&host, &u);
    // A row created by hand for a user without one.
    let w = viewer(&host, "he-w");
    host.admin_create("user_stats", &json!({"user_id": w, "total_raw_points": 7}));
    host.play_recording(&rec, Some("he-w"));
    assert_stats_follow_rules(&host, &w);
    let earned: i64 = actions(&host, &w).iter().map(|a| a.points).sum();
    assert_eq!(stats(&host, &w)["total_raw_points"], earned);
    assert_ne!(earned, 7);
}

#[test]
fn recordings_and_plays_written_through_items_count_in_the_stats() {
    let host = Host::in_process_svc();
    let a = viewer(&host, "rp-a");
    let b = viewer(&host, "rp-b");
    let seed = create_recording(&host, "rp-b", Some("published"));
    host.play_recording(&seed, Some("rp-a"));
    // A member's recording created through /items, published: rewarded once.
    let r = host.post(
        "/items/recordings",
        Some("rp-a"),
        &rec_body("Through items", Some("published")),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let rec = r.json()["data"]["id"].as_str().expect("id").to_string();
    assert_eq!(named(&host, &a, "RECORDING_CREATE").len(), 1);
    host.admin_patch("recordings", &rec, &json!({"status": "draft"}));
    host.admin_patch("recordings", &rec, &json!({"status": "published"}));
    assert_eq!(named(&host, &a, "RECORDING_CREATE").len(), 1);
    // Plays written by an administrator: b's (completed) on a's
    // recording, a's on their own.
    let b_play = admin_id(
        &host,
        "recording_plays",
        &json!({"recording_id": rec, "user_id": b, "completed": true}),
    );
    admin_id(
        &host,
        "recording_plays",
        &json!({"recording_id": rec, "user_id": a}),
    );
    for user in [&a, &b] {
        assert_stats_follow_rules(&host, user);
    }
    // The recording changes owner: a's play is now on another's recording,
    // b's on their own.
    host.admin_patch("recordings", &rec, &json!({"user_created": b}));
    for user in [&a, &b] {
        assert_stats_follow_rules(&host, user);
    }
    // A play moved to another player, then deleted; the recording deleted.
    host.admin_patch("recording_plays", &b_play, &json!({"user_id": a}));
    for user in [&a, &b] {
        assert_stats_follow_rules(&host, user);
    }
    host.admin_delete("recording_plays", &b_play);
    host.admin_delete("recordings", &rec);
    // Awards after all that start from exact rows.
    host.play_recording(&seed, Some("rp-a"));
    let other = create_recording(&host, "rp-a", Some("published"));
    host.play_recording(&other, Some("rp-b"));
    for user in [&a, &b] {
        assert_stats_follow_rules(&host, user);
    }
}
