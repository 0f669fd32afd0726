//! The order of a stage's systems: what callers say (`.after`, `.before`, `.chain`, `.ambiguous_with`) and how the
//! app works it out. A stage's run order is a topological order of those constraints, ties broken by the order the
//! systems were added; a group's systems stay together (its profiler span holds them), so the groups and the
//! systems in none are ordered first, then each group's systems. A cycle, a label that names nothing, or an
//! `after` that points at a later stage is refused, naming the systems. Two systems whose order changes the result
//! (one writes what the other touches, or both record commands, which join the world's buffer in run order) must
//! be ordered, or said to be ambiguous on purpose.

use super::schedule::{SystemAccess, Touch};
use super::system::{short_fn_name, IntoSystem, System};
use super::Stage;
use crate::ecs::World;
use std::fmt;

/// What a constraint names: a system (by its function's name) or a group (by its name).
pub trait AsLabel<Marker> {
    /// The name.
    fn label(&self) -> &'static str;
}

impl AsLabel<()> for &'static str {
    fn label(&self) -> &'static str {
        self
    }
}

/// [`AsLabel`]'s marker for a system named by its function.
pub struct ByFunction<M>(std::marker::PhantomData<M>);

impl<M, S: IntoSystem<M>> AsLabel<ByFunction<M>> for S {
    fn label(&self) -> &'static str {
        short_fn_name::<S>()
    }
}

/// The other end of a constraint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A system or group by name.
    Name(&'static str),
    /// The system added just before, in the same call (`.chain()`).
    Previous,
    /// A system by its key (a resolved `Previous`).
    Key(u64),
}

/// One system, what it is ordered against, and when it runs.
pub struct Config {
    pub(crate) system: Box<dyn System>,
    pub(crate) after: Vec<Target>,
    pub(crate) before: Vec<Target>,
    pub(crate) ambiguous_with: Vec<&'static str>,
    pub(crate) conditions: Vec<Condition>,
}

/// A run condition ([`OrderSystems::run_if`]): a test of the world through `&World` (read-only: resources, query
/// counts, a state), evaluated once per frame at the start of its system's stage, before any of the stage's
/// systems runs; a system runs in that frame only if all its conditions hold. Combine with [`Condition::and`],
/// [`Condition::or`] and `!`.
///
/// ```
/// use swarm::app::{resource_matches, App, OrderSystems, ResMut, Stage};
/// struct Paused(bool);
/// struct Ticks(u32);
/// fn tick(mut t: ResMut<Ticks>) { t.0 += 1 }
/// let mut app = App::new();
/// app.insert_resource(Paused(false)).insert_resource(Ticks(0));
/// app.add_systems(Stage::Update, tick.run_if(!resource_matches(|p: &Paused| p.0)));
/// app.update();
/// app.world.resource_mut::<Paused>().0 = true;
/// app.update();
/// assert_eq!(app.world.resource::<Ticks>().0, 1);
/// ```
#[derive(Clone)]
pub struct Condition(std::sync::Arc<dyn Fn(&World) -> bool + Send + Sync>);

impl Condition {
    /// The condition `test`.
    pub fn new(test: impl Fn(&World) -> bool + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(test))
    }

    /// Whether it holds on `world`.
    pub fn holds(&self, world: &World) -> bool {
        (self.0)(world)
    }

    /// Both hold (`other` is not evaluated if this one fails).
    pub fn and(self, other: impl Into<Condition>) -> Self {
        let other = other.into();
        Self::new(move |world| self.holds(world) && other.holds(world))
    }

    /// Either holds (`other` is not evaluated if this one holds).
    pub fn or(self, other: impl Into<Condition>) -> Self {
        let other = other.into();
        Self::new(move |world| self.holds(world) || other.holds(world))
    }
}

impl std::ops::Not for Condition {
    type Output = Condition;
    fn not(self) -> Condition {
        Condition::new(move |world| !self.holds(world))
    }
}

impl<F: Fn(&World) -> bool + Send + Sync + 'static> From<F> for Condition {
    fn from(test: F) -> Self {
        Condition::new(test)
    }
}

