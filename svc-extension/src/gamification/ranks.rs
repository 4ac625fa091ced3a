//! Ranks: 1 + the number of users whose decay sum is greater.
//!
//! Counting those rows costs a walk of the index proportional to the rank.
//! While the data holds still (reads far outnumber point awards), a sorted
//! copy of every sum answers by binary search instead. The copy is built
//! once the same data version has been asked for a few times, so a stream
//! of awards, each moving the version, never pays for copies it cannot use.

use std::sync::{Arc, Mutex};

use host_sdk::{Context, Items, ItemsError, Query};
use serde_json::{json, Value};

/// Requests at one data version before the copy is built.
const BUILD_AFTER: u32 = 8;

#[derive(Default)]
struct State {
    /// Every user's sum, ascending, and the version it was read under.
    copy: Option<(u64, Arc<Vec<f64>>)>,
    /// The version asked for lately, and how many times.
    asked: (u64, u32),
}

static STATE: Mutex<State> = Mutex::new(State {
    copy: None,
    asked: (0, 0),
});

/// How many sums in `ascending` are greater than `sum`.
pub fn greater_in(ascending: &[f64], sum: f64) -> u64 {
    (ascending.len() - ascending.partition_point(|x| *x <= sum)) as u64
}

fn count_greater(items: &Items<'_>, sum: f64) -> Result<u64, ItemsError> {
    items.count("user_stats", Some(json!({"decay_sum": {"_gt": sum}})))
}

fn read_all(items: &Items<'_>) -> Result<Vec<f64>, ItemsError> {
    let rows = items.read_by_query("user_stats", &Query::new().fields(&["decay_sum"]).limit(-1))?;
    // A missing sum is greater than nothing, as in the count.
    let mut sums: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.get("decay_sum").and_then(Value::as_f64))
        .collect();
    sums.sort_by(f64::total_cmp);
    Ok(sums)
}

/// The number of users whose decay sum is greater than `sum`.
pub fn users_above(ctx: &Context<'_>, items: &Items<'_>, sum: f64) -> Result<u64, ItemsError> {
    let Some(version) = ctx.data_version() else {
        return count_greater(items, sum);
    };
    let build = {
        let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((v, copy)) = &state.copy {
            if *v == version {
                return Ok(greater_in(copy, sum));
            }
        }
        if state.asked.0 == version {
            state.asked.1 += 1;
        } else {
            state.asked = (version, 1);
        }
        // Exactly one request builds the copy.
        state.asked.1 == BUILD_AFTER
    };
    if !build {
        return count_greater(items, sum);
    }
    let copy = Arc::new(read_all(items)?);
    let answer = greater_in(&copy, sum);
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if state.copy.as_ref().is_none_or(|(v, _)| *v < version) {
        state.copy = Some((version, copy));
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::greater_in;

    #[test]
    fn greater_counts_strictly_greater_sums() {
        let sums = [0.0, 1.5, 1.5, 2.0, 10.0];
        assert_eq!(greater_in(&sums, 1.5), 2);
        assert_eq!(greater_in(&sums, 0.0), 4);
        assert_eq!(greater_in(&sums, 10.0), 0);
        assert_eq!(greater_in(&sums, -1.0), 5);
        assert_eq!(greater_in(&[], 3.0), 0);
    }
}
