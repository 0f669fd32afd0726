//! Life and death: the dead are marked fallen (the squads' handlers despawn them with a burst of particles);
//! particles age and disappear; the fighters hurt this frame are noted (change detection of [`Health`]: the
//! collision pass writes the health of the fighters it hits, and only theirs).

use super::collision::Broadphase;
use super::components::{Health, Lifetime};
use super::config::{SimConfig, SimStats};
use super::squads::Fallen;
use crate::app::{App, Commands, Local, OrderSystems, Query, Res, ResMut, Stage};
use crate::ecs::{Changed, Entity, Tracker, World};

/// Adds [`note_hurt`] to `PostUpdate`, then [`despawn_dead`] and [`age_particles`] in the group "lifecycle" (all
/// three may run at once), and the frame counter to `Last`; tracks [`Health`].
pub fn plugin(app: &mut App) {
    app.world.track::<Health>();
    app.insert_resource(Hurt::default());
    // `count_frame` is in no group: the frame counter keys the random streams and recordings, so it always runs;
    // nor is `note_hurt`, which only reads.
    // Both lifecycle systems record commands: their order is the buffer's.
    // `note_hurt` writes nothing they touch, so the three form one batch. It comes first: on two threads the batch
    // is halved, and its walk (one thread's work, the longest of the three) starts at once while the other thread
    // runs the group. Nothing after `resolve_collisions` writes health before the command buffer, so it notes
    // what it would note at the frame's end.
    app.add_systems(Stage::PostUpdate, note_hurt)
        .add_group(Stage::PostUpdate, "lifecycle", (despawn_dead, age_particles).chain())
        .add_systems(Stage::Last, count_frame);
}

/// The fighters whose health changed since [`note_hurt`] last ran (a frame), in handle order, and the counts of
/// [`Health`] values changed, added and removed: what the window flashes and the overlay counts.
#[derive(Clone, Debug, Default)]
pub struct Hurt {
    /// Hurt: changed, not added (a fighter spawned this frame is not hurt).
    pub hurt: Vec<Entity>,
    /// Values changed (hurt or added).
    pub changed: usize,
    /// Values added (spawns).
    pub added: usize,
    /// Values removed (the fallen).
    pub removed: usize,
}

/// Notes the fighters hurt since its last run: only the rows whose health changed, through the `Changed` filter
/// (the pass costs the changed rows, not the fighters).
pub fn note_hurt(mut changed: Query<(), Changed<Health>>, health: Tracker<Health>, mut hurt: ResMut<Hurt>) {
    let Hurt { hurt, changed: n, added, removed } = &mut *hurt;
    hurt.clear();
    *added = 0;
    changed.for_each(|e, ()| match health.is_added(e) {
        true => *added += 1,
        false => hurt.push(e),
    });
    *n = hurt.len() + *added;
    *removed = health.removed_count();
}

/// Marks every fighter at zero health [`Fallen`]; the handlers of the squads module settle its squad, despawn it
/// and throw its particles when the buffer is applied ([`crate::sim::squads`]).
///
/// The health pool is walked in pieces on every thread, each listing its dead; the dead are then handled in handle
/// order, so the commands (and the handlers' answers to them) do not depend on the order the pool is walked in.
/// An entity at zero health that is not in this frame's broadphase is not a fighter this game makes, and is left
/// alone.
pub fn despawn_dead(
    config: Res<SimConfig>,
    mut stats: ResMut<SimStats>,
    mut broadphase: ResMut<Broadphase>,
    mut health: Query<&Health>,
    mut commands: Commands,
    mut scratch: Local<DeadScratch>,
) {
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
        if broadphase.fighter(e).is_none() {
            continue;
        }
        // Hunters read the broadphase snapshot next frame: it must not vouch for a fighter despawned now.
        broadphase.forget(e);
        commands.insert(e, Fallen);
        stats.deaths += 1;
        stats.particles += u64::from(config.particles_per_death);
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
