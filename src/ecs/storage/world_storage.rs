//! [`Storage`]: the value a world keeps its components in (one layout's pools, or the archetype tables) and the
//! operations on it, each matching the layout once.

use super::*;
use crate::ecs::Component;

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

    /// A copy of every value, each type's pool (or columns) copied by `pool` (or `columns`), which return `None`
    /// for a type they cannot copy: such a type with no values gets an empty pool (or empty columns); with
    /// values, the copy fails with its id.
    pub(crate) fn try_clone(
        &self,
        layouts: &[LayoutFns],
        pool: impl Fn(ComponentId, &dyn ErasedPool) -> Option<Box<dyn ErasedPool>>,
        columns: impl Fn(ComponentId, &dyn archetype::ErasedColumns) -> Option<Box<dyn archetype::ErasedColumns>>,
    ) -> Result<Storage, ComponentId> {
        match self {
            Storage::Pools { layout, pools } => {
                let copy = |id: usize, p: &dyn ErasedPool| match pool(id as ComponentId, p) {
                    Some(copy) => Ok(copy),
                    None if p.is_empty() => Ok((layouts[id].new_pool)(*layout)),
                    None => Err(id as ComponentId),
                };
                let pools = pools.iter().enumerate().map(|(id, p)| copy(id, p.as_ref())).collect::<Result<_, _>>()?;
                Ok(Storage::Pools { layout: *layout, pools })
            }
            Storage::Tables(archetypes) => {
                let copy = |id: ComponentId, of_type: &dyn archetype::ErasedColumns| {
                    if let Some(copy) = columns(id, of_type) {
                        return Ok(copy);
                    }
                    if (0..of_type.columns()).any(|c| of_type.len(c as u32) > 0) {
                        return Err(id);
                    }
                    let mut empty = (layouts[id as usize].new_columns)();
                    for _ in 0..of_type.columns() {
                        empty.push_column();
                    }
                    Ok(empty)
                };
                Ok(Storage::Tables(archetypes.try_clone(copy)?))
            }
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

    /// Makes sure every registered type has its pool: a query's first run may have registered types, and a refused
    /// query or spawn may have registered some without placing anything.
    #[inline(always)]
    pub(crate) fn catch_up(&mut self, components: &Registry) {
        if let Storage::Pools { layout, pools } = self {
            if let Some(last) = components.len().checked_sub(1).filter(|&last| last >= pools.len()) {
                ensure_pools(pools, *layout, components, last as ComponentId);
            }
        }
    }

    /// Puts the values of `bundle` (component ids `ids`) for `entity`, newly alive and holding nothing yet.
    #[inline(always)]
    pub(crate) fn spawn<B: PutBundle>(&mut self, components: &Registry, ids: &BundleIds, entity: Entity, bundle: B) {
        // Every id of the bundle is registered, so a pool per registered type covers them: one comparison per
        // spawn, not one per component.
        self.catch_up(components);
        match self {
            Storage::Tables(archetypes) => {
                let table = archetypes.table_for(ids.set, components);
                put_row(bundle, archetypes, table, ids, entity);
            }
            Storage::Pools { layout, pools } => {
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
                put_rows(items, archetypes, table, ids, |entity| out.push(entity));
            }
            Storage::Pools { layout, pools } => {
                bundle_pools(pools, *layout, components, ids.ids(), values);
                dispatch!(*layout, L => put_batch::<B, L>(items, pools, ids, out));
            }
        }
    }

    /// The sparse-set batch spawn: stages the values of `bundles` (component ids `ids`) before their handles
    /// exist, then allocates one handle per bundle from `entities` in one run ([`put_sparse_batch`]);
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
        put_sparse_batch(bundles, pools, ids, entities, out)
    }

    /// Whether the entity at `index` (alive) has component `id`.
    pub(crate) fn contains(&self, id: ComponentId, index: u32) -> bool {
        match self {
            Storage::Tables(archetypes) => archetypes.contains(index, id),
            Storage::Pools { pools, .. } => pools.get(id as usize).is_some_and(|pool| pool.contains(index)),
        }
    }

    /// Puts the values of `values` (component set `set`, types registered) into the live `entity`, which holds
    /// nothing yet when `fresh` (a spawn) and otherwise keeps what it has; a value of a type it holds replaces the
    /// old one, which goes back into its [`ErasedValue`] (no `drop` runs here). On the archetype layout the row
    /// lands in its final table at once: one move, not one per component.
    pub(crate) fn insert_erased<'v>(
        &mut self,
        components: &Registry,
        entity: Entity,
        set: ComponentSet,
        fresh: bool,
        values: impl Iterator<Item = &'v mut dyn ErasedValue>,
    ) {
        let Storage::Tables(archetypes) = self else {
            for value in values {
                value.insert(self, components, entity);
            }
            return;
        };
        let index = entity.index();
        let (held, from) = match archetypes.location(index) {
            Some((table, _)) if !fresh => (*archetypes.tables()[table as usize].set(), Some(table)),
            _ => (ComponentSet::EMPTY, None),
        };
        let mut target = held;
        for id in set.iter() {
            target.insert(id);
        }
        let to = archetypes.table_for(target, components);
        match from {
            None => {
                archetypes.push_row(entity, to);
            }
            Some(from) if from != to => archetypes.move_row_to(index, to),
            Some(_) => {}
        }
        for value in values {
            let id = value.id(components);
            if held.contains(id) {
                value.swap_in_table(archetypes, id, index);
            } else {
                let column = archetypes.tables()[to as usize].column_index(id).expect("the target holds the set");
                value.push_onto(archetypes, id, column);
            }
        }
    }

    /// Where component `id`'s values live, for per-entity operations on them; `None` if the type was registered (by
    /// a refused query or spawn) but never given a pool, which means no entity has it.
    #[inline]
    pub(crate) fn values<'w, T: Component>(
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
    pub(crate) fn get<T: Component>(&self, id: ComponentId, index: u32) -> Option<&T> {
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
    pub(crate) fn insert<T: Component>(
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
    pub(crate) fn remove<T: Component>(&mut self, id: ComponentId, components: &Registry, index: u32) -> Option<T> {
        self.values(id, components)?.remove(index)
    }

    /// Sets component `T` (id `id`, whose pool exists) on each entity of `items` that `entities` says is alive;
    /// the others are skipped, their values dropped. Returns how many were skipped. One layout dispatch and one
    /// downcast for the batch.
    pub(crate) fn insert_many<T: Component>(
        &mut self,
        id: ComponentId,
        components: &Registry,
        entities: &Entities,
        items: impl IntoIterator<Item = (Entity, T)>,
    ) -> usize {
        fn run<L: Layout, T: Component>(
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
    pub(crate) fn remove_many<T: Component>(
        &mut self,
        id: ComponentId,
        components: &Registry,
        entities: &Entities,
        targets: &[Entity],
    ) -> usize {
        fn run<L: Layout, T: Component>(pool: &mut AnyPool<T>, entities: &Entities, targets: &[Entity]) -> usize {
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
    pub(crate) fn sparse_set<T: Component>(&self, id: ComponentId) -> Option<&SparseSet<T>> {
        let Storage::Pools { pools, .. } = self else { return None };
        match pools.get(id as usize)?.as_any().downcast_ref::<AnyPool<T>>()? {
            AnyPool::SparseSet(set) => Some(set),
            _ => None,
        }
    }

    /// Component `id`'s pool, mutably, when the layout is the sparse set and `T` is its type.
    pub(crate) fn sparse_set_mut<T: Component>(&mut self, id: ComponentId) -> Option<&mut SparseSet<T>> {
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
            Storage::Pools { pools, .. } => {
                // One removal per pool, in turn: the pools' removals do not depend on one another, so their cache
                // misses overlap without a first pass of loads (docs/PERFORMANCE.md, rule 3).
                let index = entity.index();
                // The handle is freed first, as on the archetype layout: nothing the removals run (a value's
                // `drop`) can reach the world, and nothing is needed after the loop, which keeps the values the
                // loop holds across its calls few (docs/PERFORMANCE.md, rule 9). Every pool loses the value even if
                // a `drop` panics (a pool takes the value out before dropping it): the guard finishes the removals
                // while the panic unwinds.
                entities.free(entity);
                let mut guard = WholeDespawn { pools, index, done: false };
                for pool in guard.pools.iter_mut() {
                    pool.remove_index(index);
                }
                guard.done = true;
            }
        }
    }

    /// Despawns every entity of `targets` that `entities` says is alive (dead or stale handles, and repeats, are
    /// passed over) and returns how many: [`Storage::despawn`] on each in turn (pools see the removals in the same
    /// order), but on the per-component layouts with one dynamic call per pool for the whole batch instead of one
    /// per entity and pool. `live` is a reused buffer. While `held` holds types back, their pools are left for
    /// [`Storage::release_held`] and the live targets noted there.
    pub(crate) fn despawn_batch(
        &mut self,
        entities: &mut Entities,
        targets: &[Entity],
        live: &mut Vec<Entity>,
        parallel: bool,
        held: &mut HeldRemovals,
    ) -> usize {
        match self {
            // A run of one (a command loop's despawns come one per visited entity between its other commands)
            // takes the per-entity path, which skips the batch's setup in every pool (unless removals are held).
            Storage::Pools { pools, .. } if targets.len() != 1 || held.is_on() => {
                // Components go first and handles are freed after (`despawn` frees first: a `drop`, all a removal runs,
                // cannot see the difference), and a `drop` that panics does not stop it: the pool's removal is asked
                // again for what is left (the value that panicked is out already), every pool is emptied of the
                // targets, every handle freed, then the first panic goes on. A repeated target is removed twice (the
                // second finds nothing) and freed once (`free` refuses a handle whose generation has moved on).
                live.clear();
                live.extend(targets.iter().filter(|&&entity| entities.is_alive(entity)));
                // Held pools are left for `release_held`, the live targets noted there.
                let which = match held.is_on() {
                    true => {
                        held.pending.extend_from_slice(live);
                        Pools::Of(&held.types, false)
                    }
                    false => Pools::All,
                };
                let panic = remove_from_pools(pools, 0, which, live, split_depth(parallel, live.len()));
                let freed = live.iter().filter(|&&entity| entities.free(entity)).count();
                resume(panic);
                freed
            }
            _ => self.despawn_each(entities, targets),
        }
    }

    /// [`Storage::despawn`] on each live target in turn; a panicking `drop` does not stop the batch (each despawn
    /// is whole, then the next one goes), and the first panic goes on at the end.
    #[inline(never)]
    fn despawn_each(&mut self, entities: &mut Entities, targets: &[Entity]) -> usize {
        let mut despawned = 0;
        let mut next = 0;
        let panic = finish_each(|| {
            while let Some(&entity) = targets.get(next) {
                next += 1;
                if entities.is_alive(entity) {
                    despawned += 1;
                    self.despawn(entities, entity);
                }
            }
        });
        resume(panic);
        despawned
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

/// One component value whose type the caller knows only at run time (an [`EntityBuilder`] slot), moved into a
/// world by [`Storage::insert_erased`]. Each method takes the value out, or swaps the value it replaced in.
///
/// [`EntityBuilder`]: crate::ecs::EntityBuilder
pub(crate) trait ErasedValue {
    /// The value's component id (its type is registered).
    fn id(&self, components: &Registry) -> ComponentId;
    /// Sets the value on the live `entity` through [`Storage::insert`]; a value it replaces comes back here.
    fn insert(&mut self, storage: &mut Storage, components: &Registry, entity: Entity);
    /// Pushes the value onto column `column` of component `id` (the new row's table's column).
    fn push_onto(&mut self, archetypes: &mut Archetypes, id: ComponentId, column: u32);
    /// Swaps the value with the one the entity at `index` holds in its table; the old one comes back here.
    fn swap_in_table(&mut self, archetypes: &mut Archetypes, id: ComponentId, index: u32);
}

/// Makes sure `pools` has a pool for every id up to `id`.
#[inline]
fn ensure_pools(pools: &mut Vec<Box<dyn ErasedPool>>, layout: PoolLayout, components: &Registry, id: ComponentId) {
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

/// A component type's values moved out of the storage for a while: a system's written types, so the system's
/// parameters can hold them exclusively while the rest of the storage is shared. The storage keeps a vacant pool
/// (or no columns) in its place until [`Storage::give_back`].
pub(crate) enum Loan {
    /// A per-component layout's pool.
    Pool(ComponentId, Box<dyn ErasedPool>),
    /// Every archetype table's column of the type.
    Columns(ComponentId, archetype::TypeColumns),
}

/// What a lent pool's slot holds meanwhile: an empty pool of a type no query names.
struct Vacant;

impl Loan {
    /// The type lent.
    pub(crate) fn id(&self) -> ComponentId {
        match self {
            Loan::Pool(id, _) | Loan::Columns(id, _) => *id,
        }
    }
}

impl Storage {
    /// Moves the values of each of `ids` (registered; no repeats) out, handing each loan to `out`, in order. Every type gets its pool
    /// first; a type no table holds yet lends no columns (a query on it finds nothing, as before).
    /// A pool layout puts a stand-in (an empty pool of a type no query names) in each lent pool's place, taken from
    /// `spares` (or made, the first time): [`Storage::give_back`] returns them there, so lending allocates nothing
    /// once warm.
    pub(crate) fn lend(
        &mut self,
        components: &Registry,
        ids: &[ComponentId],
        spares: &mut Vec<Box<dyn ErasedPool>>,
        mut out: impl FnMut(Loan),
    ) {
        match self {
            Storage::Pools { layout, pools } => {
                for &id in ids {
                    ensure_pools(pools, *layout, components, id);
                    let vacant = spares
                        .pop()
                        .filter(|spare| spare.layout() == *layout)
                        .unwrap_or_else(|| Box::new(AnyPool::<Vacant>::new(*layout)));
                    out(Loan::Pool(id, std::mem::replace(&mut pools[id as usize], vacant)));
                }
            }
            Storage::Tables(archetypes) => {
                let columns = archetypes.parts_mut().1;
                for &id in ids {
                    out(Loan::Columns(id, columns.get_mut(id as usize).and_then(Option::take)));
                }
            }
        }
    }

    /// Puts back every loan of `loans` (made by [`Storage::lend`] on this storage, whose layout and tables have not
    /// changed since).
    pub(crate) fn give_back(&mut self, loans: impl Iterator<Item = Loan>, spares: &mut Vec<Box<dyn ErasedPool>>) {
        for loan in loans {
            match (&mut *self, loan) {
                (Storage::Pools { pools, .. }, Loan::Pool(id, pool)) => {
                    spares.push(std::mem::replace(&mut pools[id as usize], pool));
                }
                (Storage::Tables(archetypes), Loan::Columns(id, columns)) => {
                    if let Some(slot) = archetypes.parts_mut().1.get_mut(id as usize) {
                        *slot = columns;
                    }
                }
                _ => unreachable!("a loan goes back to the layout it came from"),
            }
        }
    }
}

#[cold]
fn grow_pools(pools: &mut Vec<Box<dyn ErasedPool>>, layout: PoolLayout, components: &Registry, id: ComponentId) {
    while pools.len() <= id as usize {
        pools.push((components.data(pools.len() as ComponentId).new_pool)(layout));
    }
}

/// Runs `step` until it returns without panicking; the first panic, for [`resume`] once the work is whole. `step`
/// must be a removal that asking again finishes: what it removed before is not there to remove twice, and the
/// value whose `drop` panicked was out of its pool before the panic, so each call makes progress.
fn finish_each(mut step: impl FnMut()) -> Option<Box<dyn std::any::Any + Send>> {
    let mut first = None;
    while let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut step)) {
        first.get_or_insert(panic);
    }
    first
}

/// Finishes a per-entity despawn's removals that a panicking `drop` interrupted: as the panic unwinds, every pool
/// is asked again (a second panic is caught and dropped: the first goes on). On the way that did not panic it does
/// nothing (`done`), which costs a flag, where catching would cost a call per despawn.
struct WholeDespawn<'a> {
    pools: &'a mut Vec<Box<dyn ErasedPool>>,
    index: u32,
    done: bool,
}

impl Drop for WholeDespawn<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if !self.done {
            // The fields go by value: handing the guard's address to an out-of-line call would make every despawn
            // write the guard to the stack (docs/PERFORMANCE.md, rule 9).
            finish_removals(self.pools, self.index);
        }
    }
}

/// [`WholeDespawn`]'s work when a `drop` panicked.
#[cold]
#[inline(never)]
fn finish_removals(pools: &mut [Box<dyn ErasedPool>], index: u32) {
    for pool in pools.iter_mut() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.remove_index(index)));
    }
}

