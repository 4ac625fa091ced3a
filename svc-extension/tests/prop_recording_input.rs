//! Property tests of the recording body validation (docs/service-api.md
//! create rules 1–5 and "PATCH /recordings/:id"; docs/decisions.md §7 for
//! falsy values, wrong types and statuses) and of the slug rule.
//!
//! For arbitrary JSON bodies, `new_recording` and `recording_changes` never
//! panic and accept exactly the bodies the rules accept (the rules are
//! re-stated here, independently of the implementation); `slugify` yields
//! only `[a-z0-9-]`, no leading, trailing or doubled `-`, equals a
//! reference implementation and is idempotent.
//!
//! Cases per run: 3,000 for each of the three body properties and 5,000
//! for the slug rule (14,000 in all).

use proptest::prelude::*;
use serde_json::{Map, Number, Value};
use svc_extension::recording_input::{new_recording, recording_changes, EVENTS, MISSING};
use svc_extension::slug::slugify;

const STATUSES: [&str; 3] = ["draft", "published", "archived"];
const FIELDS: [&str; 10] = [
    "title",
    "duration",
    "events",
    "device_info",
    "description",
    "tags",
    "linked_video",
    "status",
    "public",
    "featured",
];

// ---------------------------------------------------------------- strategies

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::from(0)),
        Just(Value::from(0.0)),
        Just(Value::from(-0.0)),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter_map("finite", Number::from_f64)
            .prop_map(Value::Number),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("draft".to_string()),
        Just("published".to_string()),
        Just("archived".to_string()),
        Just("Draft".to_string()),
        "[a-zA-Z0-9 _-]{0,12}",
        any::<String>(),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        text().prop_map(Value::String),
    ]
}

/// Any JSON value, nested a few levels.
fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(FIELDS.to_vec()).prop_map(String::from),
        "[a-z_]{0,8}",
    ]
}

/// A value for one field: mostly of the right type, sometimes anything.
fn field_value(field: &'static str) -> BoxedStrategy<Value> {
    let typed: BoxedStrategy<Value> = match field {
        "title" | "description" => text().prop_map(Value::String).boxed(),
        "duration" => number().boxed(),
        "events" | "tags" => prop::collection::vec(value(), 0..4)
            .prop_map(Value::Array)
            .boxed(),
        "device_info" => value().boxed(),
        "linked_video" => prop_oneof![Just(Value::Null), text().prop_map(Value::String)].boxed(),
        "status" => prop_oneof![
            prop::sample::select(STATUSES.to_vec()).prop_map(Value::from),
            text().prop_map(Value::String),
        ]
        .boxed(),
        "public" | "featured" => any::<bool>().prop_map(Value::Bool).boxed(),
        _ => value().boxed(),
    };
    prop_oneof![3 => typed, 1 => value()].boxed()
}

/// A body: an object holding each known field with some probability, plus
/// arbitrary members; or (rarely) any JSON value at all.
fn body() -> impl Strategy<Value = Value> {
    let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = FIELDS
        .iter()
        .map(|f| {
            let p = if f.len() <= 11 && ["title", "duration", "events", "device_info"].contains(f) {
                0.9
            } else {
                0.4
            };
            proptest::option::weighted(p, field_value(f).prop_map(move |v| (f.to_string(), v)))
                .boxed()
        })
        .collect();
    let object = (
        fields,
        prop::collection::btree_map("[a-z_]{1,8}", value(), 0..3),
    )
        .prop_map(|(known, extra)| {
            let mut m: Map<String, Value> = extra.into_iter().collect();
            for (k, v) in known.into_iter().flatten() {
                m.insert(k, v);
            }
            Value::Object(m)
        });
    prop_oneof![9 => object, 1 => value()]
}

// ---------------------------------------------------------------- the rules

/// JavaScript truthiness (docs/decisions.md §7: `[]` and `{}` are present).
fn js_truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Bool(true)) | Some(Value::Array(_)) | Some(Value::Object(_)) => true,
    }
}

fn absent_or_null(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

fn valid_status(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str)
        .is_some_and(|s| STATUSES.contains(&s))
}

/// An identifier of the platform: a non-empty string without white space.
fn valid_linked_video(v: Option<&Value>) -> bool {
    absent_or_null(v)
        || v.and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty() && !s.contains(char::is_whitespace))
}

