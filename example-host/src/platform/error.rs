//! The failures of the platform's operations (the items service), with
//! the platform's error codes.

use platform_store::query::QueryError;
use platform_store::storage::StoreError;

/// A failure of the items service, with the platform's error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlatformError {
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    InvalidQuery(String),
    #[error("{0}")]
    InvalidPayload(String),
    #[error("{0}")]
    NotUnique(String),
    /// A value a field may not hold (an email that is not one), worded as
    /// Directus words it: `Validation failed for field "…". …`.
    #[error("{0}")]
    FailedValidation(String),
    /// A write that would break a rule of the platform's own data (the
    /// last administrator removed): Directus's 422.
    #[error("{0}")]
    Unprocessable(String),
    #[error("The database is busy, try again")]
    Unavailable,
    #[error("{0}")]
    Internal(String),
}

impl PlatformError {
    pub fn code(&self) -> &'static str {
        match self {
            PlatformError::Forbidden(_) => "FORBIDDEN",
            PlatformError::NotFound(_) => "NOT_FOUND",
            PlatformError::InvalidQuery(_) => "INVALID_QUERY",
            PlatformError::InvalidPayload(_) => "INVALID_PAYLOAD",
            PlatformError::NotUnique(_) => "RECORD_NOT_UNIQUE",
            PlatformError::FailedValidation(_) => "FAILED_VALIDATION",
            PlatformError::Unprocessable(_) => "UNPROCESSABLE_CONTENT",
            PlatformError::Unavailable => "SERVICE_UNAVAILABLE",
            PlatformError::Internal(_) => "INTERNAL",
        }
    }

    /// The error a code names (the inverse of [`PlatformError::code`]), for
    /// failures reported across the extension boundary; `None` for a code
    /// the platform does not know, or for `INTERNAL`, whose message is not
    /// the platform's own.
    pub fn from_code(code: &str, message: String) -> Option<Self> {
        Some(match code {
            "FORBIDDEN" => PlatformError::Forbidden(message),
            "NOT_FOUND" => PlatformError::NotFound(message),
            "INVALID_QUERY" => PlatformError::InvalidQuery(message),
            "INVALID_PAYLOAD" => PlatformError::InvalidPayload(message),
            "RECORD_NOT_UNIQUE" => PlatformError::NotUnique(message),
            "FAILED_VALIDATION" => PlatformError::FailedValidation(message),
            "UNPROCESSABLE_CONTENT" => PlatformError::Unprocessable(message),
            "SERVICE_UNAVAILABLE" => PlatformError::Unavailable,
            _ => return None,
        })
    }

    pub fn forbidden() -> Self {
        PlatformError::Forbidden("You don't have permission to access this.".into())
    }
}

impl From<StoreError> for PlatformError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotUnique { collection, fields } => {
                PlatformError::NotUnique(not_unique_message(&collection, &fields))
            }
            StoreError::Busy => PlatformError::Unavailable,
            StoreError::Invalid(m) => PlatformError::InvalidPayload(m),
            StoreError::Backend(m) => PlatformError::Internal(m),
            StoreError::Aborted => PlatformError::Internal("transaction aborted".into()),
        }
    }
}

/// A unique violation worded as Directus words it.
fn not_unique_message(collection: &str, fields: &[String]) -> String {
    match fields {
        [field] => {
            format!("Value for field \"{field}\" in collection \"{collection}\" has to be unique.")
        }
        [] => format!("Value in collection \"{collection}\" has to be unique."),
        several => format!(
            "Values for fields {} in collection \"{collection}\" have to be unique together.",
            several
                .iter()
                .map(|f| format!("\"{f}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl From<QueryError> for PlatformError {
    fn from(e: QueryError) -> Self {
        PlatformError::InvalidQuery(e.0)
    }
}
