//! Throttling, as Directus offers it: the rate limiter (`RATE_LIMITER_*`,
//! off by default) answers 429 with `Retry-After` in Directus's shape past
//! its points per client address, until its window ends; the sign-in
//! throttle (`LOGIN_THROTTLE_*`, on by default) refuses sign-ins past a
//! bound of attempts per account and per client address, the right
//! password included, before any password is checked, and the same way
//! for an unknown email; with the database store, hosts on one database
//! count into the same windows.
//!
//! Windows here are a few seconds long, so that the tests wait them out.

use std::thread::sleep;
use std::time::{Duration, Instant};

use platform_tests::{Host, HostOptions, Resp};
use serde_json::json;

const PASSWORD: &str = "correct horse battery staple";

/// A user who signs in as `{name}@test.local` with [`PASSWORD`].
fn account(host: &Host, name: &str) -> String {
    host.user_with(Some("Viewer"), name, &json!({"password": PASSWORD}));
    format!("{name}@test.local")
}

/// The seconds of the answer's `Retry-After`.
fn retry_after(r: &Resp) -> u64 {
    let values = r.header_all("retry-after");
    assert_eq!(values.len(), 1, "one Retry-After: {:?}", r.headers);
    values[0]
        .parse()
        .unwrap_or_else(|_| panic!("Retry-After is seconds: {}", values[0]))
}

/// A 429 in Directus's shape, with `Retry-After` of at most `window`
/// seconds and the limit reached; returns the seconds to wait.
fn assert_too_many(r: &Resp, limit: u64, window: u64) -> u64 {
    assert_eq!(r.status, 429, "{}", r.body);
    let body = r.json();
    let error = &body["errors"][0];
    assert_eq!(
        error["extensions"]["code"], "REQUESTS_EXCEEDED",
        "{}",
        r.body
    );
    assert_eq!(error["extensions"]["limit"], json!(limit), "{}", r.body);
    let reset = error["extensions"]["reset"].as_str().unwrap_or_default();
    assert!(
        reset.ends_with('Z') && reset.contains('T'),
        "reset is a date: {}",
        r.body
    );
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Too many requests, retry after ") && message.ends_with('.'),
        "{message}"
    );
    let wait = retry_after(r);
    assert!((1..=window).contains(&wait), "Retry-After {wait}");
    wait
}

fn assert_refused_credentials(r: &Resp) {
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(
        r.json()["errors"][0]["extensions"]["code"],
        "INVALID_CREDENTIALS",
        "{}",
        r.body
    );
}

/// Waits out a window: the `Retry-After` given, and a little more.
fn wait_out(seconds: u64) {
    sleep(Duration::from_secs(seconds) + Duration::from_millis(300));
}

#[test]
fn the_rate_limiter_is_off_by_default() {
    let host = Host::start_svc_with(&[]);
    // Directus's points (50 a second) when on: far past them here.
    for _ in 0..150 {
        let r = host.get("/server/ping", None);
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.header_all("retry-after").is_empty());
    }
}

#[test]
fn past_its_points_the_rate_limiter_answers_429_until_its_window_ends() {
    let host = Host::start_svc_with(&[
        ("RATE_LIMITER_ENABLED", "true"),
        ("RATE_LIMITER_POINTS", "5"),
        ("RATE_LIMITER_DURATION", "3"),
    ]);
    let started = Instant::now();
    for _ in 0..5 {
        assert_eq!(host.get("/server/ping", None).status, 200);
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "too slow to test a window of 3 s"
    );
    // Every route counts, the host's and the extensions' alike.
    let wait = assert_too_many(&host.get("/server/ping", None), 5, 3);
    assert_too_many(&host.get("/svc/videos", None), 5, 3);
    assert_too_many(&host.login("a@test.local", "wrong"), 5, 3);
    wait_out(wait);
    assert_eq!(host.get("/server/ping", None).status, 200);
    assert_eq!(host.get("/svc/videos", None).status, 200);
}

