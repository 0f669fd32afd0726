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

/// What a draw samples, for counting draw calls: the atlas (every sprite and the text, one texture once
/// `build_textures_atlas` has packed them at the start), no texture (lines and rectangles: macroquad's white
/// texture), or the team field's own texture (made later, updated every frame, so not in the atlas).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sheet {
    /// Sprites and text.
    Atlas,
    /// Lines and rectangles.
    Plain,
    /// The far-zoom team field.
    Field,
}

/// The most vertices a draw call holds (the window's `Conf`): indices are `u16`, so 65,536 is the most a call can
/// address.
pub const CALL_VERTICES: usize = 65_536;
/// The most indices a draw call holds: 1.5 a vertex, as a quad has 4 vertices and 6 indices.
pub const CALL_INDICES: usize = 98_304;

/// The world's draw calls in a frame, counted by macroquad's batching rule (`QuadGl::geometry` in macroquad
/// 0.4): a draw joins the last call when it samples the same texture (and nothing else of the state changed, as
/// nothing does inside the world's pass) and the call still has room, that is when it holds fewer than
/// [`CALL_VERTICES`] less the draw's vertices and [`CALL_INDICES`] less its indices; otherwise it starts a call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrawCalls {
    /// Draw calls so far.
    pub calls: u32,
    /// Quads drawn (sprites, lines, rectangles).
    pub quads: u32,
    /// Of those, the sprites (quads on the atlas: fighters, hunters, rings, particles, stale markers).
    pub sprites: u32,
    sheet: Option<Sheet>,
    vertices: usize,
    indices: usize,
}

impl DrawCalls {
    /// Counts `n` quads (4 vertices, 6 indices each) drawn one after another on `sheet`.
    pub fn quads(&mut self, sheet: Sheet, n: u32) {
        self.quads += n;
        if sheet == Sheet::Atlas {
            self.sprites += n;
        }
        let mut left = n as usize;
        while left > 0 {
            if self.sheet != Some(sheet) || !self.fits(4, 6) {
                self.start(sheet);
            }
            // Quads the call takes before it is full: each one needs fewer than the room less its own size held.
            let room =
                (CALL_VERTICES - 4 - self.vertices).div_ceil(4).min((CALL_INDICES - 6 - self.indices).div_ceil(6));
            let taken = room.min(left);
            self.vertices += 4 * taken;
            self.indices += 6 * taken;
            left -= taken;
        }
    }

    /// Counts one draw of `vertices` and `indices` on `sheet` (a rectangle's outline: 8 and 24).
    pub fn shape(&mut self, sheet: Sheet, vertices: usize, indices: usize) {
        if self.sheet != Some(sheet) || !self.fits(vertices, indices) {
            self.start(sheet);
        }
        self.vertices += vertices;
        self.indices += indices;
    }

    fn fits(&self, vertices: usize, indices: usize) -> bool {
        self.vertices < CALL_VERTICES - vertices && self.indices < CALL_INDICES - indices
    }

