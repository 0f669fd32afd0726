//! What each system touches, worked out once when it is added, and the batches of systems that may run at once.
//!
//! A system's [`SystemAccess`] lists what its parameters touch: queries (what each reads and writes, and which
//! types it requires or excludes), resources (read or written), the command buffer, or the whole world (an
//! exclusive `fn(&mut World)`). Two parameters of one system conflict when one writes what the other reads or
//! writes: a component type, unless their queries cannot match the same entity (`With<T>` in one, `Without<T>` in
//! the other, as in bevy), or a resource. Two *systems* clash on a component type one writes and the other names
//! even when their filters are disjoint: without `unsafe`, one pool cannot be lent to two threads at once, one of
//! them writing, however the entities split, so such systems run one after the other. An exclusive system clashes
//! with every other. Commands do not clash: each system records into its own buffer, and the buffers are applied
//! in the systems' order.
//!
//! [`batches`] cuts a list of systems into batches that may run at once, keeping every conflicting pair in the
//! order given: each system goes in the batch after the last one holding a system it conflicts with. Running the
//! batches in order, each batch's systems in any order or at once, gives the world the serial order gives.

use crate::ecs::Resource;
use crate::ecs::{ComponentId, Filter, QueryAccess, QueryData, QueryError, World};
use std::any::{type_name, TypeId};
use std::fmt;

/// What one parameter of a system touches.
#[derive(Clone, Debug, PartialEq)]
pub enum Touch {
    /// Components, through a query.
    Components(QueryAccess),
    /// A resource, read or (`write`) written.
    Resource {
        /// The resource's type.
        type_id: TypeId,
        /// Its name (`std::any::type_name`).
        name: &'static str,
        /// Whether the system writes it.
        write: bool,
    },
    /// Structural changes recorded in the system's own command buffer.
    Commands,
    /// The whole world (an exclusive system).
    Exclusive,
}

/// One parameter: how it reads in messages (`Query<(&mut Position, &Velocity)>`), and what it touches.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// The parameter as a type, without module paths.
    pub name: String,
    /// What it touches.
    pub touch: Touch,
}

/// What a system touches, parameter by parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct SystemAccess {
    /// The system's name.
    pub system: &'static str,
    /// Its parameters, in order.
    pub params: Vec<Param>,
}

/// A system's parameters get in each other's way, or a query is refused: the system cannot be added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// Two parameters of one system touch the same thing, one of them writing it.
    Conflict {
        /// The system.
        system: &'static str,
        /// The first parameter.
        first: String,
        /// The second parameter.
        second: String,
        /// The component or resource both touch.
        what: String,
    },
    /// A query parameter is refused on its own ([`QueryError`]).
    Refused {
        /// The system.
        system: &'static str,
        /// The parameter.
        param: String,
        /// Why.
        error: QueryError,
    },
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccessError::Conflict { system, first, second, what } => write!(
                f,
                "system `{system}`: parameters `{first}` and `{second}` both touch `{what}` and one of them writes \
                 it (make the queries disjoint with With/Without, or merge them into one)"
            ),
            AccessError::Refused { system, param, error } => {
                write!(f, "system `{system}`: parameter `{param}`: {error}")
            }
        }
    }
}

impl std::error::Error for AccessError {}

/// Why two systems cannot run at once: the parameters that clash, and what over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clash {
    /// The first system's parameter.
    pub first: String,
    /// The second system's parameter.
    pub second: String,
    /// The component or resource both touch (`World` for an exclusive system).
    pub what: String,
}

/// `std::any::type_name` without module paths: `Query<(&mut Position, &Velocity)>`.
pub fn short_name(full: &str) -> String {
    let mut out = String::with_capacity(full.len());
    let mut word = String::new();
    for c in full.chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            out.push_str(word.rsplit("::").next().unwrap_or(&word));
            word.clear();
            out.push(c);
        }
    }
    out.push_str(word.rsplit("::").next().unwrap_or(&word));
    out
}

/// How a query parameter reads in messages: `Query<(&mut Pos, &Vel), With<Red>>`.
pub(crate) fn query_param_name<Q, F>() -> String {
    match type_name::<F>() {
        "()" => format!("Query<{}>", short_name(type_name::<Q>())),
        filter => format!("Query<{}, {}>", short_name(type_name::<Q>()), short_name(filter)),
    }
}

/// How a resource parameter reads in messages: `Res<Grid>`, or `ResMut<Grid>` when `write`.
pub(crate) fn resource_param_name<R>(write: bool) -> String {
    let kind = if write { "ResMut" } else { "Res" };
    format!("{kind}<{}>", short_name(type_name::<R>()))
}

