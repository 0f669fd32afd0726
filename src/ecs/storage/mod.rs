//! Storage backends: where a world keeps its component values.
//!
//! A world keeps every component type in one backend at a time and can move all of them to another with
//! [`World::set_backend`](crate::ecs::World::set_backend). Four backends keep one *pool* per component type
//! (they implement [`Pool`]); the archetype backend keeps one *table* per set of component types.
//!
//! # Choosing a backend
//!
//! | backend | insert | get | remove | iterate one type | iterate several | memory per value | iteration order |
//! |---|---|---|---|---|---|---|---|
//! | [`SparseSet`](Backend::SparseSet) | O(1), push | O(1), 3 dependent loads (page, entry, value) | O(1), swap-and-pop | packed array | smallest pool drives, others probed; lock-step when packed alike (after `sort_as`, or the same spawns and despawns) | `size_of T` + 8 (entity) + 4 per index in each 4096-index page touched | insertion order, changed by removals and sorting |
//! | [`HashMap`](Backend::HashMap) | O(1) amortized, hash | O(1), hash + probe | O(1), hash | bucket scan | smallest drives, others hashed | (4 + `size_of T`) / load factor + 1 control byte | hash order (arbitrary) |
//! | [`BTree`](Backend::BTree) | O(log n) | O(log n) | O(log n) | node walk | smallest drives, others searched | ~(4 + `size_of T`) / node fill + node headers | entity index, ascending |
//! | [`DirectArray`](Backend::DirectArray) | O(1), may grow to the index | O(1), 1 load | O(1) | scan every index, holes too | scan, probe by index | `size_of Option<T>` per index up to the highest | entity index, ascending |
//! | [`Archetype`](Backend::Archetype) | O(components): moves the row to another table | O(1) via the entity record | O(components): moves the row | packed columns, table by table | columns walked in lock-step, no probing | `size_of T` + 8 per row, + 8 per index for records | table by table, rows in insertion order within a table |
//!
//! Measured numbers are in `BENCHMARKS.md` and the README's "Choosing a backend" table.
//!
//! Sorting applies to the sparse-set backend only: `BTree` and `DirectArray` always iterate in index
//! order, `HashMap` in hash order, and the archetype backend in table order (sorting would have to happen within
//! a table, which this crate does not do).

/// The `Pool` methods of the two map-backed layouts (a `map` field from `u32` index to `T`), which read the same
/// because `HashMap` and `BTreeMap` share their verbs.
macro_rules! map_pool_methods {
    () => {
        #[inline]
        fn insert(&mut self, entity: crate::ecs::entity::Entity, value: T) -> Option<T> {
            self.map.insert(entity.index(), value)
        }
        #[inline]
        fn get(&self, index: u32) -> Option<&T> {
            self.map.get(&index)
        }
        #[inline]
        fn get_mut(&mut self, index: u32) -> Option<&mut T> {
            self.map.get_mut(&index)
        }
        #[inline]
        fn remove(&mut self, index: u32) -> Option<T> {
            self.map.remove(&index)
        }
        #[inline]
        fn contains(&self, index: u32) -> bool {
            self.map.contains_key(&index)
        }
        fn len(&self) -> usize {
            self.map.len()
        }
        fn collect_indices(&self, out: &mut Vec<u32>) {
            out.extend(self.map.keys().copied());
        }
        fn collect_entities(&self, entities: &crate::ecs::entity::Entities, out: &mut Vec<crate::ecs::entity::Entity>) {
            out.extend(self.map.keys().map(|&i| crate::ecs::storage::handle(entities, i)));
        }
    };
}

/// Mutable references to several elements of `items` at once, without `unsafe`: `picks` yields (slot, position)
/// pairs by ascending position, and each element is split off the front of what is left into `out[slot]`. A
/// position named twice, or out of order, panics. Every place that borrows several pools, columns or values at
/// once goes through here.
#[inline]
pub(crate) fn split_disjoint<'a, T>(
    mut items: &'a mut [T],
    picks: impl IntoIterator<Item = (usize, usize)>,
    out: &mut [Option<&'a mut T>],
) {
    let mut base = 0;
    for (slot, at) in picks {
        assert!(at >= base, "split_disjoint: position {at} named twice or out of order");
        let (head, tail) = std::mem::take(&mut items).split_at_mut(at + 1 - base);
        out[slot] = head.last_mut();
        items = tail;
        base = at + 1;
    }
}

