//! Registration with email verification and the password reset by mail,
//! as Directus does them, with the mail received by a real SMTP server on
//! loopback (`platform_tests::smtp`), on the backend `TEST_DB` names.

use std::time::{Duration, Instant};

use platform_tests::smtp::MailServer;
use platform_tests::time::eventually;
use platform_tests::{Host, HostOptions, Resp, ADMIN_TOKEN};
use serde_json::{json, Value};
use sha2::Digest;

const VERIFY_URL: &str = "https://site.test/verify";
const RESET_URL: &str = "https://site.test/reset";
const PASSWORD: &str = "first-password";

fn options(mail: &MailServer, env: &[(&str, &str)]) -> HostOptions {
    let mut opts = HostOptions::svc();
    opts.env.extend(mail.host_env());
    for (k, v) in [
        ("PUBLIC_REGISTRATION", "true"),
        ("PUBLIC_URL", "http://platform.test"),
        ("USER_REGISTER_URL_ALLOW_LIST", VERIFY_URL),
        ("PASSWORD_RESET_URL_ALLOW_LIST", RESET_URL),
    ]
    .into_iter()
    .chain(env.iter().copied())
    {
        opts.env.push((k.to_string(), v.to_string()));
    }
    opts
}

fn mail_host(mail: &MailServer, env: &[(&str, &str)]) -> Host {
    Host::start(options(mail, env))
}

/// Signs in; the access token.
fn access(host: &Host, email: &str, password: &str) -> String {
    let r = host.login(email, password);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"]["access_token"]
        .as_str()
        .expect("access token")
        .to_string()
}

