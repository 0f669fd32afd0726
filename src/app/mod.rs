//! The app, Bevy-plugin style: a world, systems in stages, plugins that add them, and a frame loop; and the
//! [`profile`]r that turns each system run into milliseconds and, on request, a Chrome trace.
//!
//! ```
//! use swarm::app::{App, Stage};
//! use swarm::ecs::World;
//! struct Counter(u32);
//! fn count(world: &mut World) {
//!     world.resource_mut::<Counter>().0 += 1;
//! }
//! fn counting(app: &mut App) {
//!     app.insert_resource(Counter(0)).add_systems(Stage::Update, count);
//! }
//! let mut app = App::new();
//! app.add_plugins(counting);
//! app.update();
//! app.update();
//! assert_eq!(app.world.resource::<Counter>().0, 2);
//! ```

pub mod order;
pub mod profile;
pub mod schedule;
pub mod state;
pub mod system;

pub use crate::ecs::Commands;
pub use order::{
    any_with, resource_exists, resource_matches, Condition, IntoSystems, OrderError, OrderSystems, ScheduleName,
    SystemConfigs,
};
pub use state::{in_state, NextState, OnEnter, OnExit, State, States};
pub use system::{Allocator, IntoSystem, Local, Query, Res, ResMut, System, SystemParam};

use crate::ecs::{Entity, Resource, World};
use order::{Config, Node, Target};
use profile::Profiler;
use schedule::{AccessError, SystemAccess};
use state::{Driver, Slots};
use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

/// When a system runs within a frame. Startup runs once, before the first frame's other stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// Once, before the first frame.
    Startup,
    /// Each frame, first.
    PreUpdate,
    /// Each frame.
    Update,
    /// Each frame, after `Update`.
    PostUpdate,
    /// Each frame, last (before commands are applied).
    Last,
}

impl Stage {
    /// The per-frame stages, in order.
    pub const FRAME: [Stage; 4] = [Stage::PreUpdate, Stage::Update, Stage::PostUpdate, Stage::Last];
    /// Every stage, in order.
    pub const ALL: [Stage; 5] = [Stage::Startup, Stage::PreUpdate, Stage::Update, Stage::PostUpdate, Stage::Last];

    fn slot(self) -> usize {
        self as usize
    }
}

/// Where [`App::add_systems`] puts systems: a [`Stage`], or a state transition ([`OnEnter`], [`OnExit`]).
pub trait IntoSchedule {
    /// The schedule's position in `app`, made if new.
    #[doc(hidden)]
    fn slot(self, app: &mut App) -> usize;
}

impl IntoSchedule for Stage {
    fn slot(self, _: &mut App) -> usize {
        Stage::slot(self)
    }
}

impl<S: States> IntoSchedule for OnEnter<S> {
    fn slot(self, app: &mut App) -> usize {
        app.transition_slot(self.0, true)
    }
}

impl<S: States> IntoSchedule for OnExit<S> {
    fn slot(self, app: &mut App) -> usize {
        app.transition_slot(self.0, false)
    }
}

/// Something that configures an [`App`]: adds systems, resources, other plugins.
pub trait Plugin {
    /// Adds this plugin's parts to `app`.
    fn build(&self, app: &mut App);
}

impl<F: Fn(&mut App)> Plugin for F {
    fn build(&self, app: &mut App) {
        self(app)
    }
}

macro_rules! impl_plugin_tuple {
    ($($P:ident $p:ident),+) => {
        impl<$($P: Plugin),+> Plugin for ($($P,)+) {
            fn build(&self, app: &mut App) {
                let ($($p,)+) = self;
                $($p.build(app);)+
            }
        }
    };
}
impl_plugin_tuple!(A a);
impl_plugin_tuple!(A a, B b);
impl_plugin_tuple!(A a, B b, C c);
impl_plugin_tuple!(A a, B b, C c, D d);
impl_plugin_tuple!(A a, B b, C c, D d, E e);
impl_plugin_tuple!(A a, B b, C c, D d, E e, F f);
impl_plugin_tuple!(A a, B b, C c, D d, E e, F f, G g);
impl_plugin_tuple!(A a, B b, C c, D d, E e, F f, G g, H h);

struct Entry {
    system: Box<dyn System>,
    /// What it touches, worked out when it was added.
    access: SystemAccess,
    name: &'static str,
    id: u64,
    /// The group it belongs to, as a position in `App::groups`.
    group: Option<usize>,
    /// Its panic in the batch running now, if it panicked.
    panic: Option<Box<dyn Any + Send>>,
    /// The world's registry its state was worked out in ([`World::registry_stamp`]).
    registry: u64,
    /// Unique in the app (what `.chain()` names).
    key: u64,
    /// What it is ordered against.
    after: Vec<Target>,
    before: Vec<Target>,
    ambiguous_with: Vec<&'static str>,
    /// Its run conditions, and whether they failed at the start of this frame's run of its stage.
    conditions: Vec<order::Condition>,
    skip: bool,
}

