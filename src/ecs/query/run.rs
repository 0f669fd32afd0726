//! How a query runs: what the world lends it, the one storage dispatch, the loops over per-component pools
//! (lock-step or probing) and over archetype tables, one-entity and many-entity lookups, and the visitors the
//! matches go to. A mutable and a shared world take the same path; only what they lend differs ([`Lent`]).

// The impls spell out `'w` to read like the trait's signatures they implement.
#![allow(clippy::needless_lifetimes)]

use super::access::Lookup;
use super::batch::{cut_gathered, cut_run, Batch};
use super::cache::{column_indices, set_matches, QueryCache, Shape};
use super::data::{QueryData, TermPool};
use super::error::{QueryError, MAX_QUERY_TYPES};
use super::filter::Filter;
use super::term::Lent;
use super::Listed;
use crate::ecs::change::{ChangeView, Changes};
use crate::ecs::commands::{CommandQueue, Commands};
use crate::ecs::component::{ComponentId, ComponentSet};
use crate::ecs::entity::{Entities, Entity};
use crate::ecs::storage::archetype::{Archetypes, Table, TypeColumns};
use crate::ecs::storage::sparse_set::PackedOrder;
use crate::ecs::storage::{dispatch, split_disjoint, ErasedPool, Layout, PoolLayout, Registry};
use crate::ecs::storage::{Loan, Storage};
use crate::ecs::world::World;

/// A mutable world's parts a query borrows apart: its storage, allocator, scratch buffer, command buffer, registry
/// and query cache.
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
    /// The pieces' command buffers of parallel loops, reused.
    pub(crate) pieces: &'w mut Vec<CommandQueue>,
    /// The types written since the kept handles were last settled ([`crate::ecs::holders`]).
    pub(crate) written: &'w mut ComponentSet,
    /// Change detection's ticks and tracks, and a reused list of the rows a query stamps.
    pub(crate) changes: &'w mut Changes,
    pub(crate) change_rows: &'w mut Vec<u32>,
}

/// What a query runs on, from a mutable world or a shared one: the storage lent exclusively or shared, the
/// allocator, the query's shape (cached in a mutable world, worked out on the spot through a shared one) and a
/// scratch buffer (the world's, or a new one). Through a shared world the last two live only as long as the run,
/// `'s`; what the query hands out borrows only the storage, `'w`.
#[doc(hidden)]
pub struct Parts<'w, 's> {
    pub(super) entities: &'w Entities,
    pub(super) storage: Store<'w>,
    pub(super) shape: &'s mut Shape,
    pub(super) scratch: &'s mut Vec<Entity>,
    /// What change filters compare against.
    pub(super) changes: ChangeView<'w>,
}

impl Parts<'_, '_> {
    /// The parts again, for a shorter borrow.
    pub(super) fn reborrow(&mut self) -> Parts<'_, '_> {
        let storage = match &mut self.storage {
            Store::Whole(Lent::Exclusive(storage)) => Store::Whole(Lent::Exclusive(&mut **storage)),
            Store::Whole(Lent::Shared(storage)) => Store::Whole(Lent::Shared(*storage)),
            Store::Split(storage, loaned) => {
                Store::Split(storage, loaned.each_mut().map(|loan| loan.as_mut().map(Lent::reborrow)))
            }
        };
        Parts { entities: self.entities, storage, shape: self.shape, scratch: self.scratch, changes: self.changes }
    }
}

/// The parts of a mutable world for query `(Q, F)`, and its command buffer. The shape comes from the world's
/// cache: on its first run in this world, its types are registered, its access checked and the result kept (a
/// refusal too); every pool it names exists afterwards.
#[inline(always)]
pub(super) fn exclusive<'w, Q: QueryData, F: Filter>(
    world: &'w mut World,
) -> Result<(Parts<'w, 'w>, &'w mut CommandQueue), QueryError> {
    exclusive_pieces::<Q, F>(world).map(|(parts, commands, _)| (parts, commands))
}

/// [`exclusive`], and the world's reused command buffers for the pieces of a parallel loop.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub(super) fn exclusive_pieces<'w, Q: QueryData, F: Filter>(
    world: &'w mut World,
) -> Result<(Parts<'w, 'w>, &'w mut CommandQueue, &'w mut Vec<CommandQueue>), QueryError> {
    let QueryContext { entities, storage, scratch, commands, components, queries, pieces, written, changes, .. } =
        world.query_context();
    let shape = queries.shape::<Q, F>(components);
    if let Some(error) = shape.access.refusal() {
        return Err(error.clone());
    }
    // A term written here may receive a deferred handle.
    for id in shape.access.writes() {
        written.insert(id);
    }
    storage.catch_up(components);
    let storage = Store::Whole(Lent::Exclusive(storage));
    let changes = ChangeView { since: changes.last_clear, changes, components, world: None };
    Ok((Parts { entities, storage, shape, scratch, changes }, commands, pieces))
}

/// Runs `body` on the parts of a shared world for query `(Q, F)`: its shape is worked out now, registering nothing
/// (a type the world never met has no id and no pool).
pub(super) fn shared<'w, Q: QueryData, F: Filter, R>(
    world: &'w World,
    body: impl for<'s> FnOnce(Parts<'w, 's>) -> R,
) -> Result<R, QueryError> {
    let (entities, components, storage) = world.query_parts();
    let changes = world.change_view(None);
    let mut shape = Shape::new::<Q, F>(&mut Lookup(components));
    if let Some(error) = shape.access.refusal() {
        return Err(error.clone());
    }
    // Only a probing loop over an index-only layout copies handles: then this buffer grows.
    let mut scratch = Vec::new();
    let storage = Store::Whole(Lent::Shared(storage));
    Ok(body(Parts { entities, storage, shape: &mut shape, scratch: &mut scratch, changes }))
}

/// The loans a system's query borrows for one run: the pools (or columns) of types moved out of the world for the
/// system, each at most once, in no particular order.
pub(crate) type Loaned<'w> = [Option<Lent<'w, Loan>>; MAX_QUERY_TYPES];

/// What a query's storage is: the world's, lent whole (exclusively or shared), or split: the world's shared, except
/// the types a system holds on loan (moved out of the world, so the system may write them while other systems read
/// the rest of the world on other threads).
pub(crate) enum Store<'w> {
    Whole(Lent<'w, Storage>),
    Split(&'w Storage, Loaned<'w>),
}

