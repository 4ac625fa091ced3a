//! How the host calls an extension's code: through the ABI of a loaded
//! library, or directly when the extension is linked into the host's
//! process (the `inprocess` feature's svc, or an extension under the test
//! kit).

use abi_stable::std_types::{RString, RVec, Tuple2};
use bytes::Bytes;
use host_sdk::abi::{ExtensionModuleRef, FfiItemEvent, FfiRequest};
use host_sdk::BodyRule;

use super::services::{ffi_accountability_opt, ExtServices};
use super::ExtRequest;
use crate::platform::WriteEvent;

/// An extension's answer, whichever way it was called. The body is the
/// extension's own buffer, written to the socket without a copy; a kept
/// answer's bytes are shared by every response served from it.
pub struct ExtResponse {
    pub status: u16,
    pub content_type: String,
    pub body: Bytes,
}

/// A library's answer body, owned by the library's allocator: dropped (and
/// freed by the library) once written.
struct LibraryBody(RVec<u8>);

impl AsRef<[u8]> for LibraryBody {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

pub enum Code {
    /// A library loaded through its root module.
    Library(ExtensionModuleRef),
    /// An extension linked into the host.
    Linked(std::sync::Arc<host_sdk::Extension>),
}

fn records_json(records: &Option<std::sync::Arc<str>>) -> abi_stable::std_types::ROption<RString> {
    records.as_deref().map(RString::from).into()
}

pub fn facade_accountability(a: &crate::accounts::CallerAccount) -> host_sdk::Accountability {
    host_sdk::Accountability {
        user: a.user.clone(),
        role: a.role.clone(),
        admin: a.admin,
    }
}

/// An item event as it crosses the ABI.
fn ffi_event(event: &WriteEvent) -> FfiItemEvent {
    FfiItemEvent {
        event: event.kind.name().into(),
        collection: event.collection.as_str().into(),
        keys: serde_json::to_string(&event.keys)
            .unwrap_or_default()
            .into(),
        payload: (*event.payload).into(),
        before: records_json(&event.before),
        after: records_json(&event.after),
        accountability: ffi_accountability_opt(event.accountability.as_ref()),
    }
}

/// An item event as a linked extension's facade takes it: the host's
/// text, borrowed.
fn facade_event(event: &WriteEvent) -> host_sdk::RawItemEvent<'_> {
    use crate::platform::EventKind;
    host_sdk::RawItemEvent::new(
        match event.kind {
            EventKind::Create => host_sdk::EventKind::Create,
            EventKind::Update => host_sdk::EventKind::Update,
            EventKind::Delete => host_sdk::EventKind::Delete,
        },
        &event.collection,
        event.keys.clone(),
        &event.payload,
        event.before.as_deref(),
        event.after.as_deref(),
        event.accountability.as_ref().map(facade_accountability),
    )
}

impl Code {
    /// What the route a request of `method` for `path` would reach accepts
    /// as a body: checked by the HTTP layer before the body is read whole
    /// (size) and before the extension is called (nesting).
    pub fn body_rule(&self, method: &str, path: &str) -> BodyRule {
        match self {
            Code::Library(module) => module.body_rule().map_or(BodyRule::HOST_LIMITS, |rule| {
                rule(method.into(), path.into()).into()
            }),
            Code::Linked(ext) => ext.body_rule(method, path),
        }
    }