/// Mutable references to the elements of `items` at `positions` (`None` passes through), all at once and in the
/// order asked: sorted (unless they come sorted, as a walk in storage order asks them), then split off by
/// [`split_disjoint`]. A position named twice panics.
pub(crate) fn disjoint_mut<T>(
    items: &mut [T],
    positions: impl ExactSizeIterator<Item = Option<usize>>,
) -> Vec<Option<&mut T>> {
    let mut out: Vec<Option<&mut T>> = Vec::with_capacity(positions.len());
    let mut order: Vec<(usize, usize)> = Vec::with_capacity(positions.len());
    for (k, at) in positions.enumerate() {
        out.push(None);
        order.extend(at.map(|at| (at, k)));
    }
    if !order.is_sorted() {
        order.sort_unstable();
    }
    split_disjoint(items, order.into_iter().map(|(at, k)| (k, at)), &mut out);
    out
}

/// A pool was asked for as a layout it is not in: a world keeps every pool in its one layout, so this is a bug.
#[cold]
pub(crate) fn wrong_layout<T>(found: PoolLayout, expected: PoolLayout) -> ! {
    unreachable!("pool of {} is {found:?} but the world's layout is {expected:?}", std::any::type_name::<T>())
}

/// Each per-component layout as a type implementing [`Layout`]; invoked by the table of backends.
macro_rules! layouts {
    ($($(#[$doc:meta])* $layout:ident => $variant:ident($pool:ident);)*) => {$(
        $(#[$doc])*
        pub struct $layout;
        impl Layout for $layout {
            const LAYOUT: PoolLayout = PoolLayout::$variant;
            type Pool<T: $crate::ecs::Component> = $pool<T>;
            fn wrap<T: $crate::ecs::Component>(pool: $pool<T>) -> AnyPool<T> {
                AnyPool::$variant(pool)
            }
            #[inline]
            fn pool_ref<T: $crate::ecs::Component>(any: &AnyPool<T>) -> &$pool<T> {
                match any {
                    AnyPool::$variant(pool) => pool,
                    #[allow(unreachable_patterns)] // a world with one per-component layout
                    other => $crate::ecs::storage::wrong_layout::<T>(other.layout(), PoolLayout::$variant),
                }
            }
            #[inline]
            fn pool_mut<T: $crate::ecs::Component>(any: &mut AnyPool<T>) -> &mut $pool<T> {
                match any {
                    AnyPool::$variant(pool) => pool,
                    #[allow(unreachable_patterns)] // a world with one per-component layout
                    other => $crate::ecs::storage::wrong_layout::<T>(other.layout(), PoolLayout::$variant),
                }
            }
        }
    )*};
}

#[macro_use]
mod backend;
pub(crate) mod archetype;
mod btree;
mod direct_array;
mod hash_map;
mod put;
pub(crate) mod sparse_set;
pub(crate) mod values;
mod world_storage;

use super::component::{BundleIds, ComponentId, ComponentSet, Components, TypeData};
use crate::ecs::Component;

use super::entity::{Entities, Entity};
use archetype::Archetypes;
use sparse_set::{PackedOrder, SparseSet};
use std::any::Any;

pub use put::PutBundle;
pub(crate) use put::{put_batch, put_row, put_rows, put_sparse_batch};
pub use world_storage::Storage;
pub(crate) use world_storage::{ErasedValue, HeldRemovals, Loan};

#[doc(hidden)]
pub use backend::{AnyPool, BTreeLayout, DirectArrayLayout, HashMapLayout, PoolLayout, SparseSetLayout};
pub use backend::{Backend, UnknownBackend};
#[doc(hidden)]
pub use btree::BTreePool;
#[doc(hidden)]
pub use direct_array::DirectArray;
#[doc(hidden)]
pub use hash_map::HashPool;

/// The monomorphized functions that create and migrate one component type's storage, kept per type by the
/// world's [`Registry`], so that code which only knows a component id can still build and move its values.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct LayoutFns {
    pub(crate) new_pool: fn(PoolLayout) -> Box<dyn ErasedPool>,
    pub(crate) new_columns: fn() -> Box<dyn archetype::ErasedColumns>,
    /// Moves every value of this type out of a per-component pool into the archetype tables (rows already made).
    pub(crate) pool_into_tables: fn(Box<dyn ErasedPool>, &mut Archetypes, ComponentId),
    /// Moves every value of this type out of the archetype tables into a new pool of the given backend.
    pub(crate) tables_into_pool: fn(&mut Archetypes, ComponentId, PoolLayout) -> Box<dyn ErasedPool>,
}

impl TypeData for LayoutFns {
    fn of<T: Component>() -> Self {
        Self {
            new_pool: |layout| Box::new(AnyPool::<T>::new(layout)),
            new_columns: || Box::new(archetype::Columns::<T>::new()),
            pool_into_tables: AnyPool::<T>::into_tables,
            tables_into_pool: AnyPool::<T>::from_tables,
        }
    }
}

/// A world's component registry: ids and names, each type's [`LayoutFns`], and each bundle type's ids.
#[doc(hidden)]
pub type Registry = Components<LayoutFns, BundleIds>;

/// One component type's values in a per-component layout, keyed by entity index. The verbs are `HashMap`'s, so
/// the backends read alike. The world checks liveness; a pool only knows indices.
#[doc(hidden)]
pub trait Pool<T>: Default + Send + Sync + 'static {
    /// Inserts or replaces the value of `entity`; returns the previous one.
    fn insert(&mut self, entity: Entity, value: T) -> Option<T>;
    /// The value at `index`.
    fn get(&self, index: u32) -> Option<&T>;
    /// The value at `index`, mutably.
    fn get_mut(&mut self, index: u32) -> Option<&mut T>;
    /// Removes and returns the value at `index`.
    fn remove(&mut self, index: u32) -> Option<T>;
    /// The values at `indices`, mutably and all at once, in the order asked (each `None` if absent). The indices
    /// must be distinct (the world checks; a repeat panics). Sparse set and direct array find each in O(1) and
    /// split their value slice in ascending order; the hash map looks up a few (up to four) with hashbrown's
    /// `get_disjoint_mut` and walks its values once for more; the b-tree walks the keys from the smallest index
    /// asked to the largest.
    fn get_each_mut(&mut self, indices: &[u32]) -> Vec<Option<&mut T>>;
    /// Removes the values at many indices (dropping them); returns how many were present. A layout may do
    /// better than one [`Pool::remove`] each: a sparse set unlinks a large batch first and then closes the gaps
    /// in one sweep of its packed arrays (see [`SparseSet::remove_many`](crate::ecs::SparseSet::remove_many)).
    fn remove_many(&mut self, indices: impl Iterator<Item = u32>) -> usize {
        indices.filter(|&index| self.remove(index).is_some()).count()
    }
    /// Removes the values of `entities` one by one, in order (absent ones are passed over); returns how many were
    /// present. The same as [`Pool::remove`] on each; a sparse set does it in warmed chunks (see
    /// [`SparseSet::remove_each`](crate::ecs::SparseSet::remove_each)).
    fn remove_each(&mut self, entities: &[Entity]) -> usize {
        entities.iter().filter(|entity| self.remove(entity.index()).is_some()).count()
    }
    /// Whether `index` has a value.
    fn contains(&self, index: u32) -> bool;
    /// Number of values.
    fn len(&self) -> usize;
    /// Whether the pool is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Appends every index that has a value, in iteration order.
    fn collect_indices(&self, out: &mut Vec<u32>);
    /// Appends the handle of every entity that has a value, in iteration order (`entities` turns indices back
    /// into handles where the layout keeps only indices).
    fn collect_entities(&self, entities: &Entities, out: &mut Vec<Entity>);
    /// Removes every value, handing `(index, value)` to `f` in iteration order.
    fn drain(&mut self, f: impl FnMut(u32, T));
    /// Bytes held (capacity, not length).
    fn bytes(&self) -> usize;
    /// Makes room for `additional` more values where the layout allows.
    fn reserve(&mut self, additional: usize);
    /// Adds the value of an entity that holds none yet (fresh from the allocator): [`Pool::insert`] without the
    /// look for a previous value, which at scale is a cache miss the spawn would wait on (a sparse set writes its
    /// sparse entry without reading it; a direct array its slot).
    #[inline]
    fn insert_fresh(&mut self, entity: Entity, value: T) {
        self.insert(entity, value);
    }
    /// Adds the value of an entity that holds none yet (fresh from the allocator). A layout may defer its index
    /// bookkeeping to [`Pool::commit_fresh`], which must follow before any other call, with the staged entities in
    /// staging order. Batch spawning uses the pair so a sparse set appends its packed arrays as plain streams.
    #[inline]
    fn stage_fresh(&mut self, entity: Entity, value: T) {
        self.insert(entity, value);
    }
    /// Completes the [`Pool::stage_fresh`] calls made since the last commit; `fresh` holds their entities in order.
    #[inline]
    fn commit_fresh(&mut self, fresh: &[Entity]) {
        let _ = fresh;
    }
    /// The packed entities and values, if this layout has them (sparse set): lets queries walk pools in lock-step.
    fn packed(&self) -> Option<(&[Entity], &[T])> {
        None
    }
    /// The packed entity order, if this layout packs, with what is known of how it compares with other pools'
    /// (see [`PackedOrder`]): lets a query check two pools are packed alike without comparing them whole.
    fn order(&self) -> Option<PackedOrder<'_>> {
        None
    }
    /// Like [`Pool::packed`], values mutable.
    fn packed_mut(&mut self) -> Option<(&[Entity], &mut [T])> {
        None
    }
}

