//! Rollback for the simulation: the types a checkpoint of its world holds ([`crate::ecs::rollback`]). Every
//! component of [`TABLE`] and every resource the frame reads or writes, so a world restored from a checkpoint runs
//! on exactly as the saved one did (`tests/sim.rs` checks it on every backend and thread count).

use super::collision::Broadphase;
use super::components::Team;
use super::components::TABLE;
use super::config::{Shortfall, SimConfig, SimRng, SimStats, StaleCatches, TeamBursts};
use super::lifecycle::Hurt;
use super::rounds::{Phase, Round};
use super::spawn::OpenSquads;
use crate::app::{App, NextState, State};
use crate::ecs::{Checkpoint, RollbackError};

/// Registers the simulation's types for checkpoints. Added last by [`super::SimPlugin`], after every type is in.
pub fn plugin(app: &mut App) {
    let world = &mut app.world;
    for kept in TABLE {
        if let Some(register) = kept.rollback {
            register(world);
        }
    }
    world
        .rollback_resource::<SimConfig>()
        .rollback_resource::<SimRng>()
        .rollback_resource::<SimStats>()
        .rollback_resource::<super::config::SpawnRequests>()
        .rollback_resource::<TeamBursts>()
        .rollback_resource::<OpenSquads>()
        .rollback_resource::<Broadphase>()
        .rollback_resource::<StaleCatches>()
        .rollback_resource::<Shortfall>()
        .rollback_resource::<Hurt>()
        .rollback_resource::<Round>()
        .rollback_resource::<State<Phase>>()
        .rollback_resource::<NextState<Phase>>()
        .rollback_resource::<super::stress::Waves>();
}

/// What one player does in a frame, as GGRS carries it: a burst asked for at an arena point, or nothing; with the
/// fingerprint of the run's settings, so a peer running other settings is caught at its first input.
/// Fixed-size (GGRS delta-encodes inputs against each other, so every input encodes to the same length).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlayerInput {
    /// Whether the player clicked.
    pub clicked: bool,
    /// Where (arena units), if they did.
    pub at: [f32; 2],
    /// [`fingerprint`] of the sender's world (set by the loop that adds the input; 0 in GGRS's own "no input").
    pub settings: u32,
}

impl PlayerInput {
    /// A click at `at`, or none.
    pub fn burst(at: Option<glam::Vec2>) -> Self {
        Self { clicked: at.is_some(), at: at.unwrap_or_default().to_array(), settings: 0 }
    }

    /// Where the player clicked, if they did.
    pub fn clicked_at(&self) -> Option<glam::Vec2> {
        self.clicked.then(|| glam::Vec2::from_array(self.at))
    }
}

/// A fingerprint of what a run depends on besides its inputs: the settings, the seed and the capacity (not the
/// backend or the thread count, which do not change the world).
pub fn fingerprint(world: &crate::ecs::World) -> u32 {
    let config = serde_json::to_string(world.resource::<SimConfig>()).expect("settings serialize");
    let seed = world.resource::<SimRng>().seed();
    let mut hash = super::digest::mix(seed ^ u64::from(world.capacity()));
    for chunk in config.as_bytes().chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        hash = super::digest::mix(hash ^ u64::from_le_bytes(word));
    }
    (hash as u32).max(1)
}

/// The simulation as a GGRS game: its inputs, its state (a [`Checkpoint`]) and its peers' addresses.
#[derive(Debug)]
pub struct GgrsConfig;

impl ggrs::Config for GgrsConfig {
    type Input = PlayerInput;
    type State = Checkpoint;
    type Address = std::net::SocketAddr;
}

/// Players of a GGRS game.
pub const PLAYERS: usize = 2;

/// A player's team: player 0 plays red, player 1 blue.
pub fn team(player: usize) -> Option<Team> {
    [Team::Red, Team::Blue].get(player).copied()
}

