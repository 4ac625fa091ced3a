//! JSON Schemas of Rust types for the OpenAPI document: what
//! [`Route::body_type`](crate::Route::body_type),
//! [`Route::response_type`](crate::Route::response_type) and
//! [`Route::query_type`](crate::Route::query_type) describe.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

/// `T`'s JSON Schema (2020-12, the dialect of OpenAPI 3.1), every
/// subschema inline: an extension's part of the document has no
/// `components` of its own. A recursive type's inner occurrence, which
/// would need a reference, is left open (`{}`).
pub fn schema_of<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = serde_json::to_value(schema).unwrap_or_else(|_| json!({}));
    if let Value::Object(root) = &mut value {
        root.remove("$defs");
    }
    open_references(&mut value);
    value
}

/// Replaces every `{"$ref": ...}` (only recursive types keep one) with an
/// open schema that says why.
fn open_references(value: &mut Value) {
    match value {
        Value::Object(members) if members.contains_key("$ref") => {
            *members = Map::new();
            members.insert(
                "description".into(),
                "(recursive: the same shape as its parent)".into(),
            );
        }
        Value::Object(members) => members.values_mut().for_each(open_references),
        Value::Array(items) => items.iter_mut().for_each(open_references),
        _ => {}
    }
}

/// `T`'s fields as OpenAPI query parameters: `T` is what
/// [`Request::query_as`](crate::Request::query_as) reads, so a field is
/// required unless it is an `Option` or has a default.
pub fn query_parameters_of<T: JsonSchema>() -> Vec<Value> {
    let schema = schema_of::<T>();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema["properties"]
        .as_object()
        .map(|properties| {
            properties
                .iter()
                .map(|(name, property)| {
                    let mut parameter = json!({
                        "name": name,
                        "in": "query",
                        "required": required.contains(&name.as_str()),
                        "schema": property,
                    });
                    if let Some(text) = property.get("description") {
                        parameter["description"] = text.clone();
                    }
                    parameter
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The schema of every error answer of an extension, built once.
pub(crate) fn error_schema() -> Value {
    static SCHEMA: once_cell::sync::Lazy<Value> =
        once_cell::sync::Lazy::new(schema_of::<ErrorAnswer>);
    SCHEMA.clone()
}

/// The body of every error answer of an extension
/// ([`ApiError`](crate::ApiError)).
#[derive(JsonSchema)]
#[allow(dead_code)] // only its schema is used
struct ErrorAnswer {
    /// What went wrong, for people.
    error: String,
    /// More about it, when there is more (a parser's message).
    #[serde(default)]
    details: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Page {
        /// How many, at most.
        limit: Option<u32>,
        tag: String,
        inner: Inner,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        flag: bool,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Tree {
        children: Vec<Tree>,
    }

    #[test]
    fn schemas_are_inline_and_carry_the_doc_comments() {
        let schema = schema_of::<Page>();
        assert_eq!(schema["type"], "object");
        assert_eq!(
            schema["properties"]["inner"]["properties"]["flag"]["type"],
            "boolean"
        );
        assert_eq!(
            schema["properties"]["limit"]["description"],
            "How many, at most."
        );
        assert!(schema.get("$defs").is_none() && schema.get("$schema").is_none());
    }

    #[test]
    fn a_recursive_type_is_left_open_where_it_recurs() {
        let schema = schema_of::<Tree>();
        let text = schema.to_string();
        assert!(!text.contains("$ref"), "{text}");
        assert_eq!(schema["properties"]["children"]["type"], "array");
    }

    #[test]
    fn query_parameters_are_required_unless_optional() {
        let parameters = query_parameters_of::<Page>();
        let find = |name: &str| {
            parameters
                .iter()
                .find(|p| p["name"] == name)
                .cloned()
                .unwrap_or_default()
        };
        assert_eq!(find("limit")["required"], false);
        assert_eq!(find("limit")["description"], "How many, at most.");
        assert_eq!(find("tag")["required"], true);
        assert_eq!(find("tag")["in"], "query");
    }
}
