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

pub mod profile;
pub mod schedule;

use crate::ecs::World;
use profile::Profiler;

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

    fn slot(self) -> usize {
        self as usize
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

/// A system: a function of the world. Its name (for spans and reports) is the function's name.
pub trait System: 'static {
    /// Runs the system once.
    fn run(&mut self, world: &mut World);
    /// The name in spans and reports.
    fn name(&self) -> &'static str;
}

impl<F: FnMut(&mut World) + 'static> System for F {
    fn run(&mut self, world: &mut World) {
        self(world)
    }
    fn name(&self) -> &'static str {
        let full = std::any::type_name::<F>();
        full.rsplit("::").next().unwrap_or(full)
    }
}

/// One system or a tuple of systems, added in order.
pub trait IntoSystems {
    /// Appends the systems to `out`, in order.
    fn into_systems(self, out: &mut Vec<Box<dyn System>>);
}

impl<S: System> IntoSystems for S {
    fn into_systems(self, out: &mut Vec<Box<dyn System>>) {
        out.push(Box::new(self));
    }
}

macro_rules! impl_into_systems_tuple {
    ($($S:ident $s:ident),+) => {
        impl<$($S: System),+> IntoSystems for ($($S,)+) {
            fn into_systems(self, out: &mut Vec<Box<dyn System>>) {
                let ($($s,)+) = self;
                $(out.push(Box::new($s));)+
            }
        }
    };
}
impl_into_systems_tuple!(A a, B b);
impl_into_systems_tuple!(A a, B b, C c);
impl_into_systems_tuple!(A a, B b, C c, D d);
impl_into_systems_tuple!(A a, B b, C c, D d, E e);
impl_into_systems_tuple!(A a, B b, C c, D d, E e, F f);

struct Entry {
    system: Box<dyn System>,
    name: &'static str,
    id: u64,
    /// The group it belongs to, as a position in `App::groups`.
    group: Option<usize>,
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

/// The world plus its systems: stages hold systems, some of them in named groups (a tree: stage, group, system).
pub struct App {
    /// The world the systems run on.
    pub world: World,
    stages: [Vec<Entry>; 5],
    groups: Vec<Group>,
    /// A group was turned off at some point: the run is no longer the plain one of its seed.
    modified: bool,
    started: bool,
    frames: u64,
    profiler: Profiler,
    apply_id: u64,
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
    pub fn with_profiler(world: World, profiler: Profiler) -> Self {
        let apply_id = profiler.register("apply_commands");
        Self {
            world,
            stages: Default::default(),
            groups: Vec::new(),
            modified: false,
            started: false,
            frames: 0,
            profiler,
            apply_id,
        }
    }

    /// Adds a plugin, a `fn(&mut App)`, or a tuple of them.
    pub fn add_plugins(&mut self, plugins: impl Plugin) -> &mut Self {
        plugins.build(self);
        self
    }

    /// Inserts a resource into the world.
    pub fn insert_resource<R: 'static>(&mut self, value: R) -> &mut Self {
        self.world.insert_resource(value);
        self
    }

    /// Adds systems to `stage`; within a stage they run in the order added.
    pub fn add_systems(&mut self, stage: Stage, systems: impl IntoSystems) -> &mut Self {
        let at = self.stages[stage.slot()].len();
        self.insert_systems(stage, at, None, systems);
        self
    }

    /// Adds systems to the group `group` of `stage`, made at the end of the stage if new. Systems added to an
    /// existing group run after its others, and the group keeps its place in the stage.
    ///
    /// # Panics
    /// If the group exists in another stage, or a group and a system share a name (they share the profiler's rows).
    pub fn add_group(&mut self, stage: Stage, group: &'static str, systems: impl IntoSystems) -> &mut Self {
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
        self.insert_systems(stage, at, Some(index), systems);
        self
    }

    fn insert_systems(&mut self, stage: Stage, at: usize, group: Option<usize>, systems: impl IntoSystems) {
        let mut boxed = Vec::new();
        systems.into_systems(&mut boxed);
        for (offset, system) in boxed.into_iter().enumerate() {
            let name = system.name();
            assert!(!self.groups.iter().any(|g| g.name == name), "system `{name}` has the name of a group");
            let id = self.profiler.register(name);
            self.stages[stage.slot()].insert(at + offset, Entry { system, name, id, group });
        }
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

    /// The names of the systems of `stage`, in run order.
    pub fn system_names(&self, stage: Stage) -> impl Iterator<Item = &'static str> + '_ {
        self.stages[stage.slot()].iter().map(|e| e.name)
    }

    /// Runs one frame: Startup systems the first time, then every frame stage in order, then the command buffer.
    pub fn update(&mut self) {
        let Self { world, stages, groups, started, profiler, apply_id, .. } = self;
        if !*started {
            *started = true;
            for entry in &mut stages[Stage::Startup.slot()] {
                profiler.time(entry.name, entry.id, || entry.system.run(world));
            }
            world.apply_commands();
        }
        for stage in Stage::FRAME {
            let entries = &mut stages[stage.slot()];
            let mut i = 0;
            while i < entries.len() {
                let Some(g) = entries[i].group else {
                    let entry = &mut entries[i];
                    profiler.time(entry.name, entry.id, || entry.system.run(world));
                    i += 1;
                    continue;
                };
                // A group's systems are contiguous: one span around them all.
                let end = i + entries[i..].iter().take_while(|e| e.group == Some(g)).count();
                let group = &groups[g];
                if group.enabled {
                    profiler.time(group.name, group.id, || {
                        for entry in &mut entries[i..end] {
                            profiler.time(entry.name, entry.id, || entry.system.run(world));
                        }
                    });
                }
                i = end;
            }
        }
        profiler.time("apply_commands", *apply_id, || world.apply_commands());
        self.frames += 1;
    }
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
            app.add_systems(Stage::Update, (first, second)).add_systems(Stage::PreUpdate, early);
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
        app.add_group(Stage::Update, "pair", first).add_systems(Stage::Update, early).add_group(
            Stage::Update,
            "pair",
            second,
        );
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
