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

/// Seeds an empty platform; returns false when users already exist.
pub fn first_start(platform: &Platform, admin: AdminSeed) -> Result<bool, ItemsError> {
    let any_user = platform.read_by_query(
        &mut Session::Auto,
        &Who::system(),
        "platform_users",
        &WireQuery {
            limit: Some(1),
            ..Default::default()
        },
        None,
    )?;
    if !any_user.is_empty() {
        return Ok(false);
    }
    let generated = admin.token.is_none();
    let token = admin.token.clone().unwrap_or_else(auth::generate_token);
    let who = Who::system();
    platform.transaction(|s| seed(platform, s, &who, &admin, &token))?;
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

/// What `Model` and `Viewer` may do (DECISIONS §5).
fn member_permissions(policy: &str) -> Vec<Value> {
    let own = |field: &str| json!({ field: {"_eq": "$CURRENT_USER"} });
    let all = json!(["*"]);
    vec![
        json!({"policy": policy, "collection": "recordings", "action": "read", "permissions": null, "fields": all}),
        json!({"policy": policy, "collection": "recordings", "action": "create", "permissions": null, "fields": all,
               "presets": {"user_created": "$CURRENT_USER"}}),
        json!({"policy": policy, "collection": "recordings", "action": "update", "permissions": own("user_created"), "fields": all}),
        json!({"policy": policy, "collection": "recordings", "action": "delete", "permissions": own("user_created"), "fields": all}),
        json!({"policy": policy, "collection": "video_likes", "action": "read", "permissions": own("user_id"), "fields": all}),
        json!({"policy": policy, "collection": "video_likes", "action": "create", "permissions": own("user_id"), "fields": all,
               "presets": {"user_id": "$CURRENT_USER"}}),
        json!({"policy": policy, "collection": "video_likes", "action": "delete", "permissions": own("user_id"), "fields": all}),
        json!({"policy": policy, "collection": "platform_comments", "action": "create", "permissions": null, "fields": all,
               "presets": {"user_created": "$CURRENT_USER"}}),
    ]
}
