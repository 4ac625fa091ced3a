//! The items service: reads and writes of any collection, under a caller's
//! permissions or as admin, with the host's special fields, secrets kept
//! out of every answer, and item events after each committed write.
//!
//! Every operation is listed once, with what it does, in [`operations`]
//! (one `impl Platform`); its body lives with its concern. This module
//! holds the service itself (who runs an operation, where it runs,
//! permissions, transactions); [`read`](mod@read) and [`write`](mod@write) the
//! reads and writes (`write` also the order of a write: host-owned fields,
//! secrets, checked values), [`many`] updates and deletions of many items
//! in one transaction, [`references`] the rules between items (a reference
//! names an existing item the caller may read; delete rules), [`relations`]
//! (`fields` through references and one-to-many aliases, one read per
//! related collection and level) and [`related_filters`] (`filter` through
//! references) reads through references, [`events`] the item events and the
//! hooks they reach. Its failures are `crate::platform::error`'s.

mod access_rules;
mod events;
mod many;
mod operations;
mod read;
mod references;
mod related_filters;
mod relations;
mod write;

use crate::platform::{EventFields, EventKind, PlatformError, WriteEvent};
pub use read::COMMENTS;

use std::sync::Arc;

use serde_json::{json, Value};

use crate::accounts::CallerAccount;
use crate::credentials;
use crate::permissions::{Action, CollectionGrant};
use crate::platform::Platform;
use crate::platform_schema::{affects_access, is_internal, is_secret};
use platform_store::query::{parse_filter, FieldMasks, Filter, ReadQuery, Vars, WireQuery};
use platform_store::schema::CollectionDef;
use platform_store::storage::{Reader, Record, StoreError, TextRows, Writer};
use platform_store::values;

/// Who an operation runs as.
#[derive(Debug, Clone, Default)]
pub struct Who {
    /// The caller (also used for `user_created` and `$CURRENT_USER`).
    pub accountability: Option<CallerAccount>,
    /// Bypass permissions (the extension asked for admin access, or the
    /// host itself is writing).
    pub bypass: bool,
}

impl Who {
    pub fn caller(accountability: Option<CallerAccount>) -> Self {
        Self {
            accountability,
            bypass: false,
        }
    }
    pub fn admin(accountability: Option<CallerAccount>) -> Self {
        Self {
            accountability,
            bypass: true,
        }
    }
    pub fn system() -> Self {
        Self::admin(None)
    }
    pub fn is_admin(&self) -> bool {
        self.bypass || self.accountability.as_ref().is_some_and(|a| a.admin)
    }
    fn vars(&self) -> Vars {
        let acc = self.accountability.as_ref();
        Vars::new(acc.map(|a| a.user.clone()))
            .with_role(acc.and_then(|a| a.role.clone()))
            .with_policies(acc.map(|a| a.policies.clone()).unwrap_or_default())
    }
}

/// Where an operation runs: its own transaction, or one already open.
pub enum Session<'s> {
    Auto,
    Tx {
        conn: &'s mut dyn Writer,
        events: &'s mut Vec<WriteEvent>,
    },
}

fn key_filter(key: &str) -> Filter {
    Filter::eq("id", Value::String(key.to_string()))
}

impl Platform {
    fn collection(&self, who: &Who, name: &str) -> Result<Arc<CollectionDef>, PlatformError> {
        match self.store.schema().get(name) {
            Some(def) if !is_internal(name) => Ok(def.clone()),
            _ if who.is_admin() => Err(PlatformError::NotFound(format!(
                "Collection \"{name}\" does not exist"
            ))),
            // Do not tell callers which collections exist.
            _ => Err(PlatformError::forbidden()),
        }
    }

    /// The grant for an action; `None` when permissions are bypassed.
    fn grant(
        &self,
        who: &Who,
        collection: &str,
        action: Action,
    ) -> Result<Option<CollectionGrant>, PlatformError> {
        if who.is_admin() {
            return Ok(None);
        }
        self.permissions_of(who)?
            .grant(collection, action)
            .map(Some)
            .ok_or_else(PlatformError::forbidden)
    }