/// Why a rollback run stopped.
#[derive(Debug)]
pub enum SyncError {
    /// Resimulating gave another checksum than the first run for a frame: the game is not deterministic.
    Mismatch {
        /// The frame GGRS was at.
        frame: i32,
        /// The frames whose checksums differed.
        frames: Vec<i32>,
    },
    /// The world could not be saved or restored.
    Rollback(RollbackError),
    /// The other peer runs other settings (another seed, population, scenario or capacity).
    OtherSettings,
    /// GGRS refused a request (a bad setting).
    Ggrs(String),
}

impl std::fmt::Display for SyncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SyncError::Mismatch { frame, frames } => write!(
                f,
                "desync: at frame {frame}, resimulating frames {frames:?} gave other checksums than the first run"
            ),
            SyncError::Rollback(error) => error.fmt(f),
            SyncError::OtherSettings => write!(
                f,
                "the other peer runs other settings (seed, population, scenario or capacity): start both alike"
            ),
            SyncError::Ggrs(error) => write!(f, "GGRS: {error}"),
        }
    }
}

impl std::error::Error for SyncError {}

impl From<RollbackError> for SyncError {
    fn from(error: RollbackError) -> Self {
        SyncError::Rollback(error)
    }
}

impl From<ggrs::GgrsError> for SyncError {
    fn from(error: ggrs::GgrsError) -> Self {
        match error {
            ggrs::GgrsError::MismatchedChecksum { current_frame, mismatched_frames } => {
                SyncError::Mismatch { frame: current_frame, frames: mismatched_frames }
            }
            other => SyncError::Ggrs(other.to_string()),
        }
    }
}

/// The inputs of a scripted game (the `--synctest` run and the tests): each player clicks every 23 frames, player
/// 0 in the left quarter of `arena`, player 1 in the right one, 7 frames apart, a little lower each time.
pub fn scripted_input(arena: glam::Vec2, frame: u32, player: usize) -> PlayerInput {
    let clicks = frame % 23 == (player as u32 * 7) % 23;
    let x = if player == 0 { 0.2 } else { 0.8 } * arena.x;
    let y = (0.2 + 0.6 * ((frame / 23) % 10) as f32 / 10.0) * arena.y;
    PlayerInput::burst(clicks.then_some(glam::Vec2::new(x, y)))
}

/// The most frames a sync test rolls back each frame.
pub const MAX_CHECK_DISTANCE: usize = 8;

/// What a sync test did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncTested {
    /// Frames advanced (each then rolled back and resimulated).
    pub frames: u32,
    /// Frames simulated in all, resimulations included.
    pub simulated: u64,
    /// Checkpoints saved and restored.
    pub saves: u64,
    /// Restores.
    pub loads: u64,
}

impl SyncTested {
    /// The line a passed sync test prints (headless and window alike); `took`: its time, when timed.
    pub fn summary(
        &self,
        backend: crate::ecs::Backend,
        threads: usize,
        distance: usize,
        digest: u64,
        took: Option<std::time::Duration>,
    ) -> String {
        let took = took.map(|t| format!(" in {:.2} s", t.as_secs_f64())).unwrap_or_default();
        use super::net::counted;
        format!(
            "synctest {backend}, {}: {}, each rolled back {distance} and resimulated ({} simulated, {}, {}){took}; \
             no desync; digest {digest:016x}",
            counted(threads as u64, "thread"),
            counted(u64::from(self.frames), "frame"),
            counted(self.simulated, "frame"),
            counted(self.saves, "save"),
            counted(self.loads, "load")
        )
    }
}

