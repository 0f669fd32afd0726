//! Movement: integrate velocity over the fixed time step and bounce off the arena walls.

use super::components::{Health, Position, Velocity};
use super::config::{SimConfig, DT};
use crate::ecs::app::{App, Stage};
use crate::ecs::World;

/// Adds [`align_pools`] and [`integrate_velocity`] to `Update`.
pub fn plugin(app: &mut App) {
    app.insert_resource(AlignScratch::default()).add_systems(Stage::Update, (align_pools, integrate_velocity));
}

/// Moves everything with a velocity; fighters and particles alike bounce off the walls.
pub fn integrate_velocity(world: &mut World) {
    let arena = world.resource::<SimConfig>().arena;
    world.query::<(&mut Position, &mut Velocity)>().for_each(|_, (p, v)| {
        p.0 += v.0 * DT;
        if p.0.x < 0.0 || p.0.x > arena.x {
            v.0.x = -v.0.x;
            p.0.x = p.0.x.clamp(0.0, arena.x);
        }
        if p.0.y < 0.0 || p.0.y > arena.y {
            v.0.y = -v.0.y;
            p.0.y = p.0.y.clamp(0.0, arena.y);
        }
    });
}

/// Every `align_every` frames (sparse-set backend only), sorts the velocity and health pools into the position
/// pool's order (seed 001's `sort_as`), so a query over position and velocity (movement), or over all three,
/// walks the packed arrays in lock-step.
pub fn align_pools(world: &mut World) {
    let every = world.resource::<SimConfig>().align_every;
    let frame = world.resource::<super::config::SimStats>().frames;
    if every == 0 || !frame.is_multiple_of(every as u64) {
        return;
    }
    world.resource_scope::<AlignScratch, _>(|world, scratch| {
        let Some(positions) = world.sparse_set::<Position>() else { return };
        let AlignScratch { order, sort } = scratch;
        order.clear();
        order.extend_from_slice(positions.entities());
        if let Some(pool) = world.sparse_set_mut::<Velocity>() {
            pool.sort_as_with(order, sort);
        }
        if let Some(pool) = world.sparse_set_mut::<Health>() {
            pool.sort_as_with(order, sort);
        }
    });
}

/// Buffers of [`align_pools`], kept between sorts.
#[derive(Default)]
pub struct AlignScratch {
    /// The position pool's order, copied so the other pools can be sorted after it.
    order: Vec<crate::ecs::Entity>,
    /// `sort_as_with`'s buffer.
    sort: Vec<u32>,
}