/// What POST /recordings must answer for a body: `Ok(())`, or the
/// possible messages (rules 1 and 2 come first, in docs/service-api.md's order;
/// among the type rules of docs/decisions.md §7 any violated one
/// may be reported).
fn expected_create(body: &Value) -> Result<(), Vec<String>> {
    let get = |k: &str| body.get(k);
    if !["title", "duration", "events", "device_info"]
        .iter()
        .all(|k| js_truthy(get(k)))
    {
        return Err(vec![MISSING.into()]);
    }
    let non_empty_array = get("events")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if !non_empty_array {
        return Err(vec![EVENTS.into()]);
    }
    let mut violated = Vec::new();
    if !get("title").is_some_and(Value::is_string) {
        violated.push("title must be a string".to_string());
    }
    match get("duration").and_then(Value::as_f64) {
        None => violated.push("duration must be a number".into()),
        // Milliseconds: never negative, at most 2^53 - 1.
        Some(ms) if !(0.0..=9_007_199_254_740_991.0).contains(&ms) => {
            violated.push("duration must be a non-negative number".into())
        }
        Some(_) => {}
    }
    if !(absent_or_null(get("tags")) || get("tags").is_some_and(Value::is_array)) {
        violated.push("tags must be an array".into());
    }
    if !(absent_or_null(get("status")) || valid_status(get("status"))) {
        violated.push("Invalid status".into());
    }
    if !(absent_or_null(get("description")) || get("description").is_some_and(Value::is_string)) {
        violated.push("description must be a string".into());
    }
    if !valid_linked_video(get("linked_video")) {
        violated.push("linked_video must be a video identifier or null".into());
    }
    if violated.is_empty() {
        Ok(())
    } else {
        Err(violated)
    }
}

/// What PATCH /recordings/:id must answer: `Ok(())` or the possible messages.
fn expected_changes(body: &Value) -> Result<(), Vec<String>> {
    let Value::Object(m) = body else {
        return Err(vec!["Invalid JSON body".into()]);
    };
    let mut violated = Vec::new();
    if m.get("title").is_some_and(|t| !t.is_string()) {
        violated.push("title must be a string".to_string());
    }
    if m.contains_key("description")
        && !(absent_or_null(m.get("description")) || m["description"].is_string())
    {
        violated.push("description must be a string".into());
    }
    if m.get("tags").is_some_and(|t| !t.is_array()) {
        violated.push("tags must be an array".into());
    }
    if m.contains_key("status") && !valid_status(m.get("status")) {
        violated.push("Invalid status".into());
    }
    if m.get("public").is_some_and(|p| !p.is_boolean()) {
        violated.push("public must be a boolean".into());
    }
    if m.contains_key("linked_video") && !valid_linked_video(m.get("linked_video")) {
        violated.push("linked_video must be a video identifier or null".into());
    }
    if violated.is_empty() {
        Ok(())
    } else {
        Err(violated)
    }
}