/// The pools of a per-component layout as lent: whole, or the world's shared with some on loan.
pub(super) enum PoolsLent<'w> {
    Whole(Lent<'w, [Box<dyn ErasedPool>]>),
    Split(&'w [Box<dyn ErasedPool>], Loaned<'w>),
}

/// The archetype tables as lent: whole, or shared with some types' columns on loan.
pub(super) enum TablesLent<'w> {
    Whole(Lent<'w, Archetypes>),
    Split(&'w Archetypes, Loaned<'w>),
}

impl TablesLent<'_> {
    pub(super) fn as_ref(&self) -> &Archetypes {
        match self {
            TablesLent::Whole(archetypes) => archetypes.as_ref(),
            TablesLent::Split(archetypes, _) => archetypes,
        }
    }
}

/// Every table's columns of each type as lent.
pub(super) enum ColumnsLent<'w> {
    Whole(Lent<'w, [TypeColumns]>),
    Split(&'w [TypeColumns], Loaned<'w>),
}

/// The storage as it is lent, opened: pools of one layout, or archetype tables.
pub(super) enum Lending<'w> {
    Pools(PoolLayout, PoolsLent<'w>),
    Tables(TablesLent<'w>),
}

#[inline(always)]
pub(super) fn lending(storage: Store<'_>) -> Lending<'_> {
    match storage {
        Store::Whole(Lent::Exclusive(Storage::Pools { layout, pools })) => {
            Lending::Pools(*layout, PoolsLent::Whole(Lent::Exclusive(pools)))
        }
        Store::Whole(Lent::Shared(Storage::Pools { layout, pools })) => {
            Lending::Pools(*layout, PoolsLent::Whole(Lent::Shared(pools)))
        }
        Store::Whole(Lent::Exclusive(Storage::Tables(archetypes))) => {
            Lending::Tables(TablesLent::Whole(Lent::Exclusive(archetypes)))
        }
        Store::Whole(Lent::Shared(Storage::Tables(archetypes))) => {
            Lending::Tables(TablesLent::Whole(Lent::Shared(archetypes)))
        }
        Store::Split(Storage::Pools { layout, pools }, loaned) => {
            Lending::Pools(*layout, PoolsLent::Split(pools, loaned))
        }
        Store::Split(Storage::Tables(archetypes), loaned) => Lending::Tables(TablesLent::Split(archetypes, loaned)),
    }
}

/// Takes the loan of type `id` out of `loaned`, if the system holds it.
#[inline]
fn take_loan<'w>(loaned: &mut Loaned<'w>, id: u32) -> Option<Lent<'w, Loan>> {
    loaned.iter_mut().find(|loan| loan.as_ref().is_some_and(|loan| loan.as_ref().id() == id))?.take()
}

/// Runs query `(Q, F)` on `parts`, handing the matches to `visit` in the walk's order.
#[inline]
pub(super) fn run<Q: QueryData, F: Filter, V: Visit<Q>>(parts: Parts<'_, '_>, visit: &mut V) {
    let Parts { entities, storage, shape, scratch, changes } = parts;
    refresh::<F>(&storage, shape);
    walk::<Q, F, _>(entities, storage, shape, scratch, changes, &mut Serial(visit));
}

