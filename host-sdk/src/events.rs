//! Item events as extension hooks see them: parsed into JSON trees
//! ([`ItemEvent`]), or as the host's JSON text, read member by member
//! ([`RawItemEvent`], for hooks on writes of large documents).

use serde_json::Value;

use crate::abi::FfiItemEvent;
use crate::context::Accountability;
use crate::raw::RawRecord;

/// What happened to the items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// An item was created.
    Create,
    /// An item was updated.
    Update,
    /// An item was deleted.
    Delete,
}

/// A write: `items.create`, `items.update` or `items.delete`. After-commit
/// hooks ([`crate::Extension::after_commit_in`]) see it once it committed;
/// in-transaction hooks ([`crate::Extension::before_commit_in`]) see it applied
/// inside its transaction, before the commit.
#[derive(Debug, Clone)]
pub struct ItemEvent {
    /// What happened.
    pub kind: EventKind,
    /// The collection it happened in.
    pub collection: String,
    /// The primary keys written.
    pub keys: Vec<String>,
    /// The payload given to the write.
    pub payload: Value,
    /// The records before the write (update, delete).
    pub before: Vec<Value>,
    /// The records after the write (create, update).
    pub after: Vec<Value>,
    /// Who wrote; `None` for anonymous callers and the host itself.
    pub accountability: Option<Accountability>,
}

/// A write about to be made (SDK 1.9), as a before-write hook
/// ([`crate::Extension::before_write_in`]) sees it: inside the writing
/// transaction, before the platform's reference rules and the write
/// itself. The hook may change `payload` (creates and updates) or refuse
/// the write.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingWrite {
    /// What is about to happen.
    pub kind: EventKind,
    /// The collection about to be written.
    pub collection: String,
    /// The key of the item updated or deleted; empty for a create.
    pub keys: Vec<String>,
    /// The object a create or an update will write, without the
    /// collection's secrets (which the write keeps as given); the keys for
    /// a delete, where changing it changes nothing.
    pub payload: Value,
    /// Who writes; `None` for anonymous callers and the host itself.
    pub accountability: Option<Accountability>,
}

impl ItemEvent {
    /// The record before the write with this key.
    pub fn before_of(&self, key: &str) -> Option<&Value> {
        find(&self.before, key)
    }

    /// The record after the write with this key.
    pub fn after_of(&self, key: &str) -> Option<&Value> {
        find(&self.after, key)
    }
}

fn find<'a>(records: &'a [Value], key: &str) -> Option<&'a Value> {
    records
        .iter()
        .find(|r| r.get("id").and_then(Value::as_str) == Some(key))
}

/// An item event as the host sent it: the payload and the records are the
/// host's JSON text, and a [`RawRecord`] borrows its members from it. A
/// hook registered with [`Extension::before_commit_raw_in`] or
/// [`Extension::after_commit_raw_in`] gets this view and builds no tree: on a
/// write of a recording with thousands of events, it reads the few fields
/// it needs and nothing is copied.
///
/// ```
/// use host_sdk::{EventKind, RawItemEvent};
///
/// let event = RawItemEvent::new(
///     EventKind::Create,
///     "notes",
///     vec!["n1".into()],
///     r#"{"body":"hi"}"#,
///     None,
///     Some(r#"[{"body":"hi","id":"n1","status":"published"}]"#),
///     None,
/// );
/// let after = event.after_of("n1").unwrap();
/// assert_eq!(after.str("status").as_deref(), Some("published"));
/// assert!(event.payload().unwrap().get("id").is_none());
/// assert_eq!(event.parse().after[0]["body"], "hi");
/// ```
///
/// [`Extension::before_commit_raw_in`]: crate::Extension::before_commit_raw_in
/// [`Extension::after_commit_raw_in`]: crate::Extension::after_commit_raw_in
#[derive(Debug, Clone)]
pub struct RawItemEvent<'a> {
    /// What happened.
    pub kind: EventKind,
    /// The collection it happened in.
    pub collection: &'a str,
    /// The primary keys written.
    pub keys: Vec<String>,
    /// Who wrote; `None` for anonymous callers and the host itself.
    pub accountability: Option<Accountability>,
    payload: &'a str,
    before: Option<&'a str>,
    after: Option<&'a str>,
}

