//! One conformance suite, run on every storage backend (EnTT style: every test over every policy). Each module holds
//! the tests of one concern, as plain functions of a `Backend`, and ends with the list that runs each of them on every
//! backend.

#[path = "../backends/mod.rs"]
mod backends;

use swarm::ecs::{Backend, Entity, World};

/// Each test of a module on every backend of `Backend::ALL`, as its own `#[test]` (named after the function, in the
/// module's `every_backend`): a backend added to the table is covered with no edit to any module.
macro_rules! on_every_backend {
    ($($test:ident),* $(,)?) => {$(
        #[test]
        fn $test() {
            backends::each(super::$test);
        }
    )*};
}

/// The tests that must panic, on every backend, each with the message its panic must hold.
macro_rules! panics_on_every_backend {
    ($($test:ident => $expected:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            backends::each_panics(super::$test, $expected);
        }
    )*};
}

mod batches;
mod changes;
mod commands;
mod components;
mod derive;
mod events;
mod filters;
mod handles;
mod hierarchy;
mod iteration;
mod kept_handles;
mod lookups;
mod panics;
mod pipeline;
mod query;
mod resources;
mod rollback;
mod snapshot;
mod spawn;
mod switch;
mod world_api;

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct Pos(f32, f32);
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct Vel(f32, f32);
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Name(String);
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct Red;
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct Blue;

fn sorted(mut v: Vec<Entity>) -> Vec<Entity> {
    v.sort();
    v
}

fn world(backend: Backend) -> World {
    let mut world = World::with_capacity(10_000);
    world.set_backend(backend);
    world
}
