//! The headless run and its report: frame times, per-system times, population, commands, memory and the digest.

use super::config::{SimConfig, SimStats};
use super::{build_app, digest};
use crate::app::profile::SpanStat;
use crate::ecs::Backend;
use serde::Serialize;
use std::fmt;
use std::time::Instant;

/// What to run.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// Simulation settings.
    pub config: SimConfig,
    /// Random seed.
    pub seed: u64,
    /// Frames to simulate (at least 1).
    pub frames: u32,
    /// World capacity.
    pub capacity: u32,
    /// The backend to start on.
    pub backend: Backend,
    /// Switch to the next backend every this many frames (cycling through all five).
    pub switch_every: Option<u32>,
    /// Threads the schedule may use (the report is the same for every count).
    pub threads: usize,
}

/// Per-system time.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SystemTime {
    /// System name.
    pub name: String,
    /// Mean milliseconds per frame.
    pub mean_ms: f64,
    /// Mean milliseconds per frame of its work that other threads did (pieces of its parallel loops; in a batch
    /// whose systems ran at once, the batch's): see [`crate::ecs::Elsewhere`].
    pub elsewhere_ms: f64,
}

/// Per-group time, with the group's systems (a row of the tree the overlay shows).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GroupTime {
    /// Group name.
    pub name: String,
    /// Mean milliseconds per frame (its systems' sum, and the span around them).
    pub mean_ms: f64,
    /// Whether it was running at the end.
    pub enabled: bool,
    /// Its systems, in run order.
    pub systems: Vec<String>,
}

/// The report of one run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    /// The backend the run started on.
    pub backend: String,
    /// The backend the run ended on (the storage bytes are this backend's).
    pub ended_on: String,
    /// Backends switched through (empty without `--switch-every`).
    pub switches: u32,
    /// Mean milliseconds per live switch.
    pub switch_mean_ms: f64,
    /// Frames simulated.
    pub frames: u32,
    /// Frame time, milliseconds: mean, median, 99th percentile, max.
    pub mean_ms: f64,
    /// Median frame time.
    pub p50_ms: f64,
    /// 99th percentile frame time.
    pub p99_ms: f64,
    /// Slowest frame.
    pub max_ms: f64,
    /// Threads the schedule used at the end of the run.
    pub threads: usize,
    /// Mean time per system per frame (`apply_commands` included), in registration order.
    pub systems: Vec<SystemTime>,
    /// Mean time per group of systems per frame.
    pub groups: Vec<GroupTime>,
    /// A group of systems was turned off during the run: the world is not the plain run of its seed.
    pub modified: bool,
    /// Most entities alive (or reserved) at once: at a frame's last stage or at a frame's end, the end of the run
    /// included.
    pub peak_live: u32,
    /// Entities alive at the end.
    pub live: u32,
    /// Fighters spawned.
    pub spawned: u64,
    /// Fighters died.
    pub deaths: u64,
    /// Particles spawned.
    pub particles: u64,
    /// Fighters of bursts refused because the world was full, each counted once (see [`SimStats::spawn_refused`]).
    pub fighters_refused: u64,
    /// Fighters the refill could not spawn at the last frame because the world was full: how far below the target
    /// population the full world held it ([`crate::sim::Shortfall`]).
    pub short_of_target: u32,
    /// Particle spawns refused because the world was full when the frame's commands applied.
    pub particles_refused: u64,
    /// Commands applied.
    pub commands_applied: u64,
    /// Commands skipped (dead or stale target).
    pub commands_skipped: u64,
    /// Stale target handles caught by hunters.
    pub stale_caught: u64,
    /// Storage bytes of the final backend at the end (components + bookkeeping).
    pub storage_bytes: usize,
    /// Largest storage bytes seen at a frame's end.
    pub peak_storage_bytes: usize,
    /// Bytes of the entity allocator.
    pub allocator_bytes: usize,
    /// The world digest after the last frame, as 16 hex digits.
    pub digest: String,
}

/// Frame-time percentiles, in milliseconds: the nearest rank, rounded (the headless report's and the stress
/// benchmark's).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Slowest.
    pub max: f64,
}