    pub fn handle(&self, services: &ExtServices<'_>, request: ExtRequest) -> ExtResponse {
        match self {
            Code::Library(module) => {
                let ctx = services.context();
                let request = FfiRequest {
                    method: request.method.into(),
                    path: request.path.into(),
                    query: request.query.into(),
                    headers: request
                        .headers
                        .into_iter()
                        .map(|(k, v)| Tuple2(RString::from(k), RString::from(v)))
                        .collect::<RVec<_>>(),
                    body: request.body.into(),
                };
                // SDK 1.4 libraries share their body; earlier ones hand it over.
                let (status, content_type, body) = match module.handle_shared() {
                    Some(handle_shared) => {
                        let answer = handle_shared(&request, &ctx);
                        let body = host_sdk::SharedBody::from(answer.body);
                        (answer.status, answer.content_type, Bytes::from_owner(body))
                    }
                    None => {
                        let answer = (module.handle())(&request, &ctx);
                        let body = Bytes::from_owner(LibraryBody(answer.body));
                        (answer.status, answer.content_type, body)
                    }
                };
                ExtResponse {
                    status,
                    content_type: content_type.into_string(),
                    body,
                }
            }
            Code::Linked(ext) => {
                let target = if request.query.is_empty() {
                    request.path
                } else {
                    format!("{}?{}", request.path, request.query)
                };
                let mut req = host_sdk::Request::new(&request.method, &target, request.body);
                for (k, v) in &request.headers {
                    req = req.with_header(k, v);
                }
                let acc = services.accountability().map(facade_accountability);
                let answer = ext.handle_direct_shared(req, acc, services);
                ExtResponse {
                    status: answer.status,
                    content_type: answer.content_type,
                    body: Bytes::from_owner(answer.body),
                }
            }
        }
    }

    /// Delivers a committed write to the extension's after-commit hooks.
    pub fn on_event(&self, services: &ExtServices<'_>, event: &WriteEvent) -> Result<(), String> {
        match self {
            Code::Library(module) => {
                let ctx = services.context();
                (module.on_event())(&ffi_event(event), &ctx)
                    .into_result()
                    .map_err(|e| e.message.into_string())
            }
            Code::Linked(ext) => ext.deliver_direct_raw(&facade_event(event), services),
        }
    }

    /// Runs the extension's in-transaction hooks on a write; `services` are
    /// bound to the writing transaction. `Err((code, message))` refuses it.
    pub fn before_commit(
        &self,
        services: &ExtServices<'_>,
        event: &WriteEvent,
    ) -> Result<(), (String, String)> {
        match self {
            Code::Library(module) => {
                // The loader only records interest when both fields exist.
                let Some(before_commit) = module.before_commit() else {
                    return Ok(());
                };
                let ctx = services.context();
                before_commit(&ffi_event(event), &ctx)
                    .into_result()
                    .map_err(|e| (e.code.into_string(), e.message.into_string()))
            }
            Code::Linked(ext) => ext
                .before_commit_direct_raw(&facade_event(event), services)
                .map_err(|e| (e.code().to_string(), e.to_string())),
        }
    }

    /// Runs the extension's before-write hooks on a write about to be
    /// made (`event` without before and after records); `services` are
    /// bound to the writing transaction. `Ok(Some(payload))` when the
    /// hooks changed the payload; `Err((code, message))` refuses it.
    pub fn before_write(
        &self,
        services: &ExtServices<'_>,
        event: &WriteEvent,
    ) -> Result<Option<String>, (String, String)> {
        match self {
            Code::Library(module) => {
                // The loader only records interest when both fields exist.
                let Some(before_write) = module.before_write() else {
                    return Ok(None);
                };
                let ctx = services.context();
                before_write(&ffi_event(event), &ctx)
                    .into_result()
                    .map(|changed| changed.into_option().map(RString::into_string))
                    .map_err(|e| (e.code.into_string(), e.message.into_string()))
            }
            Code::Linked(ext) => ext
                .before_write_direct(&facade_event(event), services)
                .map_err(|e| (e.code().to_string(), e.to_string())),
        }
    }

    pub fn run_schedule(&self, services: &ExtServices<'_>, name: &str) -> Result<(), String> {
        match self {
            Code::Library(module) => {
                let ctx = services.context();
                (module.run_schedule())(name.into(), &ctx)
                    .into_result()
                    .map_err(|e| format!("{}: {}", e.code, e.message))
            }
            Code::Linked(ext) => ext.run_schedule_direct(name, services),
        }
    }
}
