use super::*;

// ---------------------------------------------------------------- point values and triggers

#[test]
fn creating_a_published_recording_awards_recording_create_50() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "rc-u");
    create_recording(&host, "rc-u", None);
    create_recording(&host, "rc-u", Some("draft"));
    assert!(stats(&host, &u).is_null(), "drafts earn nothing");
    assert!(actions(&host, &u).is_empty());
    let rec = create_recording(&host, "rc-u", Some("published"));
    let creates = named(&host, &u, "RECORDING_CREATE");
    assert_eq!(creates.len(), 1, "{creates:?}");
    assert_eq!(creates[0].points, 50);
    assert_eq!(creates[0].recording.as_deref(), Some(rec.as_str()));
    let s = stats(&host, &u);
    assert_eq!(s["recordings_count"], 1, "{s}");
    assert_eq!(s["total_raw_points"], 100, "50 + first_recording 50: {s}");
}

#[test]
fn publishing_a_draft_awards_recording_create() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "pd-u");
    let rec = create_recording(&host, "pd-u", None);
    assert!(actions(&host, &u).is_empty());
    set_status(&host, "pd-u", &rec, "published");
    let creates = named(&host, &u, "RECORDING_CREATE");
    assert_eq!(creates.len(), 1, "{creates:?}");
    assert_eq!(creates[0].points, 50);
    assert_eq!(creates[0].recording.as_deref(), Some(rec.as_str()));
    // From archived too (another recording).
    let rec2 = create_recording(&host, "pd-u", Some("archived"));
    assert_eq!(named(&host, &u, "RECORDING_CREATE").len(), 1);
    set_status(&host, "pd-u", &rec2, "published");
    let creates = named(&host, &u, "RECORDING_CREATE");
    assert_eq!(creates.len(), 2, "{creates:?}");
    assert!(creates
        .iter()
        .any(|a| a.recording.as_deref() == Some(rec2.as_str())));
    assert_eq!(stats(&host, &u)["recordings_count"], 2);
}

#[test]
fn publish_unpublish_publish_awards_recording_create_once() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "ppp-u");
    let rec = create_recording(&host, "ppp-u", None);
    set_status(&host, "ppp-u", &rec, "published");
    set_status(&host, "ppp-u", &rec, "draft");
    set_status(&host, "ppp-u", &rec, "published");
    set_status(&host, "ppp-u", &rec, "archived");
    set_status(&host, "ppp-u", &rec, "published");
    set_status(&host, "ppp-u", &rec, "published");
    let creates = named(&host, &u, "RECORDING_CREATE");
    assert_eq!(creates.len(), 1, "once per recording: {creates:?}");
    // A recording created published and republished: once as well.
    let rec2 = create_recording(&host, "ppp-u", Some("published"));
    set_status(&host, "ppp-u", &rec2, "draft");
    set_status(&host, "ppp-u", &rec2, "published");
    let creates = named(&host, &u, "RECORDING_CREATE");
    assert_eq!(creates.len(), 2, "{creates:?}");
    let per_rec: BTreeSet<String> = creates.iter().filter_map(|a| a.recording.clone()).collect();
    assert_eq!(per_rec, BTreeSet::from([rec, rec2]));
}

#[test]
fn featuring_awards_recording_featured_100_once() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "ft-u");
    let rec = create_recording(&host, "ft-u", Some("published"));
    // An update that leaves `featured` false earns nothing.
    let r = host.patch(
        &format!("/items/recordings/{rec}"),
        Some(ADMIN_TOKEN),
        &json!({"title": "Renamed"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(named(&host, &u, "RECORDING_FEATURED").is_empty());
    set_featured(&host, &rec, true);
    let f = named(&host, &u, "RECORDING_FEATURED");
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].points, 100);
    assert_eq!(f[0].recording.as_deref(), Some(rec.as_str()));
    set_featured(&host, &rec, true); // true -> true
    set_featured(&host, &rec, false);
    set_featured(&host, &rec, true); // false -> true again: once per recording
    assert_eq!(named(&host, &u, "RECORDING_FEATURED").len(), 1);
    // The admin gets nothing; the owner does.
    let admin_points = all_actions(&host)
        .into_iter()
        .filter(|a| a.user != u)
        .count();
    assert_eq!(admin_points, 0);
}

#[test]
fn a_play_by_another_user_awards_recording_play_10() {
    let host = Host::in_process_svc();
    let owner = viewer(&host, "pl-owner");
    let v = viewer(&host, "pl-v");
    let rec = create_recording(&host, "pl-owner", Some("published"));
    let owner_points = stats(&host, &owner)["total_raw_points"].clone();
    host.play_recording(&rec, Some("pl-v"));
    let plays = named(&host, &v, "RECORDING_PLAY");
    assert_eq!(plays.len(), 1, "{plays:?}");
    assert_eq!(plays[0].points, 10);
    assert_eq!(plays[0].recording.as_deref(), Some(rec.as_str()));
    assert_eq!(stats(&host, &v)["playbacks_count"], 1);
    host.play_recording(&rec, Some("pl-v"));
    // Any existing recording counts, a draft too (docs/service-api.md: "the
    // recording exists").
    let draft = create_recording(&host, "pl-owner", None);
    host.play_recording(&draft, Some("pl-v"));
    assert_eq!(named(&host, &v, "RECORDING_PLAY").len(), 3);
    let s = stats(&host, &v);
    assert_eq!(s["playbacks_count"], 3, "{s}");
    assert_eq!(s["total_raw_points"], 30 + 25, "3 plays + first_play: {s}");
    assert_eq!(stats(&host, &owner)["total_raw_points"], owner_points);
}

