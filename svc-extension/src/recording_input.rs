//! Validation of recording bodies, as plain functions: the rules of
//! POST /recordings in their order, and the fields PATCH may change.

use host_sdk::ApiError;
use serde_json::{Map, Value};

use crate::slug::slugify;

pub const MISSING: &str = "Missing required fields: title, duration, events, device_info";
pub const EVENTS: &str = "Events must be a non-empty array";
pub const STATUSES: [&str; 3] = ["draft", "published", "archived"];

/// How deep `events`, `device_info` and `tags` may nest (the platform's
/// limit for JSON fields).
pub const MAX_DEPTH: usize = 64;

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn shallow(field: &str, v: Option<&Value>) -> Result<(), ApiError> {
    match v {
        Some(v) if depth(v) > MAX_DEPTH => Err(ApiError::bad_request(format!(
            "{field} is nested too deeply"
        ))),
        _ => Ok(()),
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
pub fn new_recording(body: &Value) -> Result<Map<String, Value>, ApiError> {
    let get = |k: &str| body.get(k);
    if !["title", "duration", "events", "device_info"]
        .iter()
        .all(|k| truthy(get(k)))
    {
        return Err(ApiError::bad_request(MISSING));
    }
    if get("events")
        .and_then(Value::as_array)
        .is_none_or(|e| e.is_empty())
    {
        return Err(ApiError::bad_request(EVENTS));
    }
    let Some(title) = get("title").and_then(Value::as_str) else {
        return Err(ApiError::bad_request("title must be a string"));
    };
    crate::duration::checked("duration", get("duration").unwrap_or(&Value::Null))?;
    let tags = tags_of(get("tags"))?;
    let status = status_of(get("status"))?.unwrap_or_else(|| "draft".into());
    for field in ["events", "device_info", "tags"] {
        shallow(field, get(field))?;
    }
    let mut item = Map::new();
    item.insert("title".into(), Value::String(title.to_string()));
    item.insert("slug".into(), Value::String(slugify(title)));
    item.insert("description".into(), description_of(get("description"))?);
    item.insert(
        "duration".into(),
        get("duration").cloned().unwrap_or(Value::Null),
    );
    item.insert(
        "events".into(),
        get("events").cloned().unwrap_or(Value::Null),
    );
    item.insert(
        "device_info".into(),
        get("device_info").cloned().unwrap_or(Value::Null),
    );
    item.insert("tags".into(), tags);
    item.insert("linked_video".into(), linked_video_of(get("linked_video"))?);
    item.insert("status".into(), Value::String(status));
    item.insert("public".into(), Value::Bool(false));
    Ok(item)
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
        shallow("tags", Some(tags))?;
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

    fn error_of(body: Value) -> String {
        new_recording(&body)
            .err()
            .map(|e| e.message)
            .unwrap_or_default()
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
        assert!(new_recording(&b).is_ok());
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
        let item = new_recording(&b).unwrap();
        assert_eq!(item["slug"], "my-take");
        assert_eq!(item["status"], "draft");
        assert_eq!(item["public"], false);
        assert_eq!(item["tags"], json!([]));
        assert_eq!(item["linked_video"], Value::Null);
        assert!(!item.contains_key("featured") && !item.contains_key("user_created"));
        let mut b = valid();
        b["status"] = json!("published");
        assert_eq!(new_recording(&b).unwrap()["status"], "published");
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
