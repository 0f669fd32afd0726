//! The window's far-zoom team field (`TeamField`) counts every fighter into its grid and, once its buffers have
//! grown, refills each frame without allocating (counting allocator).

use swarm::ecs::Backend;
use swarm::sim::components::{Blue, Red};
use swarm::sim::painter::TeamField;
use swarm::sim::{build_app, config::Scenario, SimConfig};

mod common;

#[global_allocator]
static GLOBAL: common::Counting = common::Counting;

#[test]
fn the_team_field_counts_every_fighter_and_refills_without_allocating() {
    let config = SimConfig { scenario: Scenario::Armies, ..SimConfig::with_population(3_000) };
    let mut app = build_app(config.clone(), 5, Backend::SparseSet, config.default_capacity());
    for _ in 0..120 {
        app.update();
    }
    let mut field = TeamField::default();
    field.fill(&app.world, config.arena, 40.0);
    let (cols, rows) = field.size();
    assert_eq!((cols, rows), ((config.arena.x / 40.0).ceil() as usize, (config.arena.y / 40.0).ceil() as usize));
    let (red, blue) = field.cells().fold((0u32, 0u32), |(r, b), (cr, cb)| (r + cr as u32, b + cb as u32));
    assert_eq!(red as usize, app.world.query_ref::<(&Red,)>().count());
    assert_eq!(blue as usize, app.world.query_ref::<(&Blue,)>().count());
    // Armies: red fills the left columns, blue the right.
    let column_of = |want_red: bool| {
        let (mut sum, mut n) = (0usize, 0usize);
        for (i, (r, b)) in field.cells().enumerate() {
            let count = if want_red { r } else { b } as usize;
            sum += (i % cols) * count;
            n += count;
        }
        sum as f32 / n.max(1) as f32
    };
    assert!(column_of(true) < cols as f32 * 0.4 && column_of(false) > cols as f32 * 0.6);

    // Refilling at the same grid, and at a coarser one, after more frames: no allocation.
    app.update();
    let before = common::allocations();
    field.fill(&app.world, config.arena, 40.0);
    field.fill(&app.world, config.arena, 90.0);
    let allocations = common::allocations() - before;
    assert_eq!(allocations, 0, "{allocations} allocations refilling the team field");
}
