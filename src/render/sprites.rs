//! Sprites: textures from `assets/` (or the built-in art when a file is missing or broken), tinted by team and
//! health, drawn through the window's camera. Hunters wear a ring and a faint line to a live target; particles
//! are hot streaks that flash at birth, so a death reads as a burst; [`StaleMarkers`] ring where a hunter found its
//! handle stale. Zoomed far out (100,000 fighters fitted, a fighter two pixels wide) hunters, rings and markers
//! keep a minimum size in pixels, and a [`FieldLayer`] paints each army's colour under the sprites, so the front
//! reads where the colours meet. No allocation per sprite: one query per kind, one batched draw per entity, and
//! dense team marks, markers and the field in reused buffers.

use macroquad::prelude::*;
use std::path::Path;
use swarm::art::Sprite;
use swarm::ecs::{Parent, World};
use swarm::sim::components::{Blue, Health, Hunter, Lifetime, Position, Red, Target, Velocity, Wave};
use swarm::sim::lifecycle::Hurt;
pub use swarm::sim::painter::DrawOrder;
use swarm::sim::painter::TeamField;
use swarm::sim::step::Trail;
use swarm::sim::{SimConfig, SimStats, StaleCatches};

/// The three textures, the ring drawn around hunters and stale markers, and where the textures came from.
pub struct Sprites {
    fighter: Texture2D,
    hunter: Texture2D,
    particle: Texture2D,
    ring: Texture2D,
    /// The same ring three times as thick, for rings only a few pixels wide.
    ring_thick: Texture2D,
    /// `assets/` or a note on what fell back to the built-in art.
    pub source: String,
}

fn load_one(dir: &Path, sprite: Sprite) -> (Texture2D, Option<String>) {
    let path = dir.join(sprite.file_name());
    // Decoded with `image` itself, whose errors read as words ("The image format could not be determined");
    // macroquad's loader would wrap them in its own error's debug form.
    let loaded = std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| image::load_from_memory(&bytes).map(|decoded| decoded.to_rgba8()).map_err(|e| e.to_string()));
    match loaded {
        Ok(rgba) => {
            let (width, height) = (rgba.width(), rgba.height());
            match (u16::try_from(width), u16::try_from(height)) {
                (Ok(w), Ok(h)) => (Texture2D::from_rgba8(w, h, rgba.as_raw()), None),
                _ => fallback(&path, sprite, &format!("{width} x {height} pixels is too large for a sprite")),
            }
        }
        Err(error) => fallback(&path, sprite, &error),
    }
}

/// The built-in art for `sprite`, with a note naming the file and why it was not used (also printed).
fn fallback(path: &Path, sprite: Sprite, why: &str) -> (Texture2D, Option<String>) {
    let note = format!("{}: {why}; using the built-in sprite", path.display());
    eprintln!("swarm: {note}");
    let n = sprite.size() as u16;
    (Texture2D::from_rgba8(n, n, &sprite.pixels()), Some(note))
}

impl Sprites {
    /// Loads the textures from `dir`. A missing or undecodable file is reported (naming it) and replaced by the
    /// same art generated in code, so the window always opens.
    pub fn load(dir: &Path) -> Self {
        let (fighter, a) = load_one(dir, Sprite::Fighter);
        let (hunter, b) = load_one(dir, Sprite::Hunter);
        let (particle, c) = load_one(dir, Sprite::Particle);
        for t in [&fighter, &hunter, &particle] {
            t.set_filter(FilterMode::Linear);
        }
        let notes: Vec<String> = [a, b, c].into_iter().flatten().collect();
        let source = if notes.is_empty() { format!("{}", dir.display()) } else { notes.join("; ") };
        let ring = Texture2D::from_rgba8(RING_PX as u16, RING_PX as u16, &ring_pixels(0.09));
        ring.set_filter(FilterMode::Linear);
        let ring_thick = Texture2D::from_rgba8(RING_PX as u16, RING_PX as u16, &ring_pixels(0.22));
        ring_thick.set_filter(FilterMode::Linear);
        Self { fighter, hunter, particle, ring, ring_thick, source }
    }

    /// The fighter texture (the legend shows it).
    pub fn fighter(&self) -> &Texture2D {
        &self.fighter
    }

    /// The hunter texture.
    pub fn hunter(&self) -> &Texture2D {
        &self.hunter
    }

