//! After warm-up a frame of the simulation allocates nothing on the sparse-set backend (counting allocator).

use swarm::ecs::Backend;
use swarm::sim::{build_app, SimConfig, SimStats};

mod common;

#[global_allocator]
static GLOBAL: common::Counting = common::Counting;

/// One test for both settings, one after the other: the counter is global, and tests of one binary run at once.
#[test]
fn steady_frames_allocate_nothing() {
    // Without and with pool alignment (`sort_as_with` keeps its buffers), which the default settings leave off.
    for align_every in [0, 10] {
        let config = SimConfig { align_every, ..SimConfig::with_population(2_000) };
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
        assert!(deaths > 50, "align_every {align_every}: only {deaths} deaths in the measured frames: no steady churn");
        assert_eq!(allocations, 0, "align_every {align_every}: {allocations} allocations in 100 steady frames");
    }
}
