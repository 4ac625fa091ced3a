//! Item events: built for each write someone watches, handed to the
//! in-transaction hooks before the commit and delivered after it.

use super::*;

impl Platform {
    /// Records the event of a write just made on `conn`: the in-transaction
    /// hooks run on it first (and may refuse it, failing the write), then it
    /// waits in `events`, ahead of what the hooks wrote, for delivery after
    /// the commit.
    pub(super) fn record_event(
        &self,
        conn: &mut dyn Writer,
        events: &mut Vec<WriteEvent>,
        event: WriteEvent,
    ) -> Result<(), PlatformError> {
        let at = events.len();
        if let Some(sink) = self
            .events
            .get()
            .filter(|sink| sink.wants_before_commit(&event.collection))
        {
            self.metrics
                .events_before_commit
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            sink.before_commit(self, conn, events, &event)?;
        }
        events.insert(at, event);
        Ok(())
    }

    /// The members the item events of `collection` carry.
    pub(super) fn event_fields(&self, collection: &str) -> EventFields {
        self.events
            .get()
            .map_or(EventFields::All, |sink| sink.event_fields(collection))
    }

    /// Whether a before-write hook watches writes to `collection`.
    pub(super) fn wants_before_write(&self, collection: &str) -> bool {
        self.events
            .get()
            .is_some_and(|sink| sink.wants_before_write(collection))
    }

    /// Runs the before-write hooks on a write about to be made on `conn`
    /// (docs/extensions.md, "The order of a write"); `Ok(Some(payload))`
    /// when they changed the payload. An error refuses the write.
    pub(super) fn before_write(
        &self,
        conn: &mut dyn Writer,
        events: &mut Vec<WriteEvent>,
        write: WriteEvent,
    ) -> Result<Option<String>, PlatformError> {
        // Callers ask `wants_before_write` once per write, before this.
        match self.events.get() {
            Some(sink) => sink.before_write(self, conn, events, &write),
            None => Ok(None),
        }
    }
}

pub(super) fn wants_events(platform: &Platform, collection: &str) -> bool {
    affects_access(collection)
        || platform
            .events
            .get()
            .is_some_and(|sink| sink.wants(collection) || sink.wants_before_commit(collection))
}

pub(super) fn dispatch(platform: &Platform, mut events: Vec<WriteEvent>) {
    if events.iter().any(|e| affects_access(&e.collection)) {
        platform.auth.invalidate();
    }
    if let Some(sink) = platform.events.get() {
        // Some were built only for in-transaction hooks, which saw them.
        events.retain(|e| sink.wants(&e.collection));
        if events.is_empty() {
            return;
        }
        platform
            .metrics
            .events_delivered
            .fetch_add(events.len() as u64, std::sync::atomic::Ordering::Relaxed);
        sink.dispatch(platform, events);
    }
}
