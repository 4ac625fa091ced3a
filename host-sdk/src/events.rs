//! Item events as extension hooks see them.

use serde_json::Value;

use crate::abi::FfiItemEvent;
use crate::context::Accountability;

/// What happened to the items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Create,
    Update,
    Delete,
}

/// A write: `items.create`, `items.update` or `items.delete`. After-commit
/// hooks ([`crate::Extension::on_event`]) see it once it committed;
/// in-transaction hooks ([`crate::Extension::before_commit`]) see it applied
/// inside its transaction, before the commit.
#[derive(Debug, Clone)]
pub struct ItemEvent {
    pub kind: EventKind,
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

impl ItemEvent {
    pub(crate) fn from_ffi(e: &FfiItemEvent) -> Option<Self> {
        let kind = match e.event.as_str() {
            "items.create" => EventKind::Create,
            "items.update" => EventKind::Update,
            "items.delete" => EventKind::Delete,
            _ => return None,
        };
        let records = |text: Option<&abi_stable::std_types::RString>| -> Vec<Value> {
            text.and_then(|t| serde_json::from_str(t).ok())
                .unwrap_or_default()
        };
        let keys: Vec<Value> = serde_json::from_str(&e.keys).unwrap_or_default();
        Some(Self {
            kind,
            collection: e.collection.to_string(),
            keys: keys
                .into_iter()
                .map(|k| match k {
                    Value::String(s) => s,
                    other => other.to_string(),
                })
                .collect(),
            payload: serde_json::from_str(&e.payload).unwrap_or(Value::Null),
            before: records(e.before.as_ref().into_option()),
            after: records(e.after.as_ref().into_option()),
            accountability: e
                .accountability
                .as_ref()
                .map(Accountability::from_ffi)
                .into_option(),
        })
    }

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
