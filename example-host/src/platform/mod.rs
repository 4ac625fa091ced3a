//! The platform: the composition root that every request, job and
//! extension call shares. The store, the resolver of credentials and the
//! permission caches, counters, and what other modules connect to it at
//! start (the receiver of item events, the rules that follow updates). Its
//! operations are those of the items service, listed in
//! `items::operations`.

use std::sync::Arc;

use once_cell::sync::OnceCell;

mod error;
mod events;

pub use error::{ErrorPlace, PlatformError};
pub use events::{EventFields, EventKind, EventSink, WriteEvent};

use crate::auth::Auth;
use crate::permissions::Permissions;
use platform_store::query::RelationalLimits;
use platform_store::schema::{CollectionDef, Schema};
use platform_store::storage::{Columns, Store, StoreError, Writer};

/// Counters of what the platform does, for `/server/metrics`.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Items-service operations made by extensions.
    pub items_calls: std::sync::atomic::AtomicU64,
    /// Calls of extension route handlers.
    pub extension_calls: std::sync::atomic::AtomicU64,
    /// Item events delivered to extension hooks.
    pub events_delivered: std::sync::atomic::AtomicU64,
    /// Writes handed to in-transaction hooks.
    pub events_before_commit: std::sync::atomic::AtomicU64,
}

/// A rule that follows every update of an item, in its transaction, right
/// after it: what the change means to another part of the platform (a
/// user's new credentials end their sessions). Registered at start
/// ([`Platform::add_update_rule`]): the items service knows none of them.
/// A rule writes other rows, never the updated item: the update's event
/// carries the item as written without reading it again.
pub type UpdateRule = fn(
    conn: &mut dyn Writer,
    schema: &Schema,
    def: &CollectionDef,
    key: &str,
    changes: &Columns,
) -> Result<(), StoreError>;

/// The platform core shared by every request.
pub struct Platform {
    pub store: Arc<dyn Store>,
    pub auth: Auth,
    pub permissions: Permissions,
    pub metrics: Metrics,
    /// How far and how wide reads may follow relations.
    pub relational_limits: RelationalLimits,
    /// The receiver of item events, connected once extensions load.
    pub(crate) events: OnceCell<Arc<dyn EventSink>>,
    update_rules: Vec<UpdateRule>,
}

impl Platform {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            auth: Auth::new(),
            permissions: Permissions::default(),
            metrics: Metrics::default(),
            relational_limits: RelationalLimits::default(),
            events: OnceCell::new(),
            update_rules: Vec::new(),
        }
    }

    /// Adds a rule run after every update of an item, in its transaction.
    pub fn add_update_rule(&mut self, rule: UpdateRule) {
        self.update_rules.push(rule);
    }

    /// Runs the update rules after an update of item `key` of `def`.
    pub(crate) fn follow_update(
        &self,
        conn: &mut dyn Writer,
        def: &CollectionDef,
        key: &str,
        changes: &Columns,
    ) -> Result<(), StoreError> {
        let schema = self.store.schema();
        for rule in &self.update_rules {
            rule(conn, &schema, def, key, changes)?;
        }
        Ok(())
    }

    /// Connects the receiver of item events (once, after extensions load).
    pub fn set_event_sink(&self, sink: Arc<dyn EventSink>) {
        let _ = self.events.set(sink);
    }
}
