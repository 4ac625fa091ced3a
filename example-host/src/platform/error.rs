//! The failures of the platform's operations (the items service), with
//! the platform's error codes.

use crate::query::QueryError;
use crate::storage::StoreError;

/// A failure of the items service, with the platform's error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemsError {
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
    #[error("The database is busy, try again")]
    Unavailable,
    #[error("{0}")]
    Internal(String),
}

impl ItemsError {
    pub fn code(&self) -> &'static str {
        match self {
            ItemsError::Forbidden(_) => "FORBIDDEN",
            ItemsError::NotFound(_) => "NOT_FOUND",
            ItemsError::InvalidQuery(_) => "INVALID_QUERY",
            ItemsError::InvalidPayload(_) => "INVALID_PAYLOAD",
            ItemsError::NotUnique(_) => "RECORD_NOT_UNIQUE",
            ItemsError::Unavailable => "SERVICE_UNAVAILABLE",
            ItemsError::Internal(_) => "INTERNAL",
        }
    }

    /// The error a code names (the inverse of [`ItemsError::code`]), for
    /// failures reported across the extension boundary; `None` for a code
    /// the platform does not know, or for `INTERNAL`, whose message is not
    /// the platform's own.
    pub fn from_code(code: &str, message: String) -> Option<Self> {
        Some(match code {
            "FORBIDDEN" => ItemsError::Forbidden(message),
            "NOT_FOUND" => ItemsError::NotFound(message),
            "INVALID_QUERY" => ItemsError::InvalidQuery(message),
            "INVALID_PAYLOAD" => ItemsError::InvalidPayload(message),
            "RECORD_NOT_UNIQUE" => ItemsError::NotUnique(message),
            "SERVICE_UNAVAILABLE" => ItemsError::Unavailable,
            _ => return None,
        })
    }

    pub fn forbidden() -> Self {
        ItemsError::Forbidden("You don't have permission to access this.".into())
    }
}

impl From<StoreError> for ItemsError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotUnique { collection, fields } => {
                ItemsError::NotUnique(not_unique_message(&collection, &fields))
            }
            StoreError::Busy => ItemsError::Unavailable,
            StoreError::Invalid(m) => ItemsError::InvalidPayload(m),
            StoreError::Backend(m) => ItemsError::Internal(m),
            StoreError::Aborted => ItemsError::Internal("transaction aborted".into()),
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

impl From<QueryError> for ItemsError {
    fn from(e: QueryError) -> Self {
        ItemsError::InvalidQuery(e.0)
    }
}
