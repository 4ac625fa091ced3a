//! Answers of cached routes, kept until the stored data changes.
//!
//! A route marked [`Route::cached`](crate::Route::cached) promises that its
//! answer to an anonymous `GET` depends only on the path, the query and the
//! stored data, and, when it depends on the clock too, that the handler said
//! until when it holds ([`Context::fresh_until`](crate::Context::fresh_until)). The host's data version
//! (SDK 1.3) changes with every commit, from any process; an answer is served
//! again only while the version it was computed under is still current.
//!
//! The version is read *before* the handler runs: a commit racing with the
//! handler moves the version on, so whatever the handler saw is never served
//! under the newer one.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use crate::http::SharedResponse;

/// At most this many bytes of bodies are kept per extension.
pub const BUDGET_BYTES: usize = 32 << 20;
/// Larger answers are not kept.
pub const MAX_ENTRY_BYTES: usize = 4 << 20;

struct Entry {
    /// Shared with every answer served from it: a hit copies nothing.
    response: SharedResponse,
    fresh_until: Option<SystemTime>,
}

#[derive(Default)]
struct Inner {
    /// The data version every entry was computed under.
    version: u64,
    /// Bodies and keys of the entries.
    bytes: usize,
    entries: HashMap<String, Entry>,
}

impl Inner {
    fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    /// Moves on to `version` if it is newer (everything kept predates a
    /// commit); whether entries of `version` may be kept.
    fn reach(&mut self, version: u64) -> bool {
        if version > self.version {
            self.clear();
            self.version = version;
        }
        version == self.version
    }

    fn remove(&mut self, key: &str) {
        if let Some(old) = self.entries.remove(key) {
            self.bytes = self
                .bytes
                .saturating_sub(old.response.body.len() + key.len());
        }
    }
}

/// One extension's kept answers.
#[derive(Default)]
pub(crate) struct AnswerCache {
    inner: Mutex<Inner>,
}

impl AnswerCache {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave `Inner` inconsistent
        // beyond a wrong byte count; keep serving.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The answer kept for `key` under data version `version`, if still fresh.
    pub fn get(&self, key: &str, version: u64, now: SystemTime) -> Option<SharedResponse> {
        let mut inner = self.lock();
        if !inner.reach(version) {
            return None;
        }
        let entry = inner.entries.get(key)?;
        if entry.fresh_until.is_some_and(|until| until <= now) {
            inner.remove(key);
            return None;
        }
        Some(entry.response.clone())
    }

    /// Keeps `response` for `key`, computed under `version`.
    pub fn put(
        &self,
        key: String,
        version: u64,
        response: SharedResponse,
        fresh_until: Option<SystemTime>,
    ) {
        let size = response.body.len();
        if size > MAX_ENTRY_BYTES {
            return;
        }
        let mut inner = self.lock();
        if !inner.reach(version) {
            return; // computed before a commit that is already known
        }
        inner.remove(&key);
        if inner.bytes + size + key.len() > BUDGET_BYTES {
            // Full: start over rather than track recency on every hit.
            inner.clear();
        }
        inner.bytes += size + key.len();
        let entry = Entry {
            response,
            fresh_until,
        };
        inner.entries.insert(key, entry);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    use crate::http::Response;

    fn answer(text: &str) -> SharedResponse {
        Response::text(200, text).into()
    }

    #[test]
    fn an_answer_is_served_while_the_version_holds() {
        let cache = AnswerCache::default();
        let now = SystemTime::now();
        cache.put("/a".into(), 3, answer("x"), None);
        assert_eq!(
            cache.get("/a", 3, now).map(|r| r.body.to_vec()),
            Some(b"x".to_vec())
        );
        assert!(cache.get("/b", 3, now).is_none());
    }

    #[test]
    fn a_new_version_drops_everything() {
        let cache = AnswerCache::default();
        let now = SystemTime::now();
        cache.put("/a".into(), 3, answer("x"), None);
        assert!(cache.get("/a", 4, now).is_none());
        assert_eq!(cache.len(), 0);
        // An answer computed under the older version is not kept any more.
        cache.put("/a".into(), 3, answer("stale"), None);
        assert!(cache.get("/a", 4, now).is_none());
        assert!(cache.get("/a", 3, now).is_none());
    }

    #[test]
    fn an_answer_past_its_freshness_is_dropped() {
        let cache = AnswerCache::default();
        let now = SystemTime::now();
        let until = now + Duration::from_secs(10);
        cache.put("/a".into(), 1, answer("x"), Some(until));
        assert!(cache.get("/a", 1, now).is_some());
        assert!(cache.get("/a", 1, until).is_none());
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn the_byte_count_follows_replacements_and_removals() {
        let cache = AnswerCache::default();
        let now = SystemTime::now();
        cache.put("/a".into(), 1, answer("xx"), None);
        cache.put("/a".into(), 1, answer("yyy"), Some(now));
        assert_eq!(cache.lock().bytes, "yyy".len() + "/a".len());
        assert!(cache.get("/a", 1, now).is_none(), "expired");
        assert_eq!(cache.lock().bytes, 0);
    }

    #[test]
    fn oversized_answers_are_not_kept_and_the_budget_holds() {
        let cache = AnswerCache::default();
        let now = SystemTime::now();
        let big = answer(&"x".repeat(MAX_ENTRY_BYTES + 1));
        cache.put("/big".into(), 1, big, None);
        assert!(cache.get("/big", 1, now).is_none());
        let chunk = "y".repeat(MAX_ENTRY_BYTES);
        for i in 0..(BUDGET_BYTES / MAX_ENTRY_BYTES + 2) {
            cache.put(format!("/{i}"), 1, answer(&chunk), None);
            assert!(cache.lock().bytes <= BUDGET_BYTES);
        }
    }
}