/// A per-component layout, as a type: `L::Pool<T>` is its pool for `T`. Queries are generic over it, so the
/// backend is matched once per query and the per-entity loop is monomorphized.
#[doc(hidden)]
pub trait Layout: 'static {
    /// Which layout this is.
    const LAYOUT: PoolLayout;
    /// The pool of one component type.
    type Pool<T: Component>: Pool<T>;
    /// The pool as an [`AnyPool`].
    fn wrap<T: Component>(pool: Self::Pool<T>) -> AnyPool<T>;
    /// The pool inside an [`AnyPool`] of this layout, shared.
    fn pool_ref<T: Component>(any: &AnyPool<T>) -> &Self::Pool<T>;
    /// The pool inside an [`AnyPool`] of this layout.
    fn pool_mut<T: Component>(any: &mut AnyPool<T>) -> &mut Self::Pool<T>;
}

/// Matches a [`PoolLayout`] once and runs `$body` with the type `$L` naming that [`Layout`]: the single layout
/// dispatch of a query or a batch, after which the loops are monomorphized.
macro_rules! dispatch {
    ($layout:expr, $L:ident => $body:expr) => {
        match $layout {
            $crate::ecs::storage::PoolLayout::SparseSet => {
                type $L = $crate::ecs::storage::SparseSetLayout;
                $body
            }
            $crate::ecs::storage::PoolLayout::HashMap => {
                type $L = $crate::ecs::storage::HashMapLayout;
                $body
            }
            $crate::ecs::storage::PoolLayout::BTree => {
                type $L = $crate::ecs::storage::BTreeLayout;
                $body
            }
            $crate::ecs::storage::PoolLayout::DirectArray => {
                type $L = $crate::ecs::storage::DirectArrayLayout;
                $body
            }
        }
    };
}
pub(crate) use dispatch;

