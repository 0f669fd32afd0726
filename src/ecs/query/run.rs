//! How a query runs: the one storage dispatch, the loops over per-component pools (lock-step or probing) and over
//! archetype tables, one-entity and many-entity lookups, and the visitors the matches go to.

// The impls spell out `'w` to read like the trait's signatures they implement.
#![allow(clippy::needless_lifetimes)]

use super::access::Access;
use super::cache::{column_indices, table_matches, QueryCache, Shape};
use super::data::{QueryData, ReadOnlyQueryData};
use super::error::QueryError;
use super::error::MAX_QUERY_TYPES;
use super::filter::Filter;
use crate::ecs::commands::{CommandQueue, Commands};
use crate::ecs::component::ComponentId;
use crate::ecs::entity::{Entities, Entity};
use crate::ecs::storage::archetype::Archetypes;
use crate::ecs::storage::sparse_set::PackedOrder;
use crate::ecs::storage::{dispatch, split_disjoint, ErasedPool, Layout, Registry};
use crate::ecs::storage::{ensure_pools, Storage};

/// The storage a query runs on, split out of the world so the query can borrow its parts separately.
pub(crate) struct QueryContext<'w> {
    /// The allocator, to turn indices back into handles.
    pub(crate) entities: &'w Entities,
    /// The world's pools or tables.
    pub(crate) storage: &'w mut Storage,
    /// A reused buffer of the driving pool's entity handles.
    pub(crate) scratch: &'w mut Vec<Entity>,
    /// The command buffer, for loops that record.
    pub(crate) commands: &'w mut CommandQueue,
    /// The registry (a query shape met for the first time registers its types).
    pub(crate) components: &'w mut Registry,
    /// The world's query cache.
    pub(crate) queries: &'w mut QueryCache,
}

/// The query's shape from the world's cache: on its first run in this world, its types are registered, its access
/// checked and the result kept (a refusal too); every pool it names exists afterwards.
#[inline(always)]
pub(super) fn prepare<'c, Q: QueryData, F: Filter>(
    queries: &'c mut QueryCache,
    components: &mut Registry,
    storage: &mut Storage,
) -> Result<&'c mut Shape, QueryError> {
    let shape = queries.shape::<Q, F>(components);
    if let Some(error) = &shape.access.error {
        return Err(error.clone());
    }
    if let Storage::Pools { layout, pools } = storage {
        // Types registered elsewhere since (a refused query or spawn) may have no pool yet.
        if let Some(last) = components.len().checked_sub(1).filter(|&last| last >= pools.len()) {
            ensure_pools(pools, *layout, components, last as ComponentId);
        }
    }
    Ok(shape)
}

/// The one storage dispatch of a query through a mutable world.
#[inline]
pub(super) fn run_context<Q: QueryData, F: Filter, V: Visit<Q>>(
    storage: &mut Storage,
    entities: &Entities,
    scratch: &mut Vec<Entity>,
    shape: &mut Shape,
    visit: &mut V,
) {
    match storage {
        Storage::Pools { layout, pools } => {
            dispatch!(*layout, L => run::<Q, F, L, _>(pools, entities, scratch, shape, visit))
        }
        Storage::Tables(archetypes) => run_tables::<Q, F, _>(archetypes, shape, visit),
    }
}

