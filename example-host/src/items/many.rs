//! Updates and deletions of many items in one request, in Directus's
//! bodies: by keys (`{"keys": [...], "data": {...}}`, or a bare array of
//! keys to delete), by query (`{"query": {...}, "data": {...}}`), or a
//! batch of items each with its key (`[{"id": ..., ...}, ...]`). All of a
//! request is one transaction, bounded by `MAX_BATCH_MUTATION` as creates
//! are; every item goes through the same checks as a write of one.

use serde_json::value::RawValue;
use serde_json::Map;

use super::*;
use platform_store::query::ListParam;

/// What a request of many names.
enum Selection {
    Keys(Vec<String>),
    Query(Box<WireQuery>),
}

/// The changes of an update of many.
enum Changes<'b> {
    /// The same change to every selected item.
    Same(Selection, String),
    /// Each item its own change, its key inside it.
    Batch(Vec<(String, &'b str)>),
}

fn invalid(message: impl Into<String>) -> PlatformError {
    PlatformError::InvalidPayload(message.into())
}

/// Refuses more than `max` items in one request, as creates are refused.
fn at_most(count: usize, max: usize) -> Result<(), PlatformError> {
    if count > max {
        return Err(invalid(format!(
            "Invalid payload. Exceeded max batch mutation limit of {max}."
        )));
    }
    Ok(())
}

/// A key as the body gives it: a string, or a number written as one.
fn key_of(value: &Value) -> Result<String, PlatformError> {
    match value {
        Value::String(s) if !s.is_empty() => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(invalid("\"keys\" must be a list of item keys")),
    }
}

fn keys_of(value: &Value) -> Result<Vec<String>, PlatformError> {
    value
        .as_array()
        .ok_or_else(|| invalid("\"keys\" must be a list of item keys"))?
        .iter()
        .map(key_of)
        .collect()
}

fn query_of(value: &Value) -> Result<WireQuery, PlatformError> {
    serde_json::from_value(value.clone())
        .map_err(|e| PlatformError::InvalidQuery(format!("\"query\" is not a query: {e}")))
}

/// `{"keys": [...]}` or `{"query": {...}}` of an object body.
fn selection(body: &Map<String, Value>) -> Result<Selection, PlatformError> {
    match (body.get("keys"), body.get("query")) {
        (Some(keys), None) => Ok(Selection::Keys(keys_of(keys)?)),
        (None, Some(query)) => Ok(Selection::Query(Box::new(query_of(query)?))),
        _ => Err(invalid("Either \"keys\" or \"query\" is required")),
    }
}

fn parse_update(body: &str) -> Result<Changes<'_>, PlatformError> {
    let body = body.trim();
    if body.starts_with('[') {
        let items: Vec<&RawValue> =
            serde_json::from_str(body).map_err(|_| invalid("Invalid JSON body"))?;
        let mut batch = Vec::with_capacity(items.len());
        for item in items {
            let fields: Map<String, Value> = serde_json::from_str(item.get())
                .map_err(|_| invalid("each item of a batch update must be an object"))?;
            let key = fields
                .get("id")
                .ok_or_else(|| invalid("each item of a batch update needs its \"id\""))
                .and_then(key_of)?;
            batch.push((key, item.get()));
        }
        return Ok(Changes::Batch(batch));
    }
    let object: Map<String, Value> =
        serde_json::from_str(body).map_err(|_| invalid("Invalid JSON body"))?;
    let data = match object.get("data") {
        Some(data @ Value::Object(_)) => data.to_string(),
        _ => return Err(invalid("\"data\" must be an object")),
    };
    Ok(Changes::Same(selection(&object)?, data))
}

fn parse_delete(body: &str) -> Result<Selection, PlatformError> {
    let value: Value = serde_json::from_str(body).map_err(|_| invalid("Invalid JSON body"))?;
    match &value {
        Value::Array(_) => Ok(Selection::Keys(keys_of(&value)?)),
        Value::Object(object) => selection(object),
        _ => Err(invalid(
            "the body must be a list of keys, or hold \"keys\" or \"query\"",
        )),
    }
}

