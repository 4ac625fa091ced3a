//! `/assets/:id[/:filename]`: a file's bytes, streamed from storage, to
//! whoever may read its record (403 otherwise, and for a file that does
//! not exist, as Directus answers), with validators (`ETag`,
//! `Last-Modified`, 304), `Cache-Control` from `ASSETS_CACHE_TTL`, single
//! byte ranges (206, 416) and `?download`. Every asset carries the
//! assets' `Content-Security-Policy` and `X-Content-Type-Options: nosniff`;
//! a type a browser would run (HTML, SVG, anything not known to be inert)
//! is an attachment, never a page on the platform's origin.

use axum::extract::{Extension, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use sha2::Digest;

use super::as_caller::AsCaller;
use super::files_api::{body_of, FILES};
use super::items_api::ItemPath;
use super::throttle::{first_transform, ClientAddress};
use super::{AppState, HttpError};
use crate::files::transform::{self, Transform};
use crate::files::{self, StorageError};
use crate::items::{Session, Who};
use crate::platform::Platform;
use crate::platform::PlatformError;
use platform_store::query::{ListParam, WireQuery};

pub async fn asset(
    State(state): State<AppState>,
    Extension(client): Extension<ClientAddress>,
    ItemPath(id): ItemPath<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    serve(state, id, client, call).await
}

/// The same, with a file name in the path for the client's sake.
pub async fn asset_named(
    State(state): State<AppState>,
    Extension(client): Extension<ClientAddress>,
    ItemPath((id, _filename)): ItemPath<(String, String)>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    serve(state, id, client, call).await
}

fn forbidden() -> HttpError {
    HttpError::Items(PlatformError::forbidden())
}

/// What an asset's answer is made from.
struct Record {
    storage: String,
    key: String,
    mime: String,
    filename: Option<String>,
    signed_in: bool,
    /// The signed-in caller's id.
    user: Option<String>,
    width: Option<u64>,
    height: Option<u64>,
}

async fn serve(
    state: AppState,
    id: String,
    client: ClientAddress,
    call: AsCaller,
) -> Result<Response, HttpError> {
    let head = call.head();
    let (headers, uri) = (&head.headers, &head.uri);
    let transform = Transform::from_query(uri.query(), &state.files.transforms)
        .map_err(|e| HttpError::Items(PlatformError::InvalidQuery(e)))?;
    let file_id = id.clone();
    let mut record = call
        .run(move |c| {
            let (platform, who) = (c.platform, c.who);
            let full = asset_record(platform, &who, &id)?;
            let full: Value = serde_json::from_slice(&full)
                .map_err(|e| HttpError::Internal(format!("a file record does not read: {e}")))?;
            let text = |name: &str| full.get(name).and_then(Value::as_str).map(String::from);
            Ok(Record {
                storage: text("storage").ok_or_else(forbidden)?,
                key: text("filename_disk").ok_or_else(forbidden)?,
                mime: text("type").unwrap_or_else(|| "application/octet-stream".into()),
                filename: text("filename_download"),
                signed_in: who.accountability.is_some(),
                user: who.accountability.as_ref().map(|a| a.user.clone()),
                width: full.get("width").and_then(Value::as_u64),
                height: full.get("height").and_then(Value::as_u64),
            })
        })
        .await?;
    let location = state
        .files
        .storage
        .location(&record.storage)
        .ok_or_else(forbidden)?;
    let unavailable = |e: StorageError| match e {
        StorageError::NotFound => forbidden(),
        other => HttpError::StorageUnavailable(format!("Couldn't read file: {other}")),
    };
    if transform.is_some() {
        let settings = &state.files.transforms;
        let allowed = if record.signed_in {
            settings.allowed
        } else {
            settings.public_allowed
        };
        allowed
            .permits(uri.query())
            .map_err(|e| HttpError::Items(PlatformError::InvalidQuery(e)))?;
    }
    if let Some(transform) = transform.filter(|_| transform::transformable(&record.mime)) {
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if let Some(format) = transform.output_format(&record.mime, accept) {
            let preset = transform::is_preset(uri.query());
            let key = transform.key(&file_id, format, preset);
            // A transformation is dated as its original, whether served
            // kept or just made: its validators stay the same.
            let original = location.head(&record.key).await.map_err(unavailable)?;
            let (size, body) = match location.head(&key).await {
                Ok(kept) => (kept.size, Body::Stored(location)),
                Err(StorageError::NotFound) => {
                    first_transform(&state, client, record.user.as_deref()).await?;
                    let bytes = transformed(&state, location, &record, &transform, format).await?;
                    let cap = state.files.transforms.max_kept_per_file;
                    let variant = (!preset).then_some((file_id.as_str(), cap));
                    keep(location, &key, &bytes, variant).await?;
                    (bytes.len() as u64, Body::Memory(bytes))
                }
                Err(e) => return Err(unavailable(e)),
            };
            record.key = key;
            record.mime = format.mime().to_string();
            let stat = files::locations::Stored {
                size,
                last_modified: original.last_modified,
            };
            return answer(&state, &record, headers, uri, stat, body).await;
        }
    }
    let stat = location.head(&record.key).await.map_err(unavailable)?;
    answer(&state, &record, headers, uri, stat, Body::Stored(location)).await
}

/// Where an answer's bytes are read from.
enum Body<'a> {
    Stored(&'a crate::files::Location),
    /// A transformation just made (kept or not).
    Memory(axum::body::Bytes),
}

/// The answer of `record`'s bytes (`stat`), read from `body`: validators,
/// caching, a range, a download.
async fn answer(
    state: &AppState,
    record: &Record,
    headers: &HeaderMap,
    uri: &Uri,
    stat: files::locations::Stored,
    body: Body<'_>,
) -> Result<Response, HttpError> {
    let etag = {
        let mut digest = sha2::Sha256::new();
        digest.update(record.key.as_bytes());
        digest.update(stat.size.to_be_bytes());
        digest.update(stat.last_modified.timestamp_millis().to_be_bytes());
        format!("\"{}\"", &hex::encode(digest.finalize())[..32])
    };
    let last_modified = stat
        .last_modified
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    let cache_control = format!(
        "{}, max-age={}",
        if record.signed_in {
            "private"
        } else {
            "public"
        },
        state.files.cache_ttl.as_secs()
    );
    let mut answer_headers = HeaderMap::new();
    let mut set = |name: header::HeaderName, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            answer_headers.insert(name, v);
        }
    };
    set(header::ETAG, &etag);
    set(header::LAST_MODIFIED, &last_modified);
    set(header::CACHE_CONTROL, &cache_control);
    set(header::ACCEPT_RANGES, "bytes");
    set(
        header::CONTENT_SECURITY_POLICY,
        &state.files.content_security_policy,
    );
    set(header::X_CONTENT_TYPE_OPTIONS, "nosniff");

    if not_modified(headers, &etag, stat.last_modified) {
        return Ok((StatusCode::NOT_MODIFIED, answer_headers).into_response());
    }

    let range = match headers.get(header::RANGE).and_then(|v| v.to_str().ok()) {
        None => None,
        Some(text) => match byte_range(text, stat.size) {
            RangeAsked::Whole => None,
            RangeAsked::Part(range) => Some(range),
            RangeAsked::Unsatisfiable => {
                let mut response =
                    HttpError::RangeNotSatisfiable(text.trim_start_matches("bytes=").to_string())
                        .into_response();
                if let Ok(v) = HeaderValue::from_str(&format!("bytes */{}", stat.size)) {
                    response.headers_mut().insert(header::CONTENT_RANGE, v);
                }
                return Ok(response);
            }
        },
    };
    let read = match body {
        Body::Stored(location) => location
            .read(&record.key, range.clone())
            .await
            .map_err(|e| match e {
                StorageError::NotFound => forbidden(),
                other => HttpError::StorageUnavailable(format!("Couldn't read file: {other}")),
            })?,
        Body::Memory(bytes) => {
            files::locations::Read::of_bytes(bytes, stat.last_modified, range.clone())
        }
    };
    let mut set = |name: header::HeaderName, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            answer_headers.insert(name, v);
        }
    };
    set(header::CONTENT_TYPE, &files::served_type(&record.mime));
    set(
        header::CONTENT_LENGTH,
        &(read.range.end - read.range.start).to_string(),
    );
    if has_param(uri, "download") || !files::shown_inline(&record.mime) {
        let filename = record.filename.as_deref().unwrap_or(&record.key);
        set(header::CONTENT_DISPOSITION, &attachment(filename));
    }
    let status = match &range {
        Some(_) => {
            set(
                header::CONTENT_RANGE,
                &format!(
                    "bytes {}-{}/{}",
                    read.range.start,
                    read.range.end.saturating_sub(1),
                    stat.size
                ),
            );
            StatusCode::PARTIAL_CONTENT
        }
        None => StatusCode::OK,
    };
    Ok((status, answer_headers, body_of(read.chunks)).into_response())
}

