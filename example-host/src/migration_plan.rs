//! What a start would do to a database's migrations, owner by owner (the
//! platform, each extension): which of each owner's declared migrations
//! are recorded and which are pending, and which recorded ones this
//! release does not know (the database was migrated by a newer release:
//! it is refused before anything is written). Plain functions over ids,
//! for `example-host migrate status`, `migrate --dry-run` and every start.

use std::collections::BTreeSet;

/// One owner's migrations against a database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerPlan {
    pub owner: String,
    /// Declared and recorded, in declared order.
    pub applied: Vec<String>,
    /// Declared and not recorded, in the order they would run.
    pub pending: Vec<String>,
    /// Recorded and not declared by this release.
    pub unknown: Vec<String>,
}

impl OwnerPlan {
    /// `owner`'s `declared` migrations against the `recorded` ones (every
    /// owner's: others are ignored); `also_known` are ids this release
    /// knows that need not run (the platform's once-only steps, which run
    /// when their case arises).
    pub fn of(
        owner: &str,
        declared: &[&str],
        also_known: &[&str],
        recorded: &[(String, String)],
    ) -> Self {
        let mine: BTreeSet<&str> = recorded
            .iter()
            .filter(|(o, _)| o == owner)
            .map(|(_, id)| id.as_str())
            .collect();
        let (mut applied, pending): (Vec<String>, Vec<String>) = declared
            .iter()
            .map(|id| id.to_string())
            .partition(|id| mine.contains(id.as_str()));
        applied.extend(
            also_known
                .iter()
                .filter(|id| mine.contains(*id) && !declared.contains(id))
                .map(|id| id.to_string()),
        );
        let unknown = mine
            .iter()
            .filter(|id| !declared.contains(id) && !also_known.contains(id))
            .map(|id| id.to_string())
            .collect();
        Self {
            owner: owner.to_string(),
            applied,
            pending,
            unknown,
        }
    }

    /// An extension's migrations against the `recorded` ones. Its ids are
    /// ordered (`0001_…`, `0002_…`): a recorded id it does not declare is
    /// one a newer release of it made only when it sorts after every id it
    /// declares; one before is a migration a later release stopped
    /// declaring (it ran, and is kept among the applied).
    pub fn of_extension(owner: &str, declared: &[&str], recorded: &[(String, String)]) -> Self {
        let mut plan = Self::of(owner, declared, &[], recorded);
        let last = declared.iter().max().copied().unwrap_or("");
        let (newer, retired): (Vec<String>, Vec<String>) =
            plan.unknown.drain(..).partition(|id| id.as_str() > last);
        plan.applied.extend(retired);
        plan.unknown = newer;
        plan
    }

    /// Refuses a database that a newer release of this owner migrated.
    pub fn refuse_newer(&self) -> Result<(), String> {
        if self.unknown.is_empty() {
            return Ok(());
        }
        Err(format!(
            "the database was migrated by a newer release of `{}` (its migrations {} are unknown to this one): \
             run that release or a newer one; nothing was written",
            self.owner,
            self.unknown.join(", ")
        ))
    }

    /// One line per migration: `applied`, `pending` or `unknown`.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (state, ids) in [
            ("applied", &self.applied),
            ("pending", &self.pending),
            ("unknown (newer release)", &self.unknown),
        ] {
            for id in ids {
                out.push(format!("{:<12} {state:<8} {id}", self.owner));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(o, i)| (o.to_string(), i.to_string()))
            .collect()
    }

    #[test]
    fn an_owner_s_migrations_are_applied_pending_or_unknown() {
        let db = recorded(&[("platform", "0001"), ("svc", "0001"), ("svc", "0009")]);
        let plan = OwnerPlan::of("svc", &["0001", "0002"], &[], &db);
        assert_eq!(plan.applied, ["0001"]);
        assert_eq!(plan.pending, ["0002"]);
        assert_eq!(plan.unknown, ["0009"]);
        let err = plan.refuse_newer().unwrap_err();
        assert!(
            err.contains("newer release of `svc`") && err.contains("0009"),
            "{err}"
        );
        let platform = OwnerPlan::of("platform", &["0002"], &["0001", "once"], &db);
        assert_eq!(platform.applied, ["0001"]);
        assert_eq!(platform.pending, ["0002"]);
        assert!(platform.refuse_newer().is_ok());
    }

    #[test]
    fn an_extension_is_newer_only_past_its_last_declared_id() {
        let db = recorded(&[("hello", "0001_notes"), ("hello", "0002_grants")]);
        // A rebuild that declares its new migration only: nothing newer.
        let rebuilt = OwnerPlan::of_extension("hello", &["0003_tags"], &db);
        assert!(rebuilt.refuse_newer().is_ok());
        assert_eq!(rebuilt.pending, ["0003_tags"]);
        assert_eq!(rebuilt.applied, ["0001_notes", "0002_grants"]);
        // An older build on a database a newer one migrated: refused.
        let older = OwnerPlan::of_extension("hello", &["0001_notes"], &db);
        assert_eq!(older.unknown, ["0002_grants"]);
        assert!(older.refuse_newer().is_err());
    }

    #[test]
    fn every_migration_gets_a_line() {
        let db = recorded(&[("svc", "0001")]);
        let lines = OwnerPlan::of("svc", &["0001", "0002"], &[], &db).lines();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].contains("applied") && lines[1].contains("pending"));
    }
}
