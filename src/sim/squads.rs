//! Squads and deaths: a captain (a hunter) leads up to [`SQUAD`] followers of its team, its children in the
//! world's hierarchy, who hold a wedge behind it; what happens when a fighter falls is done by lifecycle handlers.
//!
//! - [`crate::sim::spawn`] makes the squads: each hunter spawned opens a squad of its team, and the fighters of
//!   that team spawned after it in the same frame join it, up to [`SQUAD`].
//! - [`plan_formation`] gives each follower its slot (its place in the captain's list) and [`keep_formation`]
//!   steers it there.
//! - `despawn_dead` marks a fighter at zero health [`Fallen`]. The handler of that insert ([`fall`]) settles the
//!   squad (the first living follower is promoted captain and takes the others; a lone follower scatters; dying
//!   followers leave), throws the death's particles ([`burst`]) and records the despawn. The world applies those
//!   commands in the same apply, in the order they were recorded, so the result is the same on every backend and
//!   thread count. `fall` keeps no state, so it is a parallel handler ([`crate::ecs::World::on_insert_parallel`]):
//!   the frame's deaths are one run of inserts, whose calls run in pieces on the thread pool. (No despawn handler:
//!   the particles' many despawns keep the command buffer's batch path.)

use super::components::{Blue, Health, Hunter, Lifetime, Particle, ParticleBundle, Position, Red, Velocity};
use super::config::{Draw, SimConfig, SimRng, SimStats};
use crate::app::{App, OrderSystems, Query, Res, ResMut, Stage};
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

/// Adds [`plan_formation`] then [`keep_formation`] to `Update` in the group "squads", after the group "movement"
/// (so after the integration: the velocities they steer move the followers the next frame), and the handler
/// [`fall`] (insert of [`Fallen`], a parallel handler).
pub fn plugin(app: &mut App) {
    app.insert_resource(Formation::default())
        .add_group(Stage::Update, "squads", (plan_formation, keep_formation).chain().after("movement"))
        .on_insert_parallel::<Fallen>(fall);
}

/// The slot of follower `slot` behind a captain heading along `heading` (a unit vector): a wedge, rows of two.
pub fn slot_offset(heading: Vec2, slot: usize) -> Vec2 {
    let row = (slot / 2 + 1) as f32;
    let side = if slot.is_multiple_of(2) { 1.0 } else { -1.0 };
    (-heading * row + heading.perp() * side * row) * SPACING
}

/// The captains' half of steering: each captain's followers get their slot (the wedge behind it) and its velocity
/// as their lead, in [`Formation`]'s table by the follower's entity index. A follower is in one captain's list, so
/// its entry is written once and the order captains are visited in does not matter.
///
/// On one thread the captains write the table as they are visited. On several, they are read in pieces
/// ([`Query::par_fold`]), each piece copying its captains' leads and their followers' handles (a bulk copy of each
/// squad, where an entry per follower would be a push of 28 bytes); then the table's two halves are written on
/// two threads, each reading every piece and working out the entries whose index falls in its half.
pub fn plan_formation(
    mut captains: Query<(&Children, &Position, &Velocity), Without<Parent>>,
    mut formation: ResMut<Formation>,
) {
    let parallel = captains.parallel();
    let Formation { slots, stamp, pieces } = &mut *formation;
    *stamp = match stamp.checked_add(1) {
        Some(next) => next,
        None => {
            // The stamps have wrapped: entries of old frames could match again.
            slots.clear();
            1
        }
    };
    let stamp = *stamp;
    if !parallel {
        captains.for_each(|_, (squad, at, velocity)| {
            let lead = Lead::new(at.0, velocity.0, squad.len());
            for (k, &follower) in squad.iter().enumerate() {
                let index = follower.index() as usize;
                if slots.len() <= index {
                    slots.resize(index + 1, Slot::default());
                }
                slots[index] = lead.slot(k, follower, stamp);
            }
        });
        return;
    }
    captains.par_fold(pieces, Piece::clear, |piece, _, (squad, at, velocity)| {
        piece.leads.push(Lead::new(at.0, velocity.0, squad.len()));
        piece.followers.extend_from_slice(squad);
        let bound = squad.iter().map(|follower| follower.index() as usize + 1).max().unwrap_or(0);
        piece.bound = piece.bound.max(bound);
    });
    let bound = pieces.iter().map(|piece| piece.bound).max().unwrap_or(0);
    if slots.len() < bound {
        slots.resize(bound, Slot::default());
    }
    let write = |part: &mut [Slot], first: usize| {
        for piece in pieces.iter() {
            let mut followers = piece.followers.iter();
            for lead in &piece.leads {
                for (k, &follower) in followers.by_ref().take(lead.followers as usize).enumerate() {
                    if let Some(entry) = part.get_mut((follower.index() as usize).wrapping_sub(first)) {
                        *entry = lead.slot(k, follower, stamp);
                    }
                }
            }
        }
    };
    let middle = slots.len() / 2;
    let (front, back) = slots.split_at_mut(middle);
    crate::ecs::join(|| write(front, 0), || write(back, middle));
}