impl Entry {
    /// If the world's registry was replaced since the system's state was worked out (a snapshot loaded into the
    /// world), works it out again: its queries' ids named the old registry's types. Its parameters' state starts
    /// afresh ([`Local`] values too). Whether it did.
    fn reinit_if_replaced(&mut self, world: &mut World) -> bool {
        let stamp = world.registry_stamp();
        if self.registry == stamp {
            return false;
        }
        self.access = match self.system.init(world) {
            Ok(access) => access,
            Err(error) => panic!("{error}"),
        };
        self.registry = stamp;
        true
    }
}

/// A named group of systems in one stage: its systems run one after another, its time is their sum (one span
/// around them), and it can be turned off and on while the app runs ([`App::set_group_enabled`]).
struct Group {
    name: &'static str,
    stage: Stage,
    id: u64,
    enabled: bool,
}

/// What [`App::groups`] tells of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupInfo {
    /// The group's name (its row in the profiler).
    pub name: &'static str,
    /// The stage it runs in.
    pub stage: Stage,
    /// Whether it runs.
    pub enabled: bool,
    /// Its systems, in run order.
    pub systems: Vec<&'static str>,
}

/// [`App::set_group_enabled`] was given a name no group has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownGroup(pub String);

impl std::fmt::Display for UnknownGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no system group is named `{}`", self.0)
    }
}

impl std::error::Error for UnknownGroup {}

/// The fewest pieces of a parallel loop ([`World::piece_rows`] rows each, so 16,384 entities at the default) a
/// world must hold for its frame to run on the pool: below that the frame runs on the calling thread, as on one
/// thread, since handing small pieces over costs more than a second thread gives back (at 10,000 fighters, about
/// 11,000 entities, two threads on the pool took 1.3 times one thread's time). The result is the same either way.
pub const FRAME_ON_POOL_PIECES: usize = 8;

/// The world plus its systems: stages hold systems, some of them in named groups (a tree: stage, group, system).
pub struct App {
    /// The world the systems run on.
    pub world: World,
    /// The systems of each schedule: the five stages (by [`Stage::slot`]), then the state transitions'.
    stages: Vec<Vec<Entry>>,
    /// Each schedule's name, as errors give it.
    names: Vec<ScheduleName>,
    /// Per state type, in the order first named: its transitions' schedules.
    drivers: Vec<Box<dyn Driver>>,
    groups: Vec<Group>,
    /// A group was turned off at some point: the run is no longer the plain one of its seed.
    modified: bool,
    started: bool,
    frames: u64,
    profiler: Profiler,
    apply_id: u64,
    /// Threads the schedule may use (1: every system on the calling thread, in order).
    threads: usize,
    /// The pool for `threads` > 1, built when first needed.
    pool: Option<rayon::ThreadPool>,
    /// The pool was asked for (and, if `pool` is `None`, refused: the schedule runs on the calling thread).
    pool_asked: bool,
    /// Threads of the pool kept awake while a frame runs on it ([`keep_warm`]): one less than the pool's, or than
    /// the machine's cores if fewer.
    warm: usize,
    /// Per stage, the batches of each run of systems (a group, or systems in none), worked out when first run
    /// after a change.
    plans: Vec<Option<Vec<Segment>>>,
    /// The systems run since their command buffers last joined the world's (reused).
    ran: Vec<usize>,
    /// A batch without the systems whose run conditions failed (reused).
    picked: Vec<usize>,
    /// The next system's key.
    next_key: u64,
    /// Whether two systems whose order matters must be ordered ([`App::set_ambiguity_check`]).
    ambiguity_check: bool,
}

/// A run of a stage's systems that belong to the same group (or to none), cut into batches that may run at once.
struct Segment {
    /// The group, as a position in `App::groups`.
    group: Option<usize>,
    /// Positions in the stage, batch by batch.
    batches: Vec<Vec<usize>>,
}

/// The machine's cores: the default thread count.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Default for App {
    fn default() -> Self {
        Self::new()
    }
}

impl App {
    /// An app with an empty default world.
    pub fn new() -> Self {
        Self::with_world(World::new())
    }

    /// An app around `world`.
    pub fn with_world(world: World) -> Self {
        Self::with_profiler(world, Profiler::new())
    }

    /// An app around `world` that records its spans into `profiler` (shared with whoever else holds it, e.g. a
    /// window that rebuilds its app on reset but keeps one trace).
    pub fn with_profiler(mut world: World, profiler: Profiler) -> Self {
        let apply_id = profiler.register("apply_commands");
        world.set_threads(default_threads());
        Self {
            world,
            stages: Stage::ALL.iter().map(|_| Vec::new()).collect(),
            names: Stage::ALL.into_iter().map(ScheduleName::Stage).collect(),
            drivers: Vec::new(),
            groups: Vec::new(),
            modified: false,
            started: false,
            frames: 0,
            profiler,
            apply_id,
            threads: default_threads(),
            pool: None,
            pool_asked: false,
            warm: 0,
            plans: Stage::ALL.iter().map(|_| None).collect(),
            ran: Vec::new(),
            picked: Vec::new(),
            next_key: 0,
            ambiguity_check: true,
        }
    }

