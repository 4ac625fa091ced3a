use super::*;

// ---------------------------------------------------------------- rule 5

#[test]
fn progress_follows_rule_5_for_every_code() {
    let host = Host::in_process_svc();
    let u = host.user_with(
        Some("Viewer"),
        "r5-u",
        &json!({"date_created": "2025-01-20T10:00:00.000Z"}),
    );
    viewer(&host, "r5-o");
    let extra = create_achievement(&host, "mystery_code", "social", 1, "published");
    let mine1 = create_recording(&host, "r5-u", Some("published"));
    create_recording(&host, "r5-u", Some("published"));
    let draft = create_recording(&host, "r5-u", None);
    set_featured(&host, &mine1, true);
    set_featured(&host, &draft, true);
    let other = create_recording(&host, "r5-o", Some("published"));
    let o1 = host.play_recording(&other, Some("r5-u"));
    host.play_recording(&other, Some("r5-u"));
    host.play_recording(&other, Some("r5-u"));
    let own = host.play_recording(&mine1, Some("r5-u"));
    host.play_recording(&mine1, Some("r5-u"));
    report(&host, &other, &o1, Some("r5-u"), true);
    report(&host, &mine1, &own, Some("r5-u"), true);
    comment(&host, "r5-u", "recordings", &other);
    comment(&host, "r5-u", "recordings", &mine1);
    refused_comment(&host, "r5-u", "videos", &other);
    // Someone else's completed play and comment are not u's.
    let op = host.play_recording(&mine1, Some("r5-o"));
    report(&host, &mine1, &op, Some("r5-o"), true);
    comment(&host, "r5-o", "recordings", &mine1);

    recalc(&host);
    let rows = user_achs(&host, &u);
    let expected: [(&str, i64); 18] = [
        ("first_recording", 2),
        ("recording_10", 2),
        ("recording_50", 2),
        ("recording_100", 2),
        ("featured_recording", 1),
        ("first_play", 3),
        ("play_100", 3),
        ("play_500", 3),
        ("completionist_10", 2),
        ("completionist_100", 2),
        ("first_comment", 2),
        ("comment_50", 2),
        ("comment_250", 2),
        ("early_adopter", 1),
        ("one_year", 1),
        ("balanced_creator", 0),
        ("top_10_rank", 1),
        ("mystery_code", 0),
    ];
    for (code, p) in expected {
        assert_eq!(progress_of(&rows, code), p, "progress of {code}: {rows:?}");
        let required = if code == "mystery_code" {
            1
        } else {
            seeded(code).required
        };
        assert_eq!(unlocked(&rows, code), p >= required, "unlock of {code}");
    }
    assert_eq!(rows.len(), 18, "{rows:?}");
    assert_eq!(
        rows["mystery_code"]["achievement_id"], extra["id"],
        "{rows:?}"
    );
    assert!(named(&host, &u, "ACHIEVEMENT_mystery_code").is_empty());
    assert_stats_follow_rules(&host, &u);
}

#[test]
fn unknown_codes_have_progress_0_and_never_unlock() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "unk-u");
    let extra = create_achievement(&host, "recordings_count", "recordings", 1, "published");
    // Not published: never checked, although progress 0 >= 0 would unlock it.
    create_achievement(&host, "draft_code", "recordings", 0, "draft");
    for _ in 0..2 {
        create_recording(&host, "unk-u", Some("published"));
    }
    let rows = user_achs(&host, &u);
    assert_eq!(progress_of(&rows, "recordings_count"), 0, "{rows:?}");
    assert!(!unlocked(&rows, "recordings_count"));
    assert!(!rows.contains_key("draft_code"), "{rows:?}");
    assert_eq!(rows["recordings_count"]["achievement_id"], extra["id"]);
    recalc(&host);
    let rows = user_achs(&host, &u);
    assert_eq!(progress_of(&rows, "recordings_count"), 0);
    assert!(!unlocked(&rows, "recordings_count"));
    assert!(!rows.contains_key("draft_code"), "{rows:?}");
    let names: Vec<String> = actions(&host, &u).into_iter().map(|a| a.action).collect();
    assert!(
        !names
            .iter()
            .any(|n| n.contains("recordings_count") || n.contains("draft_code")),
        "{names:?}"
    );
}