/// Which pools a removal goes to: all, or those of the types of a set (`true`) or of the others (`false`).
#[derive(Clone, Copy)]
enum Pools<'a> {
    All,
    Of(&'a ComponentSet, bool),
}

impl Pools<'_> {
    /// Whether the pool of type `id` is one.
    #[inline]
    fn takes(self, id: usize) -> bool {
        match self {
            Pools::All => true,
            Pools::Of(types, of) => types.contains(id as ComponentId) == of,
        }
    }
}

/// Drops the values of `live` from the pools `which` names of `pools` (the first of which is type `first`'s),
/// each pool asked again for what is left if a `drop` panics; the first panic, for [`resume`]. Down to `depth`
/// levels, the named pools are halved and the halves joined on the thread pool (each pool's removals are its own,
/// so the result is the same; the front half's panic goes first). (Kept out of line: the batch's own loops compile
/// as they would without it.)
#[inline(never)]
fn remove_from_pools(
    pools: &mut [Box<dyn ErasedPool>],
    first: usize,
    which: Pools<'_>,
    live: &[Entity],
    depth: usize,
) -> Option<Box<dyn std::any::Any + Send>> {
    let named = |pools: &[Box<dyn ErasedPool>]| (0..pools.len()).filter(|&k| which.takes(first + k));
    if depth > 0 {
        let count = named(pools).count();
        if count > 1 {
            // Past the last pool of the front half.
            let mid = named(pools).nth(count / 2 - 1).expect("counted") + 1;
            let (front, back) = pools.split_at_mut(mid);
            let depth = depth - 1;
            let (front, back) = crate::ecs::join(
                || remove_from_pools(front, first, which, live, depth),
                || remove_from_pools(back, first + mid, which, live, depth),
            );
            return front.or(back);
        }
    }
    finish_each(|| {
        for (k, pool) in pools.iter_mut().enumerate() {
            if which.takes(first + k) {
                match live {
                    [one] => _ = pool.remove_index(one.index()),
                    _ => pool.remove_entities(live),
                }
            }
        }
    })
}