    /// How many threads the schedule uses: systems of one batch (whose access does not clash) run at once on up to
    /// this many, and so do the pieces of parallel query loops. The world after a frame is the same for every
    /// count.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Sets the thread count (at least 1; 1 runs every system on the calling thread, in order).
    pub fn set_threads(&mut self, threads: usize) -> &mut Self {
        let threads = threads.max(1);
        if threads != self.threads {
            self.threads = threads;
            self.pool = None;
            self.pool_asked = false;
        }
        self.world.set_threads(threads);
        self
    }

    /// Adds a plugin, a `fn(&mut App)`, or a tuple of them.
    pub fn add_plugins(&mut self, plugins: impl Plugin) -> &mut Self {
        plugins.build(self);
        self
    }

    /// Registers a lifecycle handler on the app's world, called after each spawn ([`World::on_spawn`]; the rule
    /// is in [`crate::ecs::events`]). Handlers fire as the frame's command buffer is applied, in its keyed order,
    /// and their commands apply in the same apply.
    pub fn on_spawn(
        &mut self,
        handler: impl FnMut(&World, Entity, &mut crate::ecs::Commands<'_>) + Send + Sync + 'static,
    ) -> &mut Self {
        self.world.on_spawn(handler);
        self
    }

    /// Registers a handler called before each despawn ([`World::on_despawn`]).
    pub fn on_despawn(
        &mut self,
        handler: impl FnMut(&World, Entity, &mut crate::ecs::Commands<'_>) + Send + Sync + 'static,
    ) -> &mut Self {
        self.world.on_despawn(handler);
        self
    }

    /// Registers a handler called after each insert of a `T` ([`World::on_insert`]).
    pub fn on_insert<T: crate::ecs::Component>(
        &mut self,
        handler: impl FnMut(&World, Entity, &T, &mut crate::ecs::Commands<'_>) + Send + Sync + 'static,
    ) -> &mut Self {
        self.world.on_insert::<T>(handler);
        self
    }

    /// Registers a handler without state of its own called after each insert of a `T`, whose calls for a run of
    /// inserts in a command buffer may run at once ([`World::on_insert_parallel`]).
    pub fn on_insert_parallel<T: crate::ecs::Component>(
        &mut self,
        handler: impl Fn(&World, Entity, &T, &mut crate::ecs::Commands<'_>) + Send + Sync + 'static,
    ) -> &mut Self {
        self.world.on_insert_parallel::<T>(handler);
        self
    }

    /// Registers a handler called before each removal of a `T` ([`World::on_remove`]).
    pub fn on_remove<T: crate::ecs::Component>(
        &mut self,
        handler: impl FnMut(&World, Entity, &T, &mut crate::ecs::Commands<'_>) + Send + Sync + 'static,
    ) -> &mut Self {
        self.world.on_remove::<T>(handler);
        self
    }

    /// Inserts a resource into the world.
    pub fn insert_resource<R: Resource>(&mut self, value: R) -> &mut Self {
        self.world.insert_resource(value);
        self
    }

    /// Adds systems to `stage` (a [`Stage`], or a state transition: [`OnEnter`], [`OnExit`]), ordered as their
    /// constraints say ([`OrderSystems`]: `.after`, `.before`, `.chain`), otherwise in the order added; systems
    /// that touch nothing in common may run at once, with the same result. Two systems whose order changes the
    /// result must be ordered (see [`App::check_order`]).
    ///
    /// # Panics
    /// If a system's own parameters conflict ([`App::try_add_systems`] returns the error instead).
    pub fn add_systems<M>(&mut self, stage: impl IntoSchedule, systems: impl IntoSystems<M>) -> &mut Self {
        if let Err(error) = self.try_add_systems(stage, systems) {
            panic!("{error}");
        }
        self
    }

    /// Adds systems to `stage`, or none of them if one is refused: its own parameters conflict (two `ResMut` of
    /// one type, a query writing what another reads, unless filters keep them apart).
    pub fn try_add_systems<M>(
        &mut self,
        stage: impl IntoSchedule,
        systems: impl IntoSystems<M>,
    ) -> Result<&mut Self, AccessError> {
        let slot = stage.slot(self);
        let at = self.stages[slot].len();
        self.insert_systems(slot, at, None, systems)?;
        Ok(self)
    }

    /// Adds systems to the group `group` of `stage`, made at the end of the stage if new. A group's systems run
    /// together (one profiler span), ordered among themselves by their constraints, otherwise in the order added;
    /// a constraint naming the group orders all of them.
    ///
    /// # Panics
    /// If the group exists in another stage, or a group and a system share a name (they share the profiler's rows),
    /// or a system's own parameters conflict.
    pub fn add_group<M>(&mut self, stage: Stage, group: &'static str, systems: impl IntoSystems<M>) -> &mut Self {
        let index = match self.groups.iter().position(|g| g.name == group) {
            Some(index) => {
                let found = self.groups[index].stage;
                assert_eq!(found, stage, "group `{group}` is in stage {found:?}, not {stage:?}");
                index
            }
            None => {
                assert!(
                    !self.stages.iter().flatten().any(|e| e.name == group),
                    "group `{group}` has the name of a system"
                );
                let id = self.profiler.register(group);
                self.groups.push(Group { name: group, stage, id, enabled: true });
                self.groups.len() - 1
            }
        };
        let entries = &self.stages[stage.slot()];
        let at = entries.iter().rposition(|e| e.group == Some(index)).map_or(entries.len(), |last| last + 1);
        if let Err(error) = self.insert_systems(stage.slot(), at, Some(index), systems) {
            panic!("{error}");
        }
        self
    }

    fn insert_systems<M>(
        &mut self,
        slot: usize,
        at: usize,
        group: Option<usize>,
        systems: impl IntoSystems<M>,
    ) -> Result<(), AccessError> {
        self.reinit_if_replaced();
        let mut configs = Vec::new();
        systems.into_configs(&mut configs);
        let mut entries = Vec::with_capacity(configs.len());
        let mut key = self.next_key;
        for Config { mut system, mut after, before, ambiguous_with, conditions } in configs {
            let name = system.name();
            assert!(!self.groups.iter().any(|g| g.name == name), "system `{name}` has the name of a group");
            let access = system.init(&mut self.world)?;
            let registry = self.world.registry_stamp();
            for target in &mut after {
                if *target == Target::Previous {
                    *target = Target::Key(key.wrapping_sub(1));
                }
            }
            entries.push(Entry {
                system,
                access,
                name,
                id: 0,
                group,
                panic: None,
                registry,
                key,
                after,
                before,
                ambiguous_with,
                conditions,
                skip: false,
            });
            key += 1;
        }
        self.next_key = key;
        for (offset, mut entry) in entries.into_iter().enumerate() {
            entry.id = self.profiler.register(entry.name);
            self.stages[slot].insert(at + offset, entry);
        }
        self.plans[slot] = None;
        Ok(())
    }

    /// Works out again the state of systems initialised in a registry the world no longer has (see
    /// `Entry::reinit_if_replaced`), and the batches with it.
    fn reinit_if_replaced(&mut self) {
        let mut any = false;
        for entry in self.stages.iter_mut().flatten() {
            any |= entry.reinit_if_replaced(&mut self.world);
        }
        if any {
            self.plans.iter_mut().for_each(|plan| *plan = None);
        }
    }

    /// Works out each stage's run order from its systems' constraints (the app does it before a frame after a
    /// change), or says why there is none: a constraint naming nothing, pointing at the wrong stage, or going
    /// round; or, unless [`App::set_ambiguity_check`] turned it off, two systems of a stage whose order changes the
    /// result (one writes what the other touches, or both record commands) with no constraint between them.
    pub fn check_order(&mut self) -> Result<(), OrderError> {
        self.reinit_if_replaced();
        for slot in 0..self.stages.len() {
            if self.plans[slot].is_none() {
                self.order_stage(slot)?;
                let Self { world, stages, plans, .. } = self;
                plans[slot] = Some(plan(&stages[slot], world));
            }
        }
        for driver in self.drivers.iter().filter(|d| !d.initialised()) {
            if let Some(slot) = driver.slots().find(|&slot| !self.stages[slot].is_empty()) {
                let system = self.stages[slot][0].name;
                return Err(OrderError::NoState { system, schedule: self.names[slot].clone() });
            }
        }
        Ok(())
    }

    /// Puts the systems of schedule `slot` in run order.
    fn order_stage(&mut self, slot: usize) -> Result<(), OrderError> {
        let stages = &self.stages;
        let elsewhere = |label: &'static str| {
            let named = |e: &Entry| e.name == label || e.group.is_some_and(|g| self.groups[g].name == label);
            let found = (0..stages.len()).filter(|&s| s != slot).find(|&s| stages[s].iter().any(named));
            found.map(|s| self.names[s].clone())
        };
        let entries = &stages[slot];
        let nodes: Vec<Node<'_>> = entries
            .iter()
            .map(|e| Node {
                name: e.name,
                key: e.key,
                group: e.group.map(|g| self.groups[g].name),
                after: &e.after,
                before: &e.before,
                ambiguous_with: &e.ambiguous_with,
                access: &e.access,
            })
            .collect();
        let order = order::solve(&self.names[slot], &nodes, &elsewhere, &self.world, self.ambiguity_check)?;
        drop(nodes);
        let mut old: Vec<Option<Entry>> = std::mem::take(&mut self.stages[slot]).into_iter().map(Some).collect();
        self.stages[slot] = order.into_iter().map(|k| old[k].take().expect("each once")).collect();
        Ok(())
    }

    /// Whether two systems of a stage whose order changes the result must be ordered (default: yes; off, such a
    /// pair runs in the order added, which the app then does not vouch for).
    pub fn set_ambiguity_check(&mut self, check: bool) -> &mut Self {
        self.ambiguity_check = check;
        self.plans.iter_mut().for_each(|plan| *plan = None);
        self
    }

    /// The groups, in the order made, with their systems.
    pub fn groups(&self) -> impl Iterator<Item = GroupInfo> + '_ {
        self.groups.iter().enumerate().map(|(index, g)| GroupInfo {
            name: g.name,
            stage: g.stage,
            enabled: g.enabled,
            systems: self.stages[g.stage.slot()].iter().filter(|e| e.group == Some(index)).map(|e| e.name).collect(),
        })
    }

    /// Turns a group off (its systems are skipped) or on. Turning one off marks the run as modified for good
    /// ([`App::is_modified`]): from then on it is not the plain run of its seed.
    pub fn set_group_enabled(&mut self, name: &str, enabled: bool) -> Result<(), UnknownGroup> {
        let group = self.groups.iter_mut().find(|g| g.name == name).ok_or_else(|| UnknownGroup(name.to_string()))?;
        group.enabled = enabled;
        self.modified |= !enabled;
        Ok(())
    }

    /// Whether the group `name` runs; `None` if no group has that name. Unlike [`App::groups`] it allocates
    /// nothing, so a window can ask every frame.
    pub fn is_group_enabled(&self, name: &str) -> Option<bool> {
        self.groups.iter().find(|g| g.name == name).map(|g| g.enabled)
    }

    /// Whether a group was ever turned off in this app.
    pub fn is_modified(&self) -> bool {
        self.modified
    }

    /// The recorder of per-system times.
    pub fn profiler(&self) -> &Profiler {
        &self.profiler
    }

    /// Frames run so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The names of the systems of `stage`, in run order (as last worked out: [`App::check_order`]).
    pub fn system_names(&self, stage: Stage) -> impl Iterator<Item = &'static str> + '_ {
        self.stages[stage.slot()].iter().map(|e| e.name)
    }

    /// The state transitions' schedules (see [`state`]), in the order made, each with its systems in run order
    /// (as last worked out).
    pub fn transition_schedules(&self) -> impl Iterator<Item = (&ScheduleName, Vec<&'static str>)> + '_ {
        let slots = Stage::ALL.len()..self.stages.len();
        slots.map(|slot| (&self.names[slot], self.stages[slot].iter().map(|e| e.name).collect()))
    }

    /// The batches of `stage`'s systems, run by run of one group (or none), as positions in the stage: what
    /// [`App::update`] runs at once.
    pub fn batches(&mut self, stage: Stage) -> Vec<Vec<usize>> {
        if let Err(error) = self.check_order() {
            panic!("{error}");
        }
        let plan = self.plans[stage.slot()].as_ref().expect("check_order plans every stage");
        plan.iter().flat_map(|segment| segment.batches.iter().cloned()).collect()
    }

    /// Runs one frame: Startup systems the first time, then every frame stage in order, then the command buffer.
    ///
    /// # Panics
    /// If a system panics (the message names it; the world is left consistent: what the system moved out for its
    /// run is back, and the commands recorded so far are kept), or a system's resource is missing.
    pub fn update(&mut self) {
        if let Err(error) = self.check_order() {
            panic!("{error}");
        }
        if self.threads > 1 && !self.pool_asked {
            // Without a pool (the system refused threads) the schedule runs on this thread, with the same result.
            self.pool = rayon::ThreadPoolBuilder::new().num_threads(self.threads).build().ok();
            self.pool_asked = true;
            // No more spinning threads than the machine runs at once (beside the frame's own).
            let cores = std::thread::available_parallelism().map_or(1, usize::from);
            self.warm = self.threads.min(cores).saturating_sub(1);
        }
        // The whole frame runs on the pool, so the systems of a batch and the pieces of a parallel query loop (in
        // any system) go to its threads with no hand-over per batch. A world too small to give each thread several
        // pieces of a loop ([`FRAME_ON_POOL_PIECES`]) runs its frame here, as on one thread: handing it over would
        // cost more than it saves.
        let pieces = FRAME_ON_POOL_PIECES.max(self.threads);
        let small = (self.world.len() as usize) < self.world.piece_rows().saturating_mul(pieces);
        match self.pool.take() {
            Some(pool) if !small => {
                let others = self.warm;
                let outcome = pool.install(|| {
                    // The pool's other threads stay awake for the frame (`keep_warm`), beside it on the stack.
                    let done = AtomicBool::new(false);
                    let frame_thread = rayon::current_thread_index();
                    let frame = || {
                        let outcome = catch_unwind(AssertUnwindSafe(|| self.frame(true)));
                        done.store(true, Ordering::Release);
                        outcome
                    };
                    rayon::join(frame, || keep_warm(&done, frame_thread, others)).0
                });
                self.pool = Some(pool);
                if let Err(panic) = outcome {
                    resume_unwind(panic);
                }
            }
            pool => {
                self.pool = pool;
                self.world.set_threads(1);
                let outcome = catch_unwind(AssertUnwindSafe(|| self.frame(false)));
                self.world.set_threads(self.threads);
                if let Err(panic) = outcome {
                    resume_unwind(panic);
                }
            }
        }
    }

    /// One frame, on the pool's threads if `on_pool`.
    fn frame(&mut self, on_pool: bool) {
        if !self.started {
            self.started = true;
            self.run_stage(Stage::Startup.slot(), on_pool);
            self.world.apply_commands();
            self.settle_handles();
        }
        if !self.drivers.is_empty() {
            self.transitions(on_pool);
        }
        for stage in Stage::FRAME {
            self.run_stage(stage.slot(), on_pool);
        }
        apply_timed(&mut self.world, &self.profiler, self.apply_id);
        self.settle_handles();
        // The world's own queries and trackers answer "since the last frame" (systems have their own moment).
        self.world.clear_trackers();
        self.frames += 1;
    }

    /// After an apply: the deferred handles systems keep (in `Local`s of holder types) follow their spawns.
    fn settle_handles(&mut self) {
        let Self { world, stages, .. } = self;
        world.settle_applied(|settle| {
            for entry in stages.iter_mut().flatten() {
                entry.system.settle_handles(settle);
            }
        });
    }

    /// The frame's transition point (see [`state`]): round the state types in the order first named, one pending
    /// transition each per round, until none is pending or [`state::MAX_TRANSITIONS`] ran.
    fn transitions(&mut self, on_pool: bool) {
        let mut ran = 0;
        loop {
            let mut any = false;
            for d in 0..self.drivers.len() {
                if ran == state::MAX_TRANSITIONS {
                    return;
                }
                let Some((exit, enter)) = self.drivers[d].begin(&mut self.world) else { continue };
                (any, ran) = (true, ran + 1);
                if let Some(slot) = exit {
                    // A panicking `OnExit` system leaves the state where it was, the request withdrawn: the value
                    // current is always one whose `OnEnter` ran.
                    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.run_transition(slot, on_pool))) {
                        self.drivers[d].abandon();
                        resume_unwind(panic);
                    }
                }
                self.drivers[d].commit(&mut self.world);
                if let Some(slot) = enter {
                    self.run_transition(slot, on_pool);
                }
            }
            if !any {
                return;
            }
        }
    }

    /// Runs a transition's systems, then applies the commands they recorded.
    fn run_transition(&mut self, slot: usize, on_pool: bool) {
        self.run_stage(slot, on_pool);
        apply_timed(&mut self.world, &self.profiler, self.apply_id);
        self.settle_handles();
    }

    /// The schedule for entering (or leaving) state `value`, made if new.
    fn transition_slot<S: States>(&mut self, value: S, entering: bool) -> usize {
        let slots = self.driver::<S>();
        let list = if entering { &slots.enter } else { &slots.exit };
        if let Some(&(_, slot)) = list.iter().find(|(v, _)| *v == value) {
            return slot;
        }
        let slot = self.stages.len();
        let slots = self.driver::<S>();
        let list = if entering { &mut slots.enter } else { &mut slots.exit };
        list.push((value, slot));
        self.stages.push(Vec::new());
        self.plans.push(None);
        self.names.push(state::schedule_name(value, entering));
        slot
    }

    /// The transitions' schedules of state type `S`, made empty if new.
    fn driver<S: States>(&mut self) -> &mut Slots<S> {
        let at = match self.drivers.iter_mut().position(|d| d.as_any_mut().is::<Slots<S>>()) {
            Some(at) => at,
            None => {
                self.drivers.push(Box::new(Slots::<S>::default()));
                self.drivers.len() - 1
            }
        };
        self.drivers[at].as_any_mut().downcast_mut().expect("found by type")
    }

    /// Adds state `S` starting at `initial` (see [`state`]): its resources [`State<S>`] and [`NextState<S>`] (kept
    /// if the world has them already, as a loaded one does), and its transitions at the start of each frame. The
    /// first frame enters `initial`.
    pub fn init_state<S: States>(&mut self, initial: S) -> &mut Self {
        if !self.world.contains_resource::<State<S>>() {
            self.world.insert_resource(State::new(initial, false));
        }
        if !self.world.contains_resource::<NextState<S>>() {
            self.world.insert_resource(NextState::<S>::default());
        }
        self.driver::<S>().initialised = true;
        self
    }

    fn run_stage(&mut self, stage: usize, on_pool: bool) {
        let Self { world, stages, groups, profiler, plans, ran, picked, .. } = self;
        let entries = &mut stages[stage];
        // The run conditions, once per frame, before any of the stage's systems runs.
        for entry in entries.iter_mut().filter(|e| !e.conditions.is_empty()) {
            entry.skip = !entry.conditions.iter().all(|condition| condition.holds(world));
        }
        // (`update` ran `check_order` first: the stage is in run order and planned.)
        let plan = plans[stage].as_ref().expect("check_order plans every stage");
        for segment in plan.iter() {
            let mut run = || run_batches(world, entries, &segment.batches, profiler, on_pool, ran, picked);
            match segment.group {
                None => run(),
                Some(g) => {
                    let group = &groups[g];
                    if group.enabled {
                        profiler.time(group.name, group.id, run);
                    }
                }
            }
        }
    }
}

/// Cuts a stage's systems into runs of one group (or none), and each run into batches.
fn plan(entries: &[Entry], world: &World) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < entries.len() {
        let group = entries[start].group;
        let end = start + entries[start..].iter().take_while(|e| e.group == group).count();
        let access: Vec<SystemAccess> = entries[start..end].iter().map(|e| e.access.clone()).collect();
        let batches = schedule::batches(&access, world)
            .into_iter()
            .map(|batch| batch.into_iter().map(|k| start + k).collect())
            .collect();
        out.push(Segment { group, batches });
        start = end;
    }
    out
}

/// Runs the batches in order (see [`run_batch`]). Batches may hold systems out of the schedule's order (a system
/// that clashes with nothing before it joins the first batch), so the command buffers of function systems join the
/// world's in the schedule's order once the batches up to the next exclusive system (which clashes with every
/// system, so none moves past it) have run, and at the end: the world's buffer then holds the commands in the order
/// the serial schedule records them.
fn run_batches(
    world: &mut World,
    entries: &mut [Entry],
    batches: &[Vec<usize>],
    profiler: &Profiler,
    on_pool: bool,
    ran: &mut Vec<usize>,
    picked: &mut Vec<usize>,
) {
    for batch in batches {
        // Without the systems whose run conditions failed (in a buffer kept between frames).
        let batch: &[usize] = match batch.iter().any(|&k| entries[k].skip) {
            true => {
                picked.clear();
                picked.extend(batch.iter().copied().filter(|&k| !entries[k].skip));
                picked
            }
            false => batch,
        };
        if batch.is_empty() {
            continue;
        }
        let exclusive = matches!(*batch, [k] if entries[k].access.is_exclusive());
        if exclusive {
            flush(world, entries, ran);
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| run_batch(world, entries, batch, profiler, on_pool)));
        if !exclusive {
            ran.extend(batch);
        }
        if let Err(panic) = outcome {
            flush(world, entries, ran);
            resume_unwind(panic);
        }
    }
    flush(world, entries, ran);
}

