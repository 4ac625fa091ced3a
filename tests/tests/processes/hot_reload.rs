//! Hot reload (`EXTENSIONS_AUTO_RELOAD`): a running host mounts a new or
//! rebuilt library from its extensions folder, keeps the previous copy
//! when the new one is refused, unmounts a removed one, and does none of
//! it when the setting is off.

use std::fs;
use std::time::Duration;

use platform_tests::time::eventually;
use platform_tests::{library, Host, HostOptions, ADMIN_TOKEN};
use serde_json::Value;

/// Long enough for a few readings of the folder on a busy machine.
const WITHIN: Duration = Duration::from_secs(20);

/// The ids and versions `/server/extensions` lists.
fn mounted(host: &Host) -> Vec<(String, String)> {
    let r = host.get("/server/extensions", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap_or_default().to_string(),
                e["version"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn version_route(host: &Host) -> Result<Value, String> {
    let r = host.get("/hello/version", None);
    match r.status {
        200 => Ok(r.json()),
        other => Err(format!("{other} {}", r.body)),
    }
}

#[test]
fn a_running_host_mounts_new_and_rebuilt_libraries_and_keeps_the_last_good_copy() {
    let host = Host::start(
        HostOptions::with(vec![library("hello")]).env_var("EXTENSIONS_AUTO_RELOAD", "true"),
    );
    let folder = host.extensions_dir();
    let hello = folder.join("libhello.so");
    assert_eq!(mounted(&host), vec![("hello".into(), "0.1.0".into())]);
    assert_eq!(host.get("/hello/version", None).status, 404);

    // A rebuild: the file is rewritten in place (as `cp` does) while the
    // host serves the copy it loaded, and requests keep being answered.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (answer, statuses) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut statuses = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                statuses.push(host.get("/hello/version", None).status);
            }
            statuses
        });
        fs::copy(library("hello_v2"), &hello).expect("rebuild in place");
        let answer = eventually("the rebuilt hello serves /hello/version", WITHIN, || {
            version_route(&host)
        });
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (answer, reader.join().expect("reader"))
    });
    assert!(
        statuses.iter().all(|s| *s == 404 || *s == 200),
        "every request during the reload answered by one copy or the other: {statuses:?}"
    );
    assert_eq!(answer["version"], "2.0.0", "{answer}");
    assert_eq!(mounted(&host), vec![("hello".into(), "2.0.0".into())]);
    // Its new migration ran.
    let tags = host.get("/items/hello_tags", Some(ADMIN_TOKEN));
    assert_eq!(tags.status, 200, "{}", tags.body);
    assert!(
        host.log()
            .contains("reloaded extension `hello` (Hello 0.1.0 -> 2.0.0)"),
        "{}",
        host.log()
    );

    // A broken build is refused and the last good copy keeps serving.
    fs::write(&hello, b"not a library").expect("break the library");
    eventually("the broken library is refused", WITHIN, || {
        let log = host.log();
        if log.contains("keeps serving") {
            Ok(())
        } else {
            Err(log)
        }
    });
    assert!(host.log().contains(&format!(
        "refused extension {}: cannot open the library",
        hello.display()
    )));
    assert_eq!(
        version_route(&host).map(|v| v["version"].clone()),
        Ok("2.0.0".into())
    );

    // A new library is mounted beside it.
    fs::copy(library("fixture_ext"), folder.join("libfixture_ext.so")).expect("add a library");
    eventually("the new library is mounted", WITHIN, || {
        let now = mounted(&host);
        if now.iter().any(|(id, _)| id == "fixture") {
            Ok(())
        } else {
            Err(format!("{now:?}"))
        }
    });
    let spec = host.get("/server/specs/oas", None).json();
    assert!(
        spec["paths"]
            .as_object()
            .is_some_and(|paths| paths.keys().any(|p| p.starts_with("/fixture/"))),
        "the OpenAPI document names the new routes"
    );

    // A removed library is unmounted.
    fs::remove_file(&hello).expect("remove the library");
    eventually("the removed library is unmounted", WITHIN, || {
        match host.get("/hello/version", None).status {
            404 => Ok(()),
            other => Err(other.to_string()),
        }
    });
    assert!(mounted(&host).iter().all(|(id, _)| id != "hello"));
}

#[test]
fn without_the_setting_the_folder_is_read_once() {
    let host = Host::start(HostOptions::with(vec![library("hello")]));
    fs::copy(
        library("fixture_ext"),
        host.extensions_dir().join("libfixture_ext.so"),
    )
    .expect("add a library");
    // Several readings' worth of time (a reading every 500 ms when on).
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(mounted(&host), vec![("hello".into(), "0.1.0".into())]);
    assert!(!host.log().contains("watching"));
}

/// Waits for the host's log to say `what`.
fn logged(host: &Host, what: &str) {
    eventually(&format!("the log says {what:?}"), WITHIN, || {
        let log = host.log();
        if log.contains(what) {
            Ok(())
        } else {
            Err(log)
        }
    });
}

#[test]
fn a_library_copied_slowly_is_mounted_once_whole_and_the_host_lives() {
    let host = Host::start(
        HostOptions::with(vec![library("hello")]).env_var("EXTENSIONS_AUTO_RELOAD", "true"),
    );
    let hello = host.extensions_dir().join("libhello.so");
    let whole = fs::read(library("hello_v2")).expect("hello v2");
    let (first, rest) = whole.split_at(whole.len() / 2);
    // A copy in two halves with a pause longer than two readings of the
    // folder: the first half settles, and is refused, not mapped.
    fs::write(&hello, first).expect("first half");
    std::thread::sleep(Duration::from_millis(1500));
    logged(&host, "truncated");
    assert_eq!(host.get("/server/ping", None).status, 200);
    assert!(host.log().contains("keeps serving"), "{}", host.log());
    assert_eq!(host.get("/hello/version", None).status, 404);
    {
        use std::io::Write;
        let mut file = fs::OpenOptions::new()
            .append(true)
            .open(&hello)
            .expect("open to append");
        file.write_all(rest).expect("second half");
    }
    let answer = eventually("the whole hello serves /hello/version", WITHIN, || {
        version_route(&host)
    });
    assert_eq!(answer["version"], "2.0.0", "{answer}");
    assert_eq!(mounted(&host), vec![("hello".into(), "2.0.0".into())]);
}

#[test]
fn a_truncated_library_is_refused_with_a_log_line_and_mounted_once_whole() {
    let host = Host::start(
        HostOptions::with(vec![library("hello")]).env_var("EXTENSIONS_AUTO_RELOAD", "true"),
    );
    let added = host.extensions_dir().join("libfixture_ext.so");
    let whole = fs::read(library("fixture_ext")).expect("fixture");
    // Cut short and left so.
    fs::write(&added, &whole[..whole.len() * 9 / 10]).expect("truncated copy");
    logged(
        &host,
        &format!(
            "refused extension {}: cannot open the library",
            added.display()
        ),
    );
    assert!(host.log().contains("truncated"), "{}", host.log());
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(host.get("/server/ping", None).status, 200);
    assert_eq!(mounted(&host), vec![("hello".into(), "0.1.0".into())]);
    // Made whole: mounted.
    fs::write(&added, &whole).expect("whole copy");
    eventually("the whole library is mounted", WITHIN, || {
        let now = mounted(&host);
        if now.iter().any(|(id, _)| id == "fixture") {
            Ok(())
        } else {
            Err(format!("{now:?}"))
        }
    });
}
