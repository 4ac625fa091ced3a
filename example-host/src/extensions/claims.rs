//! One run per period of each schedule across every host on the database
//! (docs/decisions.md §8): a host runs a period only after claiming it, by
//! inserting the period's row into `platform_schedule_runs`, whose `run`
//! key is unique. The claim holds a lease that the running host renews;
//! a claim left unfinished past its lease (its host died mid-run) is taken
//! over by the next host that looks.
//!
//! Claims are ordinary writes through the items service, in one
//! transaction each (serializable on PostgreSQL, one writer at a time on
//! SQLite): the check of a lapsed lease and the takeover cannot interleave
//! with another host's. Leases compare the hosts' clocks, which are
//! assumed to agree within a small part of the lease (NTP).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::items::{Session, Who};
use crate::platform::Platform;
use crate::platform::PlatformError;
use crate::platform_schema::SCHEDULE_RUNS;
use platform_store::query::WireQuery;
use platform_store::values::{format_timestamp, parse_timestamp};

/// How long finished runs stay in `platform_schedule_runs` (for operators).
const KEPT_FOR: chrono::Duration = chrono::Duration::days(1);
/// Most finished runs forgotten after one run (a schedule's backlog goes
/// over its next runs).
const PRUNED_AT_ONCE: i64 = 100;

/// This host's claims on schedule periods.
pub struct Claims {
    /// Names this host in the rows it claims (for operators and logs).
    host: String,
    lease: Duration,
}

/// A period claimed by this host: renew it while running, finish it after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    /// The row's id.
    id: String,
    /// `extension/schedule/period`.
    pub run: String,
    extension: String,
    schedule: String,
    /// The claim was another host's, whose lease lapsed unfinished.
    pub taken_over: bool,
}

fn run_key(extension: &str, schedule: &str, period: DateTime<Utc>) -> String {
    format!("{extension}/{schedule}/{}", format_timestamp(period))
}

fn wire(query: Value) -> Result<WireQuery, PlatformError> {
    WireQuery::from_json(&query.to_string()).map_err(|e| PlatformError::Internal(e.0))
}

fn text<'v>(row: &'v Value, field: &str) -> Option<&'v str> {
    row.get(field).and_then(Value::as_str)
}

impl Claims {
    pub fn new(lease: Duration) -> Self {
        Self {
            host: format!(
                "pid {} ({})",
                std::process::id(),
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            ),
            lease: lease.max(Duration::from_secs(1)),
        }
    }

