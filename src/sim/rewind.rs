//! Rewind: watching a fight again. While the game runs live, [`Rewind`] keeps a checkpoint every
//! [`Rewind::every`] frames in a ring ([`Checkpoints`], bounded by memory) and the inputs that change the world
//! between frames. Stepping back one frame restores the latest checkpoint at or before it and simulates forward to
//! it with those inputs; playing forward again simulates one frame at a time the same way, up to the live frame,
//! where the world must be the one left: [`Forward::Live`] says whether its digest matches.
//!
//! A frame `F`'s checkpoint is the world when its counter ([`SimStats::frames`]) reached `F`, before the inputs
//! applied at `F`; the inputs at `F` come before frame `F + 1` runs, as in the window. While watching, inputs that
//! would change the world are refused ([`Rewind::refuses`]): the past is replayed as it was. Switching the backend
//! or the thread count is not refused (neither changes a value). A reset, a quick load or a group turned off or on
//! starts the ring over: the frames before are another run, or ran another schedule.

use super::config::SimStats;
use super::play::{Input, Play};
use crate::ecs::{Checkpoint, Checkpoints, RollbackError};
use std::collections::VecDeque;

/// Frames between two checkpoints.
pub const EVERY: u64 = 15;
/// The most checkpoints kept (with [`EVERY`], ten seconds at 60 frames a second).
pub const MOST: usize = 40;
/// The memory the ring may hold, estimated from the storage's size at each save.
pub const BUDGET: usize = 384 << 20;

/// The ring, the inputs since its oldest frame, and the watch in progress.
pub struct Rewind {
    ring: Checkpoints,
    inputs: VecDeque<(u64, Input)>,
    watch: Option<Watch>,
}

/// A rewind in progress: the live world it left, to check the replay against (and to go back to at once).
struct Watch {
    live: Checkpoint,
    frame: u64,
    digest: u64,
}

/// What a step forward did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forward {
    /// Not watching: nothing.
    Live,
    /// One frame replayed; still behind the live frame.
    Replayed,
    /// Replayed up to the live frame: the watch is over. `matches`: the world's digest is the live world's.
    Caught {
        /// The live frame.
        frame: u64,
        /// Whether the replayed world's digest is the one the live world had.
        matches: bool,
    },
}

impl Default for Rewind {
    fn default() -> Self {
        Self::new()
    }
}

impl Rewind {
    /// An empty ring; the first frame noted starts it.
    pub fn new() -> Self {
        Self { ring: Checkpoints::new(MOST), inputs: VecDeque::new(), watch: None }
    }

    /// Frames between checkpoints.
    pub fn every(&self) -> u64 {
        EVERY
    }

    /// The live frame, while watching (the frame on screen is the play's).
    pub fn watching(&self) -> Option<u64> {
        self.watch.as_ref().map(|w| w.frame)
    }

    /// The earliest frame a rewind can reach.
    pub fn oldest(&self) -> Option<u64> {
        self.ring.oldest()
    }

    /// Checkpoints kept now.
    pub fn kept(&self) -> usize {
        self.ring.len()
    }

    /// Called after each live frame (and at the start): keeps a checkpoint when one is due. Nothing while
    /// watching (the ring already holds the past being replayed).
    pub fn after_frame(&mut self, play: &Play) -> Result<(), RollbackError> {
        if self.watch.is_some() {
            return Ok(());
        }
        let frame = play.frame();
        let due = self.ring.is_empty() || frame.is_multiple_of(EVERY);
        if due && self.ring.oldest().is_none_or(|oldest| frame >= oldest) {
            let world = &play.app.world;
            // Two copies of the storage's bytes: the values, and the resources and allocator beside them.
            let bytes = (2 * world.storage_bytes()).max(1);
            self.ring.set_capacity((BUDGET / bytes).clamp(2, MOST));
            // Into the memory of the checkpoint it forgets, once full: no allocation (and no page faults) a save.
            self.ring.save(frame, world)?;
            let oldest = self.ring.oldest().unwrap_or(frame);
            while self.inputs.front().is_some_and(|(at, _)| *at < oldest) {
                self.inputs.pop_front();
            }
        }
        Ok(())
    }

