//! Ranks: 1 + the number of users whose decay sum is strictly greater,
//! answered in logarithmic time from a kept count tree, exact on every
//! backend.
//!
//! A sum maps to a 64-bit key whose order is the sums' (IEEE 754 bits,
//! flipped as usual). The tree counts users by the key's leading bytes: a
//! node at level `L` (1 to [`LEVELS`]) is the first `L` bytes, and its row
//! in `user_rank_counts` says how many users' keys start with them. The
//! users above a sum are then, for each level, the users under the
//! siblings that follow the sum's own node (at most 255 nodes, one range of
//! the `node` index each), plus the users whose key shares all
//! [`LEVELS`] bytes and whose sum is greater (a range of the `decay_sum`
//! index over sums that agree in their first 24 bits: a sliver of the
//! scores, ties included).
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

use std::collections::BTreeMap;

use host_sdk::{Context, Items, ItemsError, Query};
use serde_json::{json, Value};

use super::ledger::STATE_ID;
use crate::records::str_field;

/// The collection of the tree's nodes.
pub const COUNTS: &str = "user_rank_counts";
/// Whether the tree counts every stats row (on `gamification_state`).
pub const COUNTED: &str = "ranks_counted";
/// Levels of the tree: one byte of the key each.
/// Three: a point award usually moves the lowest one or two (six levels
/// would move four or five), and the sums left to count in a leaf agree in
/// their sign, exponent and first 12 bits of mantissa (within 0.025% of
/// each other).
pub const LEVELS: u32 = 3;

/// Stats rows read per request while counting the tree from scratch.
const READ_CHUNK: i64 = 50_000;
/// Nodes created per request while counting the tree from scratch.
const WRITE_CHUNK: usize = 1_000;

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

/// The node of `key` at `level`: the level above the key's first `level`
/// bytes, so the nodes of one level are one range of numbers.
pub fn node(level: u32, key: u64) -> i64 {
    ((level as i64) << 32) | (key >> (64 - 8 * level)) as i64
}

/// The nodes of a key, top level first.
fn path(key: u64) -> impl Iterator<Item = i64> {
    (1..=LEVELS).map(move |level| node(level, key))
}

/// The nodes whose users' sums are all greater than `sum`'s and agree with
/// it above their level: per level, the siblings after the sum's node, as
/// a range of nodes (both ends included); none when it is the last child.
pub fn siblings_above(sum: f64) -> Vec<(i64, i64)> {
    let k = key(sum);
    (1..=LEVELS)
        .map(|level| (node(level, k) + 1, node(level, k) | 0xFF))
        .filter(|(first, last)| first <= last)
        .collect()
}

/// The greatest sum of the leaf `key` is in (keys sharing its first
/// [`LEVELS`] bytes).
fn leaf_ceiling(key: u64) -> f64 {
    sum_of(key | u64::MAX >> (8 * LEVELS))
}

/// The sums that share the first [`LEVELS`] bytes of `sum`'s key and are
/// greater: (exclusive, inclusive) bounds.
pub fn greater_in_leaf(sum: f64) -> (f64, f64) {
    (sum, leaf_ceiling(key(sum)))
}

/// How the tree's nodes move when a user's sum goes from `before` to
/// `after` (`None`: no row): node → change, without the unchanged nodes.
pub fn moves(before: Option<f64>, after: Option<f64>) -> BTreeMap<i64, i64> {
    let mut out = BTreeMap::new();
    for (sum, sign) in [(before, -1), (after, 1)] {
        if let Some(sum) = sum.filter(|s| s.is_finite()) {
            for n in path(key(sum)) {
                *out.entry(n).or_insert(0) += sign;
            }
        }
    }
    out.retain(|_, change| *change != 0);
    out
}

fn number(value: Option<&Value>) -> i64 {
    match value {
        Some(Value::String(s)) => s.parse::<f64>().map_or(0, |f| f as i64),
        Some(v) => v
            .as_i64()
            .or_else(|| v.as_f64().map(|f| f as i64))
            .unwrap_or(0),
        None => 0,
    }
}

