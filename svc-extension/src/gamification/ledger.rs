//! A user's stats row inside one transaction: loaded once, changed in
//! memory by awards and counters, written once. Rule 1 ("insert the point
//! action, then recompute the stats") without rescanning: the row is
//! recomputed from scratch only when it does not exist yet, or when it was
//! last written by someone else than the ledger (`ledger_verified` false: a
//! row imported or edited by hand), so the next award puts it right.

use chrono::{DateTime, Utc};
use host_sdk::{Items, ItemsError, Query};
use serde_json::{json, Value};

use super::facts::{self, Computed};
use super::score;
use super::time::{format_time, parse_time};
use crate::own_writes;
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

/// Set by the ledger on every row it writes; any other write of a row
/// clears it (a hook, or the field's default on rows created elsewhere).
pub const VERIFIED: &str = "ledger_verified";

const STATS_FIELDS: [&str; 10] = [
    "id",
    VERIFIED,
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
    /// The values were computed from the records in this transaction, so
    /// they already count every write made before the load.
    from_scratch: bool,
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

/// A stored stats row.
#[derive(Debug, Clone)]
pub struct StoredRow {
    pub user: String,
    pub id: String,
    pub stats: Computed,
    /// As the ledger last wrote it (see [`VERIFIED`]).
    pub verified: bool,
}

/// The stored stats rows of some users.
pub fn stored_rows(items: &Items<'_>, users: &[String]) -> Result<Vec<StoredRow>, ItemsError> {
    let rows = items.read_by_query(
        "user_stats",
        &Query::new()
            .filter(json!({"user_id": {"_in": users}}))
            .fields(&STATS_FIELDS),
    )?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            Some(StoredRow {
                user: str_field(r, "user_id")?.to_string(),
                id: str_field(r, "id")?.to_string(),
                stats: stored(r),
                verified: r.get(VERIFIED).and_then(Value::as_bool) == Some(true),
            })
        })
        .collect())
}

/// The stored row of one user.
pub fn stored_row(items: &Items<'_>, user: &str) -> Result<Option<StoredRow>, ItemsError> {
    Ok(stored_rows(items, &[user.to_string()])?.into_iter().next())
}

impl Ledger {
    /// The user's stats: the stored row, or rule 3 computed from the
    /// records as they are now in this transaction when there is no row yet
    /// or the row is not the ledger's own.
    pub fn load(
        items: &Items<'_>,
        user: &str,
        anchor: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Self, ItemsError> {
        let row = match stored_row(items, user)? {
            Some(row) if row.verified => return Ok(Self::from_row(row, anchor, now)),
            other => other,
        };
        let stats = facts::compute(items, &[user.to_string()], anchor)?
            .remove(user)
            .unwrap_or_default();
        let mut ledger = Self::computed(user, row.map(|r| r.id), stats, anchor, now);
        ledger.from_scratch = true;
        Ok(ledger)
    }

    /// A ledger over the values of the ledger's own stored row.
    fn from_row(row: StoredRow, anchor: DateTime<Utc>, now: DateTime<Utc>) -> Self {
        Self {
            user: row.user,
            row: Some(row.id),
            stats: row.stats,
            anchor,
            now,
            featured_known: false,
            from_scratch: false,
        }
    }

    /// The user's stats when they have a row of the ledger's own; `None`
    /// otherwise: a user without one gets it, computed from scratch, at
    /// their next award, so a counter has nothing to adjust.
    pub fn load_existing(
        items: &Items<'_>,
        user: &str,
        anchor: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Option<Self>, ItemsError> {
        Ok(stored_row(items, user)?
            .filter(|r| r.verified)
            .map(|row| Self::from_row(row, anchor, now)))
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
            from_scratch: false,
        }
    }

    /// Whether the values were read from the ledger's stored row: counters
    /// are then adjusted by the caller; values computed from scratch
    /// already count everything written so far.
    pub fn existed(&self) -> bool {
        !self.from_scratch
    }

    /// Applies a counter change to values read from the stored row (values
    /// computed from scratch already have the change in the records).
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
        own_writes::run(|| {
            items.create_one(
                "user_points",
                &json!({"user_id": self.user, "action": action, "points": points,
                        "recording_id": recording, "date_created": format_time(self.now)}),
            )
        })?;
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
        // The user only on a new row: an existing one was found by it, and
        // naming it again would have the host check the reference (a
        // statement) on every award.
        let row = json!({
            "total_raw_points": s.total_raw_points,
            "total_weighted_points": score::weighted_at(s.decay_sum, self.anchor, self.now),
            "decay_sum": s.decay_sum,
            "recordings_count": s.recordings_count,
            "playbacks_count": s.playbacks_count,
            "comments_count": s.comments_count,
            "achievements_count": s.achievements_count,
            "completions_count": s.completions_count,
            "last_updated": format_time(self.now),
            VERIFIED: true,
        });
        match &self.row {
            Some(id) => {
                own_writes::run(|| items.update_one("user_stats", id, &row))?;
            }
            None => {
                // A new row shows its user from the start.
                let mut row = row;
                if let Some(fields) = row.as_object_mut() {
                    fields.insert("user_id".into(), json!(self.user));
                    fields.extend(super::shown_users::for_new_row(items, &self.user)?);
                }
                self.row = Some(own_writes::run(|| items.create_one("user_stats", &row))?);
            }
        }
        Ok(())
    }
}