/// The fields of a file record an asset's answer is made from.
const ASSET_FIELDS: [&str; 6] = [
    "storage",
    "filename_disk",
    "type",
    "filename_download",
    "width",
    "height",
];

/// The file record `id` with [`ASSET_FIELDS`], as JSON, when `who` may read
/// the record (403 otherwise, and for no such file). Access is the right to
/// read the record, whatever fields it covers (as Directus). Callers whose
/// grant covers those fields, the usual case, cost one read; a caller
/// refused them is asked for the record's id alone, and the fields are
/// then read by the platform.
fn asset_record(platform: &Platform, who: &Who, id: &str) -> Result<Vec<u8>, HttpError> {
    let fields = |names: &[&str]| WireQuery {
        fields: Some(ListParam::List(
            names.iter().map(|f| f.to_string()).collect(),
        )),
        ..Default::default()
    };
    let asked = fields(&ASSET_FIELDS);
    let read = |who: &Who, query: &WireQuery| {
        platform.read_one_json(&mut Session::Auto, who, FILES, id, query)
    };
    match read(who, &asked) {
        Ok(Some(record)) => return Ok(record),
        Ok(None) | Err(PlatformError::NotFound(_)) => return Err(forbidden()),
        Err(PlatformError::Forbidden(_)) => {}
        Err(e) => return Err(e.into()),
    }
    match read(who, &fields(&["id"])) {
        Ok(Some(_)) => {}
        Ok(None) | Err(PlatformError::Forbidden(_)) | Err(PlatformError::NotFound(_)) => {
            return Err(forbidden())
        }
        Err(e) => return Err(e.into()),
    }
    read(&Who::system(), &asked)?.ok_or_else(forbidden)
}

