//! References between items: every reference a write sets names an
//! existing item, and a delete first applies the rule of each reference to
//! what it deletes (cascade, set null, refuse).

use super::*;

impl Platform {
    /// Applies, before an item is deleted, the rule of every reference to
    /// it ([`OnDelete`](host_sdk::schema::OnDelete)): refuse while referred
    /// to, set the references to null, or delete the referring items. The
    /// changes go through this service in the same transaction, as the
    /// platform itself, so hooks see them and their own references apply.
    pub(super) fn release_references(
        &self,
        conn: &mut dyn Writer,
        events: &mut Vec<WriteEvent>,
        def: &CollectionDef,
        key: &str,
    ) -> Result<(), PlatformError> {
        use host_sdk::schema::OnDelete;
        let referring = self.store.schema().references_to(&def.name);
        if referring.is_empty() {
            return Ok(());
        }
        let depth = CASCADE_DEPTH.with(std::cell::Cell::get);
        if depth >= MAX_CASCADE_DEPTH {
            return Err(PlatformError::InvalidPayload(format!(
                "Deleting \"{key}\" of \"{}\" cascades more than {MAX_CASCADE_DEPTH} levels deep.",
                def.name
            )));
        }
        CASCADE_DEPTH.with(|d| d.set(depth + 1));
        let outcome = (|| {
            let system = Who::system();
            for (other, field) in referring {
                let q = ReadQuery::select(
                    &["id"],
                    Filter::eq(&field.field, Value::String(key.to_string())),
                );
                let ids: Vec<String> = conn
                    .select(&other, &q)?
                    .into_iter()
                    .filter_map(|r| r.get("id").and_then(Value::as_str).map(String::from))
                    .collect();
                if ids.is_empty() {
                    continue;
                }
                let mut session = Session::Tx {
                    conn: &mut *conn,
                    events: &mut *events,
                };
                match field.delete_rule() {
                    OnDelete::Refuse => {
                        return Err(PlatformError::InvalidPayload(format!(
                            "Item \"{key}\" of \"{}\" cannot be deleted: {} item(s) of \"{}\" refer to it through \"{}\".",
                            def.name,
                            ids.len(),
                            other.name,
                            field.field
                        )))
                    }
                    OnDelete::SetNull => {
                        for id in &ids {
                            let cleared = json!({ field.field.as_str(): null });
                            self.update_one(&mut session, &system, &other.name, id, &cleared)?;
                        }
                    }
                    OnDelete::Cascade => {
                        for id in &ids {
                            self.delete_one(&mut session, &system, &other.name, id)?;
                        }
                    }
                }
            }
            Ok(())
        })();
        CASCADE_DEPTH.with(|d| d.set(depth));
        outcome
    }
}

/// Which items the references a caller sets may name: per reference field
/// of the payload, `None` for any existing item.
pub(super) type ReferenceScopes = std::collections::HashMap<String, Option<Filter>>;

impl Platform {
    /// The scopes of the references among `fields` of `def` for this
    /// caller. Where the caller's policies say which items of the referred
    /// collection they may read, a reference must name one of those, so
    /// that a write tells nothing of the items they may not see (a missing
    /// item and another member's private one are refused alike); where
    /// they may read none, any existing item.
    pub(super) fn reference_scopes<'f>(
        &self,
        who: &Who,
        def: &CollectionDef,
        fields: impl IntoIterator<Item = &'f String>,
    ) -> Result<ReferenceScopes, PlatformError> {
        let mut scopes = ReferenceScopes::new();
        if who.is_admin() {
            return Ok(scopes);
        }
        let schema = self.store.schema();
        for name in fields {
            // The host sets these itself for a caller who is not an admin.
            if matches!(name.as_str(), "id" | "user_created" | "date_created") {
                continue;
            }
            let Some(target) = def.field(name).and_then(|f| f.references.as_deref()) else {
                continue;
            };
            let Some(target_def) = schema.get(target) else {
                continue;
            };
            let scope = match self.grant(who, target, Action::Read) {
                Ok(grant) => self.grant_filter(target_def, grant.as_ref(), &who.vars())?,
                Err(PlatformError::Forbidden(_)) => None,
                Err(e) => return Err(e),
            };
            scopes.insert(name.clone(), scope);
        }
        Ok(scopes)
    }
}

/// Every reference a write sets must name an existing item, within the
/// caller's scope of its collection (checked in the write's transaction,
/// so the item cannot vanish in between). A missing item and one out of
/// scope get the same answer.
pub(super) fn check_references(
    schema: &platform_store::schema::Schema,
    conn: &mut dyn Writer,
    def: &CollectionDef,
    values: &platform_store::storage::Columns,
    scopes: &ReferenceScopes,
) -> Result<(), PlatformError> {
    for (name, value) in values {
        let platform_store::storage::codec::Scalar::Text(key) = value else {
            continue;
        };
        let Some(target) = def.field(name).and_then(|f| f.references.as_deref()) else {
            continue;
        };
        let Some(target_def) = schema.get(target) else {
            continue;
        };
        let mut q = ReadQuery::select(&["id"], key_filter(key)).limit(1);
        q.filter = Filter::and(q.filter.take(), scopes.get(name).cloned().flatten());
        if conn.select(target_def, &q)?.is_empty() {
            return Err(PlatformError::InvalidPayload(format!(
                "Invalid foreign key for field \"{name}\" in collection \"{}\": no item of \"{target}\" has the key \"{key}\".",
                def.name
            )));
        }
    }
    Ok(())
}

/// How deep deletes may cascade (a cycle of cascading references ends here).
const MAX_CASCADE_DEPTH: usize = 16;

thread_local! {
    static CASCADE_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
