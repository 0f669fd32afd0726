//! The recording format: a run's start and its inputs written down as the run goes, and read back checked.
//!
//! The window writes each input it applies with a [`Recorder`], with the frame it was applied at and the digest
//! right after it; [`Recording::read`] reads the file back and checks it whole before anything runs.
//!
//! The file is JSON Lines, written as the run goes and flushed per line, so a run that crashes still leaves a
//! usable file (it replays up to its last input):
//!
//! ```text
//! {"format":"swarm recording","version":2,"backend":"sparse-set","seed":1,"capacity":28096,"settings":{...}}
//! {"frame":120,"input":{"burst":[812.0,400.5]},"digest":"0123456789abcdef"}
//! {"frame":121,"input":{"backend":"archetype"},"digest":"0123456789abcdef"}
//! {"frame":300,"input":"reset","digest":"fedcba9876543210"}
//! {"end":{"frame":512,"digest":"0011223344556677"}}
//! ```
//!
//! A run that starts from a saved world has `"snapshot": "<base64 of the binary snapshot>"` in its header instead
//! of seed, capacity and settings; a quick load embeds its snapshot the same way. `frame` is the simulation's own
//! counter ([`SimStats::frames`]) when the input was applied: it goes back to 0 on a reset and to the loaded
//! world's frame on a quick load. `digest` is [`Play::state_digest`] right after the input, as 16 hex digits:
//! the world's digest with what the input set that the world does not show yet (a burst asked for, the target
//! population, ...), so an input edited in the file differs at its own line. Version 1 files carry the world's
//! digest alone ([`Play::digest`]), and are checked against it.

use super::config::{SimConfig, SimStats};
use super::limits;
use super::play::{Input, Play, Start};
use super::{build_app_with, snapshot};
use crate::app::profile::Profiler;
use crate::ecs::{Backend, SnapshotError};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The `format` field of a recording's header line.
pub const FORMAT: &str = "swarm recording";
/// The format version this build writes, and the newest it reads.
pub const VERSION: u32 = 2;

/// The header line of a recording.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    format: String,
    version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    backend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    capacity: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    settings: Option<SimConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot: Option<String>,
}

/// One input line.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct InputLine {
    frame: u64,
    input: Input,
    digest: String,
}

/// The last line.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EndLine {
    end: EndFields,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EndFields {
    frame: u64,
    digest: String,
}

/// A digest as the file writes it: 16 hex digits.
pub(super) fn hex(digest: u64) -> String {
    format!("{digest:016x}")
}

/// Writes a recording as the run goes: the header at creation, a line per input, the end line at the close. Each
/// line is flushed as it is written.
pub struct Recorder {
    out: BufWriter<std::fs::File>,
    path: PathBuf,
}

impl Recorder {
    /// Creates (or truncates) `path` and writes the header of a run from `start`.
    pub fn create(path: &Path, start: &Start) -> Result<Self, String> {
        let file = std::fs::File::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let mut header = Header {
            format: FORMAT.to_string(),
            version: VERSION,
            backend: None,
            seed: None,
            capacity: None,
            settings: None,
            snapshot: None,
        };
        match start {
            Start::New { config, seed, capacity, backend } => {
                header.backend = Some(backend.name().to_string());
                header.seed = Some(*seed);
                header.capacity = Some(*capacity);
                header.settings = Some(config.clone());
            }
            Start::Snapshot { bytes, backend } => {
                header.backend = backend.map(|b| b.name().to_string());
                header.snapshot = Some(base64::engine::general_purpose::STANDARD.encode(bytes));
            }
        }
        let mut recorder = Self { out: BufWriter::new(file), path: path.to_path_buf() };
        recorder.line(&header)?;
        Ok(recorder)
    }

    /// Records `input`, applied at simulation frame `at` (read before applying it: a step runs frame `at`) and
    /// just applied to `play`, with the digest after it.
    pub fn record(&mut self, at: u64, input: &Input, play: &Play) -> Result<(), String> {
        self.line(&InputLine { frame: at, input: input.clone(), digest: hex(play.state_digest()) })
    }