/// Computes a transformation of the original: within the size bound, the concurrency bound and the memory budget
/// (503 with `Retry-After` past either), and the time limit (503 past it),
/// off the async workers. At the time limit the slot is given back and
/// the work is told to stop; its memory stays reserved until it has.
async fn transformed(
    state: &AppState,
    location: &crate::files::Location,
    record: &Record,
    transform: &Transform,
    format: transform::Format,
) -> Result<axum::body::Bytes, HttpError> {
    let files = &state.files;
    let settings = &files.transforms;
    let max = settings.max_dimension;
    if !matches!((record.width, record.height), (Some(w), Some(h)) if w <= max && h <= max) {
        return Err(HttpError::IllegalTransformation);
    }
    let busy = || HttpError::FilesBusy {
        retry_after_secs: settings.timeout.as_secs().max(1) + 1,
    };
    let _slot = files
        .transform_slots
        .clone()
        .try_acquire_owned()
        .map_err(|_| busy())?;
    let failed =
        |e: StorageError| HttpError::StorageUnavailable(format!("Couldn't read file: {e}"));
    let original = location.read_all(&record.key).await.map_err(failed)?;
    let transform = transform.clone();
    let bounds = transform::Bounds::new(
        u32::try_from(max).unwrap_or(u32::MAX),
        settings.max_image_memory,
    );
    let cancel = bounds.cancel.clone();
    let memory = files.transform_memory.clone();
    let work = tokio::task::spawn_blocking(move || {
        let need = transform.estimate(&original, &bounds)?;
        let kib = u32::try_from(need.div_ceil(1024)).unwrap_or(u32::MAX);
        let _reserved = memory
            .try_acquire_many_owned(kib)
            .map_err(|_| transform::TransformError::Busy)?;
        transform.apply(&original, format, &bounds)
    });
    let out = match tokio::time::timeout(settings.timeout, work).await {
        Err(_) => {
            cancel.store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(HttpError::StorageUnavailable(
                "Transformation timed out".into(),
            ));
        }
        Ok(Err(e)) => return Err(HttpError::Internal(format!("transformation failed: {e}"))),
        Ok(Ok(Err(transform::TransformError::TooLarge))) => {
            return Err(HttpError::IllegalTransformation)
        }
        Ok(Ok(Err(transform::TransformError::Busy))) => return Err(busy()),
        Ok(Ok(Err(transform::TransformError::Cancelled))) => {
            return Err(HttpError::StorageUnavailable(
                "Transformation timed out".into(),
            ))
        }
        Ok(Ok(Err(transform::TransformError::Failed(e)))) => {
            return Err(HttpError::Items(PlatformError::InvalidQuery(format!(
                "The image could not be transformed: {e}"
            ))))
        }
        Ok(Ok(Ok(bytes))) => bytes,
    };
    Ok(axum::body::Bytes::from(out))
}

