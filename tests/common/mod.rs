//! A counting global allocator shared by the allocation tests (each test binary installs its own copy).
//!
//! Counts are kept per thread: the test harness's own threads allocate now and then (its main thread wakes to
//! watch for slow tests), and those allocations must not be charged to the world under test. A process-wide count
//! is kept too, for code that runs on threads of its own (a thread pool's); a test reading it must be alone in its
//! binary and short (the harness wakes after 60 seconds).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub struct Counting;

thread_local! {
    // `const` with a `Copy` value: no lazy initialisation and no destructor, so reading it never allocates.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

static EVERYWHERE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn count() {
    // `try_with` fails only while the thread is being torn down; nothing is counted then.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    EVERYWHERE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

// The one exception to the crate's `unsafe_code = "deny"`: a global allocator must implement this unsafe trait, and
// counting allocations is how the tests prove that steady frames and command buffers allocate nothing.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwards the caller's layout unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwards to the system allocator that made `ptr`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations (and reallocations) made so far by the calling thread.
pub fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// Allocations (and reallocations) made so far by every thread of the process.
#[allow(dead_code)] // (used by some of the test binaries that share this module)
pub fn allocations_everywhere() -> usize {
    EVERYWHERE.load(std::sync::atomic::Ordering::Relaxed)
}