/// The command buffers of the systems at `ran` join the world's, in the schedule's order.
fn flush(world: &mut World, entries: &mut [Entry], ran: &mut Vec<usize>) {
    ran.sort_unstable();
    for k in ran.drain(..) {
        entries[k].system.flush(world);
    }
}

/// Runs one batch. An exclusive system is alone in its batch and runs on the world. Function systems are each
/// prepared in order (their written types and resources moved out of the world; a missing resource stops the
/// batch before any of it runs), run (on the pool with the world shared, if there is a pool and more than one, else
/// in order on this thread), then finished (everything put back), panicking or not. So what a batch does is the
/// same for every thread count.
fn run_batch(world: &mut World, entries: &mut [Entry], batch: &[usize], profiler: &Profiler, on_pool: bool) {
    if let [k] = *batch {
        if entries[k].access.is_exclusive() {
            let entry = &mut entries[k];
            let elsewhere = profiler.elsewhere_ns();
            let run = catch_unwind(AssertUnwindSafe(|| {
                profiler.time(entry.name, entry.id, || entry.system.run_exclusive(world))
            }));
            profiler.set_parallel(entry.id, false, profiler.elsewhere_ns() - elsewhere);
            if let Err(panic) = run {
                resume_named(entry.name, panic);
            }
            return;
        }
    }
    // Prepared in order; a missing resource or a panic (a system's state worked out again for a registry an
    // exclusive system just replaced, say) puts back what the batch took so far, then goes on.
    let mut prepared = 0;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        for &k in batch {
            entries[k].reinit_if_replaced(world);
            entries[k].system.prepare(world)?;
            prepared += 1;
        }
        Ok::<(), system::Missing>(())
    }));
    if !matches!(outcome, Ok(Ok(()))) {
        let failed = batch[prepared.min(batch.len() - 1)];
        for &k in &batch[..(prepared + 1).min(batch.len())] {
            entries[k].system.finish(world);
        }
        match outcome {
            Ok(Err(missing)) => panic!("system `{}`: {missing}", entries[failed].name),
            Err(panic) => resume_named(entries[failed].name, panic),
            Ok(Ok(())) => unreachable!(),
        }
    }
    {
        let world = &*world;
        let together = on_pool && batch.len() > 1;
        let run = |entry: &mut Entry| {
            let elsewhere = profiler.elsewhere_ns();
            let run = || profiler.time(entry.name, entry.id, || entry.system.run_shared(world));
            entry.panic = catch_unwind(AssertUnwindSafe(run)).err();
            profiler.set_parallel(entry.id, together, profiler.elsewhere_ns() - elsewhere);
        };
        match on_pool {
            true if batch.len() > 1 => run_split(entries, 0, batch, &run),
            _ => {
                for (k, entry) in entries.iter_mut().enumerate() {
                    if batch.contains(&k) {
                        run(entry);
                    }
                }
            }
        }
    }
    for &k in batch {
        entries[k].system.finish(world);
    }
    if let Some(&k) = batch.iter().find(|&&k| entries[k].panic.is_some()) {
        let panic = entries[k].panic.take().expect("found above");
        for &j in batch {
            entries[j].panic = None;
        }
        resume_named(entries[k].name, panic);
    }
}

