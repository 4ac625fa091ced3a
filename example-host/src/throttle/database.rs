//! The shared store: windows in the database's counters table (see
//! `Store::counter`), so that every host on the database counts into the
//! same windows. Each call is one atomic statement; windows that are over
//! are deleted now and then by whichever host comes by.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{Counter, ThrottleError};
use platform_store::storage::{CounterOp, Store, StoreError, Window};

/// How often a host deletes the windows that are over, at most.
const PRUNE_EVERY_MS: i64 = 60_000;

pub struct DatabaseCounter {
    store: Arc<dyn Store>,
    length_ms: i64,
    /// When this host last deleted the windows that are over.
    pruned_ms: AtomicI64,
}

impl DatabaseCounter {
    pub fn new(store: Arc<dyn Store>, length: Duration) -> Self {
        Self {
            store,
            length_ms: i64::try_from(length.as_millis()).unwrap_or(i64::MAX).max(1),
            pruned_ms: AtomicI64::new(0),
        }
    }

    /// Deletes the windows that are over, once a minute at most (by one
    /// caller: the others go on).
    fn prune(&self, now_ms: i64) -> Result<(), ThrottleError> {
        let last = self.pruned_ms.load(Ordering::Relaxed);
        if now_ms - last < PRUNE_EVERY_MS
            || self
                .pruned_ms
                .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return Ok(());
        }
        self.store.counter(CounterOp::Prune { now_ms })?;
        Ok(())
    }
}

impl Counter for DatabaseCounter {
    fn hit(&self, key: &str, now_ms: i64) -> Result<Window, ThrottleError> {
        self.prune(now_ms)?;
        self.store
            .counter(CounterOp::Add {
                key,
                points: 1,
                now_ms,
                length_ms: self.length_ms,
            })?
            .ok_or_else(|| StoreError::Backend("a counter answered no window".into()).into())
    }

    fn peek(&self, key: &str, now_ms: i64) -> Result<Option<Window>, ThrottleError> {
        Ok(self.store.counter(CounterOp::Read { key, now_ms })?)
    }

    fn give_back(&self, key: &str, now_ms: i64) -> Result<(), ThrottleError> {
        self.store.counter(CounterOp::TakeBack {
            key,
            points: 1,
            now_ms,
        })?;
        Ok(())
    }

    fn clear(&self, key: &str) -> Result<(), ThrottleError> {
        self.store.counter(CounterOp::Clear { key })?;
        Ok(())
    }

    fn blocks(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::MigrationGrants;
    use crate::platform_schema;
    use crate::throttle::tests::a_window_counts_and_ends;

    /// A store on a throwaway SQLite file, migrated as the platform's.
    fn store() -> (tempfile::TempDir, Arc<dyn Store>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store: Arc<dyn Store> = Arc::new(
            platform_store::storage::sqlite::SqliteStore::open(&dir.path().join("t.db"), Some(4))
                .expect("open"),
        );
        for (id, steps) in platform_schema::migrations() {
            store
                .migrate(platform_schema::OWNER, id, &steps, &MigrationGrants)
                .expect("migrate");
        }
        (dir, store)
    }

    #[test]
    fn windows_count_open_and_end_in_the_database() {
        let (_dir, store) = store();
        let c = DatabaseCounter::new(store.clone(), Duration::from_millis(100));
        a_window_counts_and_ends(&c);
        c.give_back("k", 1_150).unwrap();
        c.give_back("k", 1_150).unwrap();
        assert_eq!(c.peek("k", 1_150).unwrap().map(|w| w.points), Some(0));
        c.clear("k").unwrap();
        assert_eq!(c.peek("k", 1_150).unwrap(), None);
    }

    #[test]
    fn hosts_on_one_database_count_into_one_window() {
        let (dir, store) = store();
        let other: Arc<dyn Store> = Arc::new(
            platform_store::storage::sqlite::SqliteStore::open(&dir.path().join("t.db"), Some(4))
                .expect("open"),
        );
        let a = DatabaseCounter::new(store, Duration::from_secs(60));
        let b = DatabaseCounter::new(other, Duration::from_secs(60));
        a.hit("k", 0).unwrap();
        assert_eq!(b.hit("k", 1).unwrap().points, 2);
        assert_eq!(a.peek("k", 2).unwrap().map(|w| w.points), Some(2));
    }

    #[test]
    fn concurrent_hits_each_count() {
        let (_dir, store) = store();
        let c = Arc::new(DatabaseCounter::new(store, Duration::from_secs(60)));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || {
                    let mut seen = Vec::new();
                    for _ in 0..50 {
                        seen.push(c.hit("k", 0).unwrap().points);
                    }
                    seen
                })
            })
            .collect();
        let mut seen: Vec<i64> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, (1..=200).collect::<Vec<_>>());
    }

    #[test]
    fn counting_leaves_the_data_version_alone_and_windows_over_are_pruned() {
        let (_dir, store) = store();
        let c = DatabaseCounter::new(store.clone(), Duration::from_millis(10));
        let version = store.data_version();
        for i in 0..20 {
            c.hit(&format!("k{i}"), 0).unwrap();
        }
        assert_eq!(store.data_version(), version);
        // A minute later, the next hit deletes what is over.
        c.hit("late", PRUNE_EVERY_MS + 1).unwrap();
        for i in 0..20 {
            assert_eq!(c.peek(&format!("k{i}"), 0).unwrap(), None, "pruned");
        }
    }
}
