//! First start on an empty database: roles, policies, permissions and the
//! administrator (docs/decisions.md §2 and §5).

use serde_json::{json, Value};

use crate::credentials;
use crate::items::{Session, Who};
use crate::platform::Platform;
use crate::platform::PlatformError;
use crate::settings::{declare, Env};
use platform_store::query::WireQuery;

declare! {
    section "First start and log";
    /// The administrator made at first start on an empty database (with
    /// the Administrator role and policy).
    ADMIN_EMAIL: "ADMIN_EMAIL" = "admin@example.com";
    /// The administrator's password (none: the administrator has no
    /// password to sign in with; with `--demo`, the demo users' `demo-password`).
    ADMIN_PASSWORD: "ADMIN_PASSWORD";
    /// The administrator's static token; unset, a random one is printed
    /// once at first start.
    ADMIN_TOKEN: "ADMIN_TOKEN";
}

/// Where the administrator comes from.
pub struct AdminSeed {
    pub email: String,
    pub password: Option<String>,
    /// `None`: generate one and print it once.
    pub token: Option<String>,
}

impl AdminSeed {
    pub fn from_env(env: &Env) -> Self {
        Self {
            email: ADMIN_EMAIL.get(env).unwrap_or_default(),
            password: ADMIN_PASSWORD.get(env),
            token: ADMIN_TOKEN.get(env),
        }
    }
}

/// The role-and-policy pairs every platform starts with.
const ROLES: &[&str] = &["Administrator", "Model", "Viewer"];

/// Id, among the platform's migrations, of the members' own-role rule.
const MEMBERS_READ_OWN_ROLE: &str = "0006_members_read_own_role";

/// Gives members, once, the right to read the id and name of their own
/// role, and nothing else of roles: relations from one's own record
/// (`/users/me?fields=role.name`) are read under the caller's permissions,
/// as Directus's minimal app access lets a user read their role. A policy
/// that has a rule on reading roles already keeps it as it is.
pub fn grant_members_own_role(platform: &Platform) -> Result<usize, PlatformError> {
    grant_members_once(
        platform,
        MEMBERS_READ_OWN_ROLE,
        &[
            json!({"collection": {"_eq": "platform_roles"}}),
            json!({"action": {"_eq": "read"}}),
        ],
        |policy| vec![own_role_rule(policy)],
    )
}

fn own_role_rule(policy: &str) -> Value {
    json!({"policy": policy, "collection": "platform_roles", "action": "read",
           "permissions": {"id": {"_eq": "$CURRENT_ROLE"}}, "fields": ["id", "name"]})
}

/// Id, among the platform's migrations, of the members' own-access and
/// comment rules.
const MEMBERS_READ_OWN_ACCESS: &str = "0011_members_read_own_access_and_comments";

/// Gives members, once, what reading their own record with its policies
/// needs (`/users/me?fields=policies.policy.name,role.policies.policy.name`,
/// as the site's `readMe` asks), and nothing more: their own access rows
/// (theirs, or their role's), the id and name of their own policies, and
/// the `policies` of their own role. And the reading of comments through
/// `/items/platform_comments` (counting a user's comments): the host
/// narrows it to the comments on collections the member may read, as
/// `/comments` does. A policy that already has a rule on reading one of
/// these collections keeps it as it is; the own-role rule as seeded
/// (`grant_members_own_role`) gains `policies`.
pub fn grant_members_own_access(platform: &Platform) -> Result<usize, PlatformError> {
    let who = Who::system();
    let mut granted = 0;
    platform.once(
        crate::platform_schema::OWNER,
        MEMBERS_READ_OWN_ACCESS,
        |s| {
            granted = 0;
            for policy in member_policy_ids(platform, s)? {
                for rule in own_access_rules(&policy) {
                    let collection = rule["collection"].clone();
                    let existing = platform.read_by_query(
                        s,
                        &who,
                        "platform_permissions",
                        &WireQuery {
                            filter: Some(json!({
                                "policy": &policy, "collection": collection, "action": "read",
                            })),
                            limit: Some(-1),
                            ..Default::default()
                        },
                        None,
                    )?;
                    if collection == "platform_roles" {
                        let seeded = own_role_rule(&policy);
                        for rule in &existing {
                            let as_seeded = rule.get("fields") == Some(&seeded["fields"])
                                && rule.get("permissions") == Some(&seeded["permissions"]);
                            if let (true, Some(id)) =
                                (as_seeded, rule.get("id").and_then(Value::as_str))
                            {
                                platform.update_one(
                                    s,
                                    &who,
                                    "platform_permissions",
                                    id,
                                    &json!({"fields": ["id", "name", "policies"]}),
                                )?;
                                granted += 1;
                            }
                        }
                        if !existing.is_empty() {
                            continue;
                        }
                    } else if !existing.is_empty() {
                        continue;
                    }
                    platform.create_one(s, &who, "platform_permissions", &rule)?;
                    granted += 1;
                }
            }
            Ok(())
        },
    )?;
    Ok(granted)
}

