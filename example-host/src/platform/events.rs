//! Item events: what a write someone watches produces, and the receiver
//! the platform hands them to (inside the writing transaction and after
//! the commit). The items service builds and delivers them (`items`); the
//! extension registry receives them.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{Platform, PlatformError};
use crate::accounts::CallerAccount;
use platform_store::storage::Writer;

/// What happened, for hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Create,
    Update,
    Delete,
}

impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Create => "items.create",
            EventKind::Update => "items.update",
            EventKind::Delete => "items.delete",
        }
    }
}

/// Which members of a collection's payloads and records its item events
/// carry: all of them, or only the fields every hook that sees them said
/// it reads (`Extension::hooks_read`, SDK 1.14) and the primary key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventFields {
    All,
    Only(BTreeSet<String>),
}

impl EventFields {
    /// Whether an event carries this member: the primary key (`id`, the
    /// key of every collection) always.
    pub fn keeps(&self, field: &str) -> bool {
        match self {
            EventFields::All => true,
            EventFields::Only(fields) => field == "id" || fields.contains(field),
        }
    }
}

/// One committed write. The payload and the records are JSON text, as
/// they cross to extensions: a write of a large JSON document is never
/// built into a tree for its event (and shared, not copied, when the
/// store runs a write again).
#[derive(Debug, Clone)]
pub struct WriteEvent {
    pub kind: EventKind,
    pub collection: String,
    pub keys: Vec<String>,
    /// The payload given to the write (an object; the keys for a delete),
    /// without secrets.
    pub payload: Arc<str>,
    /// The records before the write (update, delete): a JSON array.
    pub before: Option<Arc<str>>,
    /// The records after the write (create, update): a JSON array.
    pub after: Option<Arc<str>>,
    pub accountability: Option<CallerAccount>,
}

/// Receives item events: inside the writing transaction (in-transaction
/// hooks, which may refuse the write) and after the commit.
pub trait EventSink: Send + Sync {
    /// Whether anyone wants the committed events of this collection.
    fn wants(&self, collection: &str) -> bool;
    fn dispatch(&self, platform: &Platform, events: Vec<WriteEvent>);
    /// Whether an in-transaction hook watches the writes of this collection.
    fn wants_before_commit(&self, collection: &str) -> bool;
    /// The members the item events of this collection must carry for
    /// every hook that sees them.
    fn event_fields(&self, collection: &str) -> EventFields;
    /// Runs the in-transaction hooks on a write just made on `conn`; what
    /// they write goes through `conn` too, and their events join `events`.
    /// An error refuses the write: the caller rolls the transaction back.
    fn before_commit(
        &self,
        platform: &Platform,
        conn: &mut dyn Writer,
        events: &mut Vec<WriteEvent>,
        event: &WriteEvent,
    ) -> Result<(), PlatformError>;
    /// Whether a before-write hook watches the writes of this collection.
    fn wants_before_write(&self, collection: &str) -> bool;
    /// Runs the before-write hooks on a write about to be made on `conn`
    /// (`write` has no before and after records); what they write goes
    /// through `conn` too, and their events join `events`. `Ok(Some(p))`:
    /// the payload the hooks changed it to. An error refuses the write.
    fn before_write(
        &self,
        platform: &Platform,
        conn: &mut dyn Writer,
        events: &mut Vec<WriteEvent>,
        write: &WriteEvent,
    ) -> Result<Option<String>, PlatformError>;
}
