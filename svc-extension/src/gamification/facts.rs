//! Rule 3 from scratch, for a batch of users at once: a constant number of
//! grouped reads per batch, whatever its size.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use host_sdk::{Items, ItemsError, Query};
use serde_json::{json, Value};

use super::progress::Facts;
use super::score;
use super::time::parse_time;
use crate::records::str_field;

/// What rule 3 computes for one user, plus the internal running values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Computed {
    pub total_raw_points: i64,
    /// Σ points·e^(λ(t−t₀)) (see `score`).
    pub decay_sum: f64,
    pub recordings_count: u64,
    pub playbacks_count: u64,
    pub comments_count: u64,
    pub achievements_count: u64,
    /// Plays of the user with `completed` true (rule 5, completionist).
    pub completions_count: u64,
    /// Published recordings with `featured` true (rule 5).
    pub featured_published: u64,
    pub created: Option<DateTime<Utc>>,
}

impl Computed {
    pub fn facts(&self, rank: Option<u64>) -> Facts {
        Facts {
            published: self.recordings_count,
            featured_published: self.featured_published,
            plays_on_others: self.playbacks_count,
            completed_plays: self.completions_count,
            comments: self.comments_count,
            created: self.created,
            rank,
        }
    }
}

/// What a point action adds to its user's stats. One reading of the
/// record for the computation from scratch and for the hooks that follow
/// writes of point actions, so both count exactly the same actions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointAction<'a> {
    pub user: &'a str,
    pub points: i64,
    pub at: DateTime<Utc>,
}

impl<'a> PointAction<'a> {
    /// `None` for a record without a user or a readable date: it counts
    /// nowhere.
    pub fn of(record: &'a Value) -> Option<Self> {
        Some(Self {
            user: str_field(record, "user_id")?,
            points: record.get("points").and_then(Value::as_i64).unwrap_or(0),
            at: str_field(record, "date_created").and_then(parse_time)?,
        })
    }

    /// Adds (`sign` 1) or removes (`sign` -1) the action's raw points and
    /// decay term.
    pub fn add_to(&self, stats: &mut Computed, anchor: DateTime<Utc>, sign: i64) {
        stats.total_raw_points += sign * self.points;
        stats.decay_sum += sign as f64 * score::term(self.points as f64, self.at, anchor);
    }
}

fn count_of(row: &Value) -> u64 {
    row.get("count").and_then(Value::as_u64).unwrap_or(0)
}

/// Counts grouped by `field` for records whose `field` is one of `users`
/// and that match `extra`.
fn grouped_counts(
    items: &Items<'_>,
    collection: &str,
    field: &str,
    users: &[String],
    extra: Value,
) -> Result<HashMap<String, u64>, ItemsError> {
    crate::records::counts_by_filtered(items, collection, field, users, extra)
}

/// Computes rule 3 (and what rule 5 needs) for every user of `users`.
pub fn compute(
    items: &Items<'_>,
    users: &[String],
    anchor: DateTime<Utc>,
) -> Result<HashMap<String, Computed>, ItemsError> {
    let mut out: HashMap<String, Computed> = users
        .iter()
        .map(|u| (u.clone(), Computed::default()))
        .collect();
    if users.is_empty() {
        return Ok(out);
    }

    // Points: the raw sum and the anchored decay sum.
    let points = items.read_by_query(
        "user_points",
        &Query::new()
            .filter(json!({"user_id": {"_in": users}}))
            .fields(&["user_id", "points", "date_created"]),
    )?;
    for p in &points {
        let Some(point) = PointAction::of(p) else {
            continue;
        };
        if let Some(c) = out.get_mut(point.user) {
            point.add_to(c, anchor, 1);
        }
    }

    // Recordings: published, featured published, and which are whose.
    let recordings = items.read_by_query(
        "recordings",
        &Query::new()
            .filter(json!({"user_created": {"_in": users}}))
            .fields(&["id", "user_created", "status", "featured"]),
    )?;
    let mut own: HashSet<(String, String)> = HashSet::new();
    for r in &recordings {
        let (Some(id), Some(user)) = (str_field(r, "id"), str_field(r, "user_created")) else {
            continue;
        };
        own.insert((user.to_string(), id.to_string()));
        if str_field(r, "status") == Some("published") {
            if let Some(c) = out.get_mut(user) {
                c.recordings_count += 1;
                if r.get("featured").and_then(Value::as_bool) == Some(true) {
                    c.featured_published += 1;
                }
            }
        }
    }

    // Plays on others' recordings: plays per (user, recording), minus own.
    let plays = items.aggregate(
        "recording_plays",
        &Query::new()
            .filter(json!({"user_id": {"_in": users}}))
            .aggregate("count", &["*"])
            .group_by(&["user_id", "recording_id"]),
    )?;
    for row in &plays {
        let Some(user) = str_field(row, "user_id") else {
            continue;
        };
        let recording = str_field(row, "recording_id").unwrap_or_default();
        if own.contains(&(user.to_string(), recording.to_string())) {
            continue;
        }
        if let Some(c) = out.get_mut(user) {
            c.playbacks_count += count_of(row);
        }
    }

    for (user, n) in grouped_counts(
        items,
        "recording_plays",
        "user_id",
        users,
        json!({"completed": {"_eq": true}}),
    )? {
        if let Some(c) = out.get_mut(&user) {
            c.completions_count = n;
        }
    }
    for (user, n) in grouped_counts(
        items,
        "platform_comments",
        "user_created",
        users,
        json!({"collection": {"_eq": "recordings"}}),
    )? {
        if let Some(c) = out.get_mut(&user) {
            c.comments_count = n;
        }
    }
    for (user, n) in grouped_counts(
        items,
        "user_achievements",
        "user_id",
        users,
        json!({"date_unlocked": {"_nnull": true}}),
    )? {
        if let Some(c) = out.get_mut(&user) {
            c.achievements_count = n;
        }
    }
    let accounts = crate::records::by_id(items, "platform_users", users)?;
    for (user, record) in accounts {
        if let Some(c) = out.get_mut(&user) {
            c.created = str_field(&record, "date_created").and_then(parse_time);
        }
    }
    Ok(out)
}