    /// What the caller's policies (the public ones, for an anonymous
    /// caller) permit.
    fn permissions_of(
        &self,
        who: &Who,
    ) -> Result<Arc<crate::permissions::PermissionSet>, PlatformError> {
        let policies = match &who.accountability {
            Some(acc) => acc.policies.clone(),
            None => self.auth.public_policies(self.store.as_ref())?,
        };
        // The caller's credentials were resolved for this request (or the
        // public policies just now), which brought the epoch up to date.
        Ok(self.permissions.for_policies(
            self.store.as_ref(),
            &policies,
            self.auth.current_epoch(),
        )?)
    }

    fn grant_filter(
        &self,
        def: &CollectionDef,
        grant: Option<&CollectionGrant>,
        vars: &Vars,
    ) -> Result<Option<Filter>, PlatformError> {
        match grant.and_then(|g| g.filter.as_ref()) {
            None => Ok(None),
            Some(raw) => parse_filter(def, raw, vars).map(Some).map_err(|e| {
                PlatformError::Internal(format!("bad permission filter on {}: {e}", def.name))
            }),
        }
    }

    fn run_read<T>(
        &self,
        session: &mut Session<'_>,
        mut work: impl FnMut(&mut dyn Reader) -> Result<T, PlatformError>,
    ) -> Result<T, PlatformError> {
        match session {
            Session::Tx { conn, .. } => work(&mut **conn as &mut dyn Reader),
            Session::Auto => {
                let mut kept = Kept::default();
                let result = self.store.read(&mut |conn| kept.keep(work(conn)));
                let ((), value) = kept.settle(result)?;
                value.ok_or_else(|| PlatformError::Internal("read did not run".into()))
            }
        }
    }

    fn run_write<T>(
        &self,
        session: &mut Session<'_>,
        mut work: impl FnMut(&mut dyn Writer, &mut Vec<WriteEvent>) -> Result<T, PlatformError>,
    ) -> Result<T, PlatformError> {
        match session {
            Session::Tx { conn, events } => work(&mut **conn, events),
            Session::Auto => {
                let mut kept = Kept::default();
                let mut events = Vec::new();
                let result = self.store.write(&mut |conn| {
                    // The store may run this again after a conflict.
                    events.clear();
                    kept.keep(work(conn, &mut events))
                });
                let ((), value) = kept.settle(result)?;
                let value =
                    value.ok_or_else(|| PlatformError::Internal("write did not run".into()))?;
                self.dispatch(events);
                Ok(value)
            }
        }
    }

    /// The item exists and the permission filter admits it.
    fn ensure_in_scope(
        &self,
        conn: &mut dyn Writer,
        def: &CollectionDef,
        key: &str,
        scope: Option<&Filter>,
        admin: bool,
    ) -> Result<(), PlatformError> {
        let mut q = ReadQuery::select(&["id"], key_filter(key)).limit(1);
        q.filter = Filter::and(q.filter.take(), scope.cloned());
        if !conn.select(def, &q)?.is_empty() {
            return Ok(());
        }
        if admin {
            Err(PlatformError::NotFound(format!("Item \"{key}\" not found")))
        } else {
            // Same answer whether it is missing or not theirs.
            Err(PlatformError::forbidden())
        }
    }
}

