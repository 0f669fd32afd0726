//! The world both lifecycle benches measure (`events.rs` with criterion, `pipeline_counts.rs` under callgrind).

use std::hint::black_box;
use swarm::ecs::{Entity, World};

#[derive(Clone, Copy)]
pub struct Position(#[allow(dead_code)] pub [f32; 2]);
#[derive(Clone, Copy)]
pub struct Health(#[allow(dead_code)] pub i32);
#[derive(Clone, Copy)]
pub struct Mark(#[allow(dead_code)] pub u32);

/// Entities in the world, and operations per measurement.
pub const N: usize = 10_000;

/// A world of `N` entities with a position and health, room for four times as many, and `handlers` handlers of
/// each kind (spawn, despawn, insert of `Mark`) that read the value and record nothing; with the handles.
pub fn world(handlers: usize) -> (World, Vec<Entity>) {
    let mut world = World::with_capacity(4 * N as u32);
    for _ in 0..handlers {
        world.on_spawn(|w, e, _| {
            black_box(w.get::<Position>(e));
        });
        world.on_despawn(|w, e, _| {
            black_box(w.get::<Position>(e));
        });
        world.on_insert::<Mark>(|_, _, m, _| {
            black_box(m);
        });
    }
    let mut handles = Vec::new();
    world.spawn_batch_into((0..N).map(|i| (Position([i as f32, 0.0]), Health(100))), &mut handles).unwrap();
    (world, handles)
}
