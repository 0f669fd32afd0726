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
//! | [`SparseSet`](Backend::SparseSet) | O(1), push | O(1), 3-4 dependent loads (page, entry, packed entity, value) | O(1), swap-and-pop | packed array | smallest pool drives, others probed; lock-step when packed alike (after `sort_as`, or the same spawns and despawns) | `size_of T` + 8 (entity) + 4 per index in each 4096-index page touched | insertion order, changed by removals and sorting |
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

/// Mutable references to the elements of `items` at `positions` (`None` passes through), all at once: sorted, then
/// split off by [`split_disjoint`]. A position named twice panics.
pub(crate) fn disjoint_mut<T, const N: usize>(items: &mut [T], positions: [Option<usize>; N]) -> [Option<&mut T>; N] {
    let mut order: [usize; N] = std::array::from_fn(|k| k);
    order.sort_unstable_by_key(|&k| positions[k]);
    let mut out: [Option<&mut T>; N] = std::array::from_fn(|_| None);
    split_disjoint(items, order.into_iter().filter_map(|k| Some((k, positions[k]?))), &mut out);
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
            type Pool<T: 'static> = $pool<T>;
            fn wrap<T: 'static>(pool: $pool<T>) -> AnyPool<T> {
                AnyPool::$variant(pool)
            }
            #[inline]
            fn pool_ref<T: 'static>(any: &AnyPool<T>) -> &$pool<T> {
                match any {
                    AnyPool::$variant(pool) => pool,
                    #[allow(unreachable_patterns)] // a world with one per-component layout
                    other => $crate::ecs::storage::wrong_layout::<T>(other.layout(), PoolLayout::$variant),
                }
            }
            #[inline]
            fn pool_mut<T: 'static>(any: &mut AnyPool<T>) -> &mut $pool<T> {
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
pub(crate) mod sparse_set;
pub(crate) mod values;

use super::component::{BundleIds, ComponentId, ComponentSet, Components, TypeData};

use super::entity::{Entities, Entity};
use archetype::Archetypes;
use sparse_set::{PackedOrder, SparseSet};
use std::any::Any;

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
    fn of<T: 'static>() -> Self {
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
pub trait Pool<T>: Default + 'static {
    /// Inserts or replaces the value of `entity`; returns the previous one.
    fn insert(&mut self, entity: Entity, value: T) -> Option<T>;
    /// The value at `index`.
    fn get(&self, index: u32) -> Option<&T>;
    /// The value at `index`, mutably.
    fn get_mut(&mut self, index: u32) -> Option<&mut T>;
    /// Removes and returns the value at `index`.
    fn remove(&mut self, index: u32) -> Option<T>;
    /// The values at `indices`, mutably and all at once (each `None` if absent). The indices must be distinct
    /// (the world checks; a repeat panics). Sparse set, direct array and hash map find each in O(1); the b-tree
    /// finds the smallest and largest in O(log n) and walks the keys between for the others.
    fn get_disjoint_mut<const N: usize>(&mut self, indices: [u32; N]) -> [Option<&mut T>; N];
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
    type Pool<T: 'static>: Pool<T>;
    /// The pool as an [`AnyPool`].
    fn wrap<T: 'static>(pool: Self::Pool<T>) -> AnyPool<T>;
    /// The pool inside an [`AnyPool`] of this layout, shared.
    fn pool_ref<T: 'static>(any: &AnyPool<T>) -> &Self::Pool<T>;
    /// The pool inside an [`AnyPool`] of this layout.
    fn pool_mut<T: 'static>(any: &mut AnyPool<T>) -> &mut Self::Pool<T>;
}