    /// The particle texture.
    pub fn particle(&self) -> &Texture2D {
        &self.particle
    }

    /// The ring for a ring `pixels` wide on screen: thin when large, thick when small, so it reads either way.
    pub fn ring(&self, pixels: f32) -> &Texture2D {
        if pixels < 12.0 {
            &self.ring_thick
        } else {
            &self.ring
        }
    }
}

/// Side of the ring texture in pixels.
const RING_PX: u32 = 64;

/// A white ring (outer radius the texture's edge, `half` of the radius each side of 0.9 of it) with soft edges:
/// made here, not an asset, as it is an outline rather than art.
fn ring_pixels(half: f32) -> Vec<u8> {
    let c = (RING_PX as f32 - 1.0) / 2.0;
    let mut out = Vec::with_capacity((RING_PX * RING_PX * 4) as usize);
    for y in 0..RING_PX {
        for x in 0..RING_PX {
            let r = ((x as f32 - c).powi(2) + (y as f32 - c).powi(2)).sqrt() / c;
            let centre = 0.98 - half;
            let alpha = (1.0 - (r - centre).abs() / half).clamp(0.0, 1.0).powf(0.7);
            out.extend_from_slice(&[255, 255, 255, (alpha * 255.0) as u8]);
        }
    }
    out
}

/// How long a stale marker shows, in seconds.
pub const MARKER_SECONDS: f32 = 0.5;
/// The most markers alive at once (more are dropped: at 100,000 fighters a second of them would be thousands).
const MARKER_CAP: usize = 2048;

/// The window's short list of places where hunters found their target handle stale, each with its age: an
/// expanding, fading ring. Fed from the simulation's [`StaleCatches`] after every frame it runs.
pub struct StaleMarkers {
    live: Vec<(Vec2, f32)>,
    /// The simulation frame whose catches were taken last, so a frame is taken once however often it is asked.
    taken: Option<u64>,
}

impl Default for StaleMarkers {
    fn default() -> Self {
        // Reserved whole up front: the list never grows, so it never allocates after the start.
        Self { live: Vec::with_capacity(MARKER_CAP), taken: None }
    }
}

impl StaleMarkers {
    /// Takes the catches of the frame `world` last ran, if not taken yet.
    pub fn take(&mut self, world: &World) {
        let frame = world.resource::<SimStats>().frames;
        if self.taken == Some(frame) {
            return;
        }
        self.taken = Some(frame);
        let Some(catches) = world.get_resource::<StaleCatches>() else { return };
        let room = MARKER_CAP - self.live.len();
        self.live.extend(catches.0.iter().take(room).map(|&at| (at, 0.0)));
    }

    /// Ages the markers by `seconds` and drops the expired.
    pub fn age(&mut self, seconds: f32) {
        for marker in &mut self.live {
            marker.1 += seconds;
        }
        self.live.retain(|&(_, age)| age < MARKER_SECONDS);
    }

    /// Draws the markers: rings growing from a hunter's size to several, fading out. Sizes are in pixels (`px`
    /// units per pixel), so they read at any zoom.
    pub fn draw(&self, sprites: &Sprites, px: f32) {
        for &(at, age) in &self.live {
            let t = (age / MARKER_SECONDS).clamp(0.0, 1.0);
            let pixels = 14.0 + 34.0 * t.sqrt();
            let tint = Color::new(MARKER_TINT.0, MARKER_TINT.1, MARKER_TINT.2, (1.0 - t).powf(1.2));
            draw_centered(sprites.ring(pixels), at, pixels * px, 0.0, tint);
        }
    }
}

/// Reused per-frame buffers: team and hunter marks by entity index, each wave fighter's tint (its slot in
/// [`super::stress::WAVE_TINTS`] plus one; 0 for none), and the sprites the last frame drew.
#[derive(Default)]
pub struct DrawScratch {
    marks: Vec<u8>,
    tints: Vec<u8>,
    /// Textured quads drawn in the last frame: fighters, hunters, rings and particles.
    pub drawn: u32,
}

const RED: u8 = 1;
const BLUE: u8 = 2;
const HUNTER: u8 = 4;
/// Hurt in the last simulation frame ([`Hurt`]): drawn with a white flash.
const HURT: u8 = 8;

/// A fighter sprite's width in arena units (the camera's closest zoom is set by it).
pub fn fighter_size(config: &SimConfig) -> f32 {
    config.radius * 2.6
}

