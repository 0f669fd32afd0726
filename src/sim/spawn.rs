//! Spawning: the spawner keeps the fighter population at its target, and bursts at requested points. The
//! scenario decides where refills go: anywhere (`churn`), or each team on its own side heading for the middle
//! (`armies`).

use super::components::{Blue, FighterBundle, Health, Hunter, HunterBundle, Position, Red, Team, Velocity};
use super::config::{Draw, Scenario, Shortfall, SimConfig, SimRng, SimStats, SpawnRequests, TeamBursts};
use super::rounds::Round;
use super::squads::{slot_offset, SQUAD};
use crate::app::{Allocator, App, Query, Res, ResMut, Stage};
use crate::ecs::{Commands, Entity, HoldsEntities};
use glam::Vec2;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Adds [`spawn_fighters`] to `PreUpdate`, in the group "spawning", with the squads it keeps open across frames
/// ([`OpenSquads`], which holds captains' handles) and the [`Shortfall`] it reports.
pub fn plugin(app: &mut App) {
    app.world.insert_resource(Shortfall::default());
    app.world.register_entity_holder::<OpenSquads>();
    if !app.world.contains_resource::<OpenSquads>() {
        app.world.insert_resource(OpenSquads::default());
    }
    app.add_group(Stage::PreUpdate, "spawning", spawn_fighters);
}

/// Tops the population up toward the target (at most `spawn_per_frame` a frame) and serves burst requests.
/// When the world is full it stops for this frame: a burst's fighters it had no room for are counted in
/// [`SimStats::spawn_refused`], how far the refill stays below the target in [`Shortfall`]; it never panics. The draws come from the frame's spawn stream, in the order the spawns are recorded (no query decides
/// it).
///
/// Spawns are recorded in the system's own buffer, so they take their handles when the frame's commands apply; a
/// hunter's squad stays open across frames with its captain's (deferred, then real) handle kept in
/// [`OpenSquads`]. Fighters the world has no room for are refused here, as the apply would refuse them.
pub fn spawn_fighters(
    (config, rng): (Res<SimConfig>, Res<SimRng>),
    (mut stats, mut round, mut open): (ResMut<SimStats>, ResMut<Round>, ResMut<OpenSquads>),
    (mut requests, mut team_bursts, mut shortfall): (ResMut<SpawnRequests>, ResMut<TeamBursts>, ResMut<Shortfall>),
    mut alive: Query<&Health>,
    mut captains: Query<(&Position, &Velocity)>,
    allocator: Allocator,
    mut commands: Commands,
) {
    let fighters = alive.count() as u32;
    let mut room = allocator.capacity().saturating_sub(allocator.len());
    let mut rng = rng.stream(stats.frames, 0, Draw::Spawn);
    // An open squad follows its captain: it closes if the captain died; else its followers line up behind where
    // the captain is now.
    for squad in open.0.iter_mut() {
        if let Some(s) = squad {
            match captains.get(s.captain) {
                Ok((at, velocity)) => {
                    s.at = at.0;
                    s.heading = velocity.0.try_normalize().unwrap_or(s.heading);
                }
                Err(_) => *squad = None,
            }
        }
    }
    let squads = &mut open.0;
    let mut spawned = 0u64;
    let mut refused = 0u64;
    // (A battle's armies muster once a round: refills stop at the target population.)
    let wanted = config.target_population.saturating_sub(fighters).min(round.refill_room(&config));
    let deficit = wanted.min(config.spawn_per_frame);
    shortfall.0 = 0;
    for _ in 0..deficit {
        let at = Vec2::new(rng.gen_range(0.0..config.arena.x), rng.gen_range(0.0..config.arena.y));
        if room == 0 {
            // This one and the rest below the target: the world holds the population there.
            shortfall.0 = wanted - spawned as u32;
            break;
        }
        spawn_one(&mut commands, &mut rng, &config, at, Placement::Refill, squads);
        room -= 1;
        spawned += 1;
    }
    let (plain, teams) = (&requests.0, &team_bursts.0);
    let bursts = plain.iter().map(|&at| (at, None)).chain(teams.iter().map(|&(at, team)| (at, Some(team))));
    let asked = plain.len() + teams.len();
    'bursts: for (served, (center, team)) in bursts.enumerate() {
        for placed in 0..config.burst {
            let offset = Vec2::from_angle(rng.gen_range(0.0..std::f32::consts::TAU)) * rng.gen_range(0.0..40.0);
            let at = (center + offset).clamp(Vec2::ZERO, config.arena);
            if room == 0 {
                // This one, the rest of its burst and every burst after it.
                let asked = u64::from(config.burst) * (asked - served) as u64;
                refused += asked - u64::from(placed);
                break 'bursts;
            }
            spawn_one(&mut commands, &mut rng, &config, at, Placement::Burst(team), squads);
            room -= 1;
            spawned += 1;
        }
    }
    requests.0.clear();
    team_bursts.0.clear();
    round.note_refills(&config, spawned.min(u64::from(deficit)) as u32);
    stats.spawned += spawned;
    stats.spawn_refused += refused;
    stats.fighters = fighters;
}

