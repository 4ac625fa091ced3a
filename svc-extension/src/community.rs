//! `GET /community-recordings`: published, public recordings, newest first
//! (then by id, so that pages follow one order on every backend), with the
//! owner reduced to `{id, first_name, last_name, avatar}`. A deep page starts
//! where [`community_positions`] says, not after a walk of every recording
//! above it (a page read while recordings change may then start a row early
//! or late, as two pages read one after the other may). The recordings pass
//! through as the host's text, their owners expanded in the same read (read
//! apart and written in where the host refuses that).

use std::borrow::Cow;
use std::collections::HashMap;

use host_sdk::raw::{string_of, JsonOut, RawRecord};
use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};
use serde_json::value::RawValue;

use crate::community_positions::{self, PageStart, Part, DEEP_OFFSET};
use crate::failure::Failure;
use crate::params;
use crate::records::{by_id_text, raw_ids_of, raw_list, refused_as_one_read};

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

/// How a page's owners are read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owners {
    /// In the read of the recordings: the host writes each owner with the
    /// fields shown, and the host's text is the answer's.
    Expanded,
    /// Apart, by id, and written into each recording: the host refused a
    /// read that expands them ([`refused_as_one_read`]).
    Apart,
}

/// The text of one part of the list: `take` recordings after `skip`,
/// their owners as `owners` says.
fn read_part(
    items: &Items<'_>,
    part: Part<'_>,
    skip: u64,
    take: u64,
    owners: Owners,
) -> Result<String, ItemsError> {
    let fields: Vec<String> = match owners {
        Owners::Apart => FIELDS.iter().map(|f| f.to_string()).collect(),
        Owners::Expanded => FIELDS
            .iter()
            .filter(|f| **f != "user_created")
            .map(|f| f.to_string())
            .chain(OWNER_FIELDS.iter().map(|f| format!("user_created.{f}")))
            .collect(),
    };
    items.read_by_query_raw(
        "recordings",
        &Query::new()
            .filter(part.filter())
            .fields(&fields)
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
    let Some(start) = &start else {
        return Ok(JsonOut::of_text("{\"data\":[]}"));
    };
    let (part, skip) = start.first();
    let (first, owners) = match read_part(items, part, skip, limit, Owners::Expanded) {
        Err(e) if refused_as_one_read(&e) => (
            read_part(items, part, skip, limit, Owners::Apart)?,
            Owners::Apart,
        ),
        read => (read?, Owners::Expanded),
    };
    let decode = |e| ItemsError::decode("recordings", e);
    let first_part: Vec<&RawValue> = serde_json::from_str(&first).map_err(decode)?;
    let top_up = match start.top_up(first_part.len() as u64, limit) {
        Some((part, skip, take)) => Some(read_part(items, part, skip, take, owners)?),
        None => None,
    };
    if owners == Owners::Apart {
        let texts: Vec<&String> = [Some(&first), top_up.as_ref()]
            .into_iter()
            .flatten()
            .collect();
        return write_with_owners(items, &texts);
    }
    let top_up_part: Vec<&RawValue> = match &top_up {
        Some(text) => serde_json::from_str(text).map_err(decode)?,
        None => Vec::new(),
    };
    // The host's text, each part's recordings one after the other.
    let size = first.len() + top_up.as_ref().map_or(0, String::len);
    let mut out = JsonOut::with_capacity(16 + size);
    out.raw("{\"data\":");
    out.array(first_part.iter().chain(&top_up_part), |out, recording| {
        out.raw(recording.get())
    });
    out.byte(b'}');
    Ok(out)
}

/// The page of the recordings of `texts` (read without their owners),
/// each owner read apart and written in.
fn write_with_owners(items: &Items<'_>, texts: &[&String]) -> Result<JsonOut, ItemsError> {
    let mut recordings = Vec::new();
    for text in texts {
        recordings.extend(raw_list("recordings", text)?);
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
