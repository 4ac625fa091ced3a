//! Property: a user's `rank` is 1 + the number of users with a strictly
//! greater weighted score (docs/service-api.md, "Gamification (public)"),
//! whatever wrote the scores: the ledger's awards, an administrator's writes
//! of stats rows through the items API, deleted rows and deleted users.
//! Scores come from a small pool so ties and sums a few bits apart are
//! common; the expected ranks are recomputed from every stats row.

use super::*;

/// A stored sum: ties, neighbours in the last bits, negatives, magnitudes.
fn a_sum(rng: &mut Rng) -> f64 {
    const POOL: [f64; 6] = [0.0, 10.0, 10.5, 1234.5678, 2.5e9, 7.0e15];
    let base = POOL[rng.below(POOL.len())];
    match rng.below(4) {
        0 => base,
        1 => f64::from_bits(base.to_bits() + rng.below(4) as u64),
        2 => -base / 3.0,
        _ => base * (1.0 + rng.below(1000) as f64 / 997.0),
    }
}

fn stats_row_of(host: &Host, user: &str) -> Option<(String, f64)> {
    host.admin_find("user_stats", &json!({"user_id": {"_eq": user}}))
        .first()
        .and_then(|r| Some((r["id"].as_str()?.to_string(), r["decay_sum"].as_f64()?)))
}

/// Every user's rank as served, against the rule over every stored sum.
fn check_ranks(host: &Host, users: &[String], step: usize) {
    let rows = host.admin_all("user_stats", "user_id,decay_sum");
    let sums: Vec<f64> = rows
        .iter()
        .filter_map(|r| r["decay_sum"].as_f64())
        .collect();
    for user in users {
        let Some((_, own)) = stats_row_of(host, user) else {
            continue;
        };
        let expected = 1 + sums.iter().filter(|s| **s > own).count() as u64;
        let r = host.get(&format!("/svc/gamification/user/{user}"), None);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            r.json()["stats"]["rank"].as_u64(),
            Some(expected),
            "step {step}: user {user} with sum {own} among {sums:?}"
        );
    }
}

#[test]
fn ranks_follow_every_write_of_a_score() {
    let host = Host::in_process_svc();
    let mut rng = Rng(48);
    let mut users: Vec<String> = (0..10)
        .map(|i| host.user(None, &format!("ranked-{i}")))
        .collect();
    // A published recording to comment on: each comment is a ledger award.
    let on = host.admin_create("recordings", &rec_body("Ranked", Some("published")))["id"]
        .as_str()
        .expect("recording id")
        .to_string();
    // The first rank asked for counts the tree; every later step moves it.
    host.admin_create(
        "user_stats",
        &json!({"user_id": users[0], "decay_sum": 1.0}),
    );
    check_ranks(&host, &users, 0);
    for step in 1..=60 {
        let user = users[rng.below(users.len())].clone();
        match (rng.below(5), stats_row_of(&host, &user)) {
            (0, None) => {
                host.admin_create(
                    "user_stats",
                    &json!({"user_id": user, "decay_sum": a_sum(&mut rng)}),
                );
            }
            (0 | 1, Some((id, _))) => {
                host.admin_patch("user_stats", &id, &json!({"decay_sum": a_sum(&mut rng)}));
            }
            (2, Some((id, _))) => host.admin_delete("user_stats", &id),
            (3, _) => {
                host.admin_create(
                    "platform_comments",
                    &json!({"collection": "recordings", "item": on, "comment": "c", "user_created": user}),
                );
            }
            (4, _) if users.len() > 4 => {
                // The user goes, and their stats row with them.
                host.admin_delete("platform_users", &user);
                users.retain(|u| *u != user);
            }
            _ => continue,
        }
        check_ranks(&host, &users, step);
    }
    assert!(
        host.admin_count("user_stats", None) >= 3,
        "the steps left too few rows to compare"
    );
}

/// `n` users created in one request: their ids.
fn many_users(host: &Host, n: usize, name: &str) -> Vec<String> {
    let users: Vec<Value> = (0..n)
        .map(|i| json!({"first_name": name, "last_name": format!("{i}")}))
        .collect();
    host.admin_create_many("platform_users", &users)
        .iter()
        .filter_map(|u| u["id"].as_str().map(String::from))
        .collect()
}

/// An import of many stats rows at once moves the tree in one write per
/// batch: ranks stay the rule's, and leaderboard pages at deep offsets
/// (found from the tree) hold the rows of the order itself, ties included.
#[test]
fn ranks_follow_a_bulk_import_of_stats_rows() {
    let host = Host::in_process_svc();
    let ids = many_users(&host, 1200, "Bulk");
    host.admin_create("user_stats", &json!({"user_id": ids[0], "decay_sum": 0.5}));
    check_ranks(&host, &ids[..1], 0);
    let rows: Vec<Value> = ids[1..]
        .iter()
        .enumerate()
        .map(
            |(i, id)| json!({"user_id": id, "decay_sum": (i % 500) as f64 * 1.1 + i as f64 * 1e-6}),
        )
        .collect();
    host.admin_create_many("user_stats", &rows);
    let probes: Vec<String> = ids.iter().step_by(97).cloned().collect();
    check_ranks(&host, &probes, 1);

    check_pages(&host, &[0, 999, 1000, 1001, 1150, 1199, 1200, 5000]);
}