/// Holds while the world has a resource of type `R`.
pub fn resource_exists<R: crate::ecs::Resource>() -> Condition {
    Condition::new(|world| world.get_resource::<R>().is_some())
}

/// Holds while the world has a resource `R` that passes `test`.
pub fn resource_matches<R: crate::ecs::Resource>(test: impl Fn(&R) -> bool + Send + Sync + 'static) -> Condition {
    Condition::new(move |world| world.get_resource::<R>().is_some_and(&test))
}

/// Holds while some entity has a `T` (the storage's count: no entity is visited).
pub fn any_with<T: crate::ecs::Component>() -> Condition {
    Condition::new(|world| world.count_of::<T>() > 0)
}

/// Systems with their constraints: what [`OrderSystems`]'s methods return, to add with
/// [`App::add_systems`](super::App::add_systems) or [`App::add_group`](super::App::add_group), or to nest in a tuple.
pub struct SystemConfigs(pub(crate) Vec<Config>);

/// One system, or a tuple of them (up to 8, each possibly ordered itself), added in order. (`Marker` tells the
/// kinds of system apart; callers never name it.)
pub trait IntoSystems<Marker> {
    /// Appends the systems, with their constraints, to `out`.
    fn into_configs(self, out: &mut Vec<Config>);
}

impl<M, S: IntoSystem<M>> IntoSystems<M> for S {
    fn into_configs(self, out: &mut Vec<Config>) {
        out.push(Config {
            system: self.into_system(),
            after: Vec::new(),
            before: Vec::new(),
            ambiguous_with: Vec::new(),
            conditions: Vec::new(),
        });
    }
}

/// [`IntoSystems`]'s marker for [`SystemConfigs`].
pub struct Configured;

impl IntoSystems<Configured> for SystemConfigs {
    fn into_configs(self, out: &mut Vec<Config>) {
        out.extend(self.0);
    }
}

macro_rules! impl_into_systems_tuple {
    ($($S:ident $M:ident $s:ident),+) => {
        impl<$($M, $S: IntoSystems<$M>),+> IntoSystems<($($M,)+)> for ($($S,)+) {
            fn into_configs(self, out: &mut Vec<Config>) {
                let ($($s,)+) = self;
                $($s.into_configs(out);)+
            }
        }
    };
}
impl_into_systems_tuple!(A MA a, B MB b);
impl_into_systems_tuple!(A MA a, B MB b, C MC c);
impl_into_systems_tuple!(A MA a, B MB b, C MC c, D MD d);
impl_into_systems_tuple!(A MA a, B MB b, C MC c, D MD d, E ME e);
impl_into_systems_tuple!(A MA a, B MB b, C MC c, D MD d, E ME e, F MF f);
impl_into_systems_tuple!(A MA a, B MB b, C MC c, D MD d, E ME e, F MF f, G MG g);
impl_into_systems_tuple!(A MA a, B MB b, C MC c, D MD d, E ME e, F MF f, G MG g, H MH h);

/// Orders systems: on a system, a tuple of them, or systems already ordered.
///
/// ```
/// use swarm::app::{App, OrderSystems, ResMut, Stage};
/// #[derive(Default)]
/// struct Log(Vec<&'static str>);
/// fn steer(mut log: ResMut<Log>) { log.0.push("steer") }
/// fn step(mut log: ResMut<Log>) { log.0.push("step") }
/// fn hit(mut log: ResMut<Log>) { log.0.push("hit") }
/// let mut app = App::new();
/// app.insert_resource(Log::default());
/// // Added out of order: the constraints decide.
/// app.add_systems(Stage::Update, (hit.after(step), (steer, step).chain()));
/// app.update();
/// assert_eq!(app.world.resource::<Log>().0, ["steer", "step", "hit"]);
/// ```
pub trait OrderSystems<Marker>: IntoSystems<Marker> + Sized {
    /// The systems as configs.
    fn configs(self) -> SystemConfigs {
        let mut out = Vec::new();
        self.into_configs(&mut out);
        SystemConfigs(out)
    }

