//! The users tied at a decay sum of 0, counted by the leading bytes of
//! their id: where a leaderboard page deep inside that tie starts, in a
//! few reads.
//!
//! On a large site most members have a stats row and no points left, so
//! the leaderboard ends in one long tie, ordered by user id. The rank tree
//! ([`super::ranks`]) is keyed by the sum and cannot split it: a page that
//! starts deep in the tie walked every tied row before it (13,373 index
//! entries at offset 900,000 of a million users). This kept count tree
//! ([`crate::count_tree`]) keys each tied user by the first eight bytes of
//! the id's text, as text is compared on every backend (byte-wise),
//! complemented so that the tree's walk from its greatest key goes in the
//! ids' ascending order. A page then reads the tied users from the first
//! id of one leaf (ids sharing their first three bytes: a few dozen users
//! of a million) with a short offset, and tops up with the users below 0.
//!
//! The stats rows' in-transaction hook moves this tree beside the rank
//! tree with every write of a sum or of a user id. A database whose tied
//! users predate the tree is counted once, in one transaction, by the first
//! page asked for deep inside the tie; `gamification_state.ties_counted`
//! says it was.

use host_sdk::{Context, Items, ItemsError};
use serde_json::{json, Value};

use crate::count_tree::{self, Tree};

/// The collection of the tree's nodes.
pub const COUNTS: &str = "user_tie_counts";
/// Whether the tree counts every tied user (on `gamification_state`).
pub const COUNTED: &str = "ties_counted";

const TREE: Tree = Tree {
    nodes: COUNTS,
    count: "users",
    counted: COUNTED,
    rows: "user_stats",
    counts: || json!({"decay_sum": {"_eq": 0}}),
    field: "user_id",
    key_of: |user| user.and_then(Value::as_str).map(key),
};

/// The key of a tied user: the first eight bytes of the id (zeros past its
/// end), complemented, so that greater keys are smaller ids.
pub fn key(user_id: &str) -> u64 {
    let mut bytes = [0u8; 8];
    let head = &user_id.as_bytes()[..user_id.len().min(8)];
    bytes[..head.len()].copy_from_slice(head);
    !u64::from_be_bytes(bytes)
}

/// The least id a leaf can hold, as text: its leading bytes without the
/// zeros that pad them. Every id of the leaf is at least this, every id of
/// a leaf before it less. `None` when the bytes cut a character in two
/// (ids that are not ASCII): the page then walks the tie as before.
pub fn first_id_of(leaf_top: u64) -> Option<String> {
    let least = (!leaf_top).to_be_bytes();
    let mut prefix = least[..count_tree::LEVELS as usize].to_vec();
    while prefix.last() == Some(&0) {
        prefix.pop();
    }
    String::from_utf8(prefix).ok()
}

/// The key a stats row has in the tree: its user's, when its sum is 0.
pub fn tied_key(record: Option<&Value>) -> Option<u64> {
    let record = record?;
    let tied = record.get("decay_sum").and_then(Value::as_f64) == Some(0.0);
    tied.then(|| record.get("user_id").and_then(Value::as_str).map(key))
        .flatten()
}

/// Moves the tree by a write of stats rows, each from its key before to its
/// key after ([`tied_key`]), in the writing transaction.
pub fn follow(
    items: &Items<'_>,
    rows: impl IntoIterator<Item = (Option<u64>, Option<u64>)>,
) -> Result<(), ItemsError> {
    TREE.follow(items, rows)
}

/// Where the tied users from position `skip` among them (in id order)
/// start: the least id of their leaf, and how many tied users from that id
/// come before them. `None` when there are not that many tied users, or
/// the leaf's first id is not text.
pub fn start(
    ctx: &Context<'_>,
    items: &Items<'_>,
    skip: u64,
) -> Result<Option<(String, u64)>, ItemsError> {
    let Some(at) = TREE.position(ctx, items, skip)? else {
        return Ok(None);
    };
    Ok(first_id_of(at.leaf_top).map(|from| (from, at.skip)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_as_the_ids_reversed() {
        let mut ids = vec![
            "",
            "0",
            "00000000-0000",
            "0000000a",
            "09ab",
            "1",
            "9ffffffff",
            "a",
            "a0",
            "f0e1d2c3-b4a5-4978-8695-a4b3c2d1e0f0",
            "fffffffffffff",
            "\u{7f}",
        ];
        ids.sort();
        for pair in ids.windows(2) {
            assert!(
                key(pair[0]) >= key(pair[1]),
                "{:?} before {:?}",
                pair[0],
                pair[1]
            );
        }
        assert_eq!(key("abcdefgh"), key("abcdefghij"), "eight bytes only");
    }

    /// Property: for ids in every leaf, the leaf's first id is at most
    /// each of its ids and more than each id of the leaves before it.
    #[test]
    fn a_leafs_first_id_bounds_its_ids() {
        let ids = [
            "", "a", "a0", "a00", "a000", "a01", "a1", "ab", "abc", "abcd", "abd", "b", "b-", "zz",
            "zzz", "zzzz",
        ];
        for id in ids {
            let first = first_id_of(count_tree::leaf_top(key(id))).expect("ASCII ids");
            assert!(first.as_str() <= id, "{first:?} holds {id:?}");
            for other in ids {
                let same_leaf = count_tree::leaf_top(key(other)) == count_tree::leaf_top(key(id));
                assert_eq!(
                    other >= first.as_str(),
                    same_leaf || key(other) < key(id),
                    "{other:?} against the first id {first:?} of {id:?}'s leaf"
                );
            }
        }
        // A leaf that cuts a character in two has no first id.
        assert_eq!(first_id_of(count_tree::leaf_top(key("aaé"))), None);
        assert_eq!(
            first_id_of(count_tree::leaf_top(key("aé"))).as_deref(),
            Some("aé")
        );
    }

    #[test]
    fn only_rows_at_zero_are_tied() {
        let row = |sum: f64| json!({"user_id": "u1", "decay_sum": sum});
        assert_eq!(tied_key(Some(&row(0.0))), Some(key("u1")));
        assert_eq!(tied_key(Some(&row(-0.0))), Some(key("u1")));
        assert_eq!(tied_key(Some(&row(5e-324))), None);
        assert_eq!(tied_key(Some(&json!({"user_id": "u1"}))), None);
        assert_eq!(tied_key(Some(&json!({"decay_sum": 0.0}))), None);
        assert_eq!(tied_key(None), None);
    }
}
