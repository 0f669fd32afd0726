//! The fixed step: rendered frames of any length run the simulation in whole steps of [`DT`], with a bounded
//! catch-up, and the window draws positions interpolated between the last two steps. The simulation never sees the
//! frame time, so the world after N steps is the same at any frame rate (`tests/sim.rs` drives the loop with
//! synthetic frame times).

use super::components::Position;
use super::{SimStats, DT};
use crate::ecs::{Entity, World};
use glam::Vec2;

/// The most steps one rendered frame may run: time past that is dropped, so a slow frame does not snowball.
pub const MAX_STEPS_PER_FRAME: u32 = 4;

/// Frame time not yet run as whole steps.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FixedStep {
    accumulator: f32,
}

impl FixedStep {
    /// Adds a rendered frame's `dt` (seconds) and runs `step` once per whole step it completes, at most
    /// [`MAX_STEPS_PER_FRAME`] times (the time past that is dropped); `step` is told whether it is the frame's
    /// last step. Returns how many ran.
    pub fn advance(&mut self, dt: f32, mut step: impl FnMut(bool)) -> u32 {
        let bound = DT * MAX_STEPS_PER_FRAME as f32;
        self.accumulator = (self.accumulator + dt.max(0.0)).min(bound);
        let steps = ((self.accumulator / DT) as u32).min(MAX_STEPS_PER_FRAME);
        for k in 0..steps {
            step(k + 1 == steps);
            self.accumulator -= DT;
        }
        self.accumulator = self.accumulator.max(0.0);
        steps
    }

    /// How far the frame is between the last step and the next, from 0 to 1: the interpolation weight.
    pub fn alpha(&self) -> f32 {
        (self.accumulator / DT).clamp(0.0, 1.0)
    }

    /// Forgets the time left over (a pause, a reset, a load).
    pub fn reset(&mut self) {
        self.accumulator = 0.0;
    }
}

/// Every position as the step before the last one left it, by entity index (with the handle, so a recycled index
/// is not mistaken for its old holder): what the window interpolates from.
#[derive(Debug, Default)]
pub struct Trail {
    before: Vec<Option<(Entity, Vec2)>>,
    /// The simulation's frame count when noted.
    frame: Option<u64>,
}

impl Trail {
    /// Notes every position of `world` (called before the frame's last step).
    pub fn record(&mut self, world: &World) {
        let before = &mut self.before;
        before.clear();
        before.resize(world.entities().index_bound() as usize, None);
        world.query_ref::<&Position>().for_each(|e, p| before[e.index() as usize] = Some((e, p.0)));
        self.frame = Some(world.resource::<SimStats>().frames);
    }

    /// Whether it holds the positions of the step just before `world`'s last one (not after a reset, a load, or
    /// several steps since).
    pub fn follows(&self, world: &World) -> bool {
        self.frame.is_some_and(|frame| world.get_resource::<SimStats>().is_some_and(|s| s.frames == frame + 1))
    }

    /// Where to draw `entity`, which is at `now` after the last step: `alpha` of the way from where it was before
    /// it (`now` if it was not there: spawned in that step, or nothing recorded).
    pub fn at(&self, entity: Entity, now: Vec2, alpha: f32) -> Vec2 {
        match self.before.get(entity.index() as usize) {
            Some(&Some((e, then))) if e == entity => then.lerp(now, alpha),
            _ => now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_steps_run_and_the_rest_waits_with_a_bounded_catch_up() {
        let mut clock = FixedStep::default();
        let mut ran = Vec::new();
        assert_eq!(clock.advance(DT * 0.5, |last| ran.push(last)), 0);
        assert!((clock.alpha() - 0.5).abs() < 1e-4);
        assert_eq!(clock.advance(DT * 1.75, |last| ran.push(last)), 2);
        assert_eq!(ran, [false, true]);
        assert!((clock.alpha() - 0.25).abs() < 1e-3);
        // A second-long stall runs the bound and drops the rest.
        assert_eq!(clock.advance(1.0, |_| {}), MAX_STEPS_PER_FRAME);
        assert!(clock.alpha() < 1e-3);
        assert_eq!(clock.advance(-1.0, |_| {}), 0, "a negative frame time is none");
    }
}