/// Team colours.
pub const RED_TINT: (f32, f32, f32) = (0.95, 0.30, 0.25);
/// Blue's.
pub const BLUE_TINT: (f32, f32, f32) = (0.30, 0.55, 1.0);
/// A stale-handle marker's colour.
pub const MARKER_TINT: (f32, f32, f32) = (1.0, 0.95, 0.55);

/// The smallest hunter sprite and hunter ring on screen, in pixels: at 100,000 fighters fitted a hunter would be
/// three pixels and its ring five, lost in the crowd.
const MIN_HUNTER_PX: f32 = 4.5;
const MIN_RING_PX: f32 = 8.0;

/// How far out the view is, from 0 (a fighter 6 px or more) to 1 (2 px or less): hunters turn paler and the team
/// field shows as it rises.
pub fn far(fighter_px: f32) -> f32 {
    ((6.0 - fighter_px) / 4.0).clamp(0.0, 1.0)
}

/// Draws hunters' target lines, squad links (zoomed in), fighters (tinted by team, dimmed as they lose health,
/// flashing white in the frame a hit lands), hunters (their own sprite
/// and a ring), then particles over them. `px` is arena units per screen pixel (for lines a pixel or so wide).
///
/// With `between` (the positions before the last step, and how far the frame is past it), fighters, hunters and
/// their lines are drawn that far from where they were to where they are: motion stays smooth at any frame rate.
pub fn draw_world(
    world: &World,
    sprites: &Sprites,
    scratch: &mut DrawScratch,
    px: f32,
    between: Option<(&Trail, f32)>,
) {
    let config = world.resource::<SimConfig>();
    let at = |e: swarm::ecs::Entity, p: &Position| match between {
        Some((trail, alpha)) => Position(trail.at(e, p.0, alpha)),
        None => *p,
    };
    let marks = &mut scratch.marks;
    marks.clear();
    marks.resize(world.entities().index_bound() as usize, 0);
    world.query_ref::<(&Red,)>().for_each(|e, _| marks[e.index() as usize] |= RED);
    world.query_ref::<(&Blue,)>().for_each(|e, _| marks[e.index() as usize] |= BLUE);
    world.query_ref::<(&Hunter,)>().for_each(|e, _| marks[e.index() as usize] |= HUNTER);
    // The hurt, from change detection (a list in handle order, not a walk of every fighter).
    for e in world.get_resource::<Hurt>().map_or(&[][..], |hurt| &hurt.hurt) {
        if let Some(mark) = marks.get_mut(e.index() as usize) {
            *mark |= HURT;
        }
    }
    // A wave's fighters (the stress scenario) wear their wave's tint, in their team's hues.
    let tints = &mut scratch.tints;
    tints.clear();
    if world.count_of::<Wave>() > 0 {
        tints.resize(marks.len(), 0);
        world.query_ref::<(&Wave,)>().for_each(|e, (w,)| {
            let red = marks[e.index() as usize] & RED != 0;
            tints[e.index() as usize] = super::stress::wave_slot(w.0, red) + 1;
        });
    }
    let tints = &*tints;
    let team = |e: swarm::ecs::Entity| match tints.get(e.index() as usize) {
        Some(&slot) if slot > 0 => super::stress::WAVE_TINTS[slot as usize - 1],
        _ if marks[e.index() as usize] & RED != 0 => RED_TINT,
        _ => BLUE_TINT,
    };
    let drawn = std::cell::Cell::new(0u32);

    // Target lines first, under everyone. A stale handle finds no position (its generation is gone), so only
    // live targets get a line.
    world.query_ref::<(&Position, &Target)>().for_each(|e, (p, t)| {
        if let Some(goal) = world.get::<Position>(t.0) {
            let (p, goal) = (at(e, p), at(t.0, goal));
            let (r, g, b) = team(e);
            let color = Color::new(0.5 + 0.5 * r, 0.5 + 0.5 * g, 0.5 + 0.5 * b, 0.45);
            draw_line(p.0.x, p.0.y, goal.0.x, goal.0.y, (1.5 * px).max(0.5), color);
        }
    });

    let size = fighter_size(config);
    // Squad links, zoomed in only (far out they would hatch the field): a faint line from each follower to its
    // captain, in the team's colour.
    if far(size / px) < 0.5 {
        world.query_ref::<(&Position, &Parent)>().for_each(|e, (p, parent)| {
            if let Some(captain) = world.get::<Position>(parent.get()) {
                let (p, captain) = (at(e, p), at(parent.get(), captain));
                let (r, g, b) = team(e);
                let color = Color::new(0.4 + 0.6 * r, 0.4 + 0.6 * g, 0.4 + 0.6 * b, 0.35);
                draw_line(p.0.x, p.0.y, captain.0.x, captain.0.y, (1.0 * px).max(0.35), color);
            }
        });
    }
    let max_health = config.max_health.max(1) as f32;
    let tint = |e: swarm::ecs::Entity, h: &Health, bright: f32| {
        let (r, g, b) = team(e);
        let vigour = bright * (0.35 + 0.65 * (h.0.max(0) as f32 / max_health));
        let (r, g, b) = ((r * vigour).min(1.0), (g * vigour).min(1.0), (b * vigour).min(1.0));
        // A hit flashes: most of the way to white, for the frame it landed in.
        let flash = if marks[e.index() as usize] & HURT != 0 { 0.7 } else { 0.0 };
        Color::new(r + (1.0 - r) * flash, g + (1.0 - g) * flash, b + (1.0 - b) * flash, 1.0)
    };
    let draw = |texture: &Texture2D, p: &Position, v: &Velocity, s: f32, color: Color| {
        drawn.set(drawn.get() + 1);
        draw_centered(texture, p.0, s, v.0.y.atan2(v.0.x), color);
    };
    // Fighters, then hunters over them (one texture per pass, so each pass batches).
    world.query_ref::<(&Position, &Health, &Velocity)>().for_each(|e, (p, h, v)| {
        if marks[e.index() as usize] & HUNTER == 0 {
            draw(&sprites.fighter, &at(e, p), v, size, tint(e, h, 1.0));
        }
    });
    // Zoomed far out, hunters keep a minimum size and turn paler than the fighters around them, so they stand out.
    let far = far(size / px);
    let hunter_size = (size * 1.5).max(MIN_HUNTER_PX * px);
    world.query_ref::<(&Position, &Health, &Velocity, &Hunter)>().for_each(|e, (p, h, v, _)| {
        let c = tint(e, h, 1.2);
        let pale = 0.45 * far;
        let c = Color::new(c.r + (1.0 - c.r) * pale, c.g + (1.0 - c.g) * pale, c.b + (1.0 - c.b) * pale, 1.0);
        draw(&sprites.hunter, &at(e, p), v, hunter_size, c);
    });
    // The ring: pale team colour, wide enough to clear the sprite, never under MIN_RING_PX; fainter when small, as
    // thousands of them then cover the field.
    let ring_size = (hunter_size * 1.7).max(MIN_RING_PX * px);
    let ring_alpha = 0.9 - 0.6 * far;
    let ring = sprites.ring(ring_size / px);
    world.query_ref::<(&Position, &Hunter)>().for_each(|e, (p, _)| {
        let p = at(e, p);
        let (r, g, b) = team(e);
        let color = Color::new(0.55 + 0.45 * r, 0.55 + 0.45 * g, 0.55 + 0.45 * b, ring_alpha);
        drawn.set(drawn.get() + 1);
        draw_centered(ring, p.0, ring_size, 0.0, color);
    });

    // Particles over the fighters, so a death shows: a streak behind each spark (they fly apart from one point, so
    // the streaks make a star), and a glow that starts as a flash and shrinks, white-yellow cooling to red.
    let life = config.particle_life.max(1) as f32;
    let heat = |l: &Lifetime| {
        let fade = (l.0 as f32 / life).clamp(0.0, 1.0);
        (fade, Color::new(1.0, 0.35 + 0.6 * fade, 0.1 + 0.6 * fade * fade, 0.3 + 0.7 * fade))
    };
    let streak = config.radius * 0.3;
    // Streaks under a pixel or so long (zoomed far out) would not show: skipped, which spares most of the draws
    // when 100,000 fighters are fitted to the window.
    let min_tail = (1.5 * px) * (1.5 * px);
    world.query_ref::<(&Position, &Velocity, &Lifetime)>().for_each(|_, (p, v, l)| {
        let back = v.0 * 0.12;
        if back.length_squared() < min_tail {
            return;
        }
        let (_, color) = heat(l);
        let tail = p.0 - back;
        draw_line(p.0.x, p.0.y, tail.x, tail.y, streak.max(px), Color { a: color.a * 0.8, ..color });
    });
    world.query_ref::<(&Position, &Lifetime)>().for_each(|_, (p, l)| {
        let (fade, color) = heat(l);
        let s = config.radius * (2.0 + 4.0 * fade * fade * fade);
        drawn.set(drawn.get() + 1);
        draw_centered(&sprites.particle, p.0, s, 0.0, color);
    });
    scratch.drawn = drawn.get();
}

