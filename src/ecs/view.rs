//! Views: one component type's storage, found once, for many per-entity operations.
//!
//! [`World::get_mut`](crate::ecs::World::get_mut) and friends find the type's pool on every call (a hash lookup
//! and a downcast). A system that touches one component of many chosen entities (apply damage to the hit, tag
//! the selected) takes a [`ViewMut`] instead, as EnTT code holds a `storage<T>()` or specs code a `WriteStorage`:
//! the lookup happens once and each call is the pool's own work plus the liveness check of the handle.
//!
//! (The example is on [`ViewMut`].)

use super::entity::{ComponentError, Entities, Entity};
use super::storage::values::{not_alive, ComponentValues};
use crate::ecs::Component;

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
    pub(crate) entities: &'w Entities,
    pub(crate) store: ComponentValues<'w, T>,
}

impl<T: Component> ViewMut<'_, T> {
    /// `entity`'s value; `None` if the handle is stale or the component absent.
    #[inline]
    pub fn get(&self, entity: Entity) -> Option<&T> {
        if !self.entities.is_alive(entity) {
            return None;
        }
        self.store.get(entity.index())
    }

    /// `entity`'s value, mutably; `None` if the handle is stale or the component absent.
    #[inline]
    pub fn get_mut(&mut self, entity: Entity) -> Option<&mut T> {
        if !self.entities.is_alive(entity) {
            return None;
        }
        self.store.get_mut(entity.index())
    }

    /// Whether `entity` is alive and has the component.
    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.get(entity).is_some()
    }

    /// Sets `entity`'s value; returns the previous one. A handle reserved by the command buffer is refused with
    /// [`ComponentError::Reserved`] (a view cannot apply the buffer; [`World::insert`](super::World::insert) does).
    // `always`: on a sparse set this is a few loads and stores, and a call would cost about as much.
    #[inline(always)]
    pub fn insert(&mut self, entity: Entity, value: T) -> Result<Option<T>, ComponentError> {
        if !self.entities.is_alive(entity) {
            return Err(not_alive(self.entities, entity));
        }
        Ok(self.store.insert(entity, value))
    }

    /// Removes `entity`'s value and returns it (a reserved handle is refused, as by [`ViewMut::insert`]).
    // `always`: see `insert`.
    #[inline(always)]
    pub fn remove(&mut self, entity: Entity) -> Result<T, ComponentError> {
        self.store.remove_entity(self.entities, entity)
    }
}
