//! `GET /community-recordings`: published, public recordings, newest first
//! (then by id, so that pages follow one order on every backend), with the
//! owner reduced to `{id, first_name, last_name, avatar}`. A deep page starts
//! where [`community_positions`] says, not after a walk of every recording
//! above it (a page read while recordings change may then start a row early
//! or late, as two pages read one after the other may).

use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};
use serde_json::{json, Value};

use crate::community_positions::{self, listed, DEEP_OFFSET};
use crate::failure::Failure;
use crate::params;
use crate::records::{by_id, ids_of, str_field};

const LIST: Failure = Failure::new("Failed to list community recordings");

const FIELDS: [&str; 8] = [
    "id",
    "title",
    "description",
    "slug",
    "duration",
    "tags",
    "date_created",
    "user_created",
];

pub fn find(
    ctx: &Context<'_>,
    items: &Items<'_>,
    limit: u64,
    offset: u64,
) -> Result<Vec<Value>, ItemsError> {
    let (mut filter, mut skip) = (listed(), offset);
    if offset >= DEEP_OFFSET {
        let Some((at_or_below, inside)) = community_positions::page_start(ctx, items, offset)?
        else {
            return Ok(Vec::new());
        };
        if let Some(bound) = at_or_below {
            filter = json!({"_and": [filter, bound]});
        }
        skip = inside;
    }
    let recordings = items.read_by_query(
        "recordings",
        &Query::new()
            .filter(filter)
            .fields(&FIELDS)
            .sort(&["-date_created", "-id"])
            .limit(limit.min(i64::MAX as u64) as i64)
            .offset(skip),
    )?;
    let owners = by_id(
        items,
        "platform_users",
        &ids_of(&recordings, "user_created"),
    )?;
    Ok(recordings
        .into_iter()
        .map(|mut r| {
            if let Some(id) = str_field(&r, "user_created").map(String::from) {
                r["user_created"] = match owners.get(&id) {
                    Some(u) => json!({
                        "id": u.get("id"), "first_name": u.get("first_name"),
                        "last_name": u.get("last_name"), "avatar": u.get("avatar"),
                    }),
                    None => Value::Null,
                };
            }
            r
        })
        .collect())
}

/// `limit` (default 50) and `offset` (default 0); `{data: [...]}`.
pub fn list(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let limit = params::limit(req).unwrap_or(50);
    let offset = params::offset(req).unwrap_or(0);
    let data = find(ctx, &ctx.as_admin(), limit, offset).map_err(LIST.of())?;
    Ok(Response::ok(&json!({ "data": data })))
}