/// The leaderboard's pages of 60 at `offsets` against its order recomputed
/// from every stats row (`-decay_sum`, then user id): the users, and their
/// positions as the page's ranks.
fn check_pages(host: &Host, offsets: &[usize]) {
    let mut order: Vec<(f64, String)> = host
        .admin_all("user_stats", "user_id,decay_sum")
        .iter()
        .filter_map(|r| Some((r["decay_sum"].as_f64()?, r["user_id"].as_str()?.to_string())))
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    for &offset in offsets {
        let r = host.get(
            &format!("/svc/gamification/leaderboard?limit=60&offset={offset}"),
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        let page = r.json()["data"].as_array().cloned().unwrap_or_default();
        let expected: Vec<&String> = order.iter().skip(offset).take(60).map(|(_, u)| u).collect();
        let served: Vec<&str> = page
            .iter()
            .filter_map(|row| row["user_id"].as_str())
            .collect();
        assert_eq!(served, expected, "the page at offset {offset}");
        let ranks: Vec<u64> = page.iter().filter_map(|row| row["rank"].as_u64()).collect();
        let positions: Vec<u64> = (1..=served.len() as u64)
            .map(|p| offset as u64 + p)
            .collect();
        assert_eq!(ranks, positions, "ranks on the page at offset {offset}");
    }
}

/// Pages deep inside the users tied at 0 start where the tie tree (users
/// at 0 by id) says, counted from the rows the first time and then kept by
/// every write that moves a user to or from 0; pages that run past the tie
/// go on with the users below 0.
#[test]
fn deep_pages_among_users_tied_at_zero_hold_the_order() {
    let host = Host::in_process_svc();
    let ids = many_users(&host, 1400, "Tied");
    let stats = |ids: &[String], sum: &dyn Fn(usize) -> f64| -> Vec<Value> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| json!({"user_id": id, "decay_sum": sum(i)}))
            .collect()
    };
    // 20 users above 0 and 1,100 at 0: the first deep page counts the tree.
    host.admin_create_many("user_stats", &stats(&ids[..20], &|i| i as f64 + 1.0));
    host.admin_create_many("user_stats", &stats(&ids[20..1120], &|_| 0.0));
    check_pages(&host, &[1050]);
    assert_eq!(count_trees::counted(&host, "ties_counted"), json!(true));
    // Later rows move it: more at 0, some below, users leaving and joining
    // the tie.
    host.admin_create_many("user_stats", &stats(&ids[1120..1370], &|_| 0.0));
    host.admin_create_many("user_stats", &stats(&ids[1370..], &|i| -(i as f64) - 1.0));
    let row_of = |user: &str| stats_row_of(&host, user).expect("a stats row").0;
    for user in &ids[100..103] {
        host.admin_patch("user_stats", &row_of(user), &json!({"decay_sum": 5.0}));
    }
    for user in &ids[3..5] {
        host.admin_patch("user_stats", &row_of(user), &json!({"decay_sum": 0.0}));
    }
    for user in &ids[600..602] {
        host.admin_delete("user_stats", &row_of(user));
    }
    // 21 above 0, 1,347 at 0, 30 below: the tie's pages start from the tree
    // at offset 1,021, and the one at 1,309 is the first to run past it.
    let offsets = [
        999, 1000, 1020, 1021, 1022, 1200, 1300, 1307, 1308, 1309, 1367, 1368, 1397, 1398,
    ];
    check_pages(&host, &offsets);
    // Nodes spoiled behind the service's back are counted again.
    count_trees::spoil(&host, "user_tie_counts", "users", "ties_counted");
    check_pages(&host, &offsets);
    assert_eq!(count_trees::counted(&host, "ties_counted"), json!(true));
}

/// A database whose tree does not count every row (rows that predate it,
/// or nodes written behind the service's back) and is not marked counted
/// is counted again from the rows by the first rank asked for: stale,
/// wrong and missing nodes alike.
#[test]
fn a_tree_that_does_not_add_up_is_counted_again() {
    let host = Host::in_process_svc();
    let mut rng = Rng(7);
    let users: Vec<String> = (0..8)
        .map(|i| host.user(None, &format!("recount-{i}")))
        .collect();
    for user in &users {
        host.admin_create(
            "user_stats",
            &json!({"user_id": user, "decay_sum": a_sum(&mut rng)}),
        );
    }
    check_ranks(&host, &users, 0);
    count_trees::spoil(&host, "user_rank_counts", "users", "ranks_counted");
    check_ranks(&host, &users, 1);
    assert_eq!(count_trees::counted(&host, "ranks_counted"), json!(true));
}