    fn start(&mut self, sheet: Sheet) {
        self.calls += 1;
        (self.sheet, self.vertices, self.indices) = (Some(sheet), 0, 0);
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

/// The window's short list of places where hunters found their target handle stale, each with its age in
/// simulated seconds: an expanding, fading ring. Fed from the simulation's [`StaleCatches`] after every frame it
/// runs.
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
    /// Takes the catches of the frame `world` last ran, if not taken yet, after ageing the markers by one step: they
    /// age with the simulation, so a paused world keeps them.
    pub fn take(&mut self, world: &World) {
        let frame = world.resource::<SimStats>().frames;
        if self.taken == Some(frame) {
            return;
        }
        self.taken = Some(frame);
        self.age(swarm::sim::DT);
        let Some(catches) = world.get_resource::<StaleCatches>() else { return };
        let room = MARKER_CAP - self.live.len();
        self.live.extend(catches.0.iter().take(room).map(|&at| (at, 0.0)));
    }

    /// Ages the markers by `seconds` and drops the expired.
    fn age(&mut self, seconds: f32) {
        for marker in &mut self.live {
            marker.1 += seconds;
        }
        self.live.retain(|&(_, age)| age < MARKER_SECONDS);
    }

    /// Draws the markers: rings growing from a hunter's size to several, fading out. Sizes are in pixels (`px`
    /// units per pixel), so they read at any zoom.
    pub fn draw(&self, sprites: &Sprites, px: f32, calls: &mut DrawCalls) {
        calls.quads(Sheet::Atlas, self.live.len() as u32);
        for &(at, age) in &self.live {
            let t = (age / MARKER_SECONDS).clamp(0.0, 1.0);
            let pixels = 14.0 + 34.0 * t.sqrt();
            let tint = Color::new(MARKER_TINT.0, MARKER_TINT.1, MARKER_TINT.2, (1.0 - t).powf(1.2));
            draw_centered(sprites.ring(pixels), at, pixels * px, 0.0, tint);
        }
    }
}

/// Reused per-frame buffers: team and hunter marks by entity index, each wave fighter's tint (its slot in
/// [`super::stress::WAVE_TINTS`] plus one; 0 for none).
#[derive(Default)]
pub struct DrawScratch {
    marks: Vec<u8>,
    tints: Vec<u8>,
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
    calls: &mut DrawCalls,
) {
    let config = world.resource::<SimConfig>();
    // Quads of the pass under way, counted into `calls` as it ends.
    let mut n = 0u32;
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

    // Target lines first, under everyone. A stale handle finds no position (its generation is gone), so only
    // live targets get a line.
    world.query_ref::<(&Position, &Target)>().for_each(|e, (p, t)| {
        if let Some(goal) = world.get::<Position>(t.0) {
            let (p, goal) = (at(e, p), at(t.0, goal));
            let (r, g, b) = team(e);
            let color = Color::new(0.5 + 0.5 * r, 0.5 + 0.5 * g, 0.5 + 0.5 * b, 0.45);
            draw_line(p.0.x, p.0.y, goal.0.x, goal.0.y, (1.5 * px).max(0.5), color);
            n += 1;
        }
    });
    calls.quads(Sheet::Plain, std::mem::take(&mut n));

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
                n += 1;
            }
        });
        calls.quads(Sheet::Plain, std::mem::take(&mut n));
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
        draw_centered(texture, p.0, s, v.0.y.atan2(v.0.x), color);
    };
    // Fighters, then hunters over them (one texture per pass, so each pass batches).
    world.query_ref::<(&Position, &Health, &Velocity)>().for_each(|e, (p, h, v)| {
        if marks[e.index() as usize] & HUNTER == 0 {
            draw(&sprites.fighter, &at(e, p), v, size, tint(e, h, 1.0));
            n += 1;
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
        n += 1;
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
        draw_centered(ring, p.0, ring_size, 0.0, color);
        n += 1;
    });
    // Fighters, hunters and rings: one run on the atlas.
    calls.quads(Sheet::Atlas, std::mem::take(&mut n));

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
        n += 1;
    });
    calls.quads(Sheet::Plain, std::mem::take(&mut n));
    world.query_ref::<(&Position, &Lifetime)>().for_each(|_, (p, l)| {
        let (fade, color) = heat(l);
        let s = config.radius * (2.0 + 4.0 * fade * fade * fade);
        draw_centered(&sprites.particle, p.0, s, 0.0, color);
        n += 1;
    });
    calls.quads(Sheet::Atlas, n);
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
    /// when zoomed in); returns whether it drew.
    pub fn draw(&mut self, world: &World, px: f32) -> bool {
        let config = world.resource::<SimConfig>();
        // Only once a fighter is under 4 px: above that the sprites themselves show the teams.
        let far = ((4.0 - fighter_size(config) / px) / 2.0).clamp(0.0, 1.0);
        if far <= 0.0 {
            return false;
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
        // A neighbourhood (3 x 3 cells) holding as many fighters as an army's usual density puts there is "full".
        let full = (config.target_population as f32 / (arena.x * arena.y) * 9.0 * cell * cell).max(0.5);
        let mut out = image.bytes.chunks_exact_mut(4);
        self.field.neighbourhoods(|(r, b)| {
            let Some(out) = out.next() else { return };
            let (r, b) = (r as f32, b as f32);
            let n = r + b;
            if n == 0.0 {
                out.copy_from_slice(&[0, 0, 0, 0]);
                return;
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
        });
        match &self.texture {
            Some(texture) if !resized => texture.update(image),
            _ => {
                let texture = Texture2D::from_image(image);
                texture.set_filter(FilterMode::Linear);
                self.texture = Some(texture);
            }
        }
        let Some(texture) = &self.texture else { return false };
        let size = vec2(cols as f32, rows as f32) * cell;
        draw_texture_ex(texture, 0.0, 0.0, WHITE, DrawTextureParams { dest_size: Some(size), ..Default::default() });
        true
    }
}

/// Draws `texture` as a `size` x `size` square centred on `at`, turned by `rotation` radians.
pub fn draw_centered(texture: &Texture2D, at: Vec2, size: f32, rotation: f32, color: Color) {
    let params = DrawTextureParams { dest_size: Some(vec2(size, size)), rotation, ..Default::default() };
    draw_texture_ex(texture, at.x - size / 2.0, at.y - size / 2.0, color, params);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A world at simulation frame `frame` whose last frame caught stale handles at `catches`.
    fn world_at(frame: u64, catches: &[Vec2]) -> World {
        let mut world = World::new();
        world.insert_resource(SimStats { frames: frame, ..SimStats::default() });
        world.insert_resource(StaleCatches(catches.to_vec()));
        world
    }

    /// The rule quad by quad, as macroquad applies it, against the counter's arithmetic over runs of quads.
    #[test]
    fn draw_calls_follow_the_batching_rule_quad_by_quad() {
        let runs = [
            (Sheet::Field, 1),
            (Sheet::Plain, 2),
            (Sheet::Plain, 40_000),
            (Sheet::Atlas, 100_000),
            (Sheet::Atlas, 16_383),
            (Sheet::Atlas, 1),
            (Sheet::Plain, 0),
            (Sheet::Atlas, 70_000),
        ];
        let mut counted = DrawCalls::default();
        let (mut calls, mut sheet, mut vertices, mut indices) = (0u32, None, 0usize, 0usize);
        for (run_sheet, n) in runs {
            counted.quads(run_sheet, n);
            for _ in 0..n {
                if sheet != Some(run_sheet) || vertices >= CALL_VERTICES - 4 || indices >= CALL_INDICES - 6 {
                    (calls, sheet, vertices, indices) = (calls + 1, Some(run_sheet), 0, 0);
                }
                vertices += 4;
                indices += 6;
            }
            assert_eq!(counted.calls, calls, "after {n} on {run_sheet:?}");
        }
        assert_eq!(counted.quads, runs.iter().map(|r| r.1).sum::<u32>());
        // A full call holds 16,383 quads: 100,000 sprites take 7 calls.
        let mut sprites = DrawCalls::default();
        sprites.quads(Sheet::Atlas, 100_000);
        assert_eq!(sprites.calls, 7);
    }

    #[test]
    fn markers_age_with_the_simulation_not_the_clock() {
        let mut markers = StaleMarkers::default();
        markers.take(&world_at(10, &[Vec2::ONE, Vec2::X]));
        assert_eq!(markers.live.len(), 2);
        // Paused: the same frame shown over and over keeps them.
        for _ in 0..1_000 {
            markers.take(&world_at(10, &[]));
        }
        assert_eq!(markers.live.len(), 2, "a paused world lost its markers");
        // They fade over MARKER_SECONDS of simulated frames.
        let steps = (MARKER_SECONDS / swarm::sim::DT).ceil() as u64;
        for frame in 11..10 + steps {
            markers.take(&world_at(frame, &[]));
        }
        assert_eq!(markers.live.len(), 2, "gone before {MARKER_SECONDS} s of frames");
        markers.take(&world_at(10 + steps, &[]));
        assert!(markers.live.is_empty(), "still there after {MARKER_SECONDS} s of frames");
    }
}
