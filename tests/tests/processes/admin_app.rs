//! The admin app at `/admin` (docs/admin-app.md): the files embedded in the
//! host are the build of `admin-app/` from its lockfile, byte for byte; it
//! type-checks (`svelte-check`); its scripts stay under 300 KB compressed; the host serves it with its
//! Content-Security-Policy (no inline script, never framed). In Chromium:
//! - `tests/sdk-js/admin-content.test.js`: an administrator signs in,
//!   creates a video with two models and an uploaded movie and publishes
//!   it; a Model sees and may do only what their policies allow; an ended
//!   session signs in again and returns; unsaved changes are guarded; every
//!   page of the content module loads with no console error.
//! - `tests/sdk-js/admin-modules.test.js`: three files upload at once with
//!   a progress bar each and show as thumbnails; an administrator grants a
//!   role's policy a collection in the permissions matrix and a member's
//!   request changes accordingly; a member sees only the modules and
//!   actions their permissions give (an administrator all four); every
//!   page loads with no console error.
//! - `tests/sdk-js/admin-reset.test.js`: a forgotten password is reset by
//!   the link a real SMTP server received.
//!
//! The browser tests take a screenshot of each module: into docs/admin-app
//! with `UPDATE_SCREENSHOTS=1`, into a temporary folder otherwise (a test
//! run leaves the repository as it was).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use platform_tests::node::{admin_app_dir, assert_passed, chromium, install_admin_app, run_sdk_js};
use platform_tests::smtp::MailServer;
use platform_tests::{user_email, workspace_root, Host, HostOptions};
use serde_json::json;

/// What the whole app's scripts may weigh, gzip-compressed.
const SCRIPT_BUDGET: usize = 300 * 1024;

fn dist() -> PathBuf {
    workspace_root().join("example-host").join("admin-dist")
}

/// Every file under `root`, by its path relative to `root`.
fn files_under(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a readable folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                folders.push(path);
            } else {
                let name = path
                    .strip_prefix(root)
                    .expect("under the root")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(name, std::fs::read(&path).expect("a readable file"));
            }
        }
    }
    out
}

#[test]
fn the_embedded_admin_app_is_its_rebuild_from_the_lockfile() {
    install_admin_app();
    let out_dir = tempfile::tempdir().expect("a temporary folder");
    let out = Command::new("npx")
        .args(["vite", "build", "--outDir"])
        .arg(out_dir.path())
        .arg("--emptyOutDir")
        .current_dir(admin_app_dir())
        .output()
        .unwrap_or_else(|e| {
            panic!("npx could not run ({e}): the admin app builds with Node.js 20")
        });
    assert!(
        out.status.success(),
        "the admin app's build failed:\n{}",
        platform_tests::printed(&out)
    );
    let built = files_under(out_dir.path());
    let embedded = files_under(&dist());
    assert!(built.contains_key("index.html"), "{:?}", built.keys());
    let mut differences = Vec::new();
    for (name, bytes) in &built {
        match embedded.get(name) {
            None => differences.push(format!("{name}: built, not in example-host/admin-dist")),
            Some(committed) if committed != bytes => {
                differences.push(format!("{name}: differs from the build"))
            }
            Some(_) => {}
        }
    }
    for name in embedded.keys().filter(|n| !built.contains_key(*n)) {
        differences.push(format!("{name}: in example-host/admin-dist, not built"));
    }
    assert!(
        differences.is_empty(),
        "example-host/admin-dist is not the build of admin-app (run `npm ci && npm run build` in admin-app and commit it):\n{}",
        differences.join("\n")
    );
}

/// The app's TypeScript and Svelte type-check (`svelte-check`, pinned in
/// its lockfile), warnings included: the build alone would not notice.
#[test]
fn the_admin_app_type_checks() {
    install_admin_app();
    let out = Command::new("npm")
        .args(["run", "--silent", "check"])
        .current_dir(admin_app_dir())
        .output()
        .unwrap_or_else(|e| {
            panic!("npm could not run ({e}): the admin app checks with Node.js 20")
        });
    let report = platform_tests::printed(&out);
    println!("{report}");
    assert!(
        out.status.success(),
        "svelte-check found problems:\n{report}"
    );
    assert!(report.contains("0 errors and 0 warnings"), "{report}");
}

