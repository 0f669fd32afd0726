//! Movement: integrate velocity over the fixed time step and bounce off the arena walls.

use super::components::{Health, Position, Velocity};
use super::config::{SimConfig, DT};
use crate::app::{App, OrderSystems, Query, Res, Stage};
use crate::ecs::World;
use glam::Vec2;

/// Adds [`align_pools`] then [`integrate_velocity`] to `Update`, in the group "movement", after steering
/// (`hunt_targets`).
pub fn plugin(app: &mut App) {
    app.insert_resource(AlignScratch::default()).add_group(
        Stage::Update,
        "movement",
        (align_pools.run_if(align_due), integrate_velocity).chain().after(super::hunt::hunt_targets),
    );
}

/// What [`integrate_velocity`] reads and writes of each moving entity.
#[derive(crate::ecs::QueryData)]
pub struct Mover<'a> {
    position: &'a mut Position,
    velocity: &'a mut Velocity,
}

/// Moves everything with a velocity; fighters and particles alike bounce off the walls: a step that ends
/// outside the arena is clamped to its edge, and the velocity component across that wall flips.
///
/// Written without branches (clamp, compare, select), so the loop body is a few vector instructions. (A NaN
/// position, which nothing here makes, would be clamped to the wall at 0.) Each entity's step reads and writes
/// only its own values, so the pieces run on every thread.
pub fn integrate_velocity(config: Res<SimConfig>, mut movers: Query<Mover>) {
    let arena = config.arena;
    movers.par_for_each(|_, Mover { position, velocity }| {
        let moved = position.0 + velocity.0 * DT;
        let inside = moved.clamp(Vec2::ZERO, arena);
        velocity.0 = Vec2::select(moved.cmpne(inside), -velocity.0, velocity.0);
        position.0 = inside;
    });
}

/// Sorts the velocity and health pools into the position pool's order (`sort_as`; sparse-set backend only), so a
/// query over position and velocity (movement), or over all three, walks the packed arrays in lock-step. It runs
/// every `align_every` frames: its run condition is [`align_due`].
pub fn align_pools(world: &mut World) {
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

/// [`align_pools`]'s run condition: every `align_every` frames (never if 0).
pub fn align_due(world: &World) -> bool {
    let every = world.resource::<SimConfig>().align_every;
    let frame = world.resource::<super::config::SimStats>().frames;
    every != 0 && frame.is_multiple_of(every as u64)
}

/// Buffers of [`align_pools`], kept between sorts.
#[derive(Default)]
pub struct AlignScratch {
    /// The position pool's order, copied so the other pools can be sorted after it.
    order: Vec<crate::ecs::Entity>,
    /// `sort_as_with`'s buffer.
    sort: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecs::Backend;

    #[test]
    fn steps_and_bounces_off_the_walls() {
        for backend in Backend::ALL {
            let mut world = World::new();
            world.set_backend(backend);
            let arena = Vec2::new(100.0, 50.0);
            world.insert_resource(SimConfig { arena, ..SimConfig::with_population(10) });
            let step = |p: Vec2, v: Vec2| (Position(p), Velocity(v));
            let inside = world.spawn(step(Vec2::new(50.0, 25.0), Vec2::new(60.0, -30.0))).unwrap();
            let east = world.spawn(step(Vec2::new(99.9, 25.0), Vec2::new(60.0, 6.0))).unwrap();
            let corner = world.spawn(step(Vec2::new(0.1, 0.1), Vec2::new(-60.0, -60.0))).unwrap();
            let on_wall = world.spawn(step(Vec2::new(100.0, 50.0), Vec2::ZERO)).unwrap();
            let mut app = App::with_world(world);
            app.add_systems(Stage::Update, integrate_velocity).update();
            let world = &app.world;
            let at = |e| (world.get::<Position>(e).unwrap().0, world.get::<Velocity>(e).unwrap().0);
            assert_eq!(
                at(inside),
                (Vec2::new(50.0 + 60.0 * DT, 25.0 - 30.0 * DT), Vec2::new(60.0, -30.0)),
                "{backend:?}"
            );
            assert_eq!(at(east), (Vec2::new(100.0, 25.0 + 6.0 * DT), Vec2::new(-60.0, 6.0)), "{backend:?}");
            assert_eq!(at(corner), (Vec2::ZERO, Vec2::new(60.0, 60.0)), "{backend:?}");
            assert_eq!(at(on_wall), (Vec2::new(100.0, 50.0), Vec2::ZERO), "{backend:?}: on the wall is inside");
        }
    }
}
