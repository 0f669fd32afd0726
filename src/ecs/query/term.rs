//! The terms of a query, each a [`QueryData`] of its own: `&T`, `&mut T`, and `Option<Q>` of any query. How a
//! term reaches its values: in a pool (probed by index, or walked by row) and in archetype columns.

// The impls spell out `'w` to read like the trait's signatures they implement.
#![allow(clippy::needless_lifetimes)]

use super::access::{Access, Names};
use super::data::{QueryData, ReadOnlyQueryData, TermPool, TermRun};
use crate::ecs::entity::{Entities, Entity};
use crate::ecs::storage::archetype::{typed, typed_mut, ErasedColumns};
use crate::ecs::storage::{AnyPool, ErasedPool, Layout, Pool};
use crate::ecs::Component;

/// How a query's world lends it a pool or a type's columns: exclusively (a query through `&mut World`) or shared
/// (through `&World`). Every term takes what it is lent the same way; only `&mut T` asks for it exclusively, and a
/// shared world runs only [`ReadOnlyQueryData`], which has no `&mut T`.
#[doc(hidden)]
pub enum Lent<'w, P: ?Sized> {
    /// Borrowed from a `&mut World`.
    Exclusive(&'w mut P),
    /// Borrowed from a `&World`.
    Shared(&'w P),
}

impl<'w, P: ?Sized> Lent<'w, P> {
    /// Read access, whichever way it was lent.
    #[inline(always)]
    pub(super) fn shared(self) -> &'w P {
        match self {
            Lent::Exclusive(value) => value,
            Lent::Shared(value) => value,
        }
    }

    /// A shared look, leaving the loan as it is.
    #[inline(always)]
    pub(super) fn as_ref(&self) -> &P {
        match self {
            Lent::Exclusive(value) => value,
            Lent::Shared(value) => value,
        }
    }

    /// The loan again, for a shorter borrow.
    #[inline(always)]
    pub(crate) fn reborrow(&mut self) -> Lent<'_, P> {
        match self {
            Lent::Exclusive(value) => Lent::Exclusive(&mut **value),
            Lent::Shared(value) => Lent::Shared(*value),
        }
    }

    /// Write access: only a mutable world lends it, and only its queries have `&mut T` terms.
    #[inline(always)]
    pub(super) fn exclusive(self) -> &'w mut P {
        match self {
            Lent::Exclusive(value) => value,
            Lent::Shared(_) => unreachable!("a shared world runs only read-only queries"),
        }
    }
}

/// Not a column index: the table has no column of an optional term's type.
pub(super) const NO_INDEX: u32 = u32::MAX;

/// Column `index` of a type counted from `*base` (the first column of the type not yet split off), moving `*base`
/// past it; `NO_INDEX` stays as it is.
#[inline]
fn next_column(index: u32, base: &mut u32) -> u32 {
    if index == NO_INDEX {
        return NO_INDEX;
    }
    let at = index - *base;
    *base = index + 1;
    at
}

/// How one term of a probing loop reaches its values: by row in the driver's packed array, or by index lookup.
#[doc(hidden)]
pub enum Lane<'w, Q: QueryData, L: Layout> {
    Packed(Q::Slices<'w>),
    Probe(Q::Pools<'w, L>),
}

impl<Q: QueryData, L: Layout> Lane<'_, Q, L> {
    #[inline(always)]
    fn get(&mut self, row: usize, index: u32) -> Option<Q::Item<'_>> {
        match self {
            Lane::Packed(values) => Some(Q::row(Q::reborrow_slices(values), row)),
            Lane::Probe(pool) => Q::probe::<L>(Q::reborrow::<L>(pool), index),
        }
    }
}

/// `&T`: one component, read.
impl<T: Component> QueryData for &T {
    type Item<'a> = &'a T;
    type Slices<'a> = &'a [T];
    type Pools<'w, L: Layout> = &'w L::Pool<T>;
    type Lanes<'w, L: Layout> = Lane<'w, Self, L>;
    type Columns<'w> = &'w [Vec<T>];
    type Rows<'w> = std::slice::Iter<'w, T>;
    type Run<'w> = TermRun<'w, Self::Rows<'w>>;
    type Key = &'static T;
    const TERMS: usize = 1;