/// Despawns' removals held back while a command buffer applies: from the pools of the types nothing in it puts
/// (nor reads: no handler may run), the values of the entities it despawns are removed in one batch when it ends
/// (docs/ARCHITECTURE.md, section 7). Everything else about a despawn (the handle freed, the other pools emptied,
/// the hooks) happens in its turn.
///
/// Held pools see the same removals in the same order as without holding (nothing else changes them meanwhile),
/// so they end the same, packed order included; a held removal goes by index, and until it goes no value can
/// come to that index in a held pool. Only types without drop glue are held: a removal that could panic stays in
/// its turn.
#[derive(Debug, Default)]
pub(crate) struct HeldRemovals {
    /// The types whose pools hold their removals back; empty: none do.
    types: ComponentSet,
    /// The entities despawned since, in order: what the held pools still have to drop.
    pending: Vec<Entity>,
}

impl HeldRemovals {
    /// Whether removals are held back.
    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        !self.types.is_empty()
    }

    /// Whether no despawn waits for the held pools.
    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The types held.
    #[cfg(test)]
    pub(crate) fn types(&self) -> &ComponentSet {
        &self.types
    }

    /// Holds back the removals from the pools of `types` (none held now).
    pub(crate) fn hold(&mut self, types: ComponentSet) {
        debug_assert!(!self.is_on() && self.pending.is_empty(), "held removals released first");
        self.types = types;
    }
}

