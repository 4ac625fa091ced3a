//! What the caller may do, in the shapes of Directus 11's `/permissions/me`
//! (per collection and action), `/policies/me/globals` (the flags of the
//! caller's policies) and `/roles/me` (the caller's role and its parents).

use serde_json::{json, Map, Value};

use crate::items::{Session, Who};
use crate::platform::{Platform, PlatformError};
use platform_store::query::WireQuery;
use platform_store::storage::read_with;

/// The caller's effective permissions: per collection, per action
/// (`create`, `read`, `update`, `delete`, `share`) the access (`none`,
/// `partial`, `full`), the fields and the presets. Administrators get
/// every served collection in full. Anonymous callers are refused, as
/// Directus refuses them.
pub fn collection_access(platform: &Platform, who: &Who) -> Result<Value, PlatformError> {
    if who.accountability.is_none() {
        return Err(PlatformError::forbidden());
    }
    if who.is_admin() {
        let schema = platform.store.schema();
        let all: Map<String, Value> = schema
            .names()
            .filter(|c| platform.has_collection(c))
            .map(|c| (c.to_string(), crate::permissions::full_access()))
            .collect();
        return Ok(Value::Object(all));
    }
    let set = platform.permission_set(who)?;
    let mut access = set.collection_access();
    access.retain(|c, _| platform.has_collection(c));
    Ok(Value::Object(access))
}

/// `{app_access, admin_access, enforce_tfa}`: each true when one of the
/// caller's policies has it (administrator access implies app access).
/// An anonymous caller gets `{app_access: false}`, as Directus answers.
pub fn policy_globals(platform: &Platform, who: &Who) -> Result<Value, PlatformError> {
    let Some(account) = &who.accountability else {
        return Ok(json!({"app_access": false}));
    };
    let schema = platform.store.schema();
    let Some(policies) = schema.get("platform_policies") else {
        return Err(PlatformError::Internal("no platform_policies".into()));
    };
    let flags: Vec<&str> = ["admin_access", "app_access", "enforce_tfa"]
        .into_iter()
        .filter(|f| policies.has(f))
        .collect();
    let ids: Vec<Value> = account.policies.iter().map(|p| json!(p)).collect();
    let rows = if ids.is_empty() {
        Vec::new()
    } else {
        let q = platform_store::query::ReadQuery::select(
            &flags,
            platform_store::query::Filter::is_in("id", ids),
        );
        read_with(platform.store.as_ref(), |conn| conn.select(policies, &q))?
    };
    let any = |flag: &str| rows.iter().any(|r| r.get(flag) == Some(&json!(true)));
    let admin = account.admin || any("admin_access");
    Ok(json!({
        "app_access": admin || any("app_access"),
        "admin_access": admin,
        "enforce_tfa": any("enforce_tfa"),
    }))
}

/// The query of `/roles/me`: the request's, narrowed to the caller's role
/// and its parents. Anonymous callers are refused.
pub fn own_roles_query(
    platform: &Platform,
    who: &Who,
    mut wire: WireQuery,
) -> Result<WireQuery, PlatformError> {
    let Some(account) = &who.accountability else {
        return Err(PlatformError::forbidden());
    };
    let roles = match &account.role {
        Some(role) => {
            let schema = platform.store.schema();
            let Some(def) = schema.get("platform_roles") else {
                return Err(PlatformError::Internal("no platform_roles".into()));
            };
            read_with(platform.store.as_ref(), |conn| {
                crate::accounts::role_tree(conn, def, role)
            })?
        }
        None => Vec::new(),
    };
    let own = json!({"id": {"_in": roles}});
    wire.filter = Some(match wire.filter.take() {
        Some(asked) => json!({"_and": [asked, own]}),
        None => own,
    });
    Ok(wire)
}

/// Reads `/roles/me` as the caller: their roles they may read.
pub fn read_own_roles(
    platform: &Platform,
    who: &Who,
    wire: WireQuery,
) -> Result<Vec<u8>, PlatformError> {
    let q = own_roles_query(platform, who, wire)?;
    platform.read_by_query_json(&mut Session::Auto, who, "platform_roles", &q, None)
}
