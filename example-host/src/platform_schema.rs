//! The host's own collections (docs/decisions.md §6): their fields, as
//! migrations, and what the host knows of each besides its fields, declared
//! once in [`COLLECTIONS`] (whether any API serves it, whether its writes
//! change who may do what, its secret fields, the longest text of its
//! fields, the fields kept in lower case), from which every rule
//! that depends on them is read.

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
        ("0014_access_fields", access_fields()),
    ]
}

/// The platform's once-only steps (`Platform::once`): data brought up to
/// date once in a database's life, recorded among the platform's
/// migrations beside the schema migrations above. Every such step's id is
/// listed here (`Platform::once` refuses another); a step no longer run
/// stays listed, so that a database it ran on is still known.
pub const ONCE_STEPS: &[&str] = &[
    "0000_first_start",
    "0002_member_recordings_narrowed",
    "0006_members_read_own_role",
    "0007_emails_lower_case",
    "0011_members_read_own_access_and_comments",
    "0013_member_files",
    "pre_1_8_member_rules_recordings",
    "pre_1_8_member_rules_video_likes",
    "signing_secret",
    "demo_0001_site_data",
];

/// The ids of the platform's schema migrations, in order.
pub fn migration_ids() -> Vec<&'static str> {
    migrations().into_iter().map(|(id, _)| id).collect()
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

/// What Directus 11 answers of roles, policies and permissions besides
/// what the platform had: a role's icon and parent and its `users`; a
/// policy's icon, app access, enforced two-factor sign-in, allowed IP
/// addresses, and its `permissions`, `users` and `roles` (its access rows,
/// as Directus's `directus_policies.users` and `.roles`); a permission's
/// `validation`. Every new field is nullable or has a default, so that the
/// previous release's creates still work.
fn access_fields() -> Vec<Step> {
    let add = |collection: &str, field: Field| Step::AddField {
        collection: collection.into(),
        field,
    };
    let flag = |name: &str| Field::boolean(name).not_null().default(false.into());
    vec![
        add("platform_roles", Field::string("icon")),
        add(
            "platform_roles",
            Field::reference("parent", "platform_roles"),
        ),
        add("platform_policies", Field::string("icon")),
        add("platform_policies", flag("app_access")),
        add("platform_policies", flag("enforce_tfa")),
        add("platform_policies", Field::json("ip_access")),
        add("platform_permissions", Field::json("validation")),
        one_to_many("platform_roles", "users", "platform_users", "role"),
        one_to_many(
            "platform_policies",
            "permissions",
            "platform_permissions",
            "policy",
        ),
        one_to_many("platform_policies", "users", "platform_access", "policy"),
        one_to_many("platform_policies", "roles", "platform_access", "policy"),
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
pub use platform_store::storage::COUNTERS;

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

/// What the host knows of one of its own collections besides its fields.
#[derive(Debug, Clone, Copy)]
pub struct PlatformCollection {
    pub name: &'static str,
    /// No API serves it, to anyone: host code reads it from the store.
    pub internal: bool,
    /// Its writes change who may do what: they invalidate the auth and
    /// permission caches (and are tracked for other hosts).
    pub affects_access: bool,
    /// Fields written but never read back through any API.
    pub secret: &'static [&'static str],
    /// Longest text, in characters, of its text fields; every writer is
    /// held to it (registration, `/users/me`, `/comments`, the items API
    /// and extensions).
    pub max_lengths: &'static [(&'static str, usize)],
    /// Fields stored trimmed and in lower case (so that uniqueness holds
    /// regardless of case, and sign-in finds them however typed).
    pub lower_case: &'static [&'static str],
}

impl PlatformCollection {
    const fn new(name: &'static str) -> Self {
        Self {
            name,
            internal: false,
            affects_access: false,
            secret: &[],
            max_lengths: &[],
            lower_case: &[],
        }
    }
    const fn internal(mut self) -> Self {
        self.internal = true;
        self
    }
    const fn affects_access(mut self) -> Self {
        self.affects_access = true;
        self
    }
    const fn secret(mut self, fields: &'static [&'static str]) -> Self {
        self.secret = fields;
        self
    }
    const fn max_lengths(mut self, fields: &'static [(&'static str, usize)]) -> Self {
        self.max_lengths = fields;
        self
    }
    const fn lower_case(mut self, fields: &'static [&'static str]) -> Self {
        self.lower_case = fields;
        self
    }
}

/// Longest name, email, title or other short profile field (as
/// Directus's string columns).
pub const MAX_NAME_LENGTH: usize = 255;
/// Longest profile description.
pub const MAX_DESCRIPTION_LENGTH: usize = 10_000;
/// Longest comment.
pub const MAX_COMMENT_LENGTH: usize = 10_000;

/// The users' profile fields and their longest text (`website` is added by
/// an extension, svc, for the site).
const USER_LENGTHS: &[(&str, usize)] = &[
    ("first_name", MAX_NAME_LENGTH),
    ("last_name", MAX_NAME_LENGTH),
    ("email", MAX_NAME_LENGTH),
    ("artist_name", MAX_NAME_LENGTH),
    ("slug", MAX_NAME_LENGTH),
    ("title", MAX_NAME_LENGTH),
    ("location", MAX_NAME_LENGTH),
    ("language", MAX_NAME_LENGTH),
    ("website", MAX_NAME_LENGTH),
    ("description", MAX_DESCRIPTION_LENGTH),
];

