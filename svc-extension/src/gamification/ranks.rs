//! Ranks: 1 + the number of users whose decay sum is strictly greater,
//! answered in logarithmic time from a kept count tree
//! ([`crate::count_tree`]), exact on every backend.
//!
//! A sum maps to a 64-bit key whose order is the sums' (IEEE 754 bits,
//! flipped as usual). The users above a sum are then, for each level, the
//! users under the siblings that follow the sum's own node (at most 255
//! nodes, one range of the `node` index each), plus the users whose key
//! shares all [`count_tree::LEVELS`] bytes and whose sum is greater (a range of the
//! `decay_sum` index over sums that agree in their first 24 bits: a
//! sliver of the scores, ties included).
//!
//! The same tree finds where a leaderboard page at a deep offset starts
//! ([`page_start`]): a walk down the levels, then a short offset inside
//! one leaf, instead of a walk of every row above.
//!
//! The in-transaction hook on `user_stats` moves the tree with every write
//! of a sum, whatever path made it, in the writing transaction. A database
//! made before the tree existed (or loaded behind the platform's back) is
//! counted once, in one transaction, by the first rank asked for; the
//! state row's `ranks_counted` says it was.

use host_sdk::{Context, Items, ItemsError};
use serde_json::{json, Value};

use super::ties;
use crate::count_tree::{self, Tree};

/// The collection of the tree's nodes.
pub const COUNTS: &str = "user_rank_counts";
/// Whether the tree counts every stats row (on `gamification_state`).
pub const COUNTED: &str = "ranks_counted";

/// The rank tree: users per leading bytes of their sum's key.
const TREE: Tree = Tree {
    nodes: COUNTS,
    count: "users",
    counted: COUNTED,
    rows: "user_stats",
    counts: || json!({"decay_sum": {"_nnull": true}}),
    field: "decay_sum",
    key_of: |sum| counted_key(sum.and_then(Value::as_f64)),
};

/// The key of a sum: ordered as the sums are (`-0.0` is `0.0`).
pub fn key(sum: f64) -> u64 {
    let bits = if sum == 0.0 { 0 } else { sum.to_bits() };
    if bits >> 63 == 0 {
        bits | 1 << 63
    } else {
        !bits
    }
}

/// The sum of a key ([`key`]'s inverse).
fn sum_of(key: u64) -> f64 {
    if key >> 63 == 1 {
        f64::from_bits(key & !(1 << 63))
    } else {
        f64::from_bits(!key)
    }
}

/// The key of a sum the tree counts (finite ones).
fn counted_key(sum: Option<f64>) -> Option<u64> {
    sum.filter(|s| s.is_finite()).map(key)
}

/// The nodes whose users' sums are all greater than `sum`'s and agree with
/// it above their level (see [`count_tree::siblings_after`]).
pub fn siblings_above(sum: f64) -> Vec<(i64, i64)> {
    count_tree::siblings_after(key(sum))
}

/// The sums that share the first [`count_tree::LEVELS`] bytes of `sum`'s key and are
/// greater: (exclusive, inclusive) bounds.
pub fn greater_in_leaf(sum: f64) -> (f64, f64) {
    (sum, sum_of(count_tree::leaf_top(key(sum))))
}

/// Moves the tree by a write's users, each from their sum before to their
/// sum after (`None`: no row), in the writing transaction.
pub fn follow(
    items: &Items<'_>,
    sums: impl IntoIterator<Item = (Option<f64>, Option<f64>)>,
) -> Result<(), ItemsError> {
    let keys = sums
        .into_iter()
        .map(|(before, after)| (counted_key(before), counted_key(after)));
    TREE.follow(items, keys)
}

/// The number of users whose decay sum is greater than `sum`.
pub fn users_above(ctx: &Context<'_>, items: &Items<'_>, sum: f64) -> Result<u64, ItemsError> {
    TREE.ensure_counted(ctx)?;
    let (low, high) = greater_in_leaf(sum);
    let in_leaf = items.count(
        "user_stats",
        Some(json!({"_and": [{"decay_sum": {"_gt": low}}, {"decay_sum": {"_lte": high}}]})),
    )?;
    let above = TREE.rows_in(items, &siblings_above(sum))?;
    Ok(u64::try_from(above).unwrap_or(0) + in_leaf)
}

/// Offsets from which a leaderboard page starts from the tree: below,
/// walking the index row by row is as cheap.
pub const DEEP_OFFSET: u64 = 1_000;

