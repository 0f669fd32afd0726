//! The frame-time overlay: FPS, two times per frame (mean / p50 / p99 / max over the last frames), the whole frame
//! from one frame's start to the next (presenting included: its inverse is the FPS shown) and the simulation's CPU
//! time, and their graph, whose top follows the samples it shows (round values, see [`GraphTop`]), with 60 and 30
//! FPS guide lines; the systems as a tree of groups with their ms (a click on a group turns it off or on),
//! the window's own spans apart, the population by kind, spawns and deaths per second, commands, stale handles,
//! storage bytes, backend and digest; and, after a switch, the previous backend's last figures beside the current
//! ones.
//!
//! The overlay must not disturb what it measures: everything it reads each frame is a counter the frame kept
//! anyway (the census reads the storage's lengths, no query). The digest walks the whole world, so it is taken
//! only on demand (D, a click on its line, or once per frame shown while paused), timed apart, and left out of the
//! frame times. Text goes through one reused `String`, so the overlay allocates nothing per frame once warm. Every
//! line is measured: one wider than the box goes on over the next lines (wrapped at spaces), and the box is as tall
//! as what was drawn in it. Only a single word wider than the box, or a line below the screen's bottom, is cut;
//! [`Fit`] counts those, and a `--screenshot` run names them.

use super::layout::{self, GraphTop};
use super::panel::Action;
use macroquad::prelude::*;
use std::fmt::Write;
use swarm::app::profile::Profiler;
use swarm::app::{App, Stage};
use swarm::ecs::Backend;
use swarm::sim::{Census, Scenario};

/// How many frames the statistics and the graph cover.
pub const WINDOW: usize = 300;

/// The last [`WINDOW`] frame times.
pub struct FrameTimes {
    ms: Vec<f32>,
    next: usize,
    sorted: Vec<f32>,
}

impl Default for FrameTimes {
    fn default() -> Self {
        Self { ms: Vec::with_capacity(WINDOW), next: 0, sorted: Vec::with_capacity(WINDOW) }
    }
}

/// Mean, p50, p99 and max of a window of frame times.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameSummary {
    /// Mean ms.
    pub mean: f32,
    /// Median ms.
    pub p50: f32,
    /// 99th percentile ms.
    pub p99: f32,
    /// Max ms.
    pub max: f32,
}

impl FrameTimes {
    /// Records one frame.
    pub fn push(&mut self, ms: f32) {
        if self.ms.len() < WINDOW {
            self.ms.push(ms);
        } else {
            self.ms[self.next] = ms;
        }
        self.next = (self.next + 1) % WINDOW;
    }

    /// Forgets everything (after a backend switch, so the figures are the new backend's alone).
    pub fn clear(&mut self) {
        self.ms.clear();
        self.next = 0;
    }

    /// The statistics of the window.
    pub fn summary(&mut self) -> FrameSummary {
        if self.ms.is_empty() {
            return FrameSummary::default();
        }
        self.sorted.clear();
        self.sorted.extend_from_slice(&self.ms);
        self.sorted.sort_by(f32::total_cmp);
        let at =
            |p: f32| self.sorted[((p * (self.sorted.len() - 1) as f32).round() as usize).min(self.sorted.len() - 1)];
        FrameSummary {
            mean: self.sorted.iter().sum::<f32>() / self.sorted.len() as f32,
            p50: at(0.5),
            p99: at(0.99),
            max: *self.sorted.last().expect("not empty"),
        }
    }

    /// Oldest first.
    fn in_order(&self) -> impl Iterator<Item = f32> + '_ {
        let split = if self.ms.len() < WINDOW { 0 } else { self.next };
        self.ms[split..].iter().chain(&self.ms[..split]).copied()
    }
}

