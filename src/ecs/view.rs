//! Views: one component type's storage, found once, for many per-entity operations.
//!
//! [`World::get_mut`](crate::ecs::World::get_mut) and friends find the type's pool on every call (a hash lookup
//! and a downcast). A system that touches one component of many chosen entities (apply damage to the hit, tag
//! the selected) takes a [`ViewMut`] instead, as EnTT code holds a `storage<T>()` or specs code a `WriteStorage`:
//! the lookup happens once and each call is the pool's own work plus the liveness check of the handle.
//!
//! (The example is on [`ViewMut`].)

use super::entity::{AliveTest, ComponentError, Entities, Entity};
use super::storage::sparse_set::SparseSet;
use super::storage::values::{not_alive, sparse_remove_entity, ComponentValues};
use super::storage::AnyPool;
use super::world::World;
use crate::ecs::Component;

impl World {
    /// [`ViewMut::for_each_of`] on a type the hooks watch. A write through `&mut` runs no handler, so the list is
    /// visited as a direct view visits it (its arrays held for the whole list), each value handed out noted for
    /// change detection as [`World::get_mut`] notes it: stamped, or in the exact mode left waiting.
    fn write_each_of<T: Component>(&mut self, list: &[Entity], mut f: impl FnMut(Entity, &mut T)) {
        let Some(id) = self.components.id::<T>() else { return };
        self.wrote(id);
        let tick = self.changes.tick();
        let World { entities, storage, components, changes, .. } = self;
        let Some(mut store) = storage.values::<T>(id, components) else { return };
        let mut track = changes.track_mut(id);
        let visit = |entity: Entity, value: &mut T| {
            if let Some(track) = track.as_deref_mut().filter(|track| track.has(entity.index())) {
                track.write(entity.index(), tick);
            }
            f(entity, value)
        };
        each_of(entities, &mut store, list, visit)
    }
}

/// [`ViewMut::for_each_of`] on the storage: the allocator's liveness test and, on a sparse set, its arrays bound
/// once for the whole list; elsewhere the view's `get_mut` per handle.
fn each_of<T: Component>(
    allocator: &Entities,
    store: &mut ComponentValues<'_, T>,
    list: &[Entity],
    mut f: impl FnMut(Entity, &mut T),
) {
    match store {
        ComponentValues::Pool(AnyPool::SparseSet(set)) => set.each_of_mut(list, allocator.alive_test(), f),
        store => {
            for &entity in list.iter().filter(|&&entity| allocator.is_alive(entity)) {
                if let Some(value) = store.get_mut(entity.index()) {
                    f(entity, value);
                }
            }
        }
    }
}

/// Mutable access to component `T` of any live entity, with the type's storage found once. Get one from
/// [`World::view_mut`](crate::ecs::World::view_mut). Every operation on a stale or dead handle answers "no such
/// entity" and touches nothing, as the world's own methods do.
///
/// ```
/// use swarm::ecs::World;
/// struct Health(i32);
/// let mut world = World::new();
/// let a = world.spawn((Health(10),)).unwrap();
/// let b = world.spawn((Health(10),)).unwrap();
/// let mut health = world.view_mut::<Health>();
/// for (e, damage) in [(a, 3), (b, 4), (a, 1)] {
///     if let Some(h) = health.get_mut(e) {
///         h.0 -= damage;
///     }
/// }
/// assert_eq!(world.get::<Health>(a).map(|h| h.0), Some(6));
/// ```
pub struct ViewMut<'w, T: Component> {
    inner: Inner<'w, T>,
}

