//! `/files`: uploads (multipart/form-data, as Directus takes them: the
//! fields before the file), streamed to storage as they arrive, and the
//! records of `platform_files` under the caller's permissions; deleting a
//! record deletes its bytes.
//!
//! An upload is checked before its bytes are kept: its type (sniffed from
//! its first bytes) against `FILES_MIME_TYPE_ALLOW_LIST`, the caller's
//! right to create (or update) the record, then its size against
//! `FILES_MAX_UPLOAD_SIZE` as it streams. Whatever fails on the way leaves
//! no record and no bytes: the storage publishes an upload only once it is
//! whole, and a record created for it is deleted again.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use super::as_caller::AsCaller;
use super::items_api::{json_body_text, read_back, read_many_in, read_one_in, ItemPath};
use super::query_string::parse_query_string;
use super::{blocking, read_body, AppState, HttpError};
use crate::files::{self, Files};
use crate::items::{Session, Who};
use crate::platform::Platform;

/// The collection of file records.
pub const FILES: &str = "platform_files";

/// Fields of a file record that say where its bytes are and what they
/// are: the host writes them from the upload, whatever a form says.
const HOST_FIELDS: &[&str] = &[
    "id",
    "filename_disk",
    "filesize",
    "type",
    "width",
    "height",
    "duration",
    "uploaded_by",
    "uploaded_on",
    "modified_on",
];

/// Longest value of a form field before the file.
const MAX_FIELD_LEN: usize = 64 * 1024;

fn is_multipart(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        })
}

pub async fn read_many(call: AsCaller) -> Result<Response, HttpError> {
    read_many_in(FILES, call).await
}

pub async fn read_one(
    ItemPath(id): ItemPath<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    read_one_in(FILES, id, call).await
}

/// `POST /files`: an upload (multipart), or a record alone (JSON, which
/// must name its `type`, as in Directus).
pub async fn create(
    State(state): State<AppState>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    let who = call.who().await?;
    let (headers, uri) = (call.headers(), call.uri().clone());
    let keys = if is_multipart(headers) {
        receive(&state, &who, headers, body, None).await?
    } else {
        let bytes = read_body(body, headers, &state.limits).await?;
        let platform = state.platform.clone();
        let who = who.clone();
        vec![
            blocking(move || {
                let payload: Value = serde_json::from_str(json_body_text(&bytes)?)
                    .map_err(|_| HttpError::InvalidPayload("Invalid JSON body".into()))?;
                if payload.get("type").is_none_or(Value::is_null) {
                    return Err(HttpError::InvalidPayload(
                        "Invalid payload. \"type\" is required.".into(),
                    ));
                }
                Ok(platform.create_one(&mut Session::Auto, &who, FILES, &payload)?)
            })
            .await?,
        ]
    };
    let platform = state.platform.clone();
    blocking(move || {
        let q = parse_query_string(uri.query())?;
        let many = keys.len() > 1;
        read_back(&platform, &who, FILES, &keys, &q, many)
    })
    .await
}

/// `PATCH /files/:id`: the record's metadata (JSON), or new bytes with
/// fields before them (multipart).
pub async fn update(
    State(state): State<AppState>,
    ItemPath(id): ItemPath<String>,
    call: AsCaller,
    body: Body,
) -> Result<Response, HttpError> {
    let who = call.who().await?;
    let (headers, uri) = (call.headers(), call.uri().clone());
    if is_multipart(headers) {
        receive(&state, &who, headers, body, Some(id.clone())).await?;
    } else {
        let bytes = read_body(body, headers, &state.limits).await?;
        let platform = state.platform.clone();
        let (who, id) = (who.clone(), id.clone());
        blocking(move || {
            let payload = json_body_text(&bytes)?;
            platform.update_one_json(&mut Session::Auto, &who, FILES, &id, payload)?;
            touch(&platform, &id)?;
            Ok(())
        })
        .await?;
    }
    let platform = state.platform.clone();
    blocking(move || {
        let q = parse_query_string(uri.query())?;
        read_back(&platform, &who, FILES, &[id], &q, false)
    })
    .await
}

