//! The host's own collections (docs/decisions.md §6), as migrations.

use host_sdk::schema::{on_delete, one_to_many, Collection, Field, OnDelete, Step};
use serde_json::Value;

/// Owner name of the host's migrations in `platform_migrations`.
pub const OWNER: &str = "platform";

pub fn migrations() -> Vec<(&'static str, Vec<Step>)> {
    vec![
        ("0001_core", core()),
        ("0002_reference_rules", reference_rules()),
        ("0003_schedule_runs", schedule_runs()),
        ("0004_sign_in", sign_in()),
        ("0005_counters", counters()),
        // 0006, 0007, 0011 and 0013 are once-steps of `bootstrap`.
        ("0008_user_tokens", user_tokens()),
        ("0009_profile_fields", profile_fields()),
        ("0010_access_policies", access_policies()),
        ("0012_files", files()),
    ]
}

/// Each access row's place among its user's or role's (`sort`), and the
/// read-only `policies` alias of users and roles over their access rows,
/// as Directus's `directus_users.policies` and `directus_roles.policies`
/// (`readMe` with `policies.policy.name`). Numbered after the once-only
/// steps of `bootstrap`, which share the numbering.
fn access_policies() -> Vec<Step> {
    let sorted = |mut step: Step| {
        if let Step::CreateAlias { sort, .. } = &mut step {
            *sort = Some("sort".into());
        }
        step
    };
    vec![
        Step::AddField {
            collection: "platform_access".into(),
            field: Field::integer("sort"),
        },
        sorted(one_to_many(
            "platform_users",
            "policies",
            "platform_access",
            "user",
        )),
        sorted(one_to_many(
            "platform_roles",
            "policies",
            "platform_access",
            "role",
        )),
    ]
}

/// Folders of files, and what Directus's files carry besides their bytes:
/// a folder, a description, tags, a character set and when the record
/// last changed. Deleting a folder leaves its files and sub-folders at the
/// top (the reference is set to null).
fn files() -> Vec<Step> {
    let add = |field: Field| Step::AddField {
        collection: "platform_files".into(),
        field,
    };
    vec![
        Collection::new("platform_folders")
            .field(Field::string("name").not_null())
            .field(Field::reference("parent", "platform_folders"))
            .index(&["parent"])
            .build(),
        add(Field::reference("folder", "platform_folders")),
        add(Field::text("description")),
        add(Field::json("tags")),
        add(Field::string("charset")),
        add(Field::timestamp("modified_on")),
        Step::CreateIndex {
            collection: "platform_files".into(),
            index: host_sdk::schema::Index {
                fields: vec!["folder".into()],
                unique: false,
            },
        },
    ]
}

/// The profile a site shows of its users (docs/decisions.md §9): tags, where
/// they are, a title and a language; unset, each reads as `null`.
fn profile_fields() -> Vec<Step> {
    let add = |field: Field| Step::AddField {
        collection: "platform_users".into(),
        field,
    };
    vec![
        add(Field::json("tags")),
        add(Field::string("location")),
        add(Field::string("title")),
        add(Field::string("language")),
    ]
}

/// The one-time tokens mailed to users (see `signin::tokens`): a
/// registration's email verification, a password reset. Kept hashed, each
/// for one `purpose` and until it `expires`; used once (deleted by its
/// use); they go with their user. Never served.
fn user_tokens() -> Vec<Step> {
    let mut steps = vec![Collection::new(USER_TOKENS)
        .field(Field::string("token").not_null().unique())
        .field(Field::reference("user", "platform_users").not_null())
        .field(Field::string("purpose").not_null())
        .field(Field::text("url"))
        .field(Field::timestamp("expires").not_null())
        .index(&["user"])
        .index(&["expires"])
        .build()];
    steps.extend(on_delete(OnDelete::Cascade, &[(USER_TOKENS, "user")]));
    steps
}

/// The collection of mailed one-time tokens.
pub const USER_TOKENS: &str = "platform_user_tokens";

