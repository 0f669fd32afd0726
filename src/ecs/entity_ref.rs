//! A view of one entity: [`EntityRef`] reads it through `&World`, [`EntityWorldMut`] changes it through
//! `&mut World` (bevy's names; hecs has `EntityRef`). Each is the world and a handle that was alive when the view
//! was made, so its calls need not check the handle again.

use super::bundle::Bundle;
use super::component::ComponentId;
use super::component::ComponentInfo;
use super::entity::NoSuchEntity;
use super::entity::{ComponentError, Entity};
use super::world::World;
use crate::ecs::Component;

/// One live entity, read through a shared world: `world.entity(e)?`. The same as calling [`World::get`] and
/// [`World::has`] with `e`, without repeating the handle (or its liveness check, done once here).
///
/// ```
/// use swarm::ecs::World;
/// #[derive(Debug, PartialEq)] struct Pos(f32);
/// struct Red;
/// let mut world = World::new();
/// let e = world.spawn((Pos(1.0), Red)).unwrap();
/// let view = world.entity(e).unwrap();
/// assert_eq!((view.id(), view.get::<Pos>()), (e, Some(&Pos(1.0))));
/// assert!(view.has::<Red>() && !view.has::<u8>());
/// let mut names: Vec<_> = view.component_types().map(|info| info.name).collect();
/// names.sort();
/// assert!(names[0].ends_with("Pos") && names[1].ends_with("Red"));
/// ```
#[derive(Clone, Copy)]
pub struct EntityRef<'w> {
    world: &'w World,
    entity: Entity,
}

impl<'w> EntityRef<'w> {
    /// A view of `entity`, which the caller has checked is alive (or, from [`EntityWorldMut::as_ref`], was: a
    /// view of a dead entity answers `None` and `false`, as the world's lookups do).
    pub(crate) fn new(world: &'w World, entity: Entity) -> Self {
        Self { world, entity }
    }

    /// The entity's handle.
    pub fn id(&self) -> Entity {
        self.entity
    }

    /// Whether the entity has `T`.
    pub fn has<T: Component>(&self) -> bool {
        self.world.has::<T>(self.entity)
    }

    /// Component `T`, if the entity has it.
    pub fn get<T: Component>(&self) -> Option<&'w T> {
        self.world.get::<T>(self.entity)
    }

    /// The types of the components the entity has (name, `TypeId`, size), in registry order: one probe per
    /// registered type on the per-component backends, the entity's table's set on the archetype backend.
    pub fn component_types(&self) -> impl Iterator<Item = &'w ComponentInfo> + 'w {
        self.world.component_types_of(self.entity)
    }
}

impl std::fmt::Debug for EntityRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut list = f.debug_list();
        list.entry(&self.entity);
        list.entries(self.component_types().map(|info| info.name));
        list.finish()
    }
}

/// One live entity, changed through a mutable world: `world.entity_mut(e)?` (bevy's `EntityWorldMut`). Each call
/// is the world's own call with the handle filled in. Nothing else can reach the world while the view lives, but a
/// lifecycle handler answering one of its changes may despawn the entity ([`EntityWorldMut::is_alive`]): then the
/// chained calls after it change nothing, as commands on a dead target do, so they return no `Result` here.
///
/// ```
/// use swarm::ecs::World;
/// #[derive(Debug, PartialEq)] struct Pos(f32);
/// #[derive(Debug, PartialEq)] struct Vel(f32);
/// let mut world = World::new();
/// let e = world.spawn((Pos(1.0),)).unwrap();
/// let mut view = world.entity_mut(e).unwrap();
/// view.get_mut::<Pos>().unwrap().0 += 1.0;
/// view.insert(Vel(3.0)).insert_bundle((1u8, 'c'));
/// assert_eq!(view.remove::<Pos>(), Ok(Pos(2.0)));
/// assert!(view.remove::<Pos>().is_err()); // the world's error: no `Pos` now
/// view.despawn();
/// assert!(!world.is_alive(e));
/// ```
pub struct EntityWorldMut<'w> {
    world: &'w mut World,
    entity: Entity,
}

impl<'w> EntityWorldMut<'w> {
    /// A view of `entity`, which the caller has checked (and settled) is alive.
    pub(crate) fn new(world: &'w mut World, entity: Entity) -> Self {
        debug_assert!(world.is_alive(entity), "a view of the dead entity {entity:?}");
        Self { world, entity }
    }

    /// The entity's handle.
    pub fn id(&self) -> Entity {
        self.entity
    }

