//! Recording a run's inputs, and replaying them headless to the same worlds.
//!
//! The simulation depends only on where it starts and on the inputs applied between frames, so a run is its start
//! plus a list of inputs, each with the frame it was applied at. The window drives a [`Play`] through
//! [`Play::apply`] and writes each input with a [`Recorder`]; [`replay`] reads the file back and drives a new
//! play through the same [`Play::apply`], running frames up to each input's frame, and compares the world
//! digest after every input with the recorded one. A spike seen in the window can then be profiled headless
//! (`--replay FILE --trace trace.json`), frame for frame.
//!
//! The file is JSON Lines, written as the run goes and flushed per line, so a run that crashes still leaves a
//! usable file (it replays up to its last input):
//!
//! ```text
//! {"format":"swarm recording","version":1,"backend":"sparse-set","seed":1,"capacity":28096,"settings":{...}}
//! {"frame":120,"input":{"burst":[812.0,400.5]},"digest":"0123456789abcdef"}
//! {"frame":121,"input":{"backend":"archetype"},"digest":"0123456789abcdef"}
//! {"frame":300,"input":"reset","digest":"fedcba9876543210"}
//! {"end":{"frame":512,"digest":"0011223344556677"}}
//! ```
//!
//! A run that starts from a saved world has `"snapshot": "<base64 of the binary snapshot>"` in its header instead
//! of seed, capacity and settings; a quick load embeds its snapshot the same way. `frame` is the simulation's own
//! counter ([`SimStats::frames`]) when the input was applied: it goes back to 0 on a reset and to the loaded
//! world's frame on a quick load. `digest` is [`digest()`] right after the input, as 16 hex digits.

use super::config::{SimConfig, SimStats, SpawnRequests};
use super::limits;
use super::painter::{sort_by_y, DrawOrder};
use super::report::{Meter, Report};
use super::{build_app_with, digest, snapshot};
use crate::app::profile::Profiler;
use crate::app::{App, UnknownGroup};
use crate::ecs::{Backend, Entity, Format, SnapshotError, MAGIC};
use base64::Engine as _;
use glam::Vec2;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The `format` field of a recording's header line.
pub const FORMAT: &str = "swarm recording";
/// The format version this build writes, and the newest it reads.
pub const VERSION: u32 = 1;
/// Alignment period of the window's align toggle, in frames.
pub const ALIGN_EVERY: u32 = 30;

