//! Running an extension inside the host's own process, without the ABI.
//!
//! A host that links an extension crate statically (as `example-host` does
//! with its `inprocess` feature, to measure what the ABI costs) calls these
//! instead of the library's entry points: same router, hooks and jobs, same
//! panic containment, no FFI request/response types and no trait-object
//! vtables of abi_stable.

use std::panic::{catch_unwind, AssertUnwindSafe};

pub use crate::items::Services;

use crate::context::{Accountability, Context};
use crate::error::ApiError;
use crate::error::ItemsError;
use crate::events::{ItemEvent, RawItemEvent};
use crate::extension::{Extension, Schedule};
use crate::hooks::{
    panic_text, run_after_commit, run_before_commit, run_before_write, EventText, EventViews,
};
use crate::http::{Request, Response, SharedResponse};

impl Extension {
    /// The extension's display name.
    #[doc(hidden)]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The extension's own version.
    #[doc(hidden)]
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The registered schedules.
    #[doc(hidden)]
    pub fn schedule_list(&self) -> Vec<(String, Schedule)> {
        self.schedules
            .iter()
            .map(|s| (s.name.clone(), s.when.clone()))
            .collect()
    }

    /// Lets cached routes keep answers (see [`crate::Route::cached`]):
    /// `source` returns the host's data version, which changes with every
    /// committed change to the stored data. Only the first call counts.
    #[doc(hidden)]
    pub fn attach_data_version(&self, source: impl Fn() -> u64 + Send + Sync + 'static) {
        self.router.attach_data_version(Box::new(source));
    }

    /// Handles one request; a panicking handler answers 500
    /// `Internal extension error`.
    #[doc(hidden)]
    pub fn handle_direct(
        &self,
        request: Request,
        accountability: Option<Accountability>,
        services: &dyn Services,
    ) -> Response {
        self.handle_direct_shared(request, accountability, services)
            .into_response()
    }

    /// What the route a request would reach accepts as a body (the host
    /// checks it before reading the body; see [`crate::Route::max_body`]).
    #[doc(hidden)]
    pub fn body_rule(&self, method: &str, path: &str) -> crate::BodyRule {
        self.router.body_rule(method, path)
    }

    /// [`Extension::handle_direct`] with the body shared: a kept answer is
    /// not copied.
    #[doc(hidden)]
    pub fn handle_direct_shared(
        &self,
        request: Request,
        accountability: Option<Accountability>,
        services: &dyn Services,
    ) -> SharedResponse {
        let ctx =
            Context::new(accountability, services).with_data_version(self.router.data_version());
        catch_unwind(AssertUnwindSafe(|| self.router.answer(request, &ctx))).unwrap_or_else(|_| {
            Response::error(&ApiError::internal("Internal extension error")).into()
        })
    }

    /// Delivers one item event to every hook.
    #[doc(hidden)]
    pub fn deliver_direct(&self, event: &ItemEvent, services: &dyn Services) -> Result<(), String> {
        let text = EventText::of(event, &self.hooks);
        self.deliver(&text.views(event), services)
    }

    /// [`Extension::deliver_direct`] with the event as the host's text:
    /// hooks that read text get it as it is, and it is parsed into trees
    /// only for hooks that take trees.
    #[doc(hidden)]
    pub fn deliver_direct_raw(
        &self,
        event: &RawItemEvent<'_>,
        services: &dyn Services,
    ) -> Result<(), String> {
        self.deliver(&EventViews::of_text(event.clone()), services)
    }

    fn deliver(&self, event: &EventViews<'_>, services: &dyn Services) -> Result<(), String> {
        let ctx = Context::new(event.accountability(), services);
        catch_unwind(AssertUnwindSafe(|| run_after_commit(self, event, &ctx)))
            .unwrap_or_else(|p| Err(format!("hook panicked: {}", panic_text(&*p))))
    }

    /// Runs the in-transaction hooks on one write; `services` must be bound
    /// to the writing transaction. An error refuses the write.
    #[doc(hidden)]
    pub fn before_commit_direct(
        &self,
        event: &ItemEvent,
        services: &dyn Services,
    ) -> Result<(), ItemsError> {
        if self.before_commit.is_empty() {
            return Ok(());
        }
        let text = EventText::of(event, &self.before_commit);
        self.run_before_commit(&text.views(event), services)
    }

    /// [`Extension::before_commit_direct`] with the event as the host's
    /// text.
    #[doc(hidden)]
    pub fn before_commit_direct_raw(
        &self,
        event: &RawItemEvent<'_>,
        services: &dyn Services,
    ) -> Result<(), ItemsError> {
        if self.before_commit.is_empty() {
            return Ok(());
        }
        self.run_before_commit(&EventViews::of_text(event.clone()), services)
    }

    /// Runs the before-write hooks on one write about to be made (SDK
    /// 1.9); `services` must be bound to the writing transaction.
    /// `Ok(Some(payload))` when they changed the payload; an error refuses
    /// the write.
    #[doc(hidden)]
    pub fn before_write_direct(
        &self,
        write: &RawItemEvent<'_>,
        services: &dyn Services,
    ) -> Result<Option<String>, ItemsError> {
        if self.before_write.is_empty() {
            return Ok(None);
        }
        let ctx = Context::new(write.accountability.clone(), services);
        run_before_write(self, write, &ctx)
    }

    fn run_before_commit(
        &self,
        event: &EventViews<'_>,
        services: &dyn Services,
    ) -> Result<(), ItemsError> {
        run_before_commit(self, event, &Context::new(event.accountability(), services))
    }

    /// Runs one registered job by name.
    #[doc(hidden)]
    pub fn run_schedule_direct(&self, name: &str, services: &dyn Services) -> Result<(), String> {
        let Some(job) = self.schedules.iter().find(|s| s.name == name) else {
            return Err(format!("no schedule named `{name}`"));
        };
        let ctx = Context::new(None, services);
        match catch_unwind(AssertUnwindSafe(|| (job.job)(&ctx))) {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(p) => Err(format!("job panicked: {}", panic_text(&*p))),
        }
    }

    /// Runs the init callback, if any.
    #[doc(hidden)]
    pub fn init_direct(&self, services: &dyn Services) -> Result<(), String> {
        let Some(init) = &self.init else {
            return Ok(());
        };
        let ctx = Context::new(None, services);
        match catch_unwind(AssertUnwindSafe(|| init(&ctx))) {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(p) => Err(format!("init panicked: {}", panic_text(&*p))),
        }
    }
}

/// Runs `work` with the [`Context`] a handler of `accountability`'s
/// request would get over `services` (no data version: nothing is kept).
/// A test kit uses it to call an extension's own functions as its
/// handlers do.
pub fn with_context<T>(
    accountability: Option<Accountability>,
    services: &dyn Services,
    work: impl FnOnce(&Context<'_>) -> T,
) -> T {
    work(&Context::new(accountability, services))
}

impl Request {
    /// Adds a header (for hosts building requests).
    #[doc(hidden)]
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.push_header(name, value);
        self
    }
}
