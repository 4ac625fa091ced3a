use super::*;

// ---------------------------------------------------------------- rules 2 and 6

#[test]
fn weighted_points_decay_by_rule_2() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "dec-u");
    create_recording(&host, "dec-u", Some("published"));
    let old: Vec<Value> = [(10, 0.5), (50, 10.0), (100, 100.25), (7, 365.0), (1000, 1000.0)]
        .iter()
        .map(|(p, d)| {
            json!({"user_id": u, "action": "IMPORTED", "points": p, "date_created": days_ago(*d)})
        })
        .collect();
    let r = host.post("/items/user_points", Some(ADMIN_TOKEN), &Value::Array(old));
    assert_eq!(r.status, 200, "{}", r.body);
    recalc(&host);
    let acts = actions(&host, &u);
    let refs: Vec<&Action> = acts.iter().collect();
    let t0 = now_ms();
    let s = stats(&host, &u);
    let t1 = now_ms();
    assert_weighted(&s["total_weighted_points"], &refs, t0, t1, "user endpoint");
    let raw: i64 = acts.iter().map(|a| a.points).sum();
    assert_eq!(s["total_raw_points"], raw);
    let w = s["total_weighted_points"].as_f64().unwrap_or(0.0);
    assert!(w < raw as f64 - 900.0, "decayed: {w} vs raw {raw}");
    let t0 = now_ms();
    let lb = host.get("/svc/gamification/leaderboard", None).json();
    let t1 = now_ms();
    let item = lb["data"]
        .as_array()
        .and_then(|d| d.iter().find(|i| i["user_id"] == json!(u)).cloned())
        .expect("on the leaderboard");
    assert_weighted(&item["total_weighted_points"], &refs, t0, t1, "leaderboard");
    // Later reads give the value of their own instant (it keeps decaying).
    std::thread::sleep(Duration::from_millis(300));
    let t0 = now_ms();
    let later = stats(&host, &u);
    let t1 = now_ms();
    assert_weighted(&later["total_weighted_points"], &refs, t0, t1, "later read");
    assert!(later["total_weighted_points"].as_f64() < s["total_weighted_points"].as_f64());
}

#[test]
fn recalculation_restores_tampered_stats() {
    // A host process: the recalculation runs as the command line's
    // `schedule run` beside it, on its database.
    let host = Host::start(HostOptions::svc());
    let u = viewer(&host, "tm-u");
    let v = viewer(&host, "tm-v");
    let rec = create_recording(&host, "tm-u", Some("published"));
    host.play_recording(&rec, Some("tm-v"));
    comment(&host, "tm-v", "recordings", &rec);
    // Raw records written behind the triggers' back.
    let r = host.post(
        "/items/recording_plays",
        Some(ADMIN_TOKEN),
        &json!({"recording_id": rec, "user_id": v, "duration_played": 0, "completed": false}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = host.post(
        "/items/user_points",
        Some(ADMIN_TOKEN),
        &json!({"user_id": u, "action": "IMPORTED", "points": 33, "date_created": days_ago(3.0)}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    for row in host.admin_all("user_stats", "*") {
        let r = host.patch(
            &format!("/items/user_stats/{}", row["id"].as_str().expect("id")),
            Some(ADMIN_TOKEN),
            &json!({"total_raw_points": 1, "total_weighted_points": 99999.0,
                    "recordings_count": 42, "playbacks_count": 42, "comments_count": 42,
                    "achievements_count": 42, "last_updated": "2020-01-01T00:00:00.000Z"}),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
    // A stats row created by hand for a user without any point.
    let w = viewer(&host, "tm-w");
    host.admin_create("user_stats", &json!({"user_id": w, "total_raw_points": 7}));
    let started = now_ms();
    recalc(&host);
    for user in [&u, &v, &w] {
        assert_stats_follow_rules(&host, user);
        let s = stats(&host, user);
        assert!(ts_ms(&s["last_updated"]) >= started - 1, "{s}");
    }
    let sv = stats(&host, &v);
    assert_eq!(sv["playbacks_count"], 2, "{sv}");
    assert_eq!(sv["comments_count"], 1, "{sv}");
    let su = stats(&host, &u);
    assert_eq!(su["recordings_count"], 1, "{su}");
    let sw = stats(&host, &w);
    assert_eq!(sw["recordings_count"], 0, "{sw}");
    assert_eq!(sw["playbacks_count"], 0, "{sw}");
    // The only points w can have are those of achievements the full check
    // unlocked; with none, the score is 0.
    let w_actions = actions(&host, &w);
    assert!(
        w_actions
            .iter()
            .all(|a| a.action.starts_with("ACHIEVEMENT_")),
        "{w_actions:?}"
    );
}

#[test]
fn recalculation_leaves_users_without_stats_rows_alone() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "nr-u");
    let v = viewer(&host, "nr-v");
    create_recording(&host, "nr-u", Some("published"));
    let own = create_recording(&host, "nr-v", None);
    host.play_recording(&own, Some("nr-v"));
    refused_comment(&host, "nr-v", "videos", &own);
    let r = host.post(
        "/items/user_points",
        Some(ADMIN_TOKEN),
        &json!({"user_id": v, "action": "IMPORTED", "points": 40}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        stats(&host, &v).is_null(),
        "precondition: no stats row for v"
    );
    recalc(&host);
    assert!(stats(&host, &v).is_null(), "{}", stats(&host, &v));
    let rows: Vec<Value> = host.admin_all("user_stats", "*");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["user_id"], json!(u));
    assert!(user_achs(&host, &v).is_empty());
    assert_stats_follow_rules(&host, &u);
}