/// Something applied to a running simulation between frames: everything that changes the world or what the
/// profile shows. (Showing the overlay changes neither and is not an input.)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Input {
    /// Change the target population by this many fighters (clamped to 0..=capacity, and to the population's
    /// limit).
    Population(i64),
    /// Spawn a burst of fighters around this arena point.
    Burst(Vec2),
    /// Pause (true) or resume (false). The window runs no frames while paused; a replay follows the recorded
    /// frames, so for it this is a note.
    Pause(bool),
    /// Run one frame, and pause.
    Step,
    /// Switch the running world to this backend.
    Backend(#[serde(with = "backend_name")] Backend),
    /// Restart from frame 0: see [`Play::reset`].
    Reset,
    /// Align the velocity and health pools to the position pool every this many frames (0 = never).
    AlignEvery(u32),
    /// Order the sprites this way: a y-sort reorders the pools each drawn frame.
    DrawOrder(#[serde(with = "order_name")] DrawOrder),
    /// Replace the running world by this snapshot (binary), on the backend it was saved on.
    QuickLoad(#[serde(with = "base64_bytes")] Vec<u8>),
    /// Turn a named group of systems off or on ([`App::set_group_enabled`]); turning one off marks the run as
    /// modified. A reset or a quick load builds a new app, with every group on.
    Group {
        /// The group's name.
        name: String,
        /// On or off.
        enabled: bool,
    },
}

/// Why [`Play::apply`] refused an input; the play is as it was.
#[derive(Debug)]
pub enum InputError {
    /// A quick load's snapshot does not load.
    Snapshot(SnapshotError),
    /// No group of systems has that name.
    Group(UnknownGroup),
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Snapshot(error) => error.fmt(f),
            InputError::Group(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for InputError {}

impl From<SnapshotError> for InputError {
    fn from(error: SnapshotError) -> Self {
        InputError::Snapshot(error)
    }
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Input::Population(delta) => write!(f, "population {delta:+}"),
            Input::Burst(at) => write!(f, "burst ({:.1}, {:.1})", at.x, at.y),
            Input::Pause(true) => write!(f, "pause"),
            Input::Pause(false) => write!(f, "resume"),
            Input::Step => write!(f, "step"),
            Input::Backend(backend) => write!(f, "backend {}", backend.name()),
            Input::Reset => write!(f, "reset"),
            Input::AlignEvery(0) => write!(f, "align off"),
            Input::AlignEvery(n) => write!(f, "align every {n}"),
            Input::DrawOrder(order) => write!(f, "draw order {}", order.name()),
            Input::QuickLoad(bytes) => write!(f, "quick load ({} bytes)", bytes.len()),
            Input::Group { name, enabled } => write!(f, "group {name} {}", if *enabled { "on" } else { "off" }),
        }
    }
}

mod backend_name {
    use crate::ecs::Backend;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(backend: &Backend, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(backend.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Backend, D::Error> {
        String::deserialize(d)?.parse().map_err(D::Error::custom)
    }
}

mod order_name {
    use crate::sim::painter::DrawOrder;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(order: &DrawOrder, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(order.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DrawOrder, D::Error> {
        let name = String::deserialize(d)?;
        DrawOrder::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = DrawOrder::ALL.iter().map(|o| o.name()).collect();
            D::Error::custom(format!("unknown draw order `{name}` (known: {})", known.join(", ")))
        })
    }
}

mod base64_bytes {
    use base64::Engine as _;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| D::Error::custom(format!("bad base64: {e}")))
    }
}

/// Where a run starts.
#[derive(Clone, Debug, PartialEq)]
pub enum Start {
    /// A new world.
    New {
        /// Settings.
        config: SimConfig,
        /// Random seed.
        seed: u64,
        /// World capacity.
        capacity: u32,
        /// Backend.
        backend: Backend,
    },
    /// A saved world.
    Snapshot {
        /// The binary snapshot (see [`Start::snapshot`]).
        bytes: Vec<u8>,
        /// The backend to load it on; `None`: the one it was saved on.
        backend: Option<Backend>,
    },
}

impl Start {
    /// The start from a snapshot in either encoding, checked by loading it; the bytes kept are binary (a JSON
    /// snapshot is re-encoded), as a recording embeds them.
    pub fn snapshot(bytes: Vec<u8>, backend: Option<Backend>) -> Result<Start, SnapshotError> {
        let world = snapshot::schema().load(&bytes, backend)?;
        let bytes = if bytes.starts_with(&MAGIC) { bytes } else { snapshot::save(&world, Format::Binary)? };
        Ok(Start::Snapshot { bytes, backend })
    }
}

/// A running simulation and the inputs' state: the app, paused or not, and the draw order. The window and
/// [`replay`] both change it only through [`Play::apply`], so a replay applies every input exactly as the
/// window did.
pub struct Play {
    /// The running simulation. A reset or a quick load replaces it (with the same profiler).
    pub app: App,
    /// Paused? (Only the window acts on it.)
    pub paused: bool,
    /// How the sprites are ordered: [`Play::sort`] applies it.
    pub order: DrawOrder,
    profiler: Profiler,
    sort_id: u64,
    sort_order: Vec<Entity>,
    sort_scratch: Vec<u32>,
}

impl Play {
    /// A play from `start`, recording spans into `profiler` (also after a reset or a quick load). Fails only
    /// on a snapshot that does not load.
    pub fn new(start: &Start, profiler: Profiler) -> Result<Self, SnapshotError> {
        let app = match start {
            Start::New { config, seed, capacity, backend } => {
                build_app_with(config.clone(), *seed, *backend, *capacity, profiler.clone())
            }
            Start::Snapshot { bytes, backend } => snapshot::load_app(bytes, *backend, profiler.clone())?.0,
        };
        // Registered after the systems, so the profile lists it after them.
        let sort_id = profiler.register("y_sort");
        Ok(Self {
            app,
            paused: false,
            order: DrawOrder::Storage,
            profiler,
            sort_id,
            sort_order: Vec::new(),
            sort_scratch: Vec::new(),
        })
    }

    /// The profiler every app of this play records into.
    pub fn profiler(&self) -> &Profiler {
        &self.profiler
    }

    /// The simulation's frame counter ([`SimStats::frames`]).
    pub fn frame(&self) -> u64 {
        self.app.world.resource::<SimStats>().frames
    }

    /// The world's digest.
    pub fn digest(&self) -> u64 {
        digest(&self.app.world)
    }

    /// Applies `input`. Only a quick load (a snapshot that does not load) and a group (an unknown name) can fail,
    /// and then nothing changes.
    pub fn apply(&mut self, input: &Input) -> Result<(), InputError> {
        let world = &mut self.app.world;
        match input {
            Input::Population(delta) => {
                let most = world.capacity().min(*limits::POPULATION.end()) as i64;
                let config = world.resource_mut::<SimConfig>();
                config.target_population =
                    (config.target_population as i64).saturating_add(*delta).clamp(0, most) as u32;
            }
            Input::Burst(at) => world.resource_mut::<SpawnRequests>().0.push(*at),
            Input::Pause(paused) => self.paused = *paused,
            Input::Step => {
                self.paused = true;
                self.app.update();
            }
            Input::Backend(backend) => world.set_backend(*backend),
            Input::Reset => self.reset(),
            Input::AlignEvery(every) => world.resource_mut::<SimConfig>().align_every = *every,
            Input::DrawOrder(order) => self.order = *order,
            Input::QuickLoad(bytes) => {
                // Built aside: a snapshot that fails to load leaves the running world as it was.
                self.app = snapshot::load_app(bytes, None, self.profiler.clone())?.0;
            }
            Input::Group { name, enabled } => self.app.set_group_enabled(name, *enabled).map_err(InputError::Group)?,
        }
        Ok(())
    }

    /// Restarts from frame 0 with the running world's settings (population and alignment as they are now), seed,
    /// capacity and backend. These all come from the world, so after a load (at start or a quick load) a reset
    /// restarts the loaded run's settings and seed from its beginning; it does not go back to the loaded state.
    pub fn reset(&mut self) {
        let world = &self.app.world;
        let config = world.resource::<SimConfig>().clone();
        let seed = world.resource::<super::SimRng>().seed();
        let (backend, capacity) = (world.backend(), world.capacity());
        self.app = build_app_with(config, seed, backend, capacity, self.profiler.clone());
    }

    /// Sorts the pools into the draw order (a y-sort; nothing for storage order or other backends than the
    /// sparse set), timed as the `y_sort` span. The window calls it once per drawn frame, a replay once per frame.
    pub fn sort(&mut self) {
        let DrawOrder::YSorted(method) = self.order else { return };
        let Self { app, profiler, sort_id, sort_order, sort_scratch, .. } = self;
        profiler.time("y_sort", *sort_id, || sort_by_y(&mut app.world, method, sort_order, sort_scratch));
    }

    /// One frame as a replay runs it: the update, then the draw order's sort.
    pub fn run_frame(&mut self) {
        self.app.update();
        self.sort();
    }
}

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

fn hex(digest: u64) -> String {
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
        self.line(&InputLine { frame: at, input: input.clone(), digest: hex(play.digest()) })
    }

    /// Writes the end line: the play's frame and digest at the close.
    pub fn finish(mut self, play: &Play) -> Result<(), String> {
        self.line(&EndLine { end: EndFields { frame: play.frame(), digest: hex(play.digest()) } })
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
    /// Reads a recording and checks it whole before anything runs: the header (format, version, start), every
    /// input (known, with a well-formed digest, its embedded snapshot loading), and that frames only go forward
    /// (back only by a reset or a quick load). Nothing may follow the end line.
    pub fn parse(text: &str) -> Result<Self, RecordingError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim().is_empty());
        let fail = |line: usize, why: String| RecordingError { line, why };
        let json = |line: usize, text: &str| {
            serde_json::from_str::<serde_json::Value>(text)
                .map_err(|e| fail(line, format!("not a complete JSON line ({e}); the file may be cut short")))
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
                    Input::AlignEvery(every) => limits::check("align_every", *every, &limits::ALIGN_EVERY)
                        .map_err(|e| fail(line, e.to_string()))?,
                    Input::Burst(at) if !at.is_finite() => {
                        return Err(fail(line, format!("burst at ({}, {}), not a point", at.x, at.y)))
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
        Ok(Self { start, inputs, end })
    }

    /// Reads and checks the recording at `path` (see [`Recording::parse`]). The error names the file, the line
    /// and the problem.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

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

/// Replays `recording`: starts a play from its start, and for each input runs frames up to the input's frame,
/// applies it through [`Play::apply`], and compares digests, then runs to the end line's frame. `on_app` sees
/// the first app before anything runs (to attach a trace); `on_check` sees each comparison as it is made. Spans go
/// into `profiler`.
pub fn replay(
    recording: &Recording,
    profiler: Profiler,
    on_app: impl FnOnce(&App),
    mut on_check: impl FnMut(&Check),
) -> Result<Replayed, String> {
    let mut play = Play::new(&recording.start, profiler).map_err(|e| format!("the start snapshot: {e}"))?;
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
        let check = Check { line, frame, input: input.cloned(), digest: play.digest(), recorded };
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
