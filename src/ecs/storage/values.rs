//! Where one component type's values live, and the per-entity operations on them, once for every layout: the
//! world's `insert` / `remove` / `get_mut` and a [`ViewMut`](crate::ecs::ViewMut) go through here.

use super::archetype::Archetypes;
use super::sparse_set::SparseSet;
use super::{with_pool, AnyPool, Pool, Registry};
use crate::ecs::component::ComponentId;
use crate::ecs::entity::{ComponentError, Entities, Entity};
use crate::ecs::Component;

/// Where one component type's values live in the world's [`Storage`](super::Storage): its pool, or its
/// column in every archetype table. (Not to be confused with `Storage`, every type's values, or
/// [`LayoutFns`](super::LayoutFns), a type's functions for moving between layouts.)
pub(crate) enum ComponentValues<'w, T: Component> {
    /// A per-component pool (sparse set, hash map, b-tree, direct array).
    Pool(&'w mut AnyPool<T>),
    /// A column of every archetype table holding component `id`.
    Tables { archetypes: &'w mut Archetypes, components: &'w Registry, id: ComponentId },
}

/// The per-entity operations, once for both layouts: the world's own `insert` / `remove` / `get_mut` and the
/// view's go through here. Each is one match on the store and the pool's variant together, so the sparse set's
/// arm compiles to its own inlined code.
impl<'w, T: Component> ComponentValues<'w, T> {
    #[inline]
    pub(crate) fn get(&self, index: u32) -> Option<&T> {
        match self {
            ComponentValues::Pool(pool) => with_pool!(pool, pool => pool.get(index)),
            ComponentValues::Tables { archetypes, id, .. } => archetypes.get::<T>(index, *id),
        }
    }

    /// The value at `index`, borrowed for as long as the store.
    #[inline]
    pub(crate) fn into_mut(self, index: u32) -> Option<&'w mut T> {
        match self {
            ComponentValues::Pool(pool) => with_pool!(pool, pool => pool.get_mut(index)),
            ComponentValues::Tables { archetypes, id, .. } => archetypes.get_mut::<T>(index, id),
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, index: u32) -> Option<&mut T> {
        match self {
            // The sparse set on its own, before the jump on the other layouts: a loop of writes by handle keeps
            // more of them in flight the fewer instructions each takes (docs/PERFORMANCE.md, rule 9).
            ComponentValues::Pool(AnyPool::SparseSet(set)) => set.get_mut(index),
            ComponentValues::Pool(pool) => with_pool!(pool, pool => pool.get_mut(index)),
            ComponentValues::Tables { archetypes, id, .. } => archetypes.get_mut::<T>(index, *id),
        }
    }

    #[inline]
    pub(crate) fn insert(&mut self, entity: Entity, value: T) -> Option<T> {
        match self {
            ComponentValues::Pool(AnyPool::SparseSet(set)) => set.insert(entity, value),
            ComponentValues::Pool(pool) => with_pool!(pool, pool => pool.insert(entity, value)),
            ComponentValues::Tables { archetypes, components, id } => archetypes.insert(entity, *id, value, components),
        }
    }

    /// Removes and returns `entity`'s value, with the world's errors: a stale handle is
    /// [`ComponentError::NoSuchEntity`] (or [`ComponentError::Reserved`]) and changes nothing.
    ///
    /// A sparse set that holds the value under exactly this handle vouches for it: the world stores values only
    /// under live handles and takes every value of an entity out before its handle is freed, so the allocator is
    /// asked only when the set does not (absent, or held under another handle through
    /// [`World::sparse_set_mut`](crate::ecs::World::sparse_set_mut)).
    #[inline(always)]
    pub(crate) fn remove_entity(&mut self, entities: &Entities, entity: Entity) -> Result<T, ComponentError> {
        match self {
            ComponentValues::Pool(AnyPool::SparseSet(set)) => sparse_remove_entity(set, entities, entity),
            _ => {
                if !entities.is_alive(entity) {
                    return Err(not_alive(entities, entity));
                }
                let missing = missing::<T>(entity);
                self.remove(entity.index()).ok_or(missing)
            }
        }
    }

    #[inline]
    pub(crate) fn remove(&mut self, index: u32) -> Option<T> {
        match self {
            ComponentValues::Pool(pool) => with_pool!(pool, pool => pool.remove(index)),
            ComponentValues::Tables { archetypes, components, id } => archetypes.remove::<T>(index, *id, components),
        }
    }
}

/// The error for a live `entity` without `T`.
fn missing<T>(entity: Entity) -> ComponentError {
    ComponentError::MissingComponent { entity, component: std::any::type_name::<T>() }
}

/// [`ComponentValues::remove_entity`] on a sparse set (see there).
#[inline(always)]
pub(crate) fn sparse_remove_entity<T>(
    set: &mut SparseSet<T>,
    entities: &Entities,
    entity: Entity,
) -> Result<T, ComponentError> {
    match set.remove_exact(entity) {
        Some(value) => Ok(value),
        None => sparse_remove_checked(set, entities, entity),
    }
}

/// [`ComponentValues::remove_entity`] on a sparse set that does not hold the value under this handle: the allocator says
/// whether the handle is live, and a live one's value (if any) goes by index. Out of line, so the exact path
/// stays small enough to inline into a caller's loop.
#[inline(never)]
fn sparse_remove_checked<T>(set: &mut SparseSet<T>, entities: &Entities, entity: Entity) -> Result<T, ComponentError> {
    if !entities.is_alive(entity) {
        return Err(not_alive(entities, entity));
    }
    set.remove(entity.index()).ok_or_else(|| missing::<T>(entity))
}

/// The error for a handle that is not alive: [`ComponentError::Reserved`] if the command buffer holds its spawn.
#[cold]
pub(crate) fn not_alive(entities: &Entities, entity: Entity) -> ComponentError {
    if entities.is_reserved(entity) {
        ComponentError::Reserved(entity)
    } else {
        ComponentError::NoSuchEntity(entity)
    }
}