/// Applies node changes: one read of the nodes named, then one write per
/// node (a node left with no user goes).
pub fn apply(items: &Items<'_>, changes: &BTreeMap<i64, i64>) -> Result<(), ItemsError> {
    if changes.is_empty() {
        return Ok(());
    }
    let nodes: Vec<i64> = changes.keys().copied().collect();
    let stored = items.read_by_query(
        COUNTS,
        &Query::new()
            .fields(&["id", "node", "users"])
            .filter(json!({"node": {"_in": nodes}}))
            .limit(-1),
    )?;
    let mut existing: BTreeMap<i64, (String, i64)> = stored
        .iter()
        .filter_map(|r| {
            let id = str_field(r, "id")?.to_string();
            Some((r.get("node")?.as_i64()?, (id, number(r.get("users")))))
        })
        .collect();
    for (node, change) in changes {
        match existing.remove(node) {
            Some((id, users)) if users + change == 0 => items.delete_one(COUNTS, &id)?,
            Some((id, users)) => {
                items.update_one(COUNTS, &id, &json!({"users": users + change}))?;
            }
            None => {
                items.create_one(COUNTS, &json!({"node": node, "users": change}))?;
            }
        }
    }
    Ok(())
}

fn counted(items: &Items<'_>) -> Result<bool, ItemsError> {
    let row = items.read_one_with::<Value>(
        "gamification_state",
        STATE_ID,
        &Query::new().fields(&[COUNTED]),
    )?;
    Ok(row.and_then(|r| r.get(COUNTED).and_then(Value::as_bool)) == Some(true))
}

/// Every row of `collection` (with `fields`), [`READ_CHUNK`] at a time
/// in the order of its unique `key`, handed to `each` chunk by chunk.
fn each_chunk(
    items: &Items<'_>,
    collection: &str,
    fields: &[&str],
    key: &str,
    mut each: impl FnMut(&[Value]),
) -> Result<(), ItemsError> {
    let mut after: Option<Value> = None;
    loop {
        let mut query = Query::new().fields(fields).sort(&[key]).limit(READ_CHUNK);
        if let Some(last) = &after {
            query = query.filter(json!({ key: {"_gt": last} }));
        }
        let rows = items.read_by_query(collection, &query)?;
        each(&rows);
        match rows.last().and_then(|r| r.get(key)) {
            Some(last) if rows.len() as i64 == READ_CHUNK => after = Some(last.clone()),
            _ => return Ok(()),
        }
    }
}

/// Every stats row's sum.
fn every_sum(items: &Items<'_>) -> Result<Vec<f64>, ItemsError> {
    let mut sums = Vec::new();
    each_chunk(items, "user_stats", &["id", "decay_sum"], "id", |rows| {
        sums.extend(
            rows.iter()
                .filter_map(|r| r.get("decay_sum").and_then(Value::as_f64)),
        );
    })?;
    Ok(sums)
}

/// The tree as counted from `sums`: node → users.
pub fn count_of(sums: &[f64]) -> BTreeMap<i64, i64> {
    let mut tree = BTreeMap::new();
    for sum in sums.iter().filter(|s| s.is_finite()) {
        for n in path(key(*sum)) {
            *tree.entry(n).or_insert(0) += 1;
        }
    }
    tree
}

/// Every node as stored: node → (row id, users).
fn every_node(items: &Items<'_>) -> Result<BTreeMap<i64, (String, i64)>, ItemsError> {
    let mut nodes = BTreeMap::new();
    each_chunk(items, COUNTS, &["id", "node", "users"], "node", |rows| {
        for row in rows {
            if let (Some(id), Some(node)) = (
                str_field(row, "id"),
                row.get("node").and_then(Value::as_i64),
            ) {
                nodes.insert(node, (id.to_string(), number(row.get("users"))));
            }
        }
    })?;
    Ok(nodes)
}

