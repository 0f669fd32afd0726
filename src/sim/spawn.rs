//! Spawning: the spawner keeps the fighter population at its target, and bursts at requested points. The
//! scenario decides where refills go: anywhere (`churn`), or each team on its own side heading for the middle
//! (`armies`).

use super::components::{Blue, FighterBundle, Health, Hunter, HunterBundle, Position, Red, Team, Velocity};
use super::config::{Draw, Scenario, SimConfig, SimRng, SimStats, SpawnRequests};
use super::squads::{slot_offset, SQUAD};
use crate::app::{App, Stage};
use crate::ecs::{Commands, Entity, World, WorldFull};
use glam::Vec2;
use rand::Rng;

/// Adds [`spawn_fighters`] to `PreUpdate`, in the group "spawning".
pub fn plugin(app: &mut App) {
    app.add_group(Stage::PreUpdate, "spawning", spawn_fighters);
}

/// Tops the population up toward the target (at most `spawn_per_frame` a frame) and serves burst requests.
/// When the world is full it stops for this frame and counts the fighters it asked for and did not get; it never
/// panics. The draws come from
/// the frame's spawn stream, in the order the spawns are recorded (no query decides it).
pub fn spawn_fighters(world: &mut World) {
    let fighters = world.query::<(&Health,)>().count() as u32;
    let config = world.resource::<SimConfig>().clone();
    let frame = world.resource::<SimStats>().frames;
    let mut rng = world.resource::<SimRng>().stream(frame, 0, Draw::Spawn);
    world.resource_scope::<SpawnRequests, _>(|world, requests| {
        let mut spawned = 0u64;
        let mut refused = 0u64;
        let mut commands = world.commands();
        let mut squads = Squads::default();
        let deficit = config.target_population.saturating_sub(fighters).min(config.spawn_per_frame);
        for _ in 0..deficit {
            let at = Vec2::new(rng.gen_range(0.0..config.arena.x), rng.gen_range(0.0..config.arena.y));
            match spawn_one(&mut commands, &mut rng, &config, at, Placement::Refill, &mut squads) {
                Ok(()) => spawned += 1,
                Err(_) => {
                    // This one and the rest of the frame's refill.
                    refused += u64::from(deficit) - spawned;
                    break;
                }
            }
        }
        'bursts: for (served, &center) in requests.0.iter().enumerate() {
            for placed in 0..config.burst {
                let offset = Vec2::from_angle(rng.gen_range(0.0..std::f32::consts::TAU)) * rng.gen_range(0.0..40.0);
                let at = (center + offset).clamp(Vec2::ZERO, config.arena);
                match spawn_one(&mut commands, &mut rng, &config, at, Placement::Burst, &mut squads) {
                    Ok(()) => spawned += 1,
                    Err(_) => {
                        // This one, the rest of its burst and every burst after it.
                        let asked = u64::from(config.burst) * (requests.0.len() - served) as u64;
                        refused += asked - u64::from(placed);
                        break 'bursts;
                    }
                }
            }
        }
        requests.0.clear();
        let stats = world.resource_mut::<SimStats>();
        stats.spawned += spawned;
        stats.spawn_refused += refused;
        stats.fighters = fighters;
    });
}

/// The squad of each team open to fighters spawned this frame: its captain, where it starts and its heading,
/// and how many have joined. A hunter opens its team's squad; any other fighter joins its team's open squad (it
/// starts at its slot), which closes when full.
#[derive(Default)]
struct Squads([Option<Open>; 2]);

#[derive(Clone, Copy)]
struct Open {
    captain: Entity,
    at: Vec2,
    heading: Vec2,
    joined: usize,
}

/// Why a fighter is spawned: a refill follows the scenario; a burst lands where it was asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placement {
    Refill,
    Burst,
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
    squads: &mut Squads,
) -> Result<(), WorldFull> {
    let team = if rng.gen_bool(0.5) { Team::Red } else { Team::Blue };
    let hunter = rng.gen_range(0..config.hunter_every.max(1)) == 0;
    let (at, heading) = match (config.scenario, placement) {
        (Scenario::Armies, Placement::Refill) => {
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
    let open = &mut squads.0[team as usize];
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
    }?;
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
    Ok(())
}