    /// Writes the end line: the play's frame and digest at the close.
    pub fn finish(mut self, play: &Play) -> Result<(), String> {
        self.line(&EndLine { end: EndFields { frame: play.frame(), digest: hex(play.state_digest()) } })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn line(&mut self, value: &impl Serialize) -> Result<(), String> {
        let mut text = serde_json::to_vec(value).map_err(|e| e.to_string())?;
        text.push(b'\n');
        (self.out.write_all(&text).and_then(|()| self.out.flush()))
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

/// One recorded input.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// Line number in the file (from 1).
    pub line: usize,
    /// The simulation frame it was applied at.
    pub frame: u64,
    /// The input.
    pub input: Input,
    /// The digest right after it.
    pub digest: u64,
}

/// The end of a recording: the frame and digest when the window closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct End {
    /// Line number in the file.
    pub line: usize,
    /// The simulation frame at the close.
    pub frame: u64,
    /// The digest then.
    pub digest: u64,
}

/// A recording read back and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    /// Where the run started.
    pub start: Start,
    /// The inputs, in order.
    pub inputs: Vec<Recorded>,
    /// The end line; `None` when the run did not close normally (the window was killed, say).
    pub end: Option<End>,
    /// The file's format version: which digest its lines carry ([`Recording::digest_of`]).
    pub version: u32,
}

/// Why a recording could not be read: the line and the problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordingError {
    /// Line number (from 1).
    pub line: usize,
    /// What is wrong with it.
    pub why: String,
}

impl fmt::Display for RecordingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.why)
    }
}

impl std::error::Error for RecordingError {}

fn parse_digest(text: &str) -> Result<u64, String> {
    match u64::from_str_radix(text, 16) {
        Ok(value) if text.len() == 16 => Ok(value),
        _ => Err(format!("digest \"{text}\" is not 16 hex digits")),
    }
}

/// The names of the simulation's groups of systems, which [`Input::Group`] may name.
fn group_names() -> Vec<String> {
    let app = build_app_with(SimConfig::with_population(0), 0, Backend::SparseSet, 1, Profiler::new());
    let names = app.groups().map(|g| g.name.to_string()).collect();
    names
}

/// The frame a snapshot's world is at, checking that it loads.
fn snapshot_frame(bytes: &[u8]) -> Result<u64, SnapshotError> {
    Ok(snapshot::schema().load(bytes, None)?.resource::<SimStats>().frames)
}

impl Recording {
    /// The digest this file's lines carry for `play`: [`Play::state_digest`], or in a version 1 file the world's
    /// digest alone.
    pub fn digest_of(&self, play: &Play) -> u64 {
        match self.version {
            0 | 1 => play.digest(),
            _ => play.state_digest(),
        }
    }

