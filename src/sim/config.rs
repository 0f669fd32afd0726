//! Settings, the random generator, statistics and scratch buffers: the simulation's resources.

use super::digest::mix;
use glam::Vec2;
use rand::RngCore;
use serde::{Deserialize, Serialize};

/// The fixed time step: the simulation advances 1/60 s per frame whatever the display does.
pub const DT: f32 = 1.0 / 60.0;

/// A fighter's health in the `stress` scenario: ten times the others', so a ramp's waves add up (at the others'
/// health the front kills as fast as a ramp adds, and the population stalls near 30,000 in 1920 x 1080).
pub const STRESS_HEALTH: i32 = 1_000;

/// Settings of one run. A run depends only on these and the seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimConfig {
    /// Arena size in units; the camera fits it to the window.
    pub arena: Vec2,
    /// The spawner keeps this many fighters alive.
    pub target_population: u32,
    /// The most fighters the spawner adds per frame (refill rate).
    pub spawn_per_frame: u32,
    /// One fighter in `hunter_every` is a hunter.
    pub hunter_every: u32,
    /// Fighter radius; fighters of opposite teams closer than two radii fight.
    pub radius: f32,
    /// Wandering speed, units per second.
    pub fighter_speed: f32,
    /// Chasing speed, units per second.
    pub hunter_speed: f32,
    /// Health of a new fighter.
    pub max_health: i32,
    /// Health lost per frame per enemy in contact.
    pub damage: i32,
    /// Particles per death.
    pub particles_per_death: u32,
    /// Frames a particle lives.
    pub particle_life: u16,
    /// Fighters a click spawns.
    pub burst: u32,
    /// Broadphase cell size, at least two radii (so contacts lie in the 3 x 3 cells around a fighter). Larger cells
    /// mean fewer empty cells to sweep and more pairs to test; 8 units was fastest at the default density
    /// (measured 6 / 8 / 12 / 16 / 24 with the headless report).
    pub cell_size: f32,
    /// How far (in grid cells) a hunter looks for a new target.
    pub search_cells: i32,
    /// Sort the velocity and health pools into the position pool's order every this many frames (sparse-set
    /// backend only; 0 = never), so movement and collision walk memory in order.
    pub align_every: u32,
    /// Where the spawner puts fighters. Last, and `Churn` when absent, so JSON settings written before it existed
    /// (recordings, JSON snapshots) still read, as the run they were.
    #[serde(default)]
    pub scenario: Scenario,
}

/// Where the spawner puts new fighters, and which way they head.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// A stress test of spawning and dying: both teams anywhere in the arena, heading anywhere, so fights, deaths
    /// and refills never stop. The frame where the storage layouts' spawn and despawn costs show most. (Named
    /// `mixed` in files and flags written before; that name still reads.)
    #[default]
    #[serde(alias = "mixed")]
    Churn,
    /// Red in the left 45 % of the arena, blue in the right 45 % (refills too), heading for the middle: two armies
    /// meet in a front within seconds. Bursts still land where they are asked for.
    Armies,
    /// Rounds ([`crate::sim::rounds`]): the armies muster once, without refills, and fight until a team is wiped
    /// out (or the round's time runs out); then the next round starts.
    Battle,
    /// A stress test of the whole frame ([`crate::sim::stress`]): the target population is spawned once, at the
    /// first frame, as waves at points drawn from the seed; after that waves are the only source of fighters (no
    /// refills), each of one team and numbered ([`crate::sim::components::Wave`]), and the fighters move, fight
    /// and die as in every scenario.
    Stress,
}

impl Scenario {
    /// Every scenario, in the order the help lists them.
    pub const ALL: [Scenario; 4] = [Scenario::Churn, Scenario::Armies, Scenario::Battle, Scenario::Stress];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Churn => "churn",
            Scenario::Armies => "armies",
            Scenario::Battle => "battle",
            Scenario::Stress => "stress",
        }
    }

    /// What the scenario shows, in a line (the window's legend and the help print it).
    pub fn describe(self) -> &'static str {
        match self {
            Scenario::Churn => {
                "a stress test of spawning and dying: both teams everywhere, so fights, deaths and refills never stop"
            }
            Scenario::Armies => "two armies: red starts left, blue right, and they meet in a front",
            Scenario::Battle => "rounds: the armies muster once and fight until a team is wiped out, then again",
            Scenario::Stress => "waves: the population lands once in waves, then only held clicks add waves",
        }
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Scenario {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // `mixed`: the churn scenario's first name, still in scripts and files.
        let s = if s == "mixed" { "churn" } else { s };
        Scenario::ALL.into_iter().find(|scenario| scenario.name() == s).ok_or_else(|| {
            let known: Vec<&str> = Scenario::ALL.iter().map(|scenario| scenario.name()).collect();
            format!("unknown scenario `{s}` (known: {})", known.join(", "))
        })
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        Self::with_population(10_000)
    }
}