    fn access(names: &mut impl Names, access: &mut Access) {
        access.name::<T>(names.id::<T>(), false, true, false);
    }
    #[inline]
    fn pools<'w, L: Layout>(
        lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
    ) -> Option<Self::Pools<'w, L>> {
        let pool = lent.next().expect("a pool per term")?.shared();
        Some(L::pool_ref(AnyPool::<T>::downcast_ref(pool)))
    }
    #[inline]
    fn each_term<'a, L: Layout>(pool: &'a Self::Pools<'_, L>, each: &mut impl FnMut(TermPool<'a>)) {
        each(TermPool { len: pool.len(), order: pool.order() })
    }
    #[inline]
    fn collect<L: Layout>(pool: &&L::Pool<T>, _: usize, entities: &Entities, out: &mut Vec<Entity>) {
        pool.collect_entities(entities, out)
    }
    #[inline]
    fn into_packed<'w, L: Layout>(pool: Self::Pools<'w, L>) -> (Option<&'w [Entity]>, Self::Slices<'w>) {
        let (entities, values) = pool.packed().expect("into_packed on a layout without packed arrays");
        (Some(entities), values)
    }
    #[inline]
    fn into_lanes<'w, L: Layout>(
        pool: Self::Pools<'w, L>,
        driver: usize,
    ) -> (Option<&'w [Entity]>, Self::Lanes<'w, L>) {
        match driver {
            0 => {
                // Cut to the entities' length, so the rows' bounds checks fold away.
                let (entities, values) = pool.packed().expect("into_lanes on a layout without packed arrays");
                (Some(entities), Lane::Packed(&values[..entities.len()]))
            }
            _ => (None, Lane::Probe(pool)),
        }
    }
    fn lanes_split(_: usize) -> bool {
        true
    }
    #[inline]
    fn split_lanes<'w, L: Layout>(lane: Self::Lanes<'w, L>, row: usize) -> (Self::Lanes<'w, L>, Self::Lanes<'w, L>) {
        match lane {
            Lane::Packed(values) => {
                let (front, back) = values.split_at(row);
                (Lane::Packed(front), Lane::Packed(back))
            }
            Lane::Probe(pool) => (Lane::Probe(pool), Lane::Probe(pool)),
        }
    }
    #[inline]
    fn share<'a, L: Layout>(pool: &'a Self::Pools<'_, L>) -> Option<Self::Pools<'a, L>> {
        Some(*pool)
    }
    #[inline(always)]
    fn lane_get<'a, L: Layout>(lane: &'a mut Self::Lanes<'_, L>, row: usize, index: u32) -> Option<Self::Item<'a>> {
        lane.get(row, index)
    }
    #[inline(always)]
    fn reborrow<'a, L: Layout>(pool: &'a mut &L::Pool<T>) -> Self::Pools<'a, L> {
        pool
    }
    #[inline(always)]
    fn probe<'w, L: Layout>(pool: Self::Pools<'w, L>, index: u32) -> Option<Self::Item<'w>> {
        pool.get(index)
    }
    fn probe_each<'w, L: Layout>(pool: Self::Pools<'w, L>, indices: &[u32]) -> Vec<Option<Self::Item<'w>>> {
        indices.iter().map(|&index| pool.get(index)).collect()
    }
    #[inline]
    fn columns<'w>(lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedColumns>>>) -> Option<Self::Columns<'w>> {
        Some(typed::<T>(lent.next().expect("columns per term")?.shared()))
    }
    #[inline]
    fn split_table<'w>(
        columns: Self::Columns<'w>,
        indices: &[u32],
        bases: &mut [u32],
    ) -> (Option<Self::Slices<'w>>, Self::Columns<'w>) {
        match next_column(indices[0], &mut bases[0]) {
            NO_INDEX => (None, columns),
            at => {
                let (head, tail) = columns.split_at(at as usize + 1);
                (Some(&head[at as usize]), tail)
            }
        }
    }
    #[inline]
    fn split_front<'w>(slice: Self::Slices<'w>, n: usize) -> (Self::Slices<'w>, Self::Slices<'w>) {
        slice.split_at(n)
    }
    #[inline(always)]
    fn reborrow_slices<'a>(slice: &'a mut &[T]) -> Self::Slices<'a> {
        slice
    }
    #[inline(always)]
    fn row<'w>(slice: Self::Slices<'w>, row: usize) -> Self::Item<'w> {
        &slice[row]
    }
    #[inline]
    fn rows<'w>(slice: Self::Slices<'w>) -> Self::Rows<'w> {
        slice.iter()
    }
    #[inline]
    fn run<'w>(entities: &'w [Entity], slices: Self::Slices<'w>) -> Self::Run<'w> {
        TermRun(entities.iter().zip(Self::rows(slices)))
    }
    #[inline]
    fn one<'a>(item: Self::Item<'a>) -> Self::Slices<'a> {
        std::slice::from_ref(item)
    }
}

