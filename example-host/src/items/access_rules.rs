//! The rules of writes to the access collections, held on every path a
//! write takes (the access routes, `/items`, extensions): a permission is
//! one the platform can apply (`crate::permissions::permission_problem`),
//! and no write leaves the platform without an active administrator when
//! it had one (Directus 11's "last admin" rule). A user's email, when
//! given, has the shape of one (Directus's `FAILED_VALIDATION`).

use super::*;
use platform_store::storage::codec::{self, Scalar};
use platform_store::storage::Columns;

/// The collection of users.
const USERS: &str = "platform_users";

/// The collection of permissions.
const PERMISSIONS: &str = "platform_permissions";

/// Directus's answer to a write that would leave no administrator.
const LAST_ADMIN: &str =
    "Can't process content. Cannot remove the last admin user from the system.";

/// The most levels of child roles followed when looking for administrators.
const MAX_ROLE_DEPTH: usize = 32;

/// Refuses a user's email that is not one: `row` is what a create stores
/// or an update changes.
pub(super) fn check_user_write(def: &CollectionDef, row: &Columns) -> Result<(), PlatformError> {
    if def.name != USERS {
        return Ok(());
    }
    match row.get("email") {
        Some(Scalar::Text(email)) if !crate::accounts::looks_like_email(email) => {
            Err(PlatformError::FailedValidation(
                "Validation failed for field \"email\". Value has to be a valid email address."
                    .into(),
                crate::platform::ErrorPlace {
                    collection: Some(USERS.into()),
                    field: Some("email".into()),
                    rule: Some("email"),
                },
            ))
        }
        _ => Ok(()),
    }
}

impl Platform {
    /// Refuses a permission the platform could not apply: `row` is what
    /// a create stores, or what an update of item `key` changes (checked
    /// with the rest of the item as stored). The host's own writes (no
    /// caller, permissions bypassed) are its seeding and are not checked.
    pub(super) fn check_permission_write(
        &self,
        conn: &mut dyn Writer,
        who: &Who,
        def: &CollectionDef,
        key: Option<&str>,
        row: &Columns,
    ) -> Result<(), PlatformError> {
        if def.name != PERMISSIONS || (who.bypass && who.accountability.is_none()) {
            return Ok(());
        }
        let mut stored = match key {
            Some(key) => {
                let mut q = ReadQuery::all_fields(def);
                q.filter = Some(key_filter(key));
                q.limit = Some(1);
                conn.select(def, &q)?.into_iter().next().unwrap_or_default()
            }
            None => Default::default(),
        };
        for (name, value) in row {
            stored.insert(name.clone(), written_value(def, name, value));
        }
        let collection = stored
            .get("collection")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let schema = self.store.schema();
        let target = schema.get(collection).filter(|_| !is_internal(collection));
        match crate::permissions::permission_problem(target.map(|d| d.as_ref()), &stored) {
            Some(problem) => Err(PlatformError::InvalidPayload(problem)),
            None => Ok(()),
        }
    }

    /// Whether a write of this kind to `def` (changing `changes`, for an
    /// update) could take administrator access away from someone, and
    /// the platform has an active administrator before it: then it must
    /// still have one after ([`Platform::ensure_an_admin_remains`]).
    pub(super) fn guards_last_admin(
        &self,
        conn: &mut dyn Writer,
        who: &Who,
        def: &CollectionDef,
        kind: EventKind,
        changes: Option<&Columns>,
    ) -> Result<bool, PlatformError> {
        if who.bypass && who.accountability.is_none() {
            return Ok(false);
        }
        let changes_any =
            |fields: &[&str]| changes.is_some_and(|c| fields.iter().any(|f| c.contains_key(*f)));
        let could = match (def.name.as_str(), kind) {
            (_, EventKind::Create) => false,
            ("platform_policies", EventKind::Update) => changes_any(&["admin_access"]),
            ("platform_users", EventKind::Update) => changes_any(&["role", "status"]),
            ("platform_access", EventKind::Update) => true,
            ("platform_roles", EventKind::Update) => changes_any(&["parent"]),
            ("platform_policies" | "platform_users" | "platform_access" | "platform_roles", _) => {
                true
            }
            _ => false,
        };
        if !could {
            return Ok(false);
        }
        has_active_admin(conn, &self.store.schema())
    }

    /// Refuses (422, as Directus) a write that left no active
    /// administrator, when [`Platform::guards_last_admin`] said it was
    /// watched.
    pub(super) fn ensure_an_admin_remains(
        &self,
        conn: &mut dyn Writer,
        watched: bool,
    ) -> Result<(), PlatformError> {
        if watched && !has_active_admin(conn, &self.store.schema())? {
            return Err(PlatformError::Unprocessable(LAST_ADMIN.into()));
        }
        Ok(())
    }
}

/// A column about to be written, as the JSON value a read gives.
fn written_value(def: &CollectionDef, name: &str, value: &Scalar) -> Value {
    let mut out = Vec::new();
    codec::push_written(&mut out, def.field(name).map(|f| f.kind), value);
    serde_json::from_slice(&out).unwrap_or(Value::Null)
}

/// The ids in column `field` of the rows of `def` that `filter` admits.
fn ids_of(
    conn: &mut dyn Reader,
    def: &CollectionDef,
    field: &str,
    filter: Filter,
) -> Result<Vec<Value>, PlatformError> {
    let rows = conn.select(def, &ReadQuery::select(&[field], filter))?;
    let mut ids: Vec<Value> = rows
        .into_iter()
        .filter_map(|mut row| row.remove(field))
        .filter(|v| !v.is_null())
        .collect();
    ids.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    ids.dedup();
    Ok(ids)
}

/// Whether an active user holds a policy with administrator access: of
/// their own, through their role, or through a parent of their role.
fn has_active_admin(
    conn: &mut dyn Reader,
    schema: &platform_store::schema::Schema,
) -> Result<bool, PlatformError> {
    let (Some(users), Some(roles), Some(access), Some(policies)) = (
        schema.get("platform_users"),
        schema.get("platform_roles"),
        schema.get("platform_access"),
        schema.get("platform_policies"),
    ) else {
        return Ok(false);
    };
    let admin = ids_of(
        conn,
        policies,
        "id",
        Filter::eq("admin_access", json!(true)),
    )?;
    if admin.is_empty() {
        return Ok(false);
    }
    let held = Filter::is_in("policy", admin);
    let admin_users = ids_of(conn, access, "user", held.clone())?;
    let mut admin_roles = ids_of(conn, access, "role", held)?;
    // A parent role's policies apply to its child roles.
    if roles.has("parent") {
        let mut level = admin_roles.clone();
        for _ in 0..MAX_ROLE_DEPTH {
            if level.is_empty() {
                break;
            }
            level = ids_of(conn, roles, "id", Filter::is_in("parent", level))?;
            level.retain(|r| !admin_roles.contains(r));
            admin_roles.extend(level.iter().cloned());
        }
    }
    let mut holders = Vec::new();
    if !admin_users.is_empty() {
        holders.push(Filter::is_in("id", admin_users));
    }
    if !admin_roles.is_empty() {
        holders.push(Filter::is_in("role", admin_roles));
    }
    if holders.is_empty() {
        return Ok(false);
    }
    let q = ReadQuery::select(
        &["id"],
        Filter::And(vec![
            Filter::eq("status", json!("active")),
            Filter::Or(holders),
        ]),
    )
    .limit(1);
    Ok(!conn.select(users, &q)?.is_empty())
}