/// Where a walk hands what it finds ([`walk`]): each strategy's material, once per query run (a table's rows once per
/// table). The serial loop ([`Serial`]), the parallel loop ([`super::par`]) and the batches ([`Cut`]) are the
/// sinks; a new strategy is a branch of [`walk`] and a method here.
pub(super) trait Sink<'w, Q: QueryData> {
    /// Rows of pools packed in the same order, walked in lock-step (the filter not yet applied): `rows[k]` owns row
    /// `k` of every slice, which hold exactly as many rows.
    fn lock_step<L: Layout, F: Filter>(&mut self, filter: &F::Pools<'w, L>, rows: &'w [Entity], slices: Q::Slices<'w>);
    /// The fetched term at `driver` drives by walking its packed arrays ([`QueryData::into_lanes`]); the other
    /// pools are probed. `entities` and `scratch` are there to copy the driver's handles.
    fn lanes<L: Layout, F: Filter>(
        &mut self,
        filter: &F::Pools<'w, L>,
        pools: Q::Pools<'w, L>,
        driver: usize,
        entities: &Entities,
        scratch: &mut Vec<Entity>,
    );
    /// The candidates `found`, each to be tested by the filter and probed in every pool.
    fn probe<L: Layout, F: Filter>(&mut self, filter: &F::Pools<'w, L>, pools: Q::Pools<'w, L>, found: &[Entity]);
    /// A matching archetype table's rows, none empty: `rows[k]` owns row `k` of every slice.
    fn table(&mut self, rows: &'w [Entity], slices: Q::Slices<'w>);
    /// Matches gathered one by one (a change filter's rows on archetype tables), in handle order.
    fn gathered(&mut self, items: Vec<(Entity, Q::Item<'w>)>);
}

/// The one walk of query `(Q, F)` over `storage`: the storage dispatch, the strategy [`plan`] picks for a
/// per-component layout, or the matching archetype tables in order, handed to `sink`. The shape's tables must be up
/// to date ([`refresh`]).
#[inline]
pub(super) fn walk<'w, Q: QueryData, F: Filter, S: Sink<'w, Q>>(
    entities: &Entities,
    storage: Store<'w>,
    shape: &Shape,
    scratch: &mut Vec<Entity>,
    changes: ChangeView<'w>,
    sink: &mut S,
) {
    match lending(storage) {
        Lending::Pools(layout, pools) => dispatch!(layout, L => {
            let Some((pools, filter)) = take_pools::<Q, F, L>(pools, shape, changes) else { return };
            // A change filter drives: its rows, in handle order, every pool probed.
            if F::CHANGES {
                if changed_candidates::<F>(changes, entities, scratch) {
                    sink.probe::<L, F>(&filter, pools, scratch);
                }
                return;
            }
            match plan::<Q, L, F>(&pools, &filter) {
                Walk::Nothing => {}
                Walk::LockStep => {
                    let (rows, slices) = Q::into_packed::<L>(pools);
                    let rows = rows.unwrap_or(&[]);
                    // Cut to the rows' length, so the loops' bounds checks fold away.
                    sink.lock_step::<L, F>(&filter, rows, Q::split_front(slices, rows.len()).0);
                }
                Walk::Lanes(driver) => sink.lanes::<L, F>(&filter, pools, driver, entities, scratch),
                // A `With` filter is smallest, or the layout does not pack: the driver's handles are copied to the
                // scratch buffer and every pool is probed by index.
                Walk::Probe(smallest) => {
                    candidates::<Q, L, F>(&pools, &filter, smallest, entities, scratch);
                    sink.probe::<L, F>(&filter, pools, scratch);
                }
            }
        }),
        Lending::Tables(archetypes) => {
            if shape.tables.found.is_empty() {
                return;
            }
            if F::CHANGES {
                if changed_candidates::<F>(changes, entities, scratch) {
                    changed_rows::<Q, F, S>(archetypes, shape, scratch, changes, sink);
                }
                return;
            }
            let (tables, columns) = lend_columns(archetypes);
            let Some(mut columns) = take_columns::<Q>(columns, shape) else { return };
            // The matching tables come in ascending order, so each one's columns are split off the front of the
            // rest.
            let mut bases = [0; MAX_QUERY_TYPES];
            for (table, indices) in &shape.tables.found {
                let (slices, tail) = Q::split_table(columns, indices, &mut bases);
                columns = tail;
                let rows = tables[*table as usize].entities();
                if let Some(slices) = slices.filter(|_| !rows.is_empty()) {
                    sink.table(rows, Q::split_front(slices, rows.len()).0);
                }
            }
        }
    }
}

/// Fills `out` with the live entities a change filter of `F` offers (the one offering the fewest), in handle order;
/// whether there are any.
fn changed_candidates<F: Filter>(changes: ChangeView<'_>, entities: &Entities, out: &mut Vec<Entity>) -> bool {
    let rows = F::rows(changes);
    let fewest = F::row_candidates(&rows, 0, None);
    out.clear();
    if fewest > 0 {
        F::row_candidates(&rows, fewest, Some((&mut false, entities, out)));
    }
    !out.is_empty()
}

/// The archetype walk of a change filter: the candidates `found` (in handle order) that pass it and sit in a
/// matching table, their values gathered (tables in ascending order, as `many` splits them) and handed over in
/// handle order.
fn changed_rows<'w, Q: QueryData, F: Filter, S: Sink<'w, Q>>(
    archetypes: TablesLent<'w>,
    shape: &Shape,
    found: &[Entity],
    changes: ChangeView<'w>,
    sink: &mut S,
) {
    let rows = F::rows(changes);
    let matching = &shape.tables.found;
    // (position of the table among the matching ones, row, entity), sorted.
    let mut at: Vec<(usize, usize, Entity)> = found
        .iter()
        .filter(|entity| F::row_passes(&rows, entity.index()))
        .filter_map(|&entity| {
            let (table, row) = archetypes.as_ref().location(entity.index())?;
            let position = matching.binary_search_by_key(&table, |(number, _)| *number).ok()?;
            Some((position, row, entity))
        })
        .collect();
    at.sort_unstable_by_key(|&(position, row, _)| (position, row));
    let (_, columns) = lend_columns(archetypes);
    let Some(mut columns) = take_columns::<Q>(columns, shape) else { return };
    let (mut items, mut bases, mut i) = (Vec::with_capacity(at.len()), [0; MAX_QUERY_TYPES], 0);
    for (position, (_, indices)) in matching.iter().enumerate() {
        if i == at.len() {
            break;
        }
        let (slices, tail) = Q::split_table(columns, indices, &mut bases);
        columns = tail;
        let (mut rest, mut consumed) = (slices, 0);
        while i < at.len() && at[i].0 == position {
            let (_, row, entity) = at[i];
            if let Some(slices) = rest.take() {
                let (_, tail) = Q::split_front(slices, row - consumed);
                let (one, tail) = Q::split_front(tail, 1);
                items.push((entity, Q::row(one, 0)));
                (rest, consumed) = (Some(tail), row + 1);
            }
            i += 1;
        }
    }
    items.sort_unstable_by_key(|(entity, _)| entity.index());
    sink.gathered(items);
}

/// The query's and its filter's typed pools, taken from the world's table all at once (they stay in it, so a
/// panicking loop body leaves nothing to put back) and downcast once; `None` if no entity can match.
#[inline]
pub(super) fn take_pools<'w, Q: QueryData, F: Filter, L: Layout>(
    pools: PoolsLent<'w>,
    shape: &Shape,
    changes: ChangeView<'w>,
) -> Option<(Q::Pools<'w, L>, F::Pools<'w, L>)> {
    // The query's pools, then the filter's, from the pools lent in access order. (Forced inline: each caller lends
    // one way, and inlined the other way's checks fold away.)
    #[inline(always)]
    fn take<'w, Q: QueryData, F: Filter, L: Layout>(
        mut lent: impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
        changes: ChangeView<'w>,
    ) -> Option<(Q::Pools<'w, L>, F::Pools<'w, L>)> {
        let pools = Q::pools::<L>(&mut lent);
        let filter = F::pools::<L>(&mut lent, changes);
        Some((pools?, filter?))
    }
    let ids = shape.access.ids();
    let pools = match pools {
        // A type the world never met (`ABSENT`) has no pool.
        PoolsLent::Whole(Lent::Shared(pools)) => {
            return take::<Q, F, L>(
                ids.iter().map(|&id| pools.get(id as usize).map(|pool| Lent::Shared(&**pool))),
                changes,
            )
        }
        // A type on loan comes from the loan; the others are read where they are.
        PoolsLent::Split(pools, mut loaned) => {
            return take::<Q, F, L>(
                ids.iter().map(move |&id| match take_loan(&mut loaned, id) {
                    Some(Lent::Exclusive(Loan::Pool(_, pool))) => Some(Lent::Exclusive(&mut **pool)),
                    Some(Lent::Shared(Loan::Pool(_, pool))) => Some(Lent::Shared(&**pool)),
                    Some(_) => unreachable!("a pool layout lends pools"),
                    None => pools.get(id as usize).map(|pool| Lent::Shared(&**pool)),
                }),
                changes,
            )
        }
        PoolsLent::Whole(Lent::Exclusive(pools)) => pools,
    };
    let lend = |pool: &'w mut Box<dyn ErasedPool>| Some(Lent::Exclusive(&mut **pool));
    // One or two pools (most systems' queries) are borrowed directly; more are split off in ascending id order.
    match *ids {
        [a] => take::<Q, F, L>(std::iter::once(lend(&mut pools[a as usize])), changes),
        [a, b] => {
            let pair = pools.get_disjoint_mut([a as usize, b as usize]).expect("a query names distinct pools");
            take::<Q, F, L>(pair.map(lend).into_iter(), changes)
        }
        _ => {
            let mut picked: [Option<&'w mut Box<dyn ErasedPool>>; MAX_QUERY_TYPES] = Default::default();
            let picks = shape.order[..ids.len()].iter().map(|&k| (k as usize, ids[k as usize] as usize));
            split_disjoint(pools, picks, &mut picked);
            take::<Q, F, L>(picked.into_iter().take(ids.len()).map(|pool| lend(pool.expect("picked above"))), changes)
        }
    }
}

/// The tables, and every table's columns of each type as lent.
#[inline]
pub(super) fn lend_columns(archetypes: TablesLent<'_>) -> (&[Table], ColumnsLent<'_>) {
    match archetypes {
        TablesLent::Whole(Lent::Exclusive(archetypes)) => {
            let (tables, columns) = archetypes.parts_mut();
            (tables, ColumnsLent::Whole(Lent::Exclusive(columns)))
        }
        TablesLent::Whole(Lent::Shared(archetypes)) => {
            let (tables, columns) = archetypes.parts();
            (tables, ColumnsLent::Whole(Lent::Shared(columns)))
        }
        TablesLent::Split(archetypes, loaned) => {
            let (tables, columns) = archetypes.parts();
            (tables, ColumnsLent::Split(columns, loaned))
        }
    }
}

/// The fetched terms' columns (all tables' columns of each term's type), taken all at once and downcast once;
/// `None` if a required term's type is in no table.
#[inline]
pub(super) fn take_columns<'w, Q: QueryData>(columns: ColumnsLent<'w>, shape: &Shape) -> Option<Q::Columns<'w>> {
    let ids = &shape.access.ids()[..shape.access.fetched];
    match columns {
        // A type the world never met (`ABSENT`), or that no table holds yet, has no columns.
        ColumnsLent::Whole(Lent::Shared(columns)) => {
            Q::columns(&mut ids.iter().map(|&id| columns.get(id as usize)?.as_deref().map(Lent::Shared)))
        }
        // A type on loan comes from the loan; the others are read where they are.
        ColumnsLent::Split(columns, mut loaned) => {
            Q::columns(&mut ids.iter().map(|&id| match take_loan(&mut loaned, id) {
                Some(Lent::Exclusive(Loan::Columns(_, lent))) => lent.as_deref_mut().map(Lent::Exclusive),
                Some(Lent::Shared(Loan::Columns(_, lent))) => lent.as_deref().map(Lent::Shared),
                Some(_) => unreachable!("archetype tables lend columns"),
                None => columns.get(id as usize)?.as_deref().map(Lent::Shared),
            }))
        }
        ColumnsLent::Whole(Lent::Exclusive(columns)) => {
            let lend = |columns: Option<&'w mut TypeColumns>| columns?.as_deref_mut().map(Lent::Exclusive);
            // One or two types (most systems' queries) are borrowed directly; more are split off in ascending id
            // order.
            match *ids {
                [a] => return Q::columns(&mut std::iter::once(lend(columns.get_mut(a as usize)))),
                [a, b] if (a as usize) < columns.len() && (b as usize) < columns.len() => {
                    let pair =
                        columns.get_disjoint_mut([a as usize, b as usize]).expect("a query names distinct types");
                    return Q::columns(&mut pair.map(Some).into_iter().map(lend));
                }
                _ => {}
            }
            let mut picked: [Option<&'w mut TypeColumns>; MAX_QUERY_TYPES] = Default::default();
            let bound = columns.len();
            let picks = shape.order[..shape.access.len]
                .iter()
                .map(|&k| (k as usize, shape.access.ids()[k as usize] as usize))
                .filter(|&(k, id)| k < ids.len() && id < bound);
            split_disjoint(columns, picks, &mut picked);
            Q::columns(&mut picked.into_iter().take(ids.len()).map(lend))
        }
    }
}