    /// Each runs after the system or group `label` (in this stage, or an earlier one).
    fn after<L>(self, label: impl AsLabel<L>) -> SystemConfigs {
        let mut configs = self.configs();
        configs.0.iter_mut().for_each(|c| c.after.push(Target::Name(label.label())));
        configs
    }

    /// Each runs before the system or group `label` (in this stage, or a later one).
    fn before<L>(self, label: impl AsLabel<L>) -> SystemConfigs {
        let mut configs = self.configs();
        configs.0.iter_mut().for_each(|c| c.before.push(Target::Name(label.label())));
        configs
    }

    /// Each runs after the one before it, in the order written.
    fn chain(self) -> SystemConfigs {
        let mut configs = self.configs();
        configs.0.iter_mut().skip(1).for_each(|c| c.after.push(Target::Previous));
        configs
    }

    /// Each runs in a frame only if `condition` holds at the start of its stage (see [`Condition`]).
    fn run_if(self, condition: impl Into<Condition>) -> SystemConfigs {
        let condition = condition.into();
        let mut configs = self.configs();
        configs.0.iter_mut().for_each(|c| c.conditions.push(condition.clone()));
        configs
    }

    /// Each may run before or after the system or group `label` although their order changes the result: the
    /// order is then the order added, and the app does not refuse the pair.
    fn ambiguous_with<L>(self, label: impl AsLabel<L>) -> SystemConfigs {
        let mut configs = self.configs();
        configs.0.iter_mut().for_each(|c| c.ambiguous_with.push(label.label()));
        configs
    }
}

impl<M, T: IntoSystems<M>> OrderSystems<M> for T {}

/// Why a stage's systems cannot be ordered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrderError {
    /// A constraint names no system or group.
    Unknown {
        /// The system with the constraint.
        system: &'static str,
        /// The name it gives.
        label: &'static str,
    },
    /// A constraint points the wrong way across stages.
    WrongStage {
        /// The system with the constraint.
        system: &'static str,
        /// What it names.
        label: &'static str,
        /// `after` or `before`.
        relation: &'static str,
        /// The schedule of the system, and of what it names.
        stages: (ScheduleName, ScheduleName),
    },
    /// Systems run on entering or leaving a state that the app never initialised ([`App::init_state`]).
    ///
    /// [`App::init_state`]: super::App::init_state
    NoState {
        /// A system of such a schedule.
        system: &'static str,
        /// Its schedule.
        schedule: ScheduleName,
    },
    /// The constraints go round: each system (or group) must run after the next, the last after the first.
    Cycle(Vec<&'static str>),
    /// Two systems whose order changes the result are not ordered.
    Ambiguous {
        /// The stage (or transition schedule).
        stage: ScheduleName,
        /// The two systems, in the order added.
        systems: (&'static str, &'static str),
        /// What they both touch (one writing it), or "commands".
        what: String,
    },
}

impl fmt::Display for OrderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OrderError::Unknown { system, label } => {
                write!(f, "system `{system}` is ordered against `{label}`, which no system or group is named")
            }
            OrderError::WrongStage { system, label, relation, stages } => write!(
                f,
                "system `{system}` ({}) must run {relation} `{label}`, which is in {}; a constraint may cross \
                 stages in frame order only, and a transition's systems are ordered among themselves",
                stages.0, stages.1
            ),
            OrderError::NoState { system, schedule } => write!(
                f,
                "system `{system}` runs on {schedule}, but the app never initialised that state (App::init_state)"
            ),
            OrderError::Cycle(names) => {
                write!(f, "the order goes round: `{}`", names.join("` after `"))?;
                write!(f, " after `{}`", names[0])
            }
            OrderError::Ambiguous { stage, systems: (a, b), what } => write!(
                f,
                "systems `{a}` and `{b}` ({stage}) are not ordered, and their order changes the result: \
                 {what}; order them (.before, .after, .chain) or say so (.ambiguous_with)"
            ),
        }
    }
}

impl std::error::Error for OrderError {}

/// What the solver knows of one system of a stage (the stage lists them in the order added: ties go to the
/// earlier).
pub(crate) struct Node<'a> {
    pub(crate) name: &'static str,
    pub(crate) key: u64,
    pub(crate) group: Option<&'static str>,
    pub(crate) after: &'a [Target],
    pub(crate) before: &'a [Target],
    pub(crate) ambiguous_with: &'a [&'static str],
    pub(crate) access: &'a SystemAccess,
}

