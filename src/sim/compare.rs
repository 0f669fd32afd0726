//! The same frames, from one snapshot, on every backend: the headless `--backend all` table and chart, and the
//! window's compare view, which steps a [`Comparison`] a little per rendered frame so the window stays responsive.

use super::report::{Report, Run};
use super::snapshot::{load_app, save};
use crate::app::profile::Profiler;
use crate::ecs::{Backend, Format, SnapshotError, World};
use std::fmt::Write;
use std::time::{Duration, Instant};

/// One snapshot run for the same frames on each backend of [`Backend::ALL`] in turn, at one thread count.
pub struct Comparison {
    snapshot: Vec<u8>,
    frames: u32,
    threads: usize,
    /// The position in [`Backend::ALL`] of the backend running now (or next).
    next: usize,
    run: Option<Run>,
    reports: Vec<Report>,
}

impl Comparison {
    /// A comparison of `frames` frames from `snapshot` on `threads` threads (checked here: a bad snapshot is
    /// refused now, not midway).
    pub fn new(snapshot: Vec<u8>, frames: u32, threads: usize) -> Result<Self, SnapshotError> {
        load_app(&snapshot, None, Profiler::new())?;
        Ok(Self { snapshot, frames: frames.max(1), threads: threads.max(1), next: 0, run: None, reports: Vec::new() })
    }

    /// A comparison from `world` as it is now.
    pub fn from_world(world: &World, frames: u32, threads: usize) -> Result<Self, SnapshotError> {
        Self::new(save(world, Format::Binary)?, frames, threads)
    }

    /// The thread count every backend runs at.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs frames until `budget` is spent or every backend is done (at least one frame, or one load, a call);
    /// whether it is done.
    pub fn step(&mut self, budget: Duration) -> bool {
        let start = Instant::now();
        while !self.is_done() {
            match &mut self.run {
                None => {
                    let backend = Backend::ALL[self.next];
                    let (mut app, _) =
                        load_app(&self.snapshot, Some(backend), Profiler::new()).expect("checked in new");
                    app.set_threads(self.threads);
                    self.run = Some(Run::new(app, self.frames, None));
                }
                Some(run) if run.is_done() => {
                    let (report, _) = self.run.take().expect("matched").finish();
                    self.reports.push(report);
                    self.next += 1;
                }
                Some(run) => run.step(),
            }
            if start.elapsed() >= budget {
                break;
            }
        }
        self.is_done()
    }

    /// Runs to the end, calling `progress` with the fraction done after every frame.
    pub fn run_to_end(&mut self, mut progress: impl FnMut(f32)) {
        while !self.step(Duration::ZERO) {
            progress(self.fraction());
        }
    }

    /// Whether every backend has run.
    pub fn is_done(&self) -> bool {
        self.next >= Backend::ALL.len()
    }

    /// The backend running now, if any.
    pub fn current(&self) -> Option<Backend> {
        Backend::ALL.get(self.next).copied()
    }

    /// How far along, from 0 to 1.
    pub fn fraction(&self) -> f32 {
        let per = self.frames as f32;
        let done = self.next as f32 * per + self.run.as_ref().map_or(0.0, |r| r.done() as f32);
        (done / (per * Backend::ALL.len() as f32)).min(1.0)
    }

    /// Frames each backend runs.
    pub fn frames(&self) -> u32 {
        self.frames
    }

    /// The reports of the backends done so far, in [`Backend::ALL`]'s order.
    pub fn reports(&self) -> &[Report] {
        &self.reports
    }

    /// Whether every finished backend ended on the same digest.
    pub fn digests_agree(&self) -> bool {
        self.reports.windows(2).all(|w| w[0].digest == w[1].digest)
    }
}

