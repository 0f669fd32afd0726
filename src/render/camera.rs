//! The window's view of the arena: which arena point is at the centre of the window and how many pixels an arena
//! unit takes. The wheel zooms at the cursor, a right or middle drag pans, Home fits the whole arena (as at the
//! start). It is view state only: nothing here reaches the simulation, a recording or a snapshot.
//!
//! The math is pure (screen size passed in), so it is tested without a window; [`View::read_input`] is the only
//! part that reads macroquad's input.

use macroquad::prelude::*;

/// The largest zoom shows a fighter sprite this many pixels across: big enough to see its shape and tint.
pub const MAX_FIGHTER_PX: f32 = 48.0;

/// One wheel notch zooms by this factor.
const ZOOM_STEP: f32 = 1.2;

/// Where the camera looks, and how close.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// The arena point at the centre of the window.
    center: Vec2,
    /// Pixels per arena unit.
    scale: f32,
    /// Whether the view is the fit of the arena (then it follows window resizes and arena changes).
    fitted: bool,
    /// The arena the view was made for.
    arena: Vec2,
    /// Where a pan drag was last seen (screen pixels), while a pan button is held.
    drag: Option<Vec2>,
}

/// The smallest and largest scale (pixels per unit) for `arena` in a window of `screen` pixels: at the smallest
/// the whole arena fits; at the largest a fighter sprite, `fighter_units` across, is [`MAX_FIGHTER_PX`] pixels
/// (never less than the fit, in an arena so small it fits at that size already).
pub fn limits(arena: Vec2, screen: Vec2, fighter_units: f32) -> (f32, f32) {
    let fit = (screen.x / arena.x.max(1.0)).min(screen.y / arena.y.max(1.0)).max(f32::MIN_POSITIVE);
    (fit, (MAX_FIGHTER_PX / fighter_units.max(1e-3)).max(fit))
}

impl View {
    /// The whole arena, as large as the window allows, centred (letterboxed).
    pub fn fit(arena: Vec2, screen: Vec2) -> Self {
        let (scale, _) = limits(arena, screen, 1.0);
        Self { center: arena / 2.0, scale, fitted: true, arena, drag: None }
    }

    /// Pixels per arena unit.
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// The arena point at the centre of the window. (The window needs only the camera and [`View::world_at`].)
    #[cfg(test)]
    pub fn center(&self) -> Vec2 {
        self.center
    }

    /// The arena point under screen point `pixel`.
    pub fn world_at(&self, pixel: Vec2, screen: Vec2) -> Vec2 {
        (pixel - screen / 2.0) / self.scale + self.center
    }

    /// The screen point showing arena point `point`.
    #[cfg(test)]
    pub fn pixel_of(&self, point: Vec2, screen: Vec2) -> Vec2 {
        (point - self.center) * self.scale + screen / 2.0
    }

    /// Zooms by `factor` (above 1 closer) keeping the arena point under `pixel` under it, within the limits.
    /// (Where the view meets the arena's edge it is held inside, so there the point may drift.)
    pub fn zoom_at(&mut self, pixel: Vec2, factor: f32, screen: Vec2, fighter_units: f32) {
        let (min, max) = limits(self.arena, screen, fighter_units);
        let anchor = self.world_at(pixel, screen);
        self.scale = (self.scale * factor).clamp(min, max);
        self.center = anchor - (pixel - screen / 2.0) / self.scale;
        self.fitted = false;
        self.keep_inside(screen);
    }

    /// Moves the view with a drag of `pixels`: the arena follows the pointer.
    pub fn pan(&mut self, pixels: Vec2, screen: Vec2) {
        self.center -= pixels / self.scale;
        self.fitted = false;
        self.keep_inside(screen);
    }

    /// Keeps the view on the arena: along an axis where the view is wider than the arena, the arena is centred;
    /// else the view may not go past the arena's edges.
    fn keep_inside(&mut self, screen: Vec2) {
        let half = screen / (2.0 * self.scale);
        for axis in 0..2 {
            let (c, h, a) = (self.center[axis], half[axis], self.arena[axis]);
            self.center[axis] = if 2.0 * h >= a { a / 2.0 } else { c.clamp(h, a - h) };
        }
    }