/// Runs `$body` with `$pool` bound to the concrete pool, whatever the variant.
macro_rules! with_pool {
    ($any:expr, $pool:ident => $body:expr) => {
        match $any {
            AnyPool::SparseSet($pool) => $body,
            AnyPool::HashMap($pool) => $body,
            AnyPool::BTree($pool) => $body,
            AnyPool::DirectArray($pool) => $body,
        }
    };
}
pub(crate) use with_pool;

impl<T: Component> AnyPool<T> {
    /// An empty pool in `layout`.
    pub fn new(layout: PoolLayout) -> Self {
        dispatch!(layout, L => L::wrap(Default::default()))
    }

    /// A copy in the same layout, each value copied by `copy` (what a checkpoint keeps: `crate::ecs::rollback`).
    pub(crate) fn clone_with(&self, copy: fn(&T) -> T) -> Self {
        match self {
            AnyPool::SparseSet(pool) => AnyPool::SparseSet(pool.clone_with(copy)),
            AnyPool::HashMap(pool) => AnyPool::HashMap(pool.clone_with(copy)),
            AnyPool::BTree(pool) => AnyPool::BTree(pool.clone_with(copy)),
            AnyPool::DirectArray(pool) => AnyPool::DirectArray(pool.clone_with(copy)),
        }
    }

    /// Makes `into` a copy of this pool in this pool's layout, each value copied by `copy`: in `into`'s buffers
    /// when both are sparse sets or both direct arrays (a checkpoint taken again into an old one's memory), else
    /// as a new pool.
    pub(crate) fn copy_into(&self, into: &mut Self, copy: fn(&T) -> T) {
        match (self, into) {
            (AnyPool::SparseSet(from), AnyPool::SparseSet(to)) => from.copy_into(to, copy),
            (AnyPool::DirectArray(from), AnyPool::DirectArray(to)) => from.copy_into(to, copy),
            (from, to) => *to = from.clone_with(copy),
        }
    }

