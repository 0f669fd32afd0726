//! The `stress` scenario, as players of sprite stress demos (bevymark, rustaceanmark) know it: waves of fighters,
//! a reproducible benchmark, and a ramp that finds how many fighters a frame budget holds. Unlike those demos it
//! stresses the whole ECS (the fighters move, fight and die as in every scenario), and a run is reproducible to
//! the bit: the same digest on every backend and thread count.
//!
//! - **Waves** ([`Waves`], served by `spawn_fighters`): the first frame lands the target population as waves of
//!   [`WAVE`] at points drawn from the seed; after that nothing refills. While the window's left button is held
//!   ([`Input::Wave`](super::play::Input::Wave)), a wave lands at the cursor every fixed step: [`WAVE`] x 60 =
//!   [`FIGHTERS_PER_SECOND`] fighters per simulated second. A ramp step queues waves at drawn points
//!   ([`Input::AddWaves`](super::play::Input::AddWaves)). Each wave is one team, the side it lands on (red left,
//!   blue right), heading for the other side; its fighters carry its number
//!   ([`Wave`](super::components::Wave)), which the window turns into the wave's tint.
//! - **The benchmark** ([`benchmark`]): the pre-spawn frame, then fixed steps, timed; frame-time percentiles and
//!   the digest.
//! - **The ramp** ([`Ramp`]): adds a step of waves, lets the frame settle, takes the median frame time of a window
//!   of frames; stops at the first window whose median is past the budget.

use super::config::SimStats;
pub use super::report::Percentiles;
use crate::app::App;
use glam::Vec2;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Instant;

/// Fighters in a wave.
pub const WAVE: u32 = 50;
/// Fixed steps per simulated second ([`DT`](super::config::DT) is their length).
pub const STEPS_PER_SECOND: u32 = 60;
/// Fighters a held button adds per simulated second: a wave every fixed step.
pub const FIGHTERS_PER_SECOND: u32 = WAVE * STEPS_PER_SECOND;
/// A wave's fighters land uniformly over a disc of this radius (arena units) around its centre.
pub const WAVE_RADIUS: f32 = 40.0;
/// Room the `stress` scenario's default capacity leaves for fighters beyond the starting population.
pub const HEADROOM: u32 = 1 << 20;

/// Where waves come from (a resource, saved in snapshots and held by checkpoints).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Waves {
    /// Where a wave lands every fixed step while the window's left button is held (`None`: not held).
    pub held: Option<Vec2>,
    /// Fighters asked for that land next frame in waves of [`WAVE`] at points drawn from the seed (the starting
    /// population, a ramp's step).
    pub queued: u32,
    /// The next wave's number: the waves served so far.
    pub next: u32,
}

impl Waves {
    /// Queues `waves` waves of [`WAVE`] that land next frame at points drawn from the seed
    /// ([`Input::AddWaves`](super::play::Input::AddWaves), a ramp's step).
    pub fn add(&mut self, waves: u32) {
        self.queued = self.queued.saturating_add(waves.saturating_mul(WAVE));
    }
}

/// What a benchmark run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Benchmark {
    /// The backend.
    pub backend: String,
    /// Threads the schedule used.
    pub threads: usize,
    /// Frames run, the pre-spawn included.
    pub frames: u32,
    /// Fighters the first frame landed, and in how many waves.
    pub prespawned: u64,
    /// Waves served over the run.
    pub waves: u32,
    /// The first frame (the pre-spawn), timed apart.
    pub spawn_ms: f64,
    /// The frames after it.
    pub steps: Percentiles,
    /// Fighters and entities alive at the end.
    pub fighters: u32,
    /// Entities alive at the end (particles included).
    pub live: u32,
    /// The world digest after the last frame.
    pub digest: String,
}

/// Runs `app` (a new `stress` world) for `frames` fixed steps: the first lands the pre-spawned waves and is timed
/// apart; the rest make the percentiles. The world it ends in is the plain headless run's of the same frames.
pub fn benchmark(app: &mut App, frames: u32) -> Benchmark {
    let mut ms = Vec::with_capacity(frames as usize);
    let mut spawn_ms = 0.0;
    let mut prespawned = 0;
    for frame in 0..frames {
        let t = Instant::now();
        app.update();
        let took = t.elapsed().as_secs_f64() * 1e3;
        if frame == 0 {
            spawn_ms = took;
            prespawned = app.world.resource::<SimStats>().spawned;
        } else {
            ms.push(took);
        }
    }
    Benchmark {
        backend: app.world.backend().name().to_string(),
        threads: app.threads(),
        frames,
        prespawned,
        waves: app.world.resource::<Waves>().next,
        spawn_ms,
        steps: Percentiles::of(&mut ms),
        fighters: fighters(app),
        live: app.world.len(),
        digest: format!("{:016x}", super::digest(&app.world)),
    }
}

