//! svc's kept count trees (the ranks' and the community list's), spoiled
//! through the items API to check that a tree that does not add up is
//! counted again.

use serde_json::{json, Value};

use crate::Host;

/// Spoils the tree stored in `nodes` (whose counter is `count`) and clears
/// its `counted` flag on svc's state row: the top level's first node goes
/// (the loss the check of a kept tree sees: its top level no longer adds up
/// to the rows), the last node's count is wrong, and a stray node appears.
pub fn spoil(host: &Host, nodes: &str, count: &str, counted: &str) {
    let mut stored = host.admin_all(nodes, &format!("id,node,{count}"));
    // Lowest first: the top level's nodes.
    stored.sort_by_key(|n| n["node"].as_i64());
    assert!(!stored.is_empty(), "the tree in {nodes} has nodes");
    let id = |n: &Value| n["id"].as_str().expect("node id").to_string();
    host.admin_delete(nodes, &id(&stored[0]));
    host.admin_patch(
        nodes,
        &id(&stored[stored.len() - 1]),
        &json!({ count: 4000 }),
    );
    host.admin_create(nodes, &json!({"node": (3i64 << 32) | 0x12_3456, count: 3}));
    let state = host.admin_all("gamification_state", "id");
    let id = state[0]["id"].as_str().expect("state id");
    host.admin_patch("gamification_state", id, &json!({ counted: false }));
}

/// The `counted` flag of svc's state row.
pub fn counted(host: &Host, counted: &str) -> Value {
    host.admin_all("gamification_state", counted)[0][counted].clone()
}