    /// The typed pool behind an erased one: one `TypeId` comparison (the upcast to `dyn Any` reads the vtable;
    /// only `type_id` is a dynamic call).
    ///
    /// # Panics
    /// If the pool holds another component type: the registry gave two types one id, which is a bug here.
    #[inline]
    pub fn downcast_mut(pool: &mut dyn ErasedPool) -> &mut AnyPool<T> {
        let pool: &mut dyn Any = pool;
        match pool.downcast_mut::<AnyPool<T>>() {
            Some(pool) => pool,
            None => unreachable!("the pool registered for {} holds another type", std::any::type_name::<T>()),
        }
    }

    /// Shared version of [`AnyPool::downcast_mut`].
    #[inline]
    pub fn downcast_ref(pool: &dyn ErasedPool) -> &AnyPool<T> {
        let pool: &dyn Any = pool;
        match pool.downcast_ref::<AnyPool<T>>() {
            Some(pool) => pool,
            None => unreachable!("the pool registered for {} holds another type", std::any::type_name::<T>()),
        }
    }

    /// See [`Pool::insert`].
    #[inline]
    pub fn insert(&mut self, entity: Entity, value: T) -> Option<T> {
        with_pool!(self, p => p.insert(entity, value))
    }

    /// See [`Pool::get`].
    #[inline]
    pub fn get(&self, index: u32) -> Option<&T> {
        with_pool!(self, p => Pool::get(p, index))
    }

    /// See [`Pool::get_mut`].
    #[inline]
    pub fn get_mut(&mut self, index: u32) -> Option<&mut T> {
        with_pool!(self, p => Pool::get_mut(p, index))
    }

    /// See [`Pool::remove`].
    #[inline]
    pub fn remove(&mut self, index: u32) -> Option<T> {
        with_pool!(self, p => Pool::remove(p, index))
    }

    /// Moves every value into a new pool of `layout`. `entity_at` turns an index back into its handle.
    pub fn convert(&mut self, layout: PoolLayout, entity_at: &dyn Fn(u32) -> Entity) {
        if layout == PoolLayout::BTree {
            *self = AnyPool::BTree(staged_btree(|put| with_pool!(self, p => Pool::drain(p, &mut *put))));
            return;
        }
        let mut next = AnyPool::new(layout);
        let len = self.len();
        // Both layouts matched once, so the loop over the values is monomorphized for the pair. The new pool is
        // empty, so every value goes in as a fresh entity's (a sparse set appends them as plain pushes and writes
        // its sparse entries in one pass at the end).
        let mut fresh = Vec::with_capacity(len);
        with_pool!(&mut next, to => {
            Pool::reserve(to, len);
            with_pool!(&mut *self, from => Pool::drain(from, |index, value| {
                let entity = entity_at(index);
                Pool::stage_fresh(to, entity, value);
                fresh.push(entity);
            }));
            Pool::commit_fresh(to, &fresh);
        });
        *self = next;
    }

    fn len(&self) -> usize {
        with_pool!(self, p => Pool::len(p))
    }

    /// Moves every value into the archetype tables. Every entity already has its row; its record says where.
    pub(crate) fn into_tables(pool: Box<dyn ErasedPool>, tables: &mut Archetypes, id: ComponentId) {
        let mut pool = pool.into_any().downcast::<AnyPool<T>>().expect("pool type does not match its component id");
        // Stage the values by index, then let each table pull them in its row order: O(n), no sort.
        let mut staged: Vec<Option<T>> = Vec::new();
        staged.resize_with(tables.index_bound(), || None);
        with_pool!(&mut *pool, p => Pool::drain(p, |index, value| staged[index as usize] = Some(value)));
        tables.fill_column(id, |index| {
            staged[index as usize].take().expect("entity record names a table holding a component its pool lacked")
        });
    }