/// The loop over a per-component layout, given the query's pools and its filter's.
///
/// Lock-step when every fetched pool is packed in the same entity order (e.g. after `sort_as`, or because they get
/// the same spawns and despawns) and no `With` pool is smaller: shared order stamps prove it in O(1) when nothing
/// changed since they were given, and in O(changes) when something did; otherwise the orders are compared whole
/// once, and found equal they get one fresh stamp. Else the smallest pool drives and the others are probed.
#[inline]
pub(super) fn run_pools<'w, Q: QueryData, L: Layout, F: Filter, V: Visit<Q>>(
    mut pools: Q::Pools<'w, L>,
    filter: F::Pools<'w, L>,
    entities: &Entities,
    scratch: &mut Vec<Entity>,
    visit: &mut V,
) {
    // A required pool (fetched or `With`) that is empty: nothing can match, so nothing to check or walk.
    let fetched = Q::min_len::<L>(&pools);
    let smallest = F::min_len::<L>(&filter).min(fetched);
    if smallest == 0 {
        return;
    }
    let mut aligned = true;
    {
        let mut first: Option<PackedOrder<'_>> = None;
        let mut checked = false;
        for order in Q::orders::<L>(&pools) {
            match (order, &first) {
                (None, _) => aligned = false,
                (Some(order), None) => first = Some(order),
                (Some(order), Some(expected)) => {
                    if !order.known_same_as(expected) {
                        checked = true;
                        aligned &= order.same_as(expected);
                    }
                }
            }
        }
        if aligned && checked {
            // Remember the verdict: later checks look only at the positions changed since.
            let orders: [Option<PackedOrder<'_>>; MAX_QUERY_TYPES] = {
                let mut all = Q::orders::<L>(&pools);
                std::array::from_fn(|_| all.next().flatten())
            };
            PackedOrder::mark_same(orders.iter().flatten());
        }
    }
    // A `With` pool smaller than the (equal-length) fetched pools drives better than walking them all.
    if aligned && F::min_len::<L>(&filter) >= fetched {
        let (rows, slices) = Q::into_packed::<L>(pools);
        let len = rows.len();
        let mut rest = Q::truncate(slices, len);
        if F::ALWAYS {
            visit.run(rows, rest);
            return;
        }
        // Runs of matching rows, each row tested once; the end of the rows ends the last run. `rest` holds the
        // rows from `cut` on.
        let (mut start, mut cut) = (0, 0);
        for row in 0..=len {
            if rows.get(row).is_some_and(|e| F::matches::<L>(&filter, e.index())) {
                continue;
            }
            if row > start {
                let (_, tail) = Q::split_front(rest, start - cut);
                let (run, tail) = Q::split_front(tail, row - start);
                rest = tail;
                visit.run(&rows[start..row], run);
                cut = row;
            }
            start = row + 1;
        }
        return;
    }

    // Probe: the smallest pool drives.
    // A fetched pool with packed arrays drives by walking them: its own values come by row, and only the other
    // pools are probed by index (the textbook movement system).
    if let Some(driver) = Q::packed_driver::<L>(&pools, smallest) {
        let (rows, mut lanes) = Q::into_lanes::<L>(pools, driver);
        for (row, &entity) in rows.iter().enumerate() {
            let index = entity.index();
            if !F::matches::<L>(&filter, index) {
                continue;
            }
            if let Some(item) = Q::lane_get::<L>(&mut lanes, row, index) {
                visit.one(entity, item);
            }
        }
        return;
    }

    // Otherwise (a `With` filter is smallest, or the layout does not pack): copy the driver's handles to the
    // scratch buffer and probe every pool by index. With no pool to drive (only optional terms and `Without`
    // filters), every live entity is a candidate.
    scratch.clear();
    if smallest == usize::MAX {
        scratch.extend(entities.iter());
    }
    let mut done = false;
    Q::collect::<L>(&pools, smallest, &mut done, entities, scratch);
    F::collect::<L>(&filter, smallest, &mut done, entities, scratch);
    for &entity in scratch.iter() {
        let index = entity.index();
        if !F::matches::<L>(&filter, index) {
            continue;
        }
        if let Some(item) = Q::probe::<L>(&mut pools, index) {
            visit.one(entity, item);
        }
    }
}

/// The loop over archetype tables: every matching table is one run of column slices. Each term's columns (all
/// tables' columns of its type) are downcast once per query; the shape's cache lists the matching tables with the
/// index of each term's column among its type's columns (brought up to date with the tables made since), so a
/// table costs an emptiness test, one indexed load per term and the visit: no set test, slot lookup or dynamic
/// call per table.
fn run_tables<Q: QueryData, F: Filter, V: Visit<Q>>(archetypes: &mut Archetypes, shape: &mut Shape, visit: &mut V) {
    shape.tables.update::<F>(archetypes, &shape.access);
    if shape.tables.found.is_empty() {
        return;
    }
    let (tables, columns) = archetypes.parts_mut();
    let Some(mut columns) = Q::columns(columns, shape.access.ids(), &shape.order[..shape.access.len]) else {
        return;
    };
    for (table, indices) in &shape.tables.found {
        let rows = tables[*table as usize].entities();
        if rows.is_empty() {
            continue;
        }
        let slices = Q::table_slices(&mut columns, indices);
        visit.run(rows, Q::truncate(slices, rows.len()));
    }
}

/// The loop over archetype tables through a shared world.
pub(super) fn run_tables_shared<Q: ReadOnlyQueryData, F: Filter, V: Visit<Q>>(
    archetypes: &Archetypes,
    access: &Access,
    visit: &mut V,
) {
    let (tables, columns) = archetypes.parts();
    let Some(mut columns) = Q::columns_shared(columns, access) else {
        return;
    };
    for table in tables.iter().filter(|table| table_matches::<F>(table, access)) {
        let slices = Q::table_slices(&mut columns, &column_indices(table, access));
        visit.run(table.entities(), Q::truncate(slices, table.len()));
    }
}

