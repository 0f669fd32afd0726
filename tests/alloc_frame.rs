//! After warm-up a frame of the simulation allocates nothing on the sparse-set backend (counting allocator).

use swarm::ecs::Backend;
use swarm::sim::{build_app, SimConfig, SimStats};

mod common;

#[global_allocator]
static GLOBAL: common::Counting = common::Counting;

/// One test for both settings, one after the other: the counter is global, and tests of one binary run at once.
#[test]
fn steady_frames_allocate_nothing() {
    // Without and with pool alignment (`sort_as_with` keeps its buffers), which the default settings leave off; on
    // one thread and on a pool of two (systems that touch nothing in common run at once).
    for (align_every, threads) in [(0, 1), (10, 1), (0, 2), (10, 2)] {
        let config = SimConfig { align_every, ..SimConfig::with_population(2_000) };
        let mut app = build_app(config.clone(), 9, Backend::SparseSet, config.default_capacity());
        app.set_threads(threads);
        // Warm-up: the population fills, fights start, and every buffer reaches its working size (the squads'
        // lists and the handlers' rounds reach their peaks later than the rest).
        for _ in 0..3_000 {
            app.update();
        }
        // On a pool, the systems also run on the pool's threads: count every thread's allocations (this test is
        // alone in its binary).
        let count = if threads == 1 { common::allocations } else { common::allocations_everywhere };
        let before = count();
        let deaths_before = app.world.resource::<SimStats>().deaths;
        for _ in 0..100 {
            app.update();
        }
        let allocations = count() - before;
        let deaths = app.world.resource::<SimStats>().deaths - deaths_before;
        assert!(deaths > 50, "align_every {align_every}, {threads} threads: only {deaths} deaths in the measured frames: no steady churn");
        // On a pool, each frame hands its parallel batch to the pool from the frame's thread through rayon's
        // injector queue, which takes a new block of 63 job slots every 63 jobs: that block, and nothing else.
        let most = if threads == 1 { 0 } else { 100 / 63 + 1 };
        assert!(
            allocations <= most,
            "align_every {align_every}, {threads} threads: {allocations} allocations in 100 steady frames"
        );
    }
}
