//! Sprites: textures from `assets/` (or the built-in art when a file is missing or broken), tinted by team and
//! health, drawn through the window's camera. No allocation per sprite: one query per
//! kind, one batched `draw_texture_ex` per entity, and dense team marks in reused buffers.

use macroquad::prelude::*;
use std::path::Path;
use swarm::art::Sprite;
use swarm::ecs::World;
use swarm::sim::components::{Blue, Health, Hunter, Lifetime, Position, Red, Velocity};
pub use swarm::sim::painter::DrawOrder;
use swarm::sim::SimConfig;

/// The three textures, and where they came from.
pub struct Sprites {
    fighter: Texture2D,
    hunter: Texture2D,
    particle: Texture2D,
    /// `assets/` or a note on what fell back to the built-in art.
    pub source: String,
}

fn load_one(dir: &Path, sprite: Sprite) -> (Texture2D, Option<String>) {
    let path = dir.join(sprite.file_name());
    let loaded = std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| Image::from_file_with_format(&bytes, None).map_err(|e| e.to_string()));
    match loaded {
        Ok(image) => (Texture2D::from_image(&image), None),
        Err(error) => {
            let note = format!("{}: {error}; using the built-in sprite", path.display());
            eprintln!("swarm: {note}");
            let n = sprite.size() as u16;
            (Texture2D::from_rgba8(n, n, &sprite.pixels()), Some(note))
        }
    }
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
        Self { fighter, hunter, particle, source }
    }
}

/// A fighter sprite's width in arena units (the camera's closest zoom is set by it).
pub fn fighter_size(config: &SimConfig) -> f32 {
    config.radius * 2.6
}

/// Reused per-frame buffers: team and hunter marks by entity index.
#[derive(Default)]
pub struct DrawScratch {
    marks: Vec<u8>,
}

const RED: u8 = 1;
const BLUE: u8 = 2;
const HUNTER: u8 = 4;

/// Draws particles, then fighters (tinted by team, dimmed as they lose health), hunters with their own sprite.
pub fn draw_world(world: &World, sprites: &Sprites, scratch: &mut DrawScratch) {
    let config = world.resource::<SimConfig>().clone();
    let marks = &mut scratch.marks;
    marks.clear();
    marks.resize(world.entities().index_bound() as usize, 0);
    world.query_ref::<(&Red,)>().for_each(|e, _| marks[e.index() as usize] |= RED);
    world.query_ref::<(&Blue,)>().for_each(|e, _| marks[e.index() as usize] |= BLUE);
    world.query_ref::<(&Hunter,)>().for_each(|e, _| marks[e.index() as usize] |= HUNTER);

    let particle_size = config.radius * 2.2;
    let life = config.particle_life.max(1) as f32;
    world.query_ref::<(&Position, &Lifetime)>().for_each(|_, (p, l)| {
        let fade = l.0 as f32 / life;
        let tint = Color::new(1.0, 0.55 + 0.4 * fade, 0.2, 0.25 + 0.75 * fade);
        draw_texture_ex(
            &sprites.particle,
            p.0.x - particle_size / 2.0,
            p.0.y - particle_size / 2.0,
            tint,
            DrawTextureParams { dest_size: Some(vec2(particle_size, particle_size)), ..Default::default() },
        );
    });

    let size = fighter_size(&config);
    let max_health = config.max_health.max(1) as f32;
    world.query_ref::<(&Position, &Health, &Velocity)>().for_each(|e, (p, h, v)| {
        let mark = marks[e.index() as usize];
        let vigour = 0.35 + 0.65 * (h.0.max(0) as f32 / max_health);
        let (r, g, b) = if mark & RED != 0 { (0.95, 0.30, 0.25) } else { (0.30, 0.55, 1.0) };
        let tint = Color::new(r * vigour, g * vigour, b * vigour, 1.0);
        let (texture, s) = if mark & HUNTER != 0 { (&sprites.hunter, size * 1.5) } else { (&sprites.fighter, size) };
        draw_texture_ex(
            texture,
            p.0.x - s / 2.0,
            p.0.y - s / 2.0,
            tint,
            DrawTextureParams { dest_size: Some(vec2(s, s)), rotation: v.0.y.atan2(v.0.x), ..Default::default() },
        );
    });
}
