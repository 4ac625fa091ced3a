//! `/items/:collection[/:id]`: the platform's REST API over the items
//! service, under the caller's permissions.

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::as_caller::AsCaller;
use super::{read_body, AppState, HttpError};
use crate::items::{ItemsError, Session, Who};
use crate::platform::Platform;
use crate::query::{ListParam, WireQuery};

/// The REST API's page size when a request gives no `limit` (`-1`: all).
pub(super) const DEFAULT_LIMIT: u64 = 100;

/// The path parameters of an items route; a path that does not decode (say
/// `%FF`, not UTF-8) is answered in the items API's JSON shape, not with
/// the router's plain text.
pub struct ItemPath<T>(pub T);

impl<S, T> axum::extract::FromRequestParts<S> for ItemPath<T>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned + Send,
{
    type Rejection = HttpError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, HttpError> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(ItemPath(value)),
            Err(e) => Err(HttpError::InvalidPayload(format!(
                "Invalid path: {}",
                e.body_text()
            ))),
        }
    }
}

fn bad_query(message: impl Into<String>) -> HttpError {
    HttpError::Items(ItemsError::InvalidQuery(message.into()))
}

fn int_param(name: &str, value: &str) -> Result<i64, HttpError> {
    value
        .trim()
        .parse::<i64>()
        .map_err(|_| bad_query(format!("\"{name}\" must be an integer")))
}

/// Reads the query language from query-string parameters.
pub fn parse_query_string(query: Option<&str>) -> Result<WireQuery, HttpError> {
    let mut q = WireQuery::default();
    let mut aggregate = Map::new();
    let mut bracketed_filter = Map::new();
    let mut lists: [(&str, Vec<String>); 3] = [
        ("sort", Vec::new()),
        ("fields", Vec::new()),
        ("groupBy", Vec::new()),
    ];
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        // Directus's bracket forms (what `qs` writes): `groupBy[]=a&groupBy[]=b`,
        // and below `filter[title][_eq]=x`.
        let listed = key
            .strip_suffix("[]")
            .and_then(|name| lists.iter_mut().find(|(list, _)| *list == name));
        if let Some((_, items)) = listed {
            items.push(value.into_owned());
            continue;
        }
        match key.as_ref() {
            k if k.starts_with("filter[") => {
                let path = bracket_path(&k["filter".len()..])
                    .ok_or_else(|| bad_query(format!("\"{k}\" is not a filter path")))?;
                insert_at(&mut bracketed_filter, &path, value.into_owned()).map_err(|()| {
                    bad_query(format!("\"{k}\" conflicts with another filter parameter"))
                })?;
            }
            "filter" => {
                q.filter = Some(
                    serde_json::from_str(&value)
                        .map_err(|_| bad_query("\"filter\" must be a JSON object"))?,
                )
            }
            "search" => q.search = Some(value.into_owned()),
            "sort" => q.sort = Some(ListParam::Text(value.into_owned())),
            "fields" => q.fields = Some(ListParam::Text(value.into_owned())),
            "groupBy" => q.group_by = Some(ListParam::Text(value.into_owned())),
            "limit" => q.limit = Some(int_param("limit", &value)?),
            "offset" => q.offset = Some(int_param("offset", &value)?),
            "page" => q.page = Some(int_param("page", &value)?),
            "aggregate" => {
                let parsed: Value = serde_json::from_str(&value)
                    .map_err(|_| bad_query("\"aggregate\" must be a JSON object"))?;
                match parsed {
                    Value::Object(m) => aggregate.extend(m),
                    _ => return Err(bad_query("\"aggregate\" must be a JSON object")),
                }
            }
            k if k.starts_with("aggregate[") && k.ends_with(']') => {
                let function = &k["aggregate[".len()..k.len() - 1];
                aggregate.insert(function.to_string(), Value::String(value.into_owned()));
            }
            _ => {}
        }
    }
    if !aggregate.is_empty() {
        q.aggregate = Some(aggregate);
    }
    if !bracketed_filter.is_empty() {
        let bracketed = Value::Object(bracketed_filter);
        q.filter = Some(match q.filter.take() {
            None => bracketed,
            Some(given) => json!({ "_and": [given, bracketed] }),
        });
    }
    for (name, items) in lists {
        if items.is_empty() {
            continue;
        }
        let slot = match name {
            "sort" => &mut q.sort,
            "fields" => &mut q.fields,
            _ => &mut q.group_by,
        };
        let mut all: Vec<String> = match slot.take() {
            Some(given) => given.items(),
            None => Vec::new(),
        };
        all.extend(items);
        *slot = Some(ListParam::List(all));
    }
    Ok(q)
}

