//! Rounds, the `battle` scenario: the game's [`Phase`] state. Each round the two armies muster once (refills stop
//! when the round has spawned the target population), fight until a team is wiped out or the round's time runs
//! out (the larger team wins), then the field stays for [`BREAK`] frames and the next round starts: every fighter
//! left falls, and the armies muster again. A player can start the next round at any time ([`Input::NextRound`]).
//!
//! The other scenarios stay in [`Phase::Fighting`] for good; none of these systems runs in them.
//!
//! [`Input::NextRound`]: super::play::Input::NextRound

use super::collision::Broadphase;
use super::components::{Blue, Health, Red, Team};
use super::config::{Scenario, SimConfig, SimStats};
use super::lifecycle::count_frame;
use super::squads::Fallen;
use crate::app::{in_state, resource_matches, App, Commands, Condition, NextState, OnEnter, OrderSystems};
use crate::app::{Query, Res, ResMut, Stage};
use crate::ecs::Entity;
use serde::{Deserialize, Serialize};

/// Frames a round lasts at most: then the larger team wins (a minute of simulated time).
pub const ROUND_FRAMES: u64 = 60 * 60;
/// Frames between a round's end and the next round (three seconds).
pub const BREAK: u64 = 3 * 60;

/// Where the game is (a state: [`crate::app::state`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// A round is on (always, outside the `battle` scenario).
    #[default]
    Fighting,
    /// The round is over; the next starts after [`BREAK`] frames.
    Over,
}

/// The rounds so far and the one on (a resource, saved in snapshots).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Round {
    /// The round on (or just over), from 1; 0 before the first.
    pub number: u32,
    /// Fighters the spawner refilled this round (it stops at the target population).
    pub mustered: u32,
    /// The frame ([`SimStats::frames`]) the round started at.
    pub started_at: u64,
    /// The frame it ended at, once over.
    pub ended_at: u64,
    /// The last round's winner (`None`: a draw, or none over yet).
    pub winner: Option<Winner>,
    /// Rounds won by red and by blue.
    pub wins: [u32; 2],
}

/// Who won a round, and with how many fighters left.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Winner {
    /// The side.
    pub team: Team,
    /// Its fighters left.
    pub left: u32,
}

impl Round {
    /// How many refills the spawner may still make this round: the target less those mustered in the `battle`
    /// scenario, no limit outside it.
    pub fn refill_room(&self, config: &SimConfig) -> u32 {
        match config.scenario {
            Scenario::Battle => config.target_population.saturating_sub(self.mustered),
            _ => u32::MAX,
        }
    }

    /// Counts `refilled` fighters toward the round's muster (in the `battle` scenario).
    pub fn note_refills(&mut self, config: &SimConfig, refilled: u32) {
        if config.scenario == Scenario::Battle {
            self.mustered += refilled;
        }
    }
}

/// Holds in the `battle` scenario.
pub fn battle() -> Condition {
    resource_matches(|config: &SimConfig| config.scenario == Scenario::Battle)
}

/// Adds the [`Phase`] state and the [`Round`] resource, and the rounds' systems: [`start_round`] on entering
/// [`Phase::Fighting`], [`judge_round`] and [`call_next_round`] at the end of the frame (`Last`, after the frame
/// is counted). All of them only in the `battle` scenario.
pub fn plugin(app: &mut App) {
    if !app.world.contains_resource::<Round>() {
        app.insert_resource(Round::default());
    }
    app.init_state(Phase::Fighting);
    app.add_systems(OnEnter(Phase::Fighting), start_round.run_if(battle()));
    app.add_systems(
        Stage::Last,
        (
            judge_round.run_if(battle().and(in_state(Phase::Fighting))),
            call_next_round.run_if(battle().and(in_state(Phase::Over))),
        )
            .chain()
            .after(count_frame),
    );
}

/// A new round: every fighter left falls (at zero health, through the same handler as a death: its squad settled,
/// its particles thrown, its despawn), in handle order, and the armies muster again (the spawner refills from the
/// next `PreUpdate`).
pub fn start_round(
    mut round: ResMut<Round>,
    mut stats: ResMut<SimStats>,
    config: Res<SimConfig>,
    mut broadphase: ResMut<Broadphase>,
    mut fighters: Query<&mut Health>,
    mut commands: Commands,
) {
    let mut left: Vec<Entity> = Vec::new();
    fighters.for_each(|e, health| {
        health.0 = 0;
        left.push(e);
    });
    left.sort_unstable_by_key(|e| e.index());
    for e in left {
        broadphase.forget(e);
        commands.insert(e, Fallen);
        stats.particles += u64::from(config.particles_per_death);
    }
    round.number += 1;
    round.mustered = 0;
    round.started_at = stats.frames;
}

/// Ends the round when the armies have mustered and a team is wiped out, or when the round's time is up (the
/// larger team wins; equal: a draw).
pub fn judge_round(
    mut round: ResMut<Round>,
    stats: Res<SimStats>,
    config: Res<SimConfig>,
    mut red: Query<&Red>,
    mut blue: Query<&Blue>,
    mut next: ResMut<NextState<Phase>>,
) {
    if round.refill_room(&config) > 0 {
        return;
    }
    let (red, blue) = (red.count() as u32, blue.count() as u32);
    let out_of_time = stats.frames - round.started_at >= ROUND_FRAMES;
    if red > 0 && blue > 0 && !out_of_time {
        return;
    }
    round.winner = match red.cmp(&blue) {
        std::cmp::Ordering::Greater => Some(Winner { team: Team::Red, left: red }),
        std::cmp::Ordering::Less => Some(Winner { team: Team::Blue, left: blue }),
        std::cmp::Ordering::Equal => None,
    };
    if let Some(winner) = round.winner {
        round.wins[winner.team as usize] += 1;
    }
    round.ended_at = stats.frames;
    next.set(Phase::Over);
}

/// Starts the next round [`BREAK`] frames after the last ended.
pub fn call_next_round(round: Res<Round>, stats: Res<SimStats>, mut next: ResMut<NextState<Phase>>) {
    if stats.frames - round.ended_at >= BREAK {
        next.set(Phase::Fighting);
    }
}