    /// Moves every value of component `id` out of the archetype tables into a new pool of `layout`.
    pub(crate) fn from_tables(tables: &mut Archetypes, id: ComponentId, layout: PoolLayout) -> Box<dyn ErasedPool> {
        if layout == PoolLayout::BTree {
            let pool = staged_btree(|put| tables.drain_column::<T>(id, |entity, value| put(entity.index(), value)));
            return Box::new(AnyPool::BTree(pool));
        }
        let mut pool = AnyPool::<T>::new(layout);
        let mut fresh = Vec::new();
        with_pool!(&mut pool, to => {
            tables.drain_column::<T>(id, |entity, value| {
                Pool::stage_fresh(to, entity, value);
                fresh.push(entity);
            });
            Pool::commit_fresh(to, &fresh);
        });
        Box::new(pool)
    }
}

/// Builds a B-tree pool from values given in any index order. A B-tree fed sorted pairs is built bottom-up in
/// O(n) (std's bulk build) instead of by n searches and node splits; the pairs are sorted by staging the values by
/// index, so each value moves a fixed number of times where a comparison sort would move large components again
/// and again.
fn staged_btree<T>(fill: impl FnOnce(&mut dyn FnMut(u32, T))) -> BTreePool<T> {
    let mut staged: Vec<Option<T>> = Vec::new();
    fill(&mut |index, value| {
        let index = index as usize;
        if index >= staged.len() {
            staged.resize_with(index + 1, || None);
        }
        staged[index] = Some(value);
    });
    BTreePool::from_sorted(staged.into_iter().enumerate().filter_map(|(i, v)| v.map(|v| (i as u32, v))).collect())
}

/// A pool with its component type erased: what the world can do knowing only a [`ComponentId`].
#[doc(hidden)]
pub trait ErasedPool: Any + Send + Sync {
    /// Upcast, to downcast to the typed [`AnyPool`].
    fn as_any(&self) -> &dyn Any;
    /// Upcast, to downcast to the typed [`AnyPool`].
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Upcast by value.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    /// Drops the value at `index`; whether there was one.
    fn remove_index(&mut self, index: u32) -> bool;
    /// Drops the values of `entities`, by index, in order (absent ones are passed over): one dynamic call for
    /// the lot.
    fn remove_entities(&mut self, entities: &[Entity]);
    /// Whether `index` has a value.
    fn contains(&self, index: u32) -> bool;
    /// Number of values.
    fn len(&self) -> usize;
    /// Whether the pool is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Appends every index with a value, in iteration order.
    fn collect_indices(&self, out: &mut Vec<u32>);
    /// Bytes held.
    fn bytes(&self) -> usize;
    /// Moves every value to `layout`.
    fn convert(&mut self, layout: PoolLayout, entity_at: &dyn Fn(u32) -> Entity);
    /// Which layout this pool is in.
    fn layout(&self) -> PoolLayout;
    /// Drops every value.
    fn clear(&mut self);
    /// Makes room for `additional` more values where the layout allows.
    fn reserve(&mut self, additional: usize);
    /// Whether dropping a value runs code (the type has drop glue), which may panic.
    fn drops(&self) -> bool;
}

impl<T: Component> ErasedPool for AnyPool<T> {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn remove_index(&mut self, index: u32) -> bool {
        self.remove(index).is_some()
    }
    fn remove_entities(&mut self, entities: &[Entity]) {
        with_pool!(self, p => Pool::remove_each(p, entities));
    }
    fn contains(&self, index: u32) -> bool {
        with_pool!(self, p => Pool::contains(p, index))
    }
    fn len(&self) -> usize {
        AnyPool::len(self)
    }
    fn collect_indices(&self, out: &mut Vec<u32>) {
        with_pool!(self, p => p.collect_indices(out))
    }
    fn bytes(&self) -> usize {
        with_pool!(self, p => p.bytes())
    }
    fn convert(&mut self, layout: PoolLayout, entity_at: &dyn Fn(u32) -> Entity) {
        AnyPool::convert(self, layout, entity_at)
    }
    fn layout(&self) -> PoolLayout {
        AnyPool::layout(self)
    }
    fn clear(&mut self) {
        with_pool!(self, p => Pool::drain(p, |_, _| {}))
    }
    fn reserve(&mut self, additional: usize) {
        with_pool!(self, p => Pool::reserve(p, additional))
    }
    fn drops(&self) -> bool {
        std::mem::needs_drop::<T>()
    }
}

/// The live handle at `index`, for layouts that keep only indices.
#[inline]
pub(crate) fn handle(entities: &Entities, index: u32) -> Entity {
    entities.alive_at(index).expect("a pool holds a value for a dead entity")
}