/// How a per-component layout's loop walks the pools (see [`plan`]).
pub(super) enum Walk {
    /// A required pool is empty: nothing can match.
    Nothing,
    /// Every fetched pool is packed in the same order: their value arrays are walked in lock-step.
    LockStep,
    /// The fetched term at this position drives by walking its packed arrays; the other pools are probed.
    Lanes(usize),
    /// The handles of the smallest pool of this length (`usize::MAX`: of every live entity) drive, and every
    /// pool is probed.
    Probe(usize),
}

/// Picks the walk for query `Q` over `pools`, filtered by `filter`.
///
/// Lock-step when every fetched pool is packed in the same entity order (e.g. after `sort_as`, or because they get
/// the same spawns and despawns) and no `With` pool is smaller: shared order stamps prove it in O(1) when nothing
/// changed since they were given, and in O(changes) when something did; otherwise the orders are compared whole
/// once, and found equal they get one fresh stamp. Else the smallest pool drives and the others are probed.
#[inline(always)]
pub(super) fn plan<Q: QueryData, L: Layout, F: Filter>(pools: &Q::Pools<'_, L>, filter: &F::Pools<'_, L>) -> Walk {
    // The smallest fetched pool, and the smallest packed one (the first of equals).
    let (mut fetched, mut packed, mut position) = (usize::MAX, None, 0);
    Q::each_term::<L>(pools, &mut |term| {
        fetched = fetched.min(term.len);
        if term.order.is_some() && packed.is_none_or(|(len, _)| term.len < len) {
            packed = Some((term.len, position));
        }
        position += 1;
    });
    // A required pool (fetched or `With`) that is empty: nothing can match, so nothing to check or walk.
    let smallest = F::min_len::<L>(filter).min(fetched);
    if smallest == 0 {
        return Walk::Nothing;
    }
    let aligned = packed_alike::<Q, L>(pools).is_some();
    // A `With` pool smaller than the (equal-length) fetched pools drives better than walking them all.
    if aligned && F::min_len::<L>(filter) >= fetched {
        return Walk::LockStep;
    }
    // A fetched pool with packed arrays drives by walking them if it is the smallest.
    match packed.filter(|&(len, _)| len == smallest) {
        Some((_, driver)) => Walk::Lanes(driver),
        None => Walk::Probe(smallest),
    }
}

