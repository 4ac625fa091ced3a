//! The facade's error types.

use crate::abi::FfiError;

/// Any error a hook, schedule or init callback may return; it is logged by the host.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An HTTP error answer: `{"error": message}` (plus `details` when set).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {message}")]
pub struct ApiError {
    /// The HTTP status of the answer.
    pub status: u16,
    /// The `error` text of the body.
    pub message: String,
    /// An optional `details` text of the body.
    pub details: Option<String>,
}

impl ApiError {
    /// An error answer with this status and `error` text.
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            details: None,
        }
    }
    /// 400 with this text.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, message)
    }
    /// 401 with this text.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(401, message)
    }
    /// 403 with this text.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, message)
    }
    /// 404 with this text.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(404, message)
    }
    /// 409 with this text (SDK 1.9): the request conflicts with the
    /// state of the data (a duplicate, say).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(409, message)
    }
    /// 500 with this text.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, message)
    }
    /// Adds a `details` member to the error body.
    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = Some(details.into());
        self
    }
}

/// A failure of the host's item services.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemsError {
    /// The access in use may not do this (`FORBIDDEN`).
    #[error("{0}")]
    Forbidden(String),
    /// A unique constraint was violated (`RECORD_NOT_UNIQUE`).
    #[error("{0}")]
    NotUnique(String),
    /// Bad collection, field, filter or sort (`INVALID_QUERY`).
    #[error("{0}")]
    InvalidQuery(String),
    /// Bad payload: unknown field, wrong type, missing required value (`INVALID_PAYLOAD`).
    #[error("{0}")]
    InvalidPayload(String),
    /// The item to update or delete does not exist (`NOT_FOUND`).
    #[error("{0}")]
    NotFound(String),
    /// Another failure, with the host's code (`INTERNAL`,
    /// `SERVICE_UNAVAILABLE`, ...) and message.
    #[error("{message}")]
    Other {
        /// The host's code.
        code: String,
        /// The host's message.
        message: String,
    },
}

impl ItemsError {
    /// The platform's error code.
    pub fn code(&self) -> &str {
        match self {
            ItemsError::Forbidden(_) => "FORBIDDEN",
            ItemsError::NotUnique(_) => "RECORD_NOT_UNIQUE",
            ItemsError::InvalidQuery(_) => "INVALID_QUERY",
            ItemsError::InvalidPayload(_) => "INVALID_PAYLOAD",
            ItemsError::NotFound(_) => "NOT_FOUND",
            ItemsError::Other { code, .. } => code,
        }
    }

    pub(crate) fn from_ffi(e: FfiError) -> Self {
        let message = e.message.into_string();
        match e.code.as_str() {
            "FORBIDDEN" => ItemsError::Forbidden(message),
            "RECORD_NOT_UNIQUE" => ItemsError::NotUnique(message),
            "INVALID_QUERY" => ItemsError::InvalidQuery(message),
            "INVALID_PAYLOAD" => ItemsError::InvalidPayload(message),
            "NOT_FOUND" => ItemsError::NotFound(message),
            code => ItemsError::Other {
                code: code.to_string(),
                message,
            },
        }
    }

    pub(crate) fn into_ffi(self) -> FfiError {
        FfiError {
            code: self.code().into(),
            message: self.to_string().into(),
        }
    }

    /// The host answered with text that is not what was asked for.
    pub fn decode(what: &str, e: serde_json::Error) -> Self {
        ItemsError::Other {
            code: "INTERNAL".into(),
            message: format!("could not decode {what}: {e}"),
        }
    }
}

/// The default answer to an items failure a handler does not handle itself:
/// 403 for `FORBIDDEN`, 404 for `NOT_FOUND`, 400 for invalid queries,
/// payloads and unique violations, 500 otherwise; the message is the error's.
impl From<ItemsError> for ApiError {
    fn from(e: ItemsError) -> Self {
        let status = match &e {
            ItemsError::Forbidden(_) => 403,
            ItemsError::NotFound(_) => 404,
            ItemsError::InvalidQuery(_)
            | ItemsError::InvalidPayload(_)
            | ItemsError::NotUnique(_) => 400,
            ItemsError::Other { .. } => 500,
        };
        ApiError::new(status, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_errors_map_to_statuses_and_round_trip_their_codes() {
        let cases = [
            (ItemsError::Forbidden("f".into()), 403, "FORBIDDEN"),
            (ItemsError::NotFound("n".into()), 404, "NOT_FOUND"),
            (ItemsError::NotUnique("u".into()), 400, "RECORD_NOT_UNIQUE"),
            (ItemsError::InvalidQuery("q".into()), 400, "INVALID_QUERY"),
            (
                ItemsError::InvalidPayload("p".into()),
                400,
                "INVALID_PAYLOAD",
            ),
            (
                ItemsError::Other {
                    code: "INTERNAL".into(),
                    message: "x".into(),
                },
                500,
                "INTERNAL",
            ),
        ];
        for (e, status, code) in cases {
            assert_eq!(e.code(), code);
            let ffi = FfiError {
                code: code.into(),
                message: e.to_string().into(),
            };
            assert_eq!(ItemsError::from_ffi(ffi), e);
            assert_eq!(ApiError::from(e).status, status);
        }
    }
}
