use super::*;

// ---------------------------------------------------------------- public access

#[test]
fn gamification_endpoints_need_no_token() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "pub-u");
    create_recording(&host, "pub-u", Some("published"));
    for path in [
        "/svc/gamification/leaderboard".to_string(),
        "/svc/gamification/achievements".to_string(),
        format!("/svc/gamification/user/{u}"),
    ] {
        let anon = host.get(&path, None);
        assert_eq!(anon.status, 200, "{path}: {}", anon.body);
        assert!(anon.content_type.contains("json"), "{path}");
        let authed = host.get(&path, Some("pub-u"));
        assert_eq!(authed.status, 200, "{path}: {}", authed.body);
        let admin = host.get(&path, Some(ADMIN_TOKEN));
        assert_eq!(admin.status, 200, "{path}: {}", admin.body);
        // docs/decisions.md §3: a token that matches no active user is refused.
        let bad = host.get(&path, Some("no-such-token"));
        assert_eq!(bad.status, 401, "{path}: {}", bad.body);
        assert_eq!(bad.json(), json!({"error": "Invalid token"}));
    }
    let lb = host.get("/svc/gamification/leaderboard", None).json();
    assert_eq!(lb["data"].as_array().map(Vec::len), Some(1), "{lb}");
}

#[test]
fn a_user_without_stats_row_gets_null_stats_and_empty_lists() {
    let host = Host::in_process_svc();
    let u = viewer(&host, "nostats");
    create_recording(&host, "nostats", None); // a draft: no points
    assert_eq!(
        gam(&host, &u),
        json!({"stats": null, "achievements": [], "recent_points": []})
    );
    // An id that is no user at all answers the same, without an error.
    assert_eq!(
        gam(&host, "00000000-0000-4000-8000-000000000000"),
        json!({"stats": null, "achievements": [], "recent_points": []})
    );
    assert!(host.admin_all("user_stats", "*").is_empty());
}
