//! After warm-up a frame of the simulation allocates nothing on the sparse-set backend (counting allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use swarm::ecs::Backend;
use swarm::sim::{build_app, SimConfig, SimStats};

struct Counting;
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwards the caller's layout unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwards to the system allocator that made `ptr`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn steady_frames_allocate_nothing() {
    let config = SimConfig::with_population(2_000);
    let mut app = build_app(config.clone(), 9, Backend::SparseSet, config.default_capacity());
    // Warm-up: the population fills, fights start, and every buffer reaches its working size.
    for _ in 0..1_500 {
        app.update();
    }
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let deaths_before = app.world.resource::<SimStats>().deaths;
    for _ in 0..100 {
        app.update();
    }
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    let deaths = app.world.resource::<SimStats>().deaths - deaths_before;
    assert!(deaths > 50, "only {deaths} deaths in the measured frames: not a steady churn");
    assert_eq!(allocations, 0, "{allocations} allocations in 100 steady frames");
}
