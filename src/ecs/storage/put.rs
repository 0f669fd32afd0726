//! Placing the values of new entities: [`PutBundle`], a bundle as storage sees it, and the loops that place a
//! batch of bundles into pools or table rows. The loops are ordinary generic code, the same for every bundle; a
//! bundle only hands each step on to its parts, as a query does (`QueryData`).

use super::archetype::{Archetypes, ColumnIndex, TypeColumns};
use super::{BundleIds, ComponentId, Entities, Entity, ErasedPool, Layout, SparseSetLayout};
use crate::ecs::component::MAX_BUNDLE;

/// A bundle as storage places it: values of distinct component types, one of each, put for entities that hold
/// nothing yet, into each type's pool or into new rows of the bundle's table. Each method is one step applied to
/// every part: a single component (`One<T>`) does the work, and a composition of parts (a tuple, a derived struct)
/// hands the step on to each part in order, the part at position `k` getting the ids and borrows from its first
/// component on. [`Storage`](super::Storage)'s spawns are generic over it; the bundle itself (ids, per-entity
/// insert and remove) is `ecs::Bundle`, which requires it.
#[doc(hidden)]
pub trait PutBundle: Sized {
    /// How many components: a part takes `COMPONENTS` of the ids and borrows handed to it, from the first.
    const COMPONENTS: usize;
    /// The typed pools of layout `L` its values go to, borrowed once per batch.
    type Pools<'p, L: Layout>;
    /// The typed columns of one table its values go to, borrowed once per batch.
    type Columns<'p>;

    /// Inserts every component into its per-component pool of layout `L`; `entity` must hold no value in any pool
    /// yet (fresh from the allocator); `ids` starts with the part's first component. The layout is matched once
    /// by the caller, so each component costs a downcast and the pool's own insert, inlined.
    fn put_pools<L: Layout>(self, pools: &mut [Box<dyn ErasedPool>], ids: &[ComponentId], entity: Entity);
    /// Pushes each value onto its type's column in the table `at` indexes (`ids` starts with the part's first
    /// component), one after another: a single row needs no borrows held together.
    fn put_row(self, columns: &mut [TypeColumns], ids: &[ComponentId], at: &ColumnIndex);
    /// Takes and downcasts its pools from `lent`, which yields the bundle's pools in the order of its values.
    fn take_pools<'p, L: Layout>(lent: &mut impl Iterator<Item = &'p mut Box<dyn ErasedPool>>) -> Self::Pools<'p, L>;
    /// [`Pool::stage_fresh`](super::Pool::stage_fresh) of each value.
    fn stage_fresh<L: Layout>(self, pools: &mut Self::Pools<'_, L>, entity: Entity);
    /// [`Pool::commit_fresh`](super::Pool::commit_fresh) of each pool.
    fn commit_fresh<L: Layout>(pools: &mut Self::Pools<'_, L>, fresh: &[Entity]);
    /// Pushes each value onto its sparse set's packed values, before the entity exists.
    fn push_values(self, pools: &mut Self::Pools<'_, SparseSetLayout>);
    /// Hands `each` every sparse set's packed entities with the length of its packed values.
    fn packed_entities<'a>(
        pools: &'a mut Self::Pools<'_, SparseSetLayout>,
        each: &mut impl FnMut(&'a mut Vec<Entity>, usize),
    );
    /// Indexes each sparse set's last `count` packed entities.
    fn index_fresh(pools: &mut Self::Pools<'_, SparseSetLayout>, count: usize);
    /// Takes and downcasts its columns from `lent`, which yields the bundle's types' columns in the order of its
    /// values, each with the table's column index among them.
    fn take_columns<'p>(lent: &mut impl Iterator<Item = (&'p mut TypeColumns, u32)>) -> Self::Columns<'p>;
    /// Pushes each value onto its column.
    fn push_row(self, columns: &mut Self::Columns<'_>);
}

/// The elements of `slice` at the bundle's ids, all borrowed at once, in the order of the bundle's values: split
/// off in ascending id order ([`BundleIds::ascending`]), so no `unsafe` and nothing to put back.
#[inline]
fn lend<'p, E>(mut slice: &'p mut [E], ids: &BundleIds) -> impl Iterator<Item = &'p mut E> {
    let mut lent: [Option<&'p mut E>; MAX_BUNDLE] = [const { None }; MAX_BUNDLE];
    let mut base = 0;
    for &k in ids.ascending() {
        let id = ids.ids()[k as usize] as usize;
        let (element, rest) =
            std::mem::take(&mut slice)[id - base..].split_first_mut().expect("storage holds every id of a bundle");
        lent[k as usize] = Some(element);
        slice = rest;
        base = id + 1;
    }
    lent.into_iter().map_while(|element| element)
}

/// Per value of the bundle, the index of `table`'s column among its type's columns.
#[inline]
fn column_indices(archetypes: &Archetypes, table: u32, ids: &BundleIds) -> [u32; MAX_BUNDLE] {
    let held = &archetypes.tables()[table as usize];
    let mut index = [0; MAX_BUNDLE];
    for (index, &id) in index.iter_mut().zip(ids.ids()) {
        *index = held.column_index(id).expect("a table holds a column of its own set");
    }
    index
}

/// Puts `bundle` into a new row of `table` (the table of `ids`) for `entity`, newly alive with no row yet: each
/// value pushed onto its column in turn.
#[inline]
pub(crate) fn put_row<B: PutBundle>(
    bundle: B,
    archetypes: &mut Archetypes,
    table: u32,
    ids: &BundleIds,
    entity: Entity,
) {
    let (mut rows, columns, at) = archetypes.new_row(table);
    rows.push(entity);
    bundle.put_row(columns, ids.ids(), &at);
}

/// Puts each bundle of `items` into a new row of `table` (the table of `ids`), finding and downcasting each
/// type's column once for the whole batch; `spawned` hears of each entity, in order. Every entity must be newly
/// alive, with no row yet.
#[inline]
pub(crate) fn put_rows<B: PutBundle>(
    items: impl Iterator<Item = (Entity, B)>,
    archetypes: &mut Archetypes,
    table: u32,
    ids: &BundleIds,
    mut spawned: impl FnMut(Entity),
) {
    let index = column_indices(archetypes, table, ids);
    let (mut rows, columns) = archetypes.new_rows(table);
    let mut columns = B::take_columns(&mut lend(columns, ids).zip(index));
    // A row is whole (its entity and every value) before the caller's iterator is asked for the next.
    for (entity, bundle) in items {
        rows.push(entity);
        bundle.push_row(&mut columns);
        spawned(entity);
    }
}

/// Puts each bundle of `items` into the per-component pools of layout `L` for its entity, downcasting each pool
/// once for the whole batch; `out` receives the entities in order. Every entity must be newly alive, holding no
/// value in any pool yet (the caller allocates or activates them as `items` is pulled).
pub(crate) fn put_batch<B: PutBundle, L: Layout>(
    items: impl Iterator<Item = (Entity, B)>,
    pools: &mut [Box<dyn ErasedPool>],
    ids: &BundleIds,
    out: &mut Vec<Entity>,
) {
    let mut pools = B::take_pools::<L>(&mut lend(pools, ids));
    // Values are staged as plain pushes; each pool then takes the run of fresh entities at once. The commit runs
    // even if the caller's iterator panics, so no pool is left half-staged.
    let start = out.len();
    let staging = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for (entity, bundle) in items {
            bundle.stage_fresh::<L>(&mut pools, entity);
            out.push(entity);
        }
    }));
    B::commit_fresh::<L>(&mut pools, &out[start..]);
    staging.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Batch spawning into sparse-set pools: pushes the values of `items` onto the pools' packed value arrays as
