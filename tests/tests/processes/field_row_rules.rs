//! A field granted by only some of a caller's permission rules is seen on
//! the rows of those rules alone, as Directus 11 applies row rules per
//! field: `null` on the other rows, and nothing of it learnt through a
//! filter, a sort, a search for text or an aggregate. Every test runs on
//! the suite's backend (`TEST_DB`).

use platform_tests::{encode, id_of, Host, HostOptions, Resp, ADMIN_TOKEN};
use serde_json::{json, Value};

const ADMIN_EMAIL: &str = "admin@example.com";

/// A host where Viewers read every user's `id` and names, and `email` on
/// their own row only; two viewers, `alice` and `bob`.
fn host() -> (Host, String, String) {
    let host = Host::start(HostOptions::svc());
    let alice = host.user(Some("Viewer"), "alice");
    let bob = host.user(Some("Viewer"), "bob");
    host.grant(
        "Viewer",
        "platform_users",
        json!({"action": "read", "fields": ["id", "first_name", "last_name"]}),
    );
    host.grant(
        "Viewer",
        "platform_users",
        json!({"action": "read", "fields": ["email"],
               "permissions": {"id": {"_eq": "$CURRENT_USER"}}}),
    );
    (host, alice, bob)
}

fn data(r: &Resp) -> Vec<Value> {
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"].as_array().cloned().unwrap_or_default()
}

/// The users `filter` finds for alice, by id.
fn found(host: &Host, filter: Value) -> Vec<String> {
    let r = host.get(
        &format!(
            "/items/platform_users?fields=id&limit=-1&filter={}",
            encode(&filter.to_string())
        ),
        Some("alice"),
    );
    data(&r)
        .iter()
        .filter_map(|u| u["id"].as_str().map(String::from))
        .collect()
}