/// The armies as colour fields under the sprites when zoomed far out: a [`TeamField`] of the fighters, a cell a few
/// pixels wide, written into a reused image and drawn as one texture over the arena (smoothed by linear filtering).
/// Red and blue where one team holds a cell, paler where both do; the front is where the colours meet.
#[derive(Default)]
pub struct FieldLayer {
    field: TeamField,
    image: Option<Image>,
    texture: Option<Texture2D>,
}

/// A field cell's side on screen, in pixels.
const FIELD_CELL_PX: f32 = 8.0;

impl FieldLayer {
    /// Draws the field of `world` for a view of `px` arena units per pixel, faded in by [`far`] (nothing at all
    /// when zoomed in).
    pub fn draw(&mut self, world: &World, px: f32) {
        let config = world.resource::<SimConfig>();
        // Only once a fighter is under 4 px: above that the sprites themselves show the teams.
        let far = ((4.0 - fighter_size(config) / px) / 2.0).clamp(0.0, 1.0);
        if far <= 0.0 {
            return;
        }
        let arena = config.arena;
        // Cells in whole powers of two of units, so a small zoom does not resize the grid every frame.
        let cell = (FIELD_CELL_PX * px).max(1.0).log2().round().exp2();
        self.field.fill(world, arena, cell);
        let (cols, rows) = self.field.size();
        let (w, h) = (cols.min(u16::MAX as usize) as u16, rows.min(u16::MAX as usize) as u16);
        let image = self.image.get_or_insert_with(|| Image::gen_image_color(w, h, BLANK));
        let resized = image.width != w || image.height != h;
        if resized {
            image.width = w;
            image.height = h;
            image.bytes.clear();
            image.bytes.resize(w as usize * h as usize * 4, 0);
        }
        // A cell holding as many fighters as an army's usual density puts there is "full".
        let full = (config.target_population as f32 / (arena.x * arena.y) * cell * cell).max(0.5);
        for ((r, b), out) in self.field.cells().zip(image.bytes.chunks_exact_mut(4)) {
            let (r, b) = (r as f32, b as f32);
            let n = r + b;
            if n == 0.0 {
                out.copy_from_slice(&[0, 0, 0, 0]);
                continue;
            }
            let mix = r.min(b) / r.max(b);
            let white = 0.5 * mix.sqrt();
            let channel = |red: f32, blue: f32| {
                let c = (red * r + blue * b) / n;
                ((c + (1.0 - c) * white) * 255.0) as u8
            };
            let alpha = far * (0.3 + 0.25 * (n / full).min(1.0) + 0.35 * mix.sqrt());
            out.copy_from_slice(&[
                channel(RED_TINT.0, BLUE_TINT.0),
                channel(RED_TINT.1, BLUE_TINT.1),
                channel(RED_TINT.2, BLUE_TINT.2),
                (alpha.min(1.0) * 255.0) as u8,
            ]);
        }
        match &self.texture {
            Some(texture) if !resized => texture.update(image),
            _ => {
                let texture = Texture2D::from_image(image);
                texture.set_filter(FilterMode::Linear);
                self.texture = Some(texture);
            }
        }
        let Some(texture) = &self.texture else { return };
        let size = vec2(cols as f32, rows as f32) * cell;
        draw_texture_ex(texture, 0.0, 0.0, WHITE, DrawTextureParams { dest_size: Some(size), ..Default::default() });
    }
}

/// Draws `texture` as a `size` x `size` square centred on `at`, turned by `rotation` radians.
pub fn draw_centered(texture: &Texture2D, at: Vec2, size: f32, rotation: f32, color: Color) {
    let params = DrawTextureParams { dest_size: Some(vec2(size, size)), rotation, ..Default::default() };
    draw_texture_ex(texture, at.x - size / 2.0, at.y - size / 2.0, color, params);
}