/// Makes the stored tree `tree`, writing only the nodes that differ.
fn write_tree(items: &Items<'_>, tree: &BTreeMap<i64, i64>) -> Result<usize, ItemsError> {
    let mut stored = every_node(items)?;
    let mut created = Vec::new();
    let mut written = 0;
    for (node, users) in tree {
        match stored.remove(node) {
            Some((_, kept)) if kept == *users => {}
            Some((id, _)) => {
                items.update_one(COUNTS, &id, &json!({"users": users}))?;
                written += 1;
            }
            None => created.push(json!({"node": node, "users": users})),
        }
    }
    for chunk in created.chunks(WRITE_CHUNK) {
        items.create_many(COUNTS, chunk)?;
    }
    for (id, _) in stored.values() {
        items.delete_one(COUNTS, id)?;
    }
    Ok(written + created.len() + stored.len())
}

/// Makes sure the tree counts every stats row, once per database, in one
/// transaction. A tree kept by the hook since the collection was made
/// (its users add up to the rows) is marked as it is; otherwise (rows
/// that predate it) it is counted from every row.
fn ensure_counted(ctx: &Context<'_>) -> Result<(), ItemsError> {
    // Read each time (one row by key): a process may serve several
    // databases (the test kit), and another host may count it meanwhile.
    if counted(&ctx.as_admin())? {
        return Ok(());
    }
    ctx.transaction(|tx| {
        let items = tx.as_admin();
        if counted(&items)? {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let kept = users_in(&items, &[children_range(1, None)])?;
        let rows = items.count("user_stats", Some(json!({"decay_sum": {"_nnull": true}})))?;
        if u64::try_from(kept).ok() == Some(rows) {
            log::info!("ranks: the kept tree counts every one of the {rows} users");
        } else {
            let sums = every_sum(&items)?;
            let tree = count_of(&sums);
            let written = write_tree(&items, &tree)?;
            log::info!(
                "ranks: counted {} users into {} nodes ({written} written) in {:.1} s",
                sums.len(),
                tree.len(),
                started.elapsed().as_secs_f64()
            );
        }
        items.update_one("gamification_state", STATE_ID, &json!({COUNTED: true}))?;
        Ok(())
    })
}

/// The users under the nodes of these ranges (both ends included).
fn users_in(items: &Items<'_>, ranges: &[(i64, i64)]) -> Result<i64, ItemsError> {
    if ranges.is_empty() {
        return Ok(0);
    }
    let ranges: Vec<Value> = ranges
        .iter()
        .map(|(first, last)| json!({"node": {"_gte": first, "_lte": last}}))
        .collect();
    let rows = items.aggregate(
        COUNTS,
        &Query::new()
            .filter(json!({"_or": ranges}))
            .aggregate("sum", &["users"]),
    )?;
    Ok(number(
        rows.first()
            .and_then(|r| r.get("sum"))
            .and_then(|s| s.get("users")),
    ))
}

/// The number of users whose decay sum is greater than `sum`.
pub fn users_above(ctx: &Context<'_>, items: &Items<'_>, sum: f64) -> Result<u64, ItemsError> {
    ensure_counted(ctx)?;
    let (low, high) = greater_in_leaf(sum);
    let in_leaf = items.count(
        "user_stats",
        Some(json!({"_and": [{"decay_sum": {"_gt": low}}, {"decay_sum": {"_lte": high}}]})),
    )?;
    let above = users_in(items, &siblings_above(sum))?;
    Ok(u64::try_from(above).unwrap_or(0) + in_leaf)
}

/// Offsets from which a leaderboard page starts from the tree: below,
/// walking the index row by row is as cheap.
pub const DEEP_OFFSET: u64 = 1_000;

/// Where the rows at `offset` in the leaderboard's order start: among the
/// rows whose sum is at most `ceiling`, after `skip` of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageStart {
    pub ceiling: f64,
    pub skip: u64,
}

