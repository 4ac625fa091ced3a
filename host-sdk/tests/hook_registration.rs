//! Item hooks are registered with one method per moment of a write, each
//! taking the collections it watches or `Collections::All`; the names
//! before SDK 1.10 register the same hooks.

mod common;

use std::sync::{Arc, Mutex};

use common::NoServices;
use host_sdk::{
    BoxError, Collections, EventKind, Extension, ItemEvent, PendingWrite, RawItemEvent,
};
use serde_json::json;

type Calls = Arc<Mutex<Vec<&'static str>>>;

fn event(collection: &str) -> ItemEvent {
    ItemEvent {
        kind: EventKind::Create,
        collection: collection.into(),
        keys: vec!["k1".into()],
        payload: json!({"title": "t"}),
        before: Vec::new(),
        after: vec![json!({"id": "k1", "title": "t"})],
        accountability: None,
    }
}

fn raw_event(collection: &str) -> RawItemEvent<'_> {
    RawItemEvent::new(
        EventKind::Update,
        collection,
        vec!["k1".into()],
        r#"{"title":"t"}"#,
        Some(r#"[{"id":"k1","title":"s"}]"#),
        Some(r#"[{"id":"k1","title":"t"}]"#),
        None,
    )
}

/// Which hooks of `ext` run for a write of `collection`, at each moment.
fn called(ext: &Extension, calls: &Calls, collection: &str) -> Vec<&'static str> {
    calls.lock().unwrap().clear();
    let services = NoServices::default();
    ext.before_write_direct(&raw_event(collection), &services)
        .unwrap();
    ext.before_commit_direct(&event(collection), &services)
        .unwrap();
    ext.deliver_direct(&event(collection), &services).unwrap();
    let mut seen = calls.lock().unwrap().clone();
    seen.sort_unstable();
    seen
}

/// Records that the hook `name` ran; what a hook answers.
fn note(calls: &Calls, name: &'static str) -> Result<(), BoxError> {
    calls.lock().unwrap().push(name);
    Ok(())
}

#[test]
fn each_moment_has_one_method_taking_the_collections_or_all() {
    let calls = Calls::default();
    let c = |name: &'static str| {
        let calls = calls.clone();
        move || note(&calls, name)
    };
    let (w, w_all, c1, c_raw, a1, a_raw) = (
        c("write a"),
        c("write all"),
        c("commit a"),
        c("commit raw all"),
        c("after a b"),
        c("after raw all"),
    );
    let names = vec!["b".to_string(), "a".to_string()];
    let ext = Extension::new("h", "Hooks", "1.0.0")
        .before_write_in(&["a"], move |_: &mut PendingWrite, _| w())
        .before_write_in(Collections::All, move |_, _| w_all())
        .before_commit_in(&["a"][..], move |_, _| c1())
        .before_commit_raw_in(Collections::All, move |_, _| c_raw())
        .after_commit_in(&names, move |_, _| a1())
        .after_commit_raw_in(Collections::All, move |_, _| a_raw());

    assert_eq!(ext.before_write_collections(), None);
    assert_eq!(ext.before_commit_collections(), None);
    assert_eq!(ext.event_collections(), None);
    assert_eq!(
        called(&ext, &calls, "a"),
        [
            "after a b",
            "after raw all",
            "commit a",
            "commit raw all",
            "write a",
            "write all"
        ]
    );
    assert_eq!(
        called(&ext, &calls, "c"),
        ["after raw all", "commit raw all", "write all"]
    );

    // Named lists only: the host is told which collections to send.
    let ext = Extension::new("h", "Hooks", "1.0.0")
        .before_write_in(&["a"], |_, _| Ok(()))
        .before_commit_in(&[] as &[&str], |_, _| Ok(()))
        .after_commit_in(&names, |_, _| Ok(()));
    assert_eq!(ext.before_write_collections(), Some(vec!["a".into()]));
    assert_eq!(ext.before_commit_collections(), Some(vec![]));
    assert_eq!(ext.event_collections(), Some(vec!["a".into(), "b".into()]));
}

#[test]
#[allow(deprecated)]
fn the_names_before_1_10_register_the_same_hooks() {
    let calls = Calls::default();
    let c = |name: &'static str| {
        let calls = calls.clone();
        move || note(&calls, name)
    };
    let (e, e_in, e_raw, bc, bw) = (
        c("on_event"),
        c("on_event_in"),
        c("on_event_raw_in"),
        c("before_commit"),
        c("before_write"),
    );
    let ext = Extension::new("h", "Hooks", "1.0.0")
        .on_event(move |_, _| e())
        .on_event_in(&["a"], move |_, _| e_in())
        .on_event_raw_in(&["b"], move |_, _| e_raw())
        .before_commit(move |_, _| bc())
        .before_write(move |_, _| bw());
    // The one-argument names watch every collection.
    assert_eq!(ext.event_collections(), None);
    assert_eq!(ext.before_commit_collections(), None);
    assert_eq!(ext.before_write_collections(), None);
    assert_eq!(
        called(&ext, &calls, "a"),
        ["before_commit", "before_write", "on_event", "on_event_in"]
    );
    assert_eq!(
        called(&ext, &calls, "b"),
        [
            "before_commit",
            "before_write",
            "on_event",
            "on_event_raw_in"
        ]
    );

    let ext = Extension::new("h", "Hooks", "1.0.0")
        .on_event_in(&["a"], |_, _| Ok(()))
        .on_event_raw_in(&["b"], |_, _| Ok(()));
    assert_eq!(ext.event_collections(), Some(vec!["a".into(), "b".into()]));
}