/// A captain as its followers' entries need it: where it stands, its velocity (their lead) and heading, and how
/// many followers it has.
#[derive(Clone, Copy, Debug)]
struct Lead {
    at: Vec2,
    lead: Vec2,
    heading: Vec2,
    followers: u32,
}

impl Lead {
    fn new(at: Vec2, lead: Vec2, followers: usize) -> Self {
        Lead { at, lead, heading: lead.try_normalize().unwrap_or(Vec2::X), followers: followers as u32 }
    }

    /// The entry of `follower`, the `k`-th of the squad: its slot behind the captain, in frame `stamp`.
    #[inline]
    fn slot(&self, k: usize, follower: Entity, stamp: u32) -> Slot {
        Slot {
            generation: follower.generation().get(),
            stamp,
            target: self.at + slot_offset(self.heading, k),
            lead: self.lead,
        }
    }
}

/// The followers' half of steering: every follower steers toward its slot from [`plan_formation`], its lead (the
/// captain's velocity) plus a pull toward the slot, at most twice a fighter's speed. The walk is over every mover
/// (position and velocity), in pieces on the pool: the velocity pool drives and is written by row, so the pieces
/// split on every layout. A mover steers only if its index's entry is this frame's and names it.
pub fn keep_formation(
    config: Res<SimConfig>,
    formation: Res<Formation>,
    mut movers: Query<(&Position, &mut Velocity)>,
) {
    let most = config.fighter_speed * 2.0;
    let Formation { slots, stamp, .. } = &*formation;
    let stamp = *stamp;
    movers.par_for_each(|e, (position, v)| {
        let mine = |slot: &&Slot| slot.stamp == stamp && slot.generation == e.generation().get();
        if let Some(slot) = slots.get(e.index() as usize).filter(mine) {
            v.0 = (slot.lead + (slot.target - position.0) * PULL).clamp_length_max(most);
        }
    });
}

/// The squads' steering table ([`plan_formation`] writes it, [`keep_formation`] reads it): an entry per entity
/// index, kept between frames; an entry is this frame's if its stamp is. Nothing in it outlives a frame's use, so
/// it is not saved.
#[derive(Debug, Default)]
pub struct Formation {
    slots: Vec<Slot>,
    /// The current frame's stamp (0: no frame yet).
    stamp: u32,
    /// What each piece of captains listed, in piece order (kept for their memory).
    pieces: Vec<Piece>,
}

/// A follower's slot and its captain's velocity, in the frame `stamp`: the entry at the follower's index, naming
/// it by its generation (0: no entity's).
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    generation: u32,
    stamp: u32,
    target: Vec2,
    lead: Vec2,
}

/// One piece of captains: their leads in walk order, their followers' handles one squad after another, and the
/// table length the followers need.
#[derive(Debug, Default)]
struct Piece {
    leads: Vec<Lead>,
    followers: Vec<Entity>,
    bound: usize,
}

