//! The `stress` scenario in the window: the held button's waves, the wave tints, the corner readout (always on in
//! the scenario), and the window's `--benchmark` and `--ramp`, which time the whole frame (present included) with
//! one fixed step a frame.

use super::overlay::{self, FrameSummary};
use macroquad::prelude::*;
use swarm::sim::stress::{Percentiles, Ramp, RampEnd, RampNext, FIGHTERS_PER_SECOND};

/// Wave tints: red's hues in the even slots, blue's in the odd ones, so a team's waves cycle through its own.
pub const WAVE_TINTS: [(f32, f32, f32); 8] = [
    (0.95, 0.30, 0.25), // red
    (0.30, 0.55, 1.00), // blue
    (1.00, 0.62, 0.20), // orange
    (0.30, 0.90, 0.95), // cyan
    (0.95, 0.35, 0.75), // pink
    (0.62, 0.45, 1.00), // violet
    (0.95, 0.85, 0.30), // yellow
    (0.35, 0.95, 0.60), // green
];

/// Wave `number`'s slot in [`WAVE_TINTS`], for a red or a blue wave: a function of the wave's number alone (a
/// component of the simulation), so the tints are the same in a replay.
pub fn wave_slot(number: u32, red: bool) -> u8 {
    let hues = (WAVE_TINTS.len() / 2) as u32;
    ((number % hues) * 2) as u8 + u8::from(!red)
}

/// The left button held over the arena: the input to send this frame if the held point changed (pressed, moved,
/// released): `Some(Some(point))` to hold waves there, `Some(None)` to stop. `held` is what the world holds now (a
/// reset or a load forgets a hold). A press over the overlay or the panel starts nothing.
pub fn hold_input(point: Vec2, over_ui: bool, held: Option<Vec2>) -> Option<Option<Vec2>> {
    let down = is_mouse_button_down(MouseButton::Left);
    let pressed = is_mouse_button_pressed(MouseButton::Left) && !over_ui;
    let want = (down && (held.is_some() || pressed)).then_some(point);
    (want != held).then_some(want)
}

/// What the window's stress run measures: each whole frame (start to start, present included) for the
/// benchmark, the ramp, and the readout's raw and smoothed FPS.
pub struct Meter {
    /// Every whole frame after the first (`--benchmark`).
    pub frames: Vec<f64>,
    /// The ramp, under `--ramp`.
    pub ramp: Option<Ramp>,
    /// The last whole frame, and the frame time smoothed over about a second (exponentially).
    last_ms: f32,
    smooth_ms: f32,
    /// Sprites drawn in the last frame.
    pub drawn: u32,
}

impl Meter {
    /// A meter; `ramp_ms` starts a ramp against that budget.
    pub fn new(ramp_ms: Option<f64>) -> Self {
        Self { frames: Vec::new(), ramp: ramp_ms.map(Ramp::new), last_ms: 0.0, smooth_ms: 0.0, drawn: 0 }
    }

    /// Takes the whole time of the frame just ended, `frame` the frames rendered before it (the first runs the
    /// pre-spawn, and is left out of the benchmark) and `fighters` alive; returns the ramp's next move.
    pub fn frame(&mut self, ms: f32, frame: u32, fighters: u32, benchmark: bool) -> RampNext {
        self.last_ms = ms;
        // An exponential mean whose weight is the frame's share of a second: about the last second's frames.
        let weight = (ms / 1000.0).clamp(0.0, 1.0);
        self.smooth_ms = if self.smooth_ms == 0.0 { ms } else { self.smooth_ms + (ms - self.smooth_ms) * weight };
        if benchmark && frame > 1 {
            self.frames.push(f64::from(ms));
        }
        match &mut self.ramp {
            Some(ramp) => ramp.frame(f64::from(ms), fighters),
            None => RampNext::Run,
        }
    }

