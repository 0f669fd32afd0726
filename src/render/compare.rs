//! The compare view: the running world's current frame, snapshotted and run for the same frames on every
//! backend, drawn as a chart over the game. The headless `--backend all` chart (`sim::chart`) is the same chart
//! as SVG.
//!
//! The comparison runs on copies loaded from the snapshot, a little per rendered frame (a time budget that grows
//! with what the rest of the frame costs, so a large world, slow to draw, still spends most of the wall time on
//! the comparison), so the window stays responsive; the game itself is frozen meanwhile and is not touched. While
//! it runs, each backend shows a progress bar and, once done, its mean frame time; the chart is drawn when every
//! backend has reported, on axes of round steps fitted to all of them, so no bar is drawn to a scale that changes.

use super::layout::axis;
use macroquad::prelude::*;
use std::fmt::Write;
use std::time::Duration;
use swarm::ecs::World;
use swarm::sim::compare::{bytes_per_entity, Comparison};
use swarm::sim::report::Report;
use swarm::sim::SimStats;

/// The least comparison work per rendered frame: the window keeps about 60 fps on top of it at the default
/// population.
pub const BUDGET: Duration = Duration::from_millis(12);

/// Comparison work for the next rendered frame when the rest of the last one (drawing the world, the panel) took
/// `rest`: three times that, so the comparison gets about three quarters of the wall time, between [`BUDGET`] and
/// half a second (the window still answers Esc).
pub fn budget(rest: Duration) -> Duration {
    (rest * 3).clamp(BUDGET, Duration::from_millis(500))
}

/// System `i`'s colour, in report order: the SVG chart's palette (`sim::chart`), so both read alike.
pub fn system_colour(i: usize) -> Color {
    use swarm::sim::chart::PALETTE;
    Color::from_hex(PALETTE[i % PALETTE.len()])
}
/// The bytes-per-entity bars.
pub const BYTES: Color = Color::from_hex(0x8c8c8c);

const TEXT: Color = Color::new(0.92, 0.94, 0.98, 1.0);
const DIM: Color = Color::new(0.62, 0.68, 0.78, 1.0);
const GOOD: Color = Color::new(0.45, 0.85, 0.45, 1.0);
const BAD: Color = Color::new(1.0, 0.45, 0.4, 1.0);

/// An open compare view: a comparison under way or done, or why there is none.
pub struct CompareView {
    comparison: Result<Comparison, String>,
    /// Live entities and the simulation frame when the snapshot was taken.
    entities: u32,
    sim_frame: u64,
}

impl CompareView {
    /// Snapshots `world` for a comparison of `frames` frames per backend on `threads` threads (the game's count:
    /// T before opening the view chooses it). A world that cannot be snapshotted now (commands pending, say) gives
    /// a view that shows why.
    pub fn open(world: &World, frames: u32, threads: usize) -> Self {
        let comparison = Comparison::from_world(world, frames, threads).map_err(|e| format!("cannot compare now: {e}"));
        Self { comparison, entities: world.len(), sim_frame: world.resource::<SimStats>().frames }
    }

    /// Runs the comparison for about `budget`; nothing once it is done or failed.
    pub fn step(&mut self, budget: Duration) {
        if let Ok(comparison) = &mut self.comparison {
            if !comparison.is_done() {
                comparison.step(budget);
            }
        }
    }

    /// Whether there is nothing more to run (done, or failed).
    pub fn is_finished(&self) -> bool {
        self.comparison.as_ref().map_or(true, Comparison::is_done)
    }

