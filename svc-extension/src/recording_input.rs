//! Validation of recording bodies, as plain functions: the rules of
//! POST /recordings in their order, and the fields PATCH may change.

use std::collections::BTreeMap;

use host_sdk::json::nests_deeper_than;
use host_sdk::ApiError;
use serde::de::IgnoredAny;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::slug::slugify;

pub const MISSING: &str = "Missing required fields: title, duration, events, device_info";
pub const EVENTS: &str = "Events must be a non-empty array";
pub const STATUSES: [&str; 3] = ["draft", "published", "archived"];

/// How deep `events`, `device_info` and `tags` may nest (the platform's
/// limit for JSON fields).
pub const MAX_DEPTH: u32 = 64;

fn shallow(field: &str, text: Option<&RawValue>) -> Result<(), ApiError> {
    match text {
        Some(t) if nests_deeper_than(t.get().as_bytes(), MAX_DEPTH) => Err(ApiError::bad_request(
            format!("{field} is nested too deeply"),
        )),
        _ => Ok(()),
    }
}

/// The members of a POST body, each as its JSON text: the few small ones
/// are parsed when a rule reads them; `events` (thousands of objects) and
/// `device_info` are checked as text and passed on as text, never built
/// into a tree.
struct Members<'a>(BTreeMap<String, &'a RawValue>);

impl<'a> Members<'a> {
    /// An empty body reads as `{}`, and a JSON value other than an object
    /// as an object without members (the rules then refuse it); anything
    /// else (not JSON, not UTF-8) is 400 `Invalid JSON body`.
    fn parse(body: &'a [u8]) -> Result<Self, ApiError> {
        let invalid = || ApiError::bad_request("Invalid JSON body");
        // JSON is UTF-8 throughout, skipped strings included.
        let text = std::str::from_utf8(body).map_err(|_| invalid())?;
        if text.trim().is_empty() {
            return Ok(Self(BTreeMap::new()));
        }
        match serde_json::from_str(text) {
            Ok(members) => Ok(Self(members)),
            Err(_) if serde_json::from_str::<IgnoredAny>(text).is_ok() => Ok(Self(BTreeMap::new())),
            Err(_) => Err(invalid()),
        }
    }

    fn raw(&self, key: &str) -> Option<&'a RawValue> {
        self.0.get(key).copied()
    }

    /// A member parsed (for the small ones the rules read).
    fn value(&self, key: &str) -> Option<Value> {
        self.raw(key)
            .map(|t| serde_json::from_str(t.get()).unwrap_or(Value::Null))
    }

    /// JavaScript truthiness, read from the text: an array or an object is
    /// truthy without being parsed.
    fn truthy(&self, key: &str) -> bool {
        match self.raw(key).map(|t| t.get().as_bytes().first()) {
            None | Some(None) => false,
            Some(Some(b'[' | b'{')) => true,
            Some(Some(_)) => truthy(self.value(key).as_ref()),
        }
    }

    /// Whether the member is a non-empty array, from its text.
    fn nonempty_array(&self, key: &str) -> bool {
        self.raw(key).is_some_and(|t| {
            let text = t.get().trim_start();
            text.starts_with('[') && !text[1..].trim_start().starts_with(']')
        })
    }
}

/// A recording to create: what the item service gets, with the events and
/// device info as the caller's JSON text.
#[derive(Debug, Serialize)]
pub struct NewRecording<'a> {
    title: String,
    slug: String,
    description: Value,
    duration: Value,
    events: &'a RawValue,
    device_info: &'a RawValue,
    tags: Value,
    linked_video: Value,
    status: String,
    public: bool,
}

fn depth(v: &Value) -> u32 {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// JavaScript truthiness of a JSON value (`[]` and `{}` are truthy).
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

fn status_of(v: Option<&Value>) -> Result<Option<String>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if STATUSES.contains(&s.as_str()) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::bad_request("Invalid status")),
    }
}

fn linked_video_of(v: Option<&Value>) -> Result<Value, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(Value::Null),
        // The platform's identifiers: non-empty, without white space.
        Some(Value::String(s)) if !s.is_empty() && !s.contains(char::is_whitespace) => {
            Ok(Value::String(s.clone()))
        }
        Some(_) => Err(ApiError::bad_request(
            "linked_video must be a video identifier or null",
        )),
    }
}

