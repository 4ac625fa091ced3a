//! Time-decayed scores (docs/service-api.md rule 2), kept at constant cost.
//!
//! Rule 2 weighs each point action by `exp(-λ · age_in_days)`. With a fixed
//! anchor time t₀, a user's weighted score at any instant `now` is
//!
//! ```text
//! Σ pᵢ·e^(−λ(now−tᵢ)) = e^(−λ(now−t₀)) · S,   S = Σ pᵢ·e^(λ(tᵢ−t₀))
//! ```
//!
//! so a user keeps one number `S` (`decay_sum`): awarding adds one term,
//! and reading a score needs no rescan. Every user's score decays by the
//! same factor, so ordering users by `S` is exactly the live ordering by
//! weighted points: the leaderboard and ranks are exact at any instant.
//!
//! `S` grows like `e^(λ(now−t₀))`: about e^1.8 a year. An `f64` keeps its
//! relative precision at any magnitude, so the only limit is overflow
//! (e^709); the anchor is moved forward long before that (see
//! [`needs_rebase`]).

use chrono::{DateTime, Utc};

/// λ: the decay constant, per day (docs/service-api.md "Limits").
pub const DECAY_PER_DAY: f64 = 0.005;

const MS_PER_DAY: f64 = 86_400_000.0;

/// Days from `from` to `to` (negative when `to` is earlier).
pub fn days_between(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    (to - from).num_milliseconds() as f64 / MS_PER_DAY
}

/// The term a point action adds to `S`.
pub fn term(points: f64, at: DateTime<Utc>, anchor: DateTime<Utc>) -> f64 {
    points * (DECAY_PER_DAY * days_between(anchor, at)).exp()
}

/// The weighted score at `now` of a user whose sum is `s`.
pub fn weighted_at(s: f64, anchor: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    s * (-DECAY_PER_DAY * days_between(anchor, now)).exp()
}

/// Rule 2 computed directly: Σ points·exp(−λ·age_in_days). For checks.
pub fn weighted_directly(points: &[(f64, DateTime<Utc>)], now: DateTime<Utc>) -> f64 {
    points
        .iter()
        .map(|(p, t)| p * (-DECAY_PER_DAY * days_between(*t, now)).exp())
        .sum()
}

/// Past this exponent the anchor is moved to now: e^300 ≈ 1.9e130 is far
/// from overflow, and reaching it takes about 160 years.
const REBASE_EXPONENT: f64 = 300.0;

pub fn needs_rebase(anchor: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    DECAY_PER_DAY * days_between(anchor, now) > REBASE_EXPONENT
}

/// The factor that carries a sum from `old` anchor to `new` anchor.
pub fn rebase_factor(old: DateTime<Utc>, new: DateTime<Utc>) -> f64 {
    (-DECAY_PER_DAY * days_between(old, new)).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(days: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap() + chrono::Duration::days(days)
    }

    #[test]
    fn anchored_sum_equals_rule_two_at_any_instant() {
        let anchor = t(0);
        let actions = [(50.0, t(3)), (10.0, t(40)), (5.0, t(41)), (100.0, t(300))];
        let s: f64 = actions.iter().map(|(p, at)| term(*p, *at, anchor)).sum();
        for now in [t(300), t(301), t(700), t(5000)] {
            let direct = weighted_directly(&actions, now);
            let fast = weighted_at(s, anchor, now);
            assert!(
                (direct - fast).abs() <= 1e-9 * direct.max(1.0),
                "{direct} vs {fast}"
            );
        }
        // A point awarded now weighs its full value.
        assert!((weighted_at(term(10.0, t(9), anchor), anchor, t(9)) - 10.0).abs() < 1e-12);
    }

    #[test]
    fn ordering_by_sum_is_the_live_ordering() {
        let anchor = t(0);
        let a = term(100.0, t(10), anchor);
        let b = term(90.0, t(20), anchor);
        assert_eq!(
            a > b,
            weighted_at(a, anchor, t(400)) > weighted_at(b, anchor, t(400))
        );
    }

    #[test]
    fn rebasing_keeps_scores() {
        let (old, new) = (t(0), t(70_000));
        assert!(needs_rebase(old, new));
        assert!(!needs_rebase(old, t(365)));
        let s_old = term(10.0, t(69_990), old);
        let s_new = s_old * rebase_factor(old, new);
        let direct = weighted_at(s_old, old, t(70_001));
        assert!((weighted_at(s_new, new, t(70_001)) - direct).abs() <= 1e-9 * direct);
    }
}