/// The slug rule restated: lower-case, runs outside a-z0-9 become one `-`,
/// no `-` at either end.
fn reference_slug(title: &str) -> String {
    title
        .to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

fn assert_slug_shape(slug: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        slug.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
        "{slug:?}"
    );
    prop_assert!(!slug.starts_with('-') && !slug.ends_with('-'), "{slug:?}");
    prop_assert!(!slug.contains("--"), "{slug:?}");
    Ok(())
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn create_accepts_exactly_the_valid_bodies(body in body()) {
        let text = body.to_string();
        let got = new_recording(text.as_bytes())
            .map(|item| serde_json::to_value(item).expect("serializes"));
        match (expected_create(&body), got) {
            (Ok(()), Ok(item)) => {
                let title = body["title"].as_str().expect("title");
                prop_assert_eq!(&item["title"], &body["title"]);
                prop_assert_eq!(&item["slug"], &Value::String(slugify(title)));
                prop_assert_eq!(&item["duration"], &body["duration"]);
                prop_assert_eq!(&item["events"], &body["events"]);
                prop_assert_eq!(&item["device_info"], &body["device_info"]);
                // Rule 4: never public; defaults.
                prop_assert_eq!(&item["public"], &Value::Bool(false));
                let status = body.get("status").and_then(Value::as_str).unwrap_or("draft");
                prop_assert_eq!(item["status"].as_str(), Some(status));
                let tags = match body.get("tags") {
                    Some(t @ Value::Array(_)) => t.clone(),
                    _ => Value::Array(vec![]),
                };
                prop_assert_eq!(&item["tags"], &tags);
                let linked = body.get("linked_video").cloned().unwrap_or(Value::Null);
                prop_assert_eq!(&item["linked_video"], &linked);
                let description = body.get("description").cloned().unwrap_or(Value::Null);
                prop_assert_eq!(&item["description"], &description);
                // Nothing the caller may not set gets through.
                for k in item.as_object().expect("an object").keys() {
                    prop_assert!(
                        ["title", "slug", "description", "duration", "events", "device_info",
                         "tags", "linked_video", "status", "public"].contains(&k.as_str()),
                        "unexpected member {} in {:?}", k, item
                    );
                }
                assert_slug_shape(item["slug"].as_str().unwrap_or_default())?;
            }
            (Err(allowed), Err(e)) => {
                prop_assert_eq!(e.status, 400);
                prop_assert!(allowed.contains(&e.message), "{} not in {:?} for {}", e.message, allowed, body);
                prop_assert!(e.details.is_none());
            }
            (Ok(()), Err(e)) => prop_assert!(false, "valid body refused with {:?}: {}", e, body),
            (Err(allowed), Ok(item)) => {
                prop_assert!(false, "invalid body ({:?}) accepted as {:?}: {}", allowed, item, body)
            }
        }
    }

    #[test]
    fn changes_accept_exactly_the_valid_bodies(body in body()) {
        match (expected_changes(&body), recording_changes(&body)) {
            (Ok(()), Ok(changes)) => {
                let m = body.as_object().expect("object");
                for k in ["description", "tags", "status", "public", "linked_video", "title"] {
                    match m.get(k) {
                        Some(v) => prop_assert_eq!(changes.get(k), Some(v), "{}", k),
                        None => prop_assert!(!changes.contains_key(k), "{}", k),
                    }
                }
                match m.get("title").and_then(Value::as_str) {
                    Some(t) => {
                        prop_assert_eq!(&changes["slug"], &Value::String(slugify(t)));
                    }
                    None => prop_assert!(!changes.contains_key("slug")),
                }
                // No other field can be changed (docs/service-api.md).
                for k in changes.keys() {
                    prop_assert!(
                        ["title", "slug", "description", "tags", "status", "public", "linked_video"]
                            .contains(&k.as_str()),
                        "unexpected change {}", k
                    );
                }
            }
            (Err(allowed), Err(e)) => {
                prop_assert_eq!(e.status, 400);
                prop_assert!(allowed.contains(&e.message), "{} not in {:?} for {}", e.message, allowed, body);
            }
            (Ok(()), Err(e)) => prop_assert!(false, "valid changes refused with {:?}: {}", e, body),
            (Err(allowed), Ok(c)) => {
                prop_assert!(false, "invalid changes ({:?}) accepted as {:?}: {}", allowed, c, body)
            }
        }
    }

    #[test]
    fn any_json_value_never_panics_the_validation(body in value()) {
        let _ = new_recording(body.to_string().as_bytes());
        let _ = recording_changes(&body);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 5000, ..ProptestConfig::default() })]

    #[test]
    fn slugs_are_lower_alphanumeric_runs_joined_by_single_dashes(
        title in prop_oneof![
            any::<String>(),
            "[A-Za-z0-9 _.,!?'\"-]{0,40}",
            "[a-zA-Z0-9ÀÉÎÕÜßİıſKÅ日本語 -]{0,24}",
        ]
    ) {
        let slug = slugify(&title);
        assert_slug_shape(&slug)?;
        prop_assert_eq!(&slug, &reference_slug(&title), "title {:?}", title);
        prop_assert_eq!(slugify(&slug), slug.clone(), "not idempotent for {:?}", title);
        // Every ASCII letter or digit of the title survives, in order.
        let kept: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            .collect();
        prop_assert_eq!(slug.replace('-', ""), kept);
    }
}
