//! The library's entry points: the root module built from an [`Extension`].
//!
//! Each `extern "C"` function catches panics, so no unwinding ever crosses
//! the boundary; a panicking handler answers 500 `Internal extension error`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{RArc, RErr, ROk, ROption, RResult, RStr, RString, RVec};
use once_cell::sync::OnceCell;

use crate::abi::{
    ExtensionModule, ExtensionModuleRef, FfiBodyRule, FfiContext, FfiError, FfiEventInterest,
    FfiHookFields, FfiInit, FfiItemEvent, FfiManifest, FfiMigration, FfiRequest, FfiRequirement,
    FfiResponse, FfiSchedule, FfiScheduleSpec, FfiSharedResponse, HostRuntime_TO,
};
use crate::context::{Accountability, Context};
use crate::error::ApiError;
use crate::events::RawItemEvent;
use crate::extension::{Extension, Schedule};
use crate::hooks::{panic_text, run_after_commit, run_before_commit, run_before_write, EventViews};
use crate::http::{Request, Response, SharedResponse};

/// The extension of this library (one per cdylib: each has its own statics).
static EXTENSION: OnceCell<Extension> = OnceCell::new();

/// Why building the extension failed, when it panicked.
static BUILD_PANIC: OnceCell<String> = OnceCell::new();

/// Builds the extension and returns the root module; called by
/// [`export_extension!`](crate::export_extension) when the host loads the library.
pub fn root_module(build: fn() -> Extension) -> ExtensionModuleRef {
    // A builder that panics leaves no extension: `manifest` then answers
    // no id, and the panic's text, so the host refuses the library and
    // says why (abi_stable would only report that the root module unwound).
    if let Err(panic) = catch_unwind(|| {
        EXTENSION.get_or_init(build);
    }) {
        let _ = BUILD_PANIC.set(panic_text(&*panic));
    }
    ExtensionModule {
        manifest,
        migrations,
        init,
        handle,
        on_event,
        schedules,
        run_schedule,
        openapi,
        event_interest,
        attach_runtime,
        handle_shared,
        before_commit_interest,
        before_commit,
        body_rule,
        before_write_interest,
        before_write,
        requires,
        hook_fields,
    }
    .leak_into_prefix()
}

fn extension() -> &'static Extension {
    // `root_module` ran before the host can call any entry point.
    EXTENSION
        .get()
        .expect("host-sdk: entry point called before the root module was built")
}

fn ffi_error(code: &str, message: impl Into<String>) -> FfiError {
    FfiError {
        code: code.into(),
        message: message.into().into(),
    }
}

fn context<'a>(ctx: &'a FfiContext<'_>) -> Context<'a> {
    Context::new(
        ctx.accountability
            .as_ref()
            .map(Accountability::from_ffi)
            .into_option(),
        &ctx.services,
    )
}

extern "C" fn manifest() -> FfiManifest {
    let result = catch_unwind(|| {
        let ext = extension();
        (ext.id.clone(), ext.name.clone(), ext.version.clone())
    });
    // An extension that panicked while it was built has no id: the host
    // refuses it, and the name carries the reason into its log line.
    let (id, name, version) = result.unwrap_or_else(|p| {
        let reason = BUILD_PANIC
            .get()
            .cloned()
            .unwrap_or_else(|| panic_text(&*p));
        (
            String::new(),
            format!("(panicked while building the extension: {reason})"),
            String::new(),
        )
    });
    FfiManifest {
        id: id.into(),
        name: name.into(),
        version: version.into(),
        sdk_version: crate::SDK_VERSION.into(),
    }
}

extern "C" fn migrations() -> RVec<FfiMigration> {
    let result = catch_unwind(|| {
        extension()
            .migrations
            .iter()
            .map(|(id, steps)| FfiMigration {
                id: id.as_str().into(),
                steps: serde_json::to_string(steps)
                    .unwrap_or_else(|_| "[]".into())
                    .into(),
            })
            .collect::<RVec<_>>()
    });
    result.unwrap_or_default()
}

extern "C" fn init(init: &FfiInit<'_>) -> RResult<(), RString> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let ext = extension();
        crate::logging::install(&ext.id, init.logger.clone(), init.max_log_level);
        match &ext.init {
            Some(job) => job(&Context::new(None, &init.services)).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }));
    match result {
        Ok(Ok(())) => ROk(()),
        Ok(Err(e)) => RErr(e.into()),
        Err(p) => RErr(format!("init panicked: {}", panic_text(&*p)).into()),
    }
}

/// Routes one request; a panicking handler answers 500.
fn answer(request: &FfiRequest, ctx: &FfiContext<'_>) -> SharedResponse {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let router = &extension().router;
        let ctx = context(ctx).with_data_version(router.data_version());
        router.answer(Request::from_ffi(request), &ctx)
    }));
    result
        .unwrap_or_else(|_| Response::error(&ApiError::internal("Internal extension error")).into())
}

extern "C" fn handle(request: &FfiRequest, ctx: &FfiContext<'_>) -> FfiResponse {
    // Hosts before 1.4 take an owned body.
    answer(request, ctx).into_response().into_ffi()
}

extern "C" fn handle_shared(request: &FfiRequest, ctx: &FfiContext<'_>) -> FfiSharedResponse {
    answer(request, ctx).into_ffi()
}

extern "C" fn body_rule(method: RStr<'_>, path: RStr<'_>) -> FfiBodyRule {
    // A panic cannot come from matching routes; if one did, the host's
    // own limits apply.
    catch_unwind(AssertUnwindSafe(|| {
        extension().router.body_rule(method.as_str(), path.as_str())
    }))
    .unwrap_or(crate::BodyRule::HOST_LIMITS)
    .into()
}

