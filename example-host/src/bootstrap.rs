//! First start on an empty database: roles, policies, permissions and the
//! administrator (DECISIONS §2 and §5).

use serde_json::{json, Value};

use crate::auth;
use crate::items::{ItemsError, Platform, Session, Who};
use crate::query::WireQuery;

/// Where the administrator comes from.
pub struct AdminSeed {
    pub email: String,
    pub password: Option<String>,
    /// `None`: generate one and print it once.
    pub token: Option<String>,
}

impl AdminSeed {
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self {
            email: var("ADMIN_EMAIL").unwrap_or_else(|| "admin@example.com".into()),
            password: var("ADMIN_PASSWORD"),
            token: var("ADMIN_TOKEN"),
        }
    }
}

/// The role-and-policy pairs every platform starts with.
const ROLES: &[&str] = &["Administrator", "Model", "Viewer"];

/// Id, among the platform's migrations, of the narrowing below.
const NARROWED_MEMBER_RECORDINGS: &str = "0002_member_recordings_narrowed";

/// Narrows, once, the recording rules of members on a database seeded
/// before DECISIONS §5 said members read only their own and public
/// recordings and never write `featured`: a rule still as it was seeded
/// (all recordings readable, every field writable) takes the new form; a
/// rule an administrator changed since is left as they made it.
pub fn narrow_member_recordings(platform: &Platform) -> Result<usize, ItemsError> {
    let who = Who::system();
    let mut narrowed_rules = 0;
    platform.once(
        crate::platform_schema::OWNER,
        NARROWED_MEMBER_RECORDINGS,
        |s| {
            narrowed_rules = 0;
            let policies = platform.read_by_query(
                s,
                &who,
                "platform_policies",
                &WireQuery {
                    filter: Some(json!({"name": {"_in": MEMBER_POLICIES}})),
                    limit: Some(-1),
                    ..Default::default()
                },
                None,
            )?;
            let ids: Vec<Value> = policies
                .iter()
                .filter_map(|p| p.get("id").cloned())
                .collect();
            let rules = platform.read_by_query(
                s,
                &who,
                "platform_permissions",
                &WireQuery {
                    filter: Some(json!({"_and": [
                        {"policy": {"_in": ids}},
                        {"collection": {"_eq": "recordings"}},
                        {"action": {"_in": ["read", "create", "update"]}},
                    ]})),
                    limit: Some(-1),
                    ..Default::default()
                },
                None,
            )?;
            for rule in rules {
                let (Some(id), Some(action)) = (
                    rule.get("id").and_then(Value::as_str),
                    rule.get("action").and_then(Value::as_str),
                ) else {
                    continue;
                };
                let every_field = rule.get("fields") == Some(&json!(["*"]));
                let as_seeded = match action {
                    "read" => every_field && rule.get("permissions").is_none_or(Value::is_null),
                    _ => every_field,
                };
                if !as_seeded {
                    continue;
                }
                let narrowed = match action {
                    "read" => json!({"permissions": own_or_public()}),
                    _ => json!({"fields": MEMBER_RECORDING_FIELDS}),
                };
                platform.update_one(s, &who, "platform_permissions", id, &narrowed)?;
                narrowed_rules += 1;
            }
            Ok(())
        },
    )?;
    if narrowed_rules > 0 {
        log::info!(
            "narrowed {narrowed_rules} seeded recording rules of members: they read their own and public recordings and never write `featured` (DECISIONS §5)"
        );
    }
    Ok(narrowed_rules)
}

/// The record of the first-start seeding among the platform's migrations.
const FIRST_START: &str = "0000_first_start";

/// Seeds an empty platform, once in the life of the database (hosts
/// starting together on an empty database seed it once); returns false when
/// it was seeded before or already has users.
pub fn first_start(platform: &Platform, admin: AdminSeed) -> Result<bool, ItemsError> {
    let generated = admin.token.is_none();
    let token = admin.token.clone().unwrap_or_else(auth::generate_token);
    let who = Who::system();
    let mut seeded = false;
    platform.once(crate::platform_schema::OWNER, FIRST_START, |s| {
        seeded = false;
        // A platform seeded before this record existed has users.
        let any_user = platform.read_by_query(
            s,
            &who,
            "platform_users",
            &WireQuery {
                limit: Some(1),
                ..Default::default()
            },
            None,
        )?;
        if any_user.is_empty() {
            seed(platform, s, &who, &admin, &token)?;
            seeded = true;
        }
        Ok(())
    })?;
    if !seeded {
        return Ok(false);
    }
    platform.auth.invalidate();
    log::info!(
        "first start: created roles, policies and the administrator {}",
        admin.email
    );
    if generated {
        println!("Administrator token (shown once, store it now): {token}");
    }
    Ok(true)
}

fn seed(
    platform: &Platform,
    s: &mut Session<'_>,
    who: &Who,
    admin: &AdminSeed,
    token: &str,
) -> Result<(), ItemsError> {
    let mut role_ids = Vec::new();
    for name in ROLES {
        let role = platform.create_one(s, who, "platform_roles", &json!({"name": name}))?;
        let policy = platform.create_one(
            s,
            who,
            "platform_policies",
            &json!({"name": name, "admin_access": *name == "Administrator"}),
        )?;
        platform.create_one(
            s,
            who,
            "platform_access",
            &json!({"role": role, "policy": policy}),
        )?;
        if *name != "Administrator" {
            for permission in member_permissions(&policy) {
                platform.create_one(s, who, "platform_permissions", &permission)?;
            }
        }
        role_ids.push(role);
    }
    let public = platform.create_one(
        s,
        who,
        "platform_policies",
        &json!({"name": "Public", "admin_access": false}),
    )?;
    platform.create_one(s, who, "platform_access", &json!({"policy": public}))?;

    let mut user = json!({
        "email": admin.email,
        "first_name": "Admin",
        "last_name": "User",
        "role": role_ids[0],
        "token": token,
    });
    if let Some(password) = &admin.password {
        user["password"] = Value::String(password.clone());
    }
    platform.create_one(s, who, "platform_users", &user)?;
    Ok(())
}

/// The policies of members, seeded with the rules below.
const MEMBER_POLICIES: [&str; 2] = ["Model", "Viewer"];

/// What members may read of recordings: their own and public ones.
fn own_or_public() -> Value {
    json!({"_or": [{"user_created": {"_eq": "$CURRENT_USER"}}, {"public": {"_eq": true}}]})
}

/// The fields of a recording a member may write: all but `featured`, which
/// is an administrator's act (it earns RECORDING_FEATURED). The platform
/// sets `id`, `user_created` and the dates itself.
const MEMBER_RECORDING_FIELDS: [&str; 11] = [
    "status",
    "title",
    "description",
    "slug",
    "duration",
    "events",
    "device_info",
    "tags",
    "linked_video",
    "public",
    "original_recording_id",
];

/// What `Model` and `Viewer` may do with the platform's own collections
/// (DECISIONS §5). Extensions grant their collections' rules in their
/// migrations (svc: `0009_member_grants`).
fn member_permissions(policy: &str) -> Vec<Value> {
    vec![
        json!({"policy": policy, "collection": "platform_comments", "action": "create", "permissions": null, "fields": ["*"],
               "presets": {"user_created": "$CURRENT_USER"}}),
    ]
}