impl SystemAccess {
    /// A system that touches nothing yet.
    pub fn new(system: &'static str) -> Self {
        Self { system, params: Vec::new() }
    }

    /// An exclusive system: it touches the whole world, so it runs alone.
    pub fn exclusive(system: &'static str) -> Self {
        Self { system, params: vec![Param { name: "&mut World".into(), touch: Touch::Exclusive }] }
    }

    /// Adds a parameter, refused if it conflicts with one added before (disjoint queries do not).
    pub fn add(&mut self, param: Param) -> Result<(), AccessError> {
        self.add_named(param, None)
    }

    /// [`SystemAccess::add`], naming a clashing component type through `world` (the world that gave its id).
    fn add_named(&mut self, param: Param, world: Option<&World>) -> Result<(), AccessError> {
        for other in &self.params {
            if let Some(what) = clash(&other.touch, &param.touch, Filters::Apart) {
                return Err(AccessError::Conflict {
                    system: self.system,
                    first: other.name.clone(),
                    second: param.name,
                    what: what.name(world),
                });
            }
        }
        self.params.push(param);
        Ok(())
    }

    /// Adds a query parameter `Query<Q, F>`, registering its types in `world`.
    pub fn add_query<Q: QueryData, F: Filter>(&mut self, world: &mut World) -> Result<(), AccessError> {
        let name = query_param_name::<Q, F>();
        match world.query_access::<Q, F>() {
            Ok(access) => self.add_named(Param { name, touch: Touch::Components(access) }, Some(world)),
            Err(error) => Err(AccessError::Refused { system: self.system, param: name, error }),
        }
    }

    /// Adds a change tracker parameter `Tracker<T>`, registering `T` in `world`: it looks at `T`'s stamps, so a
    /// system writing `T` cannot run beside it.
    pub fn add_tracker<T: crate::ecs::Component>(&mut self, world: &mut World) -> Result<ComponentId, AccessError> {
        let id = world.register::<T>();
        let mut access = QueryAccess::default();
        access.filtered.insert(id);
        let name = format!("Tracker<{}>", short_name(type_name::<T>()));
        self.add_named(Param { name, touch: Touch::Components(access) }, Some(world))?;
        Ok(id)
    }

    /// Adds a resource parameter: `Res<R>` (`write` false) or `ResMut<R>`.
    pub fn add_resource<R: Resource>(&mut self, write: bool) -> Result<(), AccessError> {
        let name = resource_param_name::<R>(write);
        self.add(Param { name, touch: Touch::Resource { type_id: TypeId::of::<R>(), name: type_name::<R>(), write } })
    }

    /// Whether the system takes the whole world.
    pub fn is_exclusive(&self) -> bool {
        self.params.iter().any(|param| param.touch == Touch::Exclusive)
    }

    /// Why this system and `other` cannot run at once, if they cannot: a component type one writes and the other
    /// names (whatever their filters), a resource one writes and the other names, or the whole world.
    pub fn clash(&self, other: &SystemAccess, world: &World) -> Option<Clash> {
        // An exclusive system is a barrier even for a system that touches nothing of the world (no parameters, or
        // only `Local`): what such a system does outside the world keeps its place in the order given.
        if self.is_exclusive() || other.is_exclusive() {
            let name = |s: &SystemAccess| s.params.first().map_or("(no parameters)".into(), |p| p.name.clone());
            return Some(Clash { first: name(self), second: name(other), what: "World".into() });
        }
        for a in &self.params {
            for b in &other.params {
                if let Some(what) = clash(&a.touch, &b.touch, Filters::Ignored) {
                    let what = what.name(Some(world));
                    return Some(Clash { first: a.name.clone(), second: b.name.clone(), what });
                }
            }
        }
        None
    }
}

/// Whether queries whose filters keep them apart (one requires what the other excludes) may share a type.
#[derive(Clone, Copy, PartialEq)]
enum Filters {
    /// Yes: a system's own parameters, which it borrows in turn.
    Apart,
    /// No: two systems, which would hold the same pool at once.
    Ignored,
}

