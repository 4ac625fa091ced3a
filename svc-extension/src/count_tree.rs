//! A kept count tree over 64-bit keys: how many rows have a key that
//! starts with given leading bytes, so that "how many rows rank above this
//! one" and "which row is at position N" cost a few reads of at most 256
//! nodes, whatever the number of rows.
//!
//! A node at level `L` (1 to [`LEVELS`]) is a key's first `L` bytes, and its
//! row in the tree's collection counts the rows whose key starts with them.
//! Nodes are numbered `level << 32 | prefix`, so the children of one node
//! are one range of numbers. The rows under one leaf (keys that share all
//! [`LEVELS`] bytes) are left to the collection's own index.
//!
//! The trees: ranks (`gamification::ranks`, keyed by score) and the
//! community list's positions (`community_positions`, keyed by date). Each
//! is moved by an in-transaction hook with every write of its key, so it is
//! exact whenever the rows are.

use std::collections::BTreeMap;

use host_sdk::{Context, Items, ItemsError, Query};
use serde_json::{json, Value};

use crate::gamification::ledger::STATE_ID;
use crate::records::str_field;

/// svc's state row's collection (its flags say which trees count every
/// row).
const STATE: &str = "gamification_state";

/// Levels of a tree: one byte of the key each. Three: a write usually moves
/// the lowest one or two, and a leaf is a 2^-24 sliver of the keys.
pub const LEVELS: u32 = 3;

/// Rows read per request while counting a tree from scratch.
const READ_CHUNK: i64 = 50_000;
/// Nodes created per request while counting a tree from scratch.
const WRITE_CHUNK: usize = 1_000;

/// The node of `key` at `level`: the level above the key's first `level`
/// bytes, so the nodes of one level are one range of numbers.
pub fn node(level: u32, key: u64) -> i64 {
    ((level as i64) << 32) | (key >> (64 - 8 * level)) as i64
}

/// The nodes of a key, top level first.
fn path(key: u64) -> impl Iterator<Item = i64> {
    (1..=LEVELS).map(move |level| node(level, key))
}

/// The greatest key of the leaf `key` is in (keys sharing its first
/// [`LEVELS`] bytes).
pub fn leaf_top(key: u64) -> u64 {
    key | u64::MAX >> (8 * LEVELS)
}

/// The greatest key under a level-[`LEVELS`] node.
pub fn top_of_leaf(leaf: i64) -> u64 {
    leaf_top(((leaf as u64) & 0xFFFF_FFFF) << (64 - 8 * LEVELS))
}

/// The nodes whose keys are all greater than `key` and agree with it above
/// their level: per level, the siblings after the key's node, as a range of
/// nodes (both ends included); none when it is the last child.
pub fn siblings_after(key: u64) -> Vec<(i64, i64)> {
    (1..=LEVELS)
        .map(|level| (node(level, key) + 1, node(level, key) | 0xFF))
        .filter(|(first, last)| first <= last)
        .collect()
}

/// How the nodes move when a row's key goes from `before` to `after`
/// (`None`: not in the tree): node → change, without the unchanged nodes.
pub fn moves(before: Option<u64>, after: Option<u64>) -> BTreeMap<i64, i64> {
    let mut out = BTreeMap::new();
    for (key, sign) in [(before, -1), (after, 1)] {
        if let Some(key) = key {
            for n in path(key) {
                *out.entry(n).or_insert(0) += sign;
            }
        }
    }
    out.retain(|_, change| *change != 0);
    out
}

/// The tree as counted from `keys`: node → rows.
pub fn count_of(keys: impl IntoIterator<Item = u64>) -> BTreeMap<i64, i64> {
    let mut tree = BTreeMap::new();
    for key in keys {
        for n in path(key) {
            *tree.entry(n).or_insert(0) += 1;
        }
    }
    tree
}

/// The nodes at `level` under `parent` (the whole top level for `None`),
/// as a range of nodes (both ends included).
pub fn children_range(level: u32, parent: Option<i64>) -> (i64, i64) {
    let first = ((level as i64) << 32) | parent.map_or(0, |p| (p & 0xFFFF_FFFF) << 8);
    (first, first | 0xFF)
}