/// The first fetched pool's packed order, if every fetched pool of `pools` is packed, in one order (so rows at one
/// position hold one entity's values): what a lock-step walk needs. A verdict found by comparing is remembered (see
/// [`PackedOrder::mark_same`]).
#[inline]
pub(super) fn packed_alike<'a, Q: QueryData, L: Layout>(pools: &'a Q::Pools<'_, L>) -> Option<PackedOrder<'a>> {
    let (mut first, mut aligned, mut checked) = (None::<PackedOrder<'_>>, true, false);
    Q::each_term::<L>(pools, &mut |term| match (term.order, &first) {
        (None, _) => aligned = false,
        (Some(order), None) => first = Some(order),
        (Some(order), Some(expected)) => {
            if aligned && !order.known_same_as(expected) {
                checked = true;
                aligned = order.same_as(expected);
            }
        }
    });
    // No packed term at all (`()`, or only optional terms): the entities come from a driver.
    aligned &= first.is_some();
    if aligned && checked {
        // Remember the verdict: later checks look only at the positions changed since.
        mark_same::<Q, L>(pools);
    }
    first.filter(|_| aligned)
}

/// A lock-step walk's rows handed to `emit` in runs between the rows the filter refuses (all of them in one run when
/// the filter passes every row), each row tested once. The serial and the parallel loops' one copy of it.
#[inline(always)]
pub(super) fn lock_step_runs<'r, 'w, Q: QueryData, L: Layout, F: Filter>(
    filter: &F::Pools<'_, L>,
    rows: &'r [Entity],
    slices: Q::Slices<'w>,
    mut emit: impl FnMut(&'r [Entity], Q::Slices<'w>),
) {
    if F::ALWAYS {
        emit(rows, slices);
        return;
    }
    // The end of the rows ends the last run. `rest` holds the rows from `cut` on.
    let (mut rest, mut start, mut cut) = (slices, 0, 0);
    for row in 0..=rows.len() {
        if rows.get(row).is_some_and(|e| F::matches::<L>(filter, e.index())) {
            continue;
        }
        if row > start {
            let (_, tail) = Q::split_front(rest, start - cut);
            let (run, tail) = Q::split_front(tail, row - start);
            rest = tail;
            emit(&rows[start..row], run);
            cut = row;
        }
        start = row + 1;
    }
}

/// A packed driver's rows (numbered from `first`): each passing the filter and holding every term goes to `emit`,
/// the driver's value by row and the others probed. The serial and the parallel loops' one copy of it.
#[inline(always)]
pub(super) fn lane_rows<Q: QueryData, L: Layout, F: Filter>(
    filter: &F::Pools<'_, L>,
    rows: &[Entity],
    first: usize,
    lanes: &mut Q::Lanes<'_, L>,
    mut emit: impl FnMut(Entity, Q::Item<'_>),
) {
    for (row, &entity) in rows.iter().enumerate() {
        let index = entity.index();
        if !F::matches::<L>(filter, index) {
            continue;
        }
        if let Some(item) = Q::lane_get::<L>(lanes, first + row, index) {
            emit(entity, item);
        }
    }
}

/// The candidates `found`: each passing the filter and holding every term goes to `emit`, every pool probed. The
/// serial and the parallel loops' one copy of it.
#[inline(always)]
pub(super) fn probe_rows<Q: QueryData, L: Layout, F: Filter>(
    filter: &F::Pools<'_, L>,
    found: &[Entity],
    pools: &mut Q::Pools<'_, L>,
    mut emit: impl FnMut(Entity, Q::Item<'_>),
) {
    for &entity in found {
        let index = entity.index();
        if !F::matches::<L>(filter, index) {
            continue;
        }
        if let Some(item) = Q::probe::<L>(Q::reborrow::<L>(pools), index) {
            emit(entity, item);
        }
    }
}

/// Fills `out` with the handles of the smallest pool of length `smallest`, fetched or `With`; with no pool to
/// drive (`usize::MAX`: only optional terms and `Without` filters), every live entity is a candidate. (Out of
/// line: a map's key walk compiles tighter on its own than inlined into the loop's function.)
#[inline(never)]
pub(super) fn candidates<Q: QueryData, L: Layout, F: Filter>(
    pools: &Q::Pools<'_, L>,
    filter: &F::Pools<'_, L>,
    smallest: usize,
    entities: &Entities,
    out: &mut Vec<Entity>,
) {
    out.clear();
    if smallest == usize::MAX {
        out.extend(entities.iter());
    } else if let Some(driver) = term_position::<Q, L>(pools, |term| term.len == smallest) {
        Q::collect::<L>(pools, driver, entities, out);
    } else {
        F::collect::<L>(filter, smallest, &mut false, entities, out);
    }
}

/// Query `(Q, F)`'s matches on `parts`, cut into batches of at most `size` rows (see [`batches_of`]).
pub(super) fn batches<'w, Q: QueryData, F: Filter>(parts: Parts<'w, '_>, size: usize) -> Vec<Batch<'w, Q>> {
    let Parts { entities, storage, shape, scratch, changes } = parts;
    refresh::<F>(&storage, shape);
    batches_of::<Q, F>(entities, storage, shape, scratch, changes, size)
}

/// Brings the shape's list of matching archetype tables up to date (nothing to do on the other layouts).
#[inline]
pub(super) fn refresh<F: Filter>(storage: &Store<'_>, shape: &mut Shape) {
    let storage = match storage {
        Store::Whole(lent) => lent.as_ref(),
        Store::Split(storage, _) => storage,
    };
    if let Storage::Tables(archetypes) = storage {
        shape.tables.update::<F>(archetypes, &shape.access);
    }
}

/// Query `(Q, F)`'s matches, cut into batches of at most `size` rows (see [`Cut`]). The shape's tables must be up
/// to date ([`refresh`]).
pub(super) fn batches_of<'w, Q: QueryData, F: Filter>(
    entities: &Entities,
    storage: Store<'w>,
    shape: &Shape,
    scratch: &mut Vec<Entity>,
    changes: ChangeView<'w>,
    size: usize,
) -> Vec<Batch<'w, Q>> {
    let mut cut = Cut { size, out: Vec::new() };
    walk::<Q, F, _>(entities, storage, shape, scratch, changes, &mut cut);
    cut.out
}

/// The sink of the batches: a run (lock-step pools, between rows a filter refuses; an archetype table) is cut into
/// slices; any other match is gathered (the pools hand out every value asked for at once,
/// [`QueryData::probe_each`]) and the list cut.
struct Cut<'w, Q: QueryData> {
    size: usize,
    out: Vec<Batch<'w, Q>>,
}

