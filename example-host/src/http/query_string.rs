//! The query language from a URL's query string, as Directus and the
//! SDK write it (`filter` as JSON or `filter[a][_eq]=x`, `fields=a,b` or
//! `fields[]=a`, `aggregate[count]=*`, `search`, …): one reader for every
//! route that takes the items query (`AsCaller::query` and the routes over
//! one collection).

use serde_json::{json, Map, Value};

use super::HttpError;
use crate::platform::PlatformError;
use platform_store::query::{ListParam, WireQuery};

fn bad_query(message: impl Into<String>) -> HttpError {
    HttpError::Items(PlatformError::InvalidQuery(message.into()))
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
