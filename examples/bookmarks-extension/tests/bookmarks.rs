//! Bookmarks on the test kit with svc mounted beside them, on the backend
//! `TEST_DB` names: svc's collections are real, not faked. svc is the
//! library the workspace builds (`cargo build -p svc-extension` first),
//! loaded through the ABI as a host loads it.

use std::path::PathBuf;

use example_host::testkit::TestHost;
use serde_json::{json, Value};

/// `libsvc_extension.so` of this workspace's debug build.
fn svc_library() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let library = target.join("debug").join("libsvc_extension.so");
    assert!(
        library.exists(),
        "{} is missing: build svc first (cargo build -p svc-extension)",
        library.display()
    );
    library
}

fn host() -> TestHost {
    // svc first: its migrations make `videos`, which bookmarks refer to.
    TestHost::start_with(&[&svc_library()], vec![bookmarks::extension()])
        .expect("the test host starts")
}

/// A published video of svc, written as an administrator would.
fn video(host: &TestHost, slug: &str) -> String {
    host.context(None, |ctx| {
        ctx.as_admin().create_one(
            "videos",
            &json!({"slug": slug, "title": slug, "upload_date": "2020-01-01T00:00:00Z"}),
        )
    })
    .expect("a video")
}

fn bookmark_count(host: &TestHost) -> u64 {
    host.context(None, |ctx| ctx.as_admin().count("bookmarks", None))
        .expect("a count")
}

#[test]
fn members_bookmark_svc_videos_and_see_only_their_own() {
    let host = host();
    let v = video(&host, "first");
    let ann = host.create_user("ann@example.com", "Viewer").expect("ann");
    let bob = host.create_user("bob@example.com", "Model").expect("bob");

    // svc serves its own routes beside this extension's.
    let listed = host.anonymous().on("svc").get("/videos");
    assert_eq!(listed.status, 200, "{}", listed.text());
    assert_eq!(listed.json()[0]["slug"], "first");

    let made = host
        .as_user(&ann)
        .on("bookmarks")
        .post("/bookmarks", &json!({"video": v, "note": "later"}));
    assert_eq!(made.status, 201, "{}", made.text());
    let id = made.json()["id"].as_str().unwrap_or_default().to_string();

    let mine = host
        .as_user(&ann)
        .on("bookmarks")
        .get("/bookmarks/mine")
        .json();
    assert_eq!(mine.as_array().map(Vec::len), Some(1), "{mine}");
    assert_eq!(mine[0]["note"], "later");
    assert_eq!(
        host.as_user(&bob)
            .on("bookmarks")
            .get("/bookmarks/mine")
            .json(),
        json!([])
    );
    let theirs = host
        .as_user(&bob)
        .on("bookmarks")
        .delete(&format!("/bookmarks/{id}"));
    assert_eq!(theirs.status, 404, "{}", theirs.text());
    assert_eq!(theirs.json(), json!({"error": "Bookmark not found"}));
    assert_eq!(bookmark_count(&host), 1);
    let again = host
        .as_user(&ann)
        .on("bookmarks")
        .post("/bookmarks", &json!({ "video": v }));
    assert_eq!(again.status, 409, "{}", again.text());
    assert_eq!(again.json(), json!({"error": "Already bookmarked"}));
    let own = host
        .as_user(&ann)
        .on("bookmarks")
        .delete(&format!("/bookmarks/{id}"));
    assert_eq!((own.status, own.body.len()), (204, 0), "{}", own.text());
    assert_eq!(bookmark_count(&host), 0);

    // The typed route's 400: serde's reason in `details`.
    let bad = host
        .as_user(&ann)
        .on("bookmarks")
        .post("/bookmarks", &json!({"note": "no video"}));
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert!(
        bad.json()["details"]
            .as_str()
            .is_some_and(|d| d.contains("missing field `video`")),
        "{}",
        bad.text()
    );
    assert_eq!(
        host.anonymous()
            .on("bookmarks")
            .get("/bookmarks/mine")
            .status,
        401
    );
}

#[test]
fn deleting_a_video_deletes_its_bookmarks_first() {
    let host = host();
    let kept = video(&host, "kept");
    let gone = video(&host, "gone");
    let ann = host.create_user("ann@example.com", "Viewer").expect("ann");
    let bob = host.create_user("bob@example.com", "Viewer").expect("bob");
    for (who, v) in [(&ann, &kept), (&ann, &gone), (&bob, &gone)] {
        let made = host
            .as_user(who)
            .on("bookmarks")
            .post("/bookmarks", &json!({ "video": v }));
        assert_eq!(made.status, 201, "{}", made.text());
    }

    // Without the hook the reference rule would refuse this delete.
    let deleted: Result<Value, _> = host.context(None, |ctx| {
        ctx.as_admin()
            .delete_one("videos", &gone)
            .map(|_| Value::Null)
    });
    assert!(deleted.is_ok(), "{deleted:?}");
    assert_eq!(bookmark_count(&host), 1);
    let mine = host
        .as_user(&ann)
        .on("bookmarks")
        .get("/bookmarks/mine")
        .json();
    assert_eq!(mine[0]["video"], kept.as_str(), "{mine}");

    // A bookmark of a video that does not exist is refused by the
    // reference rule.
    let dangling = host
        .as_user(&ann)
        .on("bookmarks")
        .post("/bookmarks", &json!({ "video": gone }));
    assert_eq!(dangling.status, 400, "{}", dangling.text());
}
