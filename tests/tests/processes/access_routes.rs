//! `/roles`, `/policies` and `/permissions` as Directus 11 has them, over
//! the platform's access collections: administrators manage them, members
//! read what their permissions allow and write nothing, a change of access
//! holds from the member's next request, permissions the platform could
//! not apply are refused, and the last administrator stays.

use platform_tests::{id_of, Host, HostOptions, Resp, ADMIN_TOKEN};
use serde_json::{json, Value};

fn svc() -> Host {
    Host::start(HostOptions::svc())
}

/// An items-API error answer with this status and code.
fn assert_refused(case: &str, r: &Resp, status: u16, code: &str) {
    assert_eq!(r.status, status, "{case}: {}", r.body);
    assert_eq!(r.error_code(), code, "{case}: {}", r.body);
}

fn data(r: &Resp) -> Value {
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"].clone()
}

#[test]
fn administrators_manage_roles_policies_and_permissions() {
    let host = svc();
    let admin = Some(ADMIN_TOKEN);
    let role = data(&host.post(
        "/roles",
        admin,
        &json!({"name": "Editors", "icon": "edit", "description": "Edit"}),
    ));
    let role_id = id_of(&role);
    assert_eq!(role["icon"], "edit");
    let policy = data(&host.post(
        "/policies",
        admin,
        &json!({"name": "Editing", "app_access": true, "ip_access": ["10.0.0.0/8"]}),
    ));
    let policy_id = id_of(&policy);
    assert_eq!(policy["app_access"], true);
    assert_eq!(policy["admin_access"], false);
    assert_eq!(policy["enforce_tfa"], false);
    host.admin_create(
        "platform_access",
        &json!({"role": role_id, "policy": policy_id}),
    );
    let permission = data(&host.post(
        "/permissions",
        admin,
        &json!({"policy": policy_id, "collection": "achievements", "action": "read",
                "fields": ["id", "name"], "validation": null}),
    ));
    let permission_id = id_of(&permission);

    // The aliases Directus answers: a role's policies and users, a
    // policy's permissions and its access rows (roles and users).
    let user = host.user(None, "access-editor");
    host.admin_patch("platform_users", &user, &json!({"role": role_id}));
    let read = data(&host.get(
        &format!("/roles/{role_id}?fields=name,policies.policy.name,users.id"),
        admin,
    ));
    assert_eq!(
        read,
        json!({"name": "Editors", "policies": [{"policy": {"name": "Editing"}}], "users": [{"id": user}]})
    );
    let read = data(&host.get(
        &format!("/policies/{policy_id}?fields=name,permissions.collection,roles.role.name"),
        admin,
    ));
    assert_eq!(read["permissions"], json!([{"collection": "achievements"}]));
    assert_eq!(read["roles"], json!([{"role": {"name": "Editors"}}]));

    // Lists take the items API's query parameters.
    let list = host
        .get("/policies?filter[name][_eq]=Editing&fields=id", admin)
        .data_list();
    assert_eq!(list, vec![json!({"id": policy_id})]);
    let list = host
        .get(
            &format!("/permissions?filter[policy][_eq]={policy_id}&fields=action"),
            admin,
        )
        .data_list();
    assert_eq!(list, vec![json!({"action": "read"})]);

    // Updates, one and many.
    let changed = data(&host.patch(
        &format!("/permissions/{permission_id}"),
        admin,
        &json!({"fields": ["*"]}),
    ));
    assert_eq!(changed["fields"], json!(["*"]));
    let many = data(&host.patch(
        "/roles",
        admin,
        &json!({"keys": [role_id], "data": {"description": "Edits"}}),
    ));
    assert_eq!(many[0]["description"], "Edits");

    // Missing items are 403, as Directus answers.
    for path in ["/roles/nope", "/policies/nope", "/permissions/nope"] {
        assert_refused(path, &host.get(path, admin), 403, "FORBIDDEN");
    }

    // Deleting a policy deletes its permissions and its access rows.
    let r = host.delete(&format!("/policies/{policy_id}"), admin);
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(
        host.admin_count(
            "platform_permissions",
            Some(&json!({"policy": {"_eq": policy_id}}))
        ),
        0
    );
    assert_eq!(
        host.admin_count(
            "platform_access",
            Some(&json!({"policy": {"_eq": policy_id}}))
        ),
        0
    );
    let r = host.request(
        "DELETE",
        "/roles",
        admin,
        Some(json!([role_id]).to_string().as_bytes()),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    assert_refused(
        "deleted role",
        &host.get(&format!("/roles/{role_id}"), admin),
        403,
        "FORBIDDEN",
    );
}

#[test]
fn a_permission_holds_from_the_members_next_request() {
    let host = svc();
    host.user(Some("Viewer"), "access-viewer");
    let member = Some("access-viewer");
    let first = "/items/achievements?filter[code][_eq]=first_play";
    assert_eq!(host.get(first, member).status, 403);

    let viewer = host.id_by_name("platform_policies", "Viewer");
    let granted = data(&host.post(
        "/permissions",
        Some(ADMIN_TOKEN),
        &json!({"policy": viewer, "collection": "achievements", "action": "read", "fields": ["code"]}),
    ));
    let list = host.get(first, member).data_list();
    assert_eq!(list, vec![json!({"code": "first_play"})]);

    // A change narrows the next read.
    host.patch(
        &format!("/permissions/{}", id_of(&granted)),
        Some(ADMIN_TOKEN),
        &json!({"permissions": {"code": {"_eq": "other"}}}),
    );
    assert!(host.get(first, member).data_list().is_empty());

    let r = host.delete(
        &format!("/permissions/{}", id_of(&granted)),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(host.get(first, member).status, 403);
}

#[test]
fn a_permission_the_platform_cannot_apply_is_refused() {
    let host = svc();
    let viewer = host.id_by_name("platform_policies", "Viewer");
    let rule = |extra: Value| {
        let mut body = json!({"policy": viewer, "collection": "achievements", "action": "read"});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            body[k] = v;
        }
        body
    };
    for (case, body, words) in [
        (
            "share",
            rule(json!({"action": "share"})),
            "\"share\" is not supported",
        ),
        (
            "action",
            rule(json!({"action": "peek"})),
            "\"action\" must be one of",
        ),
        (
            "collection",
            rule(json!({"collection": "nowhere"})),
            "Collection \"nowhere\" doesn't exist.",
        ),
        (
            "field",
            rule(json!({"fields": ["code", "nope"]})),
            "Field \"nope\" doesn't exist in collection \"achievements\".",
        ),
        (
            "filter",
            rule(json!({"permissions": {"nope": {"_eq": 1}}})),
            "\"permissions\" is not a valid filter",
        ),
        (
            "validation",
            rule(json!({"validation": {"code": {"_nope": 1}}})),
            "\"validation\" is not a valid filter",
        ),
    ] {
        // The same rule on every path a permission is written by.
        for path in ["/permissions", "/items/platform_permissions"] {
            let r = host.post(path, Some(ADMIN_TOKEN), &body);
            assert_refused(case, &r, 400, "INVALID_PAYLOAD");
            assert!(r.error_message().contains(words), "{case}: {}", r.body);
        }
    }
    // An update is checked with the rest of the permission.
    let made = data(&host.post("/permissions", Some(ADMIN_TOKEN), &rule(json!({}))));
    let r = host.patch(
        &format!("/permissions/{}", id_of(&made)),
        Some(ADMIN_TOKEN),
        &json!({"fields": ["nope"]}),
    );
    assert_refused("update", &r, 400, "INVALID_PAYLOAD");
    // A policy and a role need a name.
    for path in ["/policies", "/roles"] {
        let r = host.post(path, Some(ADMIN_TOKEN), &json!({"description": "x"}));
        assert_refused(path, &r, 400, "INVALID_PAYLOAD");
    }
}

#[test]
fn members_read_what_they_may_and_write_nothing() {
    let host = svc();
    host.user(Some("Viewer"), "access-member");
    let member = Some("access-member");
    let viewer_role = host.id_by_name("platform_roles", "Viewer");
    let viewer = host.id_by_name("platform_policies", "Viewer");

    for (method, path, body) in [
        ("POST", "/roles".to_string(), json!({"name": "Mine"})),
        (
            "POST",
            "/policies".to_string(),
            json!({"name": "Mine", "admin_access": true}),
        ),
        (
            "POST",
            "/permissions".to_string(),
            json!({"policy": viewer, "collection": "achievements", "action": "read"}),
        ),
        (
            "PATCH",
            format!("/policies/{viewer}"),
            json!({"admin_access": true}),
        ),
        (
            "PATCH",
            format!("/roles/{viewer_role}"),
            json!({"name": "Mine"}),
        ),
        ("DELETE", "/permissions".to_string(), json!({"query": {}})),
    ] {
        let r = host.request(method, &path, member, Some(body.to_string().as_bytes()));
        assert_refused(&format!("{method} {path}"), &r, 403, "FORBIDDEN");
    }

    // Their own role and the policies that apply to them, nothing else.
    let roles = host.get("/roles?fields=id,name", member).data_list();
    assert_eq!(roles, vec![json!({"id": viewer_role, "name": "Viewer"})]);
    let mine = host.get("/roles/me?fields=name", member).data_list();
    assert_eq!(mine, vec![json!({"name": "Viewer"})]);
    let policies = host.get("/policies?fields=name", member).data_list();
    assert_eq!(policies, vec![json!({"name": "Viewer"})]);
    assert_refused(
        "permissions",
        &host.get("/permissions", member),
        403,
        "FORBIDDEN",
    );

    // Their effective permissions, in Directus's shape.
    let access = data(&host.get("/permissions/me", member));
    assert_eq!(access["recordings"]["read"]["access"], "partial");
    assert_eq!(access["recordings"]["read"]["fields"], json!(["*"]));
    assert_eq!(
        access["recordings"]["create"]["presets"],
        json!({"user_created": "$CURRENT_USER"})
    );
    assert_eq!(access["recordings"]["share"], json!({"access": "none"}));
    assert!(access.get("achievements").is_none(), "{access}");
    let all = data(&host.get("/permissions/me", Some(ADMIN_TOKEN)));
    assert_eq!(
        all["achievements"]["delete"],
        json!({"access": "full", "fields": ["*"]})
    );
    assert_refused(
        "anonymous",
        &host.get("/permissions/me", None),
        403,
        "FORBIDDEN",
    );

    assert_eq!(
        data(&host.get("/policies/me/globals", member)),
        json!({"app_access": false, "admin_access": false, "enforce_tfa": false})
    );
    assert_eq!(
        data(&host.get("/policies/me/globals", Some(ADMIN_TOKEN))),
        json!({"app_access": true, "admin_access": true, "enforce_tfa": false})
    );
    assert_eq!(
        data(&host.get("/policies/me/globals", None)),
        json!({"app_access": false})
    );
}

#[test]
fn a_parent_roles_policies_apply_to_its_children() {
    let host = svc();
    let viewer_role = host.id_by_name("platform_roles", "Viewer");
    let child = data(&host.post(
        "/roles",
        Some(ADMIN_TOKEN),
        &json!({"name": "Junior viewers", "parent": viewer_role}),
    ));
    let user = host.user(None, "access-junior");
    assert_eq!(
        host.get("/items/recordings", Some("access-junior")).status,
        403
    );
    host.admin_patch("platform_users", &user, &json!({"role": id_of(&child)}));
    let r = host.get("/items/recordings", Some("access-junior"));
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn the_last_administrator_stays() {
    let host = svc();
    let admin = Some(ADMIN_TOKEN);
    let policy = host.id_by_name("platform_policies", "Administrator");
    let role = host.id_by_name("platform_roles", "Administrator");
    let last = |case: &str, r: &Resp| {
        assert_refused(case, r, 422, "UNPROCESSABLE_CONTENT");
        assert_eq!(
            r.error_message(),
            "Can't process content. Cannot remove the last admin user from the system.",
            "{case}"
        );
    };
    last(
        "admin access",
        &host.patch(
            &format!("/policies/{policy}"),
            admin,
            &json!({"admin_access": false}),
        ),
    );
    last(
        "policy",
        &host.delete(&format!("/policies/{policy}"), admin),
    );
    last("role", &host.delete(&format!("/roles/{role}"), admin));
    let access = host.admin_find(
        "platform_access",
        &json!({"_and": [{"role": {"_eq": role}}, {"policy": {"_eq": policy}}]}),
    );
    last(
        "access",
        &host.delete(
            &format!("/items/platform_access/{}", id_of(&access[0])),
            admin,
        ),
    );
    // Still an administrator.
    assert_eq!(host.get("/roles", admin).status, 200);

    // With a second administrator, the first may go.
    let second = host.user(Some("Administrator"), "access-second-admin");
    let first = host.admin_find(
        "platform_users",
        &json!({"id": {"_neq": second}, "role": {"_eq": role}}),
    );
    let r = host.patch(
        &format!("/users/{}", id_of(&first[0])),
        Some("access-second-admin"),
        &json!({"status": "suspended"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    last(
        "the second",
        &host.patch(
            &format!("/users/{second}"),
            Some("access-second-admin"),
            &json!({"role": null}),
        ),
    );
}

/// A user's email is one, on every path that writes users: Directus's
/// `FAILED_VALIDATION` naming the field, and nothing written; refused
/// values name their field in `extensions`, as Directus's errors do.
#[test]
fn a_users_email_must_be_an_email_and_errors_name_their_field() {
    let host = svc();
    const MESSAGE: &str =
        "Validation failed for field \"email\". Value has to be a valid email address.";
    let r = host.post(
        "/users",
        Some(ADMIN_TOKEN),
        &json!({"email": "not an email"}),
    );
    assert_refused("create by /users", &r, 400, "FAILED_VALIDATION");
    assert_eq!(r.error_message(), MESSAGE);
    // Where the value is, for a client to show the error at its field.
    let extensions = &r.json()["errors"][0]["extensions"];
    assert_eq!(
        (&extensions["field"], &extensions["type"]),
        (&json!("email"), &json!("email")),
        "{}",
        r.body
    );
    let r = host.post(
        "/items/platform_users",
        Some(ADMIN_TOKEN),
        &json!({"email": "nobody@"}),
    );
    assert_refused("create by /items", &r, 400, "FAILED_VALIDATION");
    let user = host.admin_create("platform_users", &json!({"email": "someone@site.local"}));
    let path = format!("/users/{}", id_of(&user));
    let r = host.patch(
        &path,
        Some(ADMIN_TOKEN),
        &json!({"email": "someone at site"}),
    );
    assert_refused("update by /users", &r, 400, "FAILED_VALIDATION");
    let r = host.get(&path, Some(ADMIN_TOKEN));
    assert_eq!(data(&r)["email"], "someone@site.local", "nothing written");
    let r = host.patch(
        &path,
        Some(ADMIN_TOKEN),
        &json!({"email": "someone@else.example"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // A taken email names its collection and field too.
    let r = host.post(
        "/users",
        Some(ADMIN_TOKEN),
        &json!({"email": "someone@else.example"}),
    );
    assert_refused("a taken email", &r, 400, "RECORD_NOT_UNIQUE");
    let extensions = &r.json()["errors"][0]["extensions"];
    assert_eq!(
        (&extensions["collection"], &extensions["field"]),
        (&json!("platform_users"), &json!("email")),
        "{}",
        r.body
    );
}
