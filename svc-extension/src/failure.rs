//! How an items-service failure becomes an answer (docs/service-api.md
//! "Errors": 500 with the failure's message, or the endpoint's fallback).
//!
//! Failures internal to the platform (storage errors, a busy database) are
//! answered with the endpoint's fallback message and logged in full: their
//! text would leak internals. Anything else, a permission refusal of the
//! platform included, is a 500 with the failure's own message, as
//! docs/service-api.md "Errors" says of every unexpected failure.

use host_sdk::{ApiError, ItemsError};

/// A payload the platform refuses (a reference to nothing, say) is the
/// client's error: `Ok` 400 with the platform's reason; `Err` gives back any
/// other failure.
fn refused_payload(error: ItemsError) -> Result<ApiError, ItemsError> {
    match error {
        ItemsError::InvalidPayload(reason) => Ok(ApiError::bad_request(reason)),
        other => Err(other),
    }
}

/// Maps failures of one endpoint, with its fallback message
/// (docs/service-api.md "Errors").
#[derive(Debug, Clone, Copy)]
pub struct Failure {
    pub fallback: &'static str,
}

impl Failure {
    pub const fn new(fallback: &'static str) -> Self {
        Self { fallback }
    }

    pub fn answer(&self, error: ItemsError) -> ApiError {
        match &error {
            ItemsError::Other { code, message } => {
                log::error!("{}: {code}: {message}", self.fallback);
                ApiError::internal(self.fallback)
            }
            other => {
                let message = other.to_string();
                log::error!("{}: {} {message}", self.fallback, other.code());
                if message.trim().is_empty() {
                    ApiError::internal(self.fallback)
                } else {
                    ApiError::internal(message)
                }
            }
        }
    }

    /// The create-recording shape: the answer plus `details`, the string
    /// form of the failure. A payload the platform refuses (a reference to
    /// nothing, say) is the client's error: 400 with the platform's reason.
    pub fn with_details(&self, error: ItemsError) -> ApiError {
        match refused_payload(error) {
            Ok(client_error) => client_error,
            Err(error) => {
                let details = error.to_string();
                self.answer(error).with_details(details)
            }
        }
    }

    /// [`Failure::answer`], except that a payload the platform refuses is
    /// the client's error: 400 with the platform's reason.
    pub fn of_write(self) -> impl Fn(ItemsError) -> ApiError {
        move |e| refused_payload(e).unwrap_or_else(|other| self.answer(other))
    }

    /// `map_err` adapter.
    pub fn of(self) -> impl Fn(ItemsError) -> ApiError {
        move |e| self.answer(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: Failure = Failure::new("Failed to fetch videos");

    #[test]
    fn internal_failures_use_the_fallback() {
        let e = F.answer(ItemsError::Other {
            code: "INTERNAL".into(),
            message: "no such table: videos".into(),
        });
        assert_eq!(
            (e.status, e.message.as_str()),
            (500, "Failed to fetch videos")
        );
    }

    #[test]
    fn other_failures_keep_their_message() {
        let e = F.answer(ItemsError::Forbidden("You don't have permission".into()));
        assert_eq!(
            (e.status, e.message.as_str()),
            (500, "You don't have permission")
        );
        let e = F.answer(ItemsError::InvalidQuery("bad sort".into()));
        assert_eq!((e.status, e.message.as_str()), (500, "bad sort"));
        let e = F.answer(ItemsError::InvalidQuery(" ".into()));
        assert_eq!(e.message, "Failed to fetch videos");
    }
}