/// `&mut T`: one component, written. The same steps as `&T`'s, with the exclusive borrow.
impl<T: Component> QueryData for &mut T {
    type Item<'a> = &'a mut T;
    type Slices<'a> = &'a mut [T];
    type Pools<'w, L: Layout> = &'w mut L::Pool<T>;
    type Lanes<'w, L: Layout> = Lane<'w, Self, L>;
    type Columns<'w> = &'w mut [Vec<T>];
    type Rows<'w> = std::slice::IterMut<'w, T>;
    type Run<'w> = TermRun<'w, Self::Rows<'w>>;
    type Key = &'static mut T;
    const TERMS: usize = 1;

    fn access(names: &mut impl Names, access: &mut Access) {
        access.name::<T>(names.id::<T>(), true, true, false);
    }
    #[inline]
    fn pools<'w, L: Layout>(
        lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
    ) -> Option<Self::Pools<'w, L>> {
        let pool = lent.next().expect("a pool per term")?.exclusive();
        Some(L::pool_mut(AnyPool::<T>::downcast_mut(pool)))
    }
    #[inline]
    fn each_term<'a, L: Layout>(pool: &'a Self::Pools<'_, L>, each: &mut impl FnMut(TermPool<'a>)) {
        each(TermPool { len: pool.len(), order: pool.order() })
    }
    #[inline]
    fn collect<L: Layout>(pool: &&mut L::Pool<T>, _: usize, entities: &Entities, out: &mut Vec<Entity>) {
        pool.collect_entities(entities, out)
    }
    #[inline]
    fn into_packed<'w, L: Layout>(pool: Self::Pools<'w, L>) -> (Option<&'w [Entity]>, Self::Slices<'w>) {
        let (entities, values) = pool.packed_mut().expect("into_packed on a layout without packed arrays");
        (Some(entities), values)
    }
    #[inline]
    fn into_lanes<'w, L: Layout>(
        pool: Self::Pools<'w, L>,
        driver: usize,
    ) -> (Option<&'w [Entity]>, Self::Lanes<'w, L>) {
        match driver {
            0 => {
                let (entities, values) = pool.packed_mut().expect("into_lanes on a layout without packed arrays");
                (Some(entities), Lane::Packed(&mut values[..entities.len()]))
            }
            _ => (None, Lane::Probe(pool)),
        }
    }
    fn lanes_split(driver: usize) -> bool {
        // Written by row when it drives; probed, it would be written through one pool from several threads.
        driver == 0
    }
    #[inline]
    fn split_lanes<'w, L: Layout>(lane: Self::Lanes<'w, L>, row: usize) -> (Self::Lanes<'w, L>, Self::Lanes<'w, L>) {
        match lane {
            Lane::Packed(values) => {
                let (front, back) = values.split_at_mut(row);
                (Lane::Packed(front), Lane::Packed(back))
            }
            Lane::Probe(_) => unreachable!("lanes that probe a written pool are not cut (`lanes_split`)"),
        }
    }
    #[inline]
    fn share<'a, L: Layout>(_: &'a Self::Pools<'_, L>) -> Option<Self::Pools<'a, L>> {
        None
    }
    #[inline(always)]
    fn lane_get<'a, L: Layout>(lane: &'a mut Self::Lanes<'_, L>, row: usize, index: u32) -> Option<Self::Item<'a>> {
        lane.get(row, index)
    }
    #[inline(always)]
    fn reborrow<'a, L: Layout>(pool: &'a mut &mut L::Pool<T>) -> Self::Pools<'a, L> {
        pool
    }
    #[inline(always)]
    fn probe<'w, L: Layout>(pool: Self::Pools<'w, L>, index: u32) -> Option<Self::Item<'w>> {
        pool.get_mut(index)
    }
    fn probe_each<'w, L: Layout>(pool: Self::Pools<'w, L>, indices: &[u32]) -> Vec<Option<Self::Item<'w>>> {
        pool.get_each_mut(indices)
    }
    #[inline]
    fn columns<'w>(lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedColumns>>>) -> Option<Self::Columns<'w>> {
        Some(typed_mut::<T>(lent.next().expect("columns per term")?.exclusive()))
    }
    #[inline]
    fn split_table<'w>(
        columns: Self::Columns<'w>,
        indices: &[u32],
        bases: &mut [u32],
    ) -> (Option<Self::Slices<'w>>, Self::Columns<'w>) {
        match next_column(indices[0], &mut bases[0]) {
            NO_INDEX => (None, columns),
            at => {
                let (head, tail) = columns.split_at_mut(at as usize + 1);
                (Some(&mut head[at as usize]), tail)
            }
        }
    }
    #[inline]
    fn split_front<'w>(slice: Self::Slices<'w>, n: usize) -> (Self::Slices<'w>, Self::Slices<'w>) {
        slice.split_at_mut(n)
    }
    #[inline(always)]
    fn reborrow_slices<'a>(slice: &'a mut &mut [T]) -> Self::Slices<'a> {
        slice
    }
    #[inline(always)]
    fn row<'w>(slice: Self::Slices<'w>, row: usize) -> Self::Item<'w> {
        &mut slice[row]
    }
    #[inline]
    fn rows<'w>(slice: Self::Slices<'w>) -> Self::Rows<'w> {
        slice.iter_mut()
    }
    #[inline]
    fn run<'w>(entities: &'w [Entity], slices: Self::Slices<'w>) -> Self::Run<'w> {
        TermRun(entities.iter().zip(Self::rows(slices)))
    }
    #[inline]
    fn one<'a>(item: Self::Item<'a>) -> Self::Slices<'a> {
        std::slice::from_mut(item)
    }
}