impl<'a> RawItemEvent<'a> {
    /// An event from its parts: the payload as JSON text, the records
    /// before and after the write as JSON arrays (for hosts that link
    /// extensions in, and for tests of hooks).
    pub fn new(
        kind: EventKind,
        collection: &'a str,
        keys: Vec<String>,
        payload: &'a str,
        before: Option<&'a str>,
        after: Option<&'a str>,
        accountability: Option<Accountability>,
    ) -> Self {
        Self {
            kind,
            collection,
            keys,
            accountability,
            payload,
            before,
            after,
        }
    }

    /// The write about to be made that this event describes (a
    /// before-write hook's view): its payload parsed.
    pub(crate) fn pending(&self) -> PendingWrite {
        PendingWrite {
            kind: self.kind,
            collection: self.collection.to_string(),
            keys: self.keys.clone(),
            payload: serde_json::from_str(self.payload).unwrap_or(Value::Null),
            accountability: self.accountability.clone(),
        }
    }

    pub(crate) fn from_ffi(e: &'a FfiItemEvent) -> Option<Self> {
        let kind = match e.event.as_str() {
            "items.create" => EventKind::Create,
            "items.update" => EventKind::Update,
            "items.delete" => EventKind::Delete,
            _ => return None,
        };
        let keys: Vec<Value> = serde_json::from_str(&e.keys).unwrap_or_default();
        Some(Self {
            kind,
            collection: e.collection.as_str(),
            keys: keys
                .into_iter()
                .map(|k| match k {
                    Value::String(s) => s,
                    other => other.to_string(),
                })
                .collect(),
            accountability: e
                .accountability
                .as_ref()
                .map(Accountability::from_ffi)
                .into_option(),
            payload: e.payload.as_str(),
            before: e.before.as_ref().map(|t| t.as_str()).into_option(),
            after: e.after.as_ref().map(|t| t.as_str()).into_option(),
        })
    }

    /// The payload given to the write, as JSON text (an object for creates
    /// and updates, the keys for a delete).
    pub fn payload_text(&self) -> &'a str {
        self.payload
    }

    /// The payload's members, when it is an object.
    pub fn payload(&self) -> Option<RawRecord<'a>> {
        RawRecord::parse(self.payload).ok()
    }

    /// The records before the write (update, delete).
    pub fn before(&self) -> Vec<RawRecord<'a>> {
        records(self.before)
    }

    /// The records after the write (create, update).
    pub fn after(&self) -> Vec<RawRecord<'a>> {
        records(self.after)
    }

    /// The record before the write with this key.
    pub fn before_of(&self, key: &str) -> Option<RawRecord<'a>> {
        record_of(self.before(), key)
    }

    /// The record after the write with this key.
    pub fn after_of(&self, key: &str) -> Option<RawRecord<'a>> {
        record_of(self.after(), key)
    }

    /// The event with its payload and records parsed into trees, as
    /// [`ItemEvent`] hooks see it.
    pub fn parse(&self) -> ItemEvent {
        let trees = |text: Option<&str>| -> Vec<Value> {
            text.and_then(|t| serde_json::from_str(t).ok())
                .unwrap_or_default()
        };
        ItemEvent {
            kind: self.kind,
            collection: self.collection.to_string(),
            keys: self.keys.clone(),
            payload: serde_json::from_str(self.payload).unwrap_or(Value::Null),
            before: trees(self.before),
            after: trees(self.after),
            accountability: self.accountability.clone(),
        }
    }
}

fn records(text: Option<&str>) -> Vec<RawRecord<'_>> {
    text.and_then(|t| RawRecord::parse_list(t).ok())
        .unwrap_or_default()
}

fn record_of<'a>(records: Vec<RawRecord<'a>>, key: &str) -> Option<RawRecord<'a>> {
    records
        .into_iter()
        .find(|r| r.str("id").as_deref() == Some(key))
}