    /// How long a claim holds unless renewed.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    fn lease_end(&self) -> String {
        let lease = chrono::Duration::from_std(self.lease).unwrap_or(chrono::Duration::MAX);
        format_timestamp(Utc::now() + lease)
    }

    /// Claims the period starting at `period` of a schedule: `Some` when no
    /// host had claimed it, or its claim lapsed unfinished; `None` when
    /// another host runs it or ran it.
    pub fn claim(
        &self,
        platform: &Platform,
        extension: &str,
        schedule: &str,
        period: DateTime<Utc>,
    ) -> Result<Option<Claimed>, PlatformError> {
        let run = run_key(extension, schedule, period);
        platform.transaction(|session| {
            let found = self.rows(platform, session, json!({"run": {"_eq": run}}), 1)?;
            match found.first() {
                None => {
                    let created = platform.create_one(
                        session,
                        &Who::system(),
                        SCHEDULE_RUNS,
                        &json!({
                            "run": run,
                            "extension": extension,
                            "schedule": schedule,
                            "period": format_timestamp(period),
                            "host": self.host,
                            "lease_until": self.lease_end(),
                        }),
                    );
                    match created {
                        Ok(id) => Ok(Some(Claimed {
                            id,
                            run: run.clone(),
                            extension: extension.to_string(),
                            schedule: schedule.to_string(),
                            taken_over: false,
                        })),
                        // Claimed by another host since the read.
                        Err(PlatformError::NotUnique(..)) => Ok(None),
                        Err(e) => Err(e),
                    }
                }
                Some(row) => self.take_over_if_lapsed(platform, session, row),
            }
        })
    }

    /// The latest period of a schedule whose claim lapsed unfinished, taken
    /// over by this host; `None` when there is none.
    pub fn take_over_lapsed(
        &self,
        platform: &Platform,
        extension: &str,
        schedule: &str,
    ) -> Result<Option<Claimed>, PlatformError> {
        let now = format_timestamp(Utc::now());
        platform.transaction(|session| {
            let lapsed = self.rows(
                platform,
                session,
                json!({"_and": [
                    {"extension": {"_eq": extension}},
                    {"schedule": {"_eq": schedule}},
                    {"finished_on": {"_null": true}},
                    {"lease_until": {"_lt": now}},
                ]}),
                1,
            )?;
            match lapsed.first() {
                Some(row) => self.take_over_if_lapsed(platform, session, row),
                None => Ok(None),
            }
        })
    }

    /// Renews the lease of a period this host runs.
    pub fn renew(&self, platform: &Platform, claimed: &Claimed) -> Result<(), PlatformError> {
        platform.transaction(|session| {
            platform
                .update_one(
                    session,
                    &Who::system(),
                    SCHEDULE_RUNS,
                    &claimed.id,
                    &json!({"lease_until": self.lease_end()}),
                )
                .map(drop)
        })
    }

    /// Marks a period this host ran as done (whatever the job answered: a
    /// failed run is not run again by another host), and forgets finished
    /// runs of the schedule older than [`KEPT_FOR`].
    pub fn finish(&self, platform: &Platform, claimed: &Claimed) -> Result<(), PlatformError> {
        let before = format_timestamp(Utc::now() - KEPT_FOR);
        platform.transaction(|session| {
            platform.update_one(
                session,
                &Who::system(),
                SCHEDULE_RUNS,
                &claimed.id,
                &json!({"finished_on": format_timestamp(Utc::now())}),
            )?;
            let old = self.rows(
                platform,
                session,
                json!({"_and": [
                    {"extension": {"_eq": claimed.extension}},
                    {"schedule": {"_eq": claimed.schedule}},
                    {"finished_on": {"_nnull": true}},
                    {"period": {"_lt": before}},
                ]}),
                PRUNED_AT_ONCE,
            )?;
            for row in &old {
                if let Some(id) = text(row, "id") {
                    platform.delete_one(session, &Who::system(), SCHEDULE_RUNS, id)?;
                }
            }
            Ok(())
        })
    }

    fn rows(
        &self,
        platform: &Platform,
        session: &mut Session<'_>,
        filter: Value,
        limit: i64,
    ) -> Result<Vec<Value>, PlatformError> {
        let query = wire(json!({"filter": filter, "sort": ["-period"], "limit": limit}))?;
        let rows = platform.read_by_query(session, &Who::system(), SCHEDULE_RUNS, &query, None)?;
        Ok(rows.into_iter().map(Value::Object).collect())
    }

    /// `row` (a claim read in this transaction) for this host, when it is
    /// unfinished and its lease has lapsed.
    fn take_over_if_lapsed(
        &self,
        platform: &Platform,
        session: &mut Session<'_>,
        row: &Value,
    ) -> Result<Option<Claimed>, PlatformError> {
        let finished = row.get("finished_on").is_some_and(|v| !v.is_null());
        let lapsed = text(row, "lease_until")
            .and_then(parse_timestamp)
            .is_none_or(|until| until < Utc::now());
        let (Some(id), Some(run), Some(extension), Some(schedule)) = (
            text(row, "id"),
            text(row, "run"),
            text(row, "extension"),
            text(row, "schedule"),
        ) else {
            return Ok(None);
        };
        if finished || !lapsed {
            return Ok(None);
        }
        log::warn!(
            "schedule run {run}: the lease of {} lapsed unfinished; {} takes it over",
            text(row, "host").unwrap_or("another host"),
            self.host
        );
        platform.update_one(
            session,
            &Who::system(),
            SCHEDULE_RUNS,
            id,
            &json!({"host": self.host, "lease_until": self.lease_end()}),
        )?;
        Ok(Some(Claimed {
            id: id.to_string(),
            run: run.to_string(),
            extension: extension.to_string(),
            schedule: schedule.to_string(),
            taken_over: true,
        }))
    }
}
