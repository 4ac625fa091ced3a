use super::*;

// ---------------------------------------------------------------- user endpoint lists

#[test]
fn user_endpoint_lists_unlocked_achievements_newest_first() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "ua-u");
    viewer(&host, "ua-o");
    let mine = create_recording(&host, "ua-u", Some("published"));
    pause();
    let other = create_recording(&host, "ua-o", Some("published"));
    host.play_recording(&other, Some("ua-u"));
    pause();
    comment(&host, "ua-u", "recordings", &other);
    pause();
    set_featured(&host, &mine, true);
    let list = gam(&host, &u)["achievements"]
        .as_array()
        .cloned()
        .expect("achievements");
    let codes: Vec<&str> = list.iter().filter_map(|a| a["code"].as_str()).collect();
    assert_eq!(
        codes,
        vec![
            "featured_recording",
            "first_comment",
            "first_play",
            "first_recording"
        ]
    );
    let by_id = achievements_by_id(&host);
    let rows = user_achs(&host, &u);
    for a in &list {
        let code = a["code"].as_str().expect("code");
        let id = a["id"].as_str().expect("id");
        let ach = by_id
            .get(id)
            .unwrap_or_else(|| panic!("id is the achievement's: {a}"));
        assert_eq!(ach["code"], a["code"]);
        for k in ["name", "description", "icon", "category", "required_count"] {
            assert_eq!(a[k], ach[k], "{k}: {a}");
        }
        assert_eq!(a["progress"], rows[code]["progress"], "{a}");
        assert_eq!(a["date_unlocked"], rows[code]["date_unlocked"], "{a}");
    }
    let dates: Vec<i64> = list.iter().map(|a| ts_ms(&a["date_unlocked"])).collect();
    assert!(dates.windows(2).all(|w| w[0] > w[1]), "{dates:?}");
}

#[test]
fn user_endpoint_returns_the_10_most_recent_points_newest_first() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "rp-u");
    let other = viewer(&host, "rp-other");
    let rec = "00000000-0000-4000-b000-0000000000aa";
    // Point actions name existing recordings (an import with its own id).
    host.admin_create("recordings", &json!({"id": rec, "title": "Imported"}));
    // 13 actions on distinct days, inserted in a shuffled order.
    let mut rows: Vec<(i64, Value)> = (0..13)
        .map(|k| (k * 7) % 13)
        .map(|d| {
            let rid = if d % 2 == 0 { json!(rec) } else { Value::Null };
            (
                d,
                json!({"user_id": u, "action": format!("ACT_{d}"), "points": d + 1,
                       "recording_id": rid, "date_created": days_ago(d as f64 + 0.5)}),
            )
        })
        .collect();
    // Someone else's newer action must not show.
    rows.push((
        -1,
        json!({"user_id": other, "action": "OTHER", "points": 1, "date_created": days_ago(0.01)}),
    ));
    let body = Value::Array(rows.iter().map(|(_, v)| v.clone()).collect());
    let r = host.post("/items/user_points", Some(ADMIN_TOKEN), &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let recent = gam(&host, &u)["recent_points"]
        .as_array()
        .cloned()
        .expect("recent_points");
    assert_eq!(recent.len(), 10, "{recent:?}");
    for (i, p) in recent.iter().enumerate() {
        let d = i as i64;
        assert_eq!(p["action"], format!("ACT_{d}"), "position {i}: {p}");
        assert_eq!(p["points"], d + 1, "{p}");
        let expected_rid = if d % 2 == 0 { json!(rec) } else { Value::Null };
        assert_eq!(p["recording_id"], expected_rid, "{p}");
        let stored = rows
            .iter()
            .find(|(k, _)| *k == d)
            .map(|(_, v)| v["date_created"].clone())
            .expect("row");
        assert_eq!(ts_ms(&p["date_created"]), ts_ms(&stored), "{p}");
    }
}
