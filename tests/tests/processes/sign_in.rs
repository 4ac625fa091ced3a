//! Sign-in as Directus does it (docs/decisions.md §3): login in its three
//! modes, refresh with rotation, logout, access tokens on every route, sessions
//! ended at once, `/users/me`, registration, cookies, CORS.

use platform_tests::{Host, HostOptions, Resp, ADMIN_TOKEN};
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery staple";
const SESSION_COOKIE: &str = "directus_session_token";
const REFRESH_COOKIE: &str = "directus_refresh_token";

/// The id of the role called `name`.
fn role(host: &Host, name: &str) -> String {
    let r = host.get(
        &format!("/items/platform_roles?filter[name][_eq]={name}"),
        Some(ADMIN_TOKEN),
    );
    r.json()["data"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no role {name}: {}", r.body))
        .to_string()
}

/// A Viewer with a password; their id.
fn viewer(host: &Host, email: &str) -> String {
    let created = host.admin_create(
        "platform_users",
        &json!({"email": email, "password": PASSWORD, "role": role(host, "Viewer"), "first_name": "Vi"}),
    );
    created["id"].as_str().expect("id").to_string()
}

/// Signs in in json mode: (access token, refresh token).
fn tokens(host: &Host, email: &str) -> (String, String) {
    let r = host.login_mode(email, PASSWORD, "json");
    assert_eq!(r.status, 200, "{}", r.body);
    let data = &r.json()["data"];
    (
        data["access_token"].as_str().expect("access").to_string(),
        data["refresh_token"].as_str().expect("refresh").to_string(),
    )
}

fn refresh(host: &Host, token: &str) -> Resp {
    host.post(
        "/auth/refresh",
        None,
        &json!({"refresh_token": token, "mode": "json"}),
    )
}

fn assert_invalid_credentials(r: &Resp) {
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(
        r.json()["errors"][0]["extensions"]["code"],
        "INVALID_CREDENTIALS",
        "{}",
        r.body
    );
}

fn with_cookie(cookie: &str, json: bool) -> Vec<(&str, &str)> {
    let mut h = vec![("Cookie", cookie)];
    if json {
        h.push(("Content-Type", "application/json"));
    }
    h
}

#[test]
fn json_login_refresh_rotation_and_logout() {
    let host = Host::start_svc_with(&[]);
    let id = viewer(&host, "vi@example.com");

    let wrong = host.login_mode("vi@example.com", "nope", "json");
    let unknown = host.login_mode("nobody@example.com", PASSWORD, "json");
    assert_invalid_credentials(&wrong);
    assert_eq!(wrong.body, unknown.body, "one answer for both");
    assert_eq!(
        wrong.json()["errors"][0]["message"],
        "Invalid user credentials."
    );

    let r = host.login_mode("vi@example.com", PASSWORD, "json");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["expires"], 900_000, "15 minutes in ms");
    let (access, refresh_token) = tokens(&host, "vi@example.com");

    // The access token works on the host's routes and on extension routes.
    let me = host.get("/users/me", Some(&access));
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.json()["data"]["id"], id.as_str());
    assert_eq!(me.json()["data"]["email"], "vi@example.com");
    assert!(me.json()["data"].get("password").is_none());
    let mine = host.get(&format!("/users/me?access_token={access}"), None);
    assert_eq!(mine.status, 200, "the query parameter: {}", mine.body);
    let recordings = host.get("/svc/recordings", Some(&access));
    assert_eq!(recordings.status, 200, "{}", recordings.body);
    let created = host.post(
        "/svc/recordings",
        Some(&access),
        &json!({
            "title": "signed in",
            "duration": 10,
            "device_info": {"index": 0},
            "events": [{"timestamp": 1, "value": 0.5}]
        }),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.json()["user_created"],
        id.as_str(),
        "{}",
        created.body
    );

    // Refresh rotates: the new pair works, the used token is refused.
    let r = refresh(&host, &refresh_token);
    assert_eq!(r.status, 200, "{}", r.body);
    let next = r.json()["data"]["refresh_token"]
        .as_str()
        .expect("rotated")
        .to_string();
    assert_ne!(next, refresh_token);
    let next_access = r.json()["data"]["access_token"]
        .as_str()
        .expect("access")
        .to_string();
    assert_eq!(host.get("/users/me", Some(&next_access)).status, 200);
    assert_invalid_credentials(&refresh(&host, &refresh_token));

    // Logout ends the session: its tokens are refused at once.
    let out = host.post("/auth/logout", None, &json!({"refresh_token": next}));
    assert_eq!(out.status, 204, "{}", out.body);
    assert_eq!(host.get("/users/me", Some(&next_access)).status, 401);
    assert_eq!(host.get("/svc/recordings", Some(&next_access)).status, 401);
    assert_invalid_credentials(&refresh(&host, &next));

    // Anonymous callers have no "me".
    assert_invalid_credentials(&host.get("/users/me", None));
}

