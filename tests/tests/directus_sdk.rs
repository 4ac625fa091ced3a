//! A front end written with the real `@directus/sdk` (DECISIONS §3, §4):
//! the Node.js tests of `tests/sdk-js` against a host with the demo data,
//! on the backend `TEST_DB` names.

use platform_tests::node::run_sdk_js;
use platform_tests::{Host, HostOptions, ADMIN_TOKEN};

#[test]
fn a_directus_sdk_front_end_signs_in_and_reads() {
    let host = Host::start(HostOptions::svc().arg("--demo"));
    let out = run_sdk_js(&[
        ("PLATFORM_URL", host.base.as_str()),
        ("PLATFORM_ADMIN_TOKEN", ADMIN_TOKEN),
        ("PLATFORM_EMAIL", "victor@demo.local"),
        ("PLATFORM_PASSWORD", "demo-password"),
    ]);
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{report}");
    assert!(
        out.status.success(),
        "the SDK tests failed:\n{report}\nhost log:\n{}",
        host.log()
    );
    // Every test ran: a file that failed to load reports no test at all.
    assert!(
        report.contains("ℹ pass 6") && report.contains("ℹ fail 0"),
        "{report}"
    );
}