/// Fighters alive (wave or not), from the storage's counts.
pub fn fighters(app: &App) -> u32 {
    let census = super::census(&app.world);
    census.red + census.blue
}

impl fmt::Display for Benchmark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "== benchmark: stress on {}, threads {}", self.backend, self.threads)?;
        writeln!(
            f,
            "frame 1 lands {} fighters in waves of {WAVE}: {:.3} ms (timed apart)",
            self.prespawned, self.spawn_ms
        )?;
        if self.frames > 1 {
            writeln!(f, "frames 2-{} ({} fixed steps): {}", self.frames, self.frames - 1, self.steps)?;
        }
        writeln!(f, "at the end: {} fighters, {} entities, {} waves served", self.fighters, self.live, self.waves)?;
        writeln!(f, "digest: {}", self.digest)
    }
}

/// The frame budget of 60 FPS, in milliseconds.
pub const BUDGET_60_FPS: f64 = 1000.0 / 60.0;
/// Frames after a ramp step before its window is measured (the step's own spawn frame and what follows it).
pub const SETTLE: u32 = 10;
/// Frames a ramp step measures: their median is compared with the budget, so a few slow frames do not end it.
pub const MEASURE: u32 = 50;
/// The least fighters a ramp step adds; otherwise a tenth of those alive, rounded up to whole waves.
pub const STEP_LEAST: u32 = 1_000;
/// Ramp steps at most: a ramp whose population stops growing (deaths as fast as the steps) ends there.
pub const MAX_STEPS: u32 = 300;

/// The ramp: each step adds [`Ramp::step_size`] fighters in waves, lets [`SETTLE`] frames pass, and takes the
/// median of the next [`MEASURE`] frame times. It ends at the first step whose median is past the budget; the
/// fighters held are those alive at the last step within it (none if the first is past). It is a measurement:
/// fed the time of whatever frame the caller measures (the whole frame in the window, the simulation's headless).
#[derive(Clone, Debug)]
pub struct Ramp {
    budget_ms: f64,
    frame: u32,
    window: Vec<f64>,
    /// The steps measured so far: fighters alive during the window, and its median.
    pub steps: Vec<RampStep>,
}

/// One measured step of a [`Ramp`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RampStep {
    /// Fighters alive at the window's end.
    pub fighters: u32,
    /// The window's median frame time, ms.
    pub median_ms: f64,
}

/// What a ramp wants after a frame.
#[derive(Clone, Debug, PartialEq)]
pub enum RampNext {
    /// Run the next frame.
    Run,
    /// Add this many waves at drawn points ([`Input::AddWaves`](super::play::Input::AddWaves)), then run the next
    /// frame.
    Add(u32),
    /// The ramp is over.
    Done(RampEnd),
}

/// How a ramp ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RampEnd {
    /// Fighters alive at the last step within the budget (0 if the first step was past it).
    pub held: u32,
    /// The first step past the budget, if one was ([`MAX_STEPS`] reached otherwise).
    pub passed: Option<RampStep>,
    /// The budget, ms.
    pub budget_ms: f64,
}

impl Ramp {
    /// A ramp against `budget_ms` a frame (16.7 for 60 FPS). The first window measures the starting population.
    pub fn new(budget_ms: f64) -> Self {
        Self { budget_ms, frame: 0, window: Vec::with_capacity(MEASURE as usize), steps: Vec::new() }
    }

    /// Fighters the next step adds with `alive` fighters alive: a tenth of them, at least [`STEP_LEAST`], in
    /// whole waves.
    pub fn step_size(alive: u32) -> u32 {
        (alive / 10).max(STEP_LEAST).div_ceil(WAVE) * WAVE
    }