fn error(r: &Resp) -> (u16, String, String) {
    let v = r.json();
    (
        r.status,
        v["errors"][0]["extensions"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        v["errors"][0]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

fn register(host: &Host, body: Value) -> Resp {
    host.post("/users/register", None, &body)
}

fn verify(host: &Host, token: &str) -> Resp {
    host.get(&format!("/users/register/verify-email?token={token}"), None)
}

fn reset(host: &Host, token: &str, password: &str) -> Resp {
    host.post(
        "/auth/password/reset",
        None,
        &json!({"token": token, "password": password}),
    )
}

/// A Viewer with [`PASSWORD`], made by an administrator.
fn viewer(host: &Host, email: &str) -> String {
    let roles = host.get(
        "/items/platform_roles?filter[name][_eq]=Viewer",
        Some(ADMIN_TOKEN),
    );
    let role = roles.json()["data"][0]["id"].clone();
    host.admin_create(
        "platform_users",
        &json!({"email": email, "password": PASSWORD, "role": role}),
    )["id"]
        .as_str()
        .expect("id")
        .to_string()
}

/// Time for a mail that would come to have come.
fn settle() {
    std::thread::sleep(Duration::from_millis(1500));
}

#[test]
fn a_registration_is_verified_with_the_mailed_token_then_signs_in() {
    let mail = MailServer::start();
    let host = mail_host(&mail, &[]);
    let email = "new@site.test";
    let body = json!({"email": "New@Site.test", "password": PASSWORD, "first_name": "N",
                      "verification_url": VERIFY_URL});
    let r = register(&host, body.clone());
    assert_eq!(r.status, 204, "{}", r.body);
    let first = mail.wait_for(email, 1);
    assert_eq!(first.subject, "Verify your email address");
    assert_eq!(first.from, "site@platform.test");
    let link = first.link().expect("a link");
    assert!(link.starts_with(&format!("{VERIFY_URL}?token=")), "{link}");
    let first_token = first.token().expect("a token");
    assert_eq!(first_token.len(), 64, "{link}");
    // Not yet: an unverified account cannot sign in.
    assert_eq!(error(&host.login(email, PASSWORD)).0, 401);
    // The token is kept only as its digest.
    let stored = host.sql_query("SELECT token FROM platform_user_tokens");
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(
        stored[0][0].as_deref(),
        Some(hex::encode(sha2::Sha256::digest(first_token.as_bytes())).as_str())
    );

    // Registering again while unverified mails a new link (as Directus).
    assert_eq!(register(&host, body).status, 204);
    let second = mail.wait_for(email, 2).token().expect("a token");
    assert_ne!(second, first_token);

    // Sent on to the admin app's sign-in, as Directus answers.
    let r = verify(&host, &first_token);
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(r.header_all("location"), ["http://platform.test/admin"]);
    let me = host.get("/users/me", Some(&access(&host, email, PASSWORD)));
    assert_eq!(me.json()["data"]["status"], "active");
    assert_eq!(me.json()["data"]["first_name"], "N");

    // Used, voided by its sibling's use, or made up: refused alike.
    for token in [
        first_token.as_str(),
        second.as_str(),
        "garbage",
        &"0".repeat(64),
    ] {
        let r = verify(&host, token);
        assert_eq!(
            error(&r),
            (
                400,
                "INVALID_PAYLOAD".into(),
                "Invalid payload. Invalid verification code.".into()
            ),
            "{token}"
        );
    }
    let r = host.get("/users/register/verify-email", None);
    assert_eq!(r.status, 400, "{}", r.body);

    // A taken, verified email: 204 and no mail, the account unchanged.
    let r = register(
        &host,
        json!({"email": email, "password": "other", "verification_url": VERIFY_URL}),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    settle();
    assert_eq!(mail.messages_to(email).len(), 2);
    assert_eq!(host.login(email, PASSWORD).status, 200);
    assert_eq!(error(&host.login(email, "other")).0, 401);
    // No API serves the tokens.
    let r = host.get("/items/platform_user_tokens", Some(ADMIN_TOKEN));
    assert!(matches!(r.status, 403 | 404), "{} {}", r.status, r.body);
}

#[test]
fn registrations_are_throttled_per_email_and_per_client_address() {
    let mail = MailServer::start();
    let host = mail_host(
        &mail,
        &[
            ("LOGIN_THROTTLE_ACCOUNT_ATTEMPTS", "3"),
            ("LOGIN_THROTTLE_ADDRESS_ATTEMPTS", "5"),
            ("LOGIN_THROTTLE_DURATION", "60"),
        ],
    );
    let flooded = "flooded@site.test";
    let body =
        |email: &str| json!({"email": email, "password": PASSWORD, "verification_url": VERIFY_URL});
    // Each registration of an unverified email mails it anew: three,
    // then 429, whatever the case of the email.
    for email in [flooded, "Flooded@site.test", flooded] {
        assert_eq!(register(&host, body(email)).status, 204);
    }
    for _ in 0..3 {
        let (status, code, _) = error(&register(&host, body(flooded)));
        assert_eq!((status, code.as_str()), (429, "REQUESTS_EXCEEDED"));
    }
    mail.wait_for(flooded, 3);
    // Per client address, across emails: two more, then 429.
    for email in ["other-1@site.test", "other-2@site.test"] {
        assert_eq!(register(&host, body(email)).status, 204);
    }
    let (status, _, _) = error(&register(&host, body("other-3@site.test")));
    assert_eq!(status, 429);
    settle();
    assert_eq!(mail.messages_to(flooded).len(), 3);
    assert!(mail.messages_to("other-3@site.test").is_empty());
}

#[test]
fn without_a_url_the_link_points_at_the_host_itself() {
    let mail = MailServer::start();
    let host = mail_host(&mail, &[("PUBLIC_REGISTRATION_VERIFY_EMAIL", "true")]);
    let email = "here@site.test";
    let r = register(&host, json!({"email": email, "password": PASSWORD}));
    assert_eq!(r.status, 204, "{}", r.body);
    let m = mail.wait_for(email, 1);
    let link = m.link().expect("a link");
    assert!(
        link.starts_with("http://platform.test/users/register/verify-email?token="),
        "{link}"
    );
    assert_eq!(error(&host.login(email, PASSWORD)).0, 401);
    let r = verify(&host, &m.token().expect("token"));
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(r.header_all("location"), ["http://platform.test/admin"]);
    assert_eq!(host.login(email, PASSWORD).status, 200);
    // An expired link is refused.
    let r = register(
        &host,
        json!({"email": "late@site.test", "password": PASSWORD}),
    );
    assert_eq!(r.status, 204);
    let late = mail.wait_for("late@site.test", 1).token().expect("token");
    host.sql("UPDATE platform_user_tokens SET expires = '2001-01-01T00:00:00.000Z'");
    assert_eq!(error(&verify(&host, &late)).0, 400);
    assert_eq!(error(&host.login("late@site.test", PASSWORD)).0, 401);
}

#[test]
fn links_outside_the_allow_lists_are_refused_as_directus_words_it() {
    let mail = MailServer::start();
    let host = mail_host(&mail, &[]);
    let r = register(
        &host,
        json!({"email": "evil@site.test", "password": PASSWORD,
               "verification_url": "https://evil.test/verify"}),
    );
    assert_eq!(
        error(&r),
        (
            400,
            "INVALID_PAYLOAD".into(),
            "Invalid payload. URL \"https://evil.test/verify\" can't be used to verify registered users."
                .into()
        )
    );
    // Same origin and path, another query: allowed, as Directus compares.
    let r = register(
        &host,
        json!({"email": "q@site.test", "password": PASSWORD,
               "verification_url": format!("{VERIFY_URL}?lang=fr")}),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    let link = mail.wait_for("q@site.test", 1).link().expect("link");
    assert!(
        link.starts_with(&format!("{VERIFY_URL}?lang=fr&token=")),
        "{link}"
    );

    viewer(&host, "known@site.test");
    let r = host.post(
        "/auth/password/request",
        None,
        &json!({"email": "known@site.test", "reset_url": "https://evil.test/reset"}),
    );
    assert_eq!(
        error(&r),
        (
            400,
            "INVALID_PAYLOAD".into(),
            "Invalid payload. URL \"https://evil.test/reset\" can't be used to reset passwords."
                .into()
        )
    );
    // JSON only, as sign-in.
    let r = host.request_with(
        "POST",
        "/auth/password/request",
        &[("Content-Type", "text/plain")],
        Some(br#"{"email":"known@site.test"}"#),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let r = host.post("/auth/password/request", None, &json!({}));
    assert_eq!(
        error(&r),
        (
            400,
            "INVALID_PAYLOAD".into(),
            "Invalid payload. \"email\" field is required.".into()
        )
    );
    settle();
    assert!(mail.messages_to("known@site.test").is_empty());
    assert!(mail.messages_to("evil@site.test").is_empty());
}

#[test]
fn a_password_reset_by_mail_sets_the_password_once_and_ends_sessions() {
    let mail = MailServer::start();
    let host = mail_host(&mail, &[]);
    let email = "member@site.test";
    viewer(&host, email);
    let old_session = access(&host, email, PASSWORD);

    // A known and an unknown email: the same answer, in the same time.
    let ask = |who: &str| {
        let started = Instant::now();
        let r = host.post(
            "/auth/password/request",
            None,
            &json!({"email": who, "reset_url": RESET_URL}),
        );
        (r.status, r.body, started.elapsed())
    };
    let known = ask("Member@Site.test");
    let unknown = ask("nobody@site.test");
    assert_eq!((known.0, &known.1), (204, &String::new()));
    assert_eq!((unknown.0, &unknown.1), (204, &String::new()));
    for took in [known.2, unknown.2] {
        assert!(took >= Duration::from_millis(500), "{took:?}");
    }
    let m = mail.wait_for(email, 1);
    assert_eq!(m.subject, "Password Reset Request");
    let link = m.link().expect("link");
    assert!(link.starts_with(&format!("{RESET_URL}?token=")), "{link}");
    let token = m.token().expect("token");
    settle();
    assert!(mail.messages_to("nobody@site.test").is_empty());
    assert_eq!(mail.messages().len(), 1);

    // Without a reset_url: the host's PUBLIC_URL + /admin/reset-password.
    assert_eq!(
        host.post("/auth/password/request", None, &json!({"email": email}))
            .status,
        204
    );
    let other = mail.wait_for(email, 2);
    assert!(
        other
            .link()
            .expect("link")
            .starts_with("http://platform.test/admin/reset-password?token="),
        "{:?}",
        other.link()
    );

    let r = reset(&host, &token, "second-password");
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(host.get("/users/me", Some(&old_session)).status, 401);
    assert_eq!(error(&host.login(email, PASSWORD)).0, 401);
    access(&host, email, "second-password");
    // Used: refused; so is the other link mailed before the reset.
    for t in [
        token.as_str(),
        other.token().expect("token").as_str(),
        "garbage",
    ] {
        assert_eq!(
            error(&reset(&host, t, "third-password")),
            (
                403,
                "FORBIDDEN".into(),
                "You don't have permission to access this.".into()
            ),
            "{t}"
        );
    }
    access(&host, email, "second-password");
    let r = host.post("/auth/password/reset", None, &json!({"token": "t"}));
    assert_eq!(
        error(&r).2,
        "Invalid payload. \"password\" field is required."
    );
}

#[test]
fn a_reset_asked_on_one_host_is_used_once_across_hosts() {
    let mail = MailServer::start();
    let first = mail_host(&mail, &[]);
    let second = first.start_beside(options(&mail, &[]));
    let email = "two@site.test";
    viewer(&first, email);
    let r = first.post("/auth/password/request", None, &json!({"email": email}));
    assert_eq!(r.status, 204);
    let token = mail.wait_for(email, 1).token().expect("token");
    assert_eq!(reset(&second, &token, "from-second").status, 204);
    assert_eq!(error(&reset(&first, &token, "from-first")).0, 403);
    access(&first, email, "from-second");

    // One token presented to both hosts at once: exactly one succeeds.
    let r = second.post("/auth/password/request", None, &json!({"email": email}));
    assert_eq!(r.status, 204);
    let token = mail.wait_for(email, 2).token().expect("token");
    let statuses = std::thread::scope(|s| {
        let a = s.spawn(|| reset(&first, &token, "race-first").status);
        let b = s.spawn(|| reset(&second, &token, "race-second").status);
        let mut both = vec![a.join().unwrap(), b.join().unwrap()];
        both.sort();
        both
    });
    assert_eq!(statuses, vec![204, 403]);
    let signed_in = [
        first.login(email, "race-first").status,
        first.login(email, "race-second").status,
    ];
    assert_eq!(
        signed_in.iter().filter(|s| **s == 200).count(),
        1,
        "{signed_in:?}"
    );
}

#[test]
fn a_failing_mail_server_loses_no_account_and_tells_nothing() {
    let mail = MailServer::start();
    let port = mail.port;
    drop(mail);
    // Nobody listens there any more.
    let mut opts = HostOptions::svc();
    for (k, v) in [
        ("EMAIL_TRANSPORT", "smtp".to_string()),
        ("EMAIL_SMTP_HOST", "127.0.0.1".to_string()),
        ("EMAIL_SMTP_PORT", port.to_string()),
        ("PUBLIC_REGISTRATION", "true".to_string()),
        ("PUBLIC_REGISTRATION_VERIFY_EMAIL", "true".to_string()),
    ] {
        opts.env.push((k.to_string(), v));
    }
    let host = Host::start(opts);
    let r = register(
        &host,
        json!({"email": "kept@site.test", "password": PASSWORD}),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    let users = host.get(
        "/items/platform_users?filter[email][_eq]=kept@site.test&fields=status",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(
        users.json()["data"][0]["status"],
        "unverified",
        "{}",
        users.body
    );
    eventually("the failed send logged", Duration::from_secs(30), || {
        let log = host.log();
        if log.contains("could not send the mail") {
            Ok(())
        } else {
            Err(log)
        }
    });
}

#[test]
fn the_log_transport_writes_the_link_to_the_log() {
    let mut opts = HostOptions::svc();
    opts.env.push(("PUBLIC_REGISTRATION".into(), "true".into()));
    opts.env
        .push(("PUBLIC_REGISTRATION_VERIFY_EMAIL".into(), "true".into()));
    let host = Host::start(opts);
    let r = register(
        &host,
        json!({"email": "logged@site.test", "password": PASSWORD}),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    let token = eventually("the link logged", Duration::from_secs(20), || {
        let log = host.log();
        match log.find("/users/register/verify-email?token=") {
            Some(at) => Ok(log[at..]
                .trim_start_matches("/users/register/verify-email?token=")
                .chars()
                .take_while(char::is_ascii_hexdigit)
                .collect::<String>()),
            None => Err(log),
        }
    });
    assert_eq!(verify(&host, &token).status, 302);
    assert_eq!(host.login("logged@site.test", PASSWORD).status, 200);
}
