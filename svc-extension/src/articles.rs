//! `GET /articles`: featured articles published at or before now, newest
//! first, with `author` expanded.

use host_sdk::{ApiError, Context, Items, ItemsError, Query, Request, Response};
use serde_json::{json, Value};

use crate::failure::Failure;
use crate::params;
use crate::records::{ids_of, str_field, users_by_id};
use crate::upcoming;

const LIST: Failure = Failure::new("Failed to fetch articles");

pub fn find_articles(items: &Items<'_>, limit: Option<u64>) -> Result<Vec<Value>, ItemsError> {
    let mut query = Query::new()
        .filter(json!({"_and": [{"publish_date": {"_lte": "$NOW"}}, {"featured": {"_eq": true}}]}))
        .sort(&["-publish_date"]);
    if let Some(n) = limit {
        query = query.limit(n as i64);
    }
    let articles = items.read_by_query("articles", &query)?;
    let authors = users_by_id(items, &ids_of(&articles, "author"))?;
    Ok(articles
        .into_iter()
        .map(|mut article| {
            if let Some(id) = str_field(&article, "author").map(String::from) {
                article["author"] = authors.get(&id).cloned().unwrap_or(Value::Null);
            }
            article
        })
        .collect())
}

/// `GET /articles`: `limit`; `featured` is accepted and ignored.
pub fn list(req: &Request, ctx: &Context<'_>) -> Result<Response, ApiError> {
    let items = ctx.as_admin();
    let featured = Some(json!({"featured": {"_eq": true}}));
    upcoming::mark(ctx, &items, "articles", "publish_date", featured).map_err(LIST.of())?;
    let articles = find_articles(&items, params::limit(req)).map_err(LIST.of())?;
    Ok(Response::ok(&articles))
}
