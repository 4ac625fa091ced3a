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

/// One row of the seeded-achievements table of docs/decisions.md §7.
#[derive(Debug, Clone)]
pub struct Seeded {
    pub code: String,
    pub name: String,
    pub category: String,
    pub required: i64,
    pub reward: i64,
    pub sort: i64,
}

/// The seeded achievements as docs/decisions.md §7 lists them, in its
/// order; the tests expect what the document says, never the code's table.
pub fn seeded_achievements() -> Vec<Seeded> {
    let path = crate::workspace_root().join("docs/decisions.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header = "| code | name | category | required_count | points_reward | sort |";
    let rows: Vec<Seeded> = doc
        .lines()
        .skip_while(|l| l.trim() != header)
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let c: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            let n = |i: usize| c[i].parse::<i64>().expect("a number in the table");
            Seeded {
                code: c[0].into(),
                name: c[1].into(),
                category: c[2].into(),
                required: n(3),
                reward: n(4),
                sort: n(5),
            }
        })
        .collect();
    assert_eq!(rows.len(), 17, "the table of docs/decisions.md §7");
    rows
}
