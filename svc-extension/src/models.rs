//! `GET /models` and `GET /models/:slug`: users whose role is named
//! `Model`, with `photos` and `banner` expanded. The users and files pass
//! through as the host's text: only the expanded members are written anew.

use std::borrow::Cow;
use std::collections::HashMap;

use host_sdk::raw::{string_of, JsonOut, RawRecord};
use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::failure::Failure;
use crate::params;
use crate::records::{by_id_text, ids_of, raw_ids_of, raw_list, PRIVATE_USER_FIELDS};

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

/// The text of the model users matching `extra` (an additional filter),
/// newest id first; `None` when no role is named `Model`.
fn find_models_text(
    items: &Items<'_>,
    extra: Option<Value>,
    limit: Option<u64>,
) -> Result<Option<String>, ItemsError> {
    let roles = model_roles(items)?;
    if roles.is_empty() {
        return Ok(None);
    }
    let mut filter = vec![json!({"role": {"_in": roles}})];
    filter.extend(extra);
    let mut query = Query::new()
        .filter(json!({ "_and": filter }))
        .without(&PRIVATE_USER_FIELDS)
        .sort(&["-id"]);
    if let Some(n) = limit {
        query = query.limit(n as i64);
    }
    items.read_by_query_raw("platform_users", &query).map(Some)
}

/// What a model's record is written with: its banner's file record and
/// its photos, each as text.
struct Expansions {
    /// File id → the file record's text.
    files: HashMap<String, String>,
    /// User id → `[{"platform_files_id": file}, ...]` by `sort`, then id.
    photos: HashMap<String, String>,
}

impl Expansions {
    /// The photos and files of `users`: two calls for any number of users.
    fn read(items: &Items<'_>, users: &[RawRecord<'_>]) -> Result<Self, ItemsError> {
        let photos_text = match raw_ids_of(users, "id") {
            ids if ids.is_empty() => "[]".to_string(),
            ids => items.read_by_query_raw(
                "model_photos",
                &Query::new()
                    .filter(json!({"platform_users_id": {"_in": ids}}))
                    .sort(&["sort", "id"]),
            )?,
        };
        let photos = raw_list("photos", &photos_text)?;
        let mut file_ids = raw_ids_of(&photos, "platform_files_id");
        file_ids.extend(raw_ids_of(users, "banner"));
        let files_text = by_id_text(items, "platform_files", &file_ids, Query::new())?;
        let listed: Vec<&RawValue> =
            serde_json::from_str(&files_text).map_err(|e| ItemsError::decode("files", e))?;
        let mut files = HashMap::new();
        for file in listed {
            let record = RawRecord::parse(file.get()).map_err(|e| ItemsError::decode("file", e))?;
            if let Some(id) = record.str("id") {
                files.insert(id.into_owned(), file.get().to_string());
            }
        }
        let mut photos_of: HashMap<String, JsonOut> = HashMap::new();
        for photo in &photos {
            if let Some(user) = photo.str("platform_users_id") {
                let list = photos_of.entry(user.into_owned()).or_default();
                list.byte(if list.is_empty() { b'[' } else { b',' });
                list.raw("{\"platform_files_id\":");
                list.raw(file_of(&files, photo.str("platform_files_id")));
                list.byte(b'}');
            }
        }
        let photos = photos_of
            .into_iter()
            .map(|(user, mut list)| {
                list.byte(b']');
                (user, list.into_string())
            })
            .collect();
        Ok(Self { files, photos })
    }

    /// Writes `user` (read without its private fields) with `photos` and
    /// its `banner` replaced by its file record (null when the file is
    /// gone).
    fn write(&self, out: &mut JsonOut, user: &RawRecord<'_>) {
        let mut members: Vec<(&str, Cow<str>)> = user
            .members()
            .filter(|(name, _)| *name != "photos")
            .map(|(name, value)| match string_of(value) {
                Some(banner) if name == "banner" => {
                    (name, Cow::Borrowed(file_of(&self.files, Some(banner))))
                }
                _ => (name, Cow::Borrowed(value.get())),
            })
            .collect();
        let photos = user.str("id").and_then(|id| self.photos.get(id.as_ref()));
        members.push(("photos", Cow::Borrowed(photos.map_or("[]", String::as_str))));
        out.object(&mut members);
    }
}

/// The text of the file with this id: null when there is none.
fn file_of<'f>(files: &'f HashMap<String, String>, id: Option<Cow<str>>) -> &'f str {
    id.and_then(|id| files.get(id.as_ref()))
        .map_or("null", String::as_str)
}

/// `GET /models`: `limit` caps the count; `featured` is accepted and ignored.
pub fn list(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let items = ctx.as_admin();
    let text = find_models_text(&items, None, params::limit(req)).map_err(LIST.of())?;
    let text = text.as_deref().unwrap_or("[]");
    let users = raw_list("models", text).map_err(LIST.of())?;
    let expansions = Expansions::read(&items, &users).map_err(LIST.of())?;
    let mut out = JsonOut::with_capacity(text.len() * 2);
    out.array(&users, |out, user| expansions.write(out, user));
    Ok(Response::ok_raw(out))
}

/// `GET /models/:slug`: exact slug match, 404 `Model not found`.
pub fn one(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let items = ctx.as_admin();
    let slug = req.path_param("slug").unwrap_or_default();
    let text = find_models_text(&items, Some(json!({"slug": {"_eq": slug}})), Some(1))
        .map_err(ONE.of())?;
    let users = raw_list("model", text.as_deref().unwrap_or("[]")).map_err(ONE.of())?;
    let Some(model) = users.first() else {
        return Err(ApiError::not_found("Model not found"));
    };
    let expansions = Expansions::read(&items, &users[..1]).map_err(ONE.of())?;
    let mut out = JsonOut::default();
    expansions.write(&mut out, model);
    Ok(Response::ok_raw(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Its private fields are left out by the read (`without`), which the
    /// conformance tests check on both databases.
    #[test]
    fn a_model_is_written_with_its_files() {
        let files = HashMap::from([(
            "f1".to_string(),
            r#"{"id":"f1","type":"image/png"}"#.to_string(),
        )]);
        let photos = HashMap::from([(
            "u1".to_string(),
            r#"[{"platform_files_id":null}]"#.to_string(),
        )]);
        let expansions = Expansions { files, photos };
        let write = |text: &str| {
            let mut out = JsonOut::default();
            expansions.write(&mut out, &RawRecord::parse(text).expect("a record"));
            out.into_string()
        };
        assert_eq!(
            write(r#"{"slug":"a","id":"u1","banner":"f1","photos":[1]}"#),
            r#"{"banner":{"id":"f1","type":"image/png"},"id":"u1","photos":[{"platform_files_id":null}],"slug":"a"}"#
        );
        assert_eq!(
            write(r#"{"id":"u2","banner":"gone"}"#),
            r#"{"banner":null,"id":"u2","photos":[]}"#
        );
        assert_eq!(
            write(r#"{"id":"u3","banner":null}"#),
            r#"{"banner":null,"id":"u3","photos":[]}"#
        );
    }
}
