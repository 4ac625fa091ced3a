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
//!
//! One computation per answer: while a request computes the answer for a
//! key, others asking for the same key under the same version wait for it
//! instead of computing it too (a burst of requests after a commit would
//! otherwise build the same, possibly large, answer once per request, all
//! at once).

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use crate::http::SharedResponse;

/// At most this many bytes of bodies are kept per extension.
pub const BUDGET_BYTES: usize = 32 << 20;
/// Larger answers are not kept.
pub const MAX_ENTRY_BYTES: usize = 4 << 20;
/// How long a request waits for another one computing the same answer
/// before it computes the answer itself.
const WAIT_FOR_PEER: Duration = Duration::from_secs(5);

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
    /// Keys whose answer a request is computing: (version, claim number).
    computing: HashMap<String, (u64, u64)>,
    claims: u64,
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
    /// Signalled whenever a computation ends.
    done: Condvar,
}

/// What a request of a cached route does: serve the kept answer, or
/// compute it (and keep it through the claim).
pub(crate) enum Lookup<'c> {
    Kept(SharedResponse),
    Compute(Claim<'c>),
}

/// The right to compute the answer for a key; others asking for it wait
/// until the claim is kept or dropped (a failed or panicking handler).
pub(crate) struct Claim<'c> {
    cache: &'c AnswerCache,
    key: String,
    version: u64,
    /// `None` when the request is not the one that computes (the answer
    /// cannot be kept, or waiting for the peer took too long).
    number: Option<u64>,
}

impl Claim<'_> {
    /// Keeps `response`, computed under the claim's version.
    pub fn keep(self, response: SharedResponse, fresh_until: Option<SystemTime>) {
        self.cache
            .put(self.key.clone(), self.version, response, fresh_until);
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let Some(number) = self.number else { return };
        let mut inner = self.cache.lock();
        if inner.computing.get(&self.key).map(|c| c.1) == Some(number) {
            inner.computing.remove(&self.key);
        }
        drop(inner);
        self.cache.done.notify_all();
    }
}

impl AnswerCache {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave `Inner` inconsistent
        // beyond a wrong byte count; keep serving.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The answer kept for `key` under data version `version`, if still fresh.
    #[cfg(test)]
    pub fn get(&self, key: &str, version: u64, now: SystemTime) -> Option<SharedResponse> {
        let mut inner = self.lock();
        if !inner.reach(version) {
            return None;
        }
        Self::fresh(&mut inner, key, now)
    }

    fn fresh(inner: &mut Inner, key: &str, now: SystemTime) -> Option<SharedResponse> {
        let entry = inner.entries.get(key)?;
        if entry.fresh_until.is_some_and(|until| until <= now) {
            inner.remove(key);
            return None;
        }
        Some(entry.response.clone())
    }

    /// The kept answer for `key` under `version`; otherwise the claim to
    /// compute it, after waiting for a request already computing it.
    pub fn lookup(&self, key: &str, version: u64) -> Lookup<'_> {
        let mut inner = self.lock();
        let started = Instant::now();
        loop {
            if !inner.reach(version) {
                // Computed under a version already superseded: not kept.
                return Lookup::Compute(self.unclaimed(key, version));
            }
            if let Some(kept) = Self::fresh(&mut inner, key, SystemTime::now()) {
                return Lookup::Kept(kept);
            }
            let busy = inner.computing.get(key).is_some_and(|c| c.0 == version);
            if !busy {
                inner.claims += 1;
                let number = inner.claims;
                inner.computing.insert(key.to_string(), (version, number));
                return Lookup::Compute(Claim {
                    cache: self,
                    key: key.to_string(),
                    version,
                    number: Some(number),
                });
            }
            let Some(left) = WAIT_FOR_PEER.checked_sub(started.elapsed()) else {
                return Lookup::Compute(self.unclaimed(key, version));
            };
            inner = self
                .done
                .wait_timeout(inner, left)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }

    fn unclaimed(&self, key: &str, version: u64) -> Claim<'_> {
        Claim {
            cache: self,
            key: key.to_string(),
            version,
            number: None,
        }
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

    fn claim<'c>(cache: &'c AnswerCache, key: &str, version: u64) -> Claim<'c> {
        match cache.lookup(key, version) {
            Lookup::Compute(claim) => claim,
            Lookup::Kept(_) => panic!("expected to compute {key}"),
        }
    }

    #[test]
    fn a_request_waits_for_the_peer_computing_the_same_answer() {
        let cache = AnswerCache::default();
        let first = claim(&cache, "/a", 1);
        // Another key, or another version, does not wait.
        drop(claim(&cache, "/b", 1));
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| match cache.lookup("/a", 1) {
                Lookup::Kept(kept) => kept.body.to_vec(),
                Lookup::Compute(_) => b"computed again".to_vec(),
            });
            std::thread::sleep(Duration::from_millis(100));
            assert!(!waiter.is_finished(), "the second request waits");
            first.keep(answer("x"), None);
            assert_eq!(waiter.join().expect("waiter"), b"x".to_vec());
        });
    }

    #[test]
    fn a_claim_dropped_without_an_answer_lets_the_next_request_compute() {
        let cache = AnswerCache::default();
        let first = claim(&cache, "/a", 1);
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| matches!(cache.lookup("/a", 1), Lookup::Compute(_)));
            std::thread::sleep(Duration::from_millis(50));
            drop(first); // the handler failed
            assert!(waiter.join().expect("waiter"));
        });
        assert!(cache.lock().computing.is_empty());
    }
}