/// Where a name lives in the other schedules: to check a constraint that crosses them.
pub(crate) type Elsewhere<'a> = &'a dyn Fn(&'static str) -> Option<ScheduleName>;

/// A schedule of systems, as errors name it: a stage of the frame, or the systems a state transition runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleName {
    /// A stage.
    Stage(Stage),
    /// Entering a state: the state's type and value, as `Phase::Over`.
    Enter(String),
    /// Leaving a state.
    Exit(String),
}

impl fmt::Display for ScheduleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleName::Stage(stage) => write!(f, "stage {stage:?}"),
            ScheduleName::Enter(state) => write!(f, "OnEnter({state})"),
            ScheduleName::Exit(state) => write!(f, "OnExit({state})"),
        }
    }
}

/// The run order of a stage's systems `nodes` (positions into `nodes`), or why there is none; with `check`, two
/// systems whose order matters and that are not ordered are refused.
pub(crate) fn solve(
    stage: &ScheduleName,
    nodes: &[Node<'_>],
    elsewhere: Elsewhere<'_>,
    world: &World,
    check: bool,
) -> Result<Vec<usize>, OrderError> {
    let n = nodes.len();
    // The systems a target names here (a system by name or key, or every system of a group).
    let named = |target: &Target| -> Vec<usize> {
        (0..n)
            .filter(|&k| match target {
                Target::Name(label) => nodes[k].name == *label || nodes[k].group == Some(*label),
                Target::Key(key) => nodes[k].key == *key,
                Target::Previous => false,
            })
            .collect()
    };
    // Edges `first -> then` between systems.
    let mut edges: Vec<(usize, usize)> = Vec::new();
    for (k, node) in nodes.iter().enumerate() {
        for (targets, relation, later) in [(node.after, "after", false), (node.before, "before", true)] {
            for target in targets {
                let found = named(target);
                if found.is_empty() {
                    let Target::Name(label) = *target else { continue };
                    match elsewhere(label) {
                        None => return Err(OrderError::Unknown { system: node.name, label }),
                        Some(other) => match (stage, &other) {
                            // `after` something in an earlier stage, `before` something in a later one: already so.
                            (ScheduleName::Stage(here), ScheduleName::Stage(there))
                                if (there < here) != later && there != here =>
                            {
                                continue
                            }
                            _ => {
                                return Err(OrderError::WrongStage {
                                    system: node.name,
                                    label,
                                    relation,
                                    stages: (stage.clone(), other),
                                })
                            }
                        },
                    }
                }
                for j in found.into_iter().filter(|&j| j != k) {
                    edges.push(if later { (k, j) } else { (j, k) });
                }
            }
        }
    }
    // Units: each group, and each system in none; a unit's rank is its first system's in the order added.
    let mut units: Vec<Option<&'static str>> = Vec::new();
    let unit_of: Vec<usize> = nodes
        .iter()
        .map(|node| match node.group.and_then(|g| units.iter().position(|&u| u == Some(g))) {
            Some(at) => at,
            None => {
                units.push(node.group);
                units.len() - 1
            }
        })
        .collect();
    let units = unit_of.iter().max().map_or(0, |&u| u + 1);
    let unit_name = |u: usize| {
        let k = (0..n).find(|&k| unit_of[k] == u).expect("a unit has a system");
        nodes[k].group.unwrap_or(nodes[k].name)
    };
    let unit_edges: Vec<(usize, usize)> =
        edges.iter().map(|&(a, b)| (unit_of[a], unit_of[b])).filter(|(a, b)| a != b).collect();
    let unit_order = topo(units, &unit_edges, |u| u)
        .map_err(|cycle| OrderError::Cycle(cycle.into_iter().map(unit_name).collect()))?;
    let mut order = Vec::with_capacity(n);
    for u in unit_order {
        let members: Vec<usize> = (0..n).filter(|&k| unit_of[k] == u).collect();
        let local: Vec<(usize, usize)> = edges
            .iter()
            .filter(|(a, b)| unit_of[*a] == u && unit_of[*b] == u)
            .map(|&(a, b)| {
                (members.iter().position(|&m| m == a).unwrap(), members.iter().position(|&m| m == b).unwrap())
            })
            .collect();
        let inner = topo(members.len(), &local, |i| i)
            .map_err(|cycle| OrderError::Cycle(cycle.into_iter().map(|i| nodes[members[i]].name).collect()))?;
        order.extend(inner.into_iter().map(|i| members[i]));
    }
    if check {
        ambiguities(stage, nodes, &edges, &unit_of, world)?;
    }
    Ok(order)
}

/// A topological order of `0..n` under `edges` (`a -> b`: a first), ties to the smallest `rank`; or a cycle.
fn topo(n: usize, edges: &[(usize, usize)], rank: impl Fn(usize) -> usize) -> Result<Vec<usize>, Vec<usize>> {
    let mut indegree = vec![0usize; n];
    for &(_, b) in edges {
        indegree[b] += 1;
    }
    let mut done = vec![false; n];
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let next = (0..n).filter(|&k| !done[k] && indegree[k] == 0).min_by_key(|&k| rank(k));
        let Some(k) = next else {
            // Every node left waits on another: walk back along the edges until one repeats.
            let mut at = (0..n).find(|&k| !done[k]).expect("nodes left");
            let mut path = vec![at];
            loop {
                let from = edges.iter().find(|&&(a, b)| b == at && !done[a]).expect("a waiting node has an edge").0;
                if let Some(start) = path.iter().position(|&p| p == from) {
                    return Err(path[start..].to_vec());
                }
                path.push(from);
                at = from;
            }
        };
        done[k] = true;
        out.push(k);
        for &(a, b) in edges {
            if a == k {
                indegree[b] -= 1;
            }
        }
    }
    Ok(out)
}