/// Descends one level: among `children` (node → users, any order), the
/// one holding position `remaining` counted from the greatest, and the
/// position inside it; `None` past the last user.
pub fn descend(children: &BTreeMap<i64, i64>, remaining: u64) -> Option<(i64, u64)> {
    let mut left = remaining;
    for (node, users) in children.iter().rev() {
        let users = u64::try_from(*users).unwrap_or(0);
        if left < users {
            return Some((*node, left));
        }
        left -= users;
    }
    None
}

/// The greatest sum under a level-[`LEVELS`] node.
fn ceiling_of(leaf: i64) -> f64 {
    leaf_ceiling(((leaf as u64) & 0xFFFF_FFFF) << (64 - 8 * LEVELS))
}

/// The nodes at `level` under `parent` (the whole top level for `None`),
/// as a range of nodes (both ends included).
fn children_range(level: u32, parent: Option<i64>) -> (i64, i64) {
    let first = ((level as i64) << 32) | parent.map_or(0, |p| (p & 0xFFFF_FFFF) << 8);
    (first, first | 0xFF)
}

/// The stored nodes of a range: node → users.
fn nodes_in(
    items: &Items<'_>,
    (first, last): (i64, i64),
) -> Result<BTreeMap<i64, i64>, ItemsError> {
    let rows = items.read_by_query(
        COUNTS,
        &Query::new()
            .fields(&["node", "users"])
            .filter(json!({"node": {"_gte": first, "_lte": last}}))
            .limit(-1),
    )?;
    Ok(rows
        .iter()
        .filter_map(|r| Some((r.get("node")?.as_i64()?, number(r.get("users")))))
        .collect())
}

/// Walks down the tree to the rows at `offset`, reading each level's
/// children with `nodes` (a range of nodes → node → users).
pub fn start_at<E>(
    offset: u64,
    mut nodes: impl FnMut((i64, i64)) -> Result<BTreeMap<i64, i64>, E>,
) -> Result<Option<PageStart>, E> {
    let (mut parent, mut remaining) = (None, offset);
    for level in 1..=LEVELS {
        match descend(&nodes(children_range(level, parent))?, remaining) {
            Some((node, inside)) => (parent, remaining) = (Some(node), inside),
            None => return Ok(None),
        }
    }
    Ok(parent.map(|leaf| PageStart {
        ceiling: ceiling_of(leaf),
        skip: remaining,
    }))
}

/// Where the leaderboard's rows at `offset` start (see [`PageStart`]);
/// `None` when there are not that many users.
pub fn page_start(
    ctx: &Context<'_>,
    items: &Items<'_>,
    offset: u64,
) -> Result<Option<PageStart>, ItemsError> {
    ensure_counted(ctx)?;
    start_at(offset, |range| nodes_in(items, range))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        start_at(offset, nodes).ok().flatten()
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
            let start = start_in(&tree, offset).expect("a start inside the rows");
            let below: Vec<f64> = sums
                .iter()
                .copied()
                .filter(|s| *s <= start.ceiling)
                .collect();
            let found = below[start.skip as usize];
            assert_eq!(found, sums[offset as usize], "offset {offset}");
            assert_eq!(
                sums.len() - below.len() + start.skip as usize,
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
    fn moves_touch_only_the_nodes_that_change() {
        assert!(moves(Some(3.0), Some(3.0)).is_empty());
        let created = moves(None, Some(3.0));
        assert_eq!(created.len(), LEVELS as usize);
        assert!(created.values().all(|c| *c == 1));
        // Sums apart in their last bits only share every node.
        assert!(moves(Some(3.0), Some(f64::from_bits(3.0f64.to_bits() + 1))).is_empty());
        let moved = moves(Some(3.0), Some(-3.0));
        assert_eq!(
            moved.values().filter(|c| **c == -1).count(),
            LEVELS as usize
        );
        assert_eq!(moved.values().sum::<i64>(), 0);
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