#[test]
fn a_forwarded_address_counts_only_when_the_proxy_is_trusted() {
    let limited = [
        ("RATE_LIMITER_ENABLED", "true"),
        ("RATE_LIMITER_POINTS", "2"),
        ("RATE_LIMITER_DURATION", "30"),
    ];
    let via = |host: &Host, address: &str| {
        host.request_with("GET", "/server/ping", &[("X-Forwarded-For", address)], None)
            .status
    };
    // Untrusted, the header is the client's say: one address for all.
    let host = Host::start_svc_with(&limited);
    assert_eq!(via(&host, "203.0.113.1"), 200);
    assert_eq!(via(&host, "203.0.113.2"), 200);
    assert_eq!(via(&host, "203.0.113.3"), 429);
    drop(host);
    // Behind a trusted proxy, the address it appended is the client's.
    let mut trusted = limited.to_vec();
    trusted.push(("IP_TRUST_PROXY", "true"));
    let host = Host::start_svc_with(&trusted);
    for address in ["203.0.113.1", "203.0.113.2", "198.51.100.7, 203.0.113.3"] {
        assert_eq!(via(&host, address), 200);
        assert_eq!(via(&host, address), 200);
    }
    assert_eq!(via(&host, "203.0.113.1"), 429);
    assert_eq!(via(&host, "203.0.113.9, 203.0.113.3"), 429);
}

#[test]
fn failed_sign_ins_past_the_bound_refuse_even_the_right_password_until_the_window_ends() {
    // Long enough for three password checks of a debug build on a busy
    // machine.
    let host = Host::start_svc_with(&[
        ("LOGIN_THROTTLE_ACCOUNT_ATTEMPTS", "3"),
        ("LOGIN_THROTTLE_DURATION", "12"),
    ]);
    let email = account(&host, "bounded");
    let started = Instant::now();
    for _ in 0..3 {
        assert_refused_credentials(&host.login(&email, "wrong"));
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "too slow to test a window of 12 s"
    );
    let refused = host.login(&email, PASSWORD);
    let wait = assert_too_many(&refused, 3, 12);
    // The email in another case is the same account.
    assert_too_many(&host.login(&email.to_uppercase(), PASSWORD), 3, 12);
    // Other accounts from the same address are not refused.
    let other = account(&host, "bystander");
    assert_eq!(host.login(&other, PASSWORD).status, 200);
    wait_out(wait);
    let r = host.login(&email, PASSWORD);
    assert_eq!(r.status, 200, "{}", r.body);
}

/// [`login`] from `address`, as a trusted proxy names it.
fn login_from(host: &Host, address: &str, email: &str, password: &str) -> Resp {
    let body = json!({"email": email, "password": password}).to_string();
    host.request_with(
        "POST",
        "/auth/login",
        &[
            ("X-Forwarded-For", address),
            ("Content-Type", "application/json"),
        ],
        Some(body.as_bytes()),
    )
}