/// The host's own collections, each once, with what the host knows of it.
pub const COLLECTIONS: &[PlatformCollection] = &[
    // The platform's users: profiles, credentials, role.
    PlatformCollection::new("platform_users")
        .affects_access()
        .secret(&["password", "token"])
        .max_lengths(USER_LENGTHS)
        .lower_case(&["email"]),
    // Roles, policies, which policies apply to a role or user, and what a
    // policy allows.
    PlatformCollection::new("platform_roles").affects_access(),
    PlatformCollection::new("platform_policies").affects_access(),
    PlatformCollection::new("platform_access").affects_access(),
    PlatformCollection::new("platform_permissions").affects_access(),
    // Signed-in sessions, their refresh tokens hashed.
    PlatformCollection::new(SESSIONS)
        .affects_access()
        .secret(&["token"]),
    PlatformCollection::new("platform_files"),
    PlatformCollection::new("platform_folders"),
    PlatformCollection::new("platform_comments").max_lengths(&[("comment", MAX_COMMENT_LENGTH)]),
    PlatformCollection::new(SCHEDULE_RUNS),
    // Never served: the made signing secret, the throttle's counters, the
    // mailed one-time tokens.
    PlatformCollection::new(SIGNING_KEYS).internal(),
    PlatformCollection::new(COUNTERS).internal(),
    PlatformCollection::new(USER_TOKENS).internal(),
];

/// What the host knows of `collection`; `None` for a collection that is not
/// the host's own (an extension's).
pub fn platform_collection(collection: &str) -> Option<&'static PlatformCollection> {
    COLLECTIONS.iter().find(|c| c.name == collection)
}

/// Collections no API serves, to anyone.
pub fn is_internal(collection: &str) -> bool {
    platform_collection(collection).is_some_and(|c| c.internal)
}

/// Collections whose writes change who may do what.
pub fn affects_access(collection: &str) -> bool {
    platform_collection(collection).is_some_and(|c| c.affects_access)
}

/// The collections whose writes change who may do what.
pub fn access_collections() -> Vec<&'static str> {
    COLLECTIONS
        .iter()
        .filter(|c| c.affects_access)
        .map(|c| c.name)
        .collect()
}

/// Fields that are written but never read back through any API.
pub fn is_secret(collection: &str, field: &str) -> bool {
    platform_collection(collection).is_some_and(|c| c.secret.contains(&field))
}

/// Longest text, in characters, of a field of the host's collections.
pub fn max_length(collection: &str, field: &str) -> Option<usize> {
    platform_collection(collection)?
        .max_lengths
        .iter()
        .find(|(name, _)| *name == field)
        .map(|(_, max)| *max)
}

/// The host's own rules for values of its collections, applied on every
/// write: the fields kept in lower case are stored trimmed and lower-cased,
/// and text has its length limit.
pub fn host_value(collection: &str, field: &str, value: Value) -> Result<Value, String> {
    let lower = platform_collection(collection).is_some_and(|c| c.lower_case.contains(&field));
    let value = match value {
        Value::String(s) if lower => Value::String(s.trim().to_lowercase()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The collections the migrations make.
    fn made() -> BTreeSet<String> {
        migrations()
            .into_iter()
            .flat_map(|(_, steps)| steps)
            .filter_map(|step| match step {
                Step::CreateCollection { collection, .. } => Some(collection),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_collection_the_migrations_make_is_declared_once() {
        let declared: Vec<&str> = COLLECTIONS.iter().map(|c| c.name).collect();
        let unique: BTreeSet<&str> = declared.iter().copied().collect();
        assert_eq!(unique.len(), declared.len(), "declared twice: {declared:?}");
        let declared: BTreeSet<String> = unique.into_iter().map(String::from).collect();
        assert_eq!(made(), declared);
    }

    #[test]
    fn what_is_declared_names_fields_the_migrations_make() {
        let mut fields: BTreeSet<(String, String)> = BTreeSet::new();
        for (_, steps) in migrations() {
            for step in steps {
                match step {
                    Step::CreateCollection {
                        collection,
                        fields: made,
                        ..
                    } => {
                        for f in made {
                            fields.insert((collection.clone(), f.field));
                        }
                    }
                    Step::AddField { collection, field } => {
                        fields.insert((collection, field.field));
                    }
                    _ => {}
                }
            }
        }
        for c in COLLECTIONS {
            // A length may be declared for a field an extension adds to
            // the host's users (svc's `website`); secrets and lower-cased
            // fields are the host's own.
            for field in c.secret.iter().chain(c.lower_case) {
                assert!(
                    fields.contains(&(c.name.to_string(), field.to_string())),
                    "{}.{field} is declared but no migration makes it",
                    c.name
                );
            }
        }
    }

    #[test]
    fn rules_read_from_the_declaration() {
        assert!(is_internal(SIGNING_KEYS) && !is_internal("platform_users"));
        assert!(affects_access("platform_permissions") && !affects_access("platform_files"));
        assert!(is_secret("platform_users", "password") && !is_secret("videos", "password"));
        assert_eq!(
            max_length("platform_users", "website"),
            Some(MAX_NAME_LENGTH)
        );
        assert_eq!(max_length("platform_users", "role"), None);
        assert_eq!(
            host_value("platform_users", "email", Value::from(" A@B.C ")),
            Ok(Value::from("a@b.c"))
        );
        assert!(host_value(
            "platform_comments",
            "comment",
            Value::from("x".repeat(10_001))
        )
        .is_err());
    }
}
