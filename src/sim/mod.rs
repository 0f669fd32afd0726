//! The simulation: fighters of two teams, hunters, particles, on a fixed time step. Imports the ECS and glam,
//! never macroquad, so every system runs headless, in tests and in benches.
//!
//! Systems, in frame order: `start_round` (on entering [`rounds::Phase::Fighting`], the `battle` scenario's state)
//! -> `spawn_fighters` (PreUpdate) -> `hunt_targets` -> `align_pools` -> `integrate_velocity` -> `plan_formation`
//! -> `keep_formation` -> `build_grid` -> `resolve_collisions` (Update) -> `note_hurt`, `despawn_dead` -> `age_particles`
//! (PostUpdate, one batch) -> `count_frame` -> `judge_round` -> `call_next_round` (Last) -> the
//! command buffer is applied, with the squads' lifecycle handler (a fallen fighter's squad, its particles and its
//! despawn).
//! (`tests/docs.rs` checks docs/ARCHITECTURE.md's frame against the schedule.)

pub mod chart;
pub mod collision;
pub mod compare;
pub mod components;
pub mod config;
pub mod digest;
pub mod grid;
pub mod hunt;
pub mod lifecycle;
pub mod limits;
pub mod movement;
pub mod net;
pub mod painter;
pub mod play;
pub mod recording;
pub mod replay;
pub mod report;
pub mod rewind;
pub mod rollback;
pub mod rounds;
pub mod snapshot;
pub mod spawn;
pub mod squads;
pub mod step;
pub mod stress;

use crate::app::profile::Profiler;
use crate::app::{App, Plugin};
use crate::ecs::Entities;
use crate::ecs::{Backend, World};
pub use config::{
    Draw, Scenario, Shortfall, SimConfig, SimRng, SimStats, SpawnRequests, StaleCatches, Stream, TeamBursts, DT,
};
pub use digest::digest;

/// The whole simulation as one plugin: its resources and the system plugins, in order.
pub struct SimPlugin {
    /// Settings.
    pub config: SimConfig,
    /// The seed of the run's random generator.
    pub seed: u64,
}

impl Plugin for SimPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(self.config.clone())
            .insert_resource(SimRng::new(self.seed))
            .insert_resource(SimStats::default())
            .insert_resource(SpawnRequests::default())
            .insert_resource(TeamBursts::default())
            .add_plugins((
                spawn::plugin,
                hunt::plugin,
                squads::plugin,
                movement::plugin,
                collision::plugin,
                lifecycle::plugin,
                rounds::plugin,
                rollback::plugin,
            ));
    }
}

/// An app running the simulation on `backend`, in a world of `capacity` entities.
pub fn build_app(config: SimConfig, seed: u64, backend: Backend, capacity: u32) -> App {
    build_app_with(config, seed, backend, capacity, Profiler::new())
}

/// Like [`build_app`], recording spans into an existing `profiler`.
pub fn build_app_with(config: SimConfig, seed: u64, backend: Backend, capacity: u32, profiler: Profiler) -> App {
    let mut world = World::from_entities(Entities::new(capacity));
    world.set_backend(backend);
    let mut app = App::with_profiler(world, profiler);
    app.add_plugins(SimPlugin { config, seed });
    app
}

/// Live entities by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// Red fighters.
    pub red: u32,
    /// Blue fighters.
    pub blue: u32,
    /// Hunters (of both teams).
    pub hunters: u32,
    /// Squads: captains with at least one follower.
    pub squads: u32,
    /// Particles.
    pub particles: u32,
}

/// Counts live entities by kind (the types [`components::TABLE`] gives a census field) from the storage's own
/// lengths ([`World::count_of`]): no entity is visited, so
/// the window can read it every frame on any backend without disturbing the frame it measures.
pub fn census(world: &World) -> Census {
    let mut census = Census::default();
    for kept in components::TABLE {
        if let Some(field) = kept.census {
            *field(&mut census) = (kept.count)(world) as u32;
        }
    }
    census
}

#[cfg(test)]
mod tests {
    use super::*;
    use components::{Blue, Hunter, Particle, Red};

    #[test]
    fn the_census_matches_counting_queries_on_every_backend() {
        let config = SimConfig::with_population(600);
        let mut app = build_app(config.clone(), 5, Backend::SparseSet, config.default_capacity());
        for backend in Backend::ALL {
            app.world.set_backend(backend);
            for _ in 0..40 {
                app.update();
            }
            let world = &app.world;
            let counted = Census {
                red: world.query_ref::<(&Red,)>().count() as u32,
                blue: world.query_ref::<(&Blue,)>().count() as u32,
                hunters: world.query_ref::<(&Hunter,)>().count() as u32,
                squads: world.query_ref::<(&crate::ecs::Children,)>().count() as u32,
                particles: world.query_ref::<(&Particle,)>().count() as u32,
            };
            assert_eq!(census(world), counted, "{backend}");
            assert!(
                counted.red > 0 && counted.hunters > 0 && counted.squads > 0 && counted.particles > 0,
                "{counted:?}"
            );
        }
    }
}
