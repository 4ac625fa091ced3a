//! The achievement check (docs/service-api.md rule 4).

use std::collections::HashMap;

use host_sdk::{Items, ItemsError, Query};
use serde::Deserialize;
use serde_json::{json, Value};

use super::ledger::Ledger;
use super::progress::{progress, Facts};
use super::time::format_time;
use crate::own_writes;

/// A published achievement, as the check needs it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Achievement {
    pub id: String,
    pub code: String,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub required_count: i64,
    #[serde(default)]
    pub points_reward: i64,
}

/// Published achievements, optionally of one category. Read each time, in
/// the caller's transaction: a list kept in this process would miss edits
/// made through another host, and one read inside a transaction could keep
/// what that transaction rolls back.
pub fn published(
    items: &Items<'_>,
    category: Option<&str>,
) -> Result<Vec<Achievement>, ItemsError> {
    let mut filter = vec![json!({"status": {"_eq": "published"}})];
    if let Some(category) = category {
        filter.push(json!({"category": {"_eq": category}}));
    }
    items.read_by_query_as(
        "achievements",
        &Query::new()
            .filter(json!({ "_and": filter }))
            .fields(&["id", "code", "category", "required_count", "points_reward"])
            .sort(&["sort", "id"]),
    )
}

/// A user's row for one achievement.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UserAchievement {
    pub id: String,
    pub user_id: String,
    pub achievement_id: String,
    #[serde(default)]
    pub progress: i64,
    #[serde(default)]
    pub date_unlocked: Option<String>,
}

/// The rows of these users for these achievements, by (user, achievement).
pub fn rows_of(
    items: &Items<'_>,
    users: &[String],
    achievements: &[Achievement],
) -> Result<HashMap<(String, String), UserAchievement>, ItemsError> {
    if users.is_empty() || achievements.is_empty() {
        return Ok(HashMap::new());
    }
    let ids: Vec<&str> = achievements.iter().map(|a| a.id.as_str()).collect();
    let rows: Vec<UserAchievement> = items.read_by_query_as(
        "user_achievements",
        &Query::new()
            .filter(
                json!({"_and": [{"user_id": {"_in": users}}, {"achievement_id": {"_in": ids}}]}),
            )
            .fields(&[
                "id",
                "user_id",
                "achievement_id",
                "progress",
                "date_unlocked",
            ]),
    )?;
    Ok(rows
        .into_iter()
        .map(|r| ((r.user_id.clone(), r.achievement_id.clone()), r))
        .collect())
}

/// Rule 4 for one user: writes each achievement's progress, keeps or sets
/// `date_unlocked`, and on a new unlock counts it and awards
/// `ACHIEVEMENT_<code>` (when the reward is positive) through the ledger.
/// Returns the codes newly unlocked.
pub fn check(
    items: &Items<'_>,
    ledger: &mut Ledger,
    achievements: &[Achievement],
    rows: &HashMap<(String, String), UserAchievement>,
    facts: &Facts,
) -> Result<Vec<String>, ItemsError> {
    let now = ledger.now;
    let mut unlocked_now = Vec::new();
    for a in achievements {
        let value = progress(&a.code, facts, now);
        let unlocked = value as i64 >= a.required_count;
        let row = rows.get(&(ledger.user.clone(), a.id.clone()));
        let kept = row.and_then(|r| r.date_unlocked.clone());
        let newly = kept.is_none() && unlocked;
        let date_unlocked = match (&kept, newly) {
            (Some(d), _) => Value::String(d.clone()),
            (None, true) => Value::String(format_time(now)),
            (None, false) => Value::Null,
        };
        match row {
            None => {
                own_writes::run(|| {
                    items.create_one(
                        "user_achievements",
                        &json!({"user_id": ledger.user, "achievement_id": a.id,
                                "progress": value, "date_unlocked": date_unlocked}),
                    )
                })?;
            }
            // Only what changed is written.
            Some(r) if r.progress != value as i64 || newly => {
                own_writes::run(|| {
                    items.update_one(
                        "user_achievements",
                        &r.id,
                        &json!({"progress": value, "date_unlocked": date_unlocked}),
                    )
                })?;
            }
            Some(_) => {}
        }
        if newly {
            ledger.stats.achievements_count += 1;
            if a.points_reward > 0 {
                ledger.award(
                    items,
                    &format!("ACHIEVEMENT_{}", a.code),
                    a.points_reward,
                    None,
                )?;
            }
            unlocked_now.push(a.code.clone());
        }
    }
    Ok(unlocked_now)
}

/// Rule 4 limited to one category, for one user whose ledger is loaded.
pub fn check_category(
    items: &Items<'_>,
    ledger: &mut Ledger,
    category: &str,
) -> Result<Vec<String>, ItemsError> {
    let achievements = published(items, Some(category))?;
    if achievements.is_empty() {
        return Ok(Vec::new());
    }
    if category == "recordings" {
        ledger.featured_published(items)?;
    }
    let rows = rows_of(items, std::slice::from_ref(&ledger.user), &achievements)?;
    let facts = ledger.stats.facts(None);
    check(items, ledger, &achievements, &rows, &facts)
}