/// A bundle as storage places it: values of distinct component types, one of each, put for entities that hold
/// nothing yet, into each type's pool or into new rows of the bundle's table. `ids` are the bundle's component
/// ids ([`BundleIds::ids`]), in the order of its values. [`Storage`]'s spawns are generic over it; the bundle
/// itself (ids, per-entity insert and remove) is `ecs::Bundle`, which requires it.
#[doc(hidden)]
pub trait PutBundle: Sized {
    /// Inserts every component into its per-component pool of layout `L`; `entity` must hold no value in any pool
    /// yet (fresh from the allocator). The layout is matched once by the caller, so each component costs a
    /// downcast and the pool's own insert, inlined.
    fn put_pools<L: Layout>(self, pools: &mut [Box<dyn ErasedPool>], ids: &[ComponentId], entity: Entity);
    /// Puts each bundle of `items` into a new row of `table` (the table of `ids`), finding and downcasting each
    /// type's column once for the whole batch; `spawned` hears of each entity, in order. Every entity must be
    /// newly alive, with no row yet.
    fn put_rows(
        items: impl Iterator<Item = (Entity, Self)>,
        archetypes: &mut Archetypes,
        table: u32,
        ids: &[ComponentId],
        spawned: impl FnMut(Entity),
    );
    /// Puts each bundle of `items` into the per-component pools of layout `L` for its entity, downcasting each pool
    /// once for the whole batch; `out` receives the entities in order. Every entity must be newly alive, holding
    /// no value in any pool yet (the caller allocates or activates them as `items` is pulled).
    fn put_batch<L: Layout>(
        items: impl Iterator<Item = (Entity, Self)>,
        pools: &mut [Box<dyn ErasedPool>],
        ids: &[ComponentId],
        out: &mut Vec<Entity>,
    );
    /// Batch spawning into sparse-set pools: pushes the values of `items` onto the pools' packed value arrays as
    /// plain streams, then allocates one entity per bundle at once and gives the pools their entities; `out`, if
    /// given, receives the handles too. Returns how many were spawned. `items` must not yield more bundles than
    /// `entities` has room for.
    fn put_sparse_batch(
        items: impl Iterator<Item = Self>,
        pools: &mut [Box<dyn ErasedPool>],
        ids: &[ComponentId],
        entities: &mut Entities,
        out: Option<&mut Vec<Entity>>,
    ) -> usize;
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

impl<T: 'static> AnyPool<T> {
    /// An empty pool in `layout`.
    pub fn new(layout: PoolLayout) -> Self {
        dispatch!(layout, L => L::wrap(Default::default()))
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
pub trait ErasedPool: Any {
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
}

impl<T: 'static> ErasedPool for AnyPool<T> {
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
}

/// The live handle at `index`, for layouts that keep only indices.
#[inline]
pub(crate) fn handle(entities: &Entities, index: u32) -> Entity {
    entities.alive_at(index).expect("a pool holds a value for a dead entity")
}

/// Where a world's component values live: one pool per component type in one per-component layout, or the
/// archetype tables. It owns the operations on values (placing, inserting, removing, despawning, clearing,
/// converting), each matching the layout once; the world keeps the handles and the registry and passes them in.
// Public but hidden because `Bundle`'s methods name it.
#[doc(hidden)]
pub enum Storage {
    /// Pools by [`ComponentId`], all in `layout`.
    Pools { layout: PoolLayout, pools: Vec<Box<dyn ErasedPool>> },
    /// One table per set of component types.
    Tables(Archetypes),
}

impl Storage {
    /// Empty storage in `backend`'s layout.
    pub(crate) fn new(backend: Backend) -> Self {
        match backend.pool_layout() {
            Some(layout) => Storage::Pools { layout, pools: Vec::new() },
            None => Storage::Tables(Archetypes::new()),
        }
    }

