//! A front end written with the real `@directus/sdk` (docs/decisions.md §3,
//! §4): the Node.js tests of `tests/sdk-js` against a host with the demo data,
//! mailing through a real SMTP server, on the backend `TEST_DB` names.

use platform_tests::node::{assert_passed, run_sdk_js};
use platform_tests::smtp::MailServer;
use platform_tests::{Host, HostOptions, ADMIN_TOKEN};

const VERIFY_URL: &str = "https://site.test/verify";
const RESET_URL: &str = "https://site.test/reset";

#[test]
fn a_directus_sdk_front_end_signs_in_and_reads() {
    // Registration and password resets mail through a real SMTP server,
    // whose folder the Node.js tests read.
    let mail = MailServer::start();
    let mut opts = HostOptions::svc().arg("--demo");
    opts.env.extend(mail.host_env());
    for (k, v) in [
        ("PUBLIC_REGISTRATION", "true"),
        ("USER_REGISTER_URL_ALLOW_LIST", VERIFY_URL),
        ("PASSWORD_RESET_URL_ALLOW_LIST", RESET_URL),
    ] {
        opts.env.push((k.to_string(), v.to_string()));
    }
    let host = Host::start(opts);
    let mail_dir = mail.folder();
    let out = run_sdk_js(
        "directus-sdk.test.js",
        &[
            ("PLATFORM_URL", host.base.as_str()),
            ("PLATFORM_ADMIN_TOKEN", ADMIN_TOKEN),
            ("PLATFORM_EMAIL", "victor@demo.local"),
            ("PLATFORM_PASSWORD", "demo-password"),
            (
                "PLATFORM_MAIL_DIR",
                mail_dir.to_str().expect("a UTF-8 path"),
            ),
            ("PLATFORM_VERIFY_URL", VERIFY_URL),
            ("PLATFORM_RESET_URL", RESET_URL),
        ],
    );
    assert_passed(&out, 14, &host);
}