/// A member's rules on access: their own rows and their role's (a user
/// without a role reads no row by its role), the id and name of the
/// policies that apply to them, their own role with its `policies`; and
/// comments (narrowed by the host).
fn own_access_rules(policy: &str) -> Vec<Value> {
    let own_role =
        json!({"_and": [{"role": {"_nnull": true}}, {"role": {"_eq": "$CURRENT_ROLE"}}]});
    vec![
        json!({"policy": policy, "collection": "platform_access", "action": "read",
               "permissions": {"_or": [{"user": {"_eq": "$CURRENT_USER"}}, own_role]},
               "fields": ["id", "role", "user", "policy", "sort"]}),
        json!({"policy": policy, "collection": "platform_policies", "action": "read",
               "permissions": {"id": {"_in": "$CURRENT_POLICIES"}}, "fields": ["id", "name"]}),
        json!({"policy": policy, "collection": "platform_roles", "action": "read",
               "permissions": {"id": {"_eq": "$CURRENT_ROLE"}}, "fields": ["id", "name", "policies"]}),
        json!({"policy": policy, "collection": "platform_comments", "action": "read",
               "permissions": null, "fields": ["*"]}),
    ]
}

/// Id, among the platform's migrations, of the lower-casing of emails.
const LOWER_CASE_EMAILS: &str = "0007_emails_lower_case";

/// Brings, once, the emails stored before every write lower-cased them to
/// lower case, so that uniqueness holds regardless of case. Two accounts
/// whose emails differ only by case cannot both be lower-cased: they are
/// left as they are and named in the log, for an administrator to settle.
pub fn lower_case_emails(platform: &Platform) -> Result<usize, PlatformError> {
    let who = Who::system();
    let mut changed = 0;
    let mut clashes = Vec::new();
    platform.once(crate::platform_schema::OWNER, LOWER_CASE_EMAILS, |s| {
        changed = 0;
        clashes.clear();
        let users = platform.read_by_query(
            s,
            &who,
            "platform_users",
            &WireQuery {
                fields: Some(platform_store::query::ListParam::List(vec![
                    "id".into(),
                    "email".into(),
                ])),
                filter: Some(json!({"email": {"_nnull": true}})),
                limit: Some(-1),
                ..Default::default()
            },
            None,
        )?;
        let emails: Vec<(&str, &str)> = users
            .iter()
            .filter_map(|u| Some((u.get("id")?.as_str()?, u.get("email")?.as_str()?)))
            .collect();
        let mut taken: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for (_, email) in &emails {
            *taken.entry(email.trim().to_lowercase()).or_default() += 1;
        }
        for (id, email) in &emails {
            let lower = email.trim().to_lowercase();
            if lower == *email {
                continue;
            }
            if taken.get(&lower).copied().unwrap_or(0) > 1 {
                clashes.push(email.to_string());
                continue;
            }
            platform.update_one(s, &who, "platform_users", id, &json!({"email": lower}))?;
            changed += 1;
        }
        Ok(())
    })?;
    if changed > 0 {
        log::info!("stored {changed} emails in lower case");
    }
    for email in clashes {
        log::warn!(
            "the email {email} differs only by case from another account's: it was left as it is; change one of them"
        );
    }
    Ok(changed)
}

/// Id, among the platform's migrations, of the members' rules on files.
const MEMBER_FILES: &str = "0013_member_files";

/// Gives members, once, the rules of uploading (docs/decisions.md §5): they
/// create files (the uploader is always themselves), and read, change and
/// delete the ones they uploaded; folders they read. A policy that has any rule
/// on files already keeps its rules as they are.
pub fn grant_member_files(platform: &Platform) -> Result<usize, PlatformError> {
    grant_members_once(
        platform,
        MEMBER_FILES,
        &[json!({"collection": {"_in": ["platform_files", "platform_folders"]}})],
        member_file_rules,
    )
}

/// What members may write of a file record: its description, never where
/// its bytes are, what they are or who uploaded them (the host's).
const MEMBER_FILE_FIELDS: [&str; 6] = [
    "title",
    "description",
    "tags",
    "folder",
    "filename_download",
    "charset",
];

/// Members' rules on files and folders.
fn member_file_rules(policy: &str) -> Vec<Value> {
    let own = json!({"uploaded_by": {"_eq": "$CURRENT_USER"}});
    vec![
        json!({"policy": policy, "collection": "platform_files", "action": "create", "permissions": null,
               "fields": MEMBER_FILE_FIELDS, "presets": {"uploaded_by": "$CURRENT_USER"}}),
        json!({"policy": policy, "collection": "platform_files", "action": "read", "permissions": own, "fields": ["*"]}),
        json!({"policy": policy, "collection": "platform_files", "action": "update", "permissions": own,
               "fields": MEMBER_FILE_FIELDS}),
        json!({"policy": policy, "collection": "platform_files", "action": "delete", "permissions": own}),
        json!({"policy": policy, "collection": "platform_folders", "action": "read", "permissions": null, "fields": ["*"]}),
    ]
}

/// The record of the first-start seeding among the platform's migrations.
const FIRST_START: &str = "0000_first_start";