/// `[a][b][_eq]` → `a`, `b`, `_eq`; `None` unless every segment is a
/// bracketed name (an empty last one, `[]`, appends to a list).
fn bracket_path(mut rest: &str) -> Option<Vec<String>> {
    let mut path = Vec::new();
    while !rest.is_empty() {
        let inner = rest.strip_prefix('[')?;
        let end = inner.find(']')?;
        path.push(inner[..end].to_string());
        rest = &inner[end + 1..];
    }
    let named = path.iter().rev().skip(1).all(|s| !s.is_empty());
    (named && path.first().is_some_and(|s| !s.is_empty())).then_some(path)
}

/// Puts `value` at `path` in `map` (a trailing `""` appends to a list);
/// `Err` when the path runs into a value already set.
fn insert_at(map: &mut Map<String, Value>, path: &[String], value: String) -> Result<(), ()> {
    let (first, rest) = path.split_first().ok_or(())?;
    match rest {
        [] => match map.insert(first.clone(), Value::String(value)) {
            None => Ok(()),
            Some(_) => Err(()),
        },
        [last] if last.is_empty() => {
            match map
                .entry(first.clone())
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                Value::Array(items) => {
                    items.push(Value::String(value));
                    Ok(())
                }
                _ => Err(()),
            }
        }
        _ => match map
            .entry(first.clone())
            .or_insert_with(|| Value::Object(Map::new()))
        {
            Value::Object(inner) => insert_at(inner, rest, value),
            _ => Err(()),
        },
    }
}

pub(super) fn data(value: impl serde::Serialize) -> Response {
    Json(json!({ "data": value })).into_response()
}

/// `{"data": …}` around JSON text the items service wrote (records are
/// not built into trees on their way out).
pub(super) fn data_text(json: &[u8]) -> Response {
    let mut body = Vec::with_capacity(json.len() + 9);
    body.extend_from_slice(b"{\"data\":");
    body.extend_from_slice(json);
    body.push(b'}');
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

pub async fn read_many(
    ItemPath(collection): ItemPath<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    read_many_in(collection, call).await
}

/// `GET` of a collection's items (also the host's own routes over one
/// collection, such as `/folders`).
pub(super) async fn read_many_in(
    collection: impl Into<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    call.run(move |c| {
        let q = c.query()?;
        let mut session = Session::Auto;
        if q.aggregate.is_some() {
            Ok(data(c.platform.aggregate(
                &mut session,
                &c.who,
                &collection,
                &q,
            )?))
        } else {
            Ok(data_text(&c.platform.read_by_query_json(
                &mut session,
                &c.who,
                &collection,
                &q,
                Some(DEFAULT_LIMIT),
            )?))
        }
    })
    .await
}

/// A missing item reads as forbidden for non-admins, so that ids of other
/// users' items cannot be probed.
pub(super) fn missing(who: &Who, id: &str) -> HttpError {
    if who.is_admin() {
        HttpError::Items(ItemsError::NotFound(format!("Item \"{id}\" not found")))
    } else {
        HttpError::Items(ItemsError::forbidden())
    }
}

pub async fn read_one(
    ItemPath((collection, id)): ItemPath<(String, String)>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    read_one_in(collection, id, call).await
}

/// `GET` of one item.
pub(super) async fn read_one_in(
    collection: impl Into<String>,
    id: String,
    call: AsCaller,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    call.run(move |c| {
        match c
            .platform
            .read_one_json(&mut Session::Auto, &c.who, &collection, &id, &c.query()?)?
        {
            Some(record) => Ok(data_text(&record)),
            None => Err(missing(&c.who, &id)),
        }
    })
    .await
}

/// Reads back what a write produced; a caller who may not read it gets 204.
pub(super) fn read_back(
    platform: &Platform,
    who: &Who,
    collection: &str,
    keys: &[String],
    q: &WireQuery,
    many: bool,
) -> Result<Response, HttpError> {
    let mut records = Vec::with_capacity(keys.len());
    for key in keys {
        match platform.read_one_json(&mut Session::Auto, who, collection, key, q) {
            Ok(Some(r)) => records.push(r),
            Ok(None) | Err(ItemsError::Forbidden(_)) => {
                return Ok(StatusCode::NO_CONTENT.into_response())
            }
            Err(e) => return Err(e.into()),
        }
    }
    if many {
        Ok(data_text(&json_array(&records)))
    } else {
        Ok(data_text(
            records.first().map_or(b"null".as_slice(), Vec::as_slice),
        ))
    }
}

/// JSON texts as one array.
fn json_array(texts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(texts.iter().map(|t| t.len() + 1).sum::<usize>() + 2);
    out.push(b'[');
    for (i, text) in texts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(text);
    }
    out.push(b']');
    out
}

/// A write's body as JSON text, checked to be one JSON value without
/// building it into a tree (a JSON field's document stays text down to
/// the database).
pub(super) fn json_body_text(bytes: &[u8]) -> Result<&str, HttpError> {
    let invalid = || HttpError::InvalidPayload("Invalid JSON body".into());
    let text = std::str::from_utf8(bytes).map_err(|_| invalid())?;
    serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|_| invalid())?;
    Ok(text.trim())
}