/// Everything the overlay shows about the running world, gathered by the window each frame.
#[derive(Clone, Debug, Default)]
pub struct Readout {
    /// Backend in use.
    pub backend: Backend,
    /// Threads the schedule uses.
    pub threads: usize,
    /// The whole frame, start to start (presenting included), ms statistics: its mean's inverse is the FPS shown.
    pub whole: FrameSummary,
    /// The simulation's CPU time per drawn frame (every step it ran), ms statistics.
    pub sim: FrameSummary,
    /// The running world's scenario.
    pub scenario: Scenario,
    /// Live entities by kind.
    pub census: Census,
    /// Spawns per second over the last second.
    pub spawns_per_s: f32,
    /// Deaths per second over the last second.
    pub deaths_per_s: f32,
    /// Lifecycle events fired per second over the last second (a fighter's fall and despawn, particles' despawns).
    pub events_per_s: f32,
    /// Commands applied and skipped since the start.
    pub commands: (u64, u64),
    /// Stale target handles caught.
    pub stale: u64,
    /// Health values changed by a hit, added and removed in the last simulation frame (change detection).
    pub health_changes: (usize, usize, usize),
    /// Storage bytes of the current backend.
    pub bytes: usize,
    /// The last digest taken and the frame it was taken at; `None` until one is asked for.
    pub digest: Option<(u64, u64)>,
    /// How long that digest took, in ms (work the overlay did on demand, not counted in the frame times).
    pub digest_ms: f32,
    /// A group of systems was turned off at some point: the run is not the plain run of its seed.
    pub modified: bool,
    /// Simulation frames.
    pub sim_frame: u64,
    /// Fighters of bursts and particles refused (world full), each counted once.
    pub refused: u64,
    /// Fighters below the target the full world held the refill at, in the last frame.
    pub short: u32,
    /// Paused?
    pub paused: bool,
    /// The world pass's draw calls and the quads in them (`render` is the CPU time building them).
    pub draw_calls: (u32, u32),
}

/// One row of the systems tree: a group with its systems, or a system in no group. Rows are the profiler's.
enum Node {
    Group { name: &'static str, row: usize, enabled: bool, systems: Vec<usize> },
    System(usize),
}

/// The simulation's systems in run order as a tree (stage order; a group's systems under it), and the spans that
/// are not the simulation's (the y-sort, render, overlay, on-demand digest) apart. Built once from the app's
/// layout, which a reset or a quick load keeps; [`Tree::refresh`] reads which groups are on.
pub struct Tree {
    nodes: Vec<Node>,
    apart: Vec<usize>,
}

impl Tree {
    /// The tree of `app`'s systems, as rows of `profiler`; spans registered later than this are not shown.
    pub fn new(app: &App, profiler: &Profiler) -> Self {
        let names: Vec<String> = profiler.with_timings(|t| t.stats().iter().map(|s| s.name.clone()).collect());
        let row = |name: &str| names.iter().position(|n| n == name);
        let groups: Vec<_> = app.groups().collect();
        let mut nodes = Vec::new();
        let mut shown = vec![false; names.len()];
        let show = |name: &str, shown: &mut Vec<bool>| {
            let at = row(name)?;
            shown[at] = true;
            Some(at)
        };
        // A frame starts with its state transitions (when one is pending): their systems first.
        for (_, systems) in app.transition_schedules() {
            nodes.extend(systems.iter().filter_map(|s| show(s, &mut shown)).map(Node::System));
        }
        for stage in Stage::FRAME {
            for system in app.system_names(stage) {
                match groups.iter().find(|g| g.systems.contains(&system)) {
                    Some(g) if nodes.iter().any(|n| matches!(n, Node::Group { name, .. } if *name == g.name)) => {}
                    Some(g) => {
                        let Some(at) = show(g.name, &mut shown) else { continue };
                        let systems = g.systems.iter().filter_map(|s| show(s, &mut shown)).collect();
                        nodes.push(Node::Group { name: g.name, row: at, enabled: g.enabled, systems });
                    }
                    None => nodes.extend(show(system, &mut shown).map(Node::System)),
                }
            }
        }
        // The command buffer is applied after the last stage: part of the frame, in no stage.
        nodes.extend(show("apply_commands", &mut shown).map(Node::System));
        let apart = (0..names.len()).filter(|&i| !shown[i]).collect();
        Self { nodes, apart }
    }

