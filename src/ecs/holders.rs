//! Values that hold entity handles: a snapshot checks them on load, and applying commands turns the deferred
//! handles they hold into the spawned entities' handles.
//!
//! A spawn recorded in a query loop or a system's `Commands` returns a deferred handle: a name for an entity that
//! does not exist yet. Registered with [`World::register_entity_holder`], a type's values may keep one anywhere
//! (as a component, a resource, or a system's `Local`): when the commands that spawn it apply, the handle in the
//! value becomes the new entity's ([`Entity::DEAD`] if that spawn was refused or its buffer discarded), so no
//! deferred handle outlives its apply. (A snapshot cannot be saved with commands pending; a deferred handle in a
//! loaded file names no spawn of the loading world and becomes [`Entity::DEAD`] too.) `Entity`, `Option<T>` and `Vec<T>` of holders are holders already.
//!
//! The remap runs after an apply that made deferred spawns, over the registered types that may have received
//! one since the last remap: a registered component type is noted when its values are written (an insert or
//! spawn through the pipeline's hook table, `get_mut`, `view_mut`, `sparse_set_mut`, a query's `&mut` term, a
//! system's lent pools), and a type that became a component since the hook table was built is visited anyway.
//! Resources of registered types are always visited (a lookup each). A world with none registered, or an apply
//! without deferred spawns, pays one test.

use super::component::{ComponentId, ComponentSet};
use super::entity::Entity;
use super::pipeline::{HookSet, HookTable};
use super::storage::Registry;
use super::world::World;
use rustc_hash::FxHashMap;
use std::any::{Any, TypeId};

/// A type whose values hold entity handles (see the [module](self)): a snapshot checks them on load
/// ([`SnapshotSchema::component_with_entities`](super::SnapshotSchema::component_with_entities)), and applying
/// commands maps the deferred ones ([`World::register_entity_holder`]).
///
/// ```
/// use swarm::ecs::{Entity, HoldsEntities, World};
/// #[derive(HoldsEntities)] // or implement the two methods by hand
/// struct Leader(#[entities] Entity, f32);
/// let mut world = World::new();
/// world.register_entity_holder::<Leader>();
/// let follower = world.spawn(()).unwrap();
/// let mut leader = None;
/// world.query::<()>().for_each_with_commands(|e, (), commands| {
///     let new = commands.spawn((7u8,)).unwrap(); // deferred: a name until applied
///     commands.insert(e, Leader(new, 1.0));
///     leader = Some(new);
/// });
/// world.apply_commands();
/// let kept = world.get::<Leader>(follower).unwrap().0;
/// assert!(!kept.is_deferred() && kept != leader.unwrap());
/// assert_eq!(world.get::<u8>(kept), Some(&7));
/// ```
pub trait HoldsEntities {
    /// Calls `visit` with every handle the value holds.
    fn visit_entities(&self, visit: &mut dyn FnMut(Entity));
    /// Calls `map` with every handle the value holds, to change it in place.
    fn map_entities(&mut self, map: &mut dyn FnMut(&mut Entity));
}

impl HoldsEntities for Entity {
    fn visit_entities(&self, visit: &mut dyn FnMut(Entity)) {
        visit(*self)
    }
    fn map_entities(&mut self, map: &mut dyn FnMut(&mut Entity)) {
        map(self)
    }
}

impl<T: HoldsEntities> HoldsEntities for Vec<T> {
    fn visit_entities(&self, visit: &mut dyn FnMut(Entity)) {
        self.iter().for_each(|value| value.visit_entities(visit))
    }
    fn map_entities(&mut self, map: &mut dyn FnMut(&mut Entity)) {
        self.iter_mut().for_each(|value| value.map_entities(map))
    }
}

impl<T: HoldsEntities, const N: usize> HoldsEntities for [T; N] {
    fn visit_entities(&self, visit: &mut dyn FnMut(Entity)) {
        self.iter().for_each(|value| value.visit_entities(visit))
    }
    fn map_entities(&mut self, map: &mut dyn FnMut(&mut Entity)) {
        self.iter_mut().for_each(|value| value.map_entities(map))
    }
}

impl<T: HoldsEntities> HoldsEntities for Option<T> {
    fn visit_entities(&self, visit: &mut dyn FnMut(Entity)) {
        if let Some(value) = self {
            value.visit_entities(visit)
        }
    }
    fn map_entities(&mut self, map: &mut dyn FnMut(&mut Entity)) {
        if let Some(value) = self {
            value.map_entities(map)
        }
    }
}

/// Maps the handles of a value of a registered type, given as `Any`.
pub(crate) type MapValue = fn(&mut dyn Any, &mut dyn FnMut(&mut Entity));

/// Maps the handles in every component value and the resource of a registered type.
type MapWorld = fn(&mut World, &mut dyn FnMut(&mut Entity));

/// The component id of a registered type, if it is a component type of the registry.
type IdIn = fn(&Registry) -> Option<ComponentId>;

/// The registered holder types of a world.
#[derive(Default)]
pub(crate) struct Holders {
    /// By type: how to map one value (a system's `Local` looks its type up here).
    values: FxHashMap<TypeId, MapValue>,
    /// How to map each registered type's values in the world, and its component id, in registration order.
    in_world: Vec<(MapWorld, IdIn)>,
    /// The registered types that were component types when the hook table was last built: their writes are
    /// noted in `written`.
    watched: ComponentSet,
    /// Component types written since the kept handles were last settled (other types' ids may be here too).
    pub(crate) written: ComponentSet,
}