fn transaction<T>(
    platform: &Platform,
    mut work: impl FnMut(&mut Session<'_>) -> Result<T, PlatformError>,
) -> Result<T, PlatformError> {
    platform.run_write(&mut Session::Auto, |conn, events| {
        let mut session = Session::Tx { conn, events };
        work(&mut session)
    })
}

fn once(
    platform: &Platform,
    owner: &str,
    id: &str,
    mut work: impl FnMut(&mut Session<'_>) -> Result<(), PlatformError>,
) -> Result<bool, PlatformError> {
    // The platform's steps are declared, so that a database is known
    // to have been migrated by this release or an earlier one.
    if owner == crate::platform_schema::OWNER && !crate::platform_schema::ONCE_STEPS.contains(&id) {
        return Err(PlatformError::Internal(format!(
            "the platform's once-only step {id} is not declared in platform_schema::ONCE_STEPS"
        )));
    }
    let mut events = Vec::new();
    let mut kept = Kept::default();
    let ran = platform.store.run_once(owner, id, &mut |conn| {
        // The store may run this again after a conflict: start afresh.
        events.clear();
        let mut session = Session::Tx {
            conn,
            events: &mut events,
        };
        kept.keep(work(&mut session))
    });
    // Not run at all when it already was, in an earlier life.
    let (ran, _) = kept.settle(ran)?;
    platform.dispatch(events);
    Ok(ran)
}

fn readable_collections(
    platform: &Platform,
    who: &Who,
) -> Result<Option<Vec<String>>, PlatformError> {
    if who.is_admin() {
        return Ok(None);
    }
    let schema = platform.store.schema();
    let mut readable = platform.permissions_of(who)?.collections(Action::Read);
    readable.retain(|c| schema.get(c).is_some() && !is_internal(c));
    Ok(Some(readable))
}

fn read_grant(
    platform: &Platform,
    who: &Who,
    collection: &str,
) -> Result<Option<CollectionGrant>, PlatformError> {
    platform.grant(who, collection, Action::Read)
}

fn has_collection(platform: &Platform, collection: &str) -> bool {
    platform.store.schema().get(collection).is_some() && !is_internal(collection)
}

impl Who {
    fn vars_resolve(&self, v: &Value) -> Value {
        match v {
            Value::String(s) if s == "$CURRENT_USER" => self
                .accountability
                .as_ref()
                .map(|a| Value::String(a.user.clone()))
                .unwrap_or(Value::Null),
            Value::String(s) if s == "$NOW" => Value::String(values::now_timestamp()),
            other => other.clone(),
        }
    }
}

/// Fields a query filters, sorts, groups or aggregates by: never a secret,
/// and only fields the grant allows.
fn check_queried_fields(
    collection: &str,
    grant: Option<&CollectionGrant>,
    used: &[String],
) -> Result<(), PlatformError> {
    for field in used {
        if is_secret(collection, field) {
            return Err(PlatformError::InvalidQuery(format!(
                "cannot query by \"{field}\""
            )));
        }
        if grant.is_some_and(|g| !g.allows_field(field)) {
            return Err(PlatformError::forbidden());
        }
    }
    Ok(())
}

fn known_field<'d>(
    def: &'d CollectionDef,
    name: &str,
) -> Result<&'d platform_store::schema::Field, PlatformError> {
    def.field(name).ok_or_else(|| {
        PlatformError::InvalidPayload(format!(
            "unknown field \"{name}\" in collection \"{}\"",
            def.name
        ))
    })
}

/// A query naming a field `def` does not have.
fn unknown_query_field(def: &CollectionDef, name: &str) -> PlatformError {
    PlatformError::InvalidQuery(format!(
        "unknown field \"{name}\" in collection \"{}\"",
        def.name
    ))
}

/// The outcome of items work run inside one of the store's callbacks,
/// which speak `StoreError`: the work's own error is kept whole (the latest
/// run's, when the store runs the work again) and only aborts the store.
struct Kept<T>(Option<Result<T, PlatformError>>);

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<T> Kept<T> {
    /// Keeps `outcome`; an error tells the store to give up.
    fn keep(&mut self, outcome: Result<T, PlatformError>) -> Result<(), StoreError> {
        let failed = outcome.is_err();
        self.0 = Some(outcome);
        if failed {
            Err(StoreError::Aborted)
        } else {
            Ok(())
        }
    }

    /// The work's error first, then the store's (a commit that failed);
    /// else the store's value and the work's, `None` when it never ran.
    fn settle<U>(self, store: Result<U, StoreError>) -> Result<(U, Option<T>), PlatformError> {
        match (store, self.0) {
            (_, Some(Err(e))) => Err(e),
            (Err(e), _) => Err(e.into()),
            (Ok(u), value) => Ok((u, value.and_then(Result::ok))),
        }
    }
}

/// The rows of `q` as one JSON array, written without building records.
fn select_json_array(
    conn: &mut dyn Reader,
    def: &CollectionDef,
    q: &ReadQuery,
) -> Result<Vec<u8>, PlatformError> {
    let mut out = vec![b'['];
    conn.select_json(def, q, &mut out)?;
    out.push(b']');
    Ok(out)
}

fn exists(conn: &mut dyn Reader, def: &CollectionDef, key: &str) -> Result<bool, PlatformError> {
    let q = ReadQuery::select(&["id"], key_filter(key)).limit(1);
    Ok(!conn.select(def, &q)?.is_empty())
}