    /// Reads which groups of `app` are on (a reset or a quick load turns them all on again).
    pub fn refresh(&mut self, app: &App) {
        for node in &mut self.nodes {
            if let Node::Group { name, enabled, .. } = node {
                *enabled = app.is_group_enabled(name).unwrap_or(true);
            }
        }
    }

    /// The groups that are off.
    fn off(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.nodes.iter().filter_map(|n| match n {
            Node::Group { name, enabled: false, .. } => Some(*name),
            _ => None,
        })
    }

    /// Rows of text the tree takes: its rows, the sum, about two for the window's own spans, and the draw calls.
    fn lines(&self) -> usize {
        let systems: usize =
            self.nodes.iter().map(|n| if let Node::Group { systems, .. } = n { systems.len() } else { 0 }).sum();
        self.nodes.len() + systems + 1 + 3
    }
}

/// Whether the left button went down on the overlay line whose baseline is at `y`.
fn clicked(x: f32, y: f32, width: f32, line: f32) -> bool {
    is_mouse_button_pressed(MouseButton::Left)
        && Rect::new(x, y - line + 4.0, width, line).contains(mouse_position().into())
}

/// The last figures of the backend before the latest switch.
#[derive(Clone, Debug)]
pub struct Previous {
    /// Which backend.
    pub backend: Backend,
    /// Its simulation ms statistics when it was switched away from.
    pub sim: FrameSummary,
    /// Its storage bytes then.
    pub bytes: usize,
    /// Its per-system ms then, one per row of the profiler.
    pub systems: Vec<f64>,
}

/// How the overlay's text fitted, kept from one frame to the next: the box is drawn before its text, at the height
/// the text took the frame before.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fit {
    /// The height the last frame's text took.
    pub height: f32,
    /// Lines of the last frame cut short ("...": a word wider than the box, or no room left on the screen).
    pub cut: usize,
}

