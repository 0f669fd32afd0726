//! The legend (L shows or hides it; shown at the start): the scenario and what it shows, then each mark of the
//! battle beside a sample drawn with the same textures and colours: the teams, a hunter with its ring and target
//! line, a stale-handle marker, a death's sparks, and the army fields of the far zoom. Static text only, wrapped
//! to the box once (slices of the text, kept until the width or scenario changes): a frame allocates nothing.

use super::layout;
use super::sprites::{self, Sprites, BLUE_TINT, MARKER_TINT, RED_TINT};
use macroquad::prelude::*;
use swarm::sim::Scenario;

const TEXT: Color = Color::new(0.92, 0.94, 0.98, 1.0);
const DIM: Color = Color::new(0.62, 0.68, 0.78, 1.0);
const AMBER: Color = Color::new(1.0, 0.78, 0.35, 1.0);
/// The legend's box colour (the window test looks for it).
pub const BOX: Color = Color::new(0.03, 0.05, 0.10, 0.9);

/// The samples, in the order shown.
#[derive(Clone, Copy)]
enum Sample {
    Teams,
    Hunter,
    Stale,
    Death,
    Field,
}

const ENTRIES: [(Sample, &str); 5] = [
    (Sample::Teams, "red and blue teams; darker when hurt, white as a hit lands"),
    (Sample::Hunter, "hunter: ringed; line to target; its squad linked"),
    (Sample::Stale, "stale handle caught: the target had died"),
    (Sample::Death, "death: a burst of sparks"),
    (Sample::Field, "zoomed far out: red or blue where one team holds the ground, paler where both do"),
];

const SIZE: u16 = 16;
const LINE: f32 = 17.0;
const ICON: f32 = 34.0;

fn color((r, g, b): (f32, f32, f32), a: f32) -> Color {
    Color::new(r, g, b, a)
}

/// The legend's text wrapped to a width: made again only when the width or the scenario changes, so a frame
/// draws without measuring text (wrapping measures it many times).
#[derive(Default)]
pub struct Legend {
    made_for: Option<(u32, Scenario)>,
    /// The description's lines, then each entry's, tagged with their paragraph (0 the description, 1.. the
    /// entries).
    lines: Vec<(usize, &'static str)>,
}

impl Legend {
    fn make(&mut self, width: f32, scenario: Scenario) {
        if self.made_for == Some((width.to_bits(), scenario)) {
            return;
        }
        self.made_for = Some((width.to_bits(), scenario));
        self.lines.clear();
        let measure = |s: &str| measure_text(s, None, SIZE, 1.0).width;
        let inner = width - 20.0;
        let paragraphs =
            std::iter::once((scenario.describe(), inner)).chain(ENTRIES.iter().map(|&(_, what)| (what, inner - ICON)));
        for (i, (text, room)) in paragraphs.enumerate() {
            let mut rest = text;
            while !rest.is_empty() {
                let (line, next) = layout::wrap(rest, room, measure);
                self.lines.push((i, line));
                rest = next;
            }
        }
    }

    fn paragraph(&self, i: usize) -> impl Iterator<Item = &'static str> + '_ {
        self.lines.iter().filter(move |(p, _)| *p == i).map(|&(_, line)| line)
    }
}

/// Draws (or, with `draw` false, only measures) the `lines` from baseline `y`; returns the baseline after them.
fn lines<'a>(lines: impl Iterator<Item = &'a str>, x: f32, mut y: f32, colour: Color, draw: bool) -> f32 {
    for line in lines {
        if draw {
            draw_text(line, x, y, SIZE as f32, colour);
        }
        y += LINE;
    }
    y
}