    /// The backend whose layout this is.
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Storage::Pools { layout, .. } => layout.backend(),
            Storage::Tables(_) => Backend::Archetype,
        }
    }

    /// Makes room for `additional` more entities with the component set `ids`: in each type's pool, or in the
    /// set's table.
    pub(crate) fn reserve(&mut self, components: &Registry, ids: &BundleIds, additional: usize) {
        match self {
            Storage::Tables(archetypes) => {
                let table = archetypes.table_for(ids.set, components);
                archetypes.reserve_rows(table, additional);
            }
            Storage::Pools { layout, pools } => bundle_pools(pools, *layout, components, ids.ids(), additional),
        }
    }

    /// Makes sure component `id` has its pool (a table makes its columns when it is made).
    #[inline]
    pub(crate) fn init_component(&mut self, id: ComponentId, components: &Registry) {
        if let Storage::Pools { layout, pools } = self {
            ensure_pools(pools, *layout, components, id);
        }
    }

    /// Puts the values of `bundle` (component ids `ids`) for `entity`, newly alive and holding nothing yet.
    pub(crate) fn spawn<B: PutBundle>(&mut self, components: &Registry, ids: &BundleIds, entity: Entity, bundle: B) {
        match self {
            Storage::Tables(archetypes) => {
                let table = archetypes.table_for(ids.set, components);
                B::put_rows(std::iter::once((entity, bundle)), archetypes, table, ids.ids(), |_| {});
            }
            Storage::Pools { layout, pools } => {
                bundle_pools(pools, *layout, components, ids.ids(), 0);
                dispatch!(*layout, L => bundle.put_pools::<L>(pools, ids.ids(), entity));
            }
        }
    }

    /// Puts each bundle of `items` (component ids `ids`) for its entity, each newly alive and holding nothing yet
    /// (the caller allocates or activates them as `items` is pulled); `out` receives the entities in order. Room is
    /// made first for `rows` more rows in the bundle's table (when more than one), or for `values` more values in
    /// each of its pools (when any). One layout dispatch for the batch; each pool or column is downcast once.
    pub(crate) fn spawn_batch<B: PutBundle>(
        &mut self,
        components: &Registry,
        ids: &BundleIds,
        rows: usize,
        values: usize,
        items: impl Iterator<Item = (Entity, B)>,
        out: &mut Vec<Entity>,
    ) {
        match self {
            Storage::Tables(archetypes) => {
                let table = archetypes.table_for(ids.set, components);
                if rows > 1 {
                    archetypes.reserve_rows(table, rows);
                }
                B::put_rows(items, archetypes, table, ids.ids(), |entity| out.push(entity));
            }
            Storage::Pools { layout, pools } => {
                bundle_pools(pools, *layout, components, ids.ids(), values);
                dispatch!(*layout, L => B::put_batch::<L>(items, pools, ids.ids(), out));
            }
        }
    }

    /// The sparse-set batch spawn: stages the values of `bundles` (component ids `ids`) before their handles
    /// exist, then allocates one handle per bundle from `entities` in one run ([`PutBundle::put_sparse_batch`]);
    /// `out`, if given, receives them. Room for `reserve` more values is made first in each pool. Returns how many
    /// were spawned; `bundles` must not yield more than `entities` has room for.
    ///
    /// # Panics
    /// If the layout is not the sparse set.
    pub(crate) fn spawn_sparse_batch<B: PutBundle>(
        &mut self,
        components: &Registry,
        ids: &BundleIds,
        reserve: usize,
        bundles: impl Iterator<Item = B>,
        entities: &mut Entities,
        out: Option<&mut Vec<Entity>>,
    ) -> usize {
        let Storage::Pools { layout: PoolLayout::SparseSet, pools } = self else {
            unreachable!("a sparse-set batch spawn on the {:?} layout", self.backend())
        };
        bundle_pools(pools, PoolLayout::SparseSet, components, ids.ids(), reserve);
        B::put_sparse_batch(bundles, pools, ids.ids(), entities, out)
    }

    /// Where component `id`'s values live, for per-entity operations on them; `None` if the type was registered (by
    /// a refused query or spawn) but never given a pool, which means no entity has it.
    #[inline]
    pub(crate) fn values<'w, T: 'static>(
        &'w mut self,
        id: ComponentId,
        components: &'w Registry,
    ) -> Option<values::ComponentValues<'w, T>> {
        match self {
            Storage::Tables(archetypes) => Some(values::ComponentValues::Tables { archetypes, components, id }),
            Storage::Pools { pools, .. } => pools
                .get_mut(id as usize)
                .map(|pool| values::ComponentValues::Pool(AnyPool::downcast_mut(pool.as_mut()))),
        }
    }

    /// Component `T` (id `id`) of the entity at `index`, if it has one.
    #[inline]
    pub(crate) fn get<T: 'static>(&self, id: ComponentId, index: u32) -> Option<&T> {
        match self {
            Storage::Tables(archetypes) => archetypes.get::<T>(index, id),
            Storage::Pools { pools, .. } => {
                // A type registered by a refused query or spawn may have no pool yet: then nobody has it.
                let pool = pools.get(id as usize)?;
                AnyPool::<T>::downcast_ref(pool.as_ref()).get(index)
            }
        }
    }

    /// Sets component `T` (id `id`) of the live `entity`, making its pool if need be; returns the previous value.
    #[inline]
    pub(crate) fn insert<T: 'static>(
        &mut self,
        id: ComponentId,
        components: &Registry,
        entity: Entity,
        value: T,
    ) -> Option<T> {
        self.init_component(id, components);
        self.values(id, components).expect("init_component made the pool").insert(entity, value)
    }

    /// Removes and returns component `T` (id `id`) of the live entity at `index`, if it has one.
    #[inline]
    pub(crate) fn remove<T: 'static>(&mut self, id: ComponentId, components: &Registry, index: u32) -> Option<T> {
        self.values(id, components)?.remove(index)
    }

    /// Sets component `T` (id `id`, whose pool exists) on each entity of `items` that `entities` says is alive;
    /// the others are skipped, their values dropped. Returns how many were skipped. One layout dispatch and one
    /// downcast for the batch.
    pub(crate) fn insert_many<T: 'static>(
        &mut self,
        id: ComponentId,
        components: &Registry,
        entities: &Entities,
        items: impl IntoIterator<Item = (Entity, T)>,
    ) -> usize {
        fn run<L: Layout, T: 'static>(
            pool: &mut AnyPool<T>,
            entities: &Entities,
            items: impl IntoIterator<Item = (Entity, T)>,
        ) -> usize {
            let pool = L::pool_mut(pool);
            let items = items.into_iter();
            pool.reserve(items.size_hint().0);
            let mut skipped = 0;
            for (entity, value) in items {
                if entities.is_alive(entity) {
                    pool.insert(entity, value);
                } else {
                    skipped += 1;
                }
            }
            skipped
        }
        match self {
            Storage::Tables(archetypes) => {
                let mut skipped = 0;
                for (entity, value) in items {
                    if entities.is_alive(entity) {
                        archetypes.insert(entity, id, value, components);
                    } else {
                        skipped += 1;
                    }
                }
                skipped
            }
            Storage::Pools { layout, pools } => {
                let pool = AnyPool::downcast_mut(pools[id as usize].as_mut());
                dispatch!(*layout, L => run::<L, T>(pool, entities, items))
            }
        }
    }

    /// Removes component `T` (id `id`) from each entity of `targets` that `entities` says is alive, dropping the
    /// values; returns how many had it. One layout dispatch for the batch.
    pub(crate) fn remove_many<T: 'static>(
        &mut self,
        id: ComponentId,
        components: &Registry,
        entities: &Entities,
        targets: &[Entity],
    ) -> usize {
        fn run<L: Layout, T: 'static>(pool: &mut AnyPool<T>, entities: &Entities, targets: &[Entity]) -> usize {
            let pool = L::pool_mut(pool);
            pool.remove_many(targets.iter().filter(|e| entities.is_alive(**e)).map(|e| e.index()))
        }
        match self {
            Storage::Tables(archetypes) => targets
                .iter()
                .filter(|e| entities.is_alive(**e) && archetypes.remove_erased(e.index(), id, components))
                .count(),
            Storage::Pools { layout, pools } => {
                // A type registered by a refused query or spawn has no pool yet: then nobody has it.
                let Some(pool) = pools.get_mut(id as usize) else { return 0 };
                dispatch!(*layout, L => run::<L, T>(AnyPool::downcast_mut(pool.as_mut()), entities, targets))
            }
        }
    }

    /// Component `id`'s pool, when the layout is the sparse set and `T` is its type.
    pub(crate) fn sparse_set<T: 'static>(&self, id: ComponentId) -> Option<&SparseSet<T>> {
        let Storage::Pools { pools, .. } = self else { return None };
        match pools.get(id as usize)?.as_any().downcast_ref::<AnyPool<T>>()? {
            AnyPool::SparseSet(set) => Some(set),
            _ => None,
        }
    }

    /// Component `id`'s pool, mutably, when the layout is the sparse set and `T` is its type.
    pub(crate) fn sparse_set_mut<T: 'static>(&mut self, id: ComponentId) -> Option<&mut SparseSet<T>> {
        let Storage::Pools { pools, .. } = self else { return None };
        match pools.get_mut(id as usize)?.as_any_mut().downcast_mut::<AnyPool<T>>()? {
            AnyPool::SparseSet(set) => Some(set),
            _ => None,
        }
    }

    /// Drops every value of the live `entity` and frees its handle in `entities`.
    #[inline]
    pub(crate) fn despawn(&mut self, entities: &mut Entities, entity: Entity) {
        match self {
            Storage::Tables(archetypes) => {
                // The row goes whole even if a component's `drop` panics (`Archetypes::despawn` finishes first),
                // so the handle can be freed first.
                entities.free(entity);
                archetypes.despawn(entity.index());
            }
            Storage::Pools { pools, layout } => {
                // Values first: if a `drop` panics, the entity stays alive (partly stripped), and is never freed
                // with values left behind for the index's next owner.
                // A sparse-set removal starts with a lookup of the sparse entry, a cache miss in a large pool, and
                // stalls on it before its writes. Asking every pool first (`contains`, one load each) issues those
                // loads back to back, so their misses overlap and the removals find the lines loaded. On the other
                // layouts asking is the removal's own work done twice (a hash probe, a tree search, the one slot).
                let index = entity.index();
                if *layout == PoolLayout::SparseSet {
                    let held = pools.iter().fold(0usize, |held, pool| held + pool.contains(index) as usize);
                    std::hint::black_box(held);
                }
                for pool in pools.iter_mut() {
                    pool.remove_index(index);
                }
                entities.free(entity);
            }
        }
    }

    /// Despawns every entity of `targets` that `entities` says is alive (dead or stale handles, and repeats, are
    /// passed over) and returns how many: [`Storage::despawn`] on each in turn (pools see the removals in the same
    /// order), but on the per-component layouts with one dynamic call per pool for the whole batch instead of one
    /// per entity and pool. `live` is a reused buffer.
    pub(crate) fn despawn_batch(
        &mut self,
        entities: &mut Entities,
        targets: &[Entity],
        live: &mut Vec<Entity>,
    ) -> usize {
        match self {
            // A run of one (a command loop's despawns come one per visited entity between its other commands)
            // takes the per-entity path, which skips the batch's setup in every pool.
            Storage::Pools { pools, .. } if targets.len() != 1 => {
                // Components go first and handles are freed after, as in `despawn`: if a component's `drop`
                // panics, the entities are still alive (partly stripped), never freed with values left behind for
                // the index's next owner. A repeated target is removed twice (the second finds nothing) and freed
                // once (`free` refuses a handle whose generation has moved on).
                live.clear();
                live.extend(targets.iter().filter(|&&entity| entities.is_alive(entity)));
                for pool in pools.iter_mut() {
                    pool.remove_entities(live);
                }
                live.iter().filter(|&&entity| entities.free(entity)).count()
            }
            _ => {
                let mut despawned = 0;
                for &entity in targets {
                    if entities.is_alive(entity) {
                        self.despawn(entities, entity);
                        despawned += 1;
                    }
                }
                despawned
            }
        }
    }

    /// Drops every value (the handles are the caller's to free). A `drop` that panics does not stop it: every
    /// value goes, and the first panic is returned.
    pub(crate) fn clear(&mut self) -> std::thread::Result<()> {
        let mut first_panic = Ok(());
        let mut guard = |step: &mut dyn FnMut()| {
            if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)) {
                if first_panic.is_ok() {
                    first_panic = Err(panic);
                }
            }
        };
        match self {
            Storage::Tables(archetypes) => guard(&mut || archetypes.clear()),
            Storage::Pools { pools, .. } => {
                for pool in pools.iter_mut() {
                    // Every layout takes a value out before dropping it, so each retry makes progress.
                    while !pool.is_empty() {
                        guard(&mut || pool.clear());
                    }
                }
            }
        }
        first_panic
    }

    /// How many entities hold component `id`: its pool's length, or the rows of the tables with its column.
    pub(crate) fn count_of(&self, id: ComponentId) -> usize {
        match self {
            Storage::Tables(archetypes) => {
                archetypes.tables().iter().filter(|t| t.column_slot(id).is_some()).map(|t| t.len()).sum()
            }
            // A type registered by a refused query or spawn may have no pool yet: then nobody has it.
            Storage::Pools { pools, .. } => pools.get(id as usize).map_or(0, |p| p.len()),
        }
    }

    /// Bytes held by component `id`'s values (capacity, not length).
    pub(crate) fn component_bytes(&self, id: ComponentId) -> usize {
        match self {
            Storage::Tables(archetypes) => archetypes.component_bytes(id),
            Storage::Pools { pools, .. } => pools.get(id as usize).map_or(0, |p| p.bytes()),
        }
    }

    /// Bytes held by the layout's bookkeeping beyond component values (archetype tables and records, the pool
    /// table of per-component layouts).
    pub(crate) fn overhead_bytes(&self) -> usize {
        match self {
            Storage::Tables(archetypes) => archetypes.overhead_bytes(),
            Storage::Pools { pools, .. } => pools.capacity() * std::mem::size_of::<Box<dyn ErasedPool>>(),
        }
    }

    /// Bytes of every type's values and the bookkeeping, for a registry of `types` types. Allocates nothing.
    pub(crate) fn bytes(&self, types: usize) -> usize {
        let components: usize = match self {
            Storage::Tables(archetypes) => (0..types).map(|id| archetypes.component_bytes(id as ComponentId)).sum(),
            Storage::Pools { pools, .. } => pools.iter().map(|p| p.bytes()).sum(),
        };
        components + self.overhead_bytes()
    }

    /// Moves every component to `backend`'s layout, keeping every live entity's values under its handle
    /// (`entities` says which are live); `scratch` is a reused index buffer.
    pub(crate) fn convert(
        &mut self,
        backend: Backend,
        entities: &Entities,
        components: &Registry,
        scratch: &mut Vec<u32>,
    ) {
        let storage = match (&mut *self, backend.pool_layout()) {
            (Storage::Tables(archetypes), Some(to)) => {
                let pools = (0..components.len() as ComponentId)
                    .map(|id| (components.data(id).tables_into_pool)(archetypes, id, to))
                    .collect();
                Storage::Pools { layout: to, pools }
            }
            (Storage::Pools { pools, .. }, None) => {
                // Rows first: every live entity gets its row in the table of its component set...
                let mut archetypes = Archetypes::new();
                let mut sets = vec![ComponentSet::EMPTY; entities.index_bound() as usize];
                for (id, pool) in pools.iter().enumerate() {
                    scratch.clear();
                    pool.collect_indices(scratch);
                    for &index in scratch.iter() {
                        sets[index as usize].insert(id as ComponentId);
                    }
                }
                for entity in entities.iter() {
                    let table = archetypes.table_for(sets[entity.index() as usize], components);
                    archetypes.push_row(entity, table);
                }
                // ...then each type's values fill their columns in row order.
                for (id, pool) in std::mem::take(pools).into_iter().enumerate() {
                    (components.data(id as ComponentId).pool_into_tables)(pool, &mut archetypes, id as ComponentId);
                }
                Storage::Tables(archetypes)
            }
            (Storage::Pools { layout, pools }, Some(to)) => {
                let entity_at = |index: u32| entities.alive_at(index).expect("a pool holds a value for a dead entity");
                for pool in pools.iter_mut() {
                    pool.convert(to, &entity_at);
                }
                *layout = to;
                return;
            }
            // There is one layout of tables, the current one.
            (Storage::Tables(_), None) => return,
        };
        *self = storage;
    }

    /// Panics with a message naming the broken invariant: the tables' own and one row per live entity, or every
    /// pool in the layout, with values at live indices only (`entities` says which are live).
    pub(crate) fn assert_invariants(&self, entities: &Entities, components: &Registry) {
        match self {
            Storage::Tables(archetypes) => {
                archetypes.assert_invariants();
                let rows: usize = archetypes.tables().iter().map(|t| t.len()).sum();
                assert_eq!(rows, entities.len() as usize, "archetype rows differ from live entities");
            }
            Storage::Pools { layout, pools } => {
                assert!(pools.len() <= components.len(), "more pools than registered components");
                for (id, pool) in pools.iter().enumerate() {
                    assert_eq!(pool.layout(), *layout, "pool {id} is in another layout");
                    let mut indices = Vec::new();
                    pool.collect_indices(&mut indices);
                    assert_eq!(indices.len(), pool.len(), "pool {id} length disagrees with its indices");
                    for index in indices {
                        assert!(entities.alive_at(index).is_some(), "pool {id} holds a value for dead index {index}");
                    }
                }
            }
        }
    }
}

