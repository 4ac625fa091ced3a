//! Hooks get the view of an item event they registered for: the host's
//! text (`RawItemEvent`) or trees (`ItemEvent`), whichever way the host
//! hands the event over.

mod common;

use std::sync::{Arc, Mutex};

use common::NoServices;
use host_sdk::{EventKind, Extension, ItemEvent, RawItemEvent};
use serde_json::json;

/// What each hook saw: (hook, status after the write, payload text).
type Seen = Arc<Mutex<Vec<(&'static str, String, String)>>>;

fn extension(seen: &Seen) -> Extension {
    let (raw, parsed) = (seen.clone(), seen.clone());
    Extension::new("views", "Views", "1.0.0")
        .before_commit_raw_in(&["notes"], move |event, _| {
            let status = event
                .after_of("n1")
                .and_then(|r| r.str("status").map(String::from));
            raw.lock().unwrap().push((
                "raw",
                status.unwrap_or_default(),
                event.payload_text().to_string(),
            ));
            Ok(())
        })
        .before_commit_in(&["notes"], move |event, _| {
            let status = event.after_of("n1").and_then(|r| r["status"].as_str());
            parsed.lock().unwrap().push((
                "parsed",
                status.unwrap_or_default().to_string(),
                event.payload.to_string(),
            ));
            Ok(())
        })
}

#[test]
fn a_host_handing_over_text_reaches_both_kinds_of_hooks() {
    let seen = Seen::default();
    let ext = extension(&seen);
    let event = RawItemEvent::new(
        EventKind::Create,
        "notes",
        vec!["n1".into()],
        r#"{"status":"published"}"#,
        None,
        Some(r#"[{"id":"n1","status":"published"}]"#),
        None,
    );
    ext.before_commit_direct_raw(&event, &NoServices::default())
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (
                "raw",
                "published".into(),
                r#"{"status":"published"}"#.into()
            ),
            (
                "parsed",
                "published".into(),
                r#"{"status":"published"}"#.into()
            ),
        ]
    );
}

#[test]
fn a_host_handing_over_trees_reaches_both_kinds_of_hooks() {
    let seen = Seen::default();
    let ext = extension(&seen);
    let event = ItemEvent {
        kind: EventKind::Create,
        collection: "notes".into(),
        keys: vec!["n1".into()],
        payload: json!({"status": "draft"}),
        before: Vec::new(),
        after: vec![json!({"id": "n1", "status": "draft"})],
        accountability: None,
    };
    ext.before_commit_direct(&event, &NoServices::default())
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("raw", "draft".into(), r#"{"status":"draft"}"#.into()),
            ("parsed", "draft".into(), r#"{"status":"draft"}"#.into()),
        ]
    );
    // Other collections' writes reach neither.
    let other = ItemEvent {
        collection: "tasks".into(),
        ..event
    };
    ext.before_commit_direct(&other, &NoServices::default())
        .unwrap();
    assert_eq!(seen.lock().unwrap().len(), 2);
}
