//! The value codec shared by every backend: a field's JSON value becomes a
//! [`Scalar`] to bind, and a column read back ([`Cell`]) becomes JSON again
//! (as a `Value`, or straight as text). Both backends store the same
//! scalars (integers, doubles, booleans, text; JSON documents and
//! timestamps as text), so answers are the same byte for byte.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::schema::{Field, FieldType};

/// A value to bind to a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Int(i64),
    Real(f64),
    Bool(bool),
    Text(String),
    /// A list of values for one parameter (`_in`), each already encoded.
    List(Vec<Scalar>),
}

/// A column value as a backend reads it, borrowed from the row.
#[derive(Debug, Clone, Copy)]
pub enum Cell<'a> {
    Null,
    Int(i64),
    Real(f64),
    Bool(bool),
    Text(&'a [u8]),
}

/// The scalar stored for `v` in a column of `field`'s type.
pub fn to_scalar(field: &Field, v: &Value) -> Scalar {
    match (field.kind, v) {
        (_, Value::Null) => Scalar::Null,
        // A JSON document is stored as its text, exactly as written.
        (FieldType::Json, v) => Scalar::Text(v.to_string()),
        (_, Value::Bool(b)) => Scalar::Bool(*b),
        (FieldType::Float, Value::Number(n)) => Scalar::Real(n.as_f64().unwrap_or(0.0)),
        (_, Value::Number(n)) => match n.as_i64() {
            Some(i) => Scalar::Int(i),
            None => Scalar::Real(n.as_f64().unwrap_or(0.0)),
        },
        (_, Value::String(s)) => Scalar::Text(s.clone()),
        (_, other) => Scalar::Text(other.to_string()),
    }
}

/// The scalar of one JSON value compared as JSON (an element of a JSON
/// array): numbers, booleans and strings as themselves.
pub fn json_scalar(v: &Value) -> Scalar {
    match v {
        Value::Null => Scalar::Null,
        Value::Bool(b) => Scalar::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Scalar::Int(i),
            None => Scalar::Real(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => Scalar::Text(s.clone()),
        other => Scalar::Text(other.to_string()),
    }
}

/// A float as JSON: integral values print as integers, as JavaScript does.
pub fn float_value(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

/// The JSON value of a column of kind `kind` (`None`: a computed column).
pub fn from_cell(kind: Option<FieldType>, cell: Cell<'_>) -> Value {
    match (kind, cell) {
        (_, Cell::Null) => Value::Null,
        (_, Cell::Bool(b)) => Value::Bool(b),
        (Some(FieldType::Boolean), Cell::Int(i)) => Value::Bool(i != 0),
        (_, Cell::Int(i)) => Value::from(i),
        (_, Cell::Real(f)) => float_value(f),
        (Some(FieldType::Json), Cell::Text(t)) => serde_json::from_slice(t)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(t).into_owned())),
        (_, Cell::Text(t)) => Value::String(String::from_utf8_lossy(t).into_owned()),
    }
}

/// Writes `value` as JSON. Writing into a `Vec` cannot fail, and every
/// value written here (strings, `serde_json` values) serialises.
fn push_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(&mut *out, value);
}

/// A JSON string.
pub fn push_str(out: &mut Vec<u8>, text: &str) {
    host_sdk::raw::write_string(out, text);
}

/// Stored text as a JSON string, invalid UTF-8 replaced. Checked first as
/// it nearly always is, valid, which is several times faster than the
/// replacing decoder on the same text.
fn push_lossy(out: &mut Vec<u8>, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => push_str(out, text),
        Err(_) => push_str(out, &String::from_utf8_lossy(bytes)),
    }
}

/// One column's value written straight to JSON text: exactly what
/// [`from_cell`] followed by `serde_json` printing gives, except that a
/// stored JSON document is copied as stored instead of being parsed into a
/// tree and printed again (for a recording's thousand events, most of the
/// cost of a read).
pub fn push_cell(out: &mut Vec<u8>, kind: Option<FieldType>, cell: Cell<'_>) {
    match (kind, cell) {
        // Checked, not trusted: the database may have been edited by hand,
        // and text that is not JSON reads as a string, as `from_cell` does.
        (Some(FieldType::Json), Cell::Text(t)) => match serde_json::from_slice::<&RawValue>(t) {
            Ok(raw) => out.extend_from_slice(raw.get().as_bytes()),
            Err(_) => push_lossy(out, t),
        },
        (_, Cell::Text(t)) => push_lossy(out, t),
        (kind, other) => push_json(out, &from_cell(kind, other)),
    }
}

/// A value about to be written, as [`push_cell`] writes the column it
/// becomes; a JSON document is copied as it is, being checked when it was
/// encoded (`values::json_document`, [`to_scalar`]).
pub fn push_written(out: &mut Vec<u8>, kind: Option<FieldType>, value: &Scalar) {
    let cell = match value {
        Scalar::Text(document) if kind == Some(FieldType::Json) => {
            out.extend_from_slice(document.as_bytes());
            return;
        }
        Scalar::Null | Scalar::List(_) => Cell::Null,
        Scalar::Int(i) => Cell::Int(*i),
        Scalar::Real(f) => Cell::Real(*f),
        Scalar::Bool(b) => Cell::Bool(*b),
        Scalar::Text(t) => Cell::Text(t.as_bytes()),
    };
    push_cell(out, kind, cell);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_round_trip_through_their_columns() {
        let cases = [
            (Field::integer("n"), json!(9007199254740993i64)),
            (Field::float("x"), json!(2.5)),
            (Field::boolean("b"), json!(true)),
            (Field::string("s"), json!("é\"\\")),
            (Field::json("j"), json!({"a": [1, 2.5, null]})),
        ];
        for (field, value) in cases {
            let scalar = to_scalar(&field, &value);
            let text;
            let cell = match &scalar {
                Scalar::Int(i) => Cell::Int(*i),
                Scalar::Real(f) => Cell::Real(*f),
                Scalar::Bool(b) => Cell::Bool(*b),
                Scalar::Text(s) => {
                    text = s.clone();
                    Cell::Text(text.as_bytes())
                }
                other => panic!("unexpected {other:?}"),
            };
            assert_eq!(from_cell(Some(field.kind), cell), value);
            let mut out = Vec::new();
            push_cell(&mut out, Some(field.kind), cell);
            assert_eq!(
                String::from_utf8(out).expect("utf-8"),
                value.to_string(),
                "{}",
                field.field
            );
        }
    }

    #[test]
    fn integral_floats_print_as_integers() {
        assert_eq!(float_value(2.0), json!(2));
        assert_eq!(float_value(0.1), json!(0.1));
        assert_eq!(
            from_cell(Some(FieldType::Boolean), Cell::Int(5)),
            json!(true)
        );
    }
}