#[test]
fn the_owner_playing_their_own_recording_earns_nothing() {
    let host = Host::in_process_svc();
    let o = viewer(&host, "own-o");
    let draft = create_recording(&host, "own-o", None);
    host.play_recording(&draft, Some("own-o"));
    assert!(stats(&host, &o).is_null(), "{}", stats(&host, &o));
    assert!(actions(&host, &o).is_empty());
    let rec = create_recording(&host, "own-o", Some("published"));
    let before = actions(&host, &o).len();
    host.play_recording(&rec, Some("own-o"));
    host.play_recording(&rec, Some("own-o"));
    assert_eq!(actions(&host, &o).len(), before);
    assert!(named(&host, &o, "RECORDING_PLAY").is_empty());
    let s = stats(&host, &o);
    assert_eq!(s["playbacks_count"], 0, "{s}");
    assert!(!user_achs(&host, &o).contains_key("first_play"));
    // The plays were recorded, with the owner as user.
    let plays = host.admin_find("recording_plays", &json!({"user_id": {"_eq": o}}));
    assert_eq!(plays.len(), 3);
}

#[test]
fn anonymous_plays_and_completions_earn_nothing() {
    let host = Host::in_process_svc();
    viewer(&host, "anon-o");
    let rec = create_recording(&host, "anon-o", Some("published"));
    let before = all_actions(&host).len();
    let p = host.play_recording(&rec, None);
    report(&host, &rec, &p, None, true);
    let p2 = host.play_recording(&rec, None);
    report(&host, &rec, &p2, None, false);
    assert_eq!(all_actions(&host).len(), before);
    let row = &host
        .admin_all("recording_plays", "*")
        .into_iter()
        .find(|r| r["id"] == json!(p))
        .expect("play row");
    assert!(row["user_id"].is_null(), "{row}");
    assert_eq!(row["completed"], true, "{row}");
    assert_eq!(
        host.admin_all("user_stats", "*").len(),
        1,
        "only the owner's row"
    );
}

#[test]
fn completing_a_play_awards_recording_complete_5_once() {
    let host = Host::in_process_svc();
    let o = viewer(&host, "cp-o");
    let v = viewer(&host, "cp-v");
    let rec = create_recording(&host, "cp-o", Some("published"));
    let p = host.play_recording(&rec, Some("cp-v"));
    report(&host, &rec, &p, Some("cp-v"), false);
    assert!(named(&host, &v, "RECORDING_COMPLETE").is_empty());
    report(&host, &rec, &p, Some("cp-v"), true);
    let c = named(&host, &v, "RECORDING_COMPLETE");
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].points, 5);
    assert_eq!(c[0].recording.as_deref(), Some(rec.as_str()));
    // A second completion of the same play earns nothing.
    report(&host, &rec, &p, Some("cp-v"), true);
    assert_eq!(named(&host, &v, "RECORDING_COMPLETE").len(), 1);
    // The owner completing a play of their own recording is an
    // authenticated caller: awarded to the caller.
    let own = host.play_recording(&rec, Some("cp-o"));
    report(&host, &rec, &own, Some("cp-o"), true);
    let oc = named(&host, &o, "RECORDING_COMPLETE");
    assert_eq!(oc.len(), 1, "{oc:?}");
    assert_eq!(oc[0].points, 5);
    // Raw points of v: play 10 + first_play 25 + complete 5.
    assert_eq!(stats(&host, &v)["total_raw_points"], 40);
    // A third user completing v's play is the authenticated caller.
    let w = viewer(&host, "cp-w");
    let p2 = host.play_recording(&rec, Some("cp-v"));
    report(&host, &rec, &p2, Some("cp-w"), true);
    let wc = named(&host, &w, "RECORDING_COMPLETE");
    assert_eq!(wc.len(), 1, "{wc:?}");
    assert_eq!(wc[0].points, 5);
    assert_eq!(named(&host, &v, "RECORDING_COMPLETE").len(), 1);
}

#[test]
fn a_comment_on_a_recording_awards_comment_create_5() {
    let host = Host::in_process_svc();
    viewer(&host, "cm-o");
    let v = viewer(&host, "cm-v");
    let rec = create_recording(&host, "cm-o", Some("published"));
    comment(&host, "cm-v", "recordings", &rec);
    let c = named(&host, &v, "COMMENT_CREATE");
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].points, 5);
    let s = stats(&host, &v);
    assert_eq!(s["comments_count"], 1, "{s}");
    assert_eq!(
        s["total_raw_points"],
        5 + 25,
        "comment + first_comment: {s}"
    );
    comment(&host, "cm-v", "recordings", &rec);
    assert_eq!(named(&host, &v, "COMMENT_CREATE").len(), 2);
    assert_eq!(stats(&host, &v)["comments_count"], 2);
}

#[test]
fn comments_on_other_collections_earn_nothing() {
    let host = Host::in_process_svc();
    viewer(&host, "oc-o");
    let v = viewer(&host, "oc-v");
    let rec = create_recording(&host, "oc-o", Some("published"));
    refused_comment(&host, "oc-v", "videos", &rec);
    refused_comment(&host, "oc-v", "articles", "a1");
    refused_comment(&host, "oc-v", "Recordings", &rec);
    assert!(stats(&host, &v).is_null());
    assert!(actions(&host, &v).is_empty());
    comment(&host, "oc-v", "recordings", &rec);
    let s = stats(&host, &v);
    assert_eq!(
        s["comments_count"], 1,
        "only recordings comments count: {s}"
    );
    assert_eq!(named(&host, &v, "COMMENT_CREATE").len(), 1);
}