/// Makes sure `pools` has a pool for every id up to `id`.
#[inline]
pub(crate) fn ensure_pools(
    pools: &mut Vec<Box<dyn ErasedPool>>,
    layout: PoolLayout,
    components: &Registry,
    id: ComponentId,
) {
    if pools.len() <= id as usize {
        grow_pools(pools, layout, components, id);
    }
}

/// Makes sure every type of `ids` has its pool, and with `reserve > 0` room for that many more values in each: what a
/// spawn of a bundle asks of the per-component layouts before it places the values.
#[inline]
pub(crate) fn bundle_pools(
    pools: &mut Vec<Box<dyn ErasedPool>>,
    layout: PoolLayout,
    components: &Registry,
    ids: &[ComponentId],
    reserve: usize,
) {
    for &id in ids {
        ensure_pools(pools, layout, components, id);
        if reserve > 0 {
            pools[id as usize].reserve(reserve);
        }
    }
}

#[cold]
fn grow_pools(pools: &mut Vec<Box<dyn ErasedPool>>, layout: PoolLayout, components: &Registry, id: ComponentId) {
    while pools.len() <= id as usize {
        pools.push((components.data(pools.len() as ComponentId).new_pool)(layout));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_round_trip() {
        for b in Backend::ALL {
            assert_eq!(b.name().parse::<Backend>(), Ok(b));
        }
        let err = "sparse".parse::<Backend>().unwrap_err();
        assert!(err.to_string().contains("sparse-set, hash-map"), "{err}");
        assert_eq!(Backend::Archetype.next(), Backend::SparseSet);
    }
}