/// What a query loop hands its matches to: runs of packed rows as parallel slices (a lock-step walk, an archetype
/// table), or single entities (found by probing).
pub trait Visit<Q: QueryData + ?Sized> {
    /// One entity, found by probing.
    fn one(&mut self, entity: Entity, item: Q::Item<'_>);
    /// A run of rows: `entities[k]` owns row `k` of every slice.
    fn run(&mut self, entities: &[Entity], slices: Q::Slices<'_>);
}

/// [`Query::for_each`]'s visitor: one call per entity either way. (The per-entity method is forced inline: as a
/// plain `#[inline]` call the hash-map layout's probe loop measured 20 % slower; forcing `run` too made the
/// whole frame slower.)
pub(super) struct Each<Func>(pub(super) Func);

impl<Q: QueryData, Func: for<'a> FnMut(Entity, Q::Item<'a>)> Visit<Q> for Each<Func> {
    #[inline(always)]
    fn one(&mut self, entity: Entity, item: Q::Item<'_>) {
        (self.0)(entity, item)
    }
    #[inline]
    fn run(&mut self, entities: &[Entity], slices: Q::Slices<'_>) {
        Q::each_row(entities, slices, &mut self.0)
    }
}

/// [`Query::for_each_run`]'s visitor: runs as they come; a probed entity as a run of one.
pub(super) struct Runs<Func>(pub(super) Func);

impl<Q: QueryData, Func: for<'a> FnMut(&[Entity], Q::Slices<'a>)> Visit<Q> for Runs<Func> {
    #[inline(always)]
    fn one(&mut self, entity: Entity, item: Q::Item<'_>) {
        (self.0)(std::slice::from_ref(&entity), Q::one_slices(item))
    }
    #[inline(always)]
    fn run(&mut self, entities: &[Entity], slices: Q::Slices<'_>) {
        (self.0)(entities, slices)
    }
}

/// [`Query::for_each_with_commands`]'s visitor: one call per entity, with the recorder keyed to it.
pub(super) struct WithCommands<'q, Func> {
    pub(super) f: Func,
    pub(super) commands: Commands<'q>,
}

impl<Func> Drop for WithCommands<'_, Func> {
    /// The loop is over (or unwinding): its commands join the buffer, sorted.
    fn drop(&mut self) {
        self.commands.end_loop();
    }
}

impl<Q: QueryData, Func: for<'a, 'c> FnMut(Entity, Q::Item<'a>, &mut Commands<'c>)> Visit<Q>
    for WithCommands<'_, Func>
{
    #[inline(always)]
    fn one(&mut self, entity: Entity, item: Q::Item<'_>) {
        self.commands.visit(entity);
        (self.f)(entity, item, &mut self.commands)
    }
    #[inline]
    fn run(&mut self, entities: &[Entity], slices: Q::Slices<'_>) {
        let (f, commands) = (&mut self.f, &mut self.commands);
        Q::each_row(entities, slices, &mut |entity, item| {
            commands.visit(entity);
            f(entity, item, commands)
        })
    }
}

/// The loop over a per-component layout: the query's pools are borrowed from the world's table all at once (they
/// stay in it, so a panicking loop body leaves nothing to put back), downcast once, and handed to `run_pools`.
#[inline]
fn run<Q: QueryData, F: Filter, L: Layout, V: Visit<Q>>(
    pools: &mut [Box<dyn ErasedPool>],
    entities: &Entities,
    scratch: &mut Vec<Entity>,
    shape: &Shape,
    visit: &mut V,
) {
    let (pools, filter) = borrow_pools::<Q, F, L>(pools, shape);
    run_pools::<Q, L, F, V>(pools, filter, entities, scratch, visit);
}

