//! The extension of docs/extensions.md (`examples/hello-extension`), loaded as an author
//! would load it: its grants, its authenticated route, its typed body and
//! its caller-scoped reads work as the document says.

use platform_tests::{library, str_of, Host, HostOptions, ADMIN_TOKEN};
use serde_json::json;

#[test]
fn the_readme_extension_works_for_a_viewer_as_written() {
    let host = Host::start(HostOptions::with(vec![library("hello")]));
    host.user(Some("Viewer"), "hello-viewer");
    host.user(Some("Viewer"), "hello-other");

    // Signed-in callers only, before the body is read.
    let r = host.post("/hello/notes", None, &json!({"body": "hi"}));
    assert_eq!(
        (r.status, r.json()),
        (401, json!({"error": "Unauthorized"}))
    );
    // A wrong body says why.
    let r = host.post("/hello/notes", Some("hello-viewer"), &json!({"body": 5}));
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"], "Invalid JSON body");
    assert!(
        r.json()["details"]
            .as_str()
            .unwrap_or_default()
            .contains("expected a string"),
        "{}",
        r.body
    );
    // Another method on a known path.
    let r = host.delete("/hello/notes", Some("hello-viewer"));
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(r.header_all("allow"), ["POST"]);

    let r = host.post(
        "/hello/notes",
        Some("hello-viewer"),
        &json!({"body": "mine"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = str_of(&r.json()["id"]);
    // Its grant lets the viewer read their note, as the caller.
    let r = host.get(&format!("/hello/notes/{id}"), Some("hello-viewer"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["body"], "mine");
    // Not another viewer's.
    let r = host.get(&format!("/hello/notes/{id}"), Some("hello-other"));
    assert!(
        r.status == 403 || r.status == 404,
        "{} {}",
        r.status,
        r.body
    );
    let r = host.get("/items/notes", Some("hello-other"));
    assert_eq!(
        (r.status, r.json()["data"].clone()),
        (200, json!([])),
        "{}",
        r.body
    );
    // The same grant through the platform's items API.
    let r = host.get("/items/notes?fields=body", Some("hello-viewer"));
    let bodies: Vec<String> = r.json()["data"]
        .as_array()
        .map(|n| n.iter().map(|n| str_of(&n["body"])).collect())
        .unwrap_or_default();
    assert!(bodies.contains(&"mine".to_string()), "{}", r.body);
    // The handler's second write, as admin, is the audit note.
    assert_eq!(host.admin_count("notes", None), 2);
    // A note without a body is refused inside the transaction, by the hook.
    let r = host.post("/items/notes", Some(ADMIN_TOKEN), &json!({"body": ""}));
    assert_eq!(r.status, 400, "{}", r.body);
}