/// The reports side by side: one column per backend; rows for frame times, each system, memory and the digest.
pub fn table(reports: &[Report]) -> String {
    let mut out = String::new();
    // Wide enough for a backend's name and a digest (16 hex digits).
    let width = reports.iter().map(|r| r.backend.len()).max().unwrap_or(0).max(16);
    let row = |out: &mut String, label: &str, cells: &mut dyn Iterator<Item = String>| {
        write!(out, "{label:<22}").ok();
        for cell in cells {
            write!(out, " {cell:>width$}").ok();
        }
        out.push('\n');
    };
    row(&mut out, "backend", &mut reports.iter().map(|r| r.backend.clone()));
    let ms = |f: fn(&Report) -> f64| reports.iter().map(move |r| format!("{:.3}", f(r)));
    row(&mut out, "frame ms, mean", &mut ms(|r| r.mean_ms));
    row(&mut out, "frame ms, p50", &mut ms(|r| r.p50_ms));
    row(&mut out, "frame ms, p99", &mut ms(|r| r.p99_ms));
    row(&mut out, "frame ms, max", &mut ms(|r| r.max_ms));
    row(&mut out, "threads", &mut reports.iter().map(|r| r.threads.to_string()));
    // The time tree, as the report prints it; each backend's figure found by name.
    if let Some(first) = reports.first() {
        for label in first.rows() {
            let cells: Vec<String> = reports
                .iter()
                .map(|r| {
                    let ms = r.rows().into_iter().find(|row| row.name == label.name).map(|row| row.mean_ms);
                    ms.map_or("-".into(), |ms| format!("{ms:.3}"))
                })
                .collect();
            row(&mut out, &format!("{}{}", "  ".repeat(label.depth + 1), label.name), &mut cells.into_iter());
        }
    }
    row(&mut out, "live at end", &mut reports.iter().map(|r| r.live.to_string()));
    row(&mut out, "storage bytes", &mut reports.iter().map(|r| r.storage_bytes.to_string()));
    row(&mut out, "bytes per entity", &mut reports.iter().map(|r| format!("{:.1}", bytes_per_entity(r))));
    row(&mut out, "digest", &mut reports.iter().map(|r| r.digest.clone()));
    let agree = reports.windows(2).all(|w| w[0].digest == w[1].digest);
    writeln!(out, "digests {} across backends", if agree { "equal" } else { "DIFFER" }).ok();
    out
}

/// Storage bytes (components and bookkeeping, not the allocator) per live entity at the end of the run.
pub fn bytes_per_entity(report: &Report) -> f64 {
    report.storage_bytes as f64 / report.live.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{build_app, SimConfig};

    #[test]
    fn every_backend_runs_the_same_frames_and_the_table_shows_them() {
        let config = SimConfig::with_population(300);
        let mut app = build_app(config.clone(), 3, Backend::Archetype, config.default_capacity());
        for _ in 0..30 {
            app.update();
        }
        let mut comparison = Comparison::from_world(&app.world, 20, 3).unwrap();
        let mut seen = Vec::new();
        comparison.run_to_end(|f| seen.push(f));
        assert!(seen.windows(2).all(|w| w[0] <= w[1]) && seen.len() >= 5 * 20, "progress: {seen:?}");
        assert_eq!(comparison.fraction(), 1.0);
        let names: Vec<&str> = comparison.reports().iter().map(|r| r.backend.as_str()).collect();
        assert_eq!(names, Backend::ALL.map(|b| b.name()));
        assert!(comparison.reports().iter().all(|r| r.frames == 20 && r.threads == 3));
        assert!(comparison.digests_agree());
        // The same 20 frames straight on: the digest matches.
        for _ in 0..20 {
            app.update();
        }
        assert_eq!(comparison.reports()[0].digest, format!("{:016x}", crate::sim::digest(&app.world)));
        let table = table(comparison.reports());
        assert!(
            table.contains("    resolve_collisions") && table.contains("  combat") && table.contains("digests equal"),
            "{table}"
        );
        assert_eq!(table.lines().next().unwrap().split_whitespace().count(), 6, "{table}");
        let mut differing = comparison.reports().to_vec();
        differing[2].digest = "0".repeat(16);
        assert!(super::table(&differing).contains("DIFFER"));
    }

    #[test]
    fn a_bad_snapshot_is_refused_up_front() {
        assert!(Comparison::new(b"not a snapshot".to_vec(), 10, 1).is_err());
    }
}
