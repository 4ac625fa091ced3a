//! The in-process store: windows in a map, bounded. Every window of a
//! counter has the same length, so windows end in the order they opened:
//! a queue in that order lets each call drop the windows that are over
//! from its front, and, when the map holds [`MAX_KEYS`] keys, the oldest
//! window go first. Memory stays bounded whatever the keys.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::{Counter, ThrottleError};
use platform_store::storage::Window;

/// The most keys one counter keeps (about 100 bytes each): past it, the
/// oldest window is forgotten, so a flood of distinct keys costs counts,
/// never memory.
pub const MAX_KEYS: usize = 100_000;

pub struct MemoryCounter {
    length_ms: i64,
    max_keys: usize,
    windows: Mutex<Windows>,
}

#[derive(Default)]
struct Windows {
    open: HashMap<Arc<str>, Window>,
    /// Keys in the order their windows opened, with the end of that
    /// window (a key cleared, or opened again, leaves an entry that no
    /// longer matches; it goes when it reaches the front).
    order: VecDeque<(Arc<str>, i64)>,
}

impl Windows {
    /// Drops the front entry, and its window if the entry is that
    /// window's.
    fn pop_front(&mut self) {
        if let Some((key, ends)) = self.order.pop_front() {
            if self.open.get(&key).is_some_and(|w| w.ends_ms == ends) {
                self.open.remove(&key);
            }
        }
    }

    /// Forgets every window over at `now_ms`.
    fn prune(&mut self, now_ms: i64) {
        while self.order.front().is_some_and(|(_, ends)| *ends <= now_ms) {
            self.pop_front();
        }
    }

    /// Makes room for one more key.
    fn make_room(&mut self, max_keys: usize) {
        while self.open.len() >= max_keys && !self.order.is_empty() {
            self.pop_front();
        }
        // Entries left behind by cleared keys: never more than the keys.
        if self.order.len() > 2 * max_keys {
            let open = &self.open;
            self.order
                .retain(|(key, ends)| open.get(key).is_some_and(|w| w.ends_ms == *ends));
        }
    }
}

impl MemoryCounter {
    pub fn new(length: Duration) -> Self {
        Self::with_capacity(length, MAX_KEYS)
    }

    pub fn with_capacity(length: Duration, max_keys: usize) -> Self {
        Self {
            length_ms: i64::try_from(length.as_millis()).unwrap_or(i64::MAX).max(1),
            max_keys: max_keys.max(1),
            windows: Mutex::new(Windows::default()),
        }
    }

    /// How many keys it holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.windows.lock().open.len()
    }
}

impl Counter for MemoryCounter {
    fn hit(&self, key: &str, now_ms: i64) -> Result<Window, ThrottleError> {
        let mut w = self.windows.lock();
        w.prune(now_ms);
        if let Some(open) = w.open.get_mut(key).filter(|o| o.ends_ms > now_ms) {
            open.points += 1;
            return Ok(*open);
        }
        w.open.remove(key);
        w.make_room(self.max_keys);
        let window = Window {
            points: 1,
            ends_ms: now_ms.saturating_add(self.length_ms),
        };
        let key: Arc<str> = Arc::from(key);
        w.open.insert(key.clone(), window);
        w.order.push_back((key, window.ends_ms));
        Ok(window)
    }

    fn peek(&self, key: &str, now_ms: i64) -> Result<Option<Window>, ThrottleError> {
        let w = self.windows.lock();
        Ok(w.open.get(key).filter(|o| o.ends_ms > now_ms).copied())
    }

    fn give_back(&self, key: &str, now_ms: i64) -> Result<(), ThrottleError> {
        let mut w = self.windows.lock();
        if let Some(open) = w
            .open
            .get_mut(key)
            .filter(|o| o.ends_ms > now_ms && o.points > 0)
        {
            open.points -= 1;
        }
        Ok(())
    }

    fn clear(&self, key: &str) -> Result<(), ThrottleError> {
        self.windows.lock().open.remove(key);
        Ok(())
    }

    fn blocks(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::throttle::tests::a_window_counts_and_ends;

    fn counter(max_keys: usize) -> MemoryCounter {
        MemoryCounter::with_capacity(Duration::from_millis(100), max_keys)
    }

    #[test]
    fn a_window_counts_from_its_first_point_and_ends_after_its_length() {
        a_window_counts_and_ends(&counter(10));
    }

    #[test]
    fn points_are_given_back_never_below_zero_and_cleared() {
        let c = counter(10);
        c.hit("k", 0).unwrap();
        c.give_back("k", 0).unwrap();
        c.give_back("k", 0).unwrap();
        assert_eq!(c.peek("k", 0).unwrap().map(|w| w.points), Some(0));
        c.hit("k", 0).unwrap();
        c.clear("k").unwrap();
        assert_eq!(c.peek("k", 0).unwrap(), None);
        assert_eq!(c.hit("k", 1).unwrap().points, 1);
    }

    #[test]
    fn windows_that_are_over_are_dropped() {
        let c = counter(1_000);
        for i in 0..500 {
            c.hit(&format!("k{i}"), 0).unwrap();
        }
        assert_eq!(c.len(), 500);
        c.hit("late", 100).unwrap();
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn past_the_cap_the_oldest_window_goes() {
        let c = counter(3);
        for (i, key) in ["a", "b", "c", "d"].iter().enumerate() {
            c.hit(key, i as i64).unwrap();
        }
        assert_eq!(c.len(), 3);
        assert_eq!(c.peek("a", 5).unwrap(), None);
        assert!(c.peek("d", 5).unwrap().is_some());
    }

    #[test]
    fn cleared_keys_leave_a_bounded_queue() {
        let c = counter(4);
        for i in 0..1_000 {
            c.hit("k", i).unwrap();
            c.clear("k").unwrap();
        }
        assert!(c.windows.lock().order.len() <= 2 * 4 + 1);
    }

    #[test]
    fn concurrent_hits_each_count() {
        let c = Arc::new(MemoryCounter::new(Duration::from_secs(60)));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for _ in 0..1_000 {
                        c.hit("k", 0).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(c.peek("k", 0).unwrap().map(|w| w.points), Some(8_000));
    }
}
