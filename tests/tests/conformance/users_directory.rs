//! Users as a front end reads them: others through `/users` and
//! `/users/:id` (the items API over `platform_users`, under the caller's
//! permissions on users and on every related collection), and oneself
//! through `/users/me` with one's policies (`policies` of users and roles,
//! read-only aliases over the access rows).

use std::collections::BTreeSet;

use platform_tests::{encode, id_of, keys_of, str_of, Database, Host, HostOptions, ADMIN_TOKEN};
use serde_json::{json, Value};

/// A host with three viewers named Ann, Bob and Cid (tokens `ud-a`,
/// `ud-b`, `ud-c`); their ids in that order.
fn setup() -> (Host, Vec<String>) {
    let host = Host::in_process_svc();
    let ids = ["Ann", "Bob", "Cid"]
        .iter()
        .map(|name| {
            host.user_with(
                Some("Viewer"),
                &format!("ud-{}", name[..1].to_lowercase()),
                &json!({"first_name": name, "artist_name": format!("{name} art")}),
            )
        })
        .collect();
    (host, ids)
}

#[test]
fn users_are_listed_under_the_users_collections_permissions() {
    let (host, ids) = setup();
    // Members have no rule on users: refused, as /items refuses them.
    let r = host.get("/users", Some("ud-a"));
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.error_code(), "FORBIDDEN");
    assert_eq!(
        host.get(&format!("/users/{}", ids[1]), Some("ud-a")).status,
        403
    );

    // Administrators list everyone, with the query parameters.
    let filter = encode(&json!({"first_name": {"_in": ["Ann", "Bob", "Cid"]}}).to_string());
    let r = host.get(
        &format!("/users?filter={filter}&sort=-first_name&fields=first_name&limit=2&offset=1"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(
        r.data_list(),
        vec![json!({"first_name": "Bob"}), json!({"first_name": "Ann"})]
    );
    let r = host.get(
        &format!("/users?filter={filter}&sort=first_name&fields=first_name&limit=2&page=2"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.data_list(), vec![json!({"first_name": "Cid"})]);
    let r = host.get(
        &format!("/users?filter={filter}&aggregate[count]=*"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let count = &r.json()["data"][0]["count"];
    assert!(count == &json!(3) || count == &json!("3"), "{}", r.body);

    // Members may read the names of active users.
    host.grant(
        "Viewer",
        "platform_users",
        json!({"action": "read", "permissions": {"status": "active"},
               "fields": ["id", "first_name", "artist_name", "avatar"]}),
    );
    let r = host.get(
        "/users?filter[first_name]=Bob&fields=id,first_name",
        Some("ud-a"),
    );
    assert_eq!(
        r.data_list(),
        vec![json!({"id": ids[1], "first_name": "Bob"})]
    );
    // `*` is what they may read, and never a secret.
    let r = host.get(&format!("/users/{}", ids[2]), Some("ud-a"));
    assert_eq!(r.status, 200, "{}", r.body);
    let cid = r.json()["data"].clone();
    assert_eq!(
        keys_of(&cid),
        BTreeSet::from(["artist_name", "avatar", "first_name", "id"]),
        "{cid}"
    );
    // A field they may not read is refused.
    let r = host.get(&format!("/users/{}?fields=email", ids[2]), Some("ud-a"));
    assert_eq!(r.status, 403, "{}", r.body);

    // A suspended user is out of their reach: 403, as for a missing one,
    // which is 403 to administrators too, as Directus answers.
    host.admin_patch("platform_users", &ids[2], &json!({"status": "suspended"}));
    assert_eq!(
        host.get(&format!("/users/{}", ids[2]), Some("ud-a")).status,
        403
    );
    let missing = "00000000-0000-4000-8000-00000000f00d";
    assert_eq!(
        host.get(&format!("/users/{missing}"), Some("ud-a")).status,
        403
    );
    let r = host.get(&format!("/users/{missing}"), Some(ADMIN_TOKEN));
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.error_code(), "FORBIDDEN");

    // /users/me still answers the caller's own record.
    let r = host.get("/users/me?fields=id,first_name", Some("ud-b"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"], json!({"id": ids[1], "first_name": "Bob"}));
}

#[test]
fn related_collections_are_read_under_the_callers_permissions() {
    let (host, ids) = setup();
    let avatar = id_of(&host.admin_create(
        "platform_files",
        &json!({"title": "Face", "filename_download": "face.png"}),
    ));
    host.admin_patch("platform_users", &ids[0], &json!({"avatar": avatar}));
    host.grant(
        "Viewer",
        "platform_users",
        json!({"action": "read", "fields": ["id", "first_name", "avatar", "role"]}),
    );
    let path = format!("/users/{}?fields=first_name,avatar.title", ids[0]);
    // Members read only the files they uploaded: someone else's avatar
    // reads as null.
    let r = host.get(&path, Some("ud-b"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["data"],
        json!({"first_name": "Ann", "avatar": null})
    );
    host.grant(
        "Viewer",
        "platform_files",
        json!({"action": "read", "fields": ["id", "title"]}),
    );
    let r = host.get(&path, Some("ud-b"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["data"],
        json!({"first_name": "Ann", "avatar": {"title": "Face"}})
    );
    // Filters through references too, and in shorthand.
    let r = host.get(
        &format!(
            "/users?fields=first_name&filter={}",
            encode(&json!({"avatar": {"title": "Face"}}).to_string())
        ),
        Some("ud-b"),
    );
    assert_eq!(r.data_list(), vec![json!({"first_name": "Ann"})]);
    // Another role's name is not theirs to read: the role reads as null.
    let r = host.get(&format!("/users/{}?fields=role.name", ids[0]), Some("ud-b"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["role"], json!({"name": "Viewer"}));
    let admin_id = str_of(&host.get("/users/me", Some(ADMIN_TOKEN)).json()["data"]["id"]);
    let r = host.get(&format!("/users/{admin_id}?fields=role.name"), Some("ud-b"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["role"], Value::Null);
}

/// What the site's `readMe` asks.
const READ_ME: &str = "/users/me?fields=*,avatar.*,policies.*,policies.policy.name,policies.policy.id,role.*,role.policies.policy.name,role.policies.policy.id";

#[test]
fn a_member_reads_their_own_policies_and_their_roles() {
    let (host, ids) = setup();
    let viewer_role = host.id_by_name("platform_roles", "Viewer");
    let viewer_policy = host.id_by_name("platform_policies", "Viewer");

    // A member with no policy of their own.
    let r = host.get(READ_ME, Some("ud-a"));
    assert_eq!(r.status, 200, "{}", r.body);
    let me = r.json()["data"].clone();
    assert_eq!(me["id"], json!(ids[0]));
    assert_eq!(me["policies"], json!([]), "{me}");
    assert_eq!(me["avatar"], Value::Null);
    assert_eq!(me["role"]["id"], json!(viewer_role), "{me}");
    assert_eq!(me["role"]["name"], "Viewer");
    let role_policies = me["role"]["policies"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(role_policies.len(), 1, "{me}");
    assert_eq!(
        role_policies[0]["policy"],
        json!({"id": viewer_policy, "name": "Viewer"})
    );
    assert!(me.get("password").is_none() && me.get("token").is_none());

    // A policy of their own, listed with its access row.
    let extra = id_of(&host.admin_create(
        "platform_policies",
        &json!({"name": "Editors", "admin_access": false}),
    ));
    let access = id_of(&host.admin_create(
        "platform_access",
        &json!({"user": ids[0], "policy": extra, "sort": 1}),
    ));
    let r = host.get(READ_ME, Some("ud-a"));
    assert_eq!(r.status, 200, "{}", r.body);
    let me = r.json()["data"].clone();
    assert_eq!(
        me["policies"],
        json!([{"id": access, "user": ids[0], "role": null, "sort": 1,
                "policy": {"id": extra, "name": "Editors"}}]),
        "{me}"
    );

    // Nothing more: others' access rows, and policies not theirs.
    let r = host.get("/items/platform_access?fields=id", Some("ud-b"));
    let rows = r.data_list();
    assert_eq!(rows.len(), 1, "only their role's row: {rows:?}");
    assert!(rows.iter().all(|row| row["id"] != json!(access)));
    let r = host.get(
        "/items/platform_policies?fields=name&sort=name",
        Some("ud-b"),
    );
    assert_eq!(r.data_list(), vec![json!({"name": "Viewer"})]);
    let r = host.get("/items/platform_policies?fields=admin_access", Some("ud-b"));
    assert_eq!(r.status, 403, "{}", r.body);
    let r = host.get("/items/platform_roles?fields=name", Some("ud-b"));
    assert_eq!(r.data_list(), vec![json!({"name": "Viewer"})]);

    // The alias is read-only.
    let r = host.patch(
        &format!("/items/platform_users/{}", ids[0]),
        Some(ADMIN_TOKEN),
        &json!({"policies": []}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
}

/// A member policy's read rules on `collection`.
fn read_rules(host: &Host, policy: &str, collection: &str) -> Vec<Value> {
    let policy = host.id_by_name("platform_policies", policy);
    host.admin_find(
        "platform_permissions",
        &json!({"policy": policy, "collection": collection, "action": "read"}),
    )
}

#[test]
fn an_older_database_gets_the_members_own_access_rules_once() {
    let host = Host::start(HostOptions::svc());
    host.user(Some("Viewer"), "old-viewer");
    // The rules as a database seeded before them holds them: none on
    // access rows, policies or comments, the own-role rule with id and
    // name; except the Model's rule on comments, which an administrator
    // made their own.
    for policy in ["Viewer", "Model"] {
        for collection in ["platform_access", "platform_policies", "platform_comments"] {
            for rule in read_rules(&host, policy, collection) {
                if policy == "Model" && collection == "platform_comments" {
                    host.admin_patch(
                        "platform_permissions",
                        &id_of(&rule),
                        &json!({"fields": ["id", "comment"]}),
                    );
                } else {
                    host.admin_delete("platform_permissions", &id_of(&rule));
                }
            }
        }
        for rule in read_rules(&host, policy, "platform_roles") {
            host.admin_patch(
                "platform_permissions",
                &id_of(&rule),
                &json!({"fields": ["id", "name"]}),
            );
        }
    }
    assert_eq!(host.get(READ_ME, Some("old-viewer")).status, 403);
    let dir = host.stop();
    let forgotten = Database::of_data_dir(dir.path()).sql(
        "DELETE FROM \"platform_migrations\" WHERE \"id\" = '0011_members_read_own_access_and_comments'",
    );
    assert_eq!(forgotten, 1, "the step's record");
    let mut opts = HostOptions::svc();
    opts.data_dir = Some(dir);
    let host = Host::start(opts);

    let r = host.get(READ_ME, Some("old-viewer"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["policies"], json!([]));
    assert_eq!(
        r.json()["data"]["role"]["policies"][0]["policy"]["name"],
        "Viewer"
    );
    for policy in ["Viewer", "Model"] {
        let roles = read_rules(&host, policy, "platform_roles");
        assert_eq!(roles.len(), 1, "{roles:?}");
        assert_eq!(roles[0]["fields"], json!(["id", "name", "policies"]));
        assert_eq!(read_rules(&host, policy, "platform_access").len(), 1);
        assert_eq!(read_rules(&host, policy, "platform_policies").len(), 1);
    }
    // The administrator's own rule stands, alone.
    let model_comments = read_rules(&host, "Model", "platform_comments");
    assert_eq!(model_comments.len(), 1, "{model_comments:?}");
    assert_eq!(model_comments[0]["fields"], json!(["id", "comment"]));
}