/// Draws the overlay in screen space at the top left, at most `max_width` wide and down to `bottom`; a click on a
/// group's row pushes [`Action::Group`], on the digest line [`Action::Digest`]. Returns the overlay's box (clicks
/// there are not bursts). `whole` and `sim` are the frame times, `top` the graph's scale, `text` the reused
/// buffer, `fit` the last frame's fit (updated).
#[allow(clippy::too_many_arguments)]
pub fn draw(
    readout: &Readout,
    (whole, sim): (&FrameTimes, &FrameTimes),
    top: &mut GraphTop,
    previous: Option<&Previous>,
    profiler: &Profiler,
    tree: &Tree,
    (max_width, bottom): (f32, f32),
    text: &mut String,
    actions: &mut Vec<Action>,
    fit: &mut Fit,
) -> Rect {
    let (x0, y0, width) = (10.0, 10.0, max_width.clamp(240.0, 560.0));
    let line = 18.0;
    let graph_h = 70.0;
    let full = readout.refused > 0 || readout.short > 0;
    let lines = 16 + tree.lines() + previous.is_some() as usize + readout.modified as usize + full as usize;
    let height = (lines as f32 * line + graph_h + line + 8.0).max(fit.height);
    let area = Rect::new(x0 - 6.0, y0 - 4.0, width, height);
    draw_rectangle(area.x, area.y, area.w, area.h, Color::new(0.02, 0.03, 0.06, 0.78));
    let mut y = y0 + 14.0;
    let room = width - 12.0;
    let cut = std::cell::Cell::new(0usize);
    // A line too wide goes on over the next ones, indented; a line past `bottom` is not drawn, and counted.
    let put = |text: &str, color: Color, y: &mut f32| {
        let measure = |s: &str| measure_text(s, None, 20, 1.0).width;
        let (mut rest, mut indent) = (text, 0.0);
        loop {
            let (shown, more) = match indent == 0.0 && measure(rest) <= room {
                true => (rest, ""),
                false => layout::wrap(rest, room - indent, measure),
            };
            if *y > bottom {
                cut.set(cut.get() + 1);
                return;
            }
            if fitted(shown, x0 + indent, *y, room - indent, 20, color) {
                cut.set(cut.get() + 1);
            }
            *y += line;
            if more.is_empty() {
                return;
            }
            (rest, indent) = (more, 32.0);
        }
    };
    // One overlay line: format into the reused buffer, draw it, move down.
    macro_rules! say {
        ($color:expr, $($format:tt)*) => {{
            text.clear();
            let _ = write!(text, $($format)*);
            put(text, $color, &mut y);
        }};
    }
    let white = Color::new(0.92, 0.94, 0.98, 1.0);
    let dim = Color::new(0.62, 0.68, 0.78, 1.0);
    let amber = Color::new(1.0, 0.78, 0.35, 1.0);
    let teal = Color::new(0.4, 0.85, 0.8, 1.0);
    let red = Color::new(1.0, 0.45, 0.4, 1.0);
    let group = Color::new(0.6, 0.82, 1.0, 1.0);

    // On a line of their own, so a long header cannot cut them off.
    if readout.paused || readout.modified {
        let paused = if readout.paused { "PAUSED   " } else { "" };
        let modified = if readout.modified { "MODIFIED (a group of systems was turned off)" } else { "" };
        say!(red, "{paused}{modified}");
    }
    let (w, f) = (readout.whole, readout.sim);
    text.clear();
    let _ = write!(text, "backend: {}   threads: {}   ", readout.backend, readout.threads);
    if w.mean > 0.0 {
        let _ = write!(text, "{:.0} fps", 1000.0 / w.mean);
    } else {
        let _ = write!(text, "- fps");
    }
    let _ = write!(text, "   scenario: {}", readout.scenario);
    put(text, amber, &mut y);
    say!(dim, "ms per frame          avg      p50      p99      max");
    say!(amber, "whole frame    {:>10.2} {:>8.2} {:>8.2} {:>8.2}", w.mean, w.p50, w.p99, w.max);
    say!(teal, "simulation     {:>10.2} {:>8.2} {:>8.2} {:>8.2}", f.mean, f.p50, f.p99, f.max);
    put("  whole: start to start, present included (fps = 1000 / avg)", dim, &mut y);
    put("  simulation: CPU time of the frame's steps", dim, &mut y);
    if let Some(p) = previous {
        say!(dim, "before ({}): sim avg {:.2}  p99 {:.2}  max {:.2}", p.backend, p.sim.mean, p.sim.p99, p.sim.max);
    }

    // The graph: both times over the window, on a round scale that follows them, with 60 and 30 FPS guides. The
    // labels sit in a gutter at the right that the plotted lines never enter.
    let (gx, gy, gw, gh) = (x0, y, width - 20.0, graph_h);
    let gutter = 72.0;
    let plot_w = gw - gutter;
    let top_ms = top.update(w.max.max(f.max) as f64) as f32;
    let step_ms = top.step() as f32;
    draw_rectangle(gx, gy, gw, gh, Color::new(0.0, 0.0, 0.0, 0.45));
    let grid = Color::new(0.45, 0.5, 0.6, 0.35);
    let mut ms = step_ms;
    while ms < top_ms - 1e-3 {
        let ly = gy + gh - gh * (ms / top_ms);
        draw_line(gx, ly, gx + plot_w, ly, 1.0, grid);
        ms += step_ms;
    }
    let guide = Color::new(0.5, 0.8, 0.5, 0.7);
    for ms in [1000.0 / 60.0, 1000.0 / 30.0] {
        if ms < top_ms {
            let ly = gy + gh - gh * (ms / top_ms);
            draw_line(gx, ly, gx + gw, ly, 1.0, guide);
        }
    }
    let step = plot_w / WINDOW as f32;
    for (times, colour) in [(sim, teal), (whole, amber)] {
        let mut last: Option<(f32, f32)> = None;
        for (i, ms) in times.in_order().enumerate() {
            let point = (gx + i as f32 * step, gy + gh - gh * (ms.min(top_ms) / top_ms));
            if let Some((px, py)) = last {
                draw_line(px, py, point.0, point.1, 1.5, colour);
            }
            last = Some(point);
        }
    }
    for (label, baseline) in layout::graph_labels(top_ms, gh, 13.0) {
        text.clear();
        let colour = match label {
            layout::GraphLabel::Top => {
                let _ = write!(text, "{top_ms} ms");
                dim
            }
            layout::GraphLabel::Step => {
                let _ = write!(text, "grid {step_ms}");
                dim
            }
            layout::GraphLabel::Zero => {
                text.push('0');
                dim
            }
            layout::GraphLabel::Fps60 => {
                text.push_str("60 fps");
                Color::new(0.5, 0.8, 0.5, 0.9)
            }
            layout::GraphLabel::Fps30 => {
                text.push_str("30 fps");
                Color::new(0.5, 0.8, 0.5, 0.9)
            }
            layout::GraphLabel::Fps60And30 => {
                text.push_str("60,30 fps");
                Color::new(0.5, 0.8, 0.5, 0.9)
            }
        };
        fitted(text, gx + plot_w + 4.0, gy + baseline, gutter - 6.0, 14, colour);
    }
    y += gh + line;

    put("ms last frame, by group (click a group: off / on)", dim, &mut y);
    profiler.with_timings(|timings| {
        let stats = timings.stats();
        let row = |at: usize, indent: &str, width: usize, colour: Color, off: bool, text: &mut String, y: &mut f32| {
            let Some(s) = stats.get(at) else { return };
            text.clear();
            if off && indent.len() > 2 {
                let _ = write!(text, "{indent}{:<width$}     off", s.name);
            } else if off {
                let _ = write!(text, "{indent}{:<width$}     off   (click: on)", s.name);
            } else {
                let _ = write!(text, "{indent}{:<width$} {:>7.3}", s.name, s.last_ms);
                // A second thread paid in its last run: its batch ran at once, or other threads did a quarter of
                // its time in work (`SpanStat::parallel`).
                text.push_str(if s.parallel { " par" } else { "    " });
                if let Some(before) = previous.and_then(|p| p.systems.get(at)) {
                    let _ = write!(text, "   before {before:>7.3}");
                }
            }
            put(text, if off { red } else { colour }, y);
        };
        for node in &tree.nodes {
            match node {
                Node::System(at) => row(*at, "  ", 22, white, false, text, &mut y),
                Node::Group { name, row: at, enabled, systems } => {
                    if clicked(x0 - 6.0, y, width, line) {
                        actions.push(Action::Group(name, !enabled));
                    }
                    row(*at, "  ", 22, group, !enabled, text, &mut y);
                    // A group that is off runs none of its systems: their last times would be old news.
                    for &system in systems {
                        row(system, "      ", 18, white, !enabled, text, &mut y);
                    }
                }
            }
        }
        // The frame's systems add up to more than the frame's time when some ran at once on several threads.
        let mut sum = 0.0;
        for node in &tree.nodes {
            match node {
                Node::System(at) => sum += stats.get(*at).map_or(0.0, |s| s.last_ms),
                Node::Group { enabled: true, systems, .. } => {
                    sum += systems.iter().filter_map(|&at| stats.get(at)).map(|s| s.last_ms).sum::<f64>();
                }
                Node::Group { .. } => {}
            }
        }
        text.clear();
        let _ = write!(text, "  {:<22} {sum:>7.3}    (par: a 2nd thread paid)", "systems' sum");
        put(text, dim, &mut y);
        // The window's own spans, on one line (wrapped when long): not part of the simulation's figures.
        text.clear();
        text.push_str("window, not the simulation:");
        for s in tree.apart.iter().filter_map(|&at| stats.get(at)) {
            let _ = write!(text, "  {} {:.3}", s.name, s.last_ms);
        }
        put(text, dim, &mut y);
        let (calls, quads) = readout.draw_calls;
        say!(dim, "  the world in {calls} draw calls ({quads} sprites and lines)");
    });
    let c = readout.census;
    say!(white, "live: red {}  blue {}  (hunters {})  particles {}", c.red, c.blue, c.hunters, c.particles);
    say!(white, "squads: {} (a hunter and its followers)", c.squads);
    let r = readout;
    say!(white, "per second: spawns {:.0}  deaths {:.0}  events {:.0}", r.spawns_per_s, r.deaths_per_s, r.events_per_s);
    if r.refused > 0 || r.short > 0 {
        say!(red, "world full: refused {} spawns; {} fighters short of the target", r.refused, r.short);
    }
    say!(white, "commands applied {}  skipped {}", r.commands.0, r.commands.1);
    say!(white, "stale handles caught {}", r.stale);
    let (hit, added, removed) = r.health_changes;
    say!(white, "health changed: hit {hit}  added {added}  removed {removed}");
    text.clear();
    let _ = write!(text, "storage: {:.1} KiB", readout.bytes as f64 / 1024.0);
    if let Some(p) = previous {
        let _ = write!(text, "   before ({}): {:.1} KiB", p.backend, p.bytes as f64 / 1024.0);
    }
    put(text, white, &mut y);
    // The digest line, clickable: on demand only, and marked when a group was turned off.
    if clicked(x0 - 6.0, y, width, line) {
        actions.push(Action::Digest);
    }
    text.clear();
    match r.digest {
        None => {
            let _ = write!(text, "digest: D or click here (walks the whole world)");
        }
        Some((digest, frame)) => {
            let _ = write!(text, "digest {digest:016x} @ frame {frame}");
            if frame != r.sim_frame {
                let _ = write!(text, " (now {}: D)", r.sim_frame);
            }
            let _ = write!(text, "  ({:.2} ms, apart)", r.digest_ms);
        }
    }
    put(text, if r.modified { red } else { dim }, &mut y);
    if r.modified {
        // Under the digest: it is not the digest of the seed's plain run.
        text.clear();
        let mut off = tree.off().peekable();
        if off.peek().is_none() {
            let _ = write!(text, "  (modified: a group was turned off)");
        } else {
            let _ = write!(text, "  (modified:");
            for name in off {
                let _ = write!(text, " {name}");
            }
            let _ = write!(text, " off)");
        }
        put(text, red, &mut y);
    }
    *fit = Fit { height: y - line + 8.0 - area.y, cut: cut.get() };
    area
}

/// Draws `text` at (`x`, `y`) in `size` px, cut with "..." to `width` if it is wider; returns whether it was cut.
pub fn fitted(text: &str, x: f32, y: f32, width: f32, size: u16, color: Color) -> bool {
    let measure = |s: &str| measure_text(s, None, size, 1.0).width;
    let n = layout::fit(text, width, measure);
    draw_text(&text[..n], x, y, size as f32, color);
    if n < text.len() {
        draw_text(layout::ELLIPSIS, x + measure(&text[..n]), y, size as f32, color);
    }
    n < text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_over_a_full_window() {
        let mut t = FrameTimes::default();
        for i in 0..(WINDOW + 50) {
            t.push((i % 100) as f32);
        }
        let s = t.summary();
        assert_eq!(s.max, 99.0);
        assert!((s.p50 - 49.5).abs() <= 1.0, "{s:?}");
        assert_eq!(t.in_order().count(), WINDOW);
        t.clear();
        assert_eq!(t.summary(), FrameSummary::default());
    }
}
