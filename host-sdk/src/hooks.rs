//! Running the in-transaction hooks of an extension on one write, whichever
//! way the host calls them (through the ABI or linked in), and turning what
//! they return into the error that refuses the write.

use std::cell::OnceCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::context::Context;
use crate::error::{ApiError, BoxError, ItemsError};
use crate::events::{ItemEvent, PendingWrite, RawItemEvent};
use crate::extension::{Extension, Hook, HookFn};

/// One event as the hooks are given it: the host's text, and the trees
/// parsed from it once, for the first hook that takes trees.
pub(crate) struct EventViews<'e> {
    raw: RawItemEvent<'e>,
    given: Option<&'e ItemEvent>,
    parsed: OnceCell<ItemEvent>,
}

impl<'e> EventViews<'e> {
    pub fn of_text(raw: RawItemEvent<'e>) -> Self {
        Self {
            raw,
            given: None,
            parsed: OnceCell::new(),
        }
    }

    /// Views of an event a host gave already parsed (`raw` holds its text).
    pub fn of_parsed(raw: RawItemEvent<'e>, parsed: &'e ItemEvent) -> Self {
        Self {
            raw,
            given: Some(parsed),
            parsed: OnceCell::new(),
        }
    }

    pub fn collection(&self) -> &str {
        self.raw.collection
    }

    pub fn accountability(&self) -> Option<crate::context::Accountability> {
        self.raw.accountability.clone()
    }

    fn tree(&self) -> &ItemEvent {
        match self.given {
            Some(event) => event,
            None => self.parsed.get_or_init(|| self.raw.parse()),
        }
    }
}

impl Hook {
    /// Runs the hook on the view of the event it takes.
    pub(crate) fn call(&self, event: &EventViews<'_>, ctx: &Context<'_>) -> Result<(), BoxError> {
        match &self.run {
            HookFn::Parsed(run) => run(event.tree(), ctx),
            HookFn::Raw(run) => run(&event.raw, ctx),
        }
    }
}

/// The text of an event given parsed, for hooks that read text.
pub(crate) struct EventText {
    payload: String,
    before: Option<String>,
    after: Option<String>,
}

impl EventText {
    /// The text of `event`, written only when one of `hooks` that reads
    /// text watches its collection; otherwise empty, as nothing reads it.
    pub fn of(event: &ItemEvent, hooks: &[Hook]) -> Self {
        let read = hooks
            .iter()
            .any(|h| matches!(h.run, HookFn::Raw(_)) && h.wants(&event.collection));
        if !read {
            return Self {
                payload: String::new(),
                before: None,
                after: None,
            };
        }
        let list = |records: &[serde_json::Value], wanted: bool| {
            wanted.then(|| serde_json::to_string(records).unwrap_or_else(|_| "[]".into()))
        };
        use crate::events::EventKind::*;
        Self {
            payload: event.payload.to_string(),
            before: list(&event.before, event.kind != Create),
            after: list(&event.after, event.kind != Delete),
        }
    }

    pub fn views<'e>(&'e self, event: &'e ItemEvent) -> EventViews<'e> {
        let raw = RawItemEvent::new(
            event.kind,
            &event.collection,
            event.keys.clone(),
            &self.payload,
            self.before.as_deref(),
            self.after.as_deref(),
            event.accountability.clone(),
        );
        EventViews::of_parsed(raw, event)
    }
}

/// The code of a refusal that is neither an items error nor a client error.
pub const HOOK_FAILED: &str = "HOOK_FAILED";

/// Runs, in registration order, every in-transaction hook watching the
/// event's collection. The first error (or panic) stops them and is the
/// refusal of the write.
pub(crate) fn run_before_commit(
    ext: &Extension,
    event: &EventViews<'_>,
    ctx: &Context<'_>,
) -> Result<(), ItemsError> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        for hook in ext
            .before_commit
            .iter()
            .filter(|h| h.wants(event.collection()))
        {
            hook.call(event, ctx).map_err(refusal)?;
        }
        Ok(())
    }));
    outcome.unwrap_or_else(|p| {
        Err(ItemsError::Other {
            code: "PANIC".into(),
            message: format!("hook panicked: {}", panic_text(&*p)),
        })
    })
}

/// Runs, in registration order, every before-write hook watching the
/// write's collection, each on the write as the previous one left it;
/// `Some(payload)` when they changed the payload. The first error (or
/// panic) stops them and is the refusal of the write.
pub(crate) fn run_before_write(
    ext: &Extension,
    write: &RawItemEvent<'_>,
    ctx: &Context<'_>,
) -> Result<Option<String>, ItemsError> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut pending: PendingWrite = write.pending();
        let given = pending.payload.clone();
        for hook in ext
            .before_write
            .iter()
            .filter(|h| h.wants(write.collection))
        {
            (hook.run)(&mut pending, ctx).map_err(refusal)?;
        }
        Ok((pending.payload != given).then(|| pending.payload.to_string()))
    }));
    outcome.unwrap_or_else(|p| {
        Err(ItemsError::Other {
            code: "PANIC".into(),
            message: format!("hook panicked: {}", panic_text(&*p)),
        })
    })
}

/// Runs every after-commit hook watching the event's collection, each
/// whatever the others did; the failures, joined.
pub(crate) fn run_after_commit(
    ext: &Extension,
    event: &EventViews<'_>,
    ctx: &Context<'_>,
) -> Result<(), String> {
    let failures: Vec<String> = ext
        .hooks
        .iter()
        .filter(|hook| hook.wants(event.collection()))
        .filter_map(|hook| hook.call(event, ctx).err().map(|e| e.to_string()))
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// What a hook's error tells the writer: an items error keeps its code (a
/// write the hook made was refused, say), a client error keeps its meaning,
/// anything else is the hook's failure.
pub(crate) fn refusal(e: BoxError) -> ItemsError {
    let e = match e.downcast::<ItemsError>() {
        Ok(items) => return *items,
        Err(e) => e,
    };
    match e.downcast::<ApiError>() {
        Ok(api) => match api.status {
            400 => ItemsError::InvalidPayload(api.message),
            403 => ItemsError::Forbidden(api.message),
            404 => ItemsError::NotFound(api.message),
            409 => ItemsError::NotUnique(api.message),
            _ => ItemsError::Other {
                code: HOOK_FAILED.into(),
                message: api.message,
            },
        },
        Err(e) => ItemsError::Other {
            code: HOOK_FAILED.into(),
            message: e.to_string(),
        },
    }
}

pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_keep_the_meaning_of_the_hooks_error() {
        let items: BoxError = Box::new(ItemsError::NotUnique("taken".into()));
        assert_eq!(refusal(items), ItemsError::NotUnique("taken".into()));
        let bad: BoxError = Box::new(ApiError::bad_request("title is required"));
        assert_eq!(
            refusal(bad),
            ItemsError::InvalidPayload("title is required".into())
        );
        let forbidden: BoxError = Box::new(ApiError::forbidden("not yours"));
        assert_eq!(
            refusal(forbidden),
            ItemsError::Forbidden("not yours".into())
        );
        let other: BoxError = "disk on fire".into();
        assert_eq!(
            refusal(other),
            ItemsError::Other {
                code: HOOK_FAILED.into(),
                message: "disk on fire".into()
            }
        );
        let teapot: BoxError = Box::new(ApiError::new(418, "teapot"));
        assert_eq!(refusal(teapot).code(), HOOK_FAILED);
    }
}