/// Serves one GGRS request on `app`: saves a checkpoint with the digest as its checksum (returned with its frame),
/// restores one, or applies the players' inputs (bursts) and runs a frame. A confirmed input whose settings are not
/// `settings` stops it.
pub fn serve(
    app: &mut App,
    request: ggrs::GgrsRequest<GgrsConfig>,
    settings: u32,
) -> Result<Option<(i32, u64)>, SyncError> {
    match request {
        ggrs::GgrsRequest::SaveGameState { cell, frame } => {
            let digest = super::digest(&app.world);
            cell.save(frame, Some(app.world.checkpoint()?), Some(u128::from(digest)));
            return Ok(Some((frame, digest)));
        }
        ggrs::GgrsRequest::LoadGameState { cell, .. } => {
            let checkpoint = cell.load().expect("GGRS loads only what it saved");
            app.world.restore(&checkpoint)?;
        }
        ggrs::GgrsRequest::AdvanceFrame { inputs } => {
            let confirmed = inputs.iter().filter(|(_, status)| *status == ggrs::InputStatus::Confirmed);
            if confirmed.clone().any(|(input, _)| input.settings != settings) {
                return Err(SyncError::OtherSettings);
            }
            let bursts = app.world.resource_mut::<TeamBursts>();
            let clicks =
                inputs.iter().enumerate().filter_map(|(player, (input, _))| input.clicked_at().zip(team(player)));
            bursts.0.extend(clicks);
            app.update();
        }
    }
    Ok(None)
}

/// Runs `frames` frames of `app` in a GGRS sync test ([`SyncTester`]); `script` gives each player's input per
/// frame. Stops at the first mismatch.
pub fn sync_test(
    app: &mut App,
    frames: u32,
    check_distance: usize,
    script: impl Fn(u32, usize) -> PlayerInput,
) -> Result<SyncTested, SyncError> {
    let mut tester = SyncTester::new(app, check_distance)?;
    for frame in 0..frames {
        tester.advance(app, std::array::from_fn(|player| script(frame, player)))?;
    }
    Ok(tester.tested())
}

/// A GGRS sync test run a frame at a time: every frame is saved, then the last `check_distance` frames (1 to
/// [`MAX_CHECK_DISTANCE`]) are rolled back and resimulated, and their checksums (the world's digest) compared with
/// the first run's. Both players are local. The headless `--synctest` and the window's run it.
pub struct SyncTester {
    sync: ggrs::SyncTestSession<GgrsConfig>,
    settings: u32,
    tested: SyncTested,
    distance: usize,
}

impl SyncTester {
    /// A sync test of `app` rolling back `check_distance` frames every frame.
    pub fn new(app: &App, check_distance: usize) -> Result<Self, SyncError> {
        if !(1..=MAX_CHECK_DISTANCE).contains(&check_distance) {
            return Err(SyncError::Ggrs(format!(
                "the check distance is {check_distance}, not 1 to {MAX_CHECK_DISTANCE}"
            )));
        }
        let sync = ggrs::SessionBuilder::<GgrsConfig>::new()
            .with_num_players(PLAYERS)
            .with_max_prediction_window(check_distance + 1)
            .with_check_distance(check_distance)
            .start_synctest_session()?;
        let tested = SyncTested { frames: 0, simulated: 0, saves: 0, loads: 0 };
        Ok(Self { sync, settings: fingerprint(&app.world), tested, distance: check_distance })
    }

    /// One frame with the players' `inputs`: advanced, then rolled back and resimulated (once enough frames ran).
    pub fn advance(&mut self, app: &mut App, inputs: [PlayerInput; PLAYERS]) -> Result<(), SyncError> {
        for (player, input) in inputs.into_iter().enumerate() {
            self.sync.add_local_input(player, PlayerInput { settings: self.settings, ..input })?;
        }
        for request in self.sync.advance_frame()? {
            match &request {
                ggrs::GgrsRequest::SaveGameState { .. } => self.tested.saves += 1,
                ggrs::GgrsRequest::LoadGameState { .. } => self.tested.loads += 1,
                ggrs::GgrsRequest::AdvanceFrame { .. } => self.tested.simulated += 1,
            }
            serve(app, request, self.settings)?;
        }
        self.tested.frames += 1;
        Ok(())
    }

    /// What it did so far.
    pub fn tested(&self) -> SyncTested {
        self.tested
    }

    /// The frames rolled back each frame.
    pub fn distance(&self) -> usize {
        self.distance
    }
}