    /// A read-only view of the entity (one that answers nothing if a handler despawned it).
    pub fn as_ref(&self) -> EntityRef<'_> {
        EntityRef::new(self.world, self.entity)
    }

    /// Whether the entity has `T`.
    pub fn has<T: Component>(&self) -> bool {
        self.world.has::<T>(self.entity)
    }

    /// Component `T`, if the entity has it.
    pub fn get<T: Component>(&self) -> Option<&T> {
        self.world.get::<T>(self.entity)
    }

    /// Component `T`, mutably, if the entity has it.
    pub fn get_mut<T: Component>(&mut self) -> Option<&mut T> {
        self.world.get_mut::<T>(self.entity)
    }

    /// Whether the entity is still alive: a lifecycle handler answering a change made through this view may have
    /// despawned it (its commands apply before the change returns).
    pub fn is_alive(&self) -> bool {
        self.world.is_alive(self.entity)
    }

    /// Sets component `T` ([`World::insert`]); the previous value is dropped. Chains. If a handler despawned the
    /// entity meanwhile ([`EntityWorldMut::is_alive`]), the value is dropped, as a command on a dead target is.
    pub fn insert<T: Component>(&mut self, value: T) -> &mut Self {
        let _ = self.world.insert(self.entity, value);
        self
    }

    /// Sets component `T` and returns the previous value, if any (`None`, the value dropped, if a handler
    /// despawned the entity meanwhile).
    pub fn replace<T: Component>(&mut self, value: T) -> Option<T> {
        self.world.insert(self.entity, value).ok().flatten()
    }

    /// Sets every component of `bundle` ([`World::insert_bundle`]). Chains.
    ///
    /// # Panics
    /// If the tuple names a component type twice (before anything is inserted).
    pub fn insert_bundle<B: Bundle>(&mut self, bundle: B) -> &mut Self {
        let _ = self.world.insert_bundle(self.entity, bundle);
        self
    }

    /// Removes component `T` and returns it ([`World::remove`]); [`ComponentError::MissingComponent`] if the
    /// entity lacks it.
    pub fn remove<T: Component>(&mut self) -> Result<T, ComponentError> {
        self.world.remove::<T>(self.entity)
    }

    /// Removes every component of bundle type `B`, all or nothing ([`World::remove_bundle`]).
    ///
    /// # Panics
    /// If the tuple names a component type twice (before anything is removed).
    pub fn remove_bundle<B: Bundle>(&mut self) -> Result<B, ComponentError> {
        self.world.remove_bundle::<B>(self.entity)
    }

    /// Despawns the entity ([`World::despawn`]), ending the view (nothing to do if a handler despawned it).
    pub fn despawn(self) {
        let _ = self.world.despawn(self.entity);
    }
}

impl std::fmt::Debug for EntityWorldMut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_ref().fmt(f)
    }
}

/// Views of one entity.
impl World {
    /// A read-only view of the live `entity`: [`EntityRef::get`], [`EntityRef::has`], its component types.
    /// A reserved handle is not alive yet to a shared world ([`World::reserve_entity`]): `NoSuchEntity`.
    ///
    /// ```
    /// use swarm::ecs::{NoSuchEntity, World};
    /// let mut world = World::new();
    /// let e = world.spawn((1u8,)).unwrap();
    /// assert_eq!(world.entity(e).unwrap().get::<u8>(), Some(&1));
    /// world.despawn(e).unwrap();
    /// assert_eq!(world.entity(e).err(), Some(NoSuchEntity(e)));
    /// ```
    pub fn entity(&self, entity: Entity) -> Result<EntityRef<'_>, NoSuchEntity> {
        if !self.is_alive(entity) {
            return Err(NoSuchEntity(entity));
        }
        Ok(EntityRef::new(self, entity))
    }

    /// A view of the live `entity` that changes it: get_mut, insert, remove, despawn (see [`EntityWorldMut`]).
    /// A reserved handle applies the command buffer first ([`World::reserve_entity`]).
    ///
    /// ```
    /// use swarm::ecs::World;
    /// let mut world = World::new();
    /// let e = world.reserve_entity().unwrap();
    /// world.entity_mut(e).unwrap().insert(2u8).insert('x'); // `e` comes alive first
    /// assert_eq!(world.get::<char>(e), Some(&'x'));
    /// ```
    pub fn entity_mut(&mut self, entity: Entity) -> Result<EntityWorldMut<'_>, NoSuchEntity> {
        if !self.settle(entity) {
            return Err(NoSuchEntity(entity));
        }
        Ok(EntityWorldMut::new(self, entity))
    }

    /// The types of the components the live `entity` has, in registry order (see [`EntityRef::component_types`]).
    pub(crate) fn component_types_of(&self, entity: Entity) -> impl Iterator<Item = &ComponentInfo> + '_ {
        let alive = self.is_alive(entity);
        let infos = self.components.infos().iter().enumerate();
        infos.filter(move |(id, _)| alive && self.storage.contains(*id as ComponentId, entity.index())).map(|(_, i)| i)
    }
}
