//! Bodies of the play endpoints of videos and recordings.

use host_sdk::{ApiError, Request};
use serde_json::{Map, Value};

/// The body as an object (an empty body is `{}`); anything else is 400
/// `Invalid JSON body`.
pub fn body_object(req: &Request) -> Result<Map<String, Value>, ApiError> {
    match req.json::<Value>()? {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::bad_request("Invalid JSON body")),
    }
}

/// The changes of a play update: `<duration_field>` (a number) and
/// `completed` (a boolean), each taken when present and not null.
pub fn play_changes(req: &Request, duration_field: &str) -> Result<Map<String, Value>, ApiError> {
    let body = body_object(req)?;
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
    }
}
