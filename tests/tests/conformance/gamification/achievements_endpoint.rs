use super::*;

// ---------------------------------------------------------------- achievements endpoint

#[test]
fn achievements_endpoint_lists_the_17_seeded_in_sort_order() {
    let host = Host::in_process_svc();
    let r = host.get("/svc/gamification/achievements", None);
    assert_eq!(r.status, 200, "{}", r.body);
    let data = r.json()["data"].as_array().cloned().expect("data array");
    assert_eq!(data.len(), 17, "{data:?}");
    for (a, s) in data.iter().zip(seeded_achievements()) {
        assert_eq!(a["code"], s.code, "order by sort: {a}");
        assert_eq!(a["name"], s.name, "{a}");
        assert_eq!(a["category"], s.category, "{a}");
        assert_eq!(a["required_count"], s.required, "{a}");
        assert_eq!(a["points_reward"], s.reward, "{a}");
        for key in ["id", "description", "icon"] {
            assert!(a.get(key).is_some(), "{key} missing: {a}");
        }
        assert!(a["id"].is_string(), "{a}");
    }
    // The stored rows carry the sort values of the table and are published.
    for row in host.admin_all("achievements", "*") {
        let s = seeded(row["code"].as_str().expect("code"));
        assert_eq!(row["sort"], s.sort, "{row}");
        assert_eq!(row["status"], "published", "{row}");
    }
}

#[test]
fn achievements_endpoint_lists_only_published_ones_by_sort() {
    let host = Host::in_process_svc();
    let extra = create_achievement(&host, "mystery_code", "playback", 1, "published");
    create_achievement(&host, "hidden_code", "playback", 1, "draft");
    let data = host.get("/svc/gamification/achievements", None).json()["data"]
        .as_array()
        .cloned()
        .expect("data");
    let codes: Vec<&str> = data.iter().filter_map(|a| a["code"].as_str()).collect();
    assert_eq!(data.len(), 18, "{codes:?}");
    assert!(!codes.contains(&"hidden_code"), "{codes:?}");
    // sort 15 sits between completionist_100 (14) and first_comment (20).
    let pos = codes
        .iter()
        .position(|c| *c == "mystery_code")
        .expect("extra");
    assert_eq!(codes[pos - 1], "completionist_100", "{codes:?}");
    assert_eq!(codes[pos + 1], "first_comment", "{codes:?}");
    assert_eq!(data[pos]["id"], extra["id"]);
    assert_eq!(data[pos]["points_reward"], 10);
}