/// Runs `run` on each entry of `entries` (the stage's from position `first` on) that `batch` names, on the pool:
/// the slice is halved and the halves joined (`rayon::join`), down to one system per task. Joins keep their jobs on
/// the stack, so a frame allocates nothing here (a scope's spawns would box each job).
fn run_split(entries: &mut [Entry], first: usize, batch: &[usize], run: &(impl Fn(&mut Entry) + Sync)) {
    let named = |k: &usize| (first..first + entries.len()).contains(k);
    match batch.iter().filter(|k| named(k)).count() {
        0 => {}
        1 => {
            let k = *batch.iter().find(|k| named(k)).expect("counted above");
            run(&mut entries[k - first]);
        }
        _ => {
            let middle = entries.len() / 2;
            let (left, right) = entries.split_at_mut(middle);
            crate::ecs::join(|| run_split(left, first, batch, run), || run_split(right, first + middle, batch, run));
        }
    }
}

/// Applies the world's command buffer in the `apply_commands` span, noting the work other threads did for it.
fn apply_timed(world: &mut World, profiler: &Profiler, id: u64) {
    let elsewhere = profiler.elsewhere_ns();
    profiler.time("apply_commands", id, || world.apply_commands());
    profiler.set_parallel(id, false, profiler.elsewhere_ns() - elsewhere);
}

