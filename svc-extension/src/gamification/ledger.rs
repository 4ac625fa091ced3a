//! A user's stats row inside one transaction: loaded once, changed in
//! memory by awards and counters, written once. Rule 1 ("insert the point
//! action, then recompute the stats") without rescanning: the row is
//! recomputed from scratch only when it does not exist yet.

use chrono::{DateTime, Utc};
use host_sdk::{Items, ItemsError, Query};
use serde_json::{json, Value};

use super::facts::{self, Computed};
use super::score;
use super::time::{format_time, parse_time};
use crate::records::str_field;

/// Where the decay anchor t₀ lives: one row of `gamification_state`.
pub const STATE_ID: &str = "00000000-0000-4000-8000-000000000000";

/// The anchor the platform starts with.
pub const DEFAULT_ANCHOR: &str = "2025-01-01T00:00:00.000Z";

/// The current decay anchor t₀.
pub fn anchor(items: &Items<'_>) -> Result<DateTime<Utc>, ItemsError> {
    let row: Option<Value> = items.read_one_with(
        "gamification_state",
        STATE_ID,
        &Query::new().fields(&["anchor"]),
    )?;
    Ok(row
        .as_ref()
        .and_then(|r| str_field(r, "anchor"))
        .or(Some(DEFAULT_ANCHOR))
        .and_then(parse_time)
        .unwrap_or_else(Utc::now))
}

const STATS_FIELDS: [&str; 9] = [
    "id",
    "total_raw_points",
    "decay_sum",
    "recordings_count",
    "playbacks_count",
    "comments_count",
    "achievements_count",
    "completions_count",
    "user_id",
];

fn int(row: &Value, field: &str) -> i64 {
    row.get(field).and_then(Value::as_i64).unwrap_or(0)
}

/// The stats of one user during one transaction.
#[derive(Debug, Clone)]
pub struct Ledger {
    pub user: String,
    /// The stats row's id; `None` when it is created on save.
    row: Option<String>,
    pub stats: Computed,
    pub anchor: DateTime<Utc>,
    pub now: DateTime<Utc>,
    /// `featured_published` was read (a stored row does not keep it).
    featured_known: bool,
}

/// The values of a stored stats row.
fn stored(r: &Value) -> Computed {
    Computed {
        total_raw_points: int(r, "total_raw_points"),
        decay_sum: r.get("decay_sum").and_then(Value::as_f64).unwrap_or(0.0),
        recordings_count: int(r, "recordings_count").max(0) as u64,
        playbacks_count: int(r, "playbacks_count").max(0) as u64,
        comments_count: int(r, "comments_count").max(0) as u64,
        achievements_count: int(r, "achievements_count").max(0) as u64,
        completions_count: int(r, "completions_count").max(0) as u64,
        ..Default::default()
    }
}

/// The stored stats rows of some users, by user id.
pub fn stored_rows(
    items: &Items<'_>,
    users: &[String],
) -> Result<Vec<(String, String, Computed)>, ItemsError> {
    let rows = items.read_by_query(
        "user_stats",
        &Query::new()
            .filter(json!({"user_id": {"_in": users}}))
            .fields(&STATS_FIELDS),
    )?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            Some((
                str_field(r, "user_id")?.to_string(),
                str_field(r, "id")?.to_string(),
                stored(r),
            ))
        })
        .collect())
}

impl Ledger {
    /// The user's stats: the stored row, or (no row yet) rule 3 computed
    /// from the records as they are now in this transaction.
    pub fn load(
        items: &Items<'_>,
        user: &str,
        anchor: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Self, ItemsError> {
        let rows = items.read_by_query(
            "user_stats",
            &Query::new()
                .filter(json!({"user_id": {"_eq": user}}))
                .fields(&STATS_FIELDS)
                .limit(1),
        )?;
        let (row, stats, featured_known) = match rows.first() {
            Some(r) => (str_field(r, "id").map(String::from), stored(r), false),
            None => {
                let mut all = facts::compute(items, &[user.to_string()], anchor)?;
                (None, all.remove(user).unwrap_or_default(), true)
            }
        };
        Ok(Self {
            user: user.to_string(),
            row,
            stats,
            anchor,
            now,
            featured_known,
        })
    }

    /// A ledger whose values were just computed from scratch.
    pub fn computed(
        user: &str,
        row: Option<String>,
        stats: Computed,
        anchor: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            user: user.to_string(),
            row,
            stats,
            anchor,
            now,
            featured_known: true,
        }
    }

    /// Whether the row existed before this transaction: counters are then
    /// adjusted by the caller; a new row already counts everything.
    pub fn existed(&self) -> bool {
        self.row.is_some()
    }

    /// Applies a counter change to a row that existed (a new row was
    /// computed with the change already in the records).
    pub fn adjust(&mut self, change: impl FnOnce(&mut Computed)) {
        if self.existed() {
            change(&mut self.stats);
        }
    }

    /// Rule 1: inserts a point action (dated now) and adds it to the stats.
    pub fn award(
        &mut self,
        items: &Items<'_>,
        action: &str,
        points: i64,
        recording: Option<&str>,
    ) -> Result<(), ItemsError> {
        items.create_one(
            "user_points",
            &json!({"user_id": self.user, "action": action, "points": points,
                    "recording_id": recording, "date_created": format_time(self.now)}),
        )?;
        self.stats.total_raw_points += points;
        self.stats.decay_sum += score::term(points as f64, self.now, self.anchor);
        Ok(())
    }

    /// Reads the user's featured published recordings if not known yet.
    pub fn featured_published(&mut self, items: &Items<'_>) -> Result<u64, ItemsError> {
        if !self.featured_known {
            self.stats.featured_published = items.count(
                "recordings",
                Some(json!({"_and": [
                    {"user_created": {"_eq": self.user}},
                    {"status": {"_eq": "published"}},
                    {"featured": {"_eq": true}},
                ]})),
            )?;
            self.featured_known = true;
        }
        Ok(self.stats.featured_published)
    }

    /// Writes the row (rule 3: update if it exists, else insert), with
    /// `total_weighted_points` as of now and `last_updated` now.
    pub fn save(&mut self, items: &Items<'_>) -> Result<(), ItemsError> {
        let s = &self.stats;
        let row = json!({
            "user_id": self.user,
            "total_raw_points": s.total_raw_points,
            "total_weighted_points": score::weighted_at(s.decay_sum, self.anchor, self.now),
            "decay_sum": s.decay_sum,
            "recordings_count": s.recordings_count,
            "playbacks_count": s.playbacks_count,
            "comments_count": s.comments_count,
            "achievements_count": s.achievements_count,
            "completions_count": s.completions_count,
            "last_updated": format_time(self.now),
        });
        match &self.row {
            Some(id) => {
                items.update_one("user_stats", id, &row)?;
            }
            None => {
                self.row = Some(items.create_one("user_stats", &row)?);
            }
        }
        Ok(())
    }
}
