//! `GET /articles`: featured articles published at or before now, newest
//! first, with `author` expanded.

use std::borrow::Cow;

use host_sdk::raw::JsonOut;
use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};
use serde_json::json;

use crate::failure::Failure;
use crate::params;
use crate::records::{
    private_user_fields_below, public_users_by_id, raw_ids_of, raw_list, refused_as_one_read,
};
use crate::upcoming;

const LIST: Failure = Failure::new("Failed to fetch articles");

/// Writes the featured articles published by now, newest first, with
/// `author` replaced by the public user record (null when the user is
/// gone): one read whose text is the answer, or, where the host refuses
/// that read ([`refused_as_one_read`]), the articles and then their
/// authors.
pub fn write_articles(
    items: &Items<'_>,
    limit: Option<u64>,
    out: &mut JsonOut,
) -> Result<(), ItemsError> {
    let mut query = Query::new()
        .filter(json!({"_and": [{"publish_date": {"_lte": "$NOW"}}, {"featured": {"_eq": true}}]}))
        .sort(&["-publish_date"]);
    if let Some(n) = limit {
        query = query.limit(n as i64);
    }
    let private = private_user_fields_below("author");
    let expanded = query.clone().fields(&["*", "author.*"]).without(&private);
    match items.read_by_query_raw("articles", &expanded) {
        Ok(text) => {
            out.raw(&text);
            Ok(())
        }
        Err(e) if refused_as_one_read(&e) => write_authors_apart(items, &query, out),
        Err(e) => Err(e),
    }
}

/// [`write_articles`] in two reads: the articles, then their authors.
fn write_authors_apart(
    items: &Items<'_>,
    query: &Query,
    out: &mut JsonOut,
) -> Result<(), ItemsError> {
    let articles_text = items.read_by_query_raw("articles", query)?;
    let articles = raw_list("articles", &articles_text)?;
    let authors = public_users_by_id(items, &raw_ids_of(&articles, "author"))?;
    out.array(&articles, |out, article| {
        let mut members: Vec<(&str, Cow<str>)> = article
            .members()
            .map(|(name, value)| {
                let author = (name == "author")
                    .then(|| article.str("author"))
                    .flatten()
                    .map(|id| authors.get(&id).unwrap_or("null"));
                (name, Cow::Borrowed(author.unwrap_or(value.get())))
            })
            .collect();
        out.object(&mut members);
    });
    Ok(())
}

/// `GET /articles`: `limit`; `featured` is accepted and ignored.
pub fn list(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let items = ctx.as_admin();
    let featured = Some(json!({"featured": {"_eq": true}}));
    upcoming::mark(ctx, &items, "articles", "publish_date", featured).map_err(LIST.of())?;
    let mut out = JsonOut::default();
    write_articles(&items, params::limit(req), &mut out).map_err(LIST.of())?;
    Ok(Response::ok_raw(out))
}