    /// Follows the window and the world: a fitted view refits (window resized, or a load changed the arena);
    /// a zoomed one keeps its scale within the new limits and stays on the arena.
    pub fn follow(&mut self, arena: Vec2, screen: Vec2, fighter_units: f32) {
        if self.fitted || arena != self.arena {
            let drag = self.drag;
            *self = Self::fit(arena, screen);
            self.drag = drag;
            return;
        }
        let (min, max) = limits(arena, screen, fighter_units);
        self.scale = self.scale.clamp(min, max);
        self.keep_inside(screen);
    }

    /// The macroquad camera for this view.
    pub fn camera(&self, screen: Vec2) -> Camera2D {
        // y grows downward on screen, as in `world_at` and in screen space: a positive y zoom. (macroquad 0.4's
        // `Camera2D::from_display_rect` has a negative one, which draws the arena upside down: a click landed
        // its burst mirrored about the window's middle.)
        Camera2D {
            target: self.center,
            zoom: vec2(2.0 * self.scale / screen.x, 2.0 * self.scale / screen.y),
            ..Default::default()
        }
    }

    /// Reads the wheel (zoom at the cursor, unless it is over the panel), a right or middle drag (pan) and Home
    /// (fit).
    pub fn read_input(&mut self, over_ui: bool, fighter_units: f32) {
        let screen = vec2(screen_width(), screen_height());
        let mouse: Vec2 = mouse_position().into();
        if is_key_pressed(KeyCode::Home) {
            *self = Self::fit(self.arena, screen);
        }
        let (_, wheel) = mouse_wheel();
        if wheel != 0.0 && !over_ui {
            // Notches are ±1 on most platforms; larger values (smooth scrolling) are capped so one event cannot
            // jump to a limit.
            self.zoom_at(mouse, ZOOM_STEP.powf(wheel.clamp(-3.0, 3.0)), screen, fighter_units);
        }
        let held = is_mouse_button_down(MouseButton::Right) || is_mouse_button_down(MouseButton::Middle);
        self.drag = match (held, self.drag) {
            (true, Some(last)) => {
                if mouse != last {
                    self.pan(mouse - last, screen);
                }
                Some(mouse)
            }
            (true, None) => Some(mouse),
            (false, _) => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARENA: Vec2 = Vec2::new(1920.0, 1080.0);
    const SCREEN: Vec2 = Vec2::new(1600.0, 900.0);
    const FIGHTER: f32 = 7.8;

    fn close(a: Vec2, b: Vec2) -> bool {
        a.distance(b) < 1e-3 * (1.0 + a.length())
    }

    #[test]
    fn fit_shows_the_whole_arena_centred() {
        let view = View::fit(ARENA, SCREEN);
        assert!((view.scale() - 1600.0 / 1920.0).abs() < 1e-6);
        assert!(close(view.pixel_of(Vec2::ZERO, SCREEN), Vec2::ZERO));
        assert!(close(view.pixel_of(ARENA, SCREEN), SCREEN));
        // A taller window letterboxes: the arena's width fills it, centred vertically.
        let tall = vec2(800.0, 900.0);
        let view = View::fit(ARENA, tall);
        let (top_left, bottom_right) = (view.pixel_of(Vec2::ZERO, tall), view.pixel_of(ARENA, tall));
        assert!(close(top_left, vec2(0.0, 450.0 - 225.0)) && close(bottom_right, vec2(800.0, 450.0 + 225.0)));
        // A 100,000-fighter arena fits too.
        let big = ARENA * 10f32.sqrt();
        let view = View::fit(big, SCREEN);
        assert!(close(view.pixel_of(big, SCREEN), SCREEN));
    }

    #[test]
    fn screen_and_world_are_inverse() {
        let mut view = View::fit(ARENA, SCREEN);
        view.zoom_at(vec2(300.0, 200.0), 3.7, SCREEN, FIGHTER);
        for p in [vec2(0.0, 0.0), vec2(812.0, 400.5), vec2(1599.0, 899.0)] {
            assert!(close(view.pixel_of(view.world_at(p, SCREEN), SCREEN), p));
        }
    }

    #[test]
    fn zoom_keeps_the_point_under_the_cursor() {
        let mut view = View::fit(ARENA, SCREEN);
        for (pixel, factor) in [(vec2(400.0, 300.0), 2.0), (vec2(1200.0, 700.0), 1.2), (vec2(800.0, 450.0), 1.5)] {
            let before = view.world_at(pixel, SCREEN);
            view.zoom_at(pixel, factor, SCREEN, FIGHTER);
            assert!(close(view.world_at(pixel, SCREEN), before), "{pixel} moved");
        }
        // Zooming back out at a point keeps it too, until the view meets the arena's edges.
        let pixel = vec2(900.0, 500.0);
        let before = view.world_at(pixel, SCREEN);
        view.zoom_at(pixel, 1.0 / 1.2, SCREEN, FIGHTER);
        assert!(close(view.world_at(pixel, SCREEN), before));
    }

    #[test]
    fn zoom_stays_within_its_limits() {
        let mut view = View::fit(ARENA, SCREEN);
        let fit = view.scale();
        view.zoom_at(vec2(10.0, 10.0), 0.01, SCREEN, FIGHTER);
        assert_eq!(view.scale(), fit, "never smaller than the fit");
        assert!(close(view.center(), ARENA / 2.0), "at the fit the arena is centred");
        for _ in 0..100 {
            view.zoom_at(vec2(700.0, 400.0), ZOOM_STEP, SCREEN, FIGHTER);
        }
        assert!((view.scale() * FIGHTER - MAX_FIGHTER_PX).abs() < 1e-3, "a fighter is {} px", view.scale() * FIGHTER);
        // An arena that fits a fighter at full size already cannot zoom either way.
        let (min, max) = limits(vec2(10.0, 10.0), SCREEN, FIGHTER);
        assert_eq!(min, max);
    }

    #[test]
    fn pan_follows_the_pointer_and_stays_on_the_arena() {
        let mut view = View::fit(ARENA, SCREEN);
        view.pan(vec2(100.0, 0.0), SCREEN);
        assert!(close(view.center(), ARENA / 2.0), "at the fit there is nowhere to pan");
        view.zoom_at(SCREEN / 2.0, 4.0, SCREEN, FIGHTER);
        let pixel = vec2(500.0, 500.0);
        let under = view.world_at(pixel, SCREEN);
        view.pan(vec2(30.0, -20.0), SCREEN);
        assert!(close(view.world_at(pixel + vec2(30.0, -20.0), SCREEN), under), "the arena moves with the drag");
        view.pan(vec2(1e6, 1e6), SCREEN);
        assert!(close(view.world_at(Vec2::ZERO, SCREEN), Vec2::ZERO), "held at the top left corner");
    }

    #[test]
    fn a_fitted_view_follows_the_window_and_the_arena_a_zoomed_one_keeps_its_place() {
        let mut view = View::fit(ARENA, SCREEN);
        let small = vec2(800.0, 450.0);
        view.follow(ARENA, small, FIGHTER);
        assert_eq!(view, View::fit(ARENA, small));
        view.zoom_at(vec2(200.0, 100.0), 2.0, small, FIGHTER);
        let zoomed = view;
        view.follow(ARENA, small, FIGHTER);
        assert_eq!(view, zoomed, "a zoomed view stays put");
        let big = ARENA * 2.0;
        view.follow(big, small, FIGHTER);
        assert_eq!(view, View::fit(big, small), "a new arena refits");
    }

    /// Where the camera draws an arena point (its matrix to clip space, then GL's viewport: clip y up, pixel y
    /// down) is where `world_at` reads it back: a click lands its burst under the cursor.
    #[test]
    fn the_camera_draws_each_point_where_world_at_reads_it() {
        use macroquad::camera::Camera;
        let mut view = View::fit(ARENA, SCREEN);
        view.zoom_at(vec2(321.0, 123.0), 2.5, SCREEN, FIGHTER);
        let matrix = view.camera(SCREEN).matrix();
        for pixel in [vec2(700.0, 650.0), vec2(10.0, 880.0), vec2(1590.0, 5.0), SCREEN / 2.0] {
            let point = view.world_at(pixel, SCREEN);
            let clip = matrix.project_point3(point.extend(0.0));
            let drawn = vec2((clip.x + 1.0) / 2.0 * SCREEN.x, (1.0 - clip.y) / 2.0 * SCREEN.y);
            assert!(close(drawn, pixel), "{pixel} read as {point}, drawn at {drawn}");
        }
    }
}
