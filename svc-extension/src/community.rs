//! `GET /community-recordings`: published, public recordings, newest first
//! (then by id, so that pages follow one order on every backend), with the
//! owner reduced to `{id, first_name, last_name, avatar}`. A deep page starts
//! where [`community_positions`] says, not after a walk of every recording
//! above it (a page read while recordings change may then start a row early
//! or late, as two pages read one after the other may). The recordings pass
//! through as the host's text: only the owner is written anew.

use std::borrow::Cow;
use std::collections::HashMap;

use host_sdk::raw::{string_of, JsonOut, RawRecord};
use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};

use crate::community_positions::{self, PageStart, Part, DEEP_OFFSET};
use crate::failure::Failure;
use crate::params;
use crate::records::{by_id_text, raw_ids_of, raw_list};

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

/// The owner's fields shown on a community recording.
const OWNER_FIELDS: [&str; 4] = ["id", "first_name", "last_name", "avatar"];

/// The text of one part of the list: `take` recordings after `skip`.
fn read_part(
    items: &Items<'_>,
    part: Part<'_>,
    skip: u64,
    take: u64,
) -> Result<String, ItemsError> {
    items.read_by_query_raw(
        "recordings",
        &Query::new()
            .filter(part.filter())
            .fields(&FIELDS)
            .sort(part.sort())
            .limit(take.min(i64::MAX as u64) as i64)
            .offset(skip),
    )
}

/// Each owner's text as the list shows it, by id: one read.
fn owners_by_id(
    items: &Items<'_>,
    recordings: &[RawRecord<'_>],
) -> Result<HashMap<String, String>, ItemsError> {
    let ids = raw_ids_of(recordings, "user_created");
    let text = by_id_text(
        items,
        "platform_users",
        &ids,
        Query::new().fields(&OWNER_FIELDS),
    )?;
    Ok(raw_list("owners", &text)?
        .iter()
        .filter_map(|user| {
            let mut members: Vec<(&str, Cow<str>)> = OWNER_FIELDS
                .iter()
                .map(|f| (*f, Cow::Borrowed(user.get(f).map_or("null", |v| v.get()))))
                .collect();
            let mut out = JsonOut::with_capacity(user.written_len());
            out.object(&mut members);
            Some((user.str("id")?.into_owned(), out.into_string()))
        })
        .collect())
}

/// Writes the page of at most `limit` recordings at `offset` as
/// `{"data": [...]}`.
pub fn write_page(
    ctx: &Context<'_>,
    items: &Items<'_>,
    limit: u64,
    offset: u64,
) -> Result<JsonOut, ItemsError> {
    let start = if offset >= DEEP_OFFSET {
        community_positions::page_start(ctx, items, offset)?
    } else {
        Some(PageStart::shallow(offset))
    };
    let (first, top_up);
    let mut recordings = Vec::new();
    if let Some(start) = &start {
        let (part, skip) = start.first();
        first = read_part(items, part, skip, limit)?;
        recordings = raw_list("recordings", &first)?;
        if let Some((part, skip, take)) = start.top_up(recordings.len() as u64, limit) {
            top_up = read_part(items, part, skip, take)?;
            recordings.extend(raw_list("recordings", &top_up)?);
        }
    }
    let owners = owners_by_id(items, &recordings)?;
    let size: usize = recordings.iter().map(|r| r.written_len() + 96).sum();
    let mut out = JsonOut::with_capacity(16 + size);
    out.raw("{\"data\":");
    out.array(&recordings, |out, recording| {
        let mut members: Vec<(&str, Cow<str>)> = recording
            .members()
            .map(|(name, value)| match string_of(value) {
                Some(owner) if name == "user_created" => {
                    let shown = owners.get(owner.as_ref()).map_or("null", String::as_str);
                    (name, Cow::Borrowed(shown))
                }
                _ => (name, Cow::Borrowed(value.get())),
            })
            .collect();
        out.object(&mut members);
    });
    out.byte(b'}');
    Ok(out)
}

/// `limit` (default 50) and `offset` (default 0); `{data: [...]}`.
pub fn list(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let limit = params::limit(req).unwrap_or(50);
    let offset = params::offset(req).unwrap_or(0);
    let page = write_page(ctx, &ctx.as_admin(), limit, offset).map_err(LIST.of())?;
    Ok(Response::ok_raw(page))
}