impl Holders {
    /// The holders every world has: `Entity`, `Option<Entity>`, `Vec<Entity>`.
    pub(crate) fn new() -> Self {
        let mut holders = Self::default();
        holders.register::<Entity>();
        holders.register::<Option<Entity>>();
        holders.register::<Vec<Entity>>();
        holders
    }

    fn register<T: HoldsEntities + Send + Sync + 'static>(&mut self) -> bool {
        let map: MapValue = |value, map| {
            if let Some(value) = value.downcast_mut::<T>() {
                value.map_entities(map)
            }
        };
        if self.values.insert(TypeId::of::<T>(), map).is_some() {
            return false;
        }
        self.in_world.push((map_in_world::<T>, |components| components.id::<T>()));
        true
    }

    /// Marks the hook that notes writes: the insert of each registered type that is a component type, and every
    /// spawn (its bundle may hold one) when there is such a type.
    pub(crate) fn mark(&mut self, table: &mut HookTable, components: &Registry) {
        self.watched = ComponentSet::EMPTY;
        for (_, id_in) in &self.in_world {
            if let Some(id) = id_in(components) {
                self.watched.insert(id);
                table.mark(super::events::EventKind::Insert(id), HookSet::HOLDS, true);
            }
        }
        if !self.watched.is_empty() {
            table.mark(super::events::EventKind::Spawn, HookSet::HOLDS, true);
        }
    }

    /// Notes that every watched type may have received values (a loaded snapshot's).
    pub(crate) fn wrote_all(&mut self) {
        let watched = self.watched;
        self.wrote_any(&watched);
    }

    /// Notes a spawn of a bundle of the types `set`: the watched ones received values.
    pub(crate) fn wrote_any(&mut self, set: &ComponentSet) {
        if set.intersects(&self.watched) {
            for id in self.watched.iter().filter(|&id| set.contains(id)) {
                self.written.insert(id);
            }
        }
    }

    /// Whether the values of component type `id` may hold a deferred handle not yet settled.
    fn may_hold(&self, id: ComponentId) -> bool {
        self.written.contains(id) || !self.watched.contains(id)
    }

    /// How to map a value of type `T`, if `T` is registered.
    pub(crate) fn of<T: 'static>(&self) -> Option<MapValue> {
        self.values.get(&TypeId::of::<T>()).copied()
    }
}

/// Maps the handles of every component value of type `T` (when `T` is a component type of the world) and of
/// the resource `T` (when present).
fn map_in_world<T: HoldsEntities + Send + Sync + 'static>(world: &mut World, map: &mut dyn FnMut(&mut Entity)) {
    let written = world.component_id::<T>().is_some_and(|id| world.holders.may_hold(id));
    if written && !crate::ecs::hierarchy::is_kept::<T>() {
        world.query::<&mut T>().for_each(|_, value| value.map_entities(map));
    }
    if let Some(value) = world.get_resource_mut::<T>() {
        value.map_entities(map);
    }
}

/// What a deferred handle becomes after the apply that `resolve` describes: the spawned entity's handle, or
/// [`Entity::DEAD`]; any other handle stays.
pub(crate) fn settle_handle(entity: &mut Entity, resolve: &dyn Fn(Entity) -> Option<Entity>) {
    if entity.is_deferred() {
        *entity = resolve(*entity).unwrap_or(Entity::DEAD);
    }
}

impl World {
    /// Registers `T` as a type whose values hold entity handles (see [`HoldsEntities`]): wherever a value of `T`
    /// is kept, as a component, a resource or a system's [`Local`](crate::app::Local), a deferred handle in it
    /// becomes the spawned entity's handle when the commands that spawn it apply ([`Entity::DEAD`] if the spawn
    /// was refused or its buffer discarded). `Entity`, `Option<Entity>` and `Vec<Entity>` are registered in every
    /// world. Registering a type twice does nothing.
    pub fn register_entity_holder<T: HoldsEntities + Send + Sync + 'static>(&mut self) {
        if self.holders.register::<T>() {
            self.mark_hooks();
        }
    }

    /// Notes that component type `id`'s values were handed out for writing.
    #[inline]
    pub(crate) fn wrote(&mut self, id: ComponentId) {
        if self.hooks.insert(id).has(HookSet::HOLDS) {
            self.holders.written.insert(id);
        }
    }

    /// How to map a value of type `T`, if `T` is registered as holding entities.
    pub(crate) fn holder_of<T: 'static>(&self) -> Option<MapValue> {
        self.holders.of::<T>()
    }

    /// Turns every deferred handle held by a registered type's component values and resources into what
    /// `resolve` says (or [`Entity::DEAD`]).
    pub(crate) fn settle_held_handles(&mut self, resolve: &dyn Fn(Entity) -> Option<Entity>) {
        let maps = std::mem::take(&mut self.holders.in_world);
        let mut new = false;
        for (map, id_in) in &maps {
            map(self, &mut |entity| settle_handle(entity, resolve));
            new |= id_in(&self.components).is_some_and(|id| !self.holders.watched.contains(id));
        }
        self.holders.in_world = maps;
        // The pass visited every type that may have received a handle; the next one starts from here.
        self.holders.written = ComponentSet::EMPTY;
        if new {
            // A registered type became a component type: watch its writes from now on.
            self.mark_hooks();
        }
    }
}
