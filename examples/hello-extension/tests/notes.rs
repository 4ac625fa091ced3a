//! The example's own tests, as an author writes them: the extension
//! mounted in a real host, in process (`example_host::testkit`).

use example_host::testkit::TestHost;
use host_sdk::Query;
use serde_json::json;

#[test]
fn a_viewer_writes_and_reads_their_own_notes() {
    let host = TestHost::start(hello::extension()).expect("the test host starts");
    let alice = host.create_user("alice@example.com", "Viewer").unwrap();
    let bob = host.create_user("bob@example.com", "Viewer").unwrap();

    let created = host
        .as_user(&alice)
        .post("/notes", &json!({"body": "mine"}));
    assert_eq!(created.status, 201, "{}", created.text());
    let id = created.json()["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    let read = host.as_user(&alice).get(&format!("/notes/{id}"));
    assert_eq!(read.status, 200, "{}", read.text());
    assert_eq!(read.json()["body"], "mine");
    // Bob's grant covers his own notes only; a missing note answers alike.
    let theirs = host.as_user(&bob).get(&format!("/notes/{id}"));
    let missing = host
        .as_user(&bob)
        .get("/notes/00000000-0000-4000-8000-000000000000");
    assert_eq!((theirs.status, theirs.json()), (404, missing.json()));
    assert_eq!(missing.status, 404);
}

#[test]
fn routes_answer_401_400_and_405_by_themselves() {
    let host = TestHost::start(hello::extension()).unwrap();
    let alice = host.create_user("alice@example.com", "Viewer").unwrap();

    let anonymous = host.anonymous().post("/notes", &json!({"body": "hi"}));
    assert_eq!(
        (anonymous.status, anonymous.json()),
        (401, json!({"error": "Unauthorized"}))
    );
    let wrong = host.as_user(&alice).post("/notes", &json!({"body": 5}));
    assert_eq!(wrong.status, 400);
    assert_eq!(wrong.json()["error"], "Invalid JSON body");
    assert!(
        wrong.json()["details"]
            .as_str()
            .is_some_and(|d| d.contains("expected a string")),
        "{}",
        wrong.text()
    );
    let other_method = host.as_user(&alice).delete("/notes");
    assert_eq!(other_method.status, 405);
    assert_eq!(other_method.allow.as_deref(), Some("POST"));
}

#[test]
fn the_hook_refuses_an_empty_note_and_nothing_is_written() {
    let host = TestHost::start(hello::extension()).unwrap();
    let alice = host.create_user("alice@example.com", "Viewer").unwrap();

    let refused = host.as_user(&alice).post("/notes", &json!({"body": ""}));
    assert_eq!(refused.status, 400, "{}", refused.text());
    // The handler's two writes were one transaction: neither stayed.
    let count = host.context(None, |ctx| ctx.as_admin().count("notes", None));
    assert_eq!(count.unwrap(), 0);

    let kept = host
        .as_user(&alice)
        .post("/notes", &json!({"body": "fine"}));
    assert_eq!(kept.status, 201, "{}", kept.text());
    let notes = host
        .context(Some(&alice), |ctx| {
            let query = Query::new().fields(&["body", "user_created"]);
            ctx.as_caller().read_by_query("notes", &query)
        })
        .unwrap();
    // The caller sees their note; the audit note was written as admin
    // with the caller recorded, so it is theirs too.
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes.iter().all(|n| n["user_created"] == json!(alice.id)));
}

#[test]
fn the_schedule_runs_on_demand() {
    let host = TestHost::start(hello::extension()).unwrap();
    host.run_schedule("cleanup").unwrap();
    let unknown = host.run_schedule("nope").unwrap_err();
    assert!(
        unknown.to_string().contains("has no schedule `nope`"),
        "{unknown}"
    );
}

#[test]
fn the_openapi_document_describes_the_body_from_its_type() {
    let paths = hello::extension().router().openapi_paths();
    let body = &paths["/notes"]["post"]["requestBody"];
    assert_eq!(body["required"], true);
    let schema = &body["content"]["application/json"]["schema"];
    assert_eq!(schema["properties"]["body"]["type"], "string");
    assert_eq!(
        schema["properties"]["body"]["description"],
        "The note's text; not empty."
    );
    let unauthorized = &paths["/notes"]["post"]["responses"]["401"];
    assert_eq!(unauthorized["description"], "Unauthorized");
}