/// The squad of each team open to new fighters: its captain, where the captain is and where it heads, and how
/// many have joined. A hunter opens its team's squad; any other fighter joins its team's open squad (it starts at
/// its slot), which closes when full or when its captain dies. Kept across frames, so the captain's handle is
/// deferred in the frame it was spawned and real after: the type is registered as holding entities.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, HoldsEntities)]
pub struct OpenSquads(#[entities] pub [Option<Open>; 2]);

/// One open squad ([`OpenSquads`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, HoldsEntities)]
pub struct Open {
    /// The captain.
    #[entities]
    pub captain: Entity,
    /// Where the captain is (as of this frame's start, or its spawn).
    pub at: Vec2,
    /// Where it heads (a unit vector).
    pub heading: Vec2,
    /// Followers that joined.
    pub joined: usize,
}

/// Why a fighter is spawned: a refill follows the scenario; a burst lands where it was asked for, on a player's
/// team if it was a player's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placement {
    Refill,
    Burst(Option<Team>),
}

/// How far (radians) an army's heading strays from straight at the other side: enough to spread the front, little
/// enough that it closes at most of full speed.
/// The share of the arena's width each army starts and refills in: a tenth of the width lies between them.
const ARMY_SIDE: f32 = 0.45;
const ARMY_SPREAD: f32 = 0.6;

/// Spawns one fighter at `at` (uniform over the arena for a refill), drawing its team, role and heading. The
/// `churn` draws are exactly those of the runs before scenarios existed, so their digests are unchanged.
fn spawn_one(
    commands: &mut Commands<'_>,
    rng: &mut impl Rng,
    config: &SimConfig,
    at: Vec2,
    placement: Placement,
    squads: &mut [Option<Open>; 2],
) {
    // (Drawn even for a player's burst, so the random stream does not depend on who asked.)
    let drawn = if rng.gen_bool(0.5) { Team::Red } else { Team::Blue };
    let team = match placement {
        Placement::Burst(Some(team)) => team,
        _ => drawn,
    };
    let hunter = rng.gen_range(0..config.hunter_every.max(1)) == 0;
    let (at, heading) = match (config.scenario, placement) {
        (Scenario::Armies | Scenario::Battle, Placement::Refill) => {
            // The uniform x squeezed into the team's side (a narrow gap between, so the fronts meet within seconds);
            // the heading toward the other side, spread a little.
            let spread = rng.gen_range(-ARMY_SPREAD..ARMY_SPREAD);
            match team {
                Team::Red => (Vec2::new(at.x * ARMY_SIDE, at.y), Vec2::from_angle(spread)),
                Team::Blue => (
                    Vec2::new(config.arena.x - at.x * ARMY_SIDE, at.y),
                    Vec2::from_angle(std::f32::consts::PI + spread),
                ),
            }
        }
        _ => (at, Vec2::from_angle(rng.gen_range(0.0..std::f32::consts::TAU))),
    };
    // A follower starts at its slot behind its captain (the draws above are made either way, so the random
    // streams do not depend on squads).
    let open = &mut squads[team as usize];
    let squad = match open {
        Some(squad) if !hunter => Some(squad),
        _ => None,
    };
    let at = squad.as_ref().map_or(at, |s| (s.at + slot_offset(s.heading, s.joined)).clamp(Vec2::ZERO, config.arena));
    let speed = if hunter { config.hunter_speed } else { config.fighter_speed };
    let (position, velocity, health) = (Position(at), Velocity(heading * speed), Health(config.max_health));
    let entity = match (team, hunter) {
        (Team::Red, false) => commands.spawn(FighterBundle { position, velocity, health, team: Red }),
        (Team::Blue, false) => commands.spawn(FighterBundle { position, velocity, health, team: Blue }),
        (Team::Red, true) => commands
            .spawn(HunterBundle { fighter: FighterBundle { position, velocity, health, team: Red }, hunter: Hunter }),
        (Team::Blue, true) => commands
            .spawn(HunterBundle { fighter: FighterBundle { position, velocity, health, team: Blue }, hunter: Hunter }),
    }
    .expect("a system's buffer takes 16 million deferred spawns between applies");
    match squad {
        Some(squad) => {
            commands.add_child(squad.captain, entity);
            squad.joined += 1;
            if squad.joined == SQUAD {
                *open = None;
            }
        }
        None if hunter => *open = Some(Open { captain: entity, at, heading, joined: 0 }),
        None => {}
    }
}
