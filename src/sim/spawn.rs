//! Spawning: the spawner keeps the fighter population at its target, and bursts at requested points. The
//! scenario decides where refills go: anywhere (`churn`), or each team on its own side heading for the middle
//! (`armies`). In the `stress` scenario there are no refills: the population lands as waves
//! ([`crate::sim::stress`]).

use super::components::{Blue, FighterBundle, Health, Hunter, HunterBundle, Position, Red, Team, Velocity, Wave};
use super::config::{Draw, Scenario, Shortfall, SimConfig, SimRng, SimStats, SpawnRequests, TeamBursts};
use super::rounds::Round;
use super::squads::{slot_offset, SQUAD};
use super::stress::{Waves, WAVE, WAVE_RADIUS};
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
    if !app.world.contains_resource::<Waves>() {
        app.world.insert_resource(Waves::default());
    }
    app.add_group(Stage::PreUpdate, "spawning", spawn_fighters);
}

/// Tops the population up toward the target (at most `spawn_per_frame` a frame) and serves burst requests, then
/// waves ([`Waves`]; in the `stress` scenario the first frame queues the target population as waves, and there
/// are no refills).
/// When the world is full it stops for this frame: the fighters of bursts and waves it had no room for are counted
/// in [`SimStats::spawn_refused`] (each asked for once), how far the refill stays below the target in
/// [`Shortfall`]; it never panics. The draws come from the frame's spawn stream, in the order the spawns are
/// recorded (no query decides
/// it).
///
/// Spawns are recorded in the system's own buffer, so they take their handles when the frame's commands apply; a
/// hunter's squad stays open across frames with its captain's (deferred, then real) handle kept in
/// [`OpenSquads`]. Fighters the world has no room for are refused here, as the apply would refuse them.
pub fn spawn_fighters(
    (config, source): (Res<SimConfig>, Res<SimRng>),
    (mut stats, mut round, mut open): (ResMut<SimStats>, ResMut<Round>, ResMut<OpenSquads>),
    (mut requests, mut team_bursts): (ResMut<SpawnRequests>, ResMut<TeamBursts>),
    (mut waves, mut shortfall): (ResMut<Waves>, ResMut<Shortfall>),
    (mut alive, mut captains): (Query<&Health>, Query<(&Position, &Velocity)>),
    allocator: Allocator,
    mut commands: Commands,
) {
    let fighters = alive.count() as u32;
    let mut room = allocator.capacity().saturating_sub(allocator.len());
    let mut rng = source.stream(stats.frames, 0, Draw::Spawn);
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
    // (A stress run spawns its population once, as waves, and never refills.)
    let stress = config.scenario == Scenario::Stress;
    let wanted = config.target_population.saturating_sub(fighters).min(round.refill_room(&config));
    let wanted = if stress { 0 } else { wanted };
    let deficit = wanted.min(config.spawn_per_frame);
    shortfall.0 = 0;
    if stress && stats.frames == 0 {
        waves.queued = waves.queued.saturating_add(config.target_population);
    }
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
    if waves.held.is_some() || waves.queued > 0 {
        let mut rng = source.stream(stats.frames, 0, Draw::Wave);
        let (served, short) = serve_waves(&mut waves, &mut commands, &mut rng, &config, &mut room, squads);
        spawned += served;
        refused += short;
    }
    round.note_refills(&config, spawned.min(u64::from(deficit)) as u32);
    stats.spawned += spawned;
    stats.spawn_refused += refused;
    stats.fighters = fighters;
}

/// Serves the waves asked for: the queued fighters in waves of [`WAVE`] at points drawn from `rng`, then a wave at
/// the held point. Each wave is one team (even numbers red, odd blue), its fighters spread over a disc of
/// [`WAVE_RADIUS`] and numbered with [`Wave`]. What the world has no room for is refused, queue and all. Returns
/// the fighters spawned and refused.
fn serve_waves(
    waves: &mut Waves,
    commands: &mut Commands<'_>,
    rng: &mut impl Rng,
    config: &SimConfig,
    room: &mut u32,
    squads: &mut [Option<Open>; 2],
) -> (u64, u64) {
    let (mut spawned, mut refused) = (0u64, 0u64);
    // Centres keep the disc inside the arena (a quarter of a side at most, for the smallest arenas).
    let inset = Vec2::splat(WAVE_RADIUS).min(config.arena * 0.25);
    while waves.queued > 0 {
        let count = waves.queued.min(WAVE);
        waves.queued -= count;
        if *room == 0 {
            // This wave and the rest of the queue.
            refused += u64::from(count + std::mem::take(&mut waves.queued));
            break;
        }
        let centre = inset + (config.arena - 2.0 * inset) * Vec2::new(rng.gen::<f32>(), rng.gen::<f32>());
        let (landed, short) = land_wave(waves, commands, rng, config, (centre, count), room, squads);
        (spawned, refused) = (spawned + landed, refused + short);
    }
    if let Some(at) = waves.held {
        let centre = at.clamp(Vec2::ZERO, config.arena);
        let (landed, short) = land_wave(waves, commands, rng, config, (centre, WAVE), room, squads);
        (spawned, refused) = (spawned + landed, refused + short);
    }
    (spawned, refused)
}

/// One wave of `count` fighters around `centre`, numbered [`Waves::next`]; returns the fighters spawned and
/// refused (the world full).
fn land_wave(
    waves: &mut Waves,
    commands: &mut Commands<'_>,
    rng: &mut impl Rng,
    config: &SimConfig,
    (centre, count): (Vec2, u32),
    room: &mut u32,
    squads: &mut [Option<Open>; 2],
) -> (u64, u64) {
    let number = waves.next;
    waves.next = waves.next.wrapping_add(1);
    // The side it lands on: red's left half, blue's right.
    let team = if centre.x < config.arena.x / 2.0 { Team::Red } else { Team::Blue };
    // A wave keeps to itself: its fighters join only squads its own hunters open, so none starts at a slot behind
    // a captain of an earlier wave, far from where this one lands.
    squads[team as usize] = None;
    for placed in 0..count {
        if *room == 0 {
            return (u64::from(placed), u64::from(count - placed));
        }
        // Uniform over the disc (the square root spreads them evenly out to the rim).
        let offset =
            Vec2::from_angle(rng.gen_range(0.0..std::f32::consts::TAU)) * rng.gen::<f32>().sqrt() * WAVE_RADIUS;
        let at = (centre + offset).clamp(Vec2::ZERO, config.arena);
        let entity = spawn_one(commands, rng, config, at, Placement::Wave(team), squads);
        commands.insert(entity, Wave(number));
        *room -= 1;
    }
    (u64::from(count), 0)
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
/// team if it was a player's; a wave's fighter lands where it was asked for, on its wave's team, heading for the
/// other side.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placement {
    Refill,
    Burst(Option<Team>),
    Wave(Team),
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
) -> Entity {
    // (Drawn even for a player's burst, so the random stream does not depend on who asked.)
    let drawn = if rng.gen_bool(0.5) { Team::Red } else { Team::Blue };
    let team = match placement {
        Placement::Burst(Some(team)) | Placement::Wave(team) => team,
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
        // A wave lands where it was asked for and heads for the other side, spread a little.
        (_, Placement::Wave(team)) => {
            let spread = rng.gen_range(-ARMY_SPREAD..ARMY_SPREAD);
            let ahead = if team == Team::Red { 0.0 } else { std::f32::consts::PI };
            (at, Vec2::from_angle(ahead + spread))
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
    entity
}