/// Where a leaderboard page at a deep offset starts.
#[derive(Debug, Clone, PartialEq)]
pub enum PageStart {
    /// Among the users whose sum is at most `ceiling`, after `skip` of
    /// them.
    AtMost { ceiling: f64, skip: u64 },
    /// Among the users tied at 0 whose id is at least `from`, after `skip`
    /// of them ([`ties`]); then the users below 0.
    Tied { from: String, skip: u64 },
}

impl PageStart {
    /// The page's first read: the stats rows it reads from, in the
    /// leaderboard's order, and how many of them to skip.
    pub fn first(&self) -> (Value, u64) {
        match self {
            PageStart::AtMost { ceiling, skip } => (json!({"decay_sum": {"_lte": ceiling}}), *skip),
            PageStart::Tied { from, skip } => (
                json!({"_and": [{"decay_sum": {"_eq": 0}}, {"user_id": {"_gte": from}}]}),
                *skip,
            ),
        }
    }

    /// The page's second read, when its first brought `got` of `limit`
    /// rows from the tie: the users below 0 that follow (the rows, how
    /// many to take). An empty first read (rows gone since the tree was
    /// read) cannot say where they would start: the page stays empty.
    pub fn top_up(&self, got: u64, limit: u64) -> Option<(Value, u64)> {
        let tied = matches!(self, PageStart::Tied { .. });
        (tied && got > 0 && got < limit).then(|| (json!({"decay_sum": {"_lt": 0}}), limit - got))
    }
}

fn page_start_of(position: count_tree::Position) -> PageStart {
    PageStart::AtMost {
        ceiling: sum_of(position.leaf_top),
        skip: position.skip,
    }
}