/// What two parameters clash over.
enum Subject {
    /// A component type.
    Component(ComponentId),
    /// A resource (its type's name).
    Resource(&'static str),
    /// The whole world.
    Everything,
}

impl Subject {
    /// For people: a component by its type's name (its id if `world` does not know it).
    fn name(&self, world: Option<&World>) -> String {
        match self {
            Subject::Component(id) => match world.and_then(|world| world.component_info(*id)) {
                Some(info) => short_name(info.name),
                None => format!("component #{id}"),
            },
            Subject::Resource(name) => short_name(name),
            Subject::Everything => "World".into(),
        }
    }
}

/// What two parameters both touch, one writing it.
fn clash(a: &Touch, b: &Touch, filters: Filters) -> Option<Subject> {
    match (a, b) {
        (Touch::Exclusive, _) | (_, Touch::Exclusive) => Some(Subject::Everything),
        (Touch::Components(a), Touch::Components(b)) => match filters {
            Filters::Apart => a.conflict(b),
            Filters::Ignored => a.overlap(b),
        }
        .map(Subject::Component),
        (Touch::Resource { type_id: a, name, write: wa }, Touch::Resource { type_id: b, write: wb, .. }) => {
            (a == b && (*wa || *wb)).then_some(Subject::Resource(name))
        }
        _ => None,
    }
}

/// The batches of `systems` (positions in the list) that may run at once, in order: each system goes in the batch
/// after the last one that holds a system it clashes with (or the first), so every clashing pair keeps its order.
pub fn batches(systems: &[SystemAccess], world: &World) -> Vec<Vec<usize>> {
    let mut batch_of: Vec<usize> = Vec::with_capacity(systems.len());
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (k, system) in systems.iter().enumerate() {
        let after =
            (0..k).filter(|&j| systems[j].clash(system, world).is_some()).map(|j| batch_of[j] + 1).max().unwrap_or(0);
        // (An exclusive system clashes with every system that touches anything: it lands after all of them, and
        // they after it.)
        let at = after;
        if at == out.len() {
            out.push(Vec::new());
        }
        out[at].push(k);
        batch_of.push(at);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecs::{With, Without};

    struct Pos;
    struct Vel;
    struct Health;
    struct Frozen;
    struct Grid;
    struct Stats;

    fn system(
        world: &mut World,
        name: &'static str,
        build: impl FnOnce(&mut SystemAccess, &mut World),
    ) -> SystemAccess {
        let mut access = SystemAccess::new(name);
        build(&mut access, world);
        access
    }

    #[test]
    fn a_system_whose_own_parameters_clash_is_refused_with_both_names() {
        let mut world = World::new();
        let mut s = SystemAccess::new("steer");
        s.add_resource::<Grid>(true).unwrap();
        let error = s.add_resource::<Grid>(true).unwrap_err();
        let expected = AccessError::Conflict {
            system: "steer",
            first: "ResMut<Grid>".into(),
            second: "ResMut<Grid>".into(),
            what: "Grid".into(),
        };
        assert_eq!(error, expected);
        assert!(s.add_resource::<Grid>(false).is_err(), "Res beside ResMut of one type");

        let mut s = SystemAccess::new("steer");
        s.add_query::<(&mut Pos, &Vel), ()>(&mut world).unwrap();
        let error = s.add_query::<&Pos, ()>(&mut world).unwrap_err();
        assert_eq!(
            error.to_string(),
            "system `steer`: parameters `Query<(&mut Pos, &Vel)>` and `Query<&Pos>` both touch `Pos` and one of them \
             writes it (make the queries disjoint with With/Without, or merge them into one)"
        );
        assert!(s.add_query::<&mut Pos, ()>(&mut world).is_err(), "two writers");
        assert!(s.add_query::<Option<&mut Vel>, ()>(&mut world).is_err(), "an optional writer beside a reader");
        // A query refused on its own names its parameter.
        let mut s = SystemAccess::new("alias");
        let error = s.add_query::<(&mut Pos, &Pos), ()>(&mut world).unwrap_err();
        assert!(matches!(error, AccessError::Refused { system: "alias", .. }), "{error:?}");
    }

    #[test]
    fn disjoint_and_read_only_parameters_are_allowed() {
        let mut world = World::new();
        let mut s = SystemAccess::new("ok");
        s.add_query::<&mut Pos, With<Frozen>>(&mut world).unwrap();
        s.add_query::<&mut Pos, Without<Frozen>>(&mut world).unwrap();
        s.add_query::<&Vel, ()>(&mut world).unwrap();
        s.add_query::<(&Vel, &Health), ()>(&mut world).unwrap();
        s.add_resource::<Grid>(false).unwrap();
        s.add_resource::<Grid>(false).unwrap();
        s.add_resource::<Stats>(true).unwrap();
        s.add(Param { name: "Commands".into(), touch: Touch::Commands }).unwrap();
        s.add(Param { name: "Commands".into(), touch: Touch::Commands }).unwrap();
        assert_eq!(s.params.len(), 9);
        // `With<Frozen>` against a query that does not exclude it: they may meet.
        assert!(s.add_query::<&Pos, ()>(&mut world).is_err());
    }

    #[test]
    fn clashes_between_systems_name_the_parameters_and_the_type() {
        let mut world = World::new();
        let movement = system(&mut world, "movement", |s, w| s.add_query::<(&mut Pos, &Vel), ()>(w).unwrap());
        let draw = system(&mut world, "draw", |s, w| s.add_query::<&Pos, ()>(w).unwrap());
        let clash = movement.clash(&draw, &world).unwrap();
        assert_eq!(
            clash,
            Clash { first: "Query<(&mut Pos, &Vel)>".into(), second: "Query<&Pos>".into(), what: "Pos".into() }
        );
        assert!(draw.clash(&draw.clone(), &world).is_none(), "readers share");
        // Filters that keep two queries apart admit them in one system, not side by side in two: each would need
        // the position pool at once.
        let thaw = system(&mut world, "thaw", |s, w| s.add_query::<&mut Pos, With<Frozen>>(w).unwrap());
        let drift = system(&mut world, "drift", |s, w| s.add_query::<&mut Pos, Without<Frozen>>(w).unwrap());
        assert_eq!(thaw.clash(&drift, &world).map(|c| c.what), Some("Pos".into()));
        assert_eq!(batches(&[thaw, drift], &world), vec![vec![0], vec![1]]);
        let exclusive = SystemAccess::exclusive("save");
        assert_eq!(exclusive.clash(&draw, &world).unwrap().what, "World");
    }

    #[test]
    fn batches_keep_clashing_pairs_in_order_and_run_the_rest_together() {
        let mut world = World::new();
        let systems = vec![
            // 0: spawning writes the stats and records spawns.
            system(&mut world, "spawn", |s, _| {
                s.add_resource::<Stats>(true).unwrap();
                s.add(Param { name: "Commands".into(), touch: Touch::Commands }).unwrap();
            }),
            // 1: steering writes velocities, reads positions.
            system(&mut world, "steer", |s, w| s.add_query::<(&mut Vel, &Pos), ()>(w).unwrap()),
            // 2: movement writes positions, reads velocities: after steering.
            system(&mut world, "move", |s, w| s.add_query::<(&mut Pos, &Vel), ()>(w).unwrap()),
            // 3: the grid reads positions, writes itself: after movement.
            system(&mut world, "grid", |s, w| {
                s.add_query::<&Pos, ()>(w).unwrap();
                s.add_resource::<Grid>(true).unwrap();
            }),
            // 4: damage writes health, reads the grid: after the grid.
            system(&mut world, "damage", |s, w| {
                s.add_query::<&mut Health, ()>(w).unwrap();
                s.add_resource::<Grid>(false).unwrap();
            }),
            // 5: thawing writes the health of frozen entities; damage writes every entity's: after damage.
            system(&mut world, "thaw", |s, w| s.add_query::<&mut Health, With<Frozen>>(w).unwrap()),
            // 6: counting reads the stats: after spawning, beside everything else.
            system(&mut world, "count", |s, _| s.add_resource::<Stats>(false).unwrap()),
            // 7: an exclusive system: alone, after everything before it.
            SystemAccess::exclusive("save"),
            // 8: reads positions: after the exclusive one.
            system(&mut world, "draw", |s, w| s.add_query::<&Pos, ()>(w).unwrap()),
        ];
        assert_eq!(
            batches(&systems, &world),
            vec![vec![0, 1], vec![2, 6], vec![3], vec![4], vec![5], vec![7], vec![8]]
        );
        // Without the exclusive system, drawing joins the grid's batch (both only read positions).
        let without: Vec<SystemAccess> = systems.iter().filter(|s| s.system != "save").cloned().collect();
        assert_eq!(batches(&without, &world), vec![vec![0, 1], vec![2, 6], vec![3, 7], vec![4], vec![5]]);
        assert!(batches(&[], &world).is_empty());
    }

    #[test]
    fn short_names_drop_module_paths() {
        assert_eq!(short_name("(&mut a::b::Pos, core::option::Option<&c::Vel>)"), "(&mut Pos, Option<&Vel>)");
        assert_eq!(short_name("swarm::ecs::query::filter::With<x::Frozen>"), "With<Frozen>");
    }
}