impl Percentiles {
    /// Of `ms` (sorted here); all zero when empty.
    pub fn of(ms: &mut [f64]) -> Self {
        ms.sort_by(f64::total_cmp);
        let at = |p: f64| match ms.len() {
            0 => 0.0,
            n => ms[((p * (n - 1) as f64).round() as usize).min(n - 1)],
        };
        Self { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: ms.last().copied().unwrap_or(0.0) }
    }
}

impl fmt::Display for Percentiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p50 {:.3}  p90 {:.3}  p99 {:.3}  max {:.3} ms", self.p50, self.p90, self.p99, self.max)
    }
}

/// Runs the simulation without a window and reports. `on_app` sees the app before the first frame (to attach a
/// trace, say).
pub fn run(settings: &RunSettings, on_app: impl FnOnce(&crate::app::App)) -> Report {
    let mut app = build_app(settings.config.clone(), settings.seed, settings.backend, settings.capacity);
    app.set_threads(settings.threads);
    run_app(app, settings.frames, settings.switch_every, on_app).0
}

/// Runs `app` (a new one, or one loaded from a snapshot) for `frames` frames, switching backends every
/// `switch_every` frames if asked, and reports; the app comes back for a caller that saves it.
pub fn run_app(
    app: crate::app::App,
    frames: u32,
    switch_every: Option<u32>,
    on_app: impl FnOnce(&crate::app::App),
) -> (Report, crate::app::App) {
    on_app(&app);
    let mut run = Run::new(app, frames, switch_every);
    while !run.is_done() {
        run.step();
    }
    run.finish()
}

/// A headless run a frame at a time, for a caller that must stay responsive (the window's compare view) or show
/// progress: [`Run::step`] until [`Run::is_done`], then [`Run::finish`] for the report.
pub struct Run {
    app: crate::app::App,
    frames: u32,
    switch_every: Option<u32>,
    meter: Meter,
}

impl Run {
    /// A run of `frames` frames of `app`, switching backends every `switch_every` frames if asked.
    pub fn new(app: crate::app::App, frames: u32, switch_every: Option<u32>) -> Self {
        Self { meter: Meter::new(&app, frames as usize), app, frames, switch_every }
    }

    /// The app being run.
    pub fn app(&self) -> &crate::app::App {
        &self.app
    }

    /// Frames run so far.
    pub fn done(&self) -> u32 {
        self.meter.frames()
    }

    /// Frames the run will take.
    pub fn frames(&self) -> u32 {
        self.frames
    }

    /// Whether every frame has run.
    pub fn is_done(&self) -> bool {
        self.done() >= self.frames
    }

