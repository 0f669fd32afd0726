//! Replaying a recording headless to the same worlds: [`replay`] reads the file back and drives a new play through
//! the same [`Play::apply`] the window used, running frames up to each input's frame, and compares the world digest
//! after every input with the recorded one. A spike seen in the window can then be profiled headless
//! (`--replay FILE --trace trace.json`), frame for frame.

use super::play::{Input, Play};
use super::recording::{hex, Recording};
use super::report::{Meter, Report};
use crate::app::profile::Profiler;
use crate::app::App;
use std::fmt;
use std::time::Instant;

/// One digest compared during a replay.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// The line of the recording.
    pub line: usize,
    /// The simulation frame.
    pub frame: u64,
    /// The input replayed; `None` for the end line.
    pub input: Option<Input>,
    /// The replay's digest.
    pub digest: u64,
    /// The recorded digest.
    pub recorded: u64,
}

impl Check {
    /// Whether the replay matches the recording here.
    pub fn same(&self) -> bool {
        self.digest == self.recorded
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "frame {}  ", self.frame)?;
        match &self.input {
            Some(input) => write!(f, "{input}")?,
            None => write!(f, "end")?,
        }
        let verdict = if self.same() { "same" } else { "DIFFERS" };
        write!(f, "  digest {}  (recorded {}: {verdict})", hex(self.digest), hex(self.recorded))
    }
}

/// What a replay did.
pub struct Replayed {
    /// The report of the frames replayed (frames, per-system times, the final digest).
    pub report: Report,
    /// The app at the end, for a caller that saves it.
    pub app: App,
    /// Digests compared (inputs and the end line).
    pub checks: usize,
    /// How many of them differed.
    pub differs: usize,
    /// Whether the recording had its end line (else the replay stopped at the last input).
    pub complete: bool,
}

/// Replays `recording` on `threads` threads (until a recorded `threads` input changes it; the world is the same
/// for every count): starts a play from its start, and for each input runs frames up to the input's frame,
/// applies it through [`Play::apply`], and compares digests, then runs to the end line's frame. `on_app` sees
/// the first app before anything runs (to attach a trace); `on_check` sees each comparison as it is made. Spans go
/// into `profiler`.
pub fn replay(
    recording: &Recording,
    profiler: Profiler,
    threads: usize,
    on_app: impl FnOnce(&App),
    mut on_check: impl FnMut(&Check),
) -> Result<Replayed, String> {
    let mut play = Play::new(&recording.start, profiler).map_err(|e| format!("the start snapshot: {e}"))?;
    play.app.set_threads(threads);
    on_app(&play.app);
    let mut meter = Meter::new(&play.app, recording.end.map_or(0, |e| e.frame as usize));
    let run_to = |play: &mut Play, meter: &mut Meter, frame: u64| {
        while play.frame() < frame {
            let t = Instant::now();
            play.run_frame();
            meter.frame(t.elapsed().as_secs_f64() * 1e3, &play.app);
        }
    };
    let (mut checks, mut differs) = (0, 0);
    let mut check = |line, frame, input: Option<&Input>, play: &Play, recorded| {
        let check = Check { line, frame, input: input.cloned(), digest: recording.digest_of(play), recorded };
        checks += 1;
        differs += usize::from(!check.same());
        on_check(&check);
    };
    for recorded in &recording.inputs {
        run_to(&mut play, &mut meter, recorded.frame);
        let t = Instant::now();
        play.apply(&recorded.input).map_err(|e| format!("line {}: {e}", recorded.line))?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        match recorded.input {
            Input::Backend(_) => meter.switched(ms),
            Input::Step => {
                play.sort();
                meter.frame(t.elapsed().as_secs_f64() * 1e3, &play.app);
            }
            _ => {}
        }
        check(recorded.line, recorded.frame, Some(&recorded.input), &play, recorded.digest);
    }
    if let Some(end) = recording.end {
        run_to(&mut play, &mut meter, end.frame);
        check(end.line, end.frame, None, &play, end.digest);
    }
    Ok(Replayed { report: meter.report(&play.app), app: play.app, checks, differs, complete: recording.end.is_some() })
}