enum Inner<'w, T: Component> {
    /// A sparse set (the default layout), with the allocator's liveness test bound: every operation matches this
    /// arm first, so a loop of them on the default layout pays one test of the variant, not one per level (view,
    /// store, pool).
    Sparse { entities: &'w Entities, alive: AliveTest<'w>, set: &'w mut SparseSet<T> },
    /// The type's storage on the other layouts, found once.
    Direct { entities: &'w Entities, store: ComponentValues<'w, T> },
    /// A type that hooks watch (lifecycle handlers): each insert and removal goes through the world's pipeline, so
    /// its hooks run, and each call finds the storage again.
    Hooked(&'w mut World),
}

impl<'w, T: Component> ViewMut<'w, T> {
    pub(crate) fn direct(entities: &'w Entities, store: ComponentValues<'w, T>) -> Self {
        let inner = match store {
            ComponentValues::Pool(AnyPool::SparseSet(set)) => {
                Inner::Sparse { entities, alive: entities.alive_test(), set }
            }
            store => Inner::Direct { entities, store },
        };
        Self { inner }
    }

    pub(crate) fn hooked(world: &'w mut World) -> Self {
        Self { inner: Inner::Hooked(world) }
    }
}

impl<T: Component> ViewMut<'_, T> {
    /// `entity`'s value; `None` if the handle is stale or the component absent.
    #[inline]
    pub fn get(&self, entity: Entity) -> Option<&T> {
        match &self.inner {
            Inner::Sparse { alive, set, .. } => match alive.test(entity) {
                true => set.get(entity.index()),
                false => None,
            },
            Inner::Direct { entities, store } => match entities.is_alive(entity) {
                true => store.get(entity.index()),
                false => None,
            },
            Inner::Hooked(world) => world.get::<T>(entity),
        }
    }

    /// `entity`'s value, mutably; `None` if the handle is stale or the component absent.
    #[inline]
    pub fn get_mut(&mut self, entity: Entity) -> Option<&mut T> {
        match &mut self.inner {
            Inner::Sparse { alive, set, .. } => match alive.test(entity) {
                true => set.get_mut(entity.index()),
                false => None,
            },
            Inner::Direct { entities, store } => match entities.is_alive(entity) {
                true => store.get_mut(entity.index()),
                false => None,
            },
            Inner::Hooked(world) => match world.entities().is_alive(entity) {
                true => world.get_mut::<T>(entity),
                false => None,
            },
        }
    }

    /// Calls `f` with each entity of `entities` that is alive and has the component, and its value, in the order
    /// given (an entity named twice is visited twice); the others are skipped. The same as a loop of
    /// [`ViewMut::get_mut`], with the storage's arrays held for the whole list instead of found again per handle
    /// (as bevy's `Query::iter_many_mut`): on a sparse set each handle costs its liveness check and two lookups.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Health(i32);
    /// let mut world = World::new();
    /// let a = world.spawn((Health(10),)).unwrap();
    /// let b = world.spawn((Health(10),)).unwrap();
    /// world.despawn(b).unwrap();
    /// let mut visited = Vec::new();
    /// world.view_mut::<Health>().for_each_of(&[a, b, a], |e, h| {
    ///     h.0 -= 1;
    ///     visited.push(e);
    /// });
    /// assert_eq!(visited, [a, a], "b is stale");
    /// assert_eq!(world.get::<Health>(a).map(|h| h.0), Some(8));
    /// ```
    pub fn for_each_of(&mut self, entities: &[Entity], f: impl FnMut(Entity, &mut T)) {
        match &mut self.inner {
            Inner::Sparse { alive, set, .. } => set.each_of_mut(entities, *alive, f),
            Inner::Direct { entities: allocator, store } => each_of(allocator, store, entities, f),
            Inner::Hooked(world) => world.write_each_of(entities, f),
        }
    }

    /// Whether `entity` is alive and has the component.
    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.get(entity).is_some()
    }

    /// Sets `entity`'s value; returns the previous one. A handle reserved by the command buffer is refused with
    /// [`ComponentError::Reserved`] (a view cannot apply the buffer; [`World::insert`](super::World::insert) does).
    /// On a type that lifecycle handlers watch, the handlers run as for [`World::insert`](super::World::insert).
    // `always`: on a sparse set this is a few loads and stores, and a call would cost about as much.
    #[inline(always)]
    pub fn insert(&mut self, entity: Entity, value: T) -> Result<Option<T>, ComponentError> {
        match &mut self.inner {
            Inner::Sparse { entities, alive, set } => {
                if !alive.test(entity) {
                    return Err(not_alive(entities, entity));
                }
                Ok(set.insert(entity, value))
            }
            Inner::Direct { entities, store } => {
                if !entities.is_alive(entity) {
                    return Err(not_alive(entities, entity));
                }
                Ok(store.insert(entity, value))
            }
            Inner::Hooked(world) => {
                if !world.entities().is_alive(entity) {
                    return Err(not_alive(world.entities(), entity));
                }
                world.insert(entity, value).map_err(|error| ComponentError::NoSuchEntity(error.0))
            }
        }
    }

    /// Removes `entity`'s value and returns it (a reserved handle is refused, as by [`ViewMut::insert`]; handlers
    /// run as for [`World::remove`](super::World::remove)).
    // `always`: see `insert`.
    #[inline(always)]
    pub fn remove(&mut self, entity: Entity) -> Result<T, ComponentError> {
        match &mut self.inner {
            Inner::Sparse { entities, set, .. } => sparse_remove_entity(set, entities, entity),
            Inner::Direct { entities, store } => store.remove_entity(entities, entity),
            Inner::Hooked(world) => {
                if !world.entities().is_alive(entity) {
                    return Err(not_alive(world.entities(), entity));
                }
                world.remove::<T>(entity)
            }
        }
    }
}
