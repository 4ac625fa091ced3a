//! The writes the service makes to keep its derived data: the
//! gamification ledger's to `user_points`, `user_stats` and
//! `user_achievements`, the video counters' to `videos`. Each keeper
//! accounts for its own writes, so the in-transaction hooks that notice
//! writes made by anyone else must let them pass.
//!
//! A hook runs synchronously inside the items call that wrote, on the same
//! thread, so a thread-local mark set around the keeper's call is seen by
//! exactly the hooks that call triggers.

use std::cell::Cell;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Clears the mark even when the write unwinds.
struct Mark;

impl Drop for Mark {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Runs `write` marked as a keeper's own.
pub fn run<T>(write: impl FnOnce() -> T) -> T {
    DEPTH.with(|d| d.set(d.get() + 1));
    let _mark = Mark;
    write()
}

/// Whether the write being hooked is a keeper's own.
pub fn active() -> bool {
    DEPTH.with(Cell::get) > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_holds_during_the_write_only_and_nests() {
        assert!(!active());
        run(|| {
            assert!(active());
            run(|| assert!(active()));
            assert!(active());
        });
        assert!(!active());
        let unwound = std::panic::catch_unwind(|| run(|| panic!("write failed")));
        assert!(unwound.is_err());
        assert!(!active(), "an unwinding write clears the mark");
    }
}