pub async fn create(
    State(state): State<AppState>,
    ItemPath(collection): ItemPath<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    create_in(state, collection, call, body).await
}

/// `POST` of one item or an array of them.
pub(super) async fn create_in(
    state: AppState,
    collection: impl Into<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    let bytes = read_body(body, call.headers(), &state.limits).await?;
    let max_batch = state.limits.max_batch_mutation;
    call.run(move |c| {
        let payload = json_body_text(&bytes)?;
        let q = c.query()?;
        let many = payload.starts_with('[');
        let keys = if many {
            c.platform.create_many_json_at_most(
                &mut Session::Auto,
                &c.who,
                &collection,
                payload,
                max_batch,
            )?
        } else {
            vec![c
                .platform
                .create_one_json(&mut Session::Auto, &c.who, &collection, payload)?]
        };
        read_back(c.platform, &c.who, &collection, &keys, &q, many)
    })
    .await
}

pub async fn update(
    State(state): State<AppState>,
    ItemPath((collection, id)): ItemPath<(String, String)>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    update_in(state, collection, id, call, body).await
}

/// `PATCH` of one item.
pub(super) async fn update_in(
    state: AppState,
    collection: impl Into<String>,
    id: String,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    let bytes = read_body(body, call.headers(), &state.limits).await?;
    call.run(move |c| {
        let payload = json_body_text(&bytes)?;
        let q = c.query()?;
        let key =
            c.platform
                .update_one_json(&mut Session::Auto, &c.who, &collection, &id, payload)?;
        read_back(c.platform, &c.who, &collection, &[key], &q, false)
    })
    .await
}

pub async fn update_many(
    State(state): State<AppState>,
    ItemPath(collection): ItemPath<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    update_many_in(state, collection, call, body).await
}

/// `PATCH` of many items: by keys, by query, or a batch (see
/// `Platform::update_many_json`); answers them read back.
pub(super) async fn update_many_in(
    state: AppState,
    collection: impl Into<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    let bytes = read_body(body, call.headers(), &state.limits).await?;
    let max_batch = state.limits.max_batch_mutation;
    call.run(move |c| {
        let payload = json_body_text(&bytes)?;
        let q = c.query()?;
        let keys =
            c.platform
                .update_many_json(&c.who, &collection, payload, max_batch, DEFAULT_LIMIT)?;
        read_back(c.platform, &c.who, &collection, &keys, &q, true)
    })
    .await
}

pub async fn delete_many(
    State(state): State<AppState>,
    ItemPath(collection): ItemPath<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    delete_many_in(state, collection, call, body).await
}

/// `DELETE` of many items: a list of keys, `{"keys"}` or `{"query"}`.
pub(super) async fn delete_many_in(
    state: AppState,
    collection: impl Into<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    let bytes = read_body(body, call.headers(), &state.limits).await?;
    let max_batch = state.limits.max_batch_mutation;
    call.run(move |c| {
        let payload = json_body_text(&bytes)?;
        c.platform
            .delete_many(&c.who, &collection, payload, max_batch, DEFAULT_LIMIT)?;
        Ok(StatusCode::NO_CONTENT.into_response())
    })
    .await
}

pub async fn delete(
    ItemPath((collection, id)): ItemPath<(String, String)>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    delete_in(collection, id, call).await
}

/// `DELETE` of one item.
pub(super) async fn delete_in(
    collection: impl Into<String>,
    id: String,
    call: AsCaller,
) -> Result<Response, HttpError> {
    let collection = collection.into();
    call.run(move |c| {
        c.platform
            .delete_one(&mut Session::Auto, &c.who, &collection, &id)?;
        Ok(StatusCode::NO_CONTENT.into_response())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bracket_parameters_read_as_directus_reads_them() {
        let q = parse_query_string(Some(
            "filter[title][_eq]=A%20b&filter[n][_in][]=1&filter[n][_in][]=2&groupBy[]=a&groupBy[]=b&sort[]=-x",
        ))
        .expect("parsed");
        assert_eq!(
            q.filter,
            Some(json!({"title": {"_eq": "A b"}, "n": {"_in": ["1", "2"]}}))
        );
        assert_eq!(
            q.group_by.map(|g| g.items()),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(q.sort.map(|s| s.items()), Some(vec!["-x".into()]));
        let both = parse_query_string(Some(
            "filter=%7B%22a%22%3A%7B%22_eq%22%3A1%7D%7D&filter[b][_eq]=2",
        ))
        .expect("parsed");
        assert_eq!(
            both.filter,
            Some(json!({"_and": [{"a": {"_eq": 1}}, {"b": {"_eq": "2"}}]}))
        );
    }

    #[test]
    fn malformed_bracket_filters_are_refused_not_ignored() {
        for bad in [
            "filter[title=1",
            "filter[]=1",
            "filter[a][][_eq]=1",
            "filter[a][_eq]=1&filter[a][_eq][x]=2",
        ] {
            assert!(parse_query_string(Some(bad)).is_err(), "{bad}");
        }
    }
}