fn sample(kind: Sample, at: Vec2, sprites: &Sprites) {
    let fighter = |c: Vec2, tint: Color| sprites::draw_centered(sprites.fighter(), c, 11.0, 0.0, tint);
    match kind {
        Sample::Teams => {
            fighter(at + vec2(-8.0, -3.0), color(RED_TINT, 1.0));
            fighter(at + vec2(7.0, -3.0), color(BLUE_TINT, 1.0));
            let hurt = 0.5;
            fighter(at + vec2(-8.0, 9.0), color((RED_TINT.0 * hurt, RED_TINT.1 * hurt, RED_TINT.2 * hurt), 1.0));
            fighter(at + vec2(7.0, 9.0), color((BLUE_TINT.0 * hurt, BLUE_TINT.1 * hurt, BLUE_TINT.2 * hurt), 1.0));
        }
        Sample::Hunter => {
            let target = at + vec2(13.0, 8.0);
            draw_line(at.x - 4.0, at.y, target.x, target.y, 1.5, Color::new(0.65, 0.77, 1.0, 0.6));
            fighter(target, color(RED_TINT, 1.0));
            let c = color(BLUE_TINT, 1.0);
            sprites::draw_centered(sprites.hunter(), at + vec2(-4.0, 0.0), 13.0, 0.0, c);
            let ring = Color::new(0.55 + 0.45 * c.r, 0.55 + 0.45 * c.g, 0.55 + 0.45 * c.b, 0.9);
            sprites::draw_centered(sprites.ring(22.0), at + vec2(-4.0, 0.0), 22.0, 0.0, ring);
            // Two followers of its squad, linked to it.
            let link = Color::new(0.7, 0.75, 1.0, 0.5);
            for follower in [at + vec2(-13.0, -9.0), at + vec2(-13.0, 9.0)] {
                draw_line(follower.x, follower.y, at.x - 4.0, at.y, 1.0, link);
                fighter(follower, c);
            }
        }
        Sample::Stale => {
            sprites::draw_centered(sprites.ring(26.0), at, 26.0, 0.0, color(MARKER_TINT, 0.9));
            sprites::draw_centered(sprites.ring(14.0), at, 14.0, 0.0, color(MARKER_TINT, 0.6));
        }
        Sample::Death => {
            for k in 0..5 {
                let angle = k as f32 * 1.2566 + 0.3;
                let d = vec2(angle.cos(), angle.sin());
                let (p, tail) = (at + d * 10.0, at + d * 3.0);
                draw_line(p.x, p.y, tail.x, tail.y, 2.0, Color::new(1.0, 0.75, 0.4, 0.8));
                sprites::draw_centered(sprites.particle(), p, 8.0, 0.0, Color::new(1.0, 0.9, 0.6, 1.0));
            }
        }
        Sample::Field => {
            let (x, y) = (at.x - 14.0, at.y - 8.0);
            draw_rectangle(x, y, 13.0, 16.0, color(RED_TINT, 0.8));
            draw_rectangle(x + 15.0, y, 13.0, 16.0, color(BLUE_TINT, 0.8));
        }
    }
}

/// Draws the legend `width` wide with its top left at (`x`, `y`), for `scenario`; returns its height. With
/// `draw` false it only measures.
fn pass(legend: &Legend, x: f32, y: f32, scenario: Scenario, sprites: &Sprites, draw: bool) -> f32 {
    let (x, mut base) = (x + 10.0, y + 20.0);
    if draw {
        draw_text("legend", x, base, 20.0, TEXT);
        draw_text("(L hides)", x + 70.0, base, 16.0, DIM);
    }
    base += LINE + 3.0;
    if draw {
        draw_text("scenario:", x, base, SIZE as f32, DIM);
        draw_text(scenario.name(), x + 80.0, base, SIZE as f32, AMBER);
    }
    base = lines(legend.paragraph(0), x, base + LINE, DIM, draw) + 6.0;
    for (i, (kind, _)) in ENTRIES.into_iter().enumerate() {
        let top = base - LINE + 4.0;
        let end = lines(legend.paragraph(i + 1), x + ICON, base, TEXT, draw);
        let height = (end - base).max(26.0);
        if draw {
            sample(kind, vec2(x + 13.0, top + height / 2.0 - 3.0), sprites);
        }
        base += height.max(LINE) + 6.0;
    }
    base - LINE + 4.0 - y
}

impl Legend {
    /// Draws the legend in a box `width` wide with its top left at (`x`, `y`); returns the box.
    pub fn draw(&mut self, x: f32, y: f32, width: f32, scenario: Scenario, sprites: &Sprites) -> Rect {
        self.make(width, scenario);
        let height = pass(self, x, y, scenario, sprites, false);
        let area = Rect::new(x, y, width, height);
        draw_rectangle(area.x, area.y, area.w, area.h, BOX);
        pass(self, x, y, scenario, sprites, true);
        area
    }
}
