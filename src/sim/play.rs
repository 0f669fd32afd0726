//! The running game and its inputs. The simulation depends only on where it starts ([`Start`]) and on the inputs
//! applied between frames ([`Input`]), so a run is its start plus a list of inputs, each with the frame it was
//! applied at. A [`Play`] is the running simulation; the window and a replay both change it only through
//! [`Play::apply`], so a replay applies every input exactly as the window did.

use super::config::{Scenario, SimConfig, SimStats, SpawnRequests};
use super::limits;
use super::painter::{sort_by_y, DrawOrder};
use super::rounds::Phase;
use super::stress::Waves;
use super::{build_app_with, digest, snapshot};
use crate::app::profile::Profiler;
use crate::app::{App, NextState, UnknownGroup};
use crate::ecs::{Backend, Entity, Format, SnapshotError, MAGIC};
use glam::Vec2;
use serde::{Deserialize, Serialize};
use std::fmt;

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
    /// Land a wave ([`crate::sim::stress`]) at this arena point every fixed step from now on (the window's held
    /// left button in the `stress` scenario; it sends the point again as the cursor moves), or stop (`None`).
    Wave(Option<Vec2>),
    /// Land this many waves next frame at points drawn from the seed (a ramp's step).
    AddWaves(u32),
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
    /// Run the schedule on this many threads (at least 1). The world after each frame is the same for every
    /// count, so a replay may run at another.
    Threads(u32),
    /// Start the next round now (the `battle` scenario's rounds: [`crate::sim::rounds`]); elsewhere, nothing.
    NextRound,
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
            Input::Wave(Some(at)) => write!(f, "waves at ({:.1}, {:.1})", at.x, at.y),
            Input::Wave(None) => write!(f, "waves stop"),
            Input::AddWaves(n) => write!(f, "add {n} waves"),
            Input::Pause(true) => write!(f, "pause"),
            Input::Pause(false) => write!(f, "resume"),
            Input::Step => write!(f, "step"),
            Input::Backend(backend) => write!(f, "backend {}", backend.name()),
            Input::Reset => write!(f, "reset"),
            Input::NextRound => write!(f, "next round"),
            Input::AlignEvery(0) => write!(f, "align off"),
            Input::AlignEvery(n) => write!(f, "align every {n}"),
            Input::DrawOrder(order) => write!(f, "draw order {}", order.name()),
            Input::QuickLoad(bytes) => write!(f, "quick load ({} bytes)", bytes.len()),
            Input::Group { name, enabled } => write!(f, "group {name} {}", if *enabled { "on" } else { "off" }),
            Input::Threads(n) => write!(f, "threads {n}"),
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
/// [`replay`](super::replay::replay) both change it only through [`Play::apply`], so a replay applies every input exactly as the
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

    /// The world's digest with what every [`Input`] sets that the world's values do not show yet: the bursts and
    /// waves asked for (they spawn in the next frame), the target population, the alignment, a pending round, the backend, the
    /// groups that are on, pause and draw order. A recording writes it after each input, so an input edited in the
    /// file differs at its own line, even when a later reset or quick load would wipe what it did.
    pub fn state_digest(&self) -> u64 {
        use super::digest::mix;
        let world = &self.app.world;
        let mut state = mix(digest(world));
        let mut add = |value: u64| state = mix(state ^ value);
        if let Some(requests) = world.get_resource::<SpawnRequests>() {
            add(requests.0.len() as u64);
            requests.0.iter().for_each(|at| add(u64::from(at.x.to_bits()) << 32 | u64::from(at.y.to_bits())));
        }
        if let Some(bursts) = world.get_resource::<super::config::TeamBursts>() {
            add(bursts.0.len() as u64);
            for (at, team) in &bursts.0 {
                add(u64::from(at.x.to_bits()) << 32 | u64::from(at.y.to_bits()));
                add(*team as u64);
            }
        }
        if let Some(waves) = world.get_resource::<Waves>() {
            add(waves.held.map_or(0, |at| 1 + (u64::from(at.x.to_bits()) << 32 | u64::from(at.y.to_bits()))));
            add(u64::from(waves.queued));
        }
        if let Some(config) = world.get_resource::<SimConfig>() {
            add(u64::from(config.target_population));
            add(u64::from(config.align_every));
        }
        if let Some(next) = world.get_resource::<NextState<Phase>>() {
            add(next.pending().map_or(0, |phase| phase as u64 + 1));
        }
        add(Backend::ALL.iter().position(|&b| b == world.backend()).unwrap_or(0) as u64);
        self.app.groups().for_each(|group| add(u64::from(group.enabled)));
        add(u64::from(self.paused));
        add(match self.order {
            DrawOrder::Storage => 0,
            DrawOrder::YSorted(method) => 1 + method as u64,
        });
        state
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
            Input::Wave(at) => world.resource_mut::<Waves>().held = *at,
            Input::AddWaves(n) => world.resource_mut::<Waves>().add(*n),
            Input::Pause(paused) => self.paused = *paused,
            Input::Step => {
                self.paused = true;
                self.app.update();
            }
            Input::Backend(backend) => world.set_backend(*backend),
            Input::Reset => self.reset(),
            Input::NextRound => {
                if world.resource::<SimConfig>().scenario == Scenario::Battle {
                    world.resource_mut::<NextState<Phase>>().set(Phase::Fighting);
                }
            }
            Input::AlignEvery(every) => world.resource_mut::<SimConfig>().align_every = *every,
            Input::DrawOrder(order) => self.order = *order,
            Input::QuickLoad(bytes) => {
                // Built aside: a snapshot that fails to load leaves the running world as it was.
                let threads = self.app.threads();
                self.app = snapshot::load_app(bytes, None, self.profiler.clone())?.0;
                self.app.set_threads(threads);
            }
            Input::Group { name, enabled } => self.app.set_group_enabled(name, *enabled).map_err(InputError::Group)?,
            Input::Threads(n) => {
                self.app.set_threads(*n as usize);
            }
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
        let threads = self.app.threads();
        self.app = build_app_with(config, seed, backend, capacity, self.profiler.clone());
        self.app.set_threads(threads);
    }

    /// Sorts the pools into the draw order (a y-sort; nothing for storage order or other backends than the
    /// sparse set), timed as the `y_sort` span; in storage order the span shows 0 ms, not the last sort's time.
    /// The window calls it once per drawn frame, a replay once per frame.
    pub fn sort(&mut self) {
        let DrawOrder::YSorted(method) = self.order else { return self.profiler.idle(self.sort_id) };
        let Self { app, profiler, sort_id, sort_order, sort_scratch, .. } = self;
        profiler.time("y_sort", *sort_id, || sort_by_y(&mut app.world, method, sort_order, sort_scratch));
    }

    /// One frame as a replay runs it: the update, then the draw order's sort.
    pub fn run_frame(&mut self) {
        self.app.update();
        self.sort();
    }
}