    /// Whether `input` is refused now: while watching, anything that changes the world (the past replays as it
    /// was). Pausing, stepping (one frame of the replay), the backend, the threads and the draw order are not.
    pub fn refuses(&self, input: &Input) -> bool {
        self.watch.is_some()
            && !matches!(
                input,
                Input::Pause(_) | Input::Step | Input::Backend(_) | Input::Threads(_) | Input::DrawOrder(_)
            )
    }

    /// Called after a live input was applied at `frame` to `play`: keeps the inputs a replay needs; a step is a
    /// frame ([`Rewind::after_frame`]); a reset, a quick load or a group starts the ring over from the world now.
    pub fn note(&mut self, frame: u64, input: &Input, play: &Play) -> Result<(), RollbackError> {
        match input {
            Input::Population(_)
            | Input::Burst(_)
            | Input::Wave(_)
            | Input::AddWaves(_)
            | Input::AlignEvery(_)
            | Input::NextRound => self.inputs.push_back((frame, input.clone())),
            Input::Reset | Input::QuickLoad(_) | Input::Group { .. } => {
                self.ring.clear();
                self.inputs.clear();
                return self.after_frame(play);
            }
            Input::Step => return self.after_frame(play),
            Input::Pause(_) | Input::Backend(_) | Input::Threads(_) | Input::DrawOrder(_) => {}
        }
        Ok(())
    }

    /// Steps the world back one frame: restores the latest checkpoint at or before it and replays up to it.
    /// Starts a watch when live. Returns false (and changes nothing) at the oldest frame kept.
    pub fn back(&mut self, play: &mut Play) -> Result<bool, RollbackError> {
        let now = play.frame();
        let Some(target) = now.checked_sub(1).filter(|t| self.ring.oldest().is_some_and(|oldest| *t >= oldest)) else {
            return Ok(false);
        };
        if self.watch.is_none() {
            let live = play.app.world.checkpoint()?;
            self.watch = Some(Watch { live, frame: now, digest: play.digest() });
        }
        let (from, checkpoint) = self.ring.at_or_before(target).expect("the oldest is at or before the target");
        play.app.world.restore(checkpoint)?;
        for frame in from..target {
            self.replay_frame(play, frame);
        }
        debug_assert_eq!(play.frame(), target);
        Ok(true)
    }

    /// While watching, replays one frame (the inputs at the frame on screen, then the frame); at the live frame,
    /// applies its inputs and ends the watch. Live, does nothing.
    pub fn forward(&mut self, play: &mut Play) -> Forward {
        let Some(watch) = &self.watch else { return Forward::Live };
        let (live, frame) = (watch.frame, play.frame());
        if frame < live {
            self.replay_frame(play, frame);
        }
        if play.frame() < live {
            return Forward::Replayed;
        }
        self.apply_inputs(play, live);
        let watch = self.watch.take().expect("watching");
        Forward::Caught { frame: live, matches: play.digest() == watch.digest }
    }

    /// Ends a watch at once: the live world comes back as it was left.
    pub fn back_to_live(&mut self, play: &mut Play) -> Result<(), RollbackError> {
        if let Some(watch) = &self.watch {
            play.app.world.restore(&watch.live)?;
            self.watch = None;
        }
        Ok(())
    }

    /// The inputs noted at `frame`, then the frame itself.
    fn replay_frame(&self, play: &mut Play, frame: u64) {
        self.apply_inputs(play, frame);
        play.app.update();
        debug_assert_eq!(play.app.world.resource::<SimStats>().frames, frame + 1);
    }

    fn apply_inputs(&self, play: &mut Play, frame: u64) {
        for (_, input) in self.inputs.iter().filter(|(at, _)| *at == frame) {
            // Noted inputs change only resources: they cannot fail.
            play.apply(input).expect("a noted input applies");
        }
    }
}