/// `DELETE /files/:id`: the record (under the caller's permissions), then
/// its bytes.
pub async fn delete(
    State(state): State<AppState>,
    ItemPath(id): ItemPath<String>,
    call: AsCaller,
) -> Result<Response, HttpError> {
    let file_id = id.clone();
    let stored = call
        .run(move |c| {
            let stored = stored_at(c.platform, &id)?;
            c.platform
                .delete_one(&mut Session::Auto, &c.who, FILES, &id)?;
            Ok(stored)
        })
        .await?;
    if let Some((location, key)) = stored {
        forget_bytes(&state.files, &location, &key).await;
        forget_transforms(&state.files, &location, &file_id).await;
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Where a file's bytes are: its location and key (`None` for a record
/// without bytes).
pub(super) fn stored_at(
    platform: &Platform,
    id: &str,
) -> Result<Option<(String, String)>, HttpError> {
    let record = platform.read_one_json(
        &mut Session::Auto,
        &Who::system(),
        FILES,
        id,
        &Default::default(),
    )?;
    let Some(record) = record else {
        return Ok(None);
    };
    let record: Value = serde_json::from_slice(&record)
        .map_err(|e| HttpError::Internal(format!("a file record does not read: {e}")))?;
    Ok(
        match (
            record.get("storage").and_then(Value::as_str),
            record.get("filename_disk").and_then(Value::as_str),
        ) {
            (Some(location), Some(key)) => Some((location.to_string(), key.to_string())),
            _ => None,
        },
    )
}

/// Removes the transformations kept of a file's bytes.
async fn forget_transforms(files: &Files, location: &str, id: &str) {
    if let Some(location) = files.storage.location(location) {
        if let Err(e) = location
            .delete_under(&files::transform::prefix_of(id))
            .await
        {
            log::warn!("deleting the transformations of {id} failed: {e}");
        }
    }
}

async fn forget_bytes(files: &Files, location: &str, key: &str) {
    let Some(location) = files.storage.location(location) else {
        log::warn!("the bytes of {key} are in storage location \"{location}\", which this host does not have: they stay");
        return;
    };
    if let Err(e) = location.delete(key).await {
        log::warn!("deleting the bytes of {key} failed: {e}");
    }
}

/// Sets a record's `modified_on` (the host's, whatever the caller may
/// write).
fn touch(platform: &Platform, id: &str) -> Result<(), HttpError> {
    platform.update_one(
        &mut Session::Auto,
        &Who::system(),
        FILES,
        id,
        &json!({"modified_on": platform_store::values::now_timestamp()}),
    )?;
    Ok(())
}

fn bad_form(e: multer::Error) -> HttpError {
    HttpError::InvalidPayload(format!("Invalid payload. {e}."))
}

/// A form field's value as Directus reads it: `null`, `true` and `false`
/// are those values, anything else text.
fn field_value(text: String) -> Value {
    match text.trim() {
        "null" => Value::Null,
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => Value::String(text),
    }
}

/// Reads the form: fields gather until a file, which is stored with them;
/// returns the ids of the stored files (`existing` for a replacement).
async fn receive(
    state: &AppState,
    who: &Who,
    headers: &HeaderMap,
    body: Body,
    existing: Option<String>,
) -> Result<Vec<String>, HttpError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let boundary = multer::parse_boundary(content_type).map_err(bad_form)?;
    let mut form = multer::Multipart::new(body.into_data_stream(), boundary);
    let idle = state.limits.body_timeout;
    let mut fields = Map::new();
    let mut keys = Vec::new();
    let mut bounds = FormBounds::new(&state.files);
    loop {
        let next = tokio::time::timeout(idle, form.next_field())
            .await
            .map_err(|_| HttpError::BodyTimeout)?
            .map_err(bad_form)?;
        let Some(mut field) = next else { break };
        let name = field.name().unwrap_or_default().to_string();
        match field.file_name().map(str::to_string) {
            None => {
                bounds.field(&name)?;
                let mut text = Vec::new();
                while let Some(chunk) = tokio::time::timeout(idle, field.chunk())
                    .await
                    .map_err(|_| HttpError::BodyTimeout)?
                    .map_err(bad_form)?
                {
                    text.extend_from_slice(&chunk);
                    bounds.bytes(chunk.len())?;
                    if text.len() > MAX_FIELD_LEN {
                        return Err(HttpError::InvalidPayload(format!(
                            "Invalid payload. The field \"{name}\" is too long."
                        )));
                    }
                }
                let text = String::from_utf8(text).map_err(|_| {
                    HttpError::InvalidPayload(format!(
                        "Invalid payload. The field \"{name}\" is not UTF-8 text."
                    ))
                })?;
                fields.insert(name, field_value(text));
            }
            Some(filename) => {
                if filename.trim().is_empty() {
                    return Err(HttpError::InvalidPayload(
                        "Invalid payload. File is missing filename.".into(),
                    ));
                }
                if existing.is_some() && !keys.is_empty() {
                    return Err(HttpError::InvalidPayload(
                        "Invalid payload. Only one file replaces a file.".into(),
                    ));
                }
                let declared = field.content_type().map(|m| m.essence_str().to_string());
                let payload = std::mem::take(&mut fields);
                let upload = Upload {
                    filename,
                    declared,
                    payload,
                    existing: existing.clone(),
                };
                keys.push(store(state, who, upload, &mut field).await?);
            }
        }
    }
    if keys.is_empty() {
        if let (Some(id), false) = (&existing, fields.is_empty()) {
            // Fields alone: a change of metadata.
            let platform = state.platform.clone();
            let (who, id) = (who.clone(), id.clone());
            let payload = Value::Object(fields);
            blocking(move || {
                platform.update_one(&mut Session::Auto, &who, FILES, &id, &payload)?;
                touch(&platform, &id)
            })
            .await?;
            return Ok(vec![existing.unwrap_or_default()]);
        }
        return Err(HttpError::InvalidPayload(
            "Invalid payload. No files were included in the body.".into(),
        ));
    }
    Ok(keys)
}

/// What a form's fields may hold in all (`FILES_MAX_FORM_FIELDS`,
/// `FILES_MAX_FORM_FIELDS_SIZE`): they are held until their file, so
/// their count and bytes are bounded, names included, as they arrive.
struct FormBounds {
    fields_left: usize,
    bytes_left: u64,
    max_fields: usize,
    max_bytes: u64,
}

impl FormBounds {
    fn new(files: &Files) -> Self {
        Self {
            fields_left: files.max_form_fields,
            bytes_left: files.max_form_fields_size,
            max_fields: files.max_form_fields,
            max_bytes: files.max_form_fields_size,
        }
    }

    /// Counts a field named `name`.
    fn field(&mut self, name: &str) -> Result<(), HttpError> {
        if self.fields_left == 0 {
            return Err(HttpError::InvalidPayload(format!(
                "Invalid payload. A form may have at most {} fields.",
                self.max_fields
            )));
        }
        self.fields_left -= 1;
        self.bytes(name.len())
    }

    /// Counts `n` bytes of the fields.
    fn bytes(&mut self, n: usize) -> Result<(), HttpError> {
        match self.bytes_left.checked_sub(n as u64) {
            Some(left) => {
                self.bytes_left = left;
                Ok(())
            }
            None => Err(HttpError::InvalidPayload(format!(
                "Invalid payload. A form's fields may hold at most {} bytes in all.",
                self.max_bytes
            ))),
        }
    }
}

/// One file of a form.
struct Upload {
    filename: String,
    declared: Option<String>,
    payload: Map<String, Value>,
    existing: Option<String>,
}

/// What was read of a file before its record was made.
struct Head {
    chunks: Vec<Bytes>,
    bytes: Vec<u8>,
    ended: bool,
}

async fn next_chunk(
    field: &mut multer::Field<'_>,
    idle: std::time::Duration,
) -> Result<Option<Bytes>, HttpError> {
    tokio::time::timeout(idle, field.chunk())
        .await
        .map_err(|_| HttpError::BodyTimeout)?
        .map_err(bad_form)
}

/// Stores one file: checks it, makes (or checks) its record, streams its
/// bytes, then writes what was learnt of them into the record.
async fn store(
    state: &AppState,
    who: &Who,
    upload: Upload,
    field: &mut multer::Field<'_>,
) -> Result<String, HttpError> {
    let files = state.files.clone();
    let idle = state.limits.body_timeout;
    let too_large = || HttpError::ContentTooLarge;
    // The first bytes, for the type and an image's size.
    let mut head = Head {
        chunks: Vec::new(),
        bytes: Vec::new(),
        ended: false,
    };
    while head.bytes.len() < files::HEAD_LEN {
        match next_chunk(field, idle).await? {
            Some(chunk) => {
                let room = files::HEAD_LEN - head.bytes.len();
                head.bytes
                    .extend_from_slice(&chunk[..chunk.len().min(room)]);
                head.chunks.push(chunk);
                if head.chunks.iter().map(|c| c.len() as u64).sum::<u64>() > files.max_upload_size {
                    return Err(too_large());
                }
            }
            None => {
                head.ended = true;
                break;
            }
        }
    }
    let mime = files::content_type(&head.bytes, upload.declared.as_deref());
    if !files.allows(&mime) {
        return Err(HttpError::InvalidPayload(
            "Invalid payload. File is of invalid content type.".into(),
        ));
    }
    let size = files::image_size(&mime, &head.bytes);
    let extension = files::extension_of(&upload.filename);

    // The record: made now (or, for a replacement, checked writable) from
    // what the caller may write; where and what the bytes are is the
    // host's to write, below.
    let mut payload = upload.payload;
    for owned in HOST_FIELDS {
        payload.remove(*owned);
    }
    let asked_location = match payload.remove("storage") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(name),
        Some(other) => Some(other.to_string()),
    };
    if let Some(name) = &asked_location {
        if files.storage.location(name).is_none() {
            return Err(HttpError::InvalidPayload(format!(
                "Invalid payload. Storage location \"{name}\" doesn't exist."
            )));
        }
    }
    let platform = state.platform.clone();
    let default_location = files.storage.default_location().name.clone();
    let (record_who, existing) = (who.clone(), upload.existing.clone());
    let filename = upload.filename;
    let prepared = blocking(move || match existing {
        None => {
            payload
                .entry("title")
                .or_insert_with(|| Value::String(files::title_from_filename(&filename)));
            payload.insert("filename_download".into(), Value::String(filename));
            let id = platform.create_one(
                &mut Session::Auto,
                &record_who,
                FILES,
                &Value::Object(payload),
            )?;
            let location = asked_location.unwrap_or(default_location);
            Ok::<_, HttpError>((id.clone(), location, format!("{id}{extension}"), None))
        }
        Some(id) => {
            platform.update_one(
                &mut Session::Auto,
                &record_who,
                FILES,
                &id,
                &Value::Object(payload),
            )?;
            let old = stored_at(&platform, &id)?;
            let location = match (asked_location, &old) {
                (Some(asked), _) => asked,
                (None, Some((location, _))) => location.clone(),
                (None, None) => default_location,
            };
            let nonce = &uuid::Uuid::new_v4().simple().to_string()[..8];
            Ok((
                id.clone(),
                location,
                format!("{id}-{nonce}{extension}"),
                old,
            ))
        }
    })
    .await?;
    let (id, location_name, key, old) = prepared;
    let replacing = upload.existing.is_some();

    let written = write_bytes(&files, &location_name, &key, head, field, idle).await;
    let filesize = match written {
        Ok(n) => n,
        Err(e) => {
            if !replacing {
                forget_record(state, &id).await;
            }
            return Err(e);
        }
    };

    // What the bytes told, written by the host whatever the caller may write.
    let platform = state.platform.clone();
    let uploader = who.accountability.as_ref().map(|a| a.user.clone());
    let now = platform_store::values::now_timestamp();
    let mut facts = json!({
        "filename_disk": key,
        "filesize": filesize,
        "type": mime,
        "width": size.map(|s| s.0),
        "height": size.map(|s| s.1),
        "storage": location_name,
    });
    if replacing {
        facts["modified_on"] = Value::String(now);
    } else {
        facts["uploaded_on"] = Value::String(now);
        facts["uploaded_by"] = uploader.map_or(Value::Null, Value::String);
    }
    let fact_id = id.clone();
    let recorded = blocking(move || {
        platform.update_one(&mut Session::Auto, &Who::system(), FILES, &fact_id, &facts)?;
        Ok(())
    })
    .await;
    if let Err(e) = recorded {
        forget_bytes(&files, &location_name, &key).await;
        if !replacing {
            forget_record(state, &id).await;
        }
        return Err(e);
    }
    if let Some((old_location, old_key)) = old {
        if old_key != key {
            forget_bytes(&files, &old_location, &old_key).await;
        }
        forget_transforms(&files, &old_location, &id).await;
    }
    Ok(id)
}

