//! A global allocator for hosts and extension libraries (the `allocator`
//! feature): small blocks from mimalloc's thread-local heaps, larger ones
//! from the C library's allocator.
//!
//! The C library's allocator serves a request's many small allocations
//! from a few arenas behind locks; with 16 requests at once a page of 50
//! records spent a fifth of its time there. mimalloc serves them without
//! locks, but each thread keeps the pages it freed for a while before
//! handing them back: the buffers of answers (tens of kilobytes to many
//! megabytes, grown by doubling) kept that way, on each of the host's
//! threads, tripled its resident memory through a list of 2,000 videos.
//! Blocks of [`LARGE`] and more go to the C library, which reuses them
//! across threads, maps the largest on pages of their own (glibc's
//! threshold, 1 MiB in the example host), grows those in place (`mremap`)
//! and unmaps them when freed. mimalloc is built without transparent huge
//! pages, so a thread's few small pages are not 2 MiB each, and with the
//! local-dynamic TLS model, which a library the host opens at run time
//! needs (initial-exec TLS comes from a small reserve shared by every
//! library loaded late, and running out of it fails the load).
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: host_sdk::allocator::Allocator = host_sdk::allocator::Allocator;
//! ```
//!
//! A library that declares it allocates its own memory with it; what
//! crosses the boundary is freed by the side that made it (the ABI's types
//! carry their deallocator), so host and library need not share one.

use std::alloc::{GlobalAlloc, Layout, System};

use mimalloc::MiMalloc;

/// The size from which a block is the C library's.
pub const LARGE: usize = 64 * 1024;

/// Small blocks from mimalloc, blocks of [`LARGE`] bytes and more from the
/// system's allocator. A block's size says whose it is, so a block that
/// `realloc` takes across [`LARGE`] moves to the other side.
pub struct Allocator;

fn is_large(size: usize) -> bool {
    size >= LARGE
}

// SAFETY: every block is allocated and freed by the same allocator, chosen
// by its size, which `GlobalAlloc`'s callers hand back unchanged (a
// `realloc` across the boundary copies the block to the other side).
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size()) {
            System.alloc(layout)
        } else {
            MiMalloc.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size()) {
            System.alloc_zeroed(layout)
        } else {
            MiMalloc.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_large(layout.size()) {
            System.dealloc(ptr, layout)
        } else {
            MiMalloc.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match (is_large(layout.size()), is_large(new_size)) {
            (true, true) => System.realloc(ptr, layout, new_size),
            (false, false) => MiMalloc.realloc(ptr, layout, new_size),
            _ => {
                // SAFETY: the caller guarantees `new_size`, rounded up to
                // the alignment, does not overflow (GlobalAlloc::realloc).
                let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
                let moved = self.alloc(new_layout);
                if !moved.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                moved
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills a block with a pattern of its position.
    unsafe fn fill(ptr: *mut u8, size: usize, seed: u8) {
        for i in 0..size {
            *ptr.add(i) = (i as u8).wrapping_mul(31).wrapping_add(seed);
        }
    }

    unsafe fn holds(ptr: *const u8, size: usize, seed: u8) -> bool {
        (0..size).all(|i| *ptr.add(i) == (i as u8).wrapping_mul(31).wrapping_add(seed))
    }

    #[test]
    fn a_block_keeps_its_bytes_when_grown_or_shrunk_across_the_large_size() {
        let sizes = [16, 4096, LARGE - 1, LARGE, LARGE + 1, 3 * LARGE, 100, 8];
        for align in [8, 64, 4096] {
            unsafe {
                let mut layout = Layout::from_size_align(sizes[0], align).unwrap();
                let mut ptr = Allocator.alloc(layout);
                assert!(!ptr.is_null());
                fill(ptr, layout.size(), align as u8);
                for &size in &sizes[1..] {
                    let kept = layout.size().min(size);
                    ptr = Allocator.realloc(ptr, layout, size);
                    assert!(!ptr.is_null(), "{} -> {size}", layout.size());
                    assert_eq!(ptr as usize % align, 0, "aligned to {align}");
                    assert!(holds(ptr, kept, align as u8), "{} -> {size}", layout.size());
                    layout = Layout::from_size_align(size, align).unwrap();
                    fill(ptr, size, align as u8);
                }
                Allocator.dealloc(ptr, layout);
            }
        }
    }

    #[test]
    fn zeroed_blocks_are_zero_on_both_sides() {
        for size in [24, LARGE + 8] {
            unsafe {
                let layout = Layout::from_size_align(size, 8).unwrap();
                let ptr = Allocator.alloc_zeroed(layout);
                assert!(!ptr.is_null());
                assert!((0..size).all(|i| *ptr.add(i) == 0), "{size} bytes");
                Allocator.dealloc(ptr, layout);
            }
        }
    }
}
