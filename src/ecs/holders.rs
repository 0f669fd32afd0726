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
//! The remap runs after an apply that made deferred spawns, over the registered types only: a world with none
//! registered, or an apply without deferred spawns, pays one test.

use super::entity::Entity;
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

/// The registered holder types of a world.
#[derive(Default)]
pub(crate) struct Holders {
    /// By type: how to map one value (a system's `Local` looks its type up here).
    values: FxHashMap<TypeId, MapValue>,
    /// How to map each registered type's values in the world, in registration order.
    in_world: Vec<MapWorld>,
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
        self.in_world.push(map_in_world::<T>);
        true
    }

    /// How to map a value of type `T`, if `T` is registered.
    pub(crate) fn of<T: 'static>(&self) -> Option<MapValue> {
        self.values.get(&TypeId::of::<T>()).copied()
    }
}

/// Maps the handles of every component value of type `T` (when `T` is a component type of the world) and of
/// the resource `T` (when present).
fn map_in_world<T: HoldsEntities + Send + Sync + 'static>(world: &mut World, map: &mut dyn FnMut(&mut Entity)) {
    if world.component_id::<T>().is_some() && !crate::ecs::hierarchy::is_kept::<T>() {
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
        self.holders.register::<T>();
    }

    /// How to map a value of type `T`, if `T` is registered as holding entities.
    pub(crate) fn holder_of<T: 'static>(&self) -> Option<MapValue> {
        self.holders.of::<T>()
    }

    /// Turns every deferred handle held by a registered type's component values and resources into what
    /// `resolve` says (or [`Entity::DEAD`]).
    pub(crate) fn settle_held_handles(&mut self, resolve: &dyn Fn(Entity) -> Option<Entity>) {
        let maps = std::mem::take(&mut self.holders.in_world);
        for map in &maps {
            map(self, &mut |entity| settle_handle(entity, resolve));
        }
        self.holders.in_world = maps;
    }
}