impl<'w, Q: QueryData> Sink<'w, Q> for Cut<'w, Q> {
    fn lock_step<L: Layout, F: Filter>(&mut self, filter: &F::Pools<'w, L>, rows: &'w [Entity], slices: Q::Slices<'w>) {
        let Cut { size, out } = self;
        lock_step_runs::<Q, L, F>(filter, rows, slices, |rows, run| cut_run::<Q>(rows, run, *size, out));
    }
    fn lanes<L: Layout, F: Filter>(
        &mut self,
        filter: &F::Pools<'w, L>,
        pools: Q::Pools<'w, L>,
        driver: usize,
        entities: &Entities,
        scratch: &mut Vec<Entity>,
    ) {
        scratch.clear();
        Q::collect::<L>(&pools, driver, entities, scratch);
        self.probe::<L, F>(filter, pools, scratch);
    }
    fn probe<L: Layout, F: Filter>(&mut self, filter: &F::Pools<'w, L>, pools: Q::Pools<'w, L>, found: &[Entity]) {
        cut_gathered::<Q>(gather::<Q, L, F>(pools, filter, found), self.size, &mut self.out);
    }
    fn table(&mut self, rows: &'w [Entity], slices: Q::Slices<'w>) {
        cut_run::<Q>(rows, slices, self.size, &mut self.out);
    }
    fn gathered(&mut self, items: Vec<(Entity, Q::Item<'w>)>) {
        cut_gathered::<Q>(items, self.size, &mut self.out);
    }
}

/// The matches among `candidates` (each passing the filter and holding every fetched term), their values all
/// borrowed at once.
fn gather<'w, Q: QueryData, L: Layout, F: Filter>(
    pools: Q::Pools<'w, L>,
    filter: &F::Pools<'w, L>,
    candidates: &[Entity],
) -> Vec<(Entity, Q::Item<'w>)> {
    let passing: Vec<Entity> = candidates.iter().copied().filter(|e| F::matches::<L>(filter, e.index())).collect();
    let indices: Vec<u32> = passing.iter().map(|e| e.index()).collect();
    let items = Q::probe_each::<L>(pools, &indices);
    let mut out = Vec::with_capacity(items.len());
    out.extend(passing.into_iter().zip(items).filter_map(|(entity, item)| Some((entity, item?))));
    out
}

