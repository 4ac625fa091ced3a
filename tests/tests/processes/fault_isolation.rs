//! Fault isolation (issue 7): an extension that panics, runs too long
//! ("loops") or answers garbage in one route does not take down other
//! routes or other extensions, and clients that stall in their headers or
//! body are cut off on time.
//!
//! The fixture extension (`tests/fixtures/fixture-ext`) is mounted beside
//! svc: `/fixture/panic` panics, `/fixture/sleep?ms=N` sleeps, `/fixture/garbage`
//! answers status 1000 with a CR-LF in its content type, `/fixture/ok`
//! answers 200. Hosts are started with short limits
//! (`--extension-timeout-ms 500`, `--header-timeout-ms 300`,
//! `--body-timeout-ms 300`).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use platform_tests::{Host, HostOptions};
use serde_json::{json, Value};

const EXTENSION_TIMEOUT_MS: u64 = 500;
const HEADER_TIMEOUT_MS: u64 = 300;
const BODY_TIMEOUT_MS: u64 = 300;

fn host_with_fixture() -> Host {
    Host::start(
        HostOptions::svc_and_fixture()
            .arg("--extension-timeout-ms")
            .arg(&EXTENSION_TIMEOUT_MS.to_string())
            .arg("--header-timeout-ms")
            .arg(&HEADER_TIMEOUT_MS.to_string())
            .arg("--body-timeout-ms")
            .arg(&BODY_TIMEOUT_MS.to_string()),
    )
}

fn addr(host: &Host) -> String {
    host.base.trim_start_matches("http://").to_string()
}

/// The healthy routes of both extensions answer 200 with their usual body.
fn assert_others_serve(host: &Host, when: &str) {
    let r = host.get("/svc/stats", None);
    assert_eq!(r.status, 200, "{when}: /svc/stats {}", r.body);
    assert!(r.json()["videos_count"].is_number(), "{when}: {}", r.body);
    let r = host.get("/fixture/ok", None);
    assert_eq!(r.status, 200, "{when}: /fixture/ok {}", r.body);
    assert_eq!(r.json()["ok"], true, "{when}: {}", r.body);
    let r = host.get("/server/health", None);
    assert_eq!(r.status, 200, "{when}: /server/health {}", r.body);
}

/// Probes `/svc/stats` and `/fixture/ok` from a thread until `done`; every
/// answer must be a quick 200. Returns (probes, slowest).
fn prober(host: &Host, done: Arc<AtomicBool>) -> thread::JoinHandle<(usize, Duration)> {
    let base = host.base.clone();
    thread::spawn(move || {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(10))
            .build();
        let mut probes = 0;
        let mut slowest = Duration::ZERO;
        while !done.load(Ordering::Relaxed) {
            for path in ["/svc/stats", "/fixture/ok"] {
                let started = Instant::now();
                let r = agent.get(&format!("{base}{path}")).call();
                let took = started.elapsed();
                let status = match r {
                    Ok(r) => r.status(),
                    Err(ureq::Error::Status(code, _)) => code,
                    Err(e) => panic!("{path} during the fault: transport error {e}"),
                };
                assert_eq!(status, 200, "{path} during the fault");
                assert!(
                    took < Duration::from_secs(2),
                    "{path} took {took:?} during the fault"
                );
                slowest = slowest.max(took);
                probes += 1;
            }
            thread::sleep(Duration::from_millis(20));
        }
        (probes, slowest)
    })
}

/// An answer read from a raw socket: status, headers (lower-case names) and
/// body.
struct RawAnswer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn read_answer(stream: &mut TcpStream) -> std::io::Result<RawAnswer> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::Error::new(
                ErrorKind::UnexpectedEof,
                format!(
                    "closed before a full answer: {:?}",
                    String::from_utf8_lossy(&buf)
                ),
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(RawAnswer {
        status,
        headers,
        body,
    })
}