/// The throttle's counters shared by every host on the database (see
/// `throttle` and `Store::counter`, which owns the table's shape): the
/// `id` is a counter's key, `points` its points in the window that `ends`
/// (milliseconds since the Unix epoch); windows that are over are pruned
/// by `ends`. Never served, and not counted by the data version.
fn counters() -> Vec<Step> {
    vec![Collection::new(COUNTERS)
        .field(Field::integer("points").not_null())
        .field(Field::integer("ends").not_null())
        .index(&["ends"])
        .build()]
}

/// The collection of the throttle's counters.
pub use crate::storage::COUNTERS;

/// Which host runs which period of a schedule (see
/// `extensions::claims`): one row per period run, claimed by inserting
/// it; `run` (`extension/schedule/period start`) is unique, so that two
/// hosts cannot both claim one period.
fn schedule_runs() -> Vec<Step> {
    vec![Collection::new(SCHEDULE_RUNS)
        .field(Field::string("run").not_null().unique())
        .field(Field::string("extension").not_null())
        .field(Field::string("schedule").not_null())
        .field(Field::timestamp("period").not_null())
        .field(Field::string("host").not_null())
        .field(Field::timestamp("lease_until").not_null())
        .field(Field::timestamp("finished_on"))
        .index(&["extension", "schedule", "finished_on"])
        .build()]
}

/// The collection of schedule runs.
pub const SCHEDULE_RUNS: &str = "platform_schedule_runs";

/// Sessions of signed-in users (see `credentials::sessions`): the refresh
/// token is kept hashed; a user's sessions go with the user. The signing
/// key of access tokens, when `SECRET` is not set, is made at first start
/// and kept where no API reaches it.
fn sign_in() -> Vec<Step> {
    let mut steps = vec![
        Collection::new(SESSIONS)
            .field(Field::string("token").not_null().unique())
            .field(Field::reference("user", "platform_users").not_null())
            .field(Field::timestamp("expires").not_null())
            .field(Field::string("mode").not_null())
            .field(Field::string("ip"))
            .field(Field::text("user_agent"))
            .field(Field::timestamp("date_created"))
            .index(&["user"])
            .build(),
        Collection::new(SIGNING_KEYS)
            .field(Field::string("secret").not_null())
            .build(),
    ];
    steps.extend(on_delete(OnDelete::Cascade, &[(SESSIONS, "user")]));
    steps
}

/// The collection of sign-in sessions.
pub const SESSIONS: &str = "platform_sessions";
/// The collection holding the made signing secret (never served).
pub const SIGNING_KEYS: &str = "platform_signing_keys";

/// Collections no API serves, to anyone: host code reads them from the
/// store.
pub fn is_internal(collection: &str) -> bool {
    collection == SIGNING_KEYS || collection == COUNTERS || collection == USER_TOKENS
}

/// What deleting a role, user or policy does to what refers to it: the
/// links of access and the permissions of a policy go with it; every other
/// reference (a user's role, avatar or banner, a file's uploader, a
/// comment's author) is set to null, the default of a nullable reference.
fn reference_rules() -> Vec<Step> {
    on_delete(
        OnDelete::Cascade,
        &[
            ("platform_access", "role"),
            ("platform_access", "user"),
            ("platform_access", "policy"),
            ("platform_permissions", "policy"),
        ],
    )
}

