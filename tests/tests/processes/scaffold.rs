//! `example-host new-extension NAME` writes a crate that builds as it is;
//! built in debug, its library is served by a host: the first extension
//! of a new author, from the command to a request.

use std::process::Command;

use platform_tests::{host_binary, target_dir, Host, HostOptions};
use serde_json::json;

#[test]
fn a_scaffolded_extension_builds_and_is_served() {
    let dir = tempfile::tempdir().expect("a folder");
    let out = Command::new(host_binary())
        .args(["new-extension", "scaffolded-notes", "--dir"])
        .arg(dir.path())
        .output()
        .expect("run example-host new-extension");
    assert!(out.status.success(), "{}", platform_tests::printed(&out));
    let crate_dir = dir.path().join("scaffolded-notes");

    // Into the checkout's target folder (the crate's .cargo/config.toml,
    // or CARGO_TARGET_DIR), where its dependencies are built already.
    let build = Command::new(env!("CARGO"))
        .arg("build")
        .current_dir(&crate_dir)
        .output()
        .expect("run cargo build");
    assert!(
        build.status.success(),
        "the scaffolded crate does not build:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let library = target_dir().join("debug").join("libscaffolded_notes.so");
    assert!(library.exists(), "{} missing", library.display());

    let host = Host::start(HostOptions::with(vec![library]));
    host.user(Some("Viewer"), "author");
    let made = host.post(
        "/scaffolded-notes/notes",
        Some("author"),
        &json!({"title": "first"}),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    let mine = host.get("/scaffolded-notes/notes", Some("author"));
    assert_eq!(mine.status, 200, "{}", mine.body);
    assert_eq!(mine.json()[0]["title"], "first");
    let empty = host.post(
        "/scaffolded-notes/notes",
        Some("author"),
        &json!({"title": ""}),
    );
    assert_eq!(empty.status, 400, "{}", empty.body);
    assert_eq!(host.get("/scaffolded-notes/notes", None).status, 401);
}
