//! Accounts: the caller an operation runs for ([`CallerAccount`]) and how
//! an active user is found with the policies that apply to them (their
//! own and their role's).

use serde_json::{json, Value};

use platform_store::query::{Filter, ReadQuery};
use platform_store::storage::{Reader, Store, StoreError};

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerAccount {
    pub user: String,
    pub role: Option<String>,
    pub admin: bool,
    /// Ids of every policy that applies (the user's and the role's).
    pub policies: Vec<String>,
}

/// Whether `s` has the shape of an email address: something, `@`, a
/// domain with a dot, no white space. (Directus also checks the top-level
/// domain against IANA's list; the platform takes any, `.local` too.)
pub fn looks_like_email(s: &str) -> bool {
    match s.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty() && domain.contains('.') && !s.contains(char::is_whitespace)
        }
        None => false,
    }
}

fn eq(field: &str, value: Value) -> Filter {
    Filter::eq(field, value)
}

/// The most roles a role's chain of parents is followed through.
const MAX_ROLE_DEPTH: usize = 32;

/// A role and its parents, nearest first (Directus 11's roles tree: a
/// parent's policies apply to its child roles' users). A chain is followed
/// until a role without a parent, a role seen already (a cycle) or
/// [`MAX_ROLE_DEPTH`]; a database migrated before roles had parents gives
/// the role alone.
pub fn role_tree(
    conn: &mut dyn Reader,
    roles: &platform_store::schema::CollectionDef,
    role: &str,
) -> Result<Vec<String>, StoreError> {
    let mut tree = vec![role.to_string()];
    if !roles.has("parent") {
        return Ok(tree);
    }
    while tree.len() < MAX_ROLE_DEPTH {
        let Some(last) = tree.last() else { break };
        let q = ReadQuery::select(&["parent"], eq("id", json!(last))).limit(1);
        let parent = conn
            .select(roles, &q)?
            .into_iter()
            .next()
            .and_then(|row| row.get("parent").and_then(Value::as_str).map(String::from));
        match parent {
            Some(parent) if !tree.contains(&parent) => tree.push(parent),
            _ => break,
        }
    }
    Ok(tree)
}

/// The active user `which` finds, and their policies (their own, their
/// role's and its parents').
pub fn lookup_user(
    store: &dyn Store,
    conn: &mut dyn Reader,
    which: Filter,
) -> Result<Option<CallerAccount>, StoreError> {
    let schema = store.schema();
    let (Some(users), Some(access), Some(policies), Some(roles)) = (
        schema.get("platform_users"),
        schema.get("platform_access"),
        schema.get("platform_policies"),
        schema.get("platform_roles"),
    ) else {
        return Ok(None);
    };
    let q = ReadQuery::select(
        &["id", "role"],
        Filter::And(vec![which, eq("status", json!("active"))]),
    )
    .limit(1);
    let Some(user) = conn.select(users, &q)?.into_iter().next() else {
        return Ok(None);
    };
    let user_id = user
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let role = user.get("role").and_then(Value::as_str).map(String::from);

    let mut holders = vec![eq("user", json!(user_id))];
    if let Some(role) = &role {
        for role in role_tree(conn, roles, role)? {
            holders.push(eq("role", json!(role)));
        }
    }
    let q = ReadQuery::select(&["policy"], Filter::Or(holders));
    let mut policy_ids: Vec<String> = conn
        .select(access, &q)?
        .iter()
        .filter_map(|r| r.get("policy").and_then(Value::as_str).map(String::from))
        .collect();
    policy_ids.sort();
    policy_ids.dedup();

    let admin = if policy_ids.is_empty() {
        false
    } else {
        let q = ReadQuery::select(
            &["id"],
            Filter::And(vec![
                Filter::is_in(
                    "id",
                    policy_ids
                        .iter()
                        .map(|p| Value::String(p.clone()))
                        .collect(),
                ),
                eq("admin_access", json!(true)),
            ]),
        )
        .limit(1);
        !conn.select(policies, &q)?.is_empty()
    };
    Ok(Some(CallerAccount {
        user: user_id,
        role,
        admin,
        policies: policy_ids,
    }))
}