impl Storage {
    /// The types whose pools may hold their removals back ([`HeldRemovals`]): those without drop glue, in a
    /// per-component layout (none in the archetype tables).
    pub(crate) fn holdable(&self) -> ComponentSet {
        let mut types = ComponentSet::EMPTY;
        if let Storage::Pools { pools, .. } = self {
            for (id, pool) in pools.iter().enumerate() {
                if !pool.drops() {
                    types.insert(id as ComponentId);
                }
            }
        }
        types
    }

    /// Drops the held pools' values of the entities despawned while they were held, in one batch (split on the
    /// thread pool as a batch despawn's would be), and holds nothing back from now on.
    pub(crate) fn release_held(&mut self, held: &mut HeldRemovals, parallel: bool) {
        let types = std::mem::replace(&mut held.types, ComponentSet::EMPTY);
        if held.pending.is_empty() {
            return;
        }
        let mut panic = None;
        if let Storage::Pools { pools, .. } = self {
            let depth = split_depth(parallel, held.pending.len());
            panic = remove_from_pools(pools, 0, Pools::Of(&types, true), &held.pending, depth);
        }
        held.pending.clear();
        resume(panic);
    }
}

/// The levels of halving of a batch despawn's pools for `live` targets: none on one thread, one from
/// [`SPLIT_IN_TWO`], down to a pool each from [`SPLIT_REMOVALS`].
fn split_depth(parallel: bool, live: usize) -> usize {
    match parallel {
        true if live >= SPLIT_REMOVALS => usize::MAX,
        true if live >= SPLIT_IN_TWO => 1,
        _ => 0,
    }
}

/// The fewest live targets of a batch despawn whose pools are emptied in two halves, one join (on a world set to
/// several threads). A command apply's despawns between its hierarchy commands come in small batches (churn's
/// fallen fighters, a few at a time); what splitting them gains is in BENCHMARKS.md ("Every core").
const SPLIT_IN_TWO: usize = 4;

/// The fewest live targets of a batch despawn whose halves split again, down to a pool each.
const SPLIT_REMOVALS: usize = 1024;

/// Goes on with a panic kept by [`finish_each`], if there was one.
fn resume(panic: Option<Box<dyn std::any::Any + Send>>) {
    if let Some(panic) = panic {
        std::panic::resume_unwind(panic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_of_four_or_more_splits_on_threads() {
        assert_eq!([1, 3, 4, 1023, 1024, 5000].map(|live| split_depth(false, live)), [0; 6]);
        assert_eq!([1, 3].map(|live| split_depth(true, live)), [0, 0]);
        assert_eq!([4, 1023].map(|live| split_depth(true, live)), [1, 1]);
        assert_eq!([1024, 5000].map(|live| split_depth(true, live)), [usize::MAX; 2]);
    }

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