#[test]
fn session_mode_signs_in_by_an_http_only_cookie() {
    let host = Host::start_svc_with(&[]);
    viewer(&host, "se@example.com");
    let r = host.login_mode("se@example.com", PASSWORD, "session");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json(), json!({"data": {"expires": 900_000}}));
    let set = r.set_cookie(SESSION_COOKIE).expect("session cookie");
    for part in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(set.contains(part), "{part} missing: {set}");
    }
    assert!(
        !set.contains("Secure"),
        "not Secure unless configured: {set}"
    );
    let cookie = format!(
        "{SESSION_COOKIE}={}",
        r.cookie_value(SESSION_COOKIE).expect("value")
    );

    let me = host.request_with("GET", "/users/me", &with_cookie(&cookie, false), None);
    assert_eq!(me.status, 200, "{}", me.body);

    // A state change by cookie must be JSON or name a trusted origin: a
    // form that names none is refused.
    let body = br#"{"first_name":"Changed"}"#;
    let form = host.request_with(
        "PATCH",
        "/users/me",
        &[
            ("Cookie", cookie.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some(body),
    );
    assert_eq!(form.status, 403, "{}", form.body);
    let json_patch = host.request_with(
        "PATCH",
        "/users/me",
        &with_cookie(&cookie, true),
        Some(body),
    );
    assert_eq!(json_patch.status, 200, "{}", json_patch.body);
    assert_eq!(json_patch.json()["data"]["first_name"], "Changed");

    // Refresh by the cookie gives a new cookie; logout clears it.
    let r = host.request_with(
        "POST",
        "/auth/refresh",
        &with_cookie(&cookie, true),
        Some(br#"{"mode":"session"}"#),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let renewed = format!(
        "{SESSION_COOKIE}={}",
        r.cookie_value(SESSION_COOKIE).expect("renewed")
    );
    let out = host.request_with(
        "POST",
        "/auth/logout",
        &with_cookie(&renewed, true),
        Some(br#"{"mode":"session"}"#),
    );
    assert_eq!(out.status, 204, "{}", out.body);
    assert!(out
        .set_cookie(SESSION_COOKIE)
        .is_some_and(|c| c.contains("Max-Age=0")));
    let after = host.request_with("GET", "/users/me", &with_cookie(&renewed, false), None);
    assert_eq!(after.status, 401, "{}", after.body);
}

#[test]
fn cookie_mode_keeps_the_refresh_token_in_a_cookie() {
    let host = Host::start_svc_with(&[
        ("REFRESH_TOKEN_COOKIE_SECURE", "true"),
        ("REFRESH_TOKEN_COOKIE_SAME_SITE", "strict"),
    ]);
    viewer(&host, "co@example.com");
    let r = host.login_mode("co@example.com", PASSWORD, "cookie");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.json()["data"]["access_token"].is_string());
    assert!(
        r.json()["data"].get("refresh_token").is_none(),
        "{}",
        r.body
    );
    let set = r.set_cookie(REFRESH_COOKIE).expect("refresh cookie");
    for part in ["HttpOnly", "Secure", "SameSite=Strict"] {
        assert!(set.contains(part), "{part} missing: {set}");
    }
    let cookie = format!(
        "{REFRESH_COOKIE}={}",
        r.cookie_value(REFRESH_COOKIE).expect("value")
    );
    let refreshed = host.request_with(
        "POST",
        "/auth/refresh",
        &with_cookie(&cookie, true),
        Some(br#"{"mode":"cookie"}"#),
    );
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    assert!(refreshed.set_cookie(REFRESH_COOKIE).is_some());
    // The used cookie is refused.
    let again = host.request_with(
        "POST",
        "/auth/refresh",
        &with_cookie(&cookie, true),
        Some(br#"{"mode":"cookie"}"#),
    );
    assert_invalid_credentials(&again);
}

#[test]
fn suspension_and_a_new_password_end_sessions_at_once() {
    let host = Host::start_svc_with(&[]);
    let id = viewer(&host, "su@example.com");
    let (access, refresh_token) = tokens(&host, "su@example.com");
    assert_eq!(host.get("/users/me", Some(&access)).status, 200);
    let r = host.patch(
        &format!("/items/platform_users/{id}"),
        Some(ADMIN_TOKEN),
        &json!({"status": "suspended"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(host.get("/users/me", Some(&access)).status, 401);
    assert_eq!(host.get("/svc/recordings", Some(&access)).status, 401);
    assert_invalid_credentials(&refresh(&host, &refresh_token));
    assert_invalid_credentials(&host.login_mode("su@example.com", PASSWORD, "json"));

    // Active again: old sessions stay ended; a new password ends new ones.
    host.patch(
        &format!("/items/platform_users/{id}"),
        Some(ADMIN_TOKEN),
        &json!({"status": "active"}),
    );
    assert_eq!(host.get("/users/me", Some(&access)).status, 401);
    let (access, _) = tokens(&host, "su@example.com");
    let changed = host.patch(
        "/users/me",
        Some(&access),
        &json!({"password": "another one"}),
    );
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert_eq!(host.get("/users/me", Some(&access)).status, 401);
    assert_invalid_credentials(&host.login_mode("su@example.com", PASSWORD, "json"));
    assert_eq!(
        host.login_mode("su@example.com", "another one", "json")
            .status,
        200
    );
}

#[test]
fn users_me_changes_own_profile_fields_only() {
    let host = Host::start_svc_with(&[]);
    viewer(&host, "pr@example.com");
    let (access, _) = tokens(&host, "pr@example.com");
    for field in ["role", "status", "token", "id"] {
        let r = host.patch("/users/me", Some(&access), &json!({ field: "x" }));
        assert_eq!(r.status, 403, "{field}: {}", r.body);
    }
    let r = host.patch(
        "/users/me",
        Some(&access),
        &json!({"first_name": "Pat", "artist_name": "P"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["first_name"], "Pat");
    let fields = host.get("/users/me?fields=first_name,email", Some(&access));
    assert_eq!(
        fields.json()["data"],
        json!({"first_name": "Pat", "email": "pr@example.com"})
    );
}

#[test]
fn registration_is_off_unless_enabled_and_never_tells_taken_emails() {
    let off = Host::start_svc_with(&[]);
    let r = off.post(
        "/users/register",
        None,
        &json!({"email": "new@example.com", "password": "pw"}),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    drop(off);

    let host = Host::start_svc_with(&[("PUBLIC_REGISTRATION", "true")]);
    let r = host.post(
        "/users/register",
        None,
        &json!({"email": "New@Example.com", "password": "first", "first_name": "N"}),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    let again = host.post(
        "/users/register",
        None,
        &json!({"email": "new@example.com", "password": "second"}),
    );
    assert_eq!(again.status, 204, "a taken email answers alike");
    assert_invalid_credentials(&host.login_mode("new@example.com", "second", "json"));
    let r = host.login_mode("New@Example.com", "first", "json");
    assert_eq!(r.status, 200, "{}", r.body);
    let access = r.json()["data"]["access_token"]
        .as_str()
        .expect("access")
        .to_string();
    let me = host.get("/users/me", Some(&access)).json();
    assert_eq!(me["data"]["role"], role(&host, "Viewer").as_str());
    assert_eq!(me["data"]["first_name"], "N");
    let bad = host.post(
        "/users/register",
        None,
        &json!({"email": "x@example.com", "password": "p", "role": "anything"}),
    );
    assert_eq!(bad.status, 400, "{}", bad.body);
    let bad = host.post(
        "/users/register",
        None,
        &json!({"email": "not an email", "password": "p"}),
    );
    assert_eq!(bad.status, 400, "{}", bad.body);
}

#[test]
fn access_tokens_expire_and_refresh_still_works() {
    let host = Host::start_svc_with(&[("ACCESS_TOKEN_TTL", "1s")]);
    viewer(&host, "ex@example.com");
    let (access, refresh_token) = tokens(&host, "ex@example.com");
    assert_eq!(host.get("/users/me", Some(&access)).status, 200);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_eq!(host.get("/users/me", Some(&access)).status, 401);
    let r = refresh(&host, &refresh_token);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["expires"], 1000);
}

#[test]
fn a_token_of_one_host_works_on_another_and_logout_reaches_both() {
    let first = Host::start_svc_with(&[]);
    let second = first.start_beside(HostOptions::svc());
    viewer(&first, "tw@example.com");
    let (access, refresh_token) = tokens(&first, "tw@example.com");
    assert_eq!(second.get("/users/me", Some(&access)).status, 200);
    let r = second.post(
        "/auth/logout",
        None,
        &json!({"refresh_token": refresh_token}),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(first.get("/users/me", Some(&access)).status, 401);
}

#[test]
fn cors_answers_preflights_as_configured() {
    let host = Host::start_svc_with(&[
        ("CORS_ENABLED", "true"),
        ("CORS_ORIGIN", "https://app.example"),
    ]);
    let r = host.request_with(
        "OPTIONS",
        "/auth/login",
        &[
            ("Origin", "https://app.example"),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "content-type"),
        ],
        None,
    );
    assert!(r.status < 300, "{} {}", r.status, r.body);
    assert_eq!(
        r.header_all("access-control-allow-origin"),
        ["https://app.example"]
    );
    assert_eq!(r.header_all("access-control-allow-credentials"), ["true"]);
    let other = host.request_with(
        "GET",
        "/server/ping",
        &[("Origin", "https://evil.example")],
        None,
    );
    assert!(other.header_all("access-control-allow-origin").is_empty());
    // Off by default.
    let plain = Host::start_svc_with(&[]);
    let r = plain.request_with(
        "GET",
        "/server/ping",
        &[("Origin", "https://app.example")],
        None,
    );
    assert!(r.header_all("access-control-allow-origin").is_empty());
}

#[test]
fn bad_sign_in_bodies_are_400_not_401() {
    let host = Host::start_svc_with(&[]);
    for body in [
        json!({}),
        json!({"email": "a@b.c"}),
        json!({"email": 5, "password": "x"}),
    ] {
        let r = host.post("/auth/login", None, &body);
        assert_eq!(r.status, 400, "{body}: {}", r.body);
    }
    let r = host.post(
        "/auth/login",
        None,
        &json!({"email": "a@b.c", "password": "x", "mode": "jwt"}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let r = host.post("/auth/refresh", None, &Value::Object(Default::default()));
    assert_eq!(r.status, 400, "{}", r.body);
}

#[test]
fn a_query_token_is_hidden_in_the_access_log_under_every_spelling_it_is_read_by() {
    let host = Host::start_svc_with(&[]);
    let token = "spelled-query-token";
    host.user(Some("Viewer"), token);
    // Every spelling of the name the credentials are read from
    // (percent-decoded, as a query is), and the plain one.
    let spellings = [
        "access_token",
        "access%5Ftoken",
        "access%5ftoken",
        "%61ccess_token",
        "%61%63%63%65%73%73%5F%74%6F%6B%65%6E",
    ];
    for name in spellings {
        // Anonymous callers may not read recordings: 200 is the token's.
        let r = host.get(&format!("/items/recordings?{name}={token}&limit=1"), None);
        assert_eq!(r.status, 200, "{name}: {}", r.body);
    }
    let logged = platform_tests::time::eventually(
        "an access log line per spelling",
        std::time::Duration::from_secs(5),
        || {
            let log = host.log();
            match spellings
                .iter()
                .find(|name| !log.contains(&format!("/items/recordings?{name}=***&limit=1 ")))
            {
                None => Ok(log),
                Some(name) => Err(format!("no line for {name}:\n{log}")),
            }
        },
    );
    assert!(!logged.contains(&format!("={token}")), "{logged}");
}
