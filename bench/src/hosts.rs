//! Starting the hosts the benchmarks measure: the dynamic host (svc loaded
//! from its library) and the in-process host (svc linked in, `--builtin-svc`).
//!
//! The test harness panics when a host cannot start; here that becomes an
//! error with the harness's message.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use platform_tests::{profile, workspace_root, Host, HostOptions};
use tempfile::TempDir;

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The in-process host binary of the current profile
/// (`cargo build -p example-host --features inprocess --bin
/// example-host-inprocess`).
pub fn inprocess_binary() -> PathBuf {
    target_dir().join(profile()).join("example-host-inprocess")
}

/// A host started with `options`; `what` names it in errors.
pub fn start(what: &str, options: impl FnOnce() -> HostOptions) -> Result<Host, String> {
    // The access log's line per request is not what a benchmark measures.
    let options = || {
        let mut o = options();
        o.env.push(("LOG_LEVEL".into(), "info,access=off".into()));
        o
    };
    catch_unwind(AssertUnwindSafe(|| Host::start(options()))).map_err(|panic| {
        format!(
            "starting the {what} host ({} profile): {}",
            profile(),
            panic_message(panic.as_ref())
        )
    })
}

/// The message a panic of the harness carried.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown failure".into())
}

/// Another host on `first`'s database (see [`Host::start_beside`]).
pub fn start_beside(
    what: &str,
    first: &Host,
    options: impl FnOnce() -> HostOptions,
) -> Result<Host, String> {
    catch_unwind(AssertUnwindSafe(|| first.start_beside(options()))).map_err(|panic| {
        format!(
            "starting the {what} host ({} profile): {}",
            profile(),
            panic_message(panic.as_ref())
        )
    })
}

/// The host with the svc extension loaded from its library, on a new data
/// folder or on `data` (a restart on the same database).
pub fn dynamic(data: Option<TempDir>) -> Result<Host, String> {
    start("dynamic", || HostOptions {
        data_dir: data,
        ..HostOptions::svc()
    })
}

/// The in-process host on `data` (check [`inprocess_binary`] exists first).
pub fn inprocess(data: TempDir) -> Result<Host, String> {
    start("in-process", || HostOptions {
        data_dir: Some(data),
        binary: Some(inprocess_binary()),
        ..HostOptions::with(Vec::new()).arg("--builtin-svc")
    })
}

/// Resets the host's peak RSS (`VmHWM`) to its current RSS (Linux:
/// `echo 5 > /proc/<pid>/clear_refs`), so later peaks are the load's.
pub fn reset_peak_rss(host: &Host) -> Result<(), String> {
    std::fs::write(format!("/proc/{}/clear_refs", host.pid()), "5")
        .map_err(|e| format!("resetting the peak RSS: {e}"))
}

/// `Ok` for a 2xx answer; otherwise an error naming `what`, the status and
/// the start of the body (setting up a benchmark's data).
pub fn succeeded(r: &platform_tests::Resp, what: &str) -> Result<(), String> {
    if (200..300).contains(&r.status) {
        Ok(())
    } else {
        Err(format!(
            "{what}: {} {}",
            r.status,
            r.body.chars().take(300).collect::<String>()
        ))
    }
}
