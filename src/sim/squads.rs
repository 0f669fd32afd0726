//! Squads and deaths: a captain (a hunter) leads up to [`SQUAD`] followers of its team, its children in the
//! world's hierarchy, who hold a wedge behind it; what happens when a fighter falls is done by lifecycle handlers.
//!
//! - [`crate::sim::spawn`] makes the squads: each hunter spawned opens a squad of its team, and the fighters of
//!   that team spawned after it in the same frame join it, up to [`SQUAD`].
//! - [`keep_formation`] steers each follower to its slot (its place in the captain's list).
//! - `despawn_dead` marks a fighter at zero health [`Fallen`]. The handler of that insert ([`fall`]) settles the
//!   squad (the first living follower is promoted captain and takes the others; a lone follower scatters; dying
//!   followers leave), throws the death's particles ([`burst`]) and records the despawn. The world applies those
//!   commands in the same apply, in the order they were recorded, so the result is the same on every backend and
//!   thread count. (No despawn handler: the particles' many despawns keep the command buffer's batch path.)

use super::components::{Blue, Health, Hunter, Lifetime, Particle, ParticleBundle, Position, Red, Velocity};
use super::config::{Draw, SimConfig, SimRng, SimStats};
use crate::app::{App, Local, OrderSystems, Query, Res, Stage};
use crate::ecs::{Children, Commands, Entity, Parent, Without, World};
use glam::Vec2;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// The most followers a captain leads.
pub const SQUAD: usize = 6;
/// Distance between rows of the wedge, and between a row's two sides.
const SPACING: f32 = 9.0;
/// How hard a follower is pulled to its slot: velocity per unit of distance, per second.
const PULL: f32 = 3.0;

/// A fighter at zero health, marked by `despawn_dead`; its insert's handler ([`fall`]) despawns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallen;

/// Adds [`keep_formation`] to `Update` in the group "squads", after the group "movement" (so after the
/// integration: the velocities it steers move the followers the next frame), and the handler [`fall`] (insert of
/// [`Fallen`]).
pub fn plugin(app: &mut App) {
    app.add_group(Stage::Update, "squads", keep_formation.after("movement")).on_insert::<Fallen>(fall);
}

/// The slot of follower `slot` behind a captain heading along `heading` (a unit vector): a wedge, rows of two.
pub fn slot_offset(heading: Vec2, slot: usize) -> Vec2 {
    let row = (slot / 2 + 1) as f32;
    let side = if slot.is_multiple_of(2) { 1.0 } else { -1.0 };
    (-heading * row + heading.perp() * side * row) * SPACING
}

/// Steers every follower toward its slot: the captain's velocity plus a pull toward the slot, at most twice a
/// fighter's speed. The captains write each follower's slot and lead into a table by entity index, then the
/// followers are walked in pieces, each reading its own entry; each is written once, from its captain's values, so
/// the order captains are visited in does not matter. (The pieces run on every thread on the archetype layout,
/// whose tables split; on the per-component layouts the `Parent` pool drives and the walk probes the velocities
/// it writes, so they run in order on one thread.)
pub fn keep_formation(
    config: Res<SimConfig>,
    mut captains: Query<(&Children, &Position, &Velocity), Without<Parent>>,
    mut followers: Query<(&Parent, &Position, &mut Velocity)>,
    mut slots: Local<Vec<Slot>>,
) {
    let most = config.fighter_speed * 2.0;
    captains.for_each(|_, (squad, at, velocity)| {
        let heading = velocity.0.try_normalize().unwrap_or(Vec2::X);
        for (k, &follower) in squad.iter().enumerate() {
            let index = follower.index() as usize;
            if slots.len() <= index {
                slots.resize(index + 1, Slot::default());
            }
            slots[index] = Slot { follower: Some(follower), target: at.0 + slot_offset(heading, k), lead: velocity.0 };
        }
    });
    let slots = &*slots;
    followers.par_for_each(|e, (_, position, v)| {
        if let Some(slot) = slots.get(e.index() as usize).filter(|s| s.follower == Some(e)) {
            v.0 = (slot.lead + (slot.target - position.0) * PULL).clamp_length_max(most);
        }
    });
}

/// A follower's slot and its captain's velocity, this frame ([`keep_formation`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Slot {
    follower: Option<Entity>,
    target: Vec2,
    lead: Vec2,
}

/// A fighter falls: dying followers leave the squad; of the living, the first is promoted captain (it hunts now)
/// and takes the others in their order, or a lone one scatters; then the fighter is despawned.
pub fn fall(world: &World, fighter: Entity, _: &Fallen, commands: &mut Commands<'_>) {
    let alive = |e: &&Entity| world.get::<Health>(**e).is_some_and(|h| h.0 > 0);
    let squad = world.children(fighter);
    for &dying in squad.iter().filter(|e| !alive(e)) {
        commands.remove_child(fighter, dying);
    }
    let mut living = squad.iter().filter(alive);
    match (living.next(), living.clone().next()) {
        (Some(&only), None) => commands.remove_child(fighter, only),
        (Some(&captain), Some(_)) => {
            commands.remove_child(fighter, captain);
            for &follower in living {
                commands.add_child(captain, follower);
            }
            commands.insert(captain, Hunter);
        }
        (None, _) => {}
    }
    burst(world, fighter, commands);
    commands.despawn(fighter);
}

/// A fallen fighter's particles, drawn from its own random stream for this frame (so the same whatever else
/// dies), spawned where it fell. Entities of other games are left alone.
pub fn burst(world: &World, e: Entity, commands: &mut Commands<'_>) {
    if !(world.has::<Red>(e) || world.has::<Blue>(e)) {
        return;
    }
    let (Some(config), Some(rng), Some(stats), Some(at)) = (
        world.get_resource::<SimConfig>(),
        world.get_resource::<SimRng>(),
        world.get_resource::<SimStats>(),
        world.get::<Position>(e),
    ) else {
        return;
    };
    let mut rng = rng.stream(stats.frames, e.to_bits(), Draw::Death);
    for _ in 0..config.particles_per_death {
        let v = Vec2::from_angle(rng.gen_range(0.0..std::f32::consts::TAU)) * rng.gen_range(20.0..90.0);
        let life = config.particle_life - rng.gen_range(0..=config.particle_life / 3);
        // Deferred: never refused here; a full world refuses it when applied (counted there).
        let _ = commands.spawn(ParticleBundle {
            position: *at,
            velocity: Velocity(v),
            lifetime: Lifetime(life),
            particle: Particle,
        });
    }
}