extern "C" fn on_event(event: &FfiItemEvent, ctx: &FfiContext<'_>) -> RResult<(), FfiError> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let ext = extension();
        if ext.hooks.is_empty() {
            return Ok(());
        }
        let Some(event) = RawItemEvent::from_ffi(event) else {
            return Ok(());
        };
        run_after_commit(ext, &EventViews::of_text(event), &context(ctx))
    }));
    match result {
        Ok(Ok(())) => ROk(()),
        Ok(Err(e)) => RErr(ffi_error("HOOK_FAILED", e)),
        Err(p) => RErr(ffi_error(
            "PANIC",
            format!("hook panicked: {}", panic_text(&*p)),
        )),
    }
}

extern "C" fn schedules() -> RVec<FfiSchedule> {
    catch_unwind(schedule_list).unwrap_or_default()
}

fn schedule_list() -> RVec<FfiSchedule> {
    extension()
        .schedules
        .iter()
        .map(|s| FfiSchedule {
            name: s.name.as_str().into(),
            spec: match &s.when {
                Schedule::Every(d) => FfiScheduleSpec::Every {
                    seconds: d.as_secs().max(1),
                },
                Schedule::Cron(expr) => FfiScheduleSpec::Cron {
                    expr: expr.as_str().into(),
                },
            },
        })
        .collect()
}

extern "C" fn run_schedule(name: RStr<'_>, ctx: &FfiContext<'_>) -> RResult<(), FfiError> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let Some(job) = extension()
            .schedules
            .iter()
            .find(|s| s.name == name.as_str())
        else {
            return Err(ffi_error(
                "NOT_FOUND",
                format!("no schedule named `{name}`"),
            ));
        };
        (job.job)(&context(ctx)).map_err(|e| ffi_error("JOB_FAILED", e.to_string()))
    }));
    match result {
        Ok(Ok(())) => ROk(()),
        Ok(Err(e)) => RErr(e),
        Err(p) => RErr(ffi_error(
            "PANIC",
            format!("job panicked: {}", panic_text(&*p)),
        )),
    }
}

extern "C" fn openapi() -> RString {
    let result = catch_unwind(|| {
        serde_json::json!({ "paths": extension().router.openapi_paths() }).to_string()
    });
    result.unwrap_or_else(|_| "{}".into()).into()
}

/// `None` (every collection) or the list, as the ABI carries it; when the
/// list cannot be made, every collection rather than a missed event.
fn ffi_interest(
    list: impl FnOnce() -> Option<Vec<String>> + std::panic::UnwindSafe,
) -> FfiEventInterest {
    match catch_unwind(list) {
        Ok(Some(list)) => FfiEventInterest {
            all: false,
            collections: list.into_iter().map(RString::from).collect(),
        },
        Ok(None) | Err(_) => FfiEventInterest {
            all: true,
            collections: RVec::new(),
        },
    }
}

extern "C" fn event_interest() -> FfiEventInterest {
    ffi_interest(|| extension().event_collections())
}

extern "C" fn before_commit_interest() -> FfiEventInterest {
    ffi_interest(|| extension().before_commit_collections())
}

extern "C" fn before_commit(event: &FfiItemEvent, ctx: &FfiContext<'_>) -> RResult<(), FfiError> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let ext = extension();
        if ext.before_commit.is_empty() {
            return Ok(());
        }
        match RawItemEvent::from_ffi(event) {
            Some(event) => run_before_commit(ext, &EventViews::of_text(event), &context(ctx)),
            None => Ok(()),
        }
    }));
    match outcome {
        Ok(Ok(())) => ROk(()),
        Ok(Err(e)) => RErr(e.into_ffi()),
        Err(p) => RErr(ffi_error(
            "PANIC",
            format!("hook panicked: {}", panic_text(&*p)),
        )),
    }
}

extern "C" fn requires() -> RVec<FfiRequirement> {
    catch_unwind(|| {
        extension()
            .requires
            .iter()
            .map(|(id, versions)| FfiRequirement {
                id: id.as_str().into(),
                versions: versions.as_str().into(),
            })
            .collect()
    })
    .unwrap_or_default()
}

extern "C" fn hook_fields() -> RVec<FfiHookFields> {
    catch_unwind(|| {
        extension()
            .hook_fields()
            .iter()
            .map(|(collection, fields)| FfiHookFields {
                collection: collection.as_str().into(),
                fields: fields.iter().map(|f| f.as_str().into()).collect(),
            })
            .collect()
    })
    .unwrap_or_default()
}

extern "C" fn before_write_interest() -> FfiEventInterest {
    ffi_interest(|| extension().before_write_collections())
}

extern "C" fn before_write(
    write: &FfiItemEvent,
    ctx: &FfiContext<'_>,
) -> RResult<ROption<RString>, FfiError> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let ext = extension();
        let Some(raw) = RawItemEvent::from_ffi(write) else {
            return Ok::<_, crate::ItemsError>(None);
        };
        run_before_write(ext, &raw, &context(ctx))
    }));
    match outcome {
        Ok(Ok(changed)) => ROk(changed.map(RString::from).into()),
        Ok(Err(e)) => RErr(e.into_ffi()),
        Err(p) => RErr(ffi_error(
            "PANIC",
            format!("hook panicked: {}", panic_text(&*p)),
        )),
    }
}

extern "C" fn attach_runtime(runtime: HostRuntime_TO<RArc<()>>) {
    let _ = catch_unwind(AssertUnwindSafe(move || {
        extension()
            .router
            .attach_data_version(Box::new(move || runtime.data_version()));
    }));
}
