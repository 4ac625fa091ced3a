use super::*;

// ---------------------------------------------------------------- rule 3

#[test]
fn stats_follow_rule_3_after_a_mixed_sequence() {
    let host = Host::in_process_svc();
    let a = viewer(&host, "mx-a");
    let b = viewer(&host, "mx-b");
    let r1 = create_recording(&host, "mx-a", Some("published"));
    let r2 = create_recording(&host, "mx-a", None);
    create_recording(&host, "mx-a", None);
    set_status(&host, "mx-a", &r2, "published");
    let own_b = create_recording(&host, "mx-b", None);
    host.play_recording(&own_b, Some("mx-b"));
    let p1 = host.play_recording(&r1, Some("mx-b"));
    host.play_recording(&r2, Some("mx-b"));
    host.play_recording(&r1, Some("mx-b"));
    host.play_recording(&r1, None);
    report(&host, &r1, &p1, Some("mx-b"), true);
    comment(&host, "mx-b", "recordings", &r1);
    comment(&host, "mx-b", "recordings", &r2);
    refused_comment(&host, "mx-b", "videos", &r2);
    comment(&host, "mx-a", "recordings", &r1);
    set_featured(&host, &r1, true);

    let t0 = now_ms();
    let sa = stats(&host, &a);
    let sb = stats(&host, &b);
    let t1 = now_ms();
    // a: 2 x create 50, first_recording 50, featured 100, featured_recording
    // 200, comment 5, first_comment 25.
    let fields = |s: &Value| {
        (
            s["total_raw_points"].clone(),
            s["recordings_count"].clone(),
            s["playbacks_count"].clone(),
            s["comments_count"].clone(),
            s["achievements_count"].clone(),
        )
    };
    assert_eq!(
        fields(&sa),
        (json!(480), json!(2), json!(0), json!(1), json!(3)),
        "{sa}"
    );
    // b: 3 plays 30, first_play 25, complete 5, 2 comments 10, first_comment 25.
    assert_eq!(
        fields(&sb),
        (json!(95), json!(0), json!(3), json!(2), json!(2)),
        "{sb}"
    );
    for (user, s) in [(&a, &sa), (&b, &sb)] {
        let acts = actions(&host, user);
        let refs: Vec<&Action> = acts.iter().collect();
        assert_weighted(&s["total_weighted_points"], &refs, t0, t1, user);
        let updated = ts_ms(&s["last_updated"]);
        assert!(updated <= t1 + 1 && updated >= t0 - 60_000, "{s}");
        assert_eq!(s["user_id"], json!(user));
    }
    assert_stats_follow_rules(&host, &a);
    assert_stats_follow_rules(&host, &b);
}

#[test]
fn user_stats_have_exactly_the_spec_fields_plus_rank() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "sf-u");
    create_recording(&host, "sf-u", Some("published"));
    let s = stats(&host, &u);
    let keys = keys_of(&s);
    let expected = BTreeSet::from([
        "id",
        "user_id",
        "total_raw_points",
        "total_weighted_points",
        "recordings_count",
        "playbacks_count",
        "comments_count",
        "achievements_count",
        "last_updated",
        "rank",
    ]);
    assert_eq!(keys, expected, "{s}");
    assert_eq!(s["rank"], 1);
    let row = &host.admin_all("user_stats", "*")[0];
    assert_eq!(s["id"], row["id"], "the stats row's id");
}