fn tags_of(v: Option<&Value>) -> Result<Value, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(Value::Array(Vec::new())),
        Some(Value::Array(a)) => Ok(Value::Array(a.clone())),
        Some(_) => Err(ApiError::bad_request("tags must be an array")),
    }
}

fn description_of(v: Option<&Value>) -> Result<Value, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(Value::Null),
        Some(Value::String(s)) => Ok(Value::String(s.clone())),
        Some(_) => Err(ApiError::bad_request("description must be a string")),
    }
}

/// The item to create from a POST body, or the first rule it breaks.
/// `public` is always false; the owner is set by the platform.
pub fn new_recording(body: &[u8]) -> Result<NewRecording<'_>, ApiError> {
    let members = Members::parse(body)?;
    let (Some(events), Some(device_info)) = (members.raw("events"), members.raw("device_info"))
    else {
        return Err(ApiError::bad_request(MISSING));
    };
    if !["title", "duration", "events", "device_info"]
        .iter()
        .all(|k| members.truthy(k))
    {
        return Err(ApiError::bad_request(MISSING));
    }
    if !members.nonempty_array("events") {
        return Err(ApiError::bad_request(EVENTS));
    }
    let Some(Value::String(title)) = members.value("title") else {
        return Err(ApiError::bad_request("title must be a string"));
    };
    let duration = members.value("duration").unwrap_or(Value::Null);
    crate::duration::checked("duration", &duration)?;
    let tags_value = members.value("tags");
    let tags = tags_of(tags_value.as_ref())?;
    let status = status_of(members.value("status").as_ref())?.unwrap_or_else(|| "draft".into());
    for field in ["events", "device_info", "tags"] {
        shallow(field, members.raw(field))?;
    }
    Ok(NewRecording {
        slug: slugify(&title),
        title,
        description: description_of(members.value("description").as_ref())?,
        duration,
        events,
        device_info,
        tags,
        linked_video: linked_video_of(members.value("linked_video").as_ref())?,
        status,
        public: false,
    })
}

