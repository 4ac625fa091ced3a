//! A value computed from the stored data, kept while the data version holds.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

use crate::context::Context;

/// Keeps one value per data version: computed again after any commit, by
/// anyone. Without a host that reports its data version (SDK 1.3), every
/// call computes afresh, as does every call inside a transaction.
///
/// ```no_run
/// # use host_sdk::{Context, ItemsError, Memo, Query};
/// static TITLES: Memo<Vec<serde_json::Value>> = Memo::new();
///
/// fn titles(ctx: &Context<'_>) -> Result<Vec<serde_json::Value>, ItemsError> {
///     TITLES.get_or_try(ctx, || ctx.as_admin().read_by_query("videos", &Query::new()))
/// }
/// ```
pub struct Memo<T> {
    kept: MemoMap<(), T>,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Memo<T> {
    /// An empty memo (usable in a `static`).
    pub const fn new() -> Self {
        Self {
            kept: MemoMap::new(1),
        }
    }
}

impl<T: Clone> Memo<T> {
    /// The value kept for the current data version, or `compute`'s (then
    /// kept). The version is read before `compute` runs, so a commit racing
    /// with it leaves nothing stale behind.
    pub fn get_or_try<E>(
        &self,
        ctx: &Context<'_>,
        compute: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.kept.get_or_try(ctx, &(), compute)
    }
}

/// Like [`Memo`], one value per key: all dropped when the data version
/// moves, and at most `capacity` kept (when full, they are dropped together).
pub struct MemoMap<K, V> {
    capacity: usize,
    kept: Mutex<Option<(u64, HashMap<K, V>)>>,
}

impl<K, V> MemoMap<K, V> {
    /// An empty map keeping at most `capacity` values (usable in a `static`).
    pub const fn new(capacity: usize) -> Self {
        Self {
            capacity,
            kept: Mutex::new(None),
        }
    }
}

impl<K: Eq + Hash + Clone, V: Clone> MemoMap<K, V> {
    /// The value kept for `key` at the current data version, or `compute`'s
    /// (then kept). The version is read before `compute` runs, so a commit
    /// racing with it leaves nothing stale behind.
    pub fn get_or_try<E>(
        &self,
        ctx: &Context<'_>,
        key: &K,
        compute: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        let Some(version) = ctx.data_version() else {
            return compute();
        };
        {
            let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((v, map)) = kept.as_ref() {
                if *v == version {
                    if let Some(value) = map.get(key) {
                        return Ok(value.clone());
                    }
                }
            }
        }
        let value = compute()?;
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        match kept.as_mut() {
            Some((v, _)) if *v > version => {}
            Some((v, map)) if *v == version && map.len() < self.capacity => {
                map.insert(key.clone(), value.clone());
            }
            _ => {
                *kept = Some((version, HashMap::from([(key.clone(), value.clone())])));
            }
        }
        Ok(value)
    }
}