impl Platform {
    /// The keys a selection names, read as the caller for a query (its
    /// limit, or the items API's default page).
    fn selected(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        selection: &Selection,
        default_limit: u64,
    ) -> Result<Vec<String>, PlatformError> {
        match selection {
            Selection::Keys(keys) => Ok(keys.clone()),
            Selection::Query(query) => {
                let ids = WireQuery {
                    fields: Some(ListParam::List(vec!["id".into()])),
                    ..(**query).clone()
                };
                let found =
                    self.read_by_query(session, who, collection, &ids, Some(default_limit))?;
                Ok(found
                    .iter()
                    .filter_map(|r| r.get("id").and_then(Value::as_str).map(String::from))
                    .collect())
            }
        }
    }
}

pub(super) fn update_many_json(
    platform: &Platform,
    who: &Who,
    collection: &str,
    body: &str,
    max: usize,
    default_limit: u64,
) -> Result<Vec<String>, PlatformError> {
    let changes = parse_update(body)?;
    let named = match &changes {
        Changes::Batch(batch) => batch.len(),
        Changes::Same(Selection::Keys(keys), _) => keys.len(),
        Changes::Same(Selection::Query(_), _) => 0,
    };
    at_most(named, max)?;
    platform.transaction(|s| {
        let mut keys = Vec::new();
        match &changes {
            Changes::Batch(batch) => {
                for (key, item) in batch {
                    keys.push(platform.update_one_json(s, who, collection, key, item)?);
                }
            }
            Changes::Same(selection, data) => {
                let selected = platform.selected(s, who, collection, selection, default_limit)?;
                at_most(selected.len(), max)?;
                for key in &selected {
                    keys.push(platform.update_one_json(s, who, collection, key, data)?);
                }
            }
        }
        Ok(keys)
    })
}

pub(super) fn delete_many(
    platform: &Platform,
    who: &Who,
    collection: &str,
    body: &str,
    max: usize,
    default_limit: u64,
) -> Result<Vec<String>, PlatformError> {
    let selection = parse_delete(body)?;
    if let Selection::Keys(keys) = &selection {
        at_most(keys.len(), max)?;
    }
    platform.transaction(|s| {
        let selected = platform.selected(s, who, collection, &selection, default_limit)?;
        at_most(selected.len(), max)?;
        for key in &selected {
            platform.delete_one(s, who, collection, key)?;
        }
        Ok(selected)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_of_many_takes_keys_a_query_or_a_batch() {
        match parse_update(r#"{"keys": ["a", "b"], "data": {"x": 1}}"#) {
            Ok(Changes::Same(Selection::Keys(keys), data)) => {
                assert_eq!(keys, ["a", "b"]);
                assert_eq!(data, r#"{"x":1}"#);
            }
            _ => panic!("keys"),
        }
        assert!(matches!(
            parse_update(r#"{"query": {"filter": {"x": {"_eq": 1}}}, "data": {}}"#),
            Ok(Changes::Same(Selection::Query(_), _))
        ));
        match parse_update(r#"[{"id": "a", "x": 1}, {"id": "b", "x": 2}]"#) {
            Ok(Changes::Batch(batch)) => {
                assert_eq!(batch.len(), 2);
                assert_eq!(batch[1].0, "b");
            }
            _ => panic!("batch"),
        }
        for bad in [
            r#"{"keys": ["a"]}"#,
            r#"{"data": {}}"#,
            r#"{"keys": ["a"], "query": {}, "data": {}}"#,
            r#"{"keys": [null], "data": {}}"#,
            r#"[{"x": 1}]"#,
            r#"{"query": {"nope": 1}, "data": {}}"#,
            "nonsense",
        ] {
            assert!(parse_update(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_deletion_of_many_takes_keys_or_a_query() {
        assert!(matches!(parse_delete(r#"["a", "b"]"#), Ok(Selection::Keys(k)) if k.len() == 2));
        assert!(matches!(
            parse_delete(r#"{"keys": ["a"]}"#),
            Ok(Selection::Keys(_))
        ));
        assert!(matches!(
            parse_delete(r#"{"query": {"limit": 2}}"#),
            Ok(Selection::Query(_))
        ));
        for bad in ["\"a\"", "{}", "[{}]", "nonsense"] {
            assert!(parse_delete(bad).is_err(), "{bad}");
        }
    }
}