#[test]
fn a_field_granted_on_the_callers_row_is_null_on_every_other_row() {
    let (host, alice, bob) = host();
    for path in [
        "/items/platform_users?fields=id,email&limit=-1",
        "/users?fields=id,email&limit=-1",
    ] {
        let users = data(&host.get(path, Some("alice")));
        assert!(users.len() >= 3, "{path}: {users:?}");
        for user in &users {
            let expected = if user["id"] == json!(alice) {
                json!("alice@test.local")
            } else {
                Value::Null
            };
            assert_eq!(user["email"], expected, "{path}: {user}");
        }
    }
    // One item, by key: the same per row.
    let r = host.get(
        &format!("/items/platform_users/{bob}?fields=id,email"),
        Some("alice"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["email"], Value::Null);
    let r = host.get(
        &format!("/items/platform_users/{alice}?fields=id,email,first_name"),
        Some("alice"),
    );
    assert_eq!(r.json()["data"]["email"], json!("alice@test.local"));
    assert_eq!(r.json()["data"]["first_name"], json!("Test"));
    // The administrator reads every email.
    let users = data(&host.get(
        "/items/platform_users?fields=id,email&limit=-1",
        Some(ADMIN_TOKEN),
    ));
    assert!(users.iter().all(|u| u["email"].is_string()), "{users:?}");
}

#[test]
fn filters_and_searches_see_the_field_only_where_it_is_granted() {
    let (host, alice, bob) = host();
    assert_eq!(
        found(&host, json!({"email": {"_eq": ADMIN_EMAIL}})),
        [""; 0]
    );
    assert_eq!(
        found(&host, json!({"email": {"_eq": "bob@test.local"}})),
        [""; 0]
    );
    assert_eq!(
        found(&host, json!({"email": {"_contains": "admin"}})),
        [""; 0]
    );
    assert_eq!(
        found(&host, json!({"email": {"_starts_with": "b"}})),
        [""; 0]
    );
    assert_eq!(
        found(
            &host,
            json!({"email": {"_in": [ADMIN_EMAIL, "bob@test.local"]}})
        ),
        [""; 0]
    );
    assert_eq!(
        found(&host, json!({"email": {"_eq": "alice@test.local"}})),
        vec![alice.clone()]
    );
    assert_eq!(
        found(&host, json!({"email": {"_nnull": true}})),
        vec![alice.clone()]
    );
    // Every other row reads as null, whatever is stored.
    let nulls = found(&host, json!({"email": {"_null": true}}));
    assert!(nulls.contains(&bob) && !nulls.contains(&alice), "{nulls:?}");
    // A condition that names the column twice binds its mask twice.
    let others = found(&host, json!({"email": {"_ncontains": "alice"}}));
    assert!(
        others.contains(&bob) && !others.contains(&alice),
        "{others:?}"
    );
    // Conditions on the fields every rule grants are untouched.
    assert_eq!(
        found(&host, json!({"last_name": {"_eq": "bob"}})),
        vec![bob.clone()]
    );
}

#[test]
fn sorts_and_aggregates_see_the_field_only_where_it_is_granted() {
    let (host, alice, _bob) = host();
    // Sorted by email, every row but alice's holds null: nulls first, so
    // alice's row comes last, whatever the other emails are.
    for sort in ["email", "-email"] {
        let users = data(&host.get(
            &format!("/items/platform_users?fields=id&limit=-1&sort={sort},id"),
            Some("alice"),
        ));
        let at = users.iter().position(|u| u["id"] == json!(alice));
        let expected = if sort == "email" { users.len() - 1 } else { 0 };
        assert_eq!(at, Some(expected), "sort={sort}: {users:?}");
    }
    let r = host.get(
        "/items/platform_users?aggregate[countDistinct]=email&aggregate[max]=email",
        Some("alice"),
    );
    let rows = data(&r);
    assert_eq!(rows[0]["countDistinct"]["email"], json!(1), "{rows:?}");
    assert_eq!(
        rows[0]["max"]["email"],
        json!("alice@test.local"),
        "{rows:?}"
    );
    let r = host.get(
        "/items/platform_users?aggregate[count]=*&groupBy[]=email",
        Some("alice"),
    );
    let groups = data(&r);
    let emails: Vec<&Value> = groups.iter().map(|g| &g["email"]).collect();
    assert_eq!(groups.len(), 2, "{groups:?}");
    assert!(emails.contains(&&json!("alice@test.local")), "{groups:?}");
    assert!(emails.contains(&&Value::Null), "{groups:?}");
}

#[test]
fn a_rule_whose_filter_names_a_field_another_rule_narrows_still_admits_its_rows() {
    // Viewers read published recordings' ids and titles, and `status`
    // only on their own: the first rule's own filter on `status` reads
    // the stored value, so every published recording stays listed.
    let host = Host::start(HostOptions::svc());
    host.user(Some("Viewer"), "carol");
    let published = id_of(&host.admin_create(
        "recordings",
        &json!({"title": "open", "status": "published", "public": true}),
    ));
    let policy = host.id_by_name("platform_policies", "Viewer");
    let filter = json!({"policy": {"_eq": policy}, "collection": {"_eq": "recordings"},
                        "action": {"_eq": "read"}});
    let rules = host.get(
        &format!(
            "/items/platform_permissions?fields=id&limit=-1&filter={}",
            encode(&filter.to_string())
        ),
        Some(ADMIN_TOKEN),
    );
    for rule in data(&rules) {
        host.admin_delete(
            "platform_permissions",
            rule["id"].as_str().unwrap_or_default(),
        );
    }
    host.grant(
        "Viewer",
        "recordings",
        json!({"action": "read", "fields": ["id", "title"],
               "permissions": {"status": {"_eq": "published"}}}),
    );
    host.grant(
        "Viewer",
        "recordings",
        json!({"action": "read", "fields": ["status"],
               "permissions": {"user_created": {"_eq": "$CURRENT_USER"}}}),
    );
    let recordings = data(&host.get(
        "/items/recordings?fields=id,title,status&limit=-1",
        Some("carol"),
    ));
    let open: Vec<&Value> = recordings
        .iter()
        .filter(|v| v["id"] == json!(published))
        .collect();
    assert_eq!(open.len(), 1, "{recordings:?}");
    assert_eq!(open[0]["title"], json!("open"));
    assert_eq!(open[0]["status"], Value::Null);
}