/// Where the leaderboard's rows at `offset` start (see [`PageStart`]);
/// `None` when there are not that many users. A start deep inside the
/// users tied at 0 (the leaf of 0, past the sums too small to print
/// that share it) is found among them by user id ([`ties`]).
pub fn page_start(
    ctx: &Context<'_>,
    items: &Items<'_>,
    offset: u64,
) -> Result<Option<PageStart>, ItemsError> {
    let Some(at) = TREE.position(ctx, items, offset)? else {
        return Ok(None);
    };
    let zero_leaf = count_tree::leaf_top(key(0.0));
    if at.leaf_top == zero_leaf && at.skip >= DEEP_OFFSET {
        let above_zero = items.count(
            "user_stats",
            Some(json!({"_and": [
                {"decay_sum": {"_gt": 0}},
                {"decay_sum": {"_lte": sum_of(zero_leaf)}},
            ]})),
        )?;
        if let Some(tied_skip) = at.skip.checked_sub(above_zero) {
            if let Some((from, skip)) = ties::start(ctx, items, tied_skip)? {
                return Ok(Some(PageStart::Tied { from, skip }));
            }
        }
    }
    Ok(Some(page_start_of(at)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// How the tree's nodes move when a user's sum goes from `before` to
    /// `after` (`None`: no row): node → change, without the unchanged nodes.
    fn moves(before: Option<f64>, after: Option<f64>) -> BTreeMap<i64, i64> {
        count_tree::moves(counted_key(before), counted_key(after))
    }

    /// The tree as counted from `sums`: node → users.
    fn count_of(sums: &[f64]) -> BTreeMap<i64, i64> {
        count_tree::count_of(sums.iter().filter_map(|s| counted_key(Some(*s))))
    }

    /// The rule itself: users with a strictly greater sum.
    fn greater(sums: &[f64], sum: f64) -> u64 {
        sums.iter().filter(|s| **s > sum).count() as u64
    }

    /// The tree's answer over an in-memory tree and rows.
    fn from_tree(tree: &BTreeMap<i64, i64>, sums: &[f64], sum: f64) -> u64 {
        let siblings: i64 = siblings_above(sum)
            .iter()
            .map(|(first, last)| tree.range(first..=last).map(|(_, n)| n).sum::<i64>())
            .sum();
        let (low, high) = greater_in_leaf(sum);
        let leaf = sums.iter().filter(|s| **s > low && **s <= high).count() as u64;
        siblings as u64 + leaf
    }

    /// A small deterministic generator (no dependency for one test).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 11
        }
        fn sum(&mut self, pool: &[f64]) -> f64 {
            match self.next() % 4 {
                // Ties, and sums that differ in their last bits only.
                0 => pool[(self.next() % pool.len() as u64) as usize],
                1 => f64::from_bits(
                    pool[(self.next() % pool.len() as u64) as usize].to_bits() ^ (self.next() % 8),
                ),
                2 => -((self.next() % 1000) as f64) / 7.0,
                _ => {
                    (self.next() % 1_000_000) as f64
                        * 1.000_001f64.powi((self.next() % 5000) as i32)
                }
            }
        }
    }

    /// The page start found in an in-memory tree, by [`page_start`]'s walk.
    fn start_in(tree: &BTreeMap<i64, i64>, offset: u64) -> Option<PageStart> {
        let nodes =
            |(first, last)| Ok::<_, ()>(tree.range(first..=last).map(|(n, u)| (*n, *u)).collect());
        count_tree::position(offset, nodes)
            .ok()
            .flatten()
            .map(page_start_of)
    }

    /// Property: the row at every offset, found from the tree, is the row
    /// at that offset of the sums sorted greatest first.
    #[test]
    fn the_tree_finds_the_row_at_any_offset() {
        let pool = [0.0, 1.0, 10.0, 10.5, 1234.5678, 1e9, 3.3e12];
        let mut rng = Lcg(11);
        let mut sums: Vec<f64> = (0..3000).map(|_| rng.sum(&pool)).collect();
        let tree = count_of(&sums);
        sums.sort_by(|a, b| b.total_cmp(a));
        for offset in 0..sums.len() as u64 {
            let Some(PageStart::AtMost { ceiling, skip }) = start_in(&tree, offset) else {
                panic!("offset {offset}: a start inside the rows, by sum");
            };
            let below: Vec<f64> = sums.iter().copied().filter(|s| *s <= ceiling).collect();
            let found = below[skip as usize];
            assert_eq!(found, sums[offset as usize], "offset {offset}");
            assert_eq!(
                sums.len() - below.len() + skip as usize,
                offset as usize,
                "offset {offset}: the rows above the start"
            );
        }
        assert_eq!(start_in(&tree, sums.len() as u64), None);
    }

    #[test]
    fn keys_order_as_the_sums() {
        let mut sums = vec![
            f64::MIN,
            -1e300,
            -2.5,
            -1.0,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            5e-324,
            1e-300,
            1.0,
            1.0000000000000002,
            2.5,
            1e300,
            f64::MAX,
        ];
        sums.sort_by(f64::total_cmp);
        for pair in sums.windows(2) {
            assert_eq!(
                pair[0].partial_cmp(&pair[1]),
                key(pair[0]).partial_cmp(&key(pair[1])),
                "{} vs {}",
                pair[0],
                pair[1]
            );
            assert_eq!(sum_of(key(pair[1])), pair[1]);
        }
        assert_eq!(key(-0.0), key(0.0));
    }

    #[test]
    fn sums_move_the_nodes_of_their_keys() {
        // Sums apart in their last bits only share every node.
        assert!(moves(Some(3.0), Some(f64::from_bits(3.0f64.to_bits() + 1))).is_empty());
        assert_eq!(moves(None, Some(3.0)), count_of(&[3.0]));
        // Sums that are not numbers count nowhere.
        assert!(moves(Some(f64::NAN), Some(f64::INFINITY)).is_empty());
    }

    /// Property: a tree kept by moves through creates, updates and deletes
    /// equals the tree counted from scratch, and answers the rule for any
    /// sum, present or not.
    #[test]
    fn the_kept_tree_answers_the_rule() {
        let pool = [0.0, 1.0, 10.0, 10.5, 1234.5678, 1e9, 3.3e12];
        let mut rng = Lcg(7);
        let mut rows: Vec<f64> = Vec::new();
        let mut tree: BTreeMap<i64, i64> = BTreeMap::new();
        let keep = |tree: &mut BTreeMap<i64, i64>, before, after| {
            for (n, c) in moves(before, after) {
                let users = tree.entry(n).or_insert(0);
                *users += c;
                if *users == 0 {
                    tree.remove(&n);
                }
            }
        };
        for step in 0..4000 {
            match rng.next() % 3 {
                0 => {
                    let s = rng.sum(&pool);
                    rows.push(s);
                    keep(&mut tree, None, Some(s));
                }
                1 if !rows.is_empty() => {
                    let i = (rng.next() % rows.len() as u64) as usize;
                    let s = rng.sum(&pool);
                    keep(&mut tree, Some(rows[i]), Some(s));
                    rows[i] = s;
                }
                _ if !rows.is_empty() => {
                    let i = (rng.next() % rows.len() as u64) as usize;
                    keep(&mut tree, Some(rows.swap_remove(i)), None);
                }
                _ => {}
            }
            if step % 97 == 0 {
                assert_eq!(tree, count_of(&rows), "step {step}");
                for probe in rows.iter().copied().chain([rng.sum(&pool), -1e301, 1e301]) {
                    assert_eq!(
                        from_tree(&tree, &rows, probe),
                        greater(&rows, probe),
                        "step {step}, sum {probe}"
                    );
                }
            }
        }
    }
}