/// Descends one level: among `children` (node → rows, any order), the one
/// holding position `remaining` counted from the greatest key, and the
/// position inside it; `None` past the last row.
pub fn descend(children: &BTreeMap<i64, i64>, remaining: u64) -> Option<(i64, u64)> {
    let mut left = remaining;
    for (node, rows) in children.iter().rev() {
        let rows = u64::try_from(*rows).unwrap_or(0);
        if left < rows {
            return Some((*node, left));
        }
        left -= rows;
    }
    None
}

/// Where the rows at a position, counted from the greatest key, are: the
/// greatest key of their leaf, and how many rows of keys at most that come
/// before them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub leaf_top: u64,
    pub skip: u64,
}

/// Walks down the tree to the row at `offset` (counted from the greatest
/// key), reading each level's children with `nodes` (a range of nodes →
/// node → rows); `None` when there are not that many rows.
pub fn position<E>(
    offset: u64,
    mut nodes: impl FnMut((i64, i64)) -> Result<BTreeMap<i64, i64>, E>,
) -> Result<Option<Position>, E> {
    let (mut parent, mut remaining) = (None, offset);
    for level in 1..=LEVELS {
        match descend(&nodes(children_range(level, parent))?, remaining) {
            Some((node, inside)) => (parent, remaining) = (Some(node), inside),
            None => return Ok(None),
        }
    }
    Ok(parent.map(|leaf| Position {
        leaf_top: top_of_leaf(leaf),
        skip: remaining,
    }))
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

/// Every row of `collection` (with `fields`, and `filter` if any),
/// `READ_CHUNK` (50,000) at a time in the order of its unique `key`, handed to
/// `each` chunk by chunk.
pub fn each_chunk(
    items: &Items<'_>,
    collection: &str,
    fields: &[&str],
    filter: Option<Value>,
    key: &str,
    mut each: impl FnMut(&[Value]),
) -> Result<(), ItemsError> {
    let mut after: Option<Value> = None;
    loop {
        let mut clauses: Vec<Value> = filter.iter().cloned().collect();
        if let Some(last) = &after {
            clauses.push(json!({ key: {"_gt": last} }));
        }
        let mut query = Query::new().fields(fields).sort(&[key]).limit(READ_CHUNK);
        if !clauses.is_empty() {
            query = query.filter(json!({ "_and": clauses }));
        }
        let rows = items.read_by_query(collection, &query)?;
        each(&rows);
        match rows.last().and_then(|r| r.get(key)) {
            Some(last) if rows.len() as i64 == READ_CHUNK => after = Some(last.clone()),
            _ => return Ok(()),
        }
    }
}

/// A tree: where its nodes are stored, and the rows it counts.
pub struct Tree {
    /// The collection of its nodes: a unique integer `node` and a counter.
    pub nodes: &'static str,
    /// The counter's name.
    pub count: &'static str,
    /// The flag on svc's state row that says the tree counts every row.
    pub counted: &'static str,
    /// The collection of the rows it counts.
    pub rows: &'static str,
    /// Which of them it counts.
    pub counts: fn() -> Value,
    /// The field a row's key is made of, and its key (`None`: not counted).
    pub field: &'static str,
    pub key_of: fn(Option<&Value>) -> Option<u64>,
}

impl Tree {
    /// Moves the tree by a write's rows, each from its key before to its
    /// key after (`None`: not counted), in one [`Tree::apply`].
    pub fn follow(
        &self,
        items: &Items<'_>,
        rows: impl IntoIterator<Item = (Option<u64>, Option<u64>)>,
    ) -> Result<(), ItemsError> {
        let mut changes = BTreeMap::new();
        for (before, after) in rows {
            for (node, change) in moves(before, after) {
                *changes.entry(node).or_insert(0) += change;
            }
        }
        changes.retain(|_, change| *change != 0);
        self.apply(items, &changes)
    }

    /// Applies node changes: one read of the nodes named, then one write
    /// per node (a node left with no row goes).
    fn apply(&self, items: &Items<'_>, changes: &BTreeMap<i64, i64>) -> Result<(), ItemsError> {
        if changes.is_empty() {
            return Ok(());
        }
        let named: Vec<i64> = changes.keys().copied().collect();
        let stored = items.read_by_query(
            self.nodes,
            &Query::new()
                .fields(&["id", "node", self.count])
                .filter(json!({"node": {"_in": named}}))
                .limit(-1),
        )?;
        let mut existing: BTreeMap<i64, (String, i64)> = stored
            .iter()
            .filter_map(|r| {
                let id = str_field(r, "id")?.to_string();
                Some((r.get("node")?.as_i64()?, (id, number(r.get(self.count)))))
            })
            .collect();
        for (node, change) in changes {
            match existing.remove(node) {
                Some((id, rows)) if rows + change == 0 => items.delete_one(self.nodes, &id)?,
                Some((id, rows)) => {
                    items.update_one(self.nodes, &id, &json!({ self.count: rows + change }))?;
                }
                None => {
                    items.create_one(self.nodes, &json!({"node": node, self.count: change}))?;
                }
            }
        }
        Ok(())
    }

    /// The rows under the nodes of these ranges (both ends included).
    pub fn rows_in(&self, items: &Items<'_>, ranges: &[(i64, i64)]) -> Result<i64, ItemsError> {
        if ranges.is_empty() {
            return Ok(0);
        }
        let ranges: Vec<Value> = ranges
            .iter()
            .map(|(first, last)| json!({"node": {"_gte": first, "_lte": last}}))
            .collect();
        let rows = items.aggregate(
            self.nodes,
            &Query::new()
                .filter(json!({"_or": ranges}))
                .aggregate("sum", &[self.count]),
        )?;
        Ok(number(
            rows.first()
                .and_then(|r| r.get("sum"))
                .and_then(|s| s.get(self.count)),
        ))
    }

    /// Every row the tree counts.
    pub fn total(&self, items: &Items<'_>) -> Result<i64, ItemsError> {
        self.rows_in(items, &[children_range(1, None)])
    }

    /// The stored nodes of a range: node → rows.
    fn nodes_in(
        &self,
        items: &Items<'_>,
        (first, last): (i64, i64),
    ) -> Result<BTreeMap<i64, i64>, ItemsError> {
        let rows = items.read_by_query(
            self.nodes,
            &Query::new()
                .fields(&["node", self.count])
                .filter(json!({"node": {"_gte": first, "_lte": last}}))
                .limit(-1),
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| Some((r.get("node")?.as_i64()?, number(r.get(self.count)))))
            .collect())
    }

    /// Where the row at `offset` is (see [`position`]), read from the
    /// stored tree (counted first if it is not yet): three reads of at
    /// most 256 nodes.
    pub fn position(
        &self,
        ctx: &Context<'_>,
        items: &Items<'_>,
        offset: u64,
    ) -> Result<Option<Position>, ItemsError> {
        self.ensure_counted(ctx)?;
        position(offset, |range| self.nodes_in(items, range))
    }

    /// Every node as stored: node → (row id, rows).
    fn every_node(&self, items: &Items<'_>) -> Result<BTreeMap<i64, (String, i64)>, ItemsError> {
        let mut nodes = BTreeMap::new();
        each_chunk(
            items,
            self.nodes,
            &["id", "node", self.count],
            None,
            "node",
            |rows| {
                for row in rows {
                    if let (Some(id), Some(node)) = (
                        str_field(row, "id"),
                        row.get("node").and_then(Value::as_i64),
                    ) {
                        nodes.insert(node, (id.to_string(), number(row.get(self.count))));
                    }
                }
            },
        )?;
        Ok(nodes)
    }

    /// Makes the stored tree `tree`, writing only the nodes that differ;
    /// how many it wrote.
    pub fn write(&self, items: &Items<'_>, tree: &BTreeMap<i64, i64>) -> Result<usize, ItemsError> {
        let mut stored = self.every_node(items)?;
        let mut created = Vec::new();
        let mut written = 0;
        for (node, rows) in tree {
            match stored.remove(node) {
                Some((_, kept)) if kept == *rows => {}
                Some((id, _)) => {
                    items.update_one(self.nodes, &id, &json!({ self.count: rows }))?;
                    written += 1;
                }
                None => created.push(json!({"node": node, self.count: rows})),
            }
        }
        for chunk in created.chunks(WRITE_CHUNK) {
            items.create_many(self.nodes, chunk)?;
        }
        for (id, _) in stored.values() {
            items.delete_one(self.nodes, id)?;
        }
        Ok(written + created.len() + stored.len())
    }

    fn is_counted(&self, items: &Items<'_>) -> Result<bool, ItemsError> {
        let row =
            items.read_one_with::<Value>(STATE, STATE_ID, &Query::new().fields(&[self.counted]))?;
        Ok(row.and_then(|r| r.get(self.counted).and_then(Value::as_bool)) == Some(true))
    }

    /// Every counted row's key.
    fn every_key(&self, items: &Items<'_>) -> Result<Vec<u64>, ItemsError> {
        let mut keys = Vec::new();
        let fields = ["id", self.field];
        each_chunk(
            items,
            self.rows,
            &fields,
            Some((self.counts)()),
            "id",
            |rows| {
                keys.extend(rows.iter().filter_map(|r| (self.key_of)(r.get(self.field))));
            },
        )?;
        Ok(keys)
    }

    /// Makes sure the tree counts every row, once per database, in one
    /// transaction. A tree kept by the hook since its collection was made
    /// (its top level adds up to the rows) is marked as it is; otherwise
    /// (rows that predate it) it is counted from every row.
    pub fn ensure_counted(&self, ctx: &Context<'_>) -> Result<(), ItemsError> {
        // Read each time (one row by key): a process may serve several
        // databases (the test kit), and another host may count it meanwhile.
        if self.is_counted(&ctx.as_admin())? {
            return Ok(());
        }
        ctx.transaction(|tx| {
            let items = tx.as_admin();
            if self.is_counted(&items)? {
                return Ok(());
            }
            let started = std::time::Instant::now();
            let kept = self.total(&items)?;
            let rows = items.count(self.rows, Some((self.counts)()))?;
            if u64::try_from(kept).ok() == Some(rows) {
                log::info!(
                    "{}: the kept tree counts every one of the {rows} rows",
                    self.nodes
                );
            } else {
                let keys = self.every_key(&items)?;
                let tree = count_of(keys.iter().copied());
                let written = self.write(&items, &tree)?;
                log::info!(
                    "{}: counted {} rows of {} into {} nodes ({written} written) in {:.1} s",
                    self.nodes,
                    keys.len(),
                    self.rows,
                    tree.len(),
                    started.elapsed().as_secs_f64()
                );
            }
            items.update_one(STATE, STATE_ID, &json!({ self.counted: true }))?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The position found in an in-memory tree, by [`position`]'s walk.
    pub fn position_in(tree: &BTreeMap<i64, i64>, offset: u64) -> Option<Position> {
        let nodes =
            |(first, last)| Ok::<_, ()>(tree.range(first..=last).map(|(n, u)| (*n, *u)).collect());
        position(offset, nodes).ok().flatten()
    }

    #[test]
    fn moves_touch_only_the_nodes_that_change() {
        assert!(moves(Some(3), Some(3)).is_empty());
        let created = moves(None, Some(3 << 40));
        assert_eq!(created.len(), LEVELS as usize);
        assert!(created.values().all(|c| *c == 1));
        // Keys apart below the leaf's bytes share every node.
        assert!(moves(Some(1 << 63), Some((1 << 63) + 5)).is_empty());
        let moved = moves(Some(1 << 63), Some(1 << 20));
        assert_eq!(
            moved.values().filter(|c| **c == -1).count(),
            LEVELS as usize
        );
        assert_eq!(moved.values().sum::<i64>(), 0);
    }

    /// Property: the row at every offset, found from the tree, is the row at
    /// that offset of the keys sorted greatest first.
    #[test]
    fn the_tree_finds_the_row_at_any_offset() {
        let mut seed = 5u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed
        };
        let mut keys: Vec<u64> = (0..3000)
            .map(|i| match i % 3 {
                // Ties, keys one leaf apart and keys anywhere.
                0 => 7 << 50,
                1 => (next() % 64) << 40,
                _ => next(),
            })
            .collect();
        let tree = count_of(keys.iter().copied());
        keys.sort_by(|a, b| b.cmp(a));
        for offset in 0..keys.len() as u64 {
            let at = position_in(&tree, offset).expect("a position inside the rows");
            let below: Vec<u64> = keys.iter().copied().filter(|k| *k <= at.leaf_top).collect();
            assert_eq!(
                below[at.skip as usize], keys[offset as usize],
                "offset {offset}"
            );
            assert_eq!(
                keys.len() - below.len() + at.skip as usize,
                offset as usize,
                "offset {offset}: the rows above the leaf"
            );
        }
        assert_eq!(position_in(&tree, keys.len() as u64), None);
    }
}