/// Panics again with the system's name in front of the message.
fn resume_named(system: &str, panic: Box<dyn Any + Send>) -> ! {
    let message = match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(text), _) => text.to_string(),
        (_, Some(text)) => text.clone(),
        _ => resume_unwind(panic),
    };
    if message.starts_with("system `") {
        resume_unwind(panic);
    }
    panic!("system `{system}` panicked: {message}");
}

/// Keeps `count` threads of the pool awake while the frame runs on `frame_thread`, until `done`: each takes work
/// as soon as a loop or a batch offers it, instead of a sleeping thread being woken for each (on the 2-core VM of
/// BENCHMARKS.md, a woken thread started its half of a join 40 to 80 µs late, and a frame hands out dozens). The
/// threads spin between the frame's parallel parts, and sleep again when it ends. The spinners start as the
/// second halves of joins, so nothing allocates; a spinner the frame's own thread picks up while it waits inside
/// the frame returns at once (it would wait for the frame, which waits for it).
fn keep_warm(done: &AtomicBool, frame_thread: Option<usize>, count: usize) {
    if count == 0 || rayon::current_thread_index() == frame_thread {
        return;
    }
    let spin = || {
        while !done.load(Ordering::Acquire) {
            if rayon::yield_now() != Some(rayon::Yield::Executed) {
                std::hint::spin_loop();
            }
        }
    };
    rayon::join(spin, || keep_warm(done, frame_thread, count - 1));
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Log(Vec<&'static str>);

    fn first(world: &mut World) {
        world.resource_mut::<Log>().0.push("first");
    }
    fn second(world: &mut World) {
        world.resource_mut::<Log>().0.push("second");
    }
    fn early(world: &mut World) {
        world.resource_mut::<Log>().0.push("early");
    }
    fn once(world: &mut World) {
        world.resource_mut::<Log>().0.push("once");
        world.commands().spawn((1u8,)).unwrap();
    }

    struct LogPlugin;
    impl Plugin for LogPlugin {
        fn build(&self, app: &mut App) {
            app.insert_resource(Log(Vec::new()));
        }
    }

    #[test]
    fn stages_run_in_order_and_startup_once() {
        let mut app = App::new();
        app.add_plugins((LogPlugin, |app: &mut App| {
            app.add_systems(Stage::Update, (first, second).chain()).add_systems(Stage::PreUpdate, early);
        }));
        app.add_systems(Stage::Startup, once);
        app.update();
        assert_eq!(app.world.len(), 1, "startup commands are applied");
        app.update();
        assert_eq!(app.world.resource::<Log>().0, ["once", "early", "first", "second", "early", "first", "second"]);
        assert_eq!(app.system_names(Stage::Update).collect::<Vec<_>>(), ["first", "second"]);
        app.profiler().with_timings(|t| {
            assert_eq!(t.get("first").unwrap().runs, 2);
            assert_eq!(t.get("once").unwrap().runs, 1);
            assert_eq!(t.get("apply_commands").unwrap().runs, 2);
        });
    }

    #[test]
    fn groups_keep_their_systems_together_time_them_and_turn_off() {
        let mut app = App::new();
        app.add_plugins(LogPlugin);
        app.add_group(Stage::Update, "pair", first).add_systems(Stage::Update, early.after("pair")).add_group(
            Stage::Update,
            "pair",
            second.after(first),
        );
        app.check_order().unwrap();
        assert_eq!(app.system_names(Stage::Update).collect::<Vec<_>>(), ["first", "second", "early"]);
        let groups: Vec<GroupInfo> = app.groups().collect();
        assert_eq!(
            groups,
            [GroupInfo { name: "pair", stage: Stage::Update, enabled: true, systems: vec!["first", "second"] }]
        );
        app.update();
        app.set_group_enabled("pair", false).unwrap();
        assert!(app.is_modified());
        app.update();
        app.set_group_enabled("pair", true).unwrap();
        assert!(app.is_modified(), "modified for good");
        app.update();
        assert_eq!(app.world.resource::<Log>().0, ["first", "second", "early", "early", "first", "second", "early"]);
        app.profiler().with_timings(|t| {
            let (pair, first, second) = (t.get("pair").unwrap(), t.get("first").unwrap(), t.get("second").unwrap());
            assert_eq!((pair.runs, first.runs), (2, 2));
            assert!(pair.total_ms >= first.total_ms + second.total_ms, "the group's span holds its systems'");
        });
        assert_eq!(app.set_group_enabled("nope", false), Err(UnknownGroup("nope".into())));
    }
}
