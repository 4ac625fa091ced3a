//! Cached routes: answers kept per data version, bypassed for callers,
//! dropped at the time the handler gave.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

mod common;

use common::NoServices;
use host_sdk::{Accountability, Extension, Request, Response};

struct Fixture {
    ext: Extension,
    runs: Arc<AtomicUsize>,
    version: Arc<AtomicU64>,
    /// How often the data version was read.
    reads: Arc<AtomicUsize>,
}

/// `/count` (cached) answers how often its handler ran; `/plain` is not
/// cached; `/soon` is cached but expires 500 ms after it was computed;
/// `/kept` (cached) answers whether the handler's answer is to be kept;
/// `/public` is cached and the same for every caller, and counts its runs
/// too.
fn fixture(attach: bool) -> Fixture {
    let runs = Arc::new(AtomicUsize::new(0));
    let version = Arc::new(AtomicU64::new(1));
    let (a, b, c, d) = (runs.clone(), runs.clone(), runs.clone(), runs.clone());
    let ext = Extension::new("t", "T", "0.1.0").routes(move |r| {
        r.get("/count", move |req, _| {
            let n = a.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(Response::text(
                200,
                format!("{n} {}", req.query("q").unwrap_or("")),
            ))
        })
        .cached();
        r.get("/plain", move |_, _| {
            Ok(Response::text(
                200,
                (b.fetch_add(1, Ordering::SeqCst) + 1).to_string(),
            ))
        });
        r.get("/soon", move |_, ctx| {
            ctx.fresh_until(SystemTime::now() + Duration::from_millis(500));
            Ok(Response::text(
                200,
                (c.fetch_add(1, Ordering::SeqCst) + 1).to_string(),
            ))
        })
        .cached();
        r.get("/public", move |_, _| {
            Ok(Response::text(
                200,
                (d.fetch_add(1, Ordering::SeqCst) + 1).to_string(),
            ))
        })
        .cached()
        .same_for_every_caller();
        r.get("/kept", |_, ctx| {
            Ok(Response::text(200, ctx.answer_is_kept().to_string()))
        })
        .cached();
    });
    let reads = Arc::new(AtomicUsize::new(0));
    if attach {
        let (v, n) = (version.clone(), reads.clone());
        ext.attach_data_version(move || {
            n.fetch_add(1, Ordering::SeqCst);
            v.load(Ordering::SeqCst)
        });
    }
    Fixture {
        ext,
        runs,
        version,
        reads,
    }
}

fn get(f: &Fixture, target: &str, caller: Option<&str>) -> String {
    let acc = caller.map(|user| Accountability {
        user: user.into(),
        role: None,
        admin: false,
    });
    let answer = f
        .ext
        .handle_direct(Request::new("GET", target, ""), acc, &NoServices::default());
    assert_eq!(answer.status, 200);
    String::from_utf8(answer.body).expect("utf-8")
}

#[test]
fn anonymous_answers_are_kept_until_the_data_version_moves() {
    let f = fixture(true);
    assert_eq!(get(&f, "/count?q=a", None), "1 a");
    assert_eq!(get(&f, "/count?q=a", None), "1 a");
    // Another query is another answer.
    assert_eq!(get(&f, "/count?q=b", None), "2 b");
    assert_eq!(f.runs.load(Ordering::SeqCst), 2);
    f.version.store(2, Ordering::SeqCst);
    assert_eq!(get(&f, "/count?q=a", None), "3 a");
    assert_eq!(get(&f, "/count?q=a", None), "3 a");
}

#[test]
fn callers_and_uncached_routes_always_run_the_handler() {
    let f = fixture(true);
    assert_eq!(get(&f, "/count", None), "1 ");
    assert_eq!(get(&f, "/count", Some("u1")), "2 ");
    assert_eq!(get(&f, "/count", Some("u1")), "3 ");
    assert_eq!(get(&f, "/plain", None), "4");
    assert_eq!(get(&f, "/plain", None), "5");
}

#[test]
fn answers_the_same_for_every_caller_are_shared_by_callers() {
    let f = fixture(true);
    assert_eq!(get(&f, "/public", Some("u1")), "1");
    assert_eq!(get(&f, "/public", None), "1");
    assert_eq!(get(&f, "/public", Some("u2")), "1");
    f.version.store(2, Ordering::SeqCst);
    assert_eq!(get(&f, "/public", Some("u2")), "2");
    assert_eq!(get(&f, "/public", Some("u1")), "2");
    // A route without the promise still runs for every caller.
    assert_eq!(get(&f, "/count", Some("u1")), "3 ");
    assert_eq!(get(&f, "/count", Some("u1")), "4 ");
}

#[test]
fn nothing_is_kept_without_a_data_version() {
    let f = fixture(false);
    assert_eq!(get(&f, "/count", None), "1 ");
    assert_eq!(get(&f, "/count", None), "2 ");
}

#[test]
fn an_answer_expires_at_the_time_its_handler_gave() {
    let f = fixture(true);
    assert_eq!(get(&f, "/soon", None), "1");
    assert_eq!(get(&f, "/soon", None), "1");
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(get(&f, "/soon", None), "2");
}

#[test]
fn only_cacheable_requests_read_the_data_version() {
    let f = fixture(true);
    get(&f, "/plain", None);
    get(&f, "/count", Some("u1"));
    assert_eq!(f.reads.load(Ordering::SeqCst), 0);
    get(&f, "/count", None);
    assert_eq!(f.reads.load(Ordering::SeqCst), 1);
}

#[test]
fn handlers_know_whether_their_answer_is_kept() {
    let f = fixture(true);
    assert_eq!(get(&f, "/kept", Some("u1")), "false");
    assert_eq!(get(&f, "/kept", None), "true");
    let without = fixture(false);
    assert_eq!(get(&without, "/kept", None), "false");
}

#[test]
fn a_kept_answer_is_served_by_sharing_its_bytes() {
    let f = fixture(true);
    let shared = |target: &str| {
        f.ext
            .handle_direct_shared(
                Request::new("GET", target, ""),
                None,
                &NoServices::default(),
            )
            .body
    };
    let first = shared("/count");
    let second = shared("/count");
    assert_eq!(&*second, b"1 ");
    assert_eq!(
        first.as_ptr(),
        second.as_ptr(),
        "the same bytes, not a copy"
    );
    // An answer that is not kept is its handler's own buffer.
    assert_ne!(shared("/plain").as_ptr(), shared("/plain").as_ptr());
}