/// Deletes a record made for an upload that did not complete.
async fn forget_record(state: &AppState, id: &str) {
    let platform = state.platform.clone();
    let id = id.to_string();
    let forgotten = blocking(move || {
        platform.delete_one(&mut Session::Auto, &Who::system(), FILES, &id)?;
        Ok(())
    })
    .await;
    if let Err(e) = forgotten {
        log::warn!("removing the record of a failed upload failed: {e}");
    }
}

/// Streams a file's bytes to `key` of location `location`: published only
/// when whole and within the size limit; its size.
async fn write_bytes(
    files: &Arc<Files>,
    location: &str,
    key: &str,
    head: Head,
    field: &mut multer::Field<'_>,
    idle: std::time::Duration,
) -> Result<u64, HttpError> {
    let Some(location) = files.storage.location(location) else {
        return Err(HttpError::InvalidPayload(format!(
            "Invalid payload. Storage location \"{location}\" doesn't exist."
        )));
    };
    let unavailable = |e: files::StorageError| {
        log::warn!("could not save file {key}: {e}");
        HttpError::StorageUnavailable(format!("Couldn't save file {key}"))
    };
    let mut upload = location.begin(key).await.map_err(unavailable)?;
    let result: Result<(), HttpError> = async {
        for chunk in head.chunks {
            upload.put(chunk).await.map_err(unavailable)?;
        }
        if !head.ended {
            while let Some(chunk) = next_chunk(field, idle).await? {
                if upload.written() + chunk.len() as u64 > files.max_upload_size {
                    return Err(HttpError::ContentTooLarge);
                }
                upload.put(chunk).await.map_err(unavailable)?;
            }
        }
        Ok(())
    }
    .await;
    match result {
        Ok(()) => upload.finish().await.map_err(unavailable),
        Err(e) => {
            upload.abort().await;
            Err(e)
        }
    }
}

/// Stored bytes as a response body, read as it is sent.
pub(super) fn body_of(
    chunks: futures_util::stream::BoxStream<'static, Result<Bytes, files::StorageError>>,
) -> Body {
    use futures_util::StreamExt;
    Body::from_stream(chunks.map(|c| c.map_err(std::io::Error::other)))
}