/// Gives every packed term's pool one fresh order stamp: they were just found packed alike.
#[cold]
fn mark_same<Q: QueryData, L: Layout>(pools: &Q::Pools<'_, L>) {
    let (mut orders, mut k) = (<[Option<PackedOrder<'_>>; MAX_QUERY_TYPES]>::default(), 0);
    Q::each_term::<L>(pools, &mut |term| {
        orders[k] = term.order;
        k += 1;
    });
    PackedOrder::mark_same(orders.iter().flatten());
}

/// The position of the first term whose pool passes `test`.
fn term_position<Q: QueryData, L: Layout>(pools: &Q::Pools<'_, L>, test: impl Fn(&TermPool) -> bool) -> Option<usize> {
    let (mut found, mut k) = (None, 0);
    Q::each_term::<L>(pools, &mut |term| {
        if found.is_none() && test(&term) {
            found = Some(k);
        }
        k += 1;
    });
    found
}

/// Stamps the rows of query `(Q, F)` that a loop will hand out as `&mut` of a tracked type (or only those `rows`
/// names, see [`Stamp`]), before the loop: the world's tracks get them at once, so the loop's own change filters,
/// and every reader after it, see them. The shape is the world's cached one, or `shape`. Nothing to do if the
/// query writes no tracked type (or is refused: the loop says why).
#[inline(never)]
pub(super) fn stamp_rows<Q: QueryData, F: Filter>(world: &mut World, shape: Option<&mut Shape>, rows: Stamp<'_>) {
    let QueryContext { entities, storage, scratch, components, queries, changes, change_rows, .. } =
        world.query_context();
    let shape = match shape {
        Some(shape) => shape,
        None => queries.shape::<Q, F>(components),
    };
    let (mut ids, mut n) = tracked_writes(changes, shape);
    if n == 0 || shape.access.refusal().is_some() {
        return;
    }
    if let Stamp::Loop = rows {
        // A loop: the exact types are compared whole afterwards, their rows need no list.
        n = changes.write_whole(&mut ids, n, changes.tick());
        if n == 0 {
            return;
        }
    }
    storage.catch_up(components);
    change_rows.clear();
    let view = ChangeView { changes: &*changes, components: &*components, since: changes.last_clear, world: None };
    let parts = Parts { entities, storage: Store::Whole(Lent::Exclusive(storage)), shape, scratch, changes: view };
    record::<Q, F>(parts, rows, change_rows);
    let tick = changes.tick();
    changes.stamp_all(&ids[..n], change_rows, tick);
}

/// The tracked types among those `shape` writes, and how many.
pub(super) fn tracked_writes(changes: &Changes, shape: &Shape) -> ([ComponentId; MAX_QUERY_TYPES], usize) {
    let (mut ids, mut n) = ([0; MAX_QUERY_TYPES], 0);
    for id in shape.access.writes().filter(|&id| changes.is_tracked(id)) {
        ids[n] = id;
        n += 1;
    }
    (ids, n)
}

/// The tracked types query `(Q, F)` writes on `world` (its shape `shape`, or the world's cached one), and how
/// many; none if the query is refused (the loop says why). The waiting writes of exact types are compared first,
/// as before every loop that writes.
pub(super) fn written_tracked<Q: QueryData, F: Filter>(
    world: &mut World,
    shape: Option<&Shape>,
) -> ([ComponentId; MAX_QUERY_TYPES], usize) {
    if !world.tracks_any() {
        return ([0; MAX_QUERY_TYPES], 0);
    }
    world.compare_changes();
    let QueryContext { components, queries, changes, .. } = world.query_context();
    let shape = match shape {
        Some(shape) => shape,
        None => queries.shape::<Q, F>(components),
    };
    match shape.access.refusal() {
        Some(_) => ([0; MAX_QUERY_TYPES], 0),
        None => tracked_writes(changes, shape),
    }
}

/// Runs `body` on `world`, handing it a list for the index of every value of the tracked types `ids` it hands out
/// as `&mut` (`None` if `ids` is empty), and stamps them once it returns or panics: a loop's stamps made after it,
/// for a loop in which nothing reads them (no change filter).
pub(super) fn stamped_after<R>(
    world: &mut World,
    ids: &[ComponentId],
    body: impl FnOnce(&mut World, Option<&mut Vec<u32>>) -> R,
) -> R {
    if ids.is_empty() {
        return body(world, None);
    }
    let mut rows = std::mem::take(world.query_context().change_rows);
    rows.clear();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&mut *world, Some(&mut rows))));
    let QueryContext { changes, change_rows, .. } = world.query_context();
    let tick = changes.tick();
    changes.stamp_all(ids, &rows, tick);
    *change_rows = rows;
    outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Which rows a query hands out, to be stamped ([`stamp_rows`], a system's deferred stamps).
#[doc(hidden)]
pub enum Stamp<'a> {
    /// A loop: every match.
    Loop,
    /// `get`, `get_many`: these indices if every one of them matches (one that fails hands out nothing).
    Every(&'a [u32]),
    /// A list visit ([`QueryBorrow::for_each_of`](super::QueryBorrow::for_each_of)): each live handle that matches,
    /// as often as it is listed.
    Each(&'a mut dyn Iterator<Item = Entity>),
}

/// Appends to `out` the index of every match of `(Q, F)` on `parts` that `rows` names (see [`Stamp`]).
pub(super) fn record<Q: QueryData, F: Filter>(mut parts: Parts<'_, '_>, rows: Stamp<'_>, out: &mut Vec<u32>) {
    match rows {
        Stamp::Loop => run::<Q, F, _>(parts, &mut Record(out)),
        Stamp::Every(rows) => {
            if rows.iter().all(|&index| one::<Q, F>(parts.reborrow(), index).is_some()) {
                out.extend_from_slice(rows);
            }
        }
        // The visit's own walk, so what is stamped is what the visit hands out. The handles are gathered into the
        // parts' reused handle buffer (the world's, or a system query's own; `listed` does not use it), so a visit
        // allocates nothing once warm.
        Stamp::Each(list) => {
            let mut handles = std::mem::take(parts.scratch);
            handles.clear();
            handles.extend(list);
            listed::<Q, F, Entity>(parts.reborrow(), &handles, |&entity, _| out.push(entity.index()));
            *parts.scratch = handles;
        }
    }
}

/// The visitor that notes the matches' indices.
struct Record<'a>(&'a mut Vec<u32>);

impl<Q: QueryData> Visit<Q> for Record<'_> {
    fn one(&mut self, entity: Entity, _: Q::Item<'_>) {
        self.0.push(entity.index());
    }
    fn run(&mut self, entities: &[Entity], _: Q::Slices<'_>) {
        self.0.extend(entities.iter().map(|entity| entity.index()));
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

/// The serial loop's sink: every strategy's rows handed to one visitor, in order.
pub(super) struct Serial<'v, V>(pub(super) &'v mut V);

impl<'w, Q: QueryData, V: Visit<Q>> Sink<'w, Q> for Serial<'_, V> {
    #[inline(always)]
    fn lock_step<L: Layout, F: Filter>(&mut self, filter: &F::Pools<'w, L>, rows: &'w [Entity], slices: Q::Slices<'w>) {
        lock_step_runs::<Q, L, F>(filter, rows, slices, |rows, run| self.0.run(rows, run));
    }
    // The driver's own values come by row, and only the other pools are probed by index (the textbook movement
    // system).
    #[inline(always)]
    fn lanes<L: Layout, F: Filter>(
        &mut self,
        filter: &F::Pools<'w, L>,
        pools: Q::Pools<'w, L>,
        driver: usize,
        _: &Entities,
        _: &mut Vec<Entity>,
    ) {
        let (rows, mut lanes) = Q::into_lanes::<L>(pools, driver);
        lane_rows::<Q, L, F>(filter, rows.unwrap_or(&[]), 0, &mut lanes, |entity, item| self.0.one(entity, item));
    }
    #[inline(always)]
    fn probe<L: Layout, F: Filter>(&mut self, filter: &F::Pools<'w, L>, mut pools: Q::Pools<'w, L>, found: &[Entity]) {
        probe_rows::<Q, L, F>(filter, found, &mut pools, |entity, item| self.0.one(entity, item));
    }
    #[inline(always)]
    fn table(&mut self, rows: &'w [Entity], slices: Q::Slices<'w>) {
        self.0.run(rows, slices);
    }
    fn gathered(&mut self, items: Vec<(Entity, Q::Item<'w>)>) {
        for (entity, item) in items {
            self.0.one(entity, item);
        }
    }
}

/// [`QueryBorrow::for_each`]'s visitor: one call per entity either way. (The per-entity method is forced inline: as a
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

/// [`QueryBorrow::for_each_run`]'s visitor: runs as they come; a probed entity as a run of one.
pub(super) struct Runs<Func>(pub(super) Func);

impl<Q: QueryData, Func: for<'a> FnMut(&[Entity], Q::Slices<'a>)> Visit<Q> for Runs<Func> {
    #[inline(always)]
    fn one(&mut self, entity: Entity, item: Q::Item<'_>) {
        (self.0)(std::slice::from_ref(&entity), Q::one(item))
    }
    #[inline(always)]
    fn run(&mut self, entities: &[Entity], slices: Q::Slices<'_>) {
        (self.0)(entities, slices)
    }
}

/// [`QueryBorrow::for_each_with_commands`]'s visitor: one call per entity, with the recorder keyed to it.
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

/// One entity's match (`None` if it has not every fetched component, or fails the filter): a probe of each pool,
/// or its table's columns at its row.
pub(super) fn one<'w, Q: QueryData, F: Filter>(parts: Parts<'w, '_>, index: u32) -> Option<Q::Item<'w>> {
    let Parts { storage, shape, changes, .. } = parts;
    match lending(storage) {
        Lending::Pools(layout, pools) => dispatch!(layout, L => {
            let (pools, filter) = take_pools::<Q, F, L>(pools, shape, changes)?;
            if !F::matches::<L>(&filter, index) {
                return None;
            }
            Q::probe::<L>(pools, index)
        }),
        Lending::Tables(archetypes) => {
            let (table, row) = archetypes.as_ref().location(index)?;
            let (tables, columns) = lend_columns(archetypes);
            let table = &tables[table as usize];
            if !set_matches::<F>(table.set(), &shape.access) || !F::row_passes(&F::rows(changes), index) {
                return None;
            }
            let columns = take_columns::<Q>(columns, shape)?;
            let indices = column_indices(table, &shape.access);
            let (slices, _) = Q::split_table(columns, &indices, &mut [0; MAX_QUERY_TYPES]);
            Some(Q::row(slices?, row))
        }
    }
}