fn core() -> Vec<Step> {
    vec![
        Collection::new("platform_roles")
            .field(Field::string("name").not_null().unique())
            .field(Field::text("description"))
            .build(),
        Collection::new("platform_policies")
            .field(Field::string("name").not_null())
            .field(
                Field::boolean("admin_access")
                    .not_null()
                    .default(false.into()),
            )
            .field(Field::text("description"))
            .build(),
        Collection::new("platform_access")
            .field(Field::reference("role", "platform_roles"))
            .field(Field::reference("user", "platform_users"))
            .field(Field::reference("policy", "platform_policies").not_null())
            .index(&["role"])
            .index(&["user"])
            .build(),
        Collection::new("platform_permissions")
            .field(Field::reference("policy", "platform_policies").not_null())
            .field(Field::string("collection").not_null())
            .field(Field::string("action").not_null())
            .field(Field::json("permissions"))
            .field(Field::json("fields"))
            .field(Field::json("presets"))
            .index(&["policy", "collection", "action"])
            .build(),
        Collection::new("platform_users")
            .field(Field::string("first_name"))
            .field(Field::string("last_name"))
            .field(Field::string("email").unique())
            .field(Field::string("password"))
            .field(Field::string("token").unique())
            .field(Field::reference("role", "platform_roles"))
            .field(Field::string("status").not_null().default("active".into()))
            .field(Field::reference("avatar", "platform_files"))
            .field(Field::timestamp("date_created"))
            .field(Field::string("artist_name"))
            .field(Field::string("slug"))
            .field(Field::reference("banner", "platform_files"))
            .field(Field::text("description"))
            .index(&["role"])
            .index(&["slug"])
            .build(),
        Collection::new("platform_files")
            .field(Field::string("storage").not_null().default("local".into()))
            .field(Field::string("filename_disk"))
            .field(Field::string("filename_download"))
            .field(Field::string("title"))
            .field(Field::string("type"))
            .field(Field::integer("filesize"))
            .field(Field::integer("width"))
            .field(Field::integer("height"))
            .field(Field::integer("duration"))
            .field(Field::timestamp("uploaded_on"))
            .field(Field::reference("uploaded_by", "platform_users"))
            .build(),
        Collection::new("platform_comments")
            .field(Field::string("collection").not_null())
            .field(Field::string("item"))
            .field(Field::text("comment"))
            .field(Field::reference("user_created", "platform_users"))
            .field(Field::timestamp("date_created"))
            .index(&["user_created", "collection"])
            .index(&["collection", "item"])
            .build(),
    ]
}

/// Collections whose writes change who may do what: writing them
/// invalidates the auth and permission caches.
pub fn affects_access(collection: &str) -> bool {
    ACCESS_COLLECTIONS.contains(&collection)
}

/// The collections whose writes change who may do what.
pub const ACCESS_COLLECTIONS: [&str; 6] = [
    "platform_users",
    SESSIONS,
    "platform_roles",
    "platform_policies",
    "platform_access",
    "platform_permissions",
];

/// Fields that are written but never read back through any API.
pub fn is_secret(collection: &str, field: &str) -> bool {
    (collection == "platform_users" && (field == "password" || field == "token"))
        || (collection == SESSIONS && field == "token")
}

/// Longest text, in characters, of the users' profile fields: 255 for
/// names, emails, titles and the other short fields (as Directus's
/// string columns), more for a description; and of a comment. Every
/// writer is held to it: registration, `/users/me`, `/comments`, the
/// items API and extensions.
pub fn max_length(collection: &str, field: &str) -> Option<usize> {
    if collection == "platform_comments" && field == "comment" {
        return Some(MAX_COMMENT_LENGTH);
    }
    if collection != "platform_users" {
        return None;
    }
    match field {
        "description" => Some(MAX_DESCRIPTION_LENGTH),
        "first_name" | "last_name" | "email" | "artist_name" | "slug" | "title" | "location"
        | "language" | "website" => Some(MAX_NAME_LENGTH),
        _ => None,
    }
}

/// Longest name, email, title or other short profile field.
pub const MAX_NAME_LENGTH: usize = 255;
/// Longest profile description.
pub const MAX_DESCRIPTION_LENGTH: usize = 10_000;
/// Longest comment.
pub const MAX_COMMENT_LENGTH: usize = 10_000;

/// The host's own rules for values of its collections, applied on every
/// write: emails are stored trimmed and in lower case (so that uniqueness
/// holds regardless of case, and sign-in finds them however typed), and
/// profile text and comments have a length limit.
pub fn host_value(collection: &str, field: &str, value: Value) -> Result<Value, String> {
    let value = match value {
        Value::String(s) if collection == "platform_users" && field == "email" => {
            Value::String(s.trim().to_lowercase())
        }
        other => other,
    };
    if let (Some(max), Value::String(s)) = (max_length(collection, field), &value) {
        let length = s.chars().count();
        if length > max {
            return Err(format!(
                "\"{field}\" is too long ({length} characters; at most {max})"
            ));
        }
    }
    Ok(value)
}