impl<T: Component> ReadOnlyQueryData for &T {}

/// An optional query's values row by row: the inner query's if the table or pool has its values, else `None` for
/// every row (the walk is bounded by the entities it is zipped with).
#[doc(hidden)]
pub struct OptionRows<I>(Option<I>);

impl<I: Iterator> Iterator for OptionRows<I> {
    type Item = Option<I::Item>;
    #[inline]
    fn next(&mut self) -> Option<Option<I::Item>> {
        match &mut self.0 {
            Some(rows) => rows.next().map(Some),
            None => Some(None),
        }
    }
}

/// `Option<Q>`: `Q`'s values if the entity matches `Q`, else `None` (most often `Option<&T>` or `Option<&mut T>`).
/// An optional term never restricts which entities match and never drives a loop: a query of optional terms only
/// visits every live entity (or those its filters allow). Its pools are `None` where the world has none to lend
/// (a shared query of a type it never met), its columns where no table holds a required type of `Q`.
///
/// ```
/// use swarm::ecs::World;
/// struct Pos(f32); struct Vel(f32); struct Mass(f32);
/// let mut world = World::new();
/// world.spawn((Pos(1.0), Vel(2.0), Mass(3.0))).unwrap();
/// world.spawn((Pos(1.0), Vel(2.0))).unwrap();
/// let mut sum = 0.0;
/// world.query::<(&Pos, Option<(&Vel, &Mass)>)>().for_each(|_, (p, vm)| sum += p.0 + vm.map_or(0.0, |(v, m)| v.0 * m.0));
/// assert_eq!(sum, 8.0);
/// ```
impl<Q: QueryData> QueryData for Option<Q> {
    type Item<'a> = Option<Q::Item<'a>>;
    type Slices<'a> = Option<Q::Slices<'a>>;
    type Pools<'w, L: Layout> = Option<Q::Pools<'w, L>>;
    type Lanes<'w, L: Layout> = Option<Q::Lanes<'w, L>>;
    type Columns<'w> = Option<Q::Columns<'w>>;
    type Rows<'w> = OptionRows<Q::Rows<'w>>;
    type Run<'w> = TermRun<'w, Self::Rows<'w>>;
    type Key = Option<Q::Key>;
    const TERMS: usize = Q::TERMS;

