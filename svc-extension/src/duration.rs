//! Durations (`duration`, `duration_played`, `duration_watched`; in
//! milliseconds, docs/decisions.md §7): finite numbers, never negative, and no
//! larger than JavaScript's largest exact integer, so that the sums and
//! means the analytics take of them stay exact and in range.

use host_sdk::ApiError;
use serde_json::Value;

/// The largest duration accepted: 2^53 − 1 ms (about 285,000 years).
pub const MAX_MS: f64 = 9_007_199_254_740_991.0;

/// The value when it is a valid duration; 400 `<field> must be a number`
/// for another type, `<field> must be a non-negative number` for a number
/// out of range.
pub fn checked<'a>(field: &str, value: &'a Value) -> Result<&'a Value, ApiError> {
    let Some(ms) = value.as_f64().filter(|_| value.is_number()) else {
        return Err(ApiError::bad_request(format!("{field} must be a number")));
    };
    if !(0.0..=MAX_MS).contains(&ms) {
        return Err(ApiError::bad_request(format!(
            "{field} must be a non-negative number"
        )));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_finite_non_negative_numbers_in_range_are_durations() {
        for ok in [
            json!(0),
            json!(0.0),
            json!(1500.5),
            json!(9_007_199_254_740_991u64),
        ] {
            assert_eq!(checked("duration", &ok), Ok(&ok));
        }
        for (bad, message) in [
            (json!(-1), "duration must be a non-negative number"),
            (json!(-0.5), "duration must be a non-negative number"),
            (json!(1e308), "duration must be a non-negative number"),
            (
                json!(9_007_199_254_740_993u64),
                "duration must be a non-negative number",
            ),
            (json!("5"), "duration must be a number"),
            (json!(true), "duration must be a number"),
        ] {
            assert_eq!(
                checked("duration", &bad).map_err(|e| e.message),
                Err(message.to_string()),
                "{bad}"
            );
        }
    }
}
