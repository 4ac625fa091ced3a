//! Running the in-transaction hooks of an extension on one write, whichever
//! way the host calls them (through the ABI or linked in), and turning what
//! they return into the error that refuses the write.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::context::Context;
use crate::error::{ApiError, BoxError, ItemsError};
use crate::events::ItemEvent;
use crate::extension::Extension;

/// The code of a refusal that is neither an items error nor a client error.
pub const HOOK_FAILED: &str = "HOOK_FAILED";

/// Runs, in registration order, every in-transaction hook watching the
/// event's collection. The first error (or panic) stops them and is the
/// refusal of the write.
pub(crate) fn run_before_commit(
    ext: &Extension,
    event: &ItemEvent,
    ctx: &Context<'_>,
) -> Result<(), ItemsError> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        for hook in ext
            .before_commit
            .iter()
            .filter(|h| h.wants(&event.collection))
        {
            (hook.run)(event, ctx).map_err(refusal)?;
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
