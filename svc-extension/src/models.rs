//! `GET /models` and `GET /models/:slug`: users whose role is named
//! `Model`, with `photos` and `banner` expanded.

use std::collections::HashMap;

use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};
use serde_json::{json, Value};

use crate::failure::Failure;
use crate::params;
use crate::records::{by_id, expand_file, ids_of, public_user, str_field};

const LIST: Failure = Failure::new("Failed to fetch models");
const ONE: Failure = Failure::new("Failed to fetch model");

/// Ids of the roles named `Model`.
fn model_roles(items: &Items<'_>) -> Result<Vec<String>, ItemsError> {
    let roles = items.read_by_query(
        "platform_roles",
        &Query::new()
            .filter(json!({"name": {"_eq": "Model"}}))
            .fields(&["id"]),
    )?;
    Ok(ids_of(&roles, "id"))
}

/// Model users matching `extra` (an additional filter), newest id first.
pub fn find_models(
    items: &Items<'_>,
    extra: Option<Value>,
    limit: Option<u64>,
) -> Result<Vec<Value>, ItemsError> {
    let roles = model_roles(items)?;
    if roles.is_empty() {
        return Ok(Vec::new());
    }
    let mut filter = vec![json!({"role": {"_in": roles}})];
    filter.extend(extra);
    let mut query = Query::new()
        .filter(json!({ "_and": filter }))
        .sort(&["-id"]);
    if let Some(n) = limit {
        query = query.limit(n as i64);
    }
    let users = items.read_by_query("platform_users", &query)?;
    expand_models(items, users)
}

/// Adds `photos` (`[{platform_files_id: file}]` by `sort`, then id) and
/// replaces `banner` by its file record; three calls for any number of users.
pub fn expand_models(items: &Items<'_>, users: Vec<Value>) -> Result<Vec<Value>, ItemsError> {
    if users.is_empty() {
        return Ok(users);
    }
    let user_ids = ids_of(&users, "id");
    let photos = items.read_by_query(
        "model_photos",
        &Query::new()
            .filter(json!({"platform_users_id": {"_in": user_ids}}))
            .sort(&["sort", "id"]),
    )?;
    let mut file_ids = ids_of(&photos, "platform_files_id");
    file_ids.extend(ids_of(&users, "banner"));
    let files = by_id(items, "platform_files", &file_ids)?;
    let mut photos_by_user: HashMap<&str, Vec<Value>> = HashMap::new();
    for photo in &photos {
        if let Some(user) = str_field(photo, "platform_users_id") {
            let file = str_field(photo, "platform_files_id")
                .and_then(|f| files.get(f).cloned())
                .unwrap_or(Value::Null);
            photos_by_user
                .entry(user)
                .or_default()
                .push(json!({ "platform_files_id": file }));
        }
    }
    Ok(users
        .into_iter()
        .map(|user| {
            let id = str_field(&user, "id").unwrap_or_default().to_string();
            let mut user = public_user(user);
            expand_file(&mut user, "banner", &files);
            if let Some(map) = user.as_object_mut() {
                let list = photos_by_user.get(id.as_str()).cloned().unwrap_or_default();
                map.insert("photos".into(), Value::Array(list));
            }
            user
        })
        .collect())
}

/// `GET /models`: `limit` caps the count; `featured` is accepted and ignored.
pub fn list(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let models = find_models(&ctx.as_admin(), None, params::limit(req)).map_err(LIST.of())?;
    Ok(Response::ok(&models))
}

/// `GET /models/:slug`: exact slug match, 404 `Model not found`.
pub fn one(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let slug = req.path_param("slug").unwrap_or_default();
    let found = find_models(
        &ctx.as_admin(),
        Some(json!({"slug": {"_eq": slug}})),
        Some(1),
    )
    .map_err(ONE.of())?;
    match found.into_iter().next() {
        Some(model) => Ok(Response::ok(&model)),
        None => Err(ApiError::not_found("Model not found")),
    }
}
