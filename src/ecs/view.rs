//! Views: one component type's storage, found once, for many per-entity operations.
//!
//! [`World::get_mut`](crate::ecs::World::get_mut) and friends find the type's pool on every call (a hash lookup
//! and a downcast). A system that touches one component of many chosen entities (apply damage to the hit, tag
//! the selected) takes a [`ViewMut`] instead, as EnTT code holds a `storage<T>()` or specs code a `WriteStorage`:
//! the lookup happens once and each call is the pool's own work plus the liveness check of the handle.
//!
//! (The example is on [`ViewMut`].)

use super::component::ComponentId;
use super::entity::{ComponentError, Entities, Entity};
use super::storage::archetype::Archetypes;
use super::storage::sparse_set::SparseSet;
use super::storage::{with_pool, AnyPool, Pool, Registry};

/// Where one component type's values live in the world's [`Storage`](crate::ecs::storage::Storage): its pool, or its
/// column in every archetype table. (Not to be confused with `Storage`, every type's values, or
/// [`LayoutFns`](crate::ecs::storage::LayoutFns), a type's functions for moving between layouts.)
pub(crate) enum ComponentValues<'w, T: 'static> {
    /// A per-component pool (sparse set, hash map, b-tree, direct array).
    Pool(&'w mut AnyPool<T>),
    /// A column of every archetype table holding component `id`.
    Tables { archetypes: &'w mut Archetypes, components: &'w Registry, id: ComponentId },
}

/// The per-entity operations, once for both layouts: the world's own `insert` / `remove` / `get_mut` and the
/// view's go through here. Each is one match on the store and the pool's variant together, so the sparse set's
/// arm compiles to its own inlined code.
impl<'w, T: 'static> ComponentValues<'w, T> {
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
            ComponentValues::Pool(pool) => with_pool!(pool, pool => pool.get_mut(index)),
            ComponentValues::Tables { archetypes, id, .. } => archetypes.get_mut::<T>(index, *id),
        }
    }

    #[inline]
    pub(crate) fn insert(&mut self, entity: Entity, value: T) -> Option<T> {
        match self {
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
            ComponentValues::Pool(AnyPool::SparseSet(set)) => match set.remove_exact(entity) {
                Some(value) => Ok(value),
                None => sparse_remove_checked(set, entities, entity),
            },
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
pub struct ViewMut<'w, T: 'static> {
    pub(crate) entities: &'w Entities,
    pub(crate) store: ComponentValues<'w, T>,
}

impl<T: 'static> ViewMut<'_, T> {
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

/// The error for a handle that is not alive: [`ComponentError::Reserved`] if the command buffer holds its spawn.
#[cold]
pub(crate) fn not_alive(entities: &Entities, entity: Entity) -> ComponentError {
    if entities.is_reserved(entity) {
        ComponentError::Reserved(entity)
    } else {
        ComponentError::NoSuchEntity(entity)
    }
}
