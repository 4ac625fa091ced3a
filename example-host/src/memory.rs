//! How the host keeps its resident memory close to what it uses, with
//! glibc's allocator (elsewhere these are no-ops).
//!
//! The binaries' global allocator (`host_sdk::allocator`) serves the host's
//! small blocks from mimalloc, which hands freed pages back by itself.
//! glibc's allocator still serves blocks of 64 KiB and more, SQLite, and
//! extension libraries that keep the system's allocator. glibc
//! gives each thread that allocates its own malloc arena and keeps what the
//! arenas once held: after a burst (an import, concurrent uploads of
//! recordings) the resident size stays at the burst's peak although the
//! memory is free. Two arenas are plenty here, multi-megabyte buffers get
//! pages of their own, and a background thread hands free pages back to the
//! system every few seconds (not `free` itself, which would give back and
//! fault in again the same pages request after request).

use std::time::Duration;

/// How often free memory is handed back.
const TRIM_EVERY: Duration = Duration::from_secs(2);

/// Free memory at the top of an arena that `free` leaves for the trimming
/// thread instead of handing it back at once.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 8 << 20;

/// Sets the allocator's parameters; called first thing in `main`, before
/// any other thread exists.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn tune_allocator() {
    // SAFETY: mallopt only sets allocator parameters, and no other thread
    // exists yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        // Large answers (MBs) get pages of their own, given back when freed,
        // instead of raising glibc's adaptive threshold and staying resident.
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        // Setting the threshold above fixes glibc's trim threshold at 128
        // KiB: freeing a page's answer (100-500 KiB) then shrank the heap,
        // and the next request faulted the same pages in again (with the
        // other core's TLB flushed each time), 7% of a 50-record page's
        // throughput. Free memory up to this much stays in the arena
        // until the trimming thread's next pass.
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}

/// Starts the thread that hands free memory back (after logging is set up,
/// so that a failure to start it is reported).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn start_trimming() {
    let spawned = std::thread::Builder::new()
        .name("memory-trim".into())
        .spawn(|| loop {
            std::thread::sleep(TRIM_EVERY);
            // SAFETY: malloc_trim is thread-safe; it returns free pages of
            // every arena to the system (madvise), keeping what is in use.
            unsafe {
                libc::malloc_trim(0);
            }
        });
    if let Err(e) = spawned {
        log::warn!("free memory will not be handed back to the system: {e}");
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune_allocator() {}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn start_trimming() {}