/// The matches among `list`, in its order, each to `f` with its entry: an entry whose handle is stale, or whose
/// entity lacks a fetched term or fails the filter, is skipped; one listed twice is visited twice, one visit after
/// the other. Each pool is probed per entry; on archetype tables, every matching table's columns are split apart
/// once and each entry is its table's row.
pub(super) fn listed<Q: QueryData, F: Filter, T: Listed>(
    parts: Parts<'_, '_>,
    list: &[T],
    f: impl for<'a> FnMut(&T, Q::Item<'a>),
) {
    let Parts { entities, storage, shape, changes, .. } = parts;
    match lending(storage) {
        Lending::Pools(layout, pools) => dispatch!(layout, L => {
            let Some((pools, filter)) = take_pools::<Q, F, L>(pools, shape, changes) else { return };
            listed_pools::<Q, F, L, T>(entities, pools, &filter, list, f);
        }),
        Lending::Tables(archetypes) => listed_tables::<Q, F, T>(entities, archetypes, shape, changes, list, f),
    }
}

/// [`listed`] on pools: each pool probed per entry.
#[inline(always)]
pub(super) fn listed_pools<Q: QueryData, F: Filter, L: Layout, T: Listed>(
    entities: &Entities,
    mut pools: Q::Pools<'_, L>,
    filter: &F::Pools<'_, L>,
    list: &[T],
    mut f: impl for<'a> FnMut(&T, Q::Item<'a>),
) {
    for entry in list {
        let entity = entry.entity();
        if !entities.is_alive(entity) || !F::matches::<L>(filter, entity.index()) {
            continue;
        }
        if let Some(item) = Q::probe::<L>(Q::reborrow::<L>(&mut pools), entity.index()) {
            f(entry, item);
        }
    }
}

/// [`listed`] on archetype tables: every matching table's columns split apart once, each entry its table's row.
pub(super) fn listed_tables<Q: QueryData, F: Filter, T: Listed>(
    entities: &Entities,
    archetypes: TablesLent<'_>,
    shape: &Shape,
    changes: ChangeView<'_>,
    list: &[T],
    mut f: impl for<'a> FnMut(&T, Q::Item<'a>),
) {
    let at: Vec<Option<(u32, usize)>> = list
        .iter()
        .map(|entry| entry.entity())
        .map(|entity| entities.is_alive(entity).then(|| archetypes.as_ref().location(entity.index())).flatten())
        .collect();
    let rows = F::rows(changes);
    let (tables, columns) = lend_columns(archetypes);
    let Some(mut columns) = take_columns::<Q>(columns, shape) else { return };
    // Tables in ascending order take ascending columns of every type: each matching table's are split off
    // the front of what is left.
    let (mut bases, mut split) = ([0; MAX_QUERY_TYPES], Vec::with_capacity(tables.len()));
    for table in tables {
        let mut slices = None;
        if set_matches::<F>(table.set(), &shape.access) {
            let (own, tail) = Q::split_table(columns, &column_indices(table, &shape.access), &mut bases);
            (slices, columns) = (own, tail);
        }
        split.push(slices);
    }
    for (entry, at) in list.iter().zip(at) {
        let Some((table, row)) = at else { continue };
        let Some(slices) = split[table as usize].as_mut() else { continue };
        if F::row_passes(&rows, entry.entity().index()) {
            f(entry, Q::row(Q::reborrow_slices(slices), row));
        }
    }
}

/// The matches of several distinct entities at once (each `None` if it does not match). Pools hand out their
/// values for all the indices at once; archetype tables are split apart in ascending order, and within a table
/// the rows are, so no value is borrowed twice and nothing needs `unsafe`.
pub(super) fn many<'w, Q: QueryData, F: Filter, const N: usize>(
    parts: Parts<'w, '_>,
    indices: [u32; N],
) -> [Option<Q::Item<'w>>; N] {
    let Parts { storage, shape, changes, .. } = parts;
    let mut out: [Option<Q::Item<'w>>; N] = std::array::from_fn(|_| None);
    let rows = F::rows(changes);
    match lending(storage) {
        Lending::Pools(layout, pools) => dispatch!(layout, L => {
            let Some((pools, filter)) = take_pools::<Q, F, L>(pools, shape, changes) else { return out };
            for ((slot, item), &index) in out.iter_mut().zip(Q::probe_each::<L>(pools, &indices)).zip(&indices) {
                *slot = item.filter(|_| F::matches::<L>(&filter, index));
            }
        }),
        Lending::Tables(archetypes) => {
            // (table, row, k) of each entity that has a row, sorted.
            let mut at: [(u32, usize, usize); N] =
                std::array::from_fn(|k| match archetypes.as_ref().location(indices[k]) {
                    Some((table, row)) => (table, row, k),
                    None => (u32::MAX, 0, k),
                });
            at.sort_unstable();
            let (tables, columns) = lend_columns(archetypes);
            let Some(mut columns) = take_columns::<Q>(columns, shape) else {
                return out;
            };
            // Tables in ascending order take ascending columns of every type: each table's are split off the front
            // of what is left.
            let (mut bases, mut i) = ([0; MAX_QUERY_TYPES], 0);
            while i < N && at[i].0 != u32::MAX {
                let number = at[i].0;
                let table = &tables[number as usize];
                let mut rest = None;
                if set_matches::<F>(table.set(), &shape.access) {
                    let (slices, tail) = Q::split_table(columns, &column_indices(table, &shape.access), &mut bases);
                    columns = tail;
                    rest = slices;
                }
                let mut consumed = 0;
                while i < N && at[i].0 == number {
                    let (_, row, k) = at[i];
                    if let Some(slices) = rest.take() {
                        let (_, tail) = Q::split_front(slices, row - consumed);
                        let (one, tail) = Q::split_front(tail, 1);
                        out[k] = Some(Q::row(one, 0)).filter(|_| F::row_passes(&rows, indices[k]));
                        rest = Some(tail);
                        consumed = row + 1;
                    }
                    i += 1;
                }
            }
        }
    }
    out
}
