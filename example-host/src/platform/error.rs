//! The failures of the platform's operations (the items service), with
//! the platform's error codes.

use platform_store::query::QueryError;
use platform_store::storage::StoreError;

/// Where a refused value is, as Directus's error `extensions` name it
/// (`collection`, `field`, and a validation's `type`), so that a client
/// shows the error at its field. Empty for failures reported across the
/// extension boundary, which carry their message only.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorPlace {
    pub collection: Option<String>,
    pub field: Option<String>,
    /// The rule the value broke (`email`).
    pub rule: Option<&'static str>,
}

impl ErrorPlace {
    /// The members it adds to an error's `extensions`.
    pub fn extensions(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut out = serde_json::Map::new();
        let mut put = |name: &str, value: Option<&str>| {
            if let Some(v) = value {
                out.insert(name.into(), v.into());
            }
        };
        put("collection", self.collection.as_deref());
        put("field", self.field.as_deref());
        put("type", self.rule);
        out
    }
}

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
    NotUnique(String, ErrorPlace),
    /// A value a field may not hold (an email that is not one), worded as
    /// Directus words it: `Validation failed for field "…". …`.
    #[error("{0}")]
    FailedValidation(String, ErrorPlace),
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
            PlatformError::NotUnique(..) => "RECORD_NOT_UNIQUE",
            PlatformError::FailedValidation(..) => "FAILED_VALIDATION",
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
            "RECORD_NOT_UNIQUE" => PlatformError::NotUnique(message, ErrorPlace::default()),
            "FAILED_VALIDATION" => PlatformError::FailedValidation(message, ErrorPlace::default()),
            "UNPROCESSABLE_CONTENT" => PlatformError::Unprocessable(message),
            "SERVICE_UNAVAILABLE" => PlatformError::Unavailable,
            _ => return None,
        })
    }

    pub fn forbidden() -> Self {
        PlatformError::Forbidden("You don't have permission to access this.".into())
    }

    /// Where the refused value is, for the failures that name one.
    pub fn place(&self) -> Option<&ErrorPlace> {
        match self {
            PlatformError::NotUnique(_, place) | PlatformError::FailedValidation(_, place) => {
                Some(place)
            }
            _ => None,
        }
    }
}

impl From<StoreError> for PlatformError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotUnique { collection, fields } => {
                let place = ErrorPlace {
                    field: match fields.as_slice() {
                        [field] => Some(field.clone()),
                        _ => None,
                    },
                    collection: Some(collection.clone()),
                    rule: None,
                };
                PlatformError::NotUnique(not_unique_message(&collection, &fields), place)
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