fn raw_get(host: &Host, path: &str) -> RawAnswer {
    let mut stream = TcpStream::connect(addr(host)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    read_answer(&mut stream).unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// Waits for the server to close `stream`; the time it took, or None if it
/// was still open after `limit`. Bytes the server sends before closing are
/// returned too.
fn wait_closed(stream: &mut TcpStream, limit: Duration) -> (Option<Duration>, Vec<u8>) {
    let started = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let mut seen = Vec::new();
    let mut chunk = [0u8; 1024];
    while started.elapsed() < limit {
        match stream.read(&mut chunk) {
            Ok(0) => return (Some(started.elapsed()), seen),
            Ok(n) => seen.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return (Some(started.elapsed()), seen),
        }
    }
    (None, seen)
}

// ---------------------------------------------------------------- handlers

#[test]
fn a_handler_past_the_timeout_answers_504_while_other_routes_and_extensions_serve() {
    let host = host_with_fixture();
    let done = Arc::new(AtomicBool::new(false));
    let probe = prober(&host, done.clone());
    let started = Instant::now();
    // Several slow handlers at once, each far past the limit.
    let sleepers: Vec<_> = (0..4)
        .map(|_| {
            let base = host.base.clone();
            thread::spawn(move || {
                let agent = ureq::AgentBuilder::new()
                    .timeout(Duration::from_secs(30))
                    .build();
                let started = Instant::now();
                let (status, body) =
                    match agent.get(&format!("{base}/fixture/sleep?ms=5000")).call() {
                        Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
                        Err(ureq::Error::Status(code, r)) => {
                            (code, r.into_string().unwrap_or_default())
                        }
                        Err(e) => panic!("sleep: transport error {e}"),
                    };
                (status, body, started.elapsed())
            })
        })
        .collect();
    for s in sleepers {
        let (status, body, took) = s.join().expect("sleeper");
        assert_eq!(status, 504, "a 5 s handler under a 500 ms limit: {body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("not JSON: {body}"));
        assert_eq!(v, json!({"error": "Extension timed out"}));
        assert!(
            took >= Duration::from_millis(EXTENSION_TIMEOUT_MS - 50),
            "504 before the limit: {took:?}"
        );
        assert!(
            took < Duration::from_millis(1500),
            "504 came after {took:?}, not about {EXTENSION_TIMEOUT_MS} ms"
        );
        println!("fault isolation: 5 s handler answered 504 after {took:?}");
    }
    // Keep probing while the abandoned handlers are still sleeping.
    thread::sleep(Duration::from_millis(1000));
    done.store(true, Ordering::Relaxed);
    let (probes, slowest) = probe.join().expect("prober");
    println!(
        "fault isolation: {probes} probes of /svc/stats and /fixture/ok answered 200 during the timeouts, slowest {slowest:?}"
    );
    assert!(
        probes >= 10,
        "only {probes} probes ran during the slow handlers"
    );
    // After the abandoned handlers have finished too, the same extension and
    // the others serve, including the route that timed out.
    let left = Duration::from_millis(5300).saturating_sub(started.elapsed());
    thread::sleep(left);
    assert_others_serve(&host, "after the timeouts");
    let r = host.get("/fixture/sleep?ms=10", None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json(), json!({"slept": 10}));
}

#[test]
fn a_handler_that_never_returns_does_not_hold_the_host() {
    let host = host_with_fixture();
    // "Loops": handlers that would run for ten minutes.
    let stuck: Vec<_> = (0..3)
        .map(|_| {
            let base = host.base.clone();
            thread::spawn(move || {
                let started = Instant::now();
                let status = match ureq::get(&format!("{base}/fixture/sleep?ms=600000")).call() {
                    Ok(r) => r.status(),
                    Err(ureq::Error::Status(code, _)) => code,
                    Err(e) => panic!("stuck handler: transport error {e}"),
                };
                (status, started.elapsed())
            })
        })
        .collect();
    for s in stuck {
        let (status, took) = s.join().expect("stuck");
        assert_eq!(status, 504, "a never-ending handler");
        assert!(took < Duration::from_millis(1500), "504 after {took:?}");
    }
    for _ in 0..3 {
        assert_others_serve(&host, "with stuck handlers");
    }
    // Stopping the host must not wait on the handlers it abandoned.
    let started = Instant::now();
    let stopped = host.stop_gracefully();
    let took = started.elapsed();
    println!("fault isolation: SIGTERM with 3 stuck handlers: {stopped:?} after {took:?}");
    if let Err(e) = stopped {
        panic!("abandoned handlers still running, the host did not stop cleanly ({took:?}): {e}");
    }
}

#[test]
fn garbage_from_an_extension_answers_500_without_the_injected_header() {
    let host = host_with_fixture();
    for _ in 0..5 {
        let a = raw_get(&host, "/fixture/garbage");
        assert_eq!(
            a.status,
            500,
            "status 1000 from an extension: {}",
            String::from_utf8_lossy(&a.body)
        );
        assert!(
            a.headers.iter().all(|(k, _)| k != "x-injected"),
            "an extension's CR-LF reached the headers: {:?}",
            a.headers
        );
        let v: Value = serde_json::from_slice(&a.body)
            .unwrap_or_else(|_| panic!("not JSON: {:?}", String::from_utf8_lossy(&a.body)));
        assert_eq!(v, json!({"error": "Internal extension error"}));
        let ct = a
            .headers
            .iter()
            .find(|(k, _)| k == "content-type")
            .map(|(_, v)| v.as_str())
            .unwrap_or_default();
        assert!(ct.starts_with("application/json"), "content type {ct:?}");
    }
    // Through a normal client too: no injected header either.
    let r = ureq::get(&format!("{}/fixture/garbage", host.base)).call();
    match r {
        Err(ureq::Error::Status(500, resp)) => {
            assert!(resp.header("x-injected").is_none(), "injected header")
        }
        other => panic!("garbage answered {other:?}"),
    }
    assert_others_serve(&host, "after garbage");
}

#[test]
fn panics_answer_500_and_the_host_keeps_serving() {
    let host = host_with_fixture();
    let done = Arc::new(AtomicBool::new(false));
    let probe = prober(&host, done.clone());
    let panickers: Vec<_> = (0..6)
        .map(|_| {
            let base = host.base.clone();
            thread::spawn(move || {
                let agent = ureq::AgentBuilder::new()
                    .timeout(Duration::from_secs(10))
                    .build();
                for _ in 0..15 {
                    match agent.get(&format!("{base}/fixture/panic")).call() {
                        Err(ureq::Error::Status(500, r)) => {
                            let body = r.into_string().unwrap_or_default();
                            let v: Value = serde_json::from_str(&body)
                                .unwrap_or_else(|_| panic!("not JSON: {body}"));
                            assert_eq!(v, json!({"error": "Internal extension error"}));
                        }
                        other => panic!("a panicking handler answered {other:?}"),
                    }
                }
            })
        })
        .collect();
    for p in panickers {
        p.join().expect("panicking requests");
    }
    done.store(true, Ordering::Relaxed);
    let (probes, _) = probe.join().expect("prober");
    println!("fault isolation: 90 panics answered 500; {probes} probes answered 200 meanwhile");
    assert!(probes > 0, "no probe ran during the panics");
    assert_others_serve(&host, "after 90 panics");
    // The panicking extension's other routes still work.
    let r = host.get("/fixture/sleep?ms=1", None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        host.log().contains("fixture panic"),
        "the panic is not reported in the host log"
    );
}

// ---------------------------------------------------------------- slow clients

#[test]
fn clients_stalling_in_their_headers_are_disconnected_after_the_header_timeout() {
    let host = host_with_fixture();
    // Half a request head (eight clients), and a client that sends nothing
    // at all; each watched from its own thread from the moment it stalls.
    let stallers: Vec<_> = (0..9)
        .map(|i| {
            let a = addr(&host);
            thread::spawn(move || {
                let mut s = TcpStream::connect(a).expect("connect");
                if i < 8 {
                    s.write_all(b"GET /svc/stats HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
                        .expect("send half");
                }
                wait_closed(&mut s, Duration::from_secs(5))
            })
        })
        .collect();
    // While they stall, others are served.
    thread::sleep(Duration::from_millis(50));
    assert_others_serve(&host, "while clients stall in their headers");
    for (i, s) in stallers.into_iter().enumerate() {
        let (closed, seen) = s.join().expect("staller");
        let what = if i < 8 { "half-headers" } else { "silent" };
        let text = String::from_utf8_lossy(&seen).to_string();
        assert!(
            !text.contains(" 200 "),
            "a half request head was answered: {text}"
        );
        let after = closed.unwrap_or_else(|| {
            panic!("{what} client {i} still connected 5 s after a {HEADER_TIMEOUT_MS} ms header timeout")
        });
        assert!(
            after >= Duration::from_millis(HEADER_TIMEOUT_MS - 50)
                && after < Duration::from_millis(2000),
            "{what} client {i} cut off after {after:?}, not about {HEADER_TIMEOUT_MS} ms"
        );
        if i == 0 || i == 8 {
            println!("fault isolation: {what} client disconnected after {after:?}");
        }
    }
    assert_others_serve(&host, "after stalled headers");
}

fn stalled_body(host: &Host, path: &str, token: Option<&str>) -> (RawAnswer, Duration) {
    let mut s = TcpStream::connect(addr(host)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: localhost\r\n{auth}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"title\":"
    )
    .expect("send");
    let started = Instant::now();
    let answer = read_answer(&mut s).unwrap_or_else(|e| panic!("POST {path} stalled body: {e}"));
    (answer, started.elapsed())
}

#[test]
fn a_stalled_body_gets_408_after_the_body_timeout() {
    let host = host_with_fixture();
    host.user(Some("Viewer"), "slow-body-viewer");
    for (path, token) in [
        ("/svc/recordings", Some("slow-body-viewer")),
        ("/fixture/tx", None),
        ("/items/platform_comments", Some("slow-body-viewer")),
    ] {
        let (a, took) = stalled_body(&host, path, token);
        let body = String::from_utf8_lossy(&a.body).to_string();
        assert_eq!(a.status, 408, "{path} with a stalled body: {body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("not JSON: {body}"));
        assert_eq!(v, json!({"error": "Request body timed out"}), "{path}");
        assert!(
            took >= Duration::from_millis(BODY_TIMEOUT_MS - 50)
                && took < Duration::from_millis(2000),
            "{path}: 408 after {took:?}, not about {BODY_TIMEOUT_MS} ms"
        );
        println!("fault isolation: stalled body on {path} answered 408 after {took:?}");
    }
    // Nothing was written by the cut-off requests, and others are served.
    let r = host.get("/svc/recordings", Some("slow-body-viewer"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json(), json!([]), "a stalled create left a recording");
    assert_others_serve(&host, "after stalled bodies");
}