#[test]
fn past_the_account_bound_an_address_that_has_not_failed_still_signs_in() {
    let host = Host::start_svc_with(&[
        ("LOGIN_THROTTLE_ACCOUNT_ATTEMPTS", "3"),
        ("LOGIN_THROTTLE_DURATION", "60"),
        ("IP_TRUST_PROXY", "true"),
    ]);
    let email = account(&host, "locked-out-owner");
    let (attacker, owner, guesser) = ("203.0.113.66", "198.51.100.20", "198.51.100.21");
    for _ in 0..3 {
        assert_refused_credentials(&login_from(&host, attacker, &email, "wrong"));
    }
    // The attacker's address is refused, the right password included.
    assert_too_many(&login_from(&host, attacker, &email, PASSWORD), 3, 60);
    // Another address that has not tried the account gets one attempt:
    // a wrong one, and then it is refused too.
    assert_refused_credentials(&login_from(&host, guesser, &email, "wrong"));
    assert_too_many(&login_from(&host, guesser, &email, PASSWORD), 3, 60);
    // The owner, from an address that has not failed, signs in.
    let r = login_from(&host, owner, &email, PASSWORD);
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn an_unknown_email_is_throttled_as_a_known_one_is() {
    let host = Host::start_svc_with(&[
        ("LOGIN_THROTTLE_ACCOUNT_ATTEMPTS", "2"),
        ("LOGIN_THROTTLE_DURATION", "60"),
    ]);
    let known = account(&host, "known");
    let unknown = "nobody@test.local";
    for email in [known.as_str(), unknown] {
        for _ in 0..2 {
            assert_refused_credentials(&host.login(email, "wrong"));
        }
    }
    let answers: Vec<Resp> = [known.as_str(), unknown]
        .iter()
        .map(|email| host.login(email, "wrong"))
        .collect();
    for r in &answers {
        assert_too_many(r, 2, 60);
    }
    // The same answer, but for the moment the window ends.
    let shape = |r: &Resp| {
        let mut body = r.json();
        body["errors"][0]["extensions"]["reset"] = json!(null);
        body["errors"][0]["message"] = json!(null);
        body
    };
    assert_eq!(shape(&answers[0]), shape(&answers[1]));
}

#[test]
fn sign_ins_are_bounded_per_client_address_across_accounts() {
    let host = Host::start_svc_with(&[
        ("LOGIN_THROTTLE_ADDRESS_ATTEMPTS", "4"),
        ("LOGIN_THROTTLE_DURATION", "60"),
    ]);
    let email = account(&host, "spray-target");
    for i in 0..4 {
        assert_refused_credentials(&host.login(&format!("guess{i}@test.local"), "wrong"));
    }
    // A fifth account from the same address: refused before its password
    // is looked at, right or wrong.
    assert_too_many(&host.login(&email, PASSWORD), 4, 60);
    assert_too_many(&host.login("guess9@test.local", "wrong"), 4, 60);
}

#[test]
fn a_successful_sign_in_starts_its_account_afresh() {
    let host = Host::start_svc_with(&[
        ("LOGIN_THROTTLE_ACCOUNT_ATTEMPTS", "3"),
        ("LOGIN_THROTTLE_DURATION", "60"),
    ]);
    let email = account(&host, "typo");
    for _ in 0..2 {
        assert_refused_credentials(&host.login(&email, "wrong"));
    }
    assert_eq!(host.login(&email, PASSWORD).status, 200);
    for _ in 0..3 {
        assert_refused_credentials(&host.login(&email, "wrong"));
    }
    assert_too_many(&host.login(&email, PASSWORD), 3, 60);
}

#[test]
fn the_sign_in_throttle_is_on_by_default() {
    let host = Host::start_svc_with(&[]);
    let email = "nobody-by-default@test.local";
    for _ in 0..25 {
        assert_refused_credentials(&host.login(email, "wrong"));
    }
    let r = host.login(email, "wrong");
    let wait = assert_too_many(&r, 25, 900);
    assert!(wait > 800, "a window of 15 minutes: {wait}");
}

#[test]
fn hosts_on_one_database_share_the_sign_in_throttle() {
    let env = [
        ("LOGIN_THROTTLE_ACCOUNT_ATTEMPTS", "4"),
        ("LOGIN_THROTTLE_DURATION", "60"),
    ];
    let first = Host::start_svc_with(&env);
    let second = first.start_beside(HostOptions::svc_with(&env));
    let email = account(&first, "shared");
    for host in [&first, &second, &first, &second] {
        assert_refused_credentials(&host.login(&email, "wrong"));
    }
    for host in [&first, &second] {
        assert_too_many(&host.login(&email, PASSWORD), 4, 60);
    }
}

#[test]
fn hosts_on_one_database_share_the_rate_limiter_with_the_database_store() {
    let env = [
        ("RATE_LIMITER_ENABLED", "true"),
        ("RATE_LIMITER_POINTS", "4"),
        ("RATE_LIMITER_DURATION", "30"),
        ("RATE_LIMITER_STORE", "database"),
    ];
    let first = Host::start_svc_with(&env);
    let second = first.start_beside(HostOptions::svc_with(&env));
    for host in [&first, &second, &first, &second] {
        assert_eq!(host.get("/server/ping", None).status, 200);
    }
    for host in [&first, &second] {
        assert_too_many(&host.get("/server/ping", None), 4, 30);
    }
}

#[test]
fn counting_expires_no_kept_answer() {
    let host = Host::start_svc_with(&[
        ("RATE_LIMITER_ENABLED", "true"),
        ("RATE_LIMITER_POINTS", "10000"),
        ("RATE_LIMITER_DURATION", "600"),
        ("RATE_LIMITER_STORE", "database"),
    ]);
    host.admin_video("kept", Some("2001-01-01T00:00:00.000Z"));
    let videos = || {
        let r = host.get("/svc/videos", None);
        assert_eq!(r.status, 200, "{}", r.body);
    };
    videos();
    let before = host.metric("items_calls");
    for i in 0..5 {
        videos();
        assert_refused_credentials(&host.login(&format!("x{i}@test.local"), "wrong"));
    }
    videos();
    assert_eq!(
        host.metric("items_calls"),
        before,
        "the counters' writes left the data version, and the kept answer, alone"
    );
}