#[test]
fn the_admin_app_s_scripts_stay_under_300_kb_compressed() {
    let mut total = 0;
    for (name, bytes) in files_under(&dist()) {
        if !name.ends_with(".js") {
            continue;
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&bytes).expect("gzip in memory");
        let size = gz.finish().expect("gzip in memory").len();
        println!("{name}: {} bytes, {size} gzip", bytes.len());
        total += size;
    }
    println!(
        "the admin app's scripts: {total} bytes gzip ({:.1} KB)",
        total as f64 / 1024.0
    );
    assert!(total > 0, "no script in example-host/admin-dist");
    assert!(
        total < SCRIPT_BUDGET,
        "the admin app's scripts weigh {total} bytes gzip, over {SCRIPT_BUDGET}"
    );
}

#[test]
fn the_host_serves_the_admin_app_with_its_content_security_policy() {
    let host = Host::start(HostOptions::with(Vec::new()));
    let r = host.get("/admin", None);
    assert_eq!(r.status, 308, "{}", r.body);
    assert_eq!(r.header_all("location"), ["/admin/"]);

    let page = host.get("/admin/", None);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.content_type.starts_with("text/html"),
        "{}",
        page.content_type
    );
    let csp = page.header_all("content-security-policy").join(", ");
    let directives: Vec<&str> = csp.split(';').map(str::trim).collect();
    for wanted in [
        "default-src 'self'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "media-src 'self' blob:",
    ] {
        assert!(directives.contains(&wanted), "{wanted} missing from {csp}");
    }
    assert!(!csp.contains("unsafe-eval"), "{csp}");
    assert_eq!(page.header_all("cache-control"), ["no-cache"]);
    // Its scripts are files: no inline script the policy would refuse.
    let scripts: Vec<&str> = page.body.split("<script").skip(1).collect();
    assert!(!scripts.is_empty(), "{}", page.body);
    for s in &scripts {
        let tag = &s[..s.find('>').expect("a closed tag")];
        assert!(
            tag.contains(" src=\"/admin/assets/"),
            "an inline script: <script{s}"
        );
    }

    // The app's own paths answer its page; its assets are cached for good.
    let deep = host.get("/admin/content/videos/+", None);
    assert_eq!((deep.status, &deep.body), (200, &page.body));
    let reset = host.get("/admin/reset-password?token=abc", None);
    assert_eq!((reset.status, &reset.body), (200, &page.body));
    let assets: Vec<&str> = page
        .body
        .split('"')
        .filter(|s| s.starts_with("/admin/assets/"))
        .collect();
    assert!(assets.iter().any(|a| a.ends_with(".js")), "{assets:?}");
    for asset in assets {
        let r = host.get(asset, None);
        assert_eq!(r.status, 200, "{asset}");
        assert_eq!(
            r.header_all("cache-control"),
            ["public, max-age=31536000, immutable"],
            "{asset}"
        );
        let wanted = if asset.ends_with(".js") {
            "text/javascript"
        } else {
            "text/css"
        };
        assert!(
            r.content_type.starts_with(wanted),
            "{asset}: {}",
            r.content_type
        );
        assert_eq!(r.header_all("x-content-type-options"), ["nosniff"]);
    }
    assert_eq!(host.get("/admin/assets/missing-0000.js", None).status, 404);
}

const PASSWORD: &str = "admin app password 1";