    /// Draws the view over the game, left of the panel (which stays usable). `text` is the reused buffer.
    pub fn draw(&self, right: f32, text: &mut String) {
        let (x0, y0) = (16.0, 16.0);
        let (w, h) = (right - x0 - 12.0, screen_height() - y0 - 40.0);
        draw_rectangle(x0, y0, w, h, Color::new(0.02, 0.03, 0.06, 0.94));
        draw_rectangle_lines(x0, y0, w, h, 1.0, Color::new(0.4, 0.45, 0.6, 0.8));
        let (x, mut y) = (x0 + 20.0, y0 + 38.0);
        let comparison = match &self.comparison {
            Ok(comparison) => comparison,
            Err(why) => {
                draw_text("compare backends", x, y, 30.0, TEXT);
                draw_text(why, x, y + 40.0, 24.0, BAD);
                draw_text("Esc or C: back to the game", x, y0 + h - 16.0, 20.0, DIM);
                return;
            }
        };
        text.clear();
        let _ = write!(
            text,
            "compare backends: the same {} frames from sim frame {}, {} entities at the start, {} thread{}",
            comparison.frames(),
            self.sim_frame,
            self.entities,
            comparison.threads(),
            if comparison.threads() == 1 { "" } else { "s" }
        );
        draw_text(text.as_str(), x, y, 28.0, TEXT);
        y += 32.0;
        let reports = comparison.reports();
        if !comparison.is_done() {
            progress(comparison, x, y, w - 40.0, text);
        } else {
            text.clear();
            let colour = match reports.first() {
                Some(first) if comparison.digests_agree() => {
                    let _ = write!(text, "all {} backends ended on the same digest {}", reports.len(), first.digest);
                    GOOD
                }
                _ => {
                    let _ = write!(text, "the backends ended on DIFFERENT digests:");
                    for r in reports {
                        let _ = write!(text, "  {} {}", r.backend, r.digest);
                    }
                    BAD
                }
            };
            draw_text(text.as_str(), x, y, 24.0, colour);
        }
        y += 40.0;
        if comparison.is_done() && !reports.is_empty() {
            // Axes of round steps fitted to every backend's figures.
            let time = reports.iter().map(|r| r.p99_ms.max(r.mean_ms)).fold(0.0, f64::max);
            let bytes = reports.iter().map(bytes_per_entity).fold(0.0, f64::max);
            chart(reports, [axis(time, 5), axis(bytes, 5)], x, y, w - 40.0, y0 + h - 60.0 - y, text);
        } else {
            backends(comparison, x, y, w - 40.0, text);
        }
        draw_text("Esc or C: back to the game (the game is paused while this is open)", x, y0 + h - 16.0, 20.0, DIM);
    }
}

/// Which backend runs, a bar, and frames done of the total.
fn progress(comparison: &Comparison, x: f32, y: f32, w: f32, text: &mut String) {
    let fraction = comparison.fraction();
    let total = comparison.frames() as usize * swarm::ecs::Backend::ALL.len();
    text.clear();
    let _ = write!(
        text,
        "running {}:  {} of {} frames",
        comparison.current().map_or("-", |b| b.name()),
        (fraction * total as f32).round() as usize,
        total
    );
    draw_text(text.as_str(), x, y, 24.0, Color::new(1.0, 0.78, 0.35, 1.0));
    let (bx, by, bw) = (x + 520.0, y - 16.0, (w - 520.0).max(100.0));
    draw_rectangle(bx, by, bw, 18.0, Color::new(0.14, 0.17, 0.25, 1.0));
    draw_rectangle(bx, by, bw * fraction, 18.0, Color::new(0.85, 0.55, 0.18, 1.0));
}

/// While the comparison runs: a row per backend with its progress bar, and its mean frame time once it is done.
fn backends(comparison: &Comparison, x: f32, y: f32, w: f32, text: &mut String) {
    let reports = comparison.reports();
    let frames = comparison.frames() as f32;
    let total = frames * swarm::ecs::Backend::ALL.len() as f32;
    let done = comparison.fraction() * total;
    for (row, backend) in swarm::ecs::Backend::ALL.into_iter().enumerate() {
        let ry = y + 40.0 * row as f32;
        let fraction = ((done - frames * row as f32) / frames).clamp(0.0, 1.0);
        let label = backend.name();
        let dims = measure_text(label, None, 22, 1.0);
        draw_text(label, x + 130.0 - 12.0 - dims.width, ry + 18.0, 22.0, TEXT);
        let (bx, bw) = (x + 130.0, (w * 0.5).max(100.0));
        draw_rectangle(bx, ry, bw, 24.0, Color::new(0.14, 0.17, 0.25, 1.0));
        draw_rectangle(bx, ry, bw * fraction, 24.0, Color::new(0.85, 0.55, 0.18, 1.0));
        text.clear();
        match reports.get(row) {
            Some(report) => {
                let _ = write!(text, "{:.2} ms mean  {:.2} p99", report.mean_ms, report.p99_ms);
            }
            None if comparison.current() == Some(backend) => text.push_str("running"),
            None => text.push_str("waiting"),
        }
        draw_text(text.as_str(), bx + bw + 12.0, ry + 18.0, 20.0, if row < reports.len() { TEXT } else { DIM });
    }
    draw_text("the chart follows once every backend has run", x + 130.0, y + 40.0 * 5.0 + 20.0, 20.0, DIM);
}

