//! `GET /stats`: site-wide counts of models, viewers and videos.
//!
//! A user is a "Model" (or "Viewer") when their role is named so, when their
//! role has a policy of that name attached, or when such a policy is attached
//! to the user directly (docs/decisions.md §5: a user's policies are those of
//! the user and of the role). The platform's rows are read in a constant number
//! of admin calls; which users that makes is decided by [`audience_filter`], a
//! plain function, and the users are then counted once each by the host.

use std::collections::BTreeSet;

use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};

use crate::failure::Failure;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The role/policy name of models.
pub const MODEL: &str = "Model";
/// The role/policy name of viewers.
pub const VIEWER: &str = "Viewer";

/// docs/service-api.md lists no fallback for `/stats`; this one follows the
/// others' style.
const FAILURE: Failure = Failure::new("Failed to fetch stats");

/// The response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, host_sdk::JsonSchema)]
pub struct SiteCounts {
    pub models_count: u64,
    pub viewers_count: u64,
    pub videos_count: u64,
}

/// A row of `platform_roles` or `platform_policies` (only what is read).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NamedRow {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
}

/// A row of `platform_access`: attaches `policy` to a `role` or a `user`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct AccessRow {
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub policy: Option<String>,
}

/// Who counts as `name`: the role ids whose users count, and the users that
/// count through a directly attached policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audience {
    pub roles: BTreeSet<String>,
    pub users: BTreeSet<String>,
}

impl Audience {
    /// Resolves `name` against the platform's roles, policies and access rows
    /// (rows of other names are ignored, so the rows of several names may be
    /// passed together).
    pub fn resolve(
        name: &str,
        roles: &[NamedRow],
        policies: &[NamedRow],
        access: &[AccessRow],
    ) -> Self {
        let named = |row: &&NamedRow| row.name.as_deref() == Some(name);
        let policy_ids: BTreeSet<&str> = policies
            .iter()
            .filter(named)
            .map(|p| p.id.as_str())
            .collect();
        let mut audience = Audience {
            roles: roles.iter().filter(named).map(|r| r.id.clone()).collect(),
            users: BTreeSet::new(),
        };
        let grants = access
            .iter()
            .filter(|a| a.policy.as_deref().is_some_and(|p| policy_ids.contains(p)));
        for grant in grants {
            if let Some(role) = &grant.role {
                audience.roles.insert(role.clone());
            }
            if let Some(user) = &grant.user {
                audience.users.insert(user.clone());
            }
        }
        audience
    }

    /// The `platform_users` filter matching this audience, or `None` when it
    /// can match nobody (the count is then 0 without asking the host).
    pub fn filter(&self) -> Option<Value> {
        let mut branches = Vec::new();
        if !self.roles.is_empty() {
            branches.push(json!({"role": {"_in": self.roles}}));
        }
        if !self.users.is_empty() {
            branches.push(json!({"id": {"_in": self.users}}));
        }
        if branches.is_empty() {
            None
        } else {
            Some(json!({ "_or": branches }))
        }
    }
}

/// The `platform_users` filter for `name` (see [`Audience`]).
pub fn audience_filter(
    name: &str,
    roles: &[NamedRow],
    policies: &[NamedRow],
    access: &[AccessRow],
) -> Option<Value> {
    Audience::resolve(name, roles, policies, access).filter()
}

fn name_in(names: &[&str]) -> Value {
    json!({"name": {"_in": names}})
}

/// Counts users of each audience with at most six item-service calls.
pub fn site_counts(items: &Items<'_>) -> Result<SiteCounts, ItemsError> {
    let names = [MODEL, VIEWER];
    let id_and_name = Query::new().filter(name_in(&names)).fields(&["id", "name"]);
    let roles: Vec<NamedRow> = items.read_by_query_as("platform_roles", &id_and_name)?;
    let policies: Vec<NamedRow> = items.read_by_query_as("platform_policies", &id_and_name)?;
    let access: Vec<AccessRow> = if policies.is_empty() {
        Vec::new()
    } else {
        let ids: Vec<&str> = policies.iter().map(|p| p.id.as_str()).collect();
        let query = Query::new()
            .filter(json!({"policy": {"_in": ids}}))
            .fields(&["role", "user", "policy"]);
        items.read_by_query_as("platform_access", &query)?
    };
    let count_users = |name: &str| match audience_filter(name, &roles, &policies, &access) {
        Some(filter) => items.count("platform_users", Some(filter)),
        None => Ok(0),
    };
    Ok(SiteCounts {
        models_count: count_users(MODEL)?,
        viewers_count: count_users(VIEWER)?,
        videos_count: items.count("videos", None)?,
    })
}

