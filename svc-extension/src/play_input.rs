//! Bodies of the play endpoints of videos and recordings.
//!
//! These endpoints take anonymous requests and read two or three small
//! fields, so a body is never built into a tree: the fields they read are
//! picked out as they are parsed and everything else is skipped, so a
//! hostile body of many megabytes costs its bytes, not a hundred times them.

use std::fmt;

use host_sdk::{ApiError, Request};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A value of a wanted field kept whole up to this size; a longer array or
/// object (which no play field accepts) is kept as an empty one of its kind,
/// so that its type check fails as it would have.
const KEPT_VALUE_BYTES: usize = 4096;

/// The fields of the body named in `wanted`, as an object (an empty body is
/// `{}`); a body that is not a JSON object is 400 `Invalid JSON body`.
pub fn body_fields(req: &Request, wanted: &[&str]) -> Result<Map<String, Value>, ApiError> {
    let body = req.body();
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let fields = Fields { wanted }
        .deserialize(&mut de)
        .and_then(|fields| de.end().map(|()| fields))
        .map_err(|_| ApiError::bad_request("Invalid JSON body"))?;
    Ok(fields)
}

/// Reads a JSON object, keeping only the `wanted` fields (the last of a
/// repeated one, as a parsed object would).
struct Fields<'w> {
    wanted: &'w [&'w str],
}

impl<'de> DeserializeSeed<'de> for Fields<'_> {
    type Value = Map<String, Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Fields<'_> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = Map::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if !self.wanted.contains(&key.as_ref()) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let raw: &RawValue = map.next_value()?;
            let text = raw.get();
            let value = if text.len() <= KEPT_VALUE_BYTES {
                serde_json::from_str(text).map_err(de::Error::custom)?
            } else if text.starts_with('[') {
                Value::Array(Vec::new())
            } else if text.starts_with('{') {
                Value::Object(Map::new())
            } else {
                serde_json::from_str(text).map_err(de::Error::custom)?
            };
            kept.insert(key.into_owned(), value);
        }
        Ok(kept)
    }
}

/// The changes of a play update: `<duration_field>` (a number) and
/// `completed` (a boolean), each taken when present and not null.
pub fn play_changes(req: &Request, duration_field: &str) -> Result<Map<String, Value>, ApiError> {
    let body = body_fields(req, &[duration_field, "completed"])?;
    let mut changes = Map::new();
    match body.get(duration_field) {
        None | Some(Value::Null) => {}
        Some(v) => {
            let v = crate::duration::checked(duration_field, v)?;
            changes.insert(duration_field.into(), v.clone());
        }
    }
    match body.get("completed") {
        None | Some(Value::Null) => {}
        Some(v @ Value::Bool(_)) => {
            changes.insert("completed".into(), v.clone());
        }
        Some(_) => return Err(ApiError::bad_request("completed must be a boolean")),
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn changes(body: Value) -> Result<Map<String, Value>, String> {
        play_changes(
            &Request::new("PATCH", "/x", body.to_string()),
            "duration_played",
        )
        .map_err(|e| e.message)
    }

    #[test]
    fn fields_are_typed_and_optional() {
        assert_eq!(
            changes(json!({"duration_played": 12.5, "completed": true, "other": 1})).unwrap(),
            json!({"duration_played": 12.5, "completed": true})
                .as_object()
                .cloned()
                .unwrap()
        );
        assert!(changes(json!({"completed": null})).unwrap().is_empty());
        assert_eq!(
            changes(json!({"duration_played": "5"})).unwrap_err(),
            "duration_played must be a number"
        );
        assert_eq!(
            changes(json!({"completed": 1})).unwrap_err(),
            "completed must be a boolean"
        );
        assert_eq!(changes(json!([1])).unwrap_err(), "Invalid JSON body");
        assert_eq!(changes(json!(5)).unwrap_err(), "Invalid JSON body");
    }

    fn fields(body: &str) -> Result<Value, String> {
        body_fields(&Request::new("POST", "/x", body.to_string()), &["a", "b"])
            .map(Value::Object)
            .map_err(|e| e.message)
    }

    #[test]
    fn only_the_wanted_fields_are_read_and_the_rest_is_skipped() {
        assert_eq!(fields("").unwrap(), json!({}));
        assert_eq!(
            fields(r#"{"a": "x", "z": [1, [2, {"q": 3}]], "b": null}"#).unwrap(),
            json!({"a": "x", "b": null})
        );
        assert_eq!(fields(r#"{"a": 1, "a": 2}"#).unwrap(), json!({"a": 2}));
        // A long array or object under a wanted name keeps its kind only.
        let long = format!("[{}]", vec!["1"; 5000].join(","));
        assert_eq!(
            fields(&format!(r#"{{"a": {long}, "b": {{"k": {long}}}}}"#)).unwrap(),
            json!({"a": [], "b": {}})
        );
        for bad in ["[1]", "{\"a\": }", "{} {}", "{\"a\": 1", "nul"] {
            assert_eq!(fields(bad).unwrap_err(), "Invalid JSON body", "{bad}");
        }
    }
}
