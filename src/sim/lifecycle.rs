//! Life and death: the dead are despawned with a burst of particles; particles age and disappear.

use super::collision::Broadphase;
use super::components::{Health, Lifetime, Particle, Position, Velocity};
use super::config::{SimConfig, SimRng, SimStats};
use crate::app::{App, Stage};
use crate::ecs::{Entity, World};
use glam::Vec2;
use rand::Rng;

/// Adds [`despawn_dead`] and [`age_particles`] to `PostUpdate`, and the frame counter to `Last`.
pub fn plugin(app: &mut App) {
    app.insert_resource(LifeScratch::default())
        .add_systems(Stage::PostUpdate, (despawn_dead, age_particles))
        .add_systems(Stage::Last, count_frame);
}

/// Reused buffers of the dying and the expired.
#[derive(Default)]
pub struct LifeScratch {
    dying: Vec<(Entity, Vec2)>,
    expired: Vec<Entity>,
}

/// Records a despawn for every fighter at zero health, and its particle burst. The dying are sorted first, so the
/// random draws and the freed indices come in the same order on every backend.
pub fn despawn_dead(world: &mut World) {
    let config = world.resource::<SimConfig>().clone();
    world.resource_scope::<LifeScratch, _>(|world, scratch| {
        let dying = &mut scratch.dying;
        dying.clear();
        // Only the health pool is walked; the few dying look their position up.
        world.query::<(&Health,)>().for_each(|e, (h,)| {
            if h.0 <= 0 {
                dying.push((e, Vec2::ZERO));
            }
        });
        dying.retain_mut(|(e, at)| match world.get::<Position>(*e) {
            Some(p) => {
                *at = p.0;
                true
            }
            None => false, // health without a position: not a fighter this game makes; left alone
        });
        dying.sort_unstable_by_key(|&(e, _)| e);
        // Hunters read the broadphase snapshot next frame: it must not vouch for fighters despawned now.
        if let Some(broadphase) = world.get_resource_mut::<Broadphase>() {
            for &(e, _) in dying.iter() {
                broadphase.forget(e);
            }
        }
        let (mut particles, mut refused) = (0u64, 0u64);
        world.resource_scope::<SimRng, _>(|world, rng| {
            let mut commands = world.commands();
            // All the despawns first: one run, which the command buffer applies pool by pool.
            for &(e, _) in dying.iter() {
                commands.despawn(e);
            }
            for &(_, at) in dying.iter() {
                for _ in 0..config.particles_per_death {
                    let v = Vec2::from_angle(rng.0.gen_range(0.0..std::f32::consts::TAU)) * rng.0.gen_range(20.0..90.0);
                    let life = config.particle_life - rng.0.gen_range(0..=config.particle_life / 3);
                    match commands.spawn((Position(at), Velocity(v), Lifetime(life), Particle)) {
                        Ok(_) => particles += 1,
                        Err(_) => refused += 1,
                    }
                }
            }
        });
        let stats = world.resource_mut::<SimStats>();
        stats.deaths += scratch.dying.len() as u64;
        stats.particles += particles;
        stats.spawn_refused += refused;
    });
}

/// Counts particles' frames down; the expired are despawned (sorted, for the same reason as the dead).
pub fn age_particles(world: &mut World) {
    world.resource_scope::<LifeScratch, _>(|world, scratch| {
        let expired = &mut scratch.expired;
        expired.clear();
        world.query::<(&mut Lifetime,)>().for_each(|e, (life,)| {
            life.0 = life.0.saturating_sub(1);
            if life.0 == 0 {
                expired.push(e);
            }
        });
        expired.sort_unstable();
        let mut commands = world.commands();
        for &e in expired.iter() {
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