    /// Runs the next frame (switching backend first when one is due); nothing once done.
    pub fn step(&mut self) {
        let frame = self.done();
        if frame >= self.frames {
            return;
        }
        let app = &mut self.app;
        if let Some(k) = self.switch_every {
            if frame > 0 && frame.is_multiple_of(k) {
                let next = app.world.backend().next();
                let t = Instant::now();
                app.world.set_backend(next);
                self.meter.switched(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        let t = Instant::now();
        app.update();
        self.meter.frame(t.elapsed().as_secs_f64() * 1e3, app);
    }

    /// The report of the frames run, and the app.
    pub fn finish(self) -> (Report, crate::app::App) {
        (self.meter.report(&self.app), self.app)
    }
}

/// The figures of a run gathered as it goes (frame times, switches, peak storage), made into a [`Report`] at the
/// end. [`run_app`] uses it, and so does a replay, which runs frames between recorded inputs.
#[derive(Clone, Debug)]
pub struct Meter {
    started_on: Backend,
    frame_ms: Vec<f64>,
    peak_storage: usize,
    peak_live: u32,
    switches: u32,
    switch_ms: f64,
}

impl Meter {
    /// A meter for a run of `app` that starts now; `frames` is a guess of the run's length (for the buffer).
    pub fn new(app: &crate::app::App, frames: usize) -> Self {
        Self {
            started_on: app.world.backend(),
            frame_ms: Vec::with_capacity(frames.min(1 << 16)),
            peak_storage: 0,
            peak_live: app.world.len(),
            switches: 0,
            switch_ms: 0.0,
        }
    }

    /// Counts one frame of `ms` milliseconds, after which `app` is as the frame left it.
    pub fn frame(&mut self, ms: f64, app: &crate::app::App) {
        self.frame_ms.push(ms);
        self.peak_storage = self.peak_storage.max(app.world.storage_bytes());
        self.peak_live = self.peak_live.max(app.world.len());
    }

    /// Counts one live backend switch of `ms` milliseconds.
    pub fn switched(&mut self, ms: f64) {
        self.switches += 1;
        self.switch_ms += ms;
    }

    /// Frames counted so far.
    pub fn frames(&self) -> u32 {
        self.frame_ms.len() as u32
    }

    /// The report of the run so far, `app` being where it ended (its profiler holds the per-system times).
    pub fn report(&self, app: &crate::app::App) -> Report {
        let frames = self.frames();
        let percentiles = Percentiles::of(&mut self.frame_ms.clone());
        let mut spans: Vec<SpanStat> = Vec::new();
        app.profiler().snapshot(&mut spans);
        let frames_f = frames.max(1) as f64;
        let infos: Vec<_> = app.groups().collect();
        let mean = |name: &str| spans.iter().find(|s| s.name == name).map_or(0.0, |s| s.total_ms / frames_f);
        let groups = infos
            .iter()
            .map(|g| GroupTime {
                name: g.name.to_string(),
                mean_ms: mean(g.name),
                enabled: g.enabled,
                systems: g.systems.iter().map(|s| s.to_string()).collect(),
            })
            .collect();
        let systems = spans
            .iter()
            .filter(|s| !infos.iter().any(|g| g.name == s.name))
            .map(|s| SystemTime {
                name: s.name.clone(),
                mean_ms: s.total_ms / frames_f,
                elsewhere_ms: s.elsewhere_total_ms / frames_f,
            })
            .collect();
        let stats = app.world.resource::<SimStats>().clone();
        let totals = app.world.command_totals();
        let switches = self.switches;
        Report {
            backend: self.started_on.name().to_string(),
            ended_on: app.world.backend().name().to_string(),
            switches,
            switch_mean_ms: if switches == 0 { 0.0 } else { self.switch_ms / switches as f64 },
            frames,
            mean_ms: self.frame_ms.iter().sum::<f64>() / frames_f,
            p50_ms: percentiles.p50,
            p99_ms: percentiles.p99,
            max_ms: percentiles.max,
            threads: app.threads(),
            systems,
            groups,
            modified: app.is_modified(),
            // The simulation's own peak is taken before the frame's commands apply; the meter's after.
            peak_live: stats.peak_live.max(self.peak_live).max(app.world.len()),
            live: app.world.len(),
            spawned: stats.spawned,
            deaths: stats.deaths,
            particles: stats.particles,
            fighters_refused: stats.spawn_refused,
            short_of_target: app.world.get_resource::<super::Shortfall>().map_or(0, |s| s.0),
            particles_refused: totals.refused,
            commands_applied: totals.applied,
            commands_skipped: totals.skipped,
            stale_caught: stats.stale_caught,
            storage_bytes: app.world.storage_bytes(),
            peak_storage_bytes: self.peak_storage,
            allocator_bytes: app.world.entities().bytes(),
            digest: format!("{:016x}", digest(&app.world)),
        }
    }
}

/// One line of a report's time tree ([`Report::rows`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TimeRow<'a> {
    /// 0 for a group or a system in no group, 1 for a system under its group.
    pub depth: usize,
    /// The group's or system's name.
    pub name: &'a str,
    /// Mean milliseconds per frame.
    pub mean_ms: f64,
    /// A system's [`SystemTime::elsewhere_ms`] (`None` for a group).
    pub elsewhere_ms: Option<f64>,
    /// Whether it ran at the end (a system in a group that is off has its group's flag).
    pub enabled: bool,
}

impl Report {
    /// The times as a tree in registration order: each group where its first system is, with its systems under it,
    /// and the systems in no group on their own. The text report and the comparison table both print this.
    pub fn rows(&self) -> Vec<TimeRow<'_>> {
        let mut rows = Vec::with_capacity(self.systems.len() + self.groups.len());
        let mut shown: Vec<&str> = Vec::new();
        for system in &self.systems {
            match self.groups.iter().find(|g| g.systems.contains(&system.name)) {
                Some(group) if shown.contains(&group.name.as_str()) => {}
                Some(group) => {
                    shown.push(&group.name);
                    rows.push(TimeRow {
                        depth: 0,
                        name: &group.name,
                        mean_ms: group.mean_ms,
                        elsewhere_ms: None,
                        enabled: group.enabled,
                    });
                    for name in &group.systems {
                        let time = self.systems.iter().find(|t| &t.name == name);
                        rows.push(TimeRow {
                            depth: 1,
                            name,
                            mean_ms: time.map_or(0.0, |t| t.mean_ms),
                            elsewhere_ms: Some(time.map_or(0.0, |t| t.elsewhere_ms)),
                            enabled: group.enabled,
                        });
                    }
                }
                None => rows.push(TimeRow {
                    depth: 0,
                    name: &system.name,
                    mean_ms: system.mean_ms,
                    elsewhere_ms: Some(system.elsewhere_ms),
                    enabled: true,
                }),
            }
        }
        rows
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "== backend: {}", self.backend)?;
        if self.ended_on != self.backend {
            write!(f, " at the start, {} at the end", self.ended_on)?;
        }
        if self.switches > 0 {
            write!(f, " (switched live {} times, {:.2} ms per switch)", self.switches, self.switch_mean_ms)?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "frames: {}   frame ms: mean {:.3}  p50 {:.3}  p99 {:.3}  max {:.3}",
            self.frames, self.mean_ms, self.p50_ms, self.p99_ms, self.max_ms
        )?;
        // Systems of one batch run at once on several threads: then the frame takes less than its systems' sum.
        let sum: f64 = self.systems.iter().filter(|s| s.name != "y_sort").map(|s| s.mean_ms).sum();
        writeln!(
            f,
            "threads: {}   frame ms (mean) {:.3} beside its systems' sum {:.3}",
            self.threads, self.mean_ms, sum
        )?;
        // On several threads, a second column: the part of each system's work other threads did.
        let others = self.threads != 1;
        match others {
            true => writeln!(f, "ms per frame (mean), by group and system; of it, work done on other threads:")?,
            false => writeln!(f, "ms per frame (mean), by group and system:")?,
        }
        for row in self.rows() {
            let indent = "  ".repeat(row.depth + 1);
            let width = 24 - indent.len();
            let off = if row.enabled { "" } else { "  (off)" };
            write!(f, "{indent}{:<width$} {:>8.3}", row.name, row.mean_ms)?;
            match row.elsewhere_ms {
                Some(ms) if others => writeln!(f, " {ms:>8.3}{off}")?,
                _ => writeln!(f, "{off}")?,
            }
        }
        writeln!(f, "entities: peak {}  at end {}", self.peak_live, self.live)?;
        writeln!(
            f,
            "spawned {}  deaths {}  particles {}  refused (world full): {} burst fighters, {} particles",
            self.spawned, self.deaths, self.particles, self.fighters_refused, self.particles_refused
        )?;
        if self.short_of_target > 0 {
            writeln!(f, "world full at the end: {} fighters short of the target population", self.short_of_target)?;
        }
        writeln!(
            f,
            "commands applied {}  skipped {}   stale handles caught {}",
            self.commands_applied, self.commands_skipped, self.stale_caught
        )?;
        writeln!(
            f,
            "storage bytes ({}): {} at end, {} peak (+ {} allocator)",
            self.ended_on, self.storage_bytes, self.peak_storage_bytes, self.allocator_bytes
        )?;
        if self.modified {
            writeln!(f, "digest: {} (modified: a group of systems was turned off)", self.digest)
        } else {
            writeln!(f, "digest: {}", self.digest)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Percentiles;

    #[test]
    fn percentiles_of_a_known_list() {
        let mut ms: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let p = Percentiles::of(&mut ms);
        assert_eq!((p.p50, p.p90, p.p99, p.max), (51.0, 90.0, 99.0, 100.0));
        assert_eq!(Percentiles::of(&mut []), Percentiles::default());
    }
}