/// plain streams, then allocates one entity per bundle at once and gives the pools their entities; `out`, if
/// given, receives the handles too. Returns how many were spawned. `items` must not yield more bundles than
/// `entities` has room for.
pub(crate) fn put_sparse_batch<B: PutBundle>(
    items: impl Iterator<Item = B>,
    pools: &mut [Box<dyn ErasedPool>],
    ids: &BundleIds,
    entities: &mut Entities,
    mut out: Option<&mut Vec<Entity>>,
) -> usize {
    if B::COMPONENTS == 0 {
        // Counted first (the iterator may panic: then nothing was allocated), then allocated in one run.
        let count = items.count();
        let mut handles = Vec::new();
        entities.alloc_many(count, out.unwrap_or(&mut handles));
        return count;
    }
    let mut pools = B::take_pools::<SparseSetLayout>(&mut lend(pools, ids));
    // The loop only pushes values, so each array is written as a stream; the handles come after, in one run. Every
    // pool holds as many values past its entities (a push cannot unwind halfway through a bundle: only the
    // caller's iterator can panic, between bundles), and the commit runs even on a panic.
    let staging = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for bundle in items {
            bundle.push_values(&mut pools);
        }
    }));
    let mut count = 0;
    {
        // The handles are allocated onto the first pool's packed entities and copied from there.
        let mut first: Option<(&mut Vec<Entity>, usize)> = None;
        B::packed_entities(&mut pools, &mut |packed, values| match &first {
            None => {
                let start = packed.len();
                count = values - start;
                entities.alloc_many(count, packed);
                if let Some(out) = out.take() {
                    out.extend_from_slice(&packed[start..]);
                }
                first = Some((packed, start));
            }
            Some((first, start)) => packed.extend_from_slice(&first[*start..]),
        });
    }
    B::index_fresh(&mut pools, count);
    staging.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    count
}