impl Piece {
    fn clear(&mut self) {
        self.leads.clear();
        self.followers.clear();
        self.bound = 0;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecs::Backend;

    fn mover(world: &mut World, at: Vec2, v: Vec2) -> Entity {
        world.spawn((Position(at), Velocity(v))).unwrap()
    }

    /// What `keep_formation` makes of follower `k` at `at` behind a captain at `captain` moving at `lead`.
    fn steered(config: &SimConfig, captain: Vec2, lead: Vec2, k: usize, at: Vec2) -> Vec2 {
        let heading = lead.try_normalize().unwrap_or(Vec2::X);
        let target = captain + slot_offset(heading, k);
        (lead + (target - at) * PULL).clamp_length_max(config.fighter_speed * 2.0)
    }

    fn steering(world: World, threads: usize) -> App {
        let mut app = App::with_world(world);
        app.set_threads(threads);
        app.insert_resource(Formation::default());
        app.add_systems(Stage::Update, (plan_formation, keep_formation).chain());
        app
    }

    #[test]
    fn followers_steer_to_their_slots_and_only_followers_do() {
        for backend in Backend::ALL {
            let mut world = World::new();
            world.set_backend(backend);
            let config = SimConfig::with_population(10);
            world.insert_resource(config.clone());
            let (at, lead) = (Vec2::new(200.0, 200.0), Vec2::new(30.0, 40.0));
            let captain = mover(&mut world, at, lead);
            let places = [Vec2::new(190.0, 180.0), Vec2::new(230.0, 205.0), Vec2::new(150.0, 260.0)];
            let followers: Vec<Entity> = places.iter().map(|&p| mover(&mut world, p, Vec2::new(-5.0, 1.0))).collect();
            for &f in &followers {
                world.add_child(captain, f).unwrap();
            }
            // A loose mover, and a follower of a captain that is itself a follower: neither is steered.
            let loose = mover(&mut world, Vec2::new(10.0, 10.0), Vec2::new(7.0, 0.0));
            let under = mover(&mut world, Vec2::new(300.0, 300.0), Vec2::new(0.0, 7.0));
            world.add_child(followers[0], under).unwrap();
            let mut app = steering(world, 1);
            app.update();
            let v = |app: &App, e: Entity| app.world.get::<Velocity>(e).unwrap().0;
            for (k, (&f, &p)) in followers.iter().zip(&places).enumerate() {
                assert_eq!(v(&app, f), steered(&config, at, lead, k, p), "{backend}: follower {k}");
            }
            assert_eq!(v(&app, captain), lead, "{backend}");
            assert_eq!(v(&app, loose), Vec2::new(7.0, 0.0), "{backend}");
            assert_eq!(v(&app, under), Vec2::new(0.0, 7.0), "{backend}");

            // The second follower leaves: last frame's entry for it is not this frame's, so it is left alone, and
            // the third moves up to slot 1.
            app.world.remove_child(captain, followers[1]).unwrap();
            app.world.get_mut::<Velocity>(followers[1]).unwrap().0 = Vec2::new(1.0, 2.0);
            app.update();
            assert_eq!(v(&app, followers[1]), Vec2::new(1.0, 2.0), "{backend}: a former follower");
            assert_eq!(v(&app, followers[2]), steered(&config, at, lead, 1, places[2]), "{backend}");
        }
    }

    #[test]
    fn two_threads_steer_as_one() {
        let run = |backend: Backend, threads: usize| {
            let mut world = World::new();
            world.set_backend(backend);
            world.set_piece_rows(16);
            world.insert_resource(SimConfig::with_population(10));
            let place = |i: usize| Vec2::new((i * 37 % 500) as f32, (i * 91 % 400) as f32);
            let mut captains = Vec::new();
            for i in 0..1500 {
                let e = mover(&mut world, place(i), Vec2::new((i % 13) as f32 - 6.0, (i % 7) as f32 - 3.0));
                // Every seventh opens a squad; of the six after it, those not a multiple of five follow it.
                match i % 7 {
                    0 => captains.push(e),
                    _ if i % 5 == 0 => {} // loose
                    _ => world.add_child(*captains.last().unwrap(), e).unwrap(),
                }
            }
            let mut app = steering(world, threads);
            let mut out = Vec::new();
            for frame in 0..3 {
                app.update();
                app.world.query::<&Velocity>().for_each(|e, v| out.push((frame, e, v.0.x.to_bits(), v.0.y.to_bits())));
            }
            out.sort_unstable();
            out
        };
        for backend in Backend::ALL {
            let one = run(backend, 1);
            assert_eq!(one.len(), 3 * 1500);
            for threads in [2, 3] {
                let other = run(backend, threads);
                let differ = one.iter().zip(&other).filter(|(a, b)| a != b).count();
                assert_eq!((other.len(), differ), (one.len(), 0), "{backend}, {threads} threads");
            }
        }
    }
}
