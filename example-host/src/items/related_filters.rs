//! `filter` through references (docs/decisions.md §4): `{author: {slug: {_eq:
//! "x"}}}` keeps the items whose `author` is one of the users matching
//! `{slug: {_eq: "x"}}`. Before a read is planned, each such condition is
//! read on the referred collection, under the caller's permissions on it
//! (its row filter, and its fields for what the condition names), and
//! replaced by `{author: {_in: [the ids found]}}`. Deeper paths resolve
//! the same way, one read per condition and level; the query the
//! database finally sees is an ordinary one.

use std::borrow::Cow;

use serde_json::Map;

use super::*;

/// Whether `filter` has a condition naming a field below a field
/// (`{author: {slug: ...}}`), as opposed to operators (`{author: {_eq:
/// ...}}`) or a bare value, shorthand for `_eq` (`{author: "x"}`,
/// `{author: null}`).
pub(super) fn follows_references(filter: &Value) -> bool {
    let Value::Object(map) = filter else {
        return false;
    };
    map.iter().any(|(key, value)| match key.as_str() {
        "_and" | "_or" => value
            .as_array()
            .is_some_and(|items| items.iter().any(follows_references)),
        _ => value
            .as_object()
            .is_some_and(|ops| ops.keys().any(|k| !k.starts_with('_'))),
    })
}

impl Platform {
    /// `wire` with every condition through a reference replaced by the ids
    /// it matches; `wire` itself when it has none.
    pub(super) fn resolve_related_filters<'w>(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        wire: &'w WireQuery,
    ) -> Result<Cow<'w, WireQuery>, PlatformError> {
        self.relational_limits.check_depth(wire)?;
        match &wire.filter {
            Some(filter) if follows_references(filter) => {
                let def = self.collection(who, collection)?;
                let filter = self.resolve_filter(session, who, &def, filter)?;
                Ok(Cow::Owned(WireQuery {
                    filter: Some(filter),
                    ..wire.clone()
                }))
            }
            _ => Ok(Cow::Borrowed(wire)),
        }
    }

    fn resolve_filter(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        def: &CollectionDef,
        filter: &Value,
    ) -> Result<Value, PlatformError> {
        let Value::Object(map) = filter else {
            // Not an object: the parser says what is wrong with it.
            return Ok(filter.clone());
        };
        if !follows_references(filter) {
            return Ok(filter.clone());
        }
        let mut parts = Vec::with_capacity(map.len());
        for (key, value) in map {
            match (key.as_str(), value) {
                ("_and" | "_or", Value::Array(items)) => {
                    let items = items
                        .iter()
                        .map(|item| self.resolve_filter(session, who, def, item))
                        .collect::<Result<Vec<_>, _>>()?;
                    parts.push(json!({ key: items }));
                }
                (field, Value::Object(ops)) if ops.keys().any(|k| !k.starts_with('_')) => {
                    let (nested, operators): (Map<String, Value>, Map<String, Value>) = ops
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .partition(|(k, _)| !k.starts_with('_'));
                    if !operators.is_empty() {
                        parts.push(json!({ field: operators }));
                    }
                    let ids = self.matching_ids(session, who, def, field, nested)?;
                    parts.push(json!({ field: {"_in": ids} }));
                }
                _ => parts.push(json!({ key: value })),
            }
        }
        Ok(match parts.len() {
            1 => parts.remove(0),
            _ => json!({ "_and": parts }),
        })
    }

    /// The ids of the items `field` of `def` refers to that match
    /// `nested`, as the caller may read them (the read resolves deeper
    /// paths of `nested` in turn).
    fn matching_ids(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        def: &CollectionDef,
        field: &str,
        nested: Map<String, Value>,
    ) -> Result<Vec<Value>, PlatformError> {
        let target = match def.field(field) {
            Some(f) => f.references.clone().ok_or_else(|| {
                PlatformError::InvalidQuery(format!(
                    "\"{field}\" of \"{}\" refers to no collection: it cannot be filtered through",
                    def.name
                ))
            })?,
            None => return Err(unknown_query_field(def, field)),
        };
        let query = WireQuery {
            fields: Some(platform_store::query::ListParam::List(vec!["id".into()])),
            filter: Some(Value::Object(nested)),
            limit: Some(-1),
            ..Default::default()
        };
        let found = self.read_by_query(session, who, &target, &query, None)?;
        Ok(found
            .into_iter()
            .filter_map(|mut r| r.remove("id"))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_fields_below_fields_follow_references() {
        assert!(follows_references(
            &json!({"author": {"slug": {"_eq": "x"}}})
        ));
        assert!(follows_references(
            &json!({"_or": [{"title": {"_eq": "a"}}, {"author": {"role": {"name": {"_eq": "x"}}}}]})
        ));
        assert!(!follows_references(&json!({"author": {"_eq": "x"}})));
        assert!(!follows_references(
            &json!({"_and": [{"author": {"_null": true}}]})
        ));
        assert!(!follows_references(&json!("not an object")));
        // Shorthand for `_eq`, at any depth: a bare value is no path.
        assert!(!follows_references(
            &json!({"collection": "videos", "item": "x", "user_created": null})
        ));
        assert!(!follows_references(
            &json!({"_or": [{"author": "x"}, {"author": null}]})
        ));
        assert!(follows_references(&json!({"author": {"slug": "x"}})));
        assert!(follows_references(
            &json!({"author": {"role": {"name": "Viewer"}}})
        ));
    }
}
