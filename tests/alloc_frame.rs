//! After warm-up a frame of the simulation allocates nothing on the sparse-set backend (counting allocator).

use swarm::ecs::Backend;
use swarm::sim::{build_app, SimConfig, SimStats};

mod common;

#[global_allocator]
static GLOBAL: common::Counting = common::Counting;

#[test]
fn steady_frames_allocate_nothing() {
    let config = SimConfig::with_population(2_000);
    let mut app = build_app(config.clone(), 9, Backend::SparseSet, config.default_capacity());
    // Warm-up: the population fills, fights start, and every buffer reaches its working size.
    for _ in 0..1_500 {
        app.update();
    }
    let before = common::allocations();
    let deaths_before = app.world.resource::<SimStats>().deaths;
    for _ in 0..100 {
        app.update();
    }
    let allocations = common::allocations() - before;
    let deaths = app.world.resource::<SimStats>().deaths - deaths_before;
    assert!(deaths > 50, "only {deaths} deaths in the measured frames: not a steady churn");
    assert_eq!(allocations, 0, "{allocations} allocations in 100 steady frames");
}
