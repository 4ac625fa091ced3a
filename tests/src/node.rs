//! The Node.js side of the suite: `tests/sdk-js`, front-end tests written
//! with the real `@directus/sdk`, and a browser's, Chromium driven by
//! `playwright-core`; packages pinned by its `package-lock.json`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::workspace_root;

/// The folder of the Node.js tests.
pub fn sdk_js_dir() -> PathBuf {
    workspace_root().join("tests").join("sdk-js")
}

/// The admin app's sources (`admin-app`), built into `example-host/admin-dist`.
pub fn admin_app_dir() -> PathBuf {
    workspace_root().join("admin-app")
}

/// Installs the locked packages (`npm ci`) unless they are there already;
/// `scripts/test.sh` installs them first, so this is for a `cargo test`
/// run on its own. Panics with what to do when Node.js or npm is missing.
pub fn install_sdk_js() {
    install_locked(&sdk_js_dir());
}

/// [`install_sdk_js`] for the admin app's packages (its build tools).
pub fn install_admin_app() {
    install_locked(&admin_app_dir());
}

/// `npm ci` in `dir` unless its `node_modules` is as new as its lockfile.
fn install_locked(dir: &Path) {
    let installed = dir.join("node_modules").join(".package-lock.json");
    let lock = dir.join("package-lock.json");
    let fresh = match (installed.metadata(), lock.metadata()) {
        (Ok(i), Ok(l)) => i.modified().ok() >= l.modified().ok(),
        _ => false,
    };
    if fresh {
        return;
    }
    let out = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("npm could not run ({e}): the Node.js tests need Node.js 20 and npm")
        });
    assert!(
        out.status.success(),
        "npm ci in {} failed:\n{}",
        dir.display(),
        crate::printed(&out)
    );
}

/// Runs the Node.js test file `file` of `tests/sdk-js` (`node --test`)
/// with `env`, after installing their packages.
pub fn run_sdk_js(file: &str, env: &[(&str, &str)]) -> Output {
    install_sdk_js();
    Command::new("node")
        .arg("--test")
        .arg("--test-reporter=spec")
        .arg(file)
        .current_dir(sdk_js_dir())
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("node could not run ({e}): the SDK tests need Node.js 20"))
}

/// The browser of the browser tests: Debian's Chromium, which
/// `scripts/test.sh` installs (`playwright-core` drives it and brings no
/// browser of its own).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// [`CHROMIUM`]; panics saying how to get it when it is not there.
pub fn chromium() -> &'static str {
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} was not found: the browser tests run the site in Chromium. \
         scripts/test.sh installs it (apt-get install -y chromium)"
    );
    CHROMIUM
}

/// Asserts that a run of [`run_sdk_js`] passed with exactly `passed` tests
/// (a file that fails to load reports no test at all), printing its report,
/// and the host's log when it failed.
pub fn assert_passed(out: &Output, passed: usize, host: &crate::Host) {
    let report = crate::printed(out);
    println!("{report}");
    assert!(
        out.status.success(),
        "the Node.js tests failed:\n{report}\nhost log:\n{}",
        host.log()
    );
    assert!(
        report.contains(&format!("ℹ pass {passed}")) && report.contains("ℹ fail 0"),
        "{report}"
    );
}