/// Where the browser tests put their screenshots (see the module's doc).
fn screenshot_dir() -> (PathBuf, Option<tempfile::TempDir>) {
    if std::env::var_os("UPDATE_SCREENSHOTS").is_some() {
        return (workspace_root().join("docs").join("admin-app"), None);
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    (dir.path().to_path_buf(), Some(dir))
}

#[test]
fn in_a_browser_an_administrator_edits_content_and_a_model_only_what_they_may() {
    let chromium = chromium();
    let host = Host::start(HostOptions::svc().arg("--demo"));
    host.user_with(
        Some("Administrator"),
        "admin-app-admin",
        &json!({ "password": PASSWORD, "first_name": "Ada" }),
    );
    host.user_with(
        Some("Model"),
        "admin-app-model",
        &json!({ "password": PASSWORD, "first_name": "Mona" }),
    );
    let movie = workspace_root()
        .join("example-host")
        .join("demo-media")
        .join("movie-1.webm");
    let (screenshots, _kept) = screenshot_dir();
    let admin = user_email("admin-app-admin");
    let model = user_email("admin-app-model");
    let out = run_sdk_js(
        "admin-content.test.js",
        &[
            ("PLATFORM_URL", host.base.as_str()),
            ("PLATFORM_CHROMIUM", chromium),
            ("PLATFORM_ADMIN_EMAIL", admin.as_str()),
            ("PLATFORM_MODEL_EMAIL", model.as_str()),
            ("PLATFORM_PASSWORD", PASSWORD),
            ("PLATFORM_MOVIE", &movie.to_string_lossy()),
            ("PLATFORM_SCREENSHOTS", &screenshots.to_string_lossy()),
        ],
    );
    assert_passed(&out, 5, &host);

    // The video as the API keeps it: two models, its movie, published.
    let videos = host.admin_find("videos", &json!({"slug": {"_eq": "made-in-the-admin-app"}}));
    assert_eq!(videos.len(), 1, "{videos:?}");
    assert!(videos[0]["movie"].is_string(), "{videos:?}");
    let links = host.admin_find(
        "videos_models",
        &json!({"videos_id": {"_eq": videos[0]["id"]}}),
    );
    assert_eq!(links.len(), 2, "{links:?}");
}

#[test]
fn in_a_browser_files_upload_access_is_granted_and_the_platform_is_shown() {
    let chromium = chromium();
    let host = Host::start(HostOptions::svc().arg("--demo"));
    host.user_with(
        Some("Administrator"),
        "admin-modules-admin",
        &json!({ "password": PASSWORD, "first_name": "Ada" }),
    );
    host.user_with(
        Some("Viewer"),
        "admin-modules-member",
        &json!({ "password": PASSWORD, "first_name": "Vic" }),
    );
    let (screenshots, _kept) = screenshot_dir();
    let (admin, member) = (
        user_email("admin-modules-admin"),
        user_email("admin-modules-member"),
    );
    let out = run_sdk_js(
        "admin-modules.test.js",
        &[
            ("HOST_URL", host.base.as_str()),
            ("PLATFORM_CHROMIUM", chromium),
            ("ADMIN_EMAIL", admin.as_str()),
            ("ADMIN_PASSWORD", PASSWORD),
            ("MEMBER_EMAIL", member.as_str()),
            ("MEMBER_PASSWORD", PASSWORD),
            ("SCREENSHOT_DIR", &screenshots.to_string_lossy()),
        ],
    );
    assert_passed(&out, 5, &host);
    // What the browser uploaded, as the API keeps it.
    let files = host.admin_find("platform_files", &json!({"type": {"_eq": "image/png"}}));
    assert!(files.len() >= 3, "{files:?}");
}

/// Forgot password, in the browser: the sign-in page asks for a reset, a
/// real SMTP server receives the mail, the link's page sets the new
/// password, and only the new one signs in (`admin-reset.test.js`).
#[test]
fn in_a_browser_a_forgotten_password_is_reset_by_the_mailed_link() {
    let chromium = chromium();
    let mail = MailServer::start();
    let mut options = HostOptions::svc();
    options.env.extend(mail.host_env());
    let host = Host::start(options);
    host.user_with(
        Some("Viewer"),
        "admin-reset",
        &json!({ "password": PASSWORD, "first_name": "Rae" }),
    );
    let email = user_email("admin-reset");
    let out = run_sdk_js(
        "admin-reset.test.js",
        &[
            ("PLATFORM_URL", host.base.as_str()),
            ("PLATFORM_CHROMIUM", chromium),
            ("PLATFORM_USER_EMAIL", email.as_str()),
            ("PLATFORM_PASSWORD", PASSWORD),
            ("PLATFORM_MAIL_DIR", &mail.folder().to_string_lossy()),
        ],
    );
    assert_passed(&out, 1, &host);
    let mails = mail.messages();
    assert!(
        mails
            .iter()
            .any(|m| m.to.contains(&email) && m.token().is_some()),
        "{mails:?}"
    );
}

/// `--demo`'s administrator signs in with the demo users' password, as the
/// demo prints it (`example_host::demo`'s admin-app line).
#[test]
fn the_demo_s_administrator_signs_in_with_the_demo_password() {
    let host = Host::start(HostOptions::svc().arg("--demo"));
    let r = host.login("admin@example.com", "demo-password");
    assert_eq!(r.status, 200, "{}", r.body);
    let token = r.json()["data"]["access_token"]
        .as_str()
        .expect("an access token")
        .to_string();
    let me = host.get("/users/me?fields=role.name", Some(&token));
    assert_eq!(
        me.json()["data"]["role"]["name"],
        "Administrator",
        "{}",
        me.body
    );
}
