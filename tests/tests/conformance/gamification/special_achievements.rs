use super::*;

// ---------------------------------------------------------------- special achievements

#[test]
fn early_adopter_unlocks_only_in_the_recalculation_up_to_2025_02_01() {
    let host = Host::in_process_svc();
    let at = host.user_with(
        Some("Viewer"),
        "ea-at",
        &json!({"date_created": "2025-02-01T00:00:00.000Z"}),
    );
    let after = host.user_with(
        Some("Viewer"),
        "ea-after",
        &json!({"date_created": "2025-02-01T00:00:00.001Z"}),
    );
    let early = host.user_with(
        Some("Viewer"),
        "ea-early",
        &json!({"date_created": "2024-06-01T12:00:00.000Z"}),
    );
    let late = viewer(&host, "ea-now");
    for t in ["ea-at", "ea-after", "ea-early", "ea-now"] {
        create_recording(&host, t, Some("published"));
    }
    for u in [&at, &after, &early, &late] {
        assert!(
            !user_achs(&host, u).contains_key("early_adopter"),
            "not checked yet"
        );
        assert!(named(&host, u, "ACHIEVEMENT_early_adopter").is_empty());
    }
    recalc(&host);
    for (u, expect) in [(&at, 1), (&after, 0), (&early, 1), (&late, 0)] {
        let rows = user_achs(&host, u);
        assert_eq!(progress_of(&rows, "early_adopter"), expect, "{u}");
        assert_eq!(unlocked(&rows, "early_adopter"), expect == 1, "{u}");
        let bonus = named(&host, u, "ACHIEVEMENT_early_adopter");
        assert_eq!(bonus.len() as i64, expect, "{u}: {bonus:?}");
        if expect == 1 {
            assert_eq!(bonus[0].points, 500);
        }
        assert_stats_follow_rules(&host, u);
    }
}

#[test]
fn one_year_unlocks_in_the_recalculation_for_year_old_accounts() {
    let host = Host::in_process_svc();
    let old = host.user_with(
        Some("Viewer"),
        "oy-old",
        &json!({"date_created": days_ago(367.0)}),
    );
    let young = host.user_with(
        Some("Viewer"),
        "oy-young",
        &json!({"date_created": days_ago(363.0)}),
    );
    for t in ["oy-old", "oy-young"] {
        create_recording(&host, t, Some("published"));
    }
    assert!(!unlocked(&user_achs(&host, &old), "one_year"));
    recalc(&host);
    let rows = user_achs(&host, &old);
    assert_eq!(progress_of(&rows, "one_year"), 1);
    assert!(unlocked(&rows, "one_year"));
    let bonus = named(&host, &old, "ACHIEVEMENT_one_year");
    assert_eq!(bonus.len(), 1);
    assert_eq!(bonus[0].points, 1000);
    let rows = user_achs(&host, &young);
    assert_eq!(progress_of(&rows, "one_year"), 0);
    assert!(!unlocked(&rows, "one_year"));
    assert!(named(&host, &young, "ACHIEVEMENT_one_year").is_empty());
}

#[test]
fn balanced_creator_needs_50_published_recordings_and_100_plays_on_others() {
    let host = Host::in_process_svc();
    viewer(&host, "bc-src");
    let src = create_recording(&host, "bc-src", Some("published"));
    let users = [
        (viewer(&host, "bc-yes"), "bc-yes", 50, 100, 1),
        (viewer(&host, "bc-49"), "bc-49", 49, 100, 0),
        (viewer(&host, "bc-99"), "bc-99", 50, 99, 0),
    ];
    for (u, token, recs, plays, _) in &users {
        let mut items: Vec<Value> = (0..*recs)
            .map(|i| {
                let mut b = rec_body(&format!("b{i}"), Some("published"));
                b["user_created"] = json!(u);
                b["slug"] = json!(format!("b{i}"));
                b
            })
            .collect();
        // Drafts and own plays do not count.
        let mut d = rec_body("draft", Some("draft"));
        d["user_created"] = json!(u);
        d["slug"] = json!("draft");
        items.push(d);
        let r = host.post("/items/recordings", Some(ADMIN_TOKEN), &Value::Array(items));
        assert_eq!(r.status, 200, "{}", r.body);
        let own = r.json()["data"][0]["id"].clone();
        let mut rows: Vec<Value> = (0..*plays)
            .map(|_| json!({"recording_id": src, "user_id": u, "duration_played": 0, "completed": false}))
            .collect();
        for _ in 0..5 {
            rows.push(json!({"recording_id": own, "user_id": u, "duration_played": 0, "completed": false}));
        }
        host.admin_create_many("recording_plays", &rows);
        // A comment refreshes the stats row through a trigger.
        comment(&host, token, "recordings", &src);
    }
    recalc(&host);
    for (u, _, _, _, expect) in &users {
        let rows = user_achs(&host, u);
        assert_eq!(progress_of(&rows, "balanced_creator"), *expect, "{u}");
        assert_eq!(unlocked(&rows, "balanced_creator"), *expect == 1, "{u}");
        assert_eq!(
            named(&host, u, "ACHIEVEMENT_balanced_creator").len() as i64,
            *expect
        );
        assert_stats_follow_rules(&host, u);
    }
    let s = stats(&host, &users[0].0);
    assert_eq!(s["recordings_count"], 50, "{s}");
    assert_eq!(s["playbacks_count"], 100, "{s}");
}

#[test]
fn top_10_rank_unlocks_in_the_recalculation_for_the_ten_best() {
    let host = Host::in_process_svc();
    let ids = ranked_users(&host, 12, 100);
    for u in &ids {
        assert!(stats(&host, u).is_object(), "stats row for {u}");
        assert!(!user_achs(&host, u).contains_key("top_10_rank"));
    }
    recalc(&host);
    for (i, u) in ids.iter().enumerate() {
        // i = 11 is rank 1, ..., i = 2 rank 10, i = 1 rank 11, i = 0 rank 12.
        let expect = i64::from(i >= 2);
        let rows = user_achs(&host, u);
        assert_eq!(progress_of(&rows, "top_10_rank"), expect, "user {i}");
        assert_eq!(unlocked(&rows, "top_10_rank"), expect == 1, "user {i}");
        let bonus = named(&host, u, "ACHIEVEMENT_top_10_rank");
        assert_eq!(bonus.len() as i64, expect, "user {i}");
        if expect == 1 {
            assert_eq!(bonus[0].points, 2000);
        }
        assert_eq!(stats(&host, u)["rank"], 12 - i as i64, "user {i}");
    }
}
