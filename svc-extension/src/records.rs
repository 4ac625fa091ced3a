//! Reading the records the public endpoints expand: users (without private
//! fields) and files, always in batches.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use foldhash::HashMapExt;

use host_sdk::raw::RawRecord;
use host_sdk::{Items, ItemsError, Query};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// Fields of a user record never shown by the public endpoints: left out
/// of every read of users for them (`Query::without`), so never read.
pub const PRIVATE_USER_FIELDS: [&str; 3] = ["email", "password", "token"];

/// [`PRIVATE_USER_FIELDS`] as paths below a relation that leads to users
/// (`author` gives `author.email`, ...), for `Query::without`.
pub fn private_user_fields_below(relation: &str) -> Vec<String> {
    PRIVATE_USER_FIELDS
        .iter()
        .map(|field| format!("{relation}.{field}"))
        .collect()
}

/// Users as the public endpoints show them, each record's text as the host
/// wrote it (read without the private fields), found by id.
pub struct PublicUsers {
    text: String,
    /// Where each user's record is in `text`.
    spans: foldhash::HashMap<String, Range<usize>>,
}

impl PublicUsers {
    /// The record of the user with this id.
    pub fn get(&self, id: &str) -> Option<&str> {
        self.spans
            .get(id)
            .and_then(|span| self.text.get(span.clone()))
    }
}

/// A record's key, the rest of it skipped.
#[derive(Deserialize)]
struct Keyed<'t> {
    #[serde(borrow)]
    id: Option<Cow<'t, str>>,
}

/// The public users with these ids: one call.
pub fn public_users_by_id(items: &Items<'_>, ids: &[String]) -> Result<PublicUsers, ItemsError> {
    let without = Query::new().without(&PRIVATE_USER_FIELDS);
    let text = by_id_text(items, "platform_users", ids, without)?;
    let decode = |e| ItemsError::decode("users", e);
    let records: Vec<&RawValue> = serde_json::from_str(&text).map_err(decode)?;
    let mut spans = foldhash::HashMap::with_capacity(records.len());
    for record in records {
        let Some(id) = serde_json::from_str::<Keyed<'_>>(record.get())
            .map_err(decode)?
            .id
        else {
            continue;
        };
        // The record borrows its text from `text`: its place there.
        let start = record.get().as_ptr() as usize - text.as_ptr() as usize;
        spans.insert(id.into_owned(), start..start + record.get().len());
    }
    Ok(PublicUsers { text, spans })
}

/// Whether a read that follows relations was refused for what it would
/// hold (past the host's bound on related records or bytes in one answer)
/// or for leaving fields out below a relation (a host older than SDK
/// 1.18): either way the same records can be read without following the
/// relation, in more calls. svc's own queries are otherwise valid, so the
/// host's `INVALID_QUERY` says one of these.
pub fn refused_as_one_read(e: &ItemsError) -> bool {
    let refused = matches!(e, ItemsError::InvalidQuery(_));
    if refused {
        log::debug!("a read following relations was refused, read apart: {e}");
    }
    refused
}

/// Distinct non-null string values of `field` over raw `records`, in order.
pub fn raw_ids_of(records: &[RawRecord<'_>], field: &str) -> Vec<String> {
    let mut seen = foldhash::HashSet::default();
    records
        .iter()
        .filter_map(|r| r.str(field))
        .filter(|id| seen.insert(id.clone()))
        .map(Cow::into_owned)
        .collect()
}

/// Parses the host's text of a list of records.
pub fn raw_list<'t>(what: &str, text: &'t str) -> Result<Vec<RawRecord<'t>>, ItemsError> {
    RawRecord::parse_list(text).map_err(|e| ItemsError::decode(what, e))
}

/// The text of `collection`'s records with these ids (with `query`'s
/// fields), one call whatever their number (`"[]"` for none): parse it
/// with [`raw_list`].
pub fn by_id_text(
    items: &Items<'_>,
    collection: &str,
    ids: &[String],
    query: Query,
) -> Result<String, ItemsError> {
    if ids.is_empty() {
        return Ok("[]".into());
    }
    items.read_by_query_raw(collection, &query.filter(json!({"id": {"_in": ids}})))
}

/// The string value of a field.
pub fn str_field<'a>(record: &'a Value, field: &str) -> Option<&'a str> {
    record.get(field).and_then(Value::as_str)
}

/// Distinct non-null string values of `field` over `records`, in order.
pub fn ids_of<'a>(records: impl IntoIterator<Item = &'a Value>, field: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    records
        .into_iter()
        .filter_map(|r| str_field(r, field))
        .filter(|id| seen.insert(id.to_string()))
        .map(String::from)
        .collect()
}

/// Records of `collection` by id, one call whatever the number of ids.
pub fn by_id(
    items: &Items<'_>,
    collection: &str,
    ids: &[String],
) -> Result<HashMap<String, Value>, ItemsError> {
    let text = by_id_text(items, collection, ids, Query::new())?;
    let records = serde_json::from_str(&text).map_err(|e| ItemsError::decode("records", e))?;
    Ok(keyed_by_id(records))
}

/// Records by their `id` (records without one are left out).
pub fn keyed_by_id(records: Vec<Value>) -> HashMap<String, Value> {
    records
        .into_iter()
        .filter_map(|r| str_field(&r, "id").map(String::from).map(|id| (id, r)))
        .collect()
}

/// Counts of `collection` records per value of `field`, for the given values.
pub fn counts_by(
    items: &Items<'_>,
    collection: &str,
    field: &str,
    values: &[String],
) -> Result<HashMap<String, u64>, ItemsError> {
    counts_by_filtered(items, collection, field, values, json!({}))
}

/// [`counts_by`] among the records that also match `extra`.
pub fn counts_by_filtered(
    items: &Items<'_>,
    collection: &str,
    field: &str,
    values: &[String],
    extra: Value,
) -> Result<HashMap<String, u64>, ItemsError> {
    if values.is_empty() {
        return Ok(HashMap::new());
    }
    // Looked up by value, however many: counting every group of the
    // collection instead would cost what the whole collection holds.
    let filter = json!({"_and": [{ field: {"_in": values} }, extra]});
    let text = items.aggregate_raw(
        collection,
        &Query::new()
            .filter(filter)
            .aggregate("count", &["*"])
            .group_by(&[field]),
    )?;
    Ok(raw_list("aggregate", &text)?
        .iter()
        .filter_map(|row| {
            Some((
                row.str(field)?.into_owned(),
                row.i64("count").unwrap_or(0).max(0) as u64,
            ))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_and_ordered() {
        let rows = [
            json!({"a": "x"}),
            json!({"a": "y"}),
            json!({"a": "x"}),
            json!({"a": null}),
        ];
        assert_eq!(ids_of(&rows, "a"), vec!["x", "y"]);
    }
}
