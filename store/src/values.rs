//! Checking and normalising field values against their declared types.

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, Utc};
use serde_json::Value;

use crate::schema::{Field, FieldType};

/// Timestamps are stored and returned as RFC 3339 UTC with milliseconds,
/// so that they also sort correctly as text.
pub fn format_timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn now_timestamp() -> String {
    format_timestamp(Utc::now())
}

/// Parses RFC 3339, `YYYY-MM-DDTHH:MM:SS[.fff]` (taken as UTC) or `YYYY-MM-DD`.
pub fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, fmt) {
            return Some(t.and_utc());
        }
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

/// How deep a JSON field's value may nest: well inside the JSON parsers'
/// own limit (128), so that a stored value can always be read back inside
/// a list of records.
pub const MAX_JSON_DEPTH: usize = 64;

/// The nesting depth of a JSON value (a scalar is 0).
pub fn json_depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(json_depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(json_depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Whether a string anywhere in `v` (a key included) holds a NUL character.
pub fn holds_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

/// A JSON field's value given as JSON text (already known to be JSON),
/// checked and made ready to store without building it into a tree: the
/// same rules as [`normalize`] (nesting, no NUL character), whitespace
/// between tokens dropped, members kept in the order written. `None` for
/// `null`. A recording's thousands of events pass through here as one
/// scan of their text.
pub fn json_document(field: &Field, text: &str) -> Result<Option<String>, String> {
    let text = text.trim();
    if text == "null" {
        return Ok(None);
    }
    if check_document(field, text.as_bytes())? {
        Ok(Some(compact(text)))
    } else {
        // Written compact already (the usual case): one copy.
        Ok(Some(text.to_owned()))
    }
}

/// Checks nesting and NUL characters in one scan (strings skipped with
/// `memchr`); returns whether whitespace lies between tokens.
fn check_document(field: &Field, bytes: &[u8]) -> Result<bool, String> {
    let mut depth = 0usize;
    let mut spaced = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let (end, holds_nul) = string_end(bytes, i + 1);
                if holds_nul {
                    return Err(format!(
                        "\"{}\" must not contain a NUL character",
                        field.field
                    ));
                }
                i = end;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return Err(format!(
                        "\"{}\" is nested too deeply (at most {MAX_JSON_DEPTH} levels)",
                        field.field
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b' ' | b'\t' | b'\n' | b'\r' => spaced = true,
            _ => {}
        }
        i += 1;
    }
    Ok(spaced)
}

/// The index of the quote closing the string whose text starts at `i`
/// (found with `memchr`), and whether the string holds an escaped NUL.
fn string_end(bytes: &[u8], mut i: usize) -> (usize, bool) {
    let mut holds_nul = false;
    while let Some(at) = memchr::memchr2(b'"', b'\\', bytes.get(i..).unwrap_or_default()) {
        i += at;
        if bytes[i] == b'"' {
            return (i, holds_nul);
        }
        holds_nul |= bytes.get(i + 1..i + 6) == Some(b"u0000".as_slice());
        i += 2;
    }
    (bytes.len(), holds_nul)
}

/// `text` (valid JSON) without whitespace between tokens.
fn compact(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(bytes.len());
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            // Strings are copied whole.
            b'"' => i = string_end(bytes, i + 1).0 + 1,
            b' ' | b'\t' | b'\n' | b'\r' => {
                out.push_str(&text[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(text.get(start..).unwrap_or_default());
    out
}

/// Why a value does not fit its field.
pub fn type_error(field: &Field) -> String {
    let expected = match field.kind {
        FieldType::Uuid => "a UUID string",
        FieldType::String | FieldType::Text => "a string",
        FieldType::Integer => "an integer",
        FieldType::Float => "a number",
        FieldType::Boolean => "a boolean",
        FieldType::Timestamp => "a timestamp",
        FieldType::Json => "JSON",
    };
    format!("\"{}\" must be {expected}", field.field)
}

/// Whether `s` holds a whitespace character: bytes compared for ASCII
/// text (a key list's hundreds of UUIDs), characters otherwise.
fn has_whitespace(s: &str) -> bool {
    if s.is_ascii() {
        // `char::is_whitespace` on ASCII: tab, line feed, vertical tab,
        // form feed, carriage return and space.
        s.bytes().any(|b| matches!(b, b'\t'..=b'\r' | b' '))
    } else {
        s.contains(char::is_whitespace)
    }
}

/// Normalises a value written to `field`. `lenient` accepts the string forms
/// a query string carries (`"true"`, `"42"`), for filter values.
pub fn normalize(field: &Field, value: &Value, lenient: bool) -> Result<Value, String> {
    if value.is_null() {
        return Ok(Value::Null);
    }
    let bad = || Err(type_error(field));
    // Text is stored as text on every backend, and PostgreSQL's cannot
    // hold a NUL character (nor can its JSON, even escaped): refused
    // everywhere, so both store the same.
    if !lenient && holds_nul(value) {
        return Err(format!(
            "\"{}\" must not contain a NUL character",
            field.field
        ));
    }
    match field.kind {
        FieldType::Json if json_depth(value) > MAX_JSON_DEPTH => Err(format!(
            "\"{}\" is nested too deeply (at most {MAX_JSON_DEPTH} levels)",
            field.field
        )),
        FieldType::Json => Ok(value.clone()),
        FieldType::String | FieldType::Text => match value {
            Value::String(_) => Ok(value.clone()),
            Value::Number(n) if lenient => Ok(Value::String(n.to_string())),
            _ => bad(),
        },
        FieldType::Uuid => match value {
            // Keys are UUIDs, but references imported from elsewhere may not
            // be: accept any non-empty string without spaces.
            Value::String(s) if !s.is_empty() && !has_whitespace(s) => Ok(value.clone()),
            Value::String(_) if lenient => Ok(value.clone()),
            _ => bad(),
        },
        FieldType::Integer => match value {
            // In range of a 64-bit integer only (not a u64 beyond it).
            Value::Number(n) if n.is_i64() => Ok(value.clone()),
            Value::Number(n) => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Value::from(f as i64)),
                _ => bad(),
            },
            Value::String(s) if lenient => {
                s.trim().parse::<i64>().map(Value::from).or_else(|_| bad())
            }
            _ => bad(),
        },
        FieldType::Float => match value {
            Value::Number(_) => Ok(value.clone()),
            Value::String(s) if lenient => match s.trim().parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Value::from(f)),
                _ => bad(),
            },
            _ => bad(),
        },
        FieldType::Boolean => match value {
            Value::Bool(_) => Ok(value.clone()),
            Value::String(s) if lenient => match s.as_str() {
                "true" | "1" => Ok(Value::Bool(true)),
                "false" | "0" => Ok(Value::Bool(false)),
                _ => bad(),
            },
            Value::Number(n) if lenient => Ok(Value::Bool(n.as_f64() != Some(0.0))),
            _ => bad(),
        },
        FieldType::Timestamp => match value {
            Value::String(s) => match parse_timestamp(s) {
                Some(t) => Ok(Value::String(format_timestamp(t))),
                None => bad(),
            },
            _ => bad(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The byte test agrees with `char::is_whitespace` on every ASCII
    /// character and on text that is not ASCII.
    #[test]
    fn whitespace_is_found_as_characters_would_find_it() {
        for b in 0u8..128 {
            let s = format!("ab{}cd", b as char);
            assert_eq!(has_whitespace(&s), s.contains(char::is_whitespace), "{b}");
        }
        for s in ["é\u{a0}x", "é x", "éx", "\u{2003}", "日本"] {
            assert_eq!(has_whitespace(s), s.contains(char::is_whitespace), "{s}");
        }
    }

    #[test]
    fn json_documents_are_stored_compact_as_written() {
        let f = Field::json("j");
        let text = "{ \"b\" : [1, 2.50, \"a b\\\" [\"],\n\t\"a\": {} }";
        let stored = json_document(&f, text).unwrap().unwrap();
        assert_eq!(stored, r#"{"b":[1,2.50,"a b\" ["],"a":{}}"#);
        let parsed: Value = serde_json::from_str(&stored).unwrap();
        assert_eq!(parsed, serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(json_document(&f, " null ").unwrap(), None);
        let compact = r#"{"a":"x \" y","b":[1,{}]}"#;
        assert_eq!(
            json_document(&f, compact).unwrap().as_deref(),
            Some(compact)
        );
        assert_eq!(
            json_document(&f, "[1,\"\\\\\" , 2 ]").unwrap().as_deref(),
            Some(r#"[1,"\\",2]"#)
        );
        assert_eq!(
            json_document(&f, "\"x\"").unwrap().as_deref(),
            Some("\"x\"")
        );
    }

    #[test]
    fn json_documents_follow_the_rules_of_json_values() {
        let f = Field::json("j");
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(json_document(&f, &deep(MAX_JSON_DEPTH)).is_ok());
        assert!(normalize(
            &f,
            &serde_json::from_str(&deep(MAX_JSON_DEPTH + 1)).unwrap(),
            false
        )
        .is_err());
        let err = json_document(&f, &deep(MAX_JSON_DEPTH + 1)).unwrap_err();
        assert!(err.contains("nested too deeply"), "{err}");
        let err = json_document(&f, r#"{"a":"x\u0000y"}"#).unwrap_err();
        assert!(err.contains("NUL"), "{err}");
        // An escaped backslash before "u0000" is not a NUL.
        assert!(json_document(&f, r#"["\\u0000"]"#).is_ok());
    }

    #[test]
    fn timestamps_are_normalised_to_utc_millis() {
        let f = Field::timestamp("t");
        assert_eq!(
            normalize(&f, &json!("2026-01-02T03:04:05+01:00"), false).unwrap(),
            json!("2026-01-02T02:04:05.000Z")
        );
        assert_eq!(
            normalize(&f, &json!("2026-01-02"), false).unwrap(),
            json!("2026-01-02T00:00:00.000Z")
        );
        assert!(normalize(&f, &json!("yesterday"), false).is_err());
    }

    #[test]
    fn json_values_nest_at_most_64_levels() {
        let f = Field::json("j");
        let mut v = json!(1);
        for _ in 0..MAX_JSON_DEPTH {
            v = json!([v]);
        }
        assert_eq!(json_depth(&v), MAX_JSON_DEPTH);
        assert!(normalize(&f, &v, false).is_ok());
        assert!(normalize(&f, &json!({ "deeper": v }), false).is_err());
    }

    #[test]
    fn strict_and_lenient_types() {
        let b = Field::boolean("b");
        assert!(normalize(&b, &json!("true"), false).is_err());
        assert_eq!(normalize(&b, &json!("true"), true).unwrap(), json!(true));
        let i = Field::integer("i");
        assert_eq!(normalize(&i, &json!(3.0), false).unwrap(), json!(3));
        assert!(normalize(&i, &json!(3.5), false).is_err());
        assert_eq!(normalize(&i, &json!("42"), true).unwrap(), json!(42));
        let s = Field::string("s");
        assert!(normalize(&s, &json!(5), false).is_err());
        assert!(
            normalize(&s, &json!("a\0b"), false).is_err(),
            "no NUL stored"
        );
        assert!(
            normalize(&s, &json!("a\0b"), true).is_ok(),
            "a filter may name one"
        );
        let j = Field::json("j");
        assert!(normalize(&j, &json!({"k": ["a\0b"]}), false).is_err());
        assert!(normalize(&j, &json!({"a\0": 1}), false).is_err());
        assert!(normalize(&j, &json!({"k": ["ab"]}), false).is_ok());
        assert_eq!(normalize(&s, &Value::Null, false).unwrap(), Value::Null);
    }
}
