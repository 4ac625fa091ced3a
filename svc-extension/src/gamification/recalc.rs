//! The recalculation routine (docs/service-api.md rule 6; docs/decisions.md
//! §7): every user with a stats row gets rule 3 from scratch, then the full
//! achievement check with ranks for `top_10_rank` taken from the refreshed
//! scores, in batches (one transaction each, so writers are never held up for
//! long), with a progress line in the log. It also moves the decay anchor
//! forward when due.

use std::time::Instant;

use host_sdk::{BoxError, Context, Items, ItemsError, Query};
use serde_json::{json, Value};

use super::check::{check, published, rows_of};
use super::facts;
use super::ledger::{anchor, stored_rows, Ledger, STATE_ID};
use super::score;
use super::time::{format_time, now_ms, parse_time};
use crate::own_writes;
use crate::records::{by_id, counts_by_filtered, str_field};

/// Users per transaction.
const BATCH: usize = 500;

/// Every user with a stats row, with the row's id and sum.
fn stats_rows(items: &Items<'_>) -> Result<Vec<(String, String, f64)>, ItemsError> {
    let rows = items.read_by_query(
        "user_stats",
        &Query::new()
            .fields(&["id", "user_id", "decay_sum"])
            .sort(&["user_id"]),
    )?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            Some((
                str_field(r, "user_id")?.to_string(),
                str_field(r, "id")?.to_string(),
                r.get("decay_sum").and_then(Value::as_f64).unwrap_or(0.0),
            ))
        })
        .collect())
}

/// Moves the anchor to now and rescales every sum, in one transaction.
fn rebase(ctx: &Context<'_>) -> Result<(), ItemsError> {
    ctx.transaction(|tx| {
        let items = tx.as_admin();
        let old = anchor(&items)?;
        let new = now_ms();
        let factor = score::rebase_factor(old, new);
        for (_, id, sum) in stats_rows(&items)? {
            own_writes::run(|| {
                items.update_one("user_stats", &id, &json!({"decay_sum": sum * factor}))
            })?;
        }
        items.update_one(
            "gamification_state",
            STATE_ID,
            &json!({"anchor": format_time(new)}),
        )?;
        log::info!(
            "recalculate-stats: decay anchor moved from {} to {}",
            format_time(old),
            format_time(new)
        );
        Ok(())
    })
}

/// Rank (1 + users with a strictly greater sum) from sums sorted descending.
fn rank_in(sorted_desc: &[f64], sum: f64) -> u64 {
    1 + sorted_desc.partition_point(|&s| s > sum) as u64
}

pub fn recalculate(ctx: &Context<'_>) -> Result<(), BoxError> {
    let started = Instant::now();
    let admin = ctx.as_admin();
    if score::needs_rebase(anchor(&admin)?, now_ms()) {
        rebase(ctx)?;
    }
    let rows = stats_rows(&admin)?;
    let total = rows.len();
    log::info!("recalculate-stats: {total} users");

    // Pass 1: rule 3 from scratch, batch by batch.
    for (done, batch) in rows.chunks(BATCH).enumerate() {
        ctx.transaction(|tx| {
            let items = tx.as_admin();
            let anchor = anchor(&items)?;
            let now = now_ms();
            let users: Vec<String> = batch.iter().map(|(u, _, _)| u.clone()).collect();
            let mut computed = facts::compute(&items, &users, anchor)?;
            for (user, id, _) in batch {
                let stats = computed.remove(user).unwrap_or_default();
                Ledger::computed(user, Some(id.clone()), stats, anchor, now).save(&items)?;
            }
            Ok::<_, ItemsError>(())
        })?;
        log_progress("stats", (done + 1) * BATCH, total);
    }

    // Pass 2: the full achievement check, ranks from the refreshed sums.
    let mut sums: Vec<f64> = stats_rows(&admin)?.iter().map(|(_, _, s)| *s).collect();
    sums.sort_by(|a, b| b.total_cmp(a));
    let achievements = published(&admin, None)?;
    let mut unlocked = 0usize;
    for (done, batch) in rows.chunks(BATCH).enumerate() {
        unlocked += ctx.transaction(|tx| {
            let items = tx.as_admin();
            let anchor = anchor(&items)?;
            let now = now_ms();
            let users: Vec<String> = batch.iter().map(|(u, _, _)| u.clone()).collect();
            let featured = counts_by_filtered(
                &items,
                "recordings",
                "user_created",
                &users,
                json!({"_and": [{"status": {"_eq": "published"}}, {"featured": {"_eq": true}}]}),
            )?;
            let accounts = by_id(&items, "platform_users", &users)?;
            let existing = rows_of(&items, &users, &achievements)?;
            let mut newly = 0;
            for row in stored_rows(&items, &users)? {
                let (user, id, mut stats) = (row.user, row.id, row.stats);
                stats.featured_published = featured.get(&user).copied().unwrap_or(0);
                stats.created = accounts
                    .get(&user)
                    .and_then(|a| str_field(a, "date_created"))
                    .and_then(parse_time);
                let facts = stats.facts(Some(rank_in(&sums, stats.decay_sum)));
                let mut ledger = Ledger::computed(&user, Some(id), stats, anchor, now);
                let codes = check(&items, &mut ledger, &achievements, &existing, &facts)?;
                if !codes.is_empty() {
                    newly += codes.len();
                    ledger.save(&items)?;
                }
            }
            Ok::<_, ItemsError>(newly)
        })?;
        log_progress("achievements", (done + 1) * BATCH, total);
    }
    log::info!(
        "recalculate-stats: {total} users refreshed, {unlocked} achievements unlocked, in {:.1?}",
        started.elapsed()
    );
    Ok(())
}

fn log_progress(pass: &str, done: usize, total: usize) {
    if total > BATCH {
        log::info!(
            "recalculate-stats: {pass} {}/{total} users",
            done.min(total)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::rank_in;

    #[test]
    fn rank_counts_strictly_greater_sums() {
        let sums = [9.0, 7.0, 7.0, 3.0];
        assert_eq!(rank_in(&sums, 9.0), 1);
        assert_eq!(rank_in(&sums, 7.0), 2);
        assert_eq!(rank_in(&sums, 3.0), 4);
        assert_eq!(rank_in(&sums, 1.0), 5);
        assert_eq!(rank_in(&[], 0.0), 1);
    }
}