    fn access(names: &mut impl Names, access: &mut Access) {
        // Named and checked for conflicts, but not required.
        access.neutral += 1;
        Q::access(names, access);
        access.neutral -= 1;
    }
    #[inline]
    fn pools<'w, L: Layout>(
        lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
    ) -> Option<Self::Pools<'w, L>> {
        Some(Q::pools::<L>(lent))
    }
    #[inline]
    fn each_term<'a, L: Layout>(_: &'a Self::Pools<'_, L>, each: &mut impl FnMut(TermPool<'a>)) {
        // Its pools hold other entities than the others': never the driver, never walked in lock-step.
        for _ in 0..Q::TERMS {
            each(TermPool { len: usize::MAX, order: None });
        }
    }
    fn collect<L: Layout>(_: &Self::Pools<'_, L>, _: usize, _: &Entities, _: &mut Vec<Entity>) {}
    #[inline]
    fn into_packed<'w, L: Layout>(pools: Self::Pools<'w, L>) -> (Option<&'w [Entity]>, Self::Slices<'w>) {
        (None, pools.map(|pools| Q::into_packed::<L>(pools).1))
    }
    #[inline]
    fn into_lanes<'w, L: Layout>(pools: Self::Pools<'w, L>, _: usize) -> (Option<&'w [Entity]>, Self::Lanes<'w, L>) {
        (None, pools.map(|pools| Q::into_lanes::<L>(pools, usize::MAX).1))
    }
    fn lanes_split(_: usize) -> bool {
        // Never the driver: its pools are probed.
        Q::lanes_split(usize::MAX)
    }
    #[inline]
    fn split_lanes<'w, L: Layout>(lanes: Self::Lanes<'w, L>, row: usize) -> (Self::Lanes<'w, L>, Self::Lanes<'w, L>) {
        match lanes {
            Some(lanes) => {
                let (front, back) = Q::split_lanes::<L>(lanes, row);
                (Some(front), Some(back))
            }
            None => (None, None),
        }
    }
    #[inline]
    fn share<'a, L: Layout>(pools: &'a Self::Pools<'_, L>) -> Option<Self::Pools<'a, L>> {
        match pools {
            Some(pools) => Some(Some(Q::share::<L>(pools)?)),
            None => Some(None),
        }
    }
    #[inline(always)]
    fn lane_get<'a, L: Layout>(lanes: &'a mut Self::Lanes<'_, L>, row: usize, index: u32) -> Option<Self::Item<'a>> {
        Some(lanes.as_mut().and_then(|lanes| Q::lane_get::<L>(lanes, row, index)))
    }
    #[inline(always)]
    fn reborrow<'a, L: Layout>(pools: &'a mut Self::Pools<'_, L>) -> Self::Pools<'a, L> {
        pools.as_mut().map(Q::reborrow::<L>)
    }
    #[inline(always)]
    fn probe<'w, L: Layout>(pools: Self::Pools<'w, L>, index: u32) -> Option<Self::Item<'w>> {
        Some(pools.and_then(|pools| Q::probe::<L>(pools, index)))
    }
    fn probe_each<'w, L: Layout>(pools: Self::Pools<'w, L>, indices: &[u32]) -> Vec<Option<Self::Item<'w>>> {
        match pools {
            Some(pools) => Q::probe_each::<L>(pools, indices).into_iter().map(Some).collect(),
            None => indices.iter().map(|_| Some(None)).collect(),
        }
    }
    #[inline]
    fn columns<'w>(lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedColumns>>>) -> Option<Self::Columns<'w>> {
        Some(Q::columns(lent))
    }
    #[inline]
    fn split_table<'w>(
        columns: Self::Columns<'w>,
        indices: &[u32],
        bases: &mut [u32],
    ) -> (Option<Self::Slices<'w>>, Self::Columns<'w>) {
        match columns {
            Some(columns) => {
                let (slices, rest) = Q::split_table(columns, indices, bases);
                (Some(slices), Some(rest))
            }
            None => (Some(None), None),
        }
    }
    #[inline]
    fn split_front<'w>(slices: Self::Slices<'w>, n: usize) -> (Self::Slices<'w>, Self::Slices<'w>) {
        match slices {
            Some(slices) => {
                let (front, back) = Q::split_front(slices, n);
                (Some(front), Some(back))
            }
            None => (None, None),
        }
    }
    #[inline(always)]
    fn reborrow_slices<'a>(slices: &'a mut Self::Slices<'_>) -> Self::Slices<'a> {
        slices.as_mut().map(Q::reborrow_slices)
    }
    #[inline(always)]
    fn row<'w>(slices: Self::Slices<'w>, row: usize) -> Self::Item<'w> {
        slices.map(|slices| Q::row(slices, row))
    }
    #[inline]
    fn rows<'w>(slices: Self::Slices<'w>) -> Self::Rows<'w> {
        OptionRows(slices.map(Q::rows))
    }
    #[inline]
    fn run<'w>(entities: &'w [Entity], slices: Self::Slices<'w>) -> Self::Run<'w> {
        TermRun(entities.iter().zip(Self::rows(slices)))
    }
    #[inline]
    fn one<'a>(item: Self::Item<'a>) -> Self::Slices<'a> {
        item.map(Q::one)
    }
}

impl<Q: ReadOnlyQueryData> ReadOnlyQueryData for Option<Q> {}