/// The changes a PATCH body asks for: only `title` (with its slug),
/// `description`, `tags`, `status`, `public` and `linked_video`; anything
/// else in the body is ignored.
pub fn recording_changes(body: &Value) -> Result<Map<String, Value>, ApiError> {
    let Value::Object(body) = body else {
        return Err(ApiError::bad_request("Invalid JSON body"));
    };
    let mut changes = Map::new();
    if let Some(title) = body.get("title") {
        let Some(title) = title.as_str() else {
            return Err(ApiError::bad_request("title must be a string"));
        };
        changes.insert("title".into(), Value::String(title.to_string()));
        changes.insert("slug".into(), Value::String(slugify(title)));
    }
    if body.contains_key("description") {
        changes.insert(
            "description".into(),
            description_of(body.get("description"))?,
        );
    }
    if let Some(tags) = body.get("tags") {
        if !tags.is_array() {
            return Err(ApiError::bad_request("tags must be an array"));
        }
        if depth(tags) > MAX_DEPTH {
            return Err(ApiError::bad_request("tags is nested too deeply"));
        }
        changes.insert("tags".into(), tags.clone());
    }
    if body.contains_key("status") {
        match status_of(body.get("status"))? {
            Some(status) => changes.insert("status".into(), Value::String(status)),
            None => return Err(ApiError::bad_request("Invalid status")),
        };
    }
    if let Some(public) = body.get("public") {
        let Some(public) = public.as_bool() else {
            return Err(ApiError::bad_request("public must be a boolean"));
        };
        changes.insert("public".into(), Value::Bool(public));
    }
    if body.contains_key("linked_video") {
        changes.insert(
            "linked_video".into(),
            linked_video_of(body.get("linked_video"))?,
        );
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn valid() -> Value {
        json!({"title": "My Take", "duration": 1500.5, "events": [{"timestamp": 0}], "device_info": []})
    }

    fn created(body: &Value) -> Result<Value, ApiError> {
        let text = body.to_string();
        new_recording(text.as_bytes()).map(|item| serde_json::to_value(item).unwrap())
    }

    fn error_of(body: Value) -> String {
        created(&body).err().map(|e| e.message).unwrap_or_default()
    }

    #[test]
    fn missing_means_javascript_falsy() {
        for (field, falsy) in [
            ("title", json!("")),
            ("title", Value::Null),
            ("duration", json!(0)),
            ("duration", json!(0.0)),
            ("events", json!(false)),
            ("device_info", Value::Null),
        ] {
            let mut b = valid();
            b[field] = falsy;
            assert_eq!(error_of(b), MISSING, "{field}");
        }
        let mut b = valid();
        b.as_object_mut().map(|m| m.remove("device_info"));
        assert_eq!(error_of(b), MISSING);
        // `{}` and `[]` are present.
        let mut b = valid();
        b["device_info"] = json!({});
        assert!(created(&b).is_ok());
    }

    #[test]
    fn rules_apply_in_order() {
        // Missing wins over a bad events value.
        assert_eq!(
            error_of(json!({"title": "", "duration": 1, "events": [], "device_info": {}})),
            MISSING
        );
        let mut b = valid();
        b["events"] = json!([]);
        assert_eq!(error_of(b), EVENTS);
        let mut b = valid();
        b["events"] = json!("lots");
        assert_eq!(error_of(b), EVENTS);
        // Events rule before the type checks.
        let mut b = valid();
        b["events"] = json!({"a": 1});
        b["title"] = json!(5);
        assert_eq!(error_of(b), EVENTS);
        let mut b = valid();
        b["title"] = json!(5);
        assert_eq!(error_of(b), "title must be a string");
        let mut b = valid();
        b["duration"] = json!("100");
        assert_eq!(error_of(b), "duration must be a number");
        let mut b = valid();
        b["tags"] = json!("a,b");
        assert_eq!(error_of(b), "tags must be an array");
        let mut b = valid();
        b["status"] = json!("live");
        assert_eq!(error_of(b), "Invalid status");
    }

    #[test]
    fn defaults_and_forced_values() {
        let mut b = valid();
        b["public"] = json!(true);
        b["featured"] = json!(true);
        b["user_created"] = json!("someone");
        let item = created(&b).unwrap();
        assert_eq!(item["slug"], "my-take");
        assert_eq!(item["status"], "draft");
        assert_eq!(item["public"], false);
        assert_eq!(item["tags"], json!([]));
        assert_eq!(item["linked_video"], Value::Null);
        assert!(item.get("featured").is_none() && item.get("user_created").is_none());
        let mut b = valid();
        b["status"] = json!("published");
        assert_eq!(created(&b).unwrap()["status"], "published");
    }

    #[test]
    fn bodies_that_are_not_json_objects() {
        let error = |body: &[u8]| new_recording(body).err().map(|e| e.message);
        for invalid in [&b"\xff"[..], b"{\"title\": \"\xc3\x28\"}", b"{", b"[] x"] {
            assert_eq!(error(invalid).as_deref(), Some("Invalid JSON body"));
        }
        for empty in [&b""[..], b"  ", b"[]", b"null", b"42", b"\"s\""] {
            assert_eq!(error(empty).as_deref(), Some(MISSING));
        }
    }

    #[test]
    fn values_nest_at_most_64_levels() {
        let mut deep = json!(1);
        for _ in 0..=MAX_DEPTH {
            deep = json!([deep]);
        }
        let mut b = valid();
        b["device_info"] = deep.clone();
        assert_eq!(error_of(b), "device_info is nested too deeply");
        assert_eq!(
            recording_changes(&json!({ "tags": deep }))
                .unwrap_err()
                .message,
            "tags is nested too deeply"
        );
    }

    #[test]
    fn patch_keeps_only_changeable_fields() {
        let c = recording_changes(
            &json!({"title": "New Name!", "featured": true, "user_created": "x",
                                          "events": [], "public": true}),
        )
        .unwrap();
        assert_eq!(
            c,
            json!({"title": "New Name!", "slug": "new-name", "public": true})
                .as_object()
                .cloned()
                .unwrap()
        );
        assert_eq!(
            recording_changes(&json!({"status": "gone"}))
                .unwrap_err()
                .message,
            "Invalid status"
        );
        assert_eq!(
            recording_changes(&json!({"status": null}))
                .unwrap_err()
                .message,
            "Invalid status"
        );
        assert_eq!(
            recording_changes(&json!({"public": "yes"}))
                .unwrap_err()
                .message,
            "public must be a boolean"
        );
        assert!(recording_changes(&json!({})).unwrap().is_empty());
        assert_eq!(
            recording_changes(&json!({"linked_video": "a b"}))
                .unwrap_err()
                .message,
            "linked_video must be a video identifier or null"
        );
    }
}
