use super::*;

// ---------------------------------------------------------------- rule 4

#[test]
fn the_check_writes_progress_for_every_achievement_of_its_category() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "cat-u");
    let v = viewer(&host, "cat-v");
    let rec = create_recording(&host, "cat-u", Some("published"));
    let rows = user_achs(&host, &u);
    assert_eq!(
        rows.keys().cloned().collect::<BTreeSet<_>>(),
        codes_of("recordings"),
        "{rows:?}"
    );
    for code in [
        "first_recording",
        "recording_10",
        "recording_50",
        "recording_100",
    ] {
        assert_eq!(progress_of(&rows, code), 1, "{code}");
    }
    assert_eq!(progress_of(&rows, "featured_recording"), 0);
    let open: Vec<&String> = rows
        .iter()
        .filter(|(_, r)| !r["date_unlocked"].is_null())
        .map(|(c, _)| c)
        .collect();
    assert_eq!(open, vec!["first_recording"]);

    host.play_recording(&rec, Some("cat-v"));
    let rows = user_achs(&host, &v);
    assert_eq!(
        rows.keys().cloned().collect::<BTreeSet<_>>(),
        codes_of("playback"),
        "{rows:?}"
    );
    for (code, p) in [
        ("first_play", 1),
        ("play_100", 1),
        ("play_500", 1),
        ("completionist_10", 0),
        ("completionist_100", 0),
    ] {
        assert_eq!(progress_of(&rows, code), p, "{code}");
    }
    comment(&host, "cat-v", "recordings", &rec);
    let rows = user_achs(&host, &v);
    let mut expected = codes_of("playback");
    expected.extend(codes_of("social"));
    assert_eq!(rows.keys().cloned().collect::<BTreeSet<_>>(), expected);
    for code in ["first_comment", "comment_50", "comment_250"] {
        assert_eq!(progress_of(&rows, code), 1, "{code}");
    }
    // Rows of u are untouched by v's actions; nobody has special rows yet.
    assert_eq!(
        user_achs(&host, &u)
            .keys()
            .cloned()
            .collect::<BTreeSet<_>>(),
        codes_of("recordings")
    );
}

#[test]
fn an_unlock_sets_date_unlocked_and_awards_the_reward() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "ul-u");
    let t0 = now_ms();
    let rec = create_recording(&host, "ul-u", Some("published"));
    let t1 = now_ms();
    let rows = user_achs(&host, &u);
    let first = rows["first_recording"].clone();
    let when = ts_ms(&first["date_unlocked"]);
    assert!(when >= t0 - 1 && when <= t1 + 1, "{first}");
    // Newly unlocked with no row before: ACHIEVEMENT_<code> with the reward.
    let bonus = named(&host, &u, "ACHIEVEMENT_first_recording");
    assert_eq!(bonus.len(), 1, "{bonus:?}");
    assert_eq!(bonus[0].points, 50);
    assert_eq!(bonus[0].recording, None);
    assert!(rows["featured_recording"]["date_unlocked"].is_null());
    assert_eq!(stats(&host, &u)["achievements_count"], 1);

    // A row that exists with progress 0 gets unlocked on update.
    set_featured(&host, &rec, true);
    let rows = user_achs(&host, &u);
    assert_eq!(progress_of(&rows, "featured_recording"), 1);
    assert!(unlocked(&rows, "featured_recording"));
    let bonus = named(&host, &u, "ACHIEVEMENT_featured_recording");
    assert_eq!(bonus.len(), 1, "{bonus:?}");
    assert_eq!(bonus[0].points, 200);
    assert_eq!(bonus[0].recording, None);

    // required_count matters: recording_10 at the 10th publication.
    for _ in 0..8 {
        create_recording(&host, "ul-u", Some("published"));
    }
    let rows = user_achs(&host, &u);
    assert_eq!(progress_of(&rows, "recording_10"), 9);
    assert!(!unlocked(&rows, "recording_10"));
    assert!(named(&host, &u, "ACHIEVEMENT_recording_10").is_empty());
    create_recording(&host, "ul-u", Some("published"));
    let rows = user_achs(&host, &u);
    assert_eq!(progress_of(&rows, "recording_10"), 10);
    assert!(unlocked(&rows, "recording_10"));
    let bonus = named(&host, &u, "ACHIEVEMENT_recording_10");
    assert_eq!(bonus.len(), 1);
    assert_eq!(bonus[0].points, 100);
    // Already unlocked achievements keep their date and give no second bonus.
    assert_eq!(
        rows["first_recording"]["date_unlocked"],
        first["date_unlocked"]
    );
    assert_eq!(named(&host, &u, "ACHIEVEMENT_first_recording").len(), 1);
    let s = stats(&host, &u);
    assert_eq!(s["achievements_count"], 3, "{s}");
    // 10 creates 500 + featured 100 + rewards 50 + 200 + 100.
    assert_eq!(s["total_raw_points"], 950, "{s}");
}

#[test]
fn date_unlocked_is_kept_when_progress_drops() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "drop-u");
    let rec = create_recording(&host, "drop-u", Some("published"));
    let before = user_achs(&host, &u)["first_recording"]["date_unlocked"].clone();
    assert!(!before.is_null());
    set_status(&host, "drop-u", &rec, "draft");
    recalc(&host);
    let rows = user_achs(&host, &u);
    assert_eq!(progress_of(&rows, "first_recording"), 0, "{rows:?}");
    assert_eq!(rows["first_recording"]["date_unlocked"], before);
    assert_eq!(named(&host, &u, "ACHIEVEMENT_first_recording").len(), 1);
    let s = stats(&host, &u);
    assert_eq!(s["recordings_count"], 0, "{s}");
    let unlocked_ids: Vec<Value> = gam(&host, &u)["achievements"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        unlocked_ids.iter().any(|a| a["code"] == "first_recording"),
        "still listed as unlocked: {unlocked_ids:?}"
    );
    assert_stats_follow_rules(&host, &u);
}
