//! The gamification score as docs/service-api.md rule 2 defines it, recomputed
//! from point actions to check what the service serves.

use crate::time::DAY_MS;

/// Decay of points per day of age.
pub const DECAY: f64 = 0.005;

/// Rule 2 at instant `at` (epoch ms): Σ points·e^(−DECAY·age in days) over
/// `(points, created at)` pairs (epoch ms).
pub fn weighted(points: impl IntoIterator<Item = (i64, i64)>, at: i64) -> f64 {
    points
        .into_iter()
        .map(|(p, created)| p as f64 * (-DECAY * (at - created) as f64 / DAY_MS).exp())
        .sum()
}