/// The chart in `w` x `h`: per backend, frame ms split by system with the p99 marked, and bytes per entity; then
/// the legend. `axes` are the time and bytes axes, (top, step) each. Each bar's figures are drawn in room kept
/// for them right of its axis, so no label reaches the next column.
fn chart(reports: &[Report], axes: [(f64, f64); 2], x: f32, y: f32, w: f32, h: f32, text: &mut String) {
    const LABEL: f32 = 130.0;
    const GAP: f32 = 40.0;
    // Rows share what the titles, the axis labels and the legend leave, up to a comfortable height.
    let row_h = ((h - 150.0) / swarm::ecs::Backend::ALL.len() as f32).clamp(40.0, 80.0);
    let column = (w - LABEL - GAP) * 0.66;
    let figures = measure_text("000.00 mean  000.00 p99", None, 20, 1.0).width + 12.0;
    let time_w = (column - figures).max(100.0);
    let bytes_x = x + LABEL + column + GAP;
    let bytes_w = (w - LABEL - column - GAP - measure_text("0000", None, 20, 1.0).width - 12.0).max(40.0);
    let [(time_max, time_step), (bytes_max, _)] = axes;
    let (time_max, bytes_max) = (time_max.max(1e-9) as f32, bytes_max.max(1e-9) as f32);

    text.clear();
    let _ = write!(text, "frame ms, mean split by system;  | = p99;  axis 0 to {time_max} ms");
    draw_text(text.as_str(), x + LABEL, y, 20.0, DIM);
    text.clear();
    let _ = write!(text, "storage bytes per entity (0 to {bytes_max})");
    draw_text(text.as_str(), bytes_x, y, 20.0, DIM);
    let top = y + 14.0;
    let bottom = top + row_h * swarm::ecs::Backend::ALL.len() as f32;
    // Gridlines at the axis's round steps with their ms, so bar lengths can be read off.
    let ticks = (time_max as f64 / time_step).round() as u32;
    for k in 0..=ticks {
        let value = time_step * k as f64;
        let gx = x + LABEL + time_w * (value as f32 / time_max);
        draw_line(gx, top, gx, bottom, 1.0, Color::new(0.3, 0.34, 0.45, 0.6));
        text.clear();
        // Steps are 1, 2, 2.5 or 5 times a power of ten: three decimals at most, trailing zeros dropped.
        let _ = write!(text, "{}", (value * 1000.0).round() / 1000.0);
        let width = measure_text(text.as_str(), None, 18, 1.0).width;
        draw_text(text.as_str(), gx - width / 2.0, bottom + 18.0, 18.0, DIM);
    }
    for (row, report) in reports.iter().enumerate() {
        let bar_h = (row_h * 0.62).round();
        let ry = top + row_h * row as f32 + (row_h - bar_h) / 2.0;
        let label = report.backend.as_str();
        let dims = measure_text(label, None, 22, 1.0);
        draw_text(label, x + LABEL - 12.0 - dims.width, ry + bar_h * 0.7, 22.0, TEXT);
        let mut bx = x + LABEL;
        for (i, system) in report.systems.iter().enumerate() {
            let bw = system.mean_ms as f32 / time_max * time_w;
            draw_rectangle(bx, ry, bw, bar_h, system_colour(i));
            bx += bw;
        }
        let p99 = x + LABEL + report.p99_ms as f32 / time_max * time_w;
        draw_line(p99, ry - 4.0, p99, ry + bar_h + 4.0, 3.0, WHITE);
        text.clear();
        let _ = write!(text, "{:.2} mean  {:.2} p99", report.mean_ms, report.p99_ms);
        draw_text(text.as_str(), p99.max(bx) + 8.0, ry + bar_h * 0.7, 20.0, TEXT);
        let bytes = bytes_per_entity(report) as f32;
        let bw = bytes / bytes_max * bytes_w;
        draw_rectangle(bytes_x, ry, bw, bar_h, BYTES);
        text.clear();
        let _ = write!(text, "{bytes:.0}");
        draw_text(text.as_str(), bytes_x + bw + 6.0, ry + bar_h * 0.7, 20.0, TEXT);
    }
    // The legend, in run order, as many to a row as fit.
    let mut lx = x + LABEL;
    let mut ly = bottom + 56.0;
    for (i, system) in reports[0].systems.iter().enumerate() {
        let width = 24.0 + measure_text(&system.name, None, 20, 1.0).width + 26.0;
        if lx + width > x + w {
            lx = x + LABEL;
            ly += 28.0;
        }
        draw_rectangle(lx, ly - 14.0, 16.0, 16.0, system_colour(i));
        draw_text(&system.name, lx + 24.0, ly, 20.0, TEXT);
        lx += width;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_follows_the_rest_of_the_frame_within_bounds() {
        assert_eq!(budget(Duration::ZERO), BUDGET);
        assert_eq!(budget(Duration::from_millis(100)), Duration::from_millis(300));
        assert_eq!(budget(Duration::from_secs(2)), Duration::from_millis(500), "Esc still answers");
    }
}