/// Refuses two systems whose order matters and that no constraint orders (directly, through others, or through
/// their groups' order), unless one says the pair is ambiguous on purpose.
fn ambiguities(
    stage: &ScheduleName,
    nodes: &[Node<'_>],
    edges: &[(usize, usize)],
    unit_of: &[usize],
    world: &World,
) -> Result<(), OrderError> {
    let n = nodes.len();
    // Reachability: `reach[a][b]` if a runs before b by the constraints; a group's order orders its members.
    let mut reach = vec![vec![false; n]; n];
    for &(a, b) in edges {
        reach[a][b] = true;
        for x in 0..n {
            for y in 0..n {
                if unit_of[x] == unit_of[a] && unit_of[y] == unit_of[b] && unit_of[a] != unit_of[b] {
                    reach[x][y] = true;
                }
            }
        }
    }
    for k in 0..n {
        let through = reach[k].clone();
        for row in reach.iter_mut().filter(|row| row[k]) {
            for (b, &on) in through.iter().enumerate() {
                row[b] |= on;
            }
        }
    }
    for a in 0..n {
        for b in a + 1..n {
            if reach[a][b] || reach[b][a] {
                continue;
            }
            let excused = |x: &Node<'_>, y: &Node<'_>| {
                x.ambiguous_with.iter().any(|&label| label == y.name || Some(label) == y.group)
            };
            if excused(&nodes[a], &nodes[b]) || excused(&nodes[b], &nodes[a]) {
                continue;
            }
            let what = match nodes[a].access.clash(nodes[b].access, world) {
                Some(clash) if clash.what == "World" => Some("one of them takes the whole world".to_string()),
                Some(clash) => Some(format!("`{}` and `{}` both touch `{}`", clash.first, clash.second, clash.what)),
                None => {
                    let commands = |node: &Node<'_>| node.access.params.iter().any(|p| p.touch == Touch::Commands);
                    (commands(&nodes[a]) && commands(&nodes[b]))
                        .then(|| "both record commands, which join the world's buffer in run order".to_string())
                }
            };
            if let Some(what) = what {
                return Err(OrderError::Ambiguous {
                    stage: stage.clone(),
                    systems: (nodes[a].name, nodes[b].name),
                    what,
                });
            }
        }
    }
    Ok(())
}
