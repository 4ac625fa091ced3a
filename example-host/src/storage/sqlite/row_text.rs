//! Column values written straight to JSON text, for readers that want text
//! anyway (the extension boundary, whose records cross as JSON). Prints
//! exactly what [`super::from_sql`] followed by `serde_json` printing would,
//! except that a stored JSON document is copied as stored instead of being
//! parsed into a tree and printed again: for a recording's thousand events
//! that is most of the cost of a read.

use host_sdk::schema::FieldType;
use rusqlite::types::ValueRef;
use serde::Serialize;
use serde_json::value::RawValue;

/// Writes `value` as JSON. Writing into a `Vec` cannot fail, and every
/// value written here (strings, `serde_json` values) serialises.
fn push_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(&mut *out, value);
}

/// A JSON string.
pub(super) fn push_str(out: &mut Vec<u8>, text: &str) {
    push_json(out, text);
}

fn push_lossy(out: &mut Vec<u8>, bytes: &[u8]) {
    push_str(out, &String::from_utf8_lossy(bytes));
}

/// One column's value, as `from_sql` reads it. Only text is written here
/// (stored JSON copied, other text escaped without a `String` of its own);
/// every other value is small and goes through `from_sql` itself.
pub(super) fn push_value(out: &mut Vec<u8>, kind: Option<FieldType>, value: ValueRef<'_>) {
    match (kind, value) {
        // Checked, not trusted: the file may have been edited by hand, and
        // text that is not JSON reads as a string, as `from_sql` does.
        (Some(FieldType::Json), ValueRef::Text(t)) => {
            match serde_json::from_slice::<&RawValue>(t) {
                Ok(raw) => out.extend_from_slice(raw.get().as_bytes()),
                Err(_) => push_lossy(out, t),
            }
        }
        (_, ValueRef::Text(t)) | (_, ValueRef::Blob(t)) => push_lossy(out, t),
        (kind, other) => push_json(out, &super::from_sql(kind, other)),
    }
}
