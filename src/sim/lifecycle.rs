//! Life and death: the dead are despawned with a burst of particles; particles age and disappear.

use super::collision::Broadphase;
use super::components::{Health, Lifetime, Particle, ParticleBundle, Position, Velocity};
use super::config::{Draw, SimConfig, SimRng, SimStats};
use crate::app::{App, Commands, Local, Query, Res, ResMut, Stage};
use crate::ecs::{Entity, World};
use glam::Vec2;
use rand::Rng;

/// Adds [`despawn_dead`] and [`age_particles`] to `PostUpdate` in the group "lifecycle", and the frame counter to
/// `Last`.
pub fn plugin(app: &mut App) {
    // `count_frame` is in no group: the frame counter keys the random streams and recordings, so it always runs.
    app.add_group(Stage::PostUpdate, "lifecycle", (despawn_dead, age_particles)).add_systems(Stage::Last, count_frame);
}

/// Records a despawn for every fighter at zero health, and its particle burst.
///
/// The health pool is walked in pieces on every thread, each listing its dead; the dead are then handled in handle
/// order. A fighter's position comes from this frame's broadphase (collisions do not move anyone, so it is the
/// current one), which spares a position lookup per fighter; an entity at zero health that is not in the grid is
/// not a fighter this game makes, and is left alone. A burst draws from the dying fighter's own random stream, and
/// the commands go in handle order, so neither depends on the order the health pool is walked in. (The buffer
/// applies the alternating despawns and spawns as one batch of despawns, then one of spawns.)
pub fn despawn_dead(
    config: Res<SimConfig>,
    rng: Res<SimRng>,
    mut stats: ResMut<SimStats>,
    mut broadphase: ResMut<Broadphase>,
    mut health: Query<&Health>,
    mut commands: Commands,
    mut scratch: Local<DeadScratch>,
) {
    let rng = *rng;
    let frame = stats.frames;
    // The dead, found in pieces on every thread (a read-only walk); then handled one by one in handle order, as a
    // loop keyed by them records its commands.
    let DeadScratch { pieces, dead } = &mut *scratch;
    health.par_fold(pieces, Vec::clear, |dead, e, h| {
        if h.0 <= 0 {
            dead.push(e);
        }
    });
    dead.clear();
    dead.extend(pieces.iter().flatten());
    dead.sort_unstable_by_key(|e| e.index());
    for &e in dead.iter() {
        let Some(at) = broadphase.fighter(e).map(|f| f.position) else { continue };
        // Hunters read the broadphase snapshot next frame: it must not vouch for a fighter despawned now.
        broadphase.forget(e);
        commands.despawn(e);
        stats.deaths += 1;
        let mut rng = rng.stream(frame, e.to_bits(), Draw::Death);
        for _ in 0..config.particles_per_death {
            let v = Vec2::from_angle(rng.gen_range(0.0..std::f32::consts::TAU)) * rng.gen_range(20.0..90.0);
            let life = config.particle_life - rng.gen_range(0..=config.particle_life / 3);
            // Deferred: never refused here; a full world refuses it when applied (counted there).
            let _ = commands.spawn(ParticleBundle {
                position: Position(at),
                velocity: Velocity(v),
                lifetime: Lifetime(life),
                particle: Particle,
            });
            stats.particles += 1;
        }
    }
}

/// [`despawn_dead`]'s buffers, kept between frames: each piece's dead, and all of them in handle order.
#[derive(Default)]
pub struct DeadScratch {
    pieces: Vec<Vec<Entity>>,
    dead: Vec<Entity>,
}

/// Counts particles' frames down; the expired are despawned.
pub fn age_particles(mut lifetimes: Query<&mut Lifetime>, mut commands: Commands) {
    lifetimes.par_for_each_with_commands(&mut commands, |e, life, commands| {
        life.0 = life.0.saturating_sub(1);
        if life.0 == 0 {
            commands.despawn(e);
        }
    });
}

/// Counts the frame and the peak population.
pub fn count_frame(world: &mut World) {
    let live = world.len() + world.entities().reserved();
    let stats = world.resource_mut::<SimStats>();
    stats.frames += 1;
    stats.peak_live = stats.peak_live.max(live);
}