/// The query's and its filter's typed pools, borrowed from the world's table all at once.
#[inline]
fn borrow_pools<'w, Q: QueryData, F: Filter, L: Layout>(
    pools: &'w mut [Box<dyn ErasedPool>],
    shape: &Shape,
) -> (Q::Pools<'w, L>, F::Pools<'w, L>) {
    let ids = shape.access.ids();
    // The query's pools, then the filter's, from the pools taken in access order.
    fn split<'w, Q: QueryData, F: Filter, L: Layout>(
        mut taken: impl Iterator<Item = &'w mut dyn ErasedPool>,
    ) -> (Q::Pools<'w, L>, F::Pools<'w, L>) {
        (Q::pools::<L>(&mut taken), F::pools::<L>(&mut taken))
    }
    // One or two pools (most systems' queries) are borrowed directly; more are split off in ascending id order.
    match *ids {
        [a] => split::<Q, F, L>(std::iter::once(pools[a as usize].as_mut())),
        [a, b] => {
            let [a, b] = pools.get_disjoint_mut([a as usize, b as usize]).expect("a query names distinct pools");
            split::<Q, F, L>([a.as_mut(), b.as_mut()].into_iter())
        }
        _ => {
            let mut picked: [Option<&'w mut Box<dyn ErasedPool>>; MAX_QUERY_TYPES] = Default::default();
            let picks = shape.order[..ids.len()].iter().map(|&k| (k as usize, ids[k as usize] as usize));
            split_disjoint(pools, picks, &mut picked);
            split::<Q, F, L>(picked.into_iter().take(ids.len()).map(|pool| pool.expect("picked above").as_mut()))
        }
    }
}

/// One entity's match through a mutable world (`None` if it has not every fetched component, or fails the
/// filter): a probe of each pool, or its table's columns at its row.
pub(super) fn one_mut<'w, Q: QueryData, F: Filter>(
    storage: &'w mut Storage,
    shape: &mut Shape,
    index: u32,
) -> Option<Q::Item<'w>> {
    match storage {
        Storage::Pools { layout, pools } => dispatch!(*layout, L => {
            let (pools, filter) = borrow_pools::<Q, F, L>(pools, shape);
            if !F::matches::<L>(&filter, index) {
                return None;
            }
            Q::probe_into::<L>(pools, index)
        }),
        Storage::Tables(archetypes) => {
            let (table, row) = archetypes.location(index)?;
            shape.tables.update::<F>(archetypes, &shape.access);
            let indices = shape.tables.indices(table)?;
            let (_, columns) = archetypes.parts_mut();
            let columns = Q::columns(columns, shape.access.ids(), &shape.order[..shape.access.len])?;
            let (slices, _) = Q::split_table(columns, &indices, &mut [0; MAX_QUERY_TYPES]);
            Some(Q::row_into(slices, row))
        }
    }
}

/// The matches of several distinct entities at once (each `None` if it does not match). Pools hand out their
/// values for all the indices at once; archetype tables are split apart in ascending order, and within a table
/// the rows are, so no value is borrowed twice and nothing needs `unsafe`.
pub(super) fn many_mut<'w, Q: QueryData, F: Filter, const N: usize>(
    storage: &'w mut Storage,
    shape: &mut Shape,
    indices: [u32; N],
) -> [Option<Q::Item<'w>>; N] {
    match storage {
        Storage::Pools { layout, pools } => dispatch!(*layout, L => {
            let (pools, filter) = borrow_pools::<Q, F, L>(pools, shape);
            let mut k = 0;
            Q::probe_many::<L, N>(pools, indices).map(|item| {
                let passes = F::matches::<L>(&filter, indices[k]);
                k += 1;
                item.filter(|_| passes)
            })
        }),
        Storage::Tables(archetypes) => {
            let mut out: [Option<Q::Item<'w>>; N] = std::array::from_fn(|_| None);
            shape.tables.update::<F>(archetypes, &shape.access);
            // (table, row, k) of each entity that has a row, sorted.
            let mut at: [(u32, usize, usize); N] = std::array::from_fn(|k| match archetypes.location(indices[k]) {
                Some((table, row)) => (table, row, k),
                None => (u32::MAX, 0, k),
            });
            at.sort_unstable();
            let (_, columns) = archetypes.parts_mut();
            let Some(mut columns) = Q::columns(columns, shape.access.ids(), &shape.order[..shape.access.len]) else {
                return out;
            };
            // Tables in ascending order take ascending columns of every type: each table's are split off the front
            // of what is left.
            let (mut bases, mut i) = ([0; MAX_QUERY_TYPES], 0);
            while i < N && at[i].0 != u32::MAX {
                let number = at[i].0;
                let mut rest = None;
                if let Some(indices) = shape.tables.indices(number) {
                    let (slices, tail) = Q::split_table(columns, &indices, &mut bases);
                    columns = tail;
                    rest = Some(slices);
                }
                let mut consumed = 0;
                while i < N && at[i].0 == number {
                    let (_, row, k) = at[i];
                    if let Some(slices) = rest.take() {
                        let (_, tail) = Q::split_front(slices, row - consumed);
                        let (one, tail) = Q::split_front(tail, 1);
                        out[k] = Some(Q::row_into(one, 0));
                        rest = Some(tail);
                        consumed = row + 1;
                    }
                    i += 1;
                }
            }
            out
        }
    }
}