/// Keeps the transformation `bytes` under `key`, unless it is a `variant`
/// (of a file id, not a preset) and its file has that many kept already
/// (it is then served, not kept). Hosts sharing the storage may write at once, so
/// the count is made again after writing, and a variant past the bound
/// removes itself: the last to write sees every kept one, so no more stay
/// kept than the bound.
async fn keep(
    location: &crate::files::Location,
    key: &str,
    bytes: &axum::body::Bytes,
    variant: Option<(&str, usize)>,
) -> Result<(), HttpError> {
    let failed =
        |e: StorageError| HttpError::StorageUnavailable(format!("Couldn't keep file: {e}"));
    let kept = |prefix: String, bound: usize| async move {
        location
            .count_under(
                &prefix,
                transform::counts_as_variant,
                bound.saturating_add(1),
            )
            .await
    };
    let variant = variant.map(|(file_id, bound)| (transform::prefix_of(file_id), bound));
    if let Some((prefix, bound)) = &variant {
        if kept(prefix.clone(), *bound).await.map_err(failed)? >= *bound {
            return Ok(());
        }
    }
    location.put(key, bytes.clone()).await.map_err(failed)?;
    if let Some((prefix, bound)) = variant {
        if kept(prefix, bound).await.map_err(failed)? > bound {
            location.delete(key).await.map_err(failed)?;
        }
    }
    Ok(())
}

fn has_param(uri: &Uri, name: &str) -> bool {
    form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()).any(|(k, _)| k == name)
}

/// `attachment; filename="…"` with a plain fallback and the UTF-8 name.
fn attachment(filename: &str) -> String {
    let plain: String = filename
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = filename
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("attachment; filename=\"{plain}\"; filename*=UTF-8''{encoded}")
}

/// Whether the client's copy is current: `If-None-Match` names the tag
/// (or `*`), or, without it, `If-Modified-Since` is no earlier than the
/// bytes' date.
fn not_modified(headers: &HeaderMap, etag: &str, modified: chrono::DateTime<chrono::Utc>) -> bool {
    if let Some(tags) = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
    {
        return tags
            .split(',')
            .map(|t| t.trim().trim_start_matches("W/"))
            .any(|t| t == "*" || t == etag);
    }
    headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| chrono::DateTime::parse_from_rfc2822(v.trim()).ok())
        .is_some_and(|since| modified.timestamp() <= since.timestamp())
}

/// What a `Range` header asks of `size` bytes.
#[derive(Debug, PartialEq, Eq)]
enum RangeAsked {
    /// No range this host serves (several ranges, another unit): the whole.
    Whole,
    Part(std::ops::Range<u64>),
    Unsatisfiable,
}

fn byte_range(text: &str, size: u64) -> RangeAsked {
    let Some(spec) = text.trim().strip_prefix("bytes=") else {
        return RangeAsked::Whole;
    };
    if spec.contains(',') {
        return RangeAsked::Whole;
    }
    let Some((start, end)) = spec.trim().split_once('-') else {
        return RangeAsked::Unsatisfiable;
    };
    let parse = |s: &str| -> Result<Option<u64>, ()> {
        let s = s.trim();
        if s.is_empty() {
            Ok(None)
        } else {
            s.parse().map(Some).map_err(|_| ())
        }
    };
    let (Ok(start), Ok(end)) = (parse(start), parse(end)) else {
        return RangeAsked::Unsatisfiable;
    };
    match (start, end) {
        (None, None) => RangeAsked::Unsatisfiable,
        // The last `n` bytes.
        (None, Some(n)) => {
            if n == 0 || size == 0 {
                RangeAsked::Unsatisfiable
            } else {
                RangeAsked::Part(size.saturating_sub(n)..size)
            }
        }
        (Some(start), end) => {
            let end = end.map_or(size, |e| e.saturating_add(1).min(size));
            if start >= size || end <= start {
                RangeAsked::Unsatisfiable
            } else {
                RangeAsked::Part(start..end)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_as_http_reads_them() {
        assert_eq!(byte_range("bytes=0-9", 100), RangeAsked::Part(0..10));
        assert_eq!(byte_range("bytes=90-", 100), RangeAsked::Part(90..100));
        assert_eq!(byte_range("bytes=-10", 100), RangeAsked::Part(90..100));
        assert_eq!(byte_range("bytes=-500", 100), RangeAsked::Part(0..100));
        assert_eq!(byte_range("bytes=95-200", 100), RangeAsked::Part(95..100));
        assert_eq!(byte_range("bytes=100-", 100), RangeAsked::Unsatisfiable);
        assert_eq!(byte_range("bytes=5-2", 100), RangeAsked::Unsatisfiable);
        assert_eq!(byte_range("bytes=x-2", 100), RangeAsked::Unsatisfiable);
        assert_eq!(byte_range("bytes=0-1,5-6", 100), RangeAsked::Whole);
        assert_eq!(byte_range("items=0-1", 100), RangeAsked::Whole);
    }

    #[test]
    fn download_names_survive_any_characters() {
        assert_eq!(
            attachment("a \"b\".txt"),
            "attachment; filename=\"a _b_.txt\"; filename*=UTF-8''a%20%22b%22.txt"
        );
        assert_eq!(
            attachment("ç.png"),
            "attachment; filename=\"_.png\"; filename*=UTF-8''%C3%A7.png"
        );
    }
}