    /// Reads a recording and checks it whole before anything runs: the header (format, version, start), every
    /// input (known, with a well-formed digest, its embedded snapshot loading), and that frames only go forward
    /// (back only by a reset or a quick load). Nothing may follow the end line.
    pub fn parse(text: &str) -> Result<Self, RecordingError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim().is_empty());
        let fail = |line: usize, why: String| RecordingError { line, why };
        let json = |line: usize, text: &str| {
            serde_json::from_str::<serde_json::Value>(text).map_err(|e| {
                // A line that ends early is a file cut short; a whole line that does not parse is a bad value.
                let why = if e.is_eof() { "not a complete JSON line" } else { "not valid JSON" };
                let hint = if e.is_eof() { "; the file may be cut short" } else { "" };
                fail(line, format!("{why} ({e}){hint}"))
            })
        };

        let Some((line, first)) = lines.next() else { return Err(fail(1, "empty file, not a recording".into())) };
        let value = json(line, first)?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(other) => return Err(fail(line, format!("not a swarm recording (format \"{other}\")"))),
            None => return Err(fail(line, format!("not a swarm recording (no \"format\": \"{FORMAT}\")"))),
        }
        match value.get("version").and_then(|v| v.as_u64()) {
            Some(v) if v > VERSION as u64 => {
                return Err(fail(
                    line,
                    format!(
                        "recording version {v} is newer than this build reads (up to {VERSION}); use a newer swarm"
                    ),
                ))
            }
            Some(_) => {}
            None => return Err(fail(line, "the header has no version".into())),
        }
        let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0) as u32;
        let header: Header = serde_json::from_value(value).map_err(|e| fail(line, format!("bad header: {e}")))?;
        let backend = match &header.backend {
            Some(name) => Some(name.parse::<Backend>().map_err(|e| fail(line, e.to_string()))?),
            None => None,
        };
        let (start, mut frame) = match (header.snapshot, header.seed, header.capacity, header.settings, backend) {
            (Some(text), None, None, None, backend) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|e| fail(line, format!("bad base64 in the snapshot: {e}")))?;
                let frame = snapshot_frame(&bytes).map_err(|e| fail(line, format!("the start snapshot: {e}")))?;
                (Start::Snapshot { bytes, backend }, frame)
            }
            (None, Some(seed), Some(capacity), Some(config), Some(backend)) => {
                // The settings meet the flags' limits, as a snapshot's do.
                config.check().map_err(|e| fail(line, format!("settings: {e}")))?;
                limits::check("capacity", capacity, &limits::CAPACITY).map_err(|e| fail(line, e.to_string()))?;
                (Start::New { config, seed, capacity, backend }, 0)
            }
            _ => {
                return Err(fail(
                    line,
                    "the header needs either \"snapshot\" or all of \"seed\", \"capacity\", \"settings\" and \
                     \"backend\""
                        .into(),
                ))
            }
        };

        let groups = group_names();
        let last_frame = *limits::FRAMES.end() as u64;
        let mut inputs = Vec::new();
        let mut end = None;
        for (line, text) in lines {
            if end.is_some() {
                return Err(fail(line, "a line after the end line".into()));
            }
            let value = json(line, text)?;
            // The frame the run is at after this line: an input goes forward, bar a reset and a quick load.
            let (at, after) = if value.get("end").is_some() {
                let parsed: EndLine = serde_json::from_value(value).map_err(|e| fail(line, format!("bad end: {e}")))?;
                let digest = parse_digest(&parsed.end.digest).map_err(|why| fail(line, why))?;
                end = Some(End { line, frame: parsed.end.frame, digest });
                (parsed.end.frame, parsed.end.frame)
            } else {
                let parsed: InputLine =
                    serde_json::from_value(value).map_err(|e| fail(line, format!("bad input: {e}")))?;
                let digest = parse_digest(&parsed.digest).map_err(|why| fail(line, why))?;
                let at = parsed.frame;
                match &parsed.input {
                    // A change of the target population, at most the population's whole range either way.
                    Input::Population(delta) => {
                        let most = i64::from(*limits::POPULATION.end());
                        limits::check("population change", *delta, &(-most..=most))
                            .map_err(|e| fail(line, e.to_string()))?
                    }
                    Input::AlignEvery(every) => limits::check("align_every", *every, &limits::ALIGN_EVERY)
                        .map_err(|e| fail(line, e.to_string()))?,
                    Input::Threads(n) => {
                        limits::check("threads", *n, &limits::THREADS).map_err(|e| fail(line, e.to_string()))?
                    }
                    Input::Burst(at) | Input::Wave(Some(at)) if !at.is_finite() => {
                        let what = if matches!(parsed.input, Input::Burst(_)) { "burst" } else { "waves" };
                        return Err(fail(line, format!("{what} at ({}, {}), not a point", at.x, at.y)));
                    }
                    Input::AddWaves(n) => {
                        let most = *limits::POPULATION.end() / crate::sim::stress::WAVE;
                        limits::check("waves added", *n, &(0..=most)).map_err(|e| fail(line, e.to_string()))?
                    }
                    Input::Group { name, .. } if !groups.iter().any(|g| g == name) => {
                        return Err(fail(
                            line,
                            format!("no system group is named `{name}` (known: {})", groups.join(", ")),
                        ))
                    }
                    _ => {}
                }
                let after = match &parsed.input {
                    Input::Step => at + 1,
                    Input::Reset => 0,
                    Input::QuickLoad(bytes) => {
                        snapshot_frame(bytes).map_err(|e| fail(line, format!("the quick load's snapshot: {e}")))?
                    }
                    _ => at,
                };
                inputs.push(Recorded { line, frame: at, input: parsed.input, digest });
                (at, after)
            };
            if at > last_frame {
                return Err(fail(line, format!("frame {at} is past the limit of {last_frame} frames a run may reach")));
            }
            if at < frame {
                return Err(fail(
                    line,
                    format!(
                        "frame {at} is before frame {frame}, where the run already is (frames go back only by a \
                         reset or a quick load)"
                    ),
                ));
            }
            frame = after;
        }
        Ok(Self { start, inputs, end, version })
    }

    /// Reads and checks the recording at `path` (see [`Recording::parse`]). The error names the file, the line
    /// and the problem.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}