/// Seeds an empty platform, once in the life of the database (hosts
/// starting together on an empty database seed it once); returns false when
/// it was seeded before or already has users.
pub fn first_start(platform: &Platform, admin: AdminSeed) -> Result<bool, PlatformError> {
    let generated = admin.token.is_none();
    let token = admin
        .token
        .clone()
        .unwrap_or_else(credentials::generate_token);
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
) -> Result<(), PlatformError> {
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

/// The last SDK minor whose libraries relied on the host for their
/// members' rules on `recordings` and `video_likes`: a host before SDK 1.8
/// seeded them at first start, and svc's migrations grant them itself
/// since (`0009_member_grants`).
pub const LAST_MINOR_WITH_SEEDED_MEMBER_RULES: u64 = 7;

/// What a host before SDK 1.8 gave members on `recordings` and
/// `video_likes` at first start, given once, per collection, to a database
/// where a library of SDK 1.7 or earlier has made that collection, unless a
/// members' policy has any rule on it already (an earlier host's, the
/// extension's own, or an administrator's). Returns how many rules were
/// made.
pub fn grant_pre_1_8_member_rules(platform: &Platform) -> Result<usize, PlatformError> {
    let mut granted = 0;
    for collection in ["recordings", "video_likes"] {
        if !platform.has_collection(collection) {
            continue;
        }
        granted += grant_members_once(
            platform,
            &format!("pre_1_8_member_rules_{collection}"),
            &[json!({"collection": {"_eq": collection}})],
            |policy| pre_1_8_member_rules(policy, collection),
        )?;
    }
    if granted > 0 {
        platform.auth.invalidate();
    }
    Ok(granted)
}

/// The members' rules on `collection` a host before SDK 1.8 seeded.
fn pre_1_8_member_rules(policy: &str, collection: &str) -> Vec<Value> {
    let own = |field: &str| json!({ field: {"_eq": "$CURRENT_USER"} });
    let all = json!(["*"]);
    let writable = json!(MEMBER_RECORDING_FIELDS);
    match collection {
        "recordings" => vec![
            json!({"policy": policy, "collection": "recordings", "action": "read", "permissions": own_or_public(), "fields": all}),
            json!({"policy": policy, "collection": "recordings", "action": "create", "permissions": null, "fields": writable,
                   "presets": {"user_created": "$CURRENT_USER"}}),
            json!({"policy": policy, "collection": "recordings", "action": "update", "permissions": own("user_created"), "fields": writable}),
            json!({"policy": policy, "collection": "recordings", "action": "delete", "permissions": own("user_created"), "fields": all}),
        ],
        _ => vec![
            json!({"policy": policy, "collection": "video_likes", "action": "read", "permissions": own("user_id"), "fields": all}),
            json!({"policy": policy, "collection": "video_likes", "action": "create", "permissions": own("user_id"), "fields": all,
                   "presets": {"user_id": "$CURRENT_USER"}}),
            json!({"policy": policy, "collection": "video_likes", "action": "delete", "permissions": own("user_id"), "fields": all}),
        ],
    }
}

/// Gives each members' policy, once (the platform's migration `step`), the
/// rules `rules` makes for it, unless the policy has a rule matching
/// `existing` (conditions besides the policy) already: such a policy keeps
/// its rules as they are. Returns how many rules were made.
fn grant_members_once(
    platform: &Platform,
    step: &str,
    existing: &[Value],
    rules: impl Fn(&str) -> Vec<Value>,
) -> Result<usize, PlatformError> {
    let who = Who::system();
    let mut granted = 0;
    platform.once(crate::platform_schema::OWNER, step, |s| {
        granted = 0;
        for policy in member_policy_ids(platform, s)? {
            let mut conditions = vec![json!({"policy": {"_eq": &policy}})];
            conditions.extend_from_slice(existing);
            let found = platform.read_by_query(
                s,
                &who,
                "platform_permissions",
                &WireQuery {
                    filter: Some(json!({ "_and": conditions })),
                    limit: Some(1),
                    ..Default::default()
                },
                None,
            )?;
            if found.is_empty() {
                for rule in rules(&policy) {
                    platform.create_one(s, &who, "platform_permissions", &rule)?;
                    granted += 1;
                }
            }
        }
        Ok(())
    })?;
    Ok(granted)
}

fn member_policy_ids(
    platform: &Platform,
    s: &mut Session<'_>,
) -> Result<Vec<String>, PlatformError> {
    let policies = platform.read_by_query(
        s,
        &Who::system(),
        "platform_policies",
        &WireQuery {
            filter: Some(json!({"name": {"_in": MEMBER_POLICIES}})),
            limit: Some(-1),
            ..Default::default()
        },
        None,
    )?;
    Ok(policies
        .iter()
        .filter_map(|p| p.get("id").and_then(Value::as_str).map(String::from))
        .collect())
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
/// (docs/decisions.md §5). Extensions grant their collections' rules in their
/// migrations (svc: `0009_member_grants`).
fn member_permissions(policy: &str) -> Vec<Value> {
    vec![
        json!({"policy": policy, "collection": "platform_comments", "action": "create", "permissions": null, "fields": ["*"],
               "presets": {"user_created": "$CURRENT_USER"}}),
    ]
}
