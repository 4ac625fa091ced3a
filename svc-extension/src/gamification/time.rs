//! Instants as the platform stores them: RFC 3339 UTC with milliseconds.

use chrono::{DateTime, SecondsFormat, Utc};

/// Now, truncated to the millisecond the platform stores, so that a value
/// computed from it equals one recomputed from the stored timestamp.
pub fn now_ms() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now)
}

pub fn format_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}