    /// Takes the time of the frame just run (`ms`) with `fighters` alive after it; says what comes next.
    pub fn frame(&mut self, ms: f64, fighters: u32) -> RampNext {
        self.frame += 1;
        if self.frame <= SETTLE {
            return RampNext::Run;
        }
        self.window.push(ms);
        if self.window.len() < MEASURE as usize {
            return RampNext::Run;
        }
        let median = Percentiles::of(&mut self.window).p50;
        self.window.clear();
        self.frame = 0;
        let step = RampStep { fighters, median_ms: median };
        self.steps.push(step);
        let held = || self.steps.iter().rev().nth(1).map_or(0, |s| s.fighters);
        if median > self.budget_ms {
            return RampNext::Done(RampEnd { held: held(), passed: Some(step), budget_ms: self.budget_ms });
        }
        if self.steps.len() as u32 >= MAX_STEPS {
            return RampNext::Done(RampEnd { held: fighters, passed: None, budget_ms: self.budget_ms });
        }
        RampNext::Add(Self::step_size(fighters) / WAVE)
    }
}

impl fmt::Display for RampStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} fighters: median {:.3} ms", self.fighters, self.median_ms)
    }
}

impl RampEnd {
    /// The verdict in a line: "held N fighters at 60 FPS" (or within the budget given), and what the frame
    /// measured was (`what`).
    pub fn line(&self, what: &str) -> String {
        let budget = if (self.budget_ms - BUDGET_60_FPS).abs() < 0.05 {
            "at 60 FPS".to_string()
        } else {
            format!("within {} ms a frame", self.budget_ms)
        };
        match self.passed {
            Some(step) => format!(
                "held {} fighters {budget} ({what}; the median of {MEASURE} frames passed {:.3} ms at {} fighters)",
                self.held, self.budget_ms, step.fighters
            ),
            None => format!(
                "held {} fighters {budget} ({what}; still within it after {MAX_STEPS} steps, the ramp stops there)",
                self.held
            ),
        }
    }
}

/// Runs the ramp headless on `app` (a new `stress` world), timing each frame's update: the simulation's frame
/// alone. `say` gets a line per step. Also ends once `frames` frames have run, if given.
pub fn ramp_headless(app: &mut App, budget_ms: f64, frames: Option<u32>, mut say: impl FnMut(&str)) -> RampEnd {
    let mut ramp = Ramp::new(budget_ms);
    let mut run = 0u32;
    loop {
        let t = Instant::now();
        app.update();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        run += 1;
        let next = ramp.frame(ms, fighters(app));
        if let RampNext::Add(_) | RampNext::Done(_) = &next {
            if let Some(step) = ramp.steps.last() {
                say(&format!("step {}: {step}", ramp.steps.len()));
            }
        }
        match next {
            RampNext::Run => {}
            RampNext::Add(waves) => app.world.resource_mut::<Waves>().add(waves),
            RampNext::Done(end) => return end,
        }
        if frames.is_some_and(|last| run >= last) {
            let held = ramp.steps.last().map_or(0, |s| s.fighters);
            say(&format!("--frames {run} reached before the budget was passed"));
            return RampEnd { held, passed: None, budget_ms };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_adds_until_the_median_passes_and_ignores_single_spikes() {
        let mut ramp = Ramp::new(10.0);
        let mut added = 0;
        // Three steps within budget (one frame of each a spike), then one past it.
        for (step, base) in [1.0, 2.0, 3.0, 20.0].into_iter().enumerate() {
            for k in 0..SETTLE + MEASURE {
                let ms = if k == SETTLE + 3 { 500.0 } else { base };
                match ramp.frame(ms, 1000 * (step as u32 + 1)) {
                    RampNext::Run => {}
                    RampNext::Add(n) => {
                        assert_eq!(n, STEP_LEAST / WAVE);
                        added += 1;
                    }
                    RampNext::Done(end) => {
                        assert_eq!(step, 3);
                        assert_eq!(end.held, 3000);
                        assert_eq!(end.passed.map(|s| s.fighters), Some(4000));
                        assert!(
                            end.line("x").starts_with("held 3000 fighters within 10 ms a frame"),
                            "{}",
                            end.line("x")
                        );
                        assert_eq!(added, 3);
                        return;
                    }
                }
            }
        }
        panic!("the ramp did not end");
    }

    #[test]
    fn a_held_button_adds_3000_fighters_a_simulated_second() {
        assert_eq!(1.0 / STEPS_PER_SECOND as f32, crate::sim::DT);
        assert_eq!(FIGHTERS_PER_SECOND, 3_000);
    }

    #[test]
    fn step_sizes_are_whole_waves() {
        assert_eq!(Ramp::step_size(0), STEP_LEAST);
        assert_eq!(Ramp::step_size(123_456) % WAVE, 0);
        assert!(Ramp::step_size(123_456) >= 12_345);
    }
}
