//! The sprites' pixels, drawn by code: `cargo run --release --bin make_assets` writes them to `assets/`, and the
//! window falls back to them when an asset file is missing or broken. White shapes, tinted at draw time.

/// One sprite kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sprite {
    /// A soft disc with a bright rim: an ordinary fighter.
    Fighter,
    /// A disc with a pointed nose: a hunter.
    Hunter,
    /// A small glowing dot: a particle.
    Particle,
}

impl Sprite {
    /// Every sprite.
    pub const ALL: [Sprite; 3] = [Sprite::Fighter, Sprite::Hunter, Sprite::Particle];

    /// The file name under `assets/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Sprite::Fighter => "fighter.png",
            Sprite::Hunter => "hunter.png",
            Sprite::Particle => "particle.png",
        }
    }

    /// Width and height in pixels.
    pub fn size(self) -> u32 {
        match self {
            Sprite::Fighter | Sprite::Hunter => 32,
            Sprite::Particle => 16,
        }
    }

    /// RGBA8 pixels, row by row, `size * size * 4` bytes.
    pub fn pixels(self) -> Vec<u8> {
        let n = self.size();
        let c = (n as f32 - 1.0) / 2.0;
        let mut out = Vec::with_capacity((n * n * 4) as usize);
        for y in 0..n {
            for x in 0..n {
                let (dx, dy) = ((x as f32 - c) / c, (y as f32 - c) / c);
                let r = (dx * dx + dy * dy).sqrt();
                let (shade, alpha) = match self {
                    Sprite::Fighter => disc(r),
                    Sprite::Hunter => {
                        // A disc plus a nose to the right: distance to a diamond where the disc ends.
                        let diamond = dx.abs() * 0.55 + dy.abs();
                        if dx > 0.0 && diamond < 0.9 {
                            (1.0, smooth(0.9 - diamond))
                        } else {
                            disc(r / 0.8)
                        }
                    }
                    Sprite::Particle => (1.0, (1.0 - r).clamp(0.0, 1.0).powi(2)),
                };
                let v = (shade * 255.0) as u8;
                out.extend_from_slice(&[v, v, v, (alpha * 255.0) as u8]);
            }
        }
        out
    }
}

fn smooth(edge: f32) -> f32 {
    (edge * 8.0).clamp(0.0, 1.0)
}

/// Shade and alpha of a disc of radius 1 at distance `r`: bright rim, slightly darker body, soft edge.
fn disc(r: f32) -> (f32, f32) {
    let alpha = smooth(1.0 - r);
    let shade = if r > 0.72 { 1.0 } else { 0.78 + 0.12 * r };
    (shade, alpha)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sprites_have_opaque_centres_and_clear_corners() {
        for sprite in Sprite::ALL {
            let n = sprite.size() as usize;
            let px = sprite.pixels();
            assert_eq!(px.len(), n * n * 4);
            let alpha = |x: usize, y: usize| px[(y * n + x) * 4 + 3];
            assert!(alpha(n / 2, n / 2) > 200, "{sprite:?} centre is not opaque");
            assert_eq!(alpha(0, 0), 0, "{sprite:?} corner is not clear");
        }
    }
}