/// `GET /stats` (public; reads as admin, docs/service-api.md: public reads
/// bypass per-role permissions).
pub fn handler(_req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let counts = site_counts(&ctx.as_admin()).map_err(FAILURE.of())?;
    Ok(Response::ok(&counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, name: &str) -> NamedRow {
        NamedRow {
            id: id.into(),
            name: Some(name.into()),
        }
    }

    fn to_role(policy: &str, role: &str) -> AccessRow {
        AccessRow {
            role: Some(role.into()),
            user: None,
            policy: Some(policy.into()),
        }
    }

    fn to_user(policy: &str, user: &str) -> AccessRow {
        AccessRow {
            role: None,
            user: Some(user.into()),
            policy: Some(policy.into()),
        }
    }

    #[test]
    fn nobody_when_no_role_or_policy_has_the_name() {
        let roles = [row("r-admin", "Administrator")];
        let policies = [row("p-admin", "Administrator")];
        let access = [to_role("p-admin", "r-admin"), to_user("p-admin", "u1")];
        assert_eq!(audience_filter(MODEL, &roles, &policies, &access), None);
        assert_eq!(audience_filter(VIEWER, &[], &[], &[]), None);
    }

    #[test]
    fn role_named_like_the_audience() {
        let roles = [row("r-model", "Model"), row("r-viewer", "Viewer")];
        assert_eq!(
            audience_filter(MODEL, &roles, &[], &[]),
            Some(json!({"_or": [{"role": {"_in": ["r-model"]}}]}))
        );
        assert_eq!(
            audience_filter(VIEWER, &roles, &[], &[]),
            Some(json!({"_or": [{"role": {"_in": ["r-viewer"]}}]}))
        );
    }

    #[test]
    fn policy_through_a_role_and_directly_on_a_user() {
        let roles = [row("r-model", "Model")];
        let policies = [row("p-model", "Model"), row("p-viewer", "Viewer")];
        let access = [
            // The Model policy on the Model role (a duplicate of the role itself)...
            to_role("p-model", "r-model"),
            // ...on another role, and directly on a user.
            to_role("p-model", "r-creator"),
            to_user("p-model", "u-direct"),
            // Rows of other policies do not count for Model.
            to_user("p-viewer", "u-viewer"),
            AccessRow::default(),
        ];
        assert_eq!(
            audience_filter(MODEL, &roles, &policies, &access),
            Some(json!({"_or": [
                {"role": {"_in": ["r-creator", "r-model"]}},
                {"id": {"_in": ["u-direct"]}}
            ]}))
        );
        assert_eq!(
            audience_filter(VIEWER, &roles, &policies, &access),
            Some(json!({"_or": [{"id": {"_in": ["u-viewer"]}}]}))
        );
    }

    #[test]
    fn the_name_must_match_exactly() {
        let roles = [
            row("r1", "model"),
            row("r2", "Models"),
            NamedRow {
                id: "r3".into(),
                name: None,
            },
        ];
        assert_eq!(audience_filter(MODEL, &roles, &[], &[]), None);
    }

    #[test]
    fn users_are_listed_once() {
        let policies = [row("p1", "Viewer"), row("p2", "Viewer")];
        let access = [
            to_user("p1", "u1"),
            to_user("p2", "u1"),
            to_user("p1", "u2"),
        ];
        let audience = Audience::resolve(VIEWER, &[], &policies, &access);
        assert_eq!(
            audience
                .users
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            ["u1", "u2"]
        );
        assert!(audience.roles.is_empty());
    }

    #[test]
    fn rows_decode_from_platform_json() {
        let roles: Vec<NamedRow> =
            serde_json::from_value(json!([{"id": "a", "name": "Model"}, {"id": "b"}])).unwrap();
        assert_eq!(roles[0], row("a", "Model"));
        assert_eq!(roles[1].name, None);
        let access: Vec<AccessRow> =
            serde_json::from_value(json!([{"role": null, "user": "u", "policy": "p"}])).unwrap();
        assert_eq!(access[0], to_user("p", "u"));
    }

    #[test]
    fn body_has_the_three_counts() {
        let body = serde_json::to_value(SiteCounts {
            models_count: 2,
            viewers_count: 3,
            videos_count: 4,
        })
        .unwrap();
        assert_eq!(
            body,
            json!({"models_count": 2, "viewers_count": 3, "videos_count": 4})
        );
    }
}