impl SimConfig {
    /// Defaults for a target population of `n` fighters. The arena is 1920 x 1080 up to 10,000 fighters and
    /// grows with the population beyond that (same aspect), so the crowd keeps the density of the default game:
    /// 100,000 fighters in a 1920 x 1080 arena would be a solid mass where everyone dies every second.
    pub fn with_population(n: u32) -> Self {
        let scale = (n as f32 / 10_000.0).sqrt().max(1.0);
        Self {
            arena: Vec2::new(1920.0, 1080.0) * scale,
            target_population: n,
            spawn_per_frame: (n / 20).max(50),
            hunter_every: 10,
            radius: 3.0,
            fighter_speed: 40.0,
            hunter_speed: 70.0,
            max_health: 100,
            damage: 5,
            particles_per_death: 3,
            particle_life: 24,
            burst: 200,
            cell_size: 8.0,
            search_cells: 8,
            align_every: 0,
            scenario: Scenario::Churn,
        }
    }

    /// Defaults for `n` fighters in `scenario`: [`SimConfig::with_population`], and in the `stress` scenario
    /// fighters of [`STRESS_HEALTH`] health, so waves pile up at the front instead of melting as they land.
    pub fn with_scenario(n: u32, scenario: Scenario) -> Self {
        let mut config = Self::with_population(n);
        config.scenario = scenario;
        if scenario == Scenario::Stress {
            config.max_health = STRESS_HEALTH;
        }
        config
    }

    /// A world capacity that fits the population, its particles and some bursts.
    /// In the `stress` scenario, room for [`crate::sim::stress::HEADROOM`] fighters more, which waves add.
    pub fn default_capacity(&self) -> u32 {
        let n = self.target_population as u64;
        let headroom = if self.scenario == Scenario::Stress { crate::sim::stress::HEADROOM as u64 } else { 0 };
        (n * 2 + self.spawn_per_frame as u64 * self.particles_per_death as u64 * self.particle_life as u64 + 4096)
            .saturating_add(headroom)
            .min(u32::MAX as u64) as u32
    }
}

/// The simulation's randomness, counter-based: every draw comes from a [`Stream`] keyed by (seed, frame, key,
/// [`Draw`]), where the key is the entity a system is visiting (or 0 for draws that belong to the frame). So what
/// an entity draws does not depend on which entities a query visited before it, and systems need not visit in
/// a fixed order to stay deterministic. The state is the seed alone: nothing advances between frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimRng {
    seed: u64,
}

/// What a stream is for: two draw sites with the same frame and key still draw independently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draw {
    /// The spawner's fighters of a frame (key 0).
    Spawn = 1,
    /// A dying fighter's particle burst (key: the fighter).
    Death = 2,
    /// The waves of a frame (key 0): their own stream, so waves draw nothing from the spawner's.
    Wave = 3,
}

impl SimRng {
    /// Randomness for the run of `seed`.
    pub fn new(seed: u64) -> Self {
        Self { seed }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The stream of `draw` for `key` in `frame`. Cheap (three hash steps): make one per entity.
    #[inline]
    pub fn stream(&self, frame: u64, key: u64, draw: Draw) -> Stream {
        Stream(mix(mix(mix(self.seed ^ ((draw as u64) << 56)) ^ frame) ^ key))
    }
}

/// One keyed stream: SplitMix64 (its state advances by a fixed odd constant and each output is a hash of the
/// state), a named algorithm whose output is fixed, so a seed means the same run on every machine and version
/// (`StdRng` promises neither).
#[derive(Clone, Debug)]
pub struct Stream(u64);

impl RngCore for Stream {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
    #[inline]
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

/// Counters the overlay and the report show. Totals since the start; `*_frame` for the last frame.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SimStats {
    /// Frames simulated.
    pub frames: u64,
    /// Fighters spawned.
    pub spawned: u64,
    /// Fighters died.
    pub deaths: u64,
    /// Particle spawns recorded.
    pub particles: u64,
    /// Fighters of bursts (clicks) the full world refused, each asked for once. A refill the full world refuses is
    /// not summed here (it is asked for again every frame): [`Shortfall`] says how far below the target the world
    /// is held. (Particle spawns are deferred, so a full world refuses them when the command buffer is applied:
    /// see [`World::command_totals`](crate::ecs::World::command_totals).) Named for the file format.
    pub spawn_refused: u64,
    /// Hunters whose target handle was stale (its enemy died, maybe its index reused).
    pub stale_caught: u64,
    /// Hunters that picked a new target.
    pub retargets: u64,
    /// Enemy contacts in the last frame.
    pub contacts_frame: u32,
    /// Live fighters at the last count.
    pub fighters: u32,
    /// Most entities alive or reserved at a frame's last stage.
    pub peak_live: u32,
}

/// Fighters below the target population that the last frame's refill could not spawn because the world was full
/// (0 when it had room, or when the refill rate, not the world, held it back): a state of the last frame, not a
/// sum over frames. Not saved: the next frame's refill sets it again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shortfall(pub u32);

/// Where hunters found their target handle stale in the last frame (their enemy had died, maybe its index was
/// reused): the hunters' positions, for the window to mark. Filled by `hunt_targets`, which clears it first and
/// keeps its buffer, so steady frames allocate nothing. Not saved: it describes one frame, not the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StaleCatches(pub Vec<Vec2>);

/// Requests from outside the simulation (the window): fighters to spawn around points.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpawnRequests(pub Vec<Vec2>);

/// A player's bursts in a game of two (GGRS, [`crate::sim::rollback`]): fighters of that player's team to spawn
/// around points. Served after [`SpawnRequests`], each fighter drawn as a burst's is (its drawn team replaced).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TeamBursts(pub Vec<(Vec2, crate::sim::components::Team)>);