    /// The benchmark's whole-frame percentiles.
    pub fn percentiles(&self) -> Percentiles {
        Percentiles::of(&mut self.frames.clone())
    }
}

/// The ramp's verdict for the window.
pub fn ramp_line(end: &RampEnd) -> String {
    end.line("the whole frame in the window, present included")
}

/// What the readout shows besides the meter.
pub struct Figures {
    /// Entities alive.
    pub entities: u32,
    /// Fighters alive.
    pub fighters: u32,
    /// Waves served.
    pub waves: u32,
    /// The window's whole frame over the last [`overlay::WINDOW`] frames.
    pub whole: FrameSummary,
    /// Whether waves are held now.
    pub holding: bool,
}

/// Draws the readout with its top right corner at (`right`, `top`), at most `max_width` wide: as wide as its
/// longest line (measured), each line cut to the box if the box is capped. Returns its bottom.
pub fn draw_readout(
    meter: &Meter,
    figures: &Figures,
    (right, top): (f32, f32),
    max_width: f32,
    text: &mut String,
) -> f32 {
    use std::fmt::Write;
    const SIZE: u16 = 20;
    const LINE: f32 = 24.0;
    const PAD: f32 = 10.0;
    text.clear();
    let raw = if meter.last_ms > 0.0 { 1000.0 / meter.last_ms } else { 0.0 };
    let smooth = if meter.smooth_ms > 0.0 { 1000.0 / meter.smooth_ms } else { 0.0 };
    let mut ends = [0usize; 7];
    let mut n = 0;
    let mut end_line = |text: &String| {
        ends[n] = text.len();
        n += 1;
    };
    let what = if figures.holding { "adding" } else { "hold the left button" };
    let _ = write!(text, "STRESS: {what}, {FIGHTERS_PER_SECOND} fighters/s");
    end_line(text);
    let _ = write!(text, "entities {}   fighters {}", figures.entities, figures.fighters);
    end_line(text);
    let _ = write!(text, "waves {}   sprites drawn {}", figures.waves, meter.drawn);
    end_line(text);
    let _ = write!(text, "FPS {raw:.1} last frame, {smooth:.1} smoothed (1 s)");
    end_line(text);
    let _ =
        write!(text, "frame ms p50 {:.2}  p99 {:.2} (last {})", figures.whole.p50, figures.whole.p99, overlay::WINDOW);
    end_line(text);
    if let Some(ramp) = &meter.ramp {
        let _ = match ramp.steps.last() {
            Some(step) => write!(text, "ramp step {}: {step}", ramp.steps.len()),
            None => write!(text, "ramp: measuring the first step"),
        };
        end_line(text);
    }
    let lines = || (0..n).map(|i| &text[if i == 0 { 0 } else { ends[i - 1] }..ends[i]]);
    let widest = lines().map(|line| measure_text(line, None, SIZE, 1.0).width).fold(0.0, f32::max);
    let width = widest.min(max_width - 2.0 * PAD).max(0.0);
    let (x, height) = (right - width - PAD, LINE * n as f32 + 12.0);
    draw_rectangle(x - PAD, top, width + 2.0 * PAD, height, Color::new(0.02, 0.03, 0.06, 0.88));
    for (i, line) in lines().enumerate() {
        let colour = if i == 0 { Color::new(1.0, 0.85, 0.45, 1.0) } else { Color::new(0.92, 0.94, 0.98, 1.0) };
        overlay::fitted(line, x, top + 22.0 + LINE * i as f32, width, SIZE, colour);
    }
    top + height
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waves_slot_keeps_its_team_and_cycles_its_hues() {
        for n in 0..40 {
            assert_eq!(wave_slot(n, true) % 2, 0);
            assert_eq!(wave_slot(n, false) % 2, 1);
            assert!((wave_slot(n, false) as usize) < WAVE_TINTS.len());
        }
        assert_ne!(wave_slot(0, true), wave_slot(1, true));
    }
}
