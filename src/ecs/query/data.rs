//! The query trait, [`QueryData`]: a tuple of [`Term`]s (of every arity up to six, and `()`), or one term
//! alone. Its methods apply one step to every term; the loops over them are in [`super::run`].

// The impls spell out `'w` to read like the trait's signatures they implement.
#![allow(clippy::needless_lifetimes)]

use super::access::{Access, Names};
use super::error::MAX_QUERY_TYPES;
use super::term::{next_column, Lane, ReadOnlyTerm, Term};
use crate::ecs::component::ComponentId;
use crate::ecs::entity::{Entities, Entity};
use crate::ecs::storage::archetype::TypeColumns;
use crate::ecs::storage::sparse_set::PackedOrder;
use crate::ecs::storage::{split_disjoint, ErasedPool, Layout};

/// A tuple of [`Term`]s. Its methods apply one step to every term (the tuple macro only delegates per element);
/// the iteration strategy over them is ordinary generic code (`run_pools`, `run_tables`).
pub trait QueryData {
    /// What the loop body receives: a tuple of references.
    type Item<'a>;
    /// A run of rows: a tuple of parallel slices.
    type Slices<'a>;
    #[doc(hidden)]
    /// Every archetype table's columns, one borrow per term (see [`Term::Columns`]).
    type Columns<'w>;
    #[doc(hidden)]
    /// The typed pool borrows of a per-component layout, one per term.
    type Pools<'w, L: Layout>;
    #[doc(hidden)]
    /// Per term, how a probing loop reaches its values (see [`Lane`]).
    type Lanes<'w, L: Layout>;
    #[doc(hidden)]
    /// The tuple with every lifetime made `'static`: with the filter, the key of the query's shape in the world's
    /// query cache (so a shape's ids, checks and matching tables are worked out once per world).
    type Key: 'static;

    #[doc(hidden)]
    /// Registers the fetched types and records them in `access`.
    fn access(names: &mut impl Names, access: &mut Access);
    #[doc(hidden)]
    /// Borrows the terms' pools from `taken`, in access order.
    fn pools<'w, L: Layout>(taken: &mut impl Iterator<Item = &'w mut dyn ErasedPool>) -> Self::Pools<'w, L>;
    #[doc(hidden)]
    /// Each term's packed order (`None` where the layout does not pack), in term order.
    fn orders<'a, L: Layout>(pools: &'a Self::Pools<'_, L>) -> impl Iterator<Item = Option<PackedOrder<'a>>>;
    #[doc(hidden)]
    /// The smallest pool length.
    fn min_len<L: Layout>(pools: &Self::Pools<'_, L>) -> usize;
    #[doc(hidden)]
    /// The first term whose pool has `len` values and packed arrays: the best driver of a probing loop.
    fn packed_driver<L: Layout>(pools: &Self::Pools<'_, L>, len: usize) -> Option<usize>;
    #[doc(hidden)]
    /// Every term's packed values (only when every pool packs), and the first term's entities, which own the rows.
    fn into_packed<'w, L: Layout>(pools: Self::Pools<'w, L>) -> (&'w [Entity], Self::Slices<'w>);
    #[doc(hidden)]
    /// Term `driver` walked by row (its entities returned), the others probed.
    fn into_lanes<'w, L: Layout>(pools: Self::Pools<'w, L>, driver: usize) -> (&'w [Entity], Self::Lanes<'w, L>);
    #[doc(hidden)]
    /// The values at `row` of the driver / `index` of the probed pools, if every term has one.
    fn lane_get<'a, L: Layout>(lanes: &'a mut Self::Lanes<'_, L>, row: usize, index: u32) -> Option<Self::Item<'a>>;
    #[doc(hidden)]
    /// The values at `index`, if every term has one.
    fn probe<'a, L: Layout>(pools: &'a mut Self::Pools<'_, L>, index: u32) -> Option<Self::Item<'a>>;
    #[doc(hidden)]
    /// Appends the handles of the first term whose pool has `len` values, once (`done` guards it).
    fn collect<L: Layout>(
        pools: &Self::Pools<'_, L>,
        len: usize,
        done: &mut bool,
        entities: &Entities,
        out: &mut Vec<Entity>,
    );
    #[doc(hidden)]
    /// The first `len` values of each slice (so the loop's bounds checks fold away).
    fn truncate<'w>(slices: Self::Slices<'w>, len: usize) -> Self::Slices<'w>;
    #[doc(hidden)]
    /// The first `n` rows of each slice, and the rest.
    fn split_front<'w>(slices: Self::Slices<'w>, n: usize) -> (Self::Slices<'w>, Self::Slices<'w>);
    #[doc(hidden)]
    /// Every archetype table's columns of each term, by term: `columns[id]` for the term at `ids[k]`. `order`
    /// lists the terms by ascending id (it may name filter terms too, which get nothing). `None` if a required
    /// term's type is in no table.
    fn columns<'w>(columns: &'w mut [TypeColumns], ids: &[ComponentId], order: &[u8]) -> Option<Self::Columns<'w>>;
    #[doc(hidden)]
    /// One table's slices: per term, the column at `indices[k]` among its type's columns (`NO_INDEX` where an
    /// optional term's type is missing).
    fn table_slices<'a>(columns: &'a mut Self::Columns<'_>, indices: &[u32; MAX_QUERY_TYPES]) -> Self::Slices<'a>;
    #[doc(hidden)]
    /// One table's slices, borrowed for as long as `columns`, and the columns after them (see
    /// [`Term::split_column`]): per term, the column at `indices[k]` among its type's columns, where `columns`
    /// starts at column `bases[k]`; `bases[k]` moves past it. Tables taken in ascending order take ascending
    /// columns of every type, so several tables are borrowed at once.
    fn split_table<'w>(
        columns: Self::Columns<'w>,
        indices: &[u32; MAX_QUERY_TYPES],
        bases: &mut [u32; MAX_QUERY_TYPES],
    ) -> (Self::Slices<'w>, Self::Columns<'w>);
    #[doc(hidden)]
    /// Calls `f` with each row of parallel slices.
    fn each_row<Func>(entities: &[Entity], slices: Self::Slices<'_>, f: &mut Func)
    where
        Func: for<'a> FnMut(Entity, Self::Item<'a>);
    #[doc(hidden)]
    /// One entity's values as slices of one.
    fn one_slices<'a>(item: Self::Item<'a>) -> Self::Slices<'a>;
    #[doc(hidden)]
    /// The values at `index`, if every term has one, borrowed for as long as the pools.
    fn probe_into<'w, L: Layout>(pools: Self::Pools<'w, L>, index: u32) -> Option<Self::Item<'w>>;
    #[doc(hidden)]
    /// The values at each of `indices` (distinct), if every term has one, all borrowed at once.
    fn probe_many<'w, L: Layout, const N: usize>(
        pools: Self::Pools<'w, L>,
        indices: [u32; N],
    ) -> [Option<Self::Item<'w>>; N];
    #[doc(hidden)]
    /// The values at `row` of each slice, borrowed for as long as the slices.
    fn row_into<'w>(slices: Self::Slices<'w>, row: usize) -> Self::Item<'w>;
}

/// A [`QueryData`] whose terms only read: it can run through a shared `&World` ([`World::query_ref`](crate::ecs::World::query_ref)).
pub trait ReadOnlyQueryData: QueryData {
    #[doc(hidden)]
    /// The terms' pools, shared, in access order (`None` where the world has no pool of the type); `None` if
    /// no entity can match.
    fn pools_shared<'w, L: Layout>(
        pools: &mut dyn Iterator<Item = Option<&'w dyn ErasedPool>>,
    ) -> Option<Self::Pools<'w, L>>;
    #[doc(hidden)]
    /// Every archetype table's columns of each term, shared, for the ids `access` names (`ABSENT` has none);
    /// `None` if a required term's type is in no table.
    fn columns_shared<'w>(columns: &'w [TypeColumns], access: &Access) -> Option<Self::Columns<'w>>;
}

/// The pattern of `entities.iter().zip(a).zip(b)...`'s items, `((entity, a), b)...`, binding each value to its name.
macro_rules! zip_pattern {
    ([$($acc:tt)*]) => { $($acc)* };
    ([$($acc:tt)*] $head:ident $($rest:ident)*) => { zip_pattern!([($($acc)*, $head)] $($rest)*) };
}

macro_rules! impl_query_data {
    ($($T:ident $s:ident $d:ident $i:ident $k:tt),+) => {
        impl<$($T: Term),+> QueryData for ($($T,)+) {
            type Item<'a> = ($($T::Item<'a>,)+);
            type Slices<'a> = ($($T::Slice<'a>,)+);
            type Columns<'w> = ($($T::Columns<'w>,)+);
            type Pools<'w, L: Layout> = ($($T::PoolRef<'w, L>,)+);
            type Lanes<'w, L: Layout> = ($(Lane<'w, $T, L>,)+);
            type Key = ($($T::Static,)+);

            fn access(names: &mut impl Names, access: &mut Access) {
                $(access.name::<$T::Component>(names.id::<$T::Component>(), $T::MUTABLE, $T::REQUIRED, false);)+
            }

            #[inline]
            fn pools<'w, L: Layout>(taken: &mut impl Iterator<Item = &'w mut dyn ErasedPool>) -> Self::Pools<'w, L> {
                ($($T::pool_ref::<L>(taken.next().expect("a pool per term")),)+)
            }

            #[inline]
            fn orders<'a, L: Layout>(pools: &'a Self::Pools<'_, L>) -> impl Iterator<Item = Option<PackedOrder<'a>>> {
                [$($T::order::<L>(&pools.$k)),+].into_iter()
            }

            #[inline]
            fn min_len<L: Layout>(pools: &Self::Pools<'_, L>) -> usize {
                usize::MAX$(.min($T::len::<L>(&pools.$k)))+
            }

            #[inline]
            fn packed_driver<L: Layout>(pools: &Self::Pools<'_, L>, len: usize) -> Option<usize> {
                $(
                    if $T::len::<L>(&pools.$k) == len && $T::order::<L>(&pools.$k).is_some() {
                        return Some($k);
                    }
                )+
                None
            }

            #[inline]
            fn into_packed<'w, L: Layout>(($($s,)+): Self::Pools<'w, L>) -> (&'w [Entity], Self::Slices<'w>) {
                let mut rows: Option<&[Entity]> = None;
                $(let (order, $d) = $T::into_packed::<L>($s); rows.get_or_insert(order);)+
                (rows.unwrap_or(&[]), ($($d,)+))
            }

            #[inline]
            fn into_lanes<'w, L: Layout>(($($s,)+): Self::Pools<'w, L>, driver: usize) -> (&'w [Entity], Self::Lanes<'w, L>) {
                let mut rows: &[Entity] = &[];
                $(
                    let $d: Lane<'_, $T, L> = if $k == driver {
                        let (order, values) = $T::into_packed::<L>($s);
                        rows = order;
                        Lane::Packed($T::truncate(values, order.len()))
                    } else {
                        Lane::Probe($s)
                    };
                )+
                (rows, ($($d,)+))
            }

            // Forced inline, like `probe` below: as plain `#[inline]` calls the probing loops over two sparse sets
            // in different orders measured 1.5-1.9x slower.
            #[inline(always)]
            fn lane_get<'a, L: Layout>(($($d,)+): &'a mut Self::Lanes<'_, L>, row: usize, index: u32) -> Option<Self::Item<'a>> {
                $(let $i = $d.get(row, index);)+
                match ($($i,)+) {
                    ($(Some($i),)+) => Some(($($i,)+)),
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }

            #[inline(always)]
            fn probe<'a, L: Layout>(($($s,)+): &'a mut Self::Pools<'_, L>, index: u32) -> Option<Self::Item<'a>> {
                $(let $i = $T::probe::<L>($s, index);)+
                match ($($i,)+) {
                    ($(Some($i),)+) => Some(($($i,)+)),
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }

            fn collect<L: Layout>(pools: &Self::Pools<'_, L>, len: usize, done: &mut bool, entities: &Entities, out: &mut Vec<Entity>) {
                $(
                    if !*done && $T::len::<L>(&pools.$k) == len {
                        $T::collect::<L>(&pools.$k, entities, out);
                        *done = true;
                    }
                )+
            }

            #[inline]
            fn truncate<'w>(($($d,)+): Self::Slices<'w>, len: usize) -> Self::Slices<'w> {
                ($($T::truncate($d, len),)+)
            }

            #[inline]
            fn split_front<'w>(($($d,)+): Self::Slices<'w>, n: usize) -> (Self::Slices<'w>, Self::Slices<'w>) {
                $(let ($i, $d) = $T::split_front($d, n);)+
                (($($i,)+), ($($d,)+))
            }

            #[inline]
            fn columns<'w>(
                columns: &'w mut [TypeColumns],
                ids: &[ComponentId],
                order: &[u8],
            ) -> Option<Self::Columns<'w>> {
                let mut picked: [Option<&'w mut TypeColumns>; [$($k),+].len()] = Default::default();
                let fetched = picked.len();
                let bound = columns.len();
                let index = |k: usize| Some(ids[k] as usize).filter(|&id| k < fetched && id < bound);
                split_disjoint(columns, order.iter().filter_map(|&k| Some((k as usize, index(k as usize)?))), &mut picked);
                let [$($s),+] = picked;
                Some(($($T::columns($s.and_then(|c| c.as_mut()))?,)+))
            }

            #[inline]
            fn table_slices<'a>(($($d,)+): &'a mut Self::Columns<'_>, indices: &[u32; MAX_QUERY_TYPES]) -> Self::Slices<'a> {
                ($($T::table_column($d, indices[$k]),)+)
            }

            #[inline]
            fn split_table<'w>(
                ($($d,)+): Self::Columns<'w>,
                indices: &[u32; MAX_QUERY_TYPES],
                bases: &mut [u32; MAX_QUERY_TYPES],
            ) -> (Self::Slices<'w>, Self::Columns<'w>) {
                $(let ($s, $d) = $T::split_column($d, next_column(indices[$k], &mut bases[$k]));)+
                (($($s,)+), ($($d,)+))
            }

            #[inline]
            fn each_row<Func>(rows: &[Entity], slices: Self::Slices<'_>, f: &mut Func)
            where
                Func: for<'a> FnMut(Entity, Self::Item<'a>),
            {
                let ($($d,)+) = Self::truncate(slices, rows.len());
                for zip_pattern!([&entity] $($i)+) in rows.iter()$(.zip($T::rows($d)))+ {
                    f(entity, ($($i,)+));
                }
            }

            #[inline]
            fn one_slices<'a>(($($i,)+): Self::Item<'a>) -> Self::Slices<'a> {
                ($($T::one($i),)+)
            }

            #[inline]
            fn probe_into<'w, L: Layout>(($($s,)+): Self::Pools<'w, L>, index: u32) -> Option<Self::Item<'w>> {
                $(let $i = $T::probe_into::<L>($s, index)?;)+
                Some(($($i,)+))
            }

            fn probe_many<'w, L: Layout, const N: usize>(
                ($($s,)+): Self::Pools<'w, L>,
                indices: [u32; N],
            ) -> [Option<Self::Item<'w>>; N] {
                $(let mut $d = $T::probe_many::<L, N>($s, indices).into_iter();)+
                std::array::from_fn(|_| {
                    $(let $i = $d.next().expect("one per index");)+
                    match ($($i,)+) {
                        ($(Some($i),)+) => Some(($($i,)+)),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                })
            }

            #[inline]
            fn row_into<'w>(($($d,)+): Self::Slices<'w>, row: usize) -> Self::Item<'w> {
                ($($T::at_into($d, row),)+)
            }
        }

        impl<$($T: ReadOnlyTerm),+> ReadOnlyQueryData for ($($T,)+) {
            fn pools_shared<'w, L: Layout>(
                pools: &mut dyn Iterator<Item = Option<&'w dyn ErasedPool>>,
            ) -> Option<Self::Pools<'w, L>> {
                // Every term takes its pool before any `None` returns, so the filter's pools come next.
                $(let $s = $T::pool_shared::<L>(pools.next().expect("a pool per term"));)+
                Some(($($s?,)+))
            }

            fn columns_shared<'w>(columns: &'w [TypeColumns], access: &Access) -> Option<Self::Columns<'w>> {
                let ids = access.ids();
                // A type the world never met (`ABSENT`) has no columns.
                let of = |id: ComponentId| columns.get(id as usize).and_then(|c| c.as_deref());
                Some(($($T::columns_shared(of(ids[$k]))?,)+))
            }
        }
    };
}

/// The empty query, `()`: entities alone. `world.query::<()>()` visits every live entity (those with no
/// components too), and with filters only the entities that pass them: the driver is a `With` pool if there is
/// one, else the list of live entities (or every archetype table).
///
/// ```
/// use swarm::ecs::{World, Without};
/// struct Red; struct Dead;
/// let mut world = World::new();
/// let a = world.spawn(()).unwrap();
/// let b = world.spawn((Red,)).unwrap();
/// world.spawn((Red, Dead)).unwrap();
/// assert_eq!(world.query::<()>().count(), 3);
/// let mut live_red = Vec::new();
/// world.query::<()>().with::<Red>().without::<Dead>().for_each(|e, ()| live_red.push(e));
/// assert_eq!(live_red, [b]);
/// assert!(world.query_ref::<()>().get(a).is_ok());
/// ```
impl QueryData for () {
    type Item<'a> = ();
    type Slices<'a> = ();
    type Columns<'w> = ();
    type Pools<'w, L: Layout> = ();
    type Lanes<'w, L: Layout> = ();
    type Key = ();

    fn access(_: &mut impl Names, _: &mut Access) {}
    fn pools<'w, L: Layout>(_: &mut impl Iterator<Item = &'w mut dyn ErasedPool>) -> Self::Pools<'w, L> {}
    fn orders<'a, L: Layout>(_: &'a Self::Pools<'_, L>) -> impl Iterator<Item = Option<PackedOrder<'a>>> {
        // No packed arrays to walk in lock-step: the entities come from a driver (see above).
        std::iter::once(None)
    }
    fn min_len<L: Layout>(_: &()) -> usize {
        usize::MAX
    }
    fn packed_driver<L: Layout>(_: &(), _: usize) -> Option<usize> {
        None
    }
    fn into_packed<'w, L: Layout>(_: Self::Pools<'w, L>) -> (&'w [Entity], Self::Slices<'w>) {
        (&[], ())
    }
    fn into_lanes<'w, L: Layout>(_: Self::Pools<'w, L>, _: usize) -> (&'w [Entity], Self::Lanes<'w, L>) {
        (&[], ())
    }
    #[inline(always)]
    fn lane_get<'a, L: Layout>(_: &'a mut Self::Lanes<'_, L>, _: usize, _: u32) -> Option<Self::Item<'a>> {
        Some(())
    }
    #[inline(always)]
    fn probe<'a, L: Layout>(_: &'a mut Self::Pools<'_, L>, _: u32) -> Option<Self::Item<'a>> {
        Some(())
    }
    fn collect<L: Layout>(_: &(), _: usize, _: &mut bool, _: &Entities, _: &mut Vec<Entity>) {}
    #[inline]
    fn truncate<'w>(_: Self::Slices<'w>, _: usize) -> Self::Slices<'w> {}
    #[inline]
    fn split_front<'w>(_: Self::Slices<'w>, _: usize) -> (Self::Slices<'w>, Self::Slices<'w>) {
        ((), ())
    }
    fn columns<'w>(_: &'w mut [TypeColumns], _: &[ComponentId], _: &[u8]) -> Option<Self::Columns<'w>> {
        Some(())
    }
    #[inline]
    fn table_slices<'a>(_: &'a mut Self::Columns<'_>, _: &[u32; MAX_QUERY_TYPES]) -> Self::Slices<'a> {}
    #[inline]
    fn split_table<'w>(
        _: Self::Columns<'w>,
        _: &[u32; MAX_QUERY_TYPES],
        _: &mut [u32; MAX_QUERY_TYPES],
    ) -> (Self::Slices<'w>, Self::Columns<'w>) {
        ((), ())
    }
    #[inline]
    fn each_row<Func>(entities: &[Entity], _: (), f: &mut Func)
    where
        Func: for<'a> FnMut(Entity, ()),
    {
        for &entity in entities {
            f(entity, ());
        }
    }
    #[inline]
    fn one_slices<'a>(_: Self::Item<'a>) -> Self::Slices<'a> {}
    #[inline]
    fn probe_into<'w, L: Layout>(_: Self::Pools<'w, L>, _: u32) -> Option<Self::Item<'w>> {
        Some(())
    }
    fn probe_many<'w, L: Layout, const N: usize>(_: Self::Pools<'w, L>, _: [u32; N]) -> [Option<Self::Item<'w>>; N] {
        [Some(()); N]
    }
    #[inline]
    fn row_into<'w>(_: Self::Slices<'w>, _: usize) -> Self::Item<'w> {}
}

impl ReadOnlyQueryData for () {
    fn pools_shared<'w, L: Layout>(
        _: &mut dyn Iterator<Item = Option<&'w dyn ErasedPool>>,
    ) -> Option<Self::Pools<'w, L>> {
        Some(())
    }
    fn columns_shared<'w>(_: &'w [TypeColumns], _: &Access) -> Option<Self::Columns<'w>> {
        Some(())
    }
}

/// A single term without a tuple, as hecs and bevy spell it: `world.query::<&mut Pos>()` hands the closure
/// `&mut Pos` itself (the same query as `(&mut Pos,)`, whose item is a 1-tuple).
///
/// ```
/// use swarm::ecs::World;
/// struct Pos(f32);
/// let mut world = World::new();
/// let e = world.spawn((Pos(1.0),)).unwrap();
/// world.query::<&mut Pos>().for_each(|_, pos| pos.0 += 1.0);
/// assert_eq!(world.query_one::<&Pos>(e).map(|p| p.0), Ok(2.0));
/// assert_eq!(world.query_ref::<Option<&Pos>>().count(), 1);
/// ```
macro_rules! impl_bare_term {
    ($($ty:ty),+) => {$(
        impl<'r, T: 'static> QueryData for $ty {
            type Item<'a> = <Self as Term>::Item<'a>;
            type Slices<'a> = <Self as Term>::Slice<'a>;
            type Columns<'w> = <Self as Term>::Columns<'w>;
            type Pools<'w, L: Layout> = <Self as Term>::PoolRef<'w, L>;
            type Lanes<'w, L: Layout> = Lane<'w, Self, L>;
            type Key = <Self as Term>::Static;

            fn access(names: &mut impl Names, access: &mut Access) {
                access.name::<T>(names.id::<T>(), <Self as Term>::MUTABLE, <Self as Term>::REQUIRED, false);
            }
            #[inline]
            fn pools<'w, L: Layout>(taken: &mut impl Iterator<Item = &'w mut dyn ErasedPool>) -> Self::Pools<'w, L> {
                <Self as Term>::pool_ref::<L>(taken.next().expect("a pool per term"))
            }
            #[inline]
            fn orders<'a, L: Layout>(pools: &'a Self::Pools<'_, L>) -> impl Iterator<Item = Option<PackedOrder<'a>>> {
                std::iter::once(<Self as Term>::order::<L>(pools))
            }
            #[inline]
            fn min_len<L: Layout>(pools: &Self::Pools<'_, L>) -> usize {
                <Self as Term>::len::<L>(pools)
            }
            #[inline]
            fn packed_driver<L: Layout>(pools: &Self::Pools<'_, L>, len: usize) -> Option<usize> {
                (<Self as Term>::len::<L>(pools) == len && <Self as Term>::order::<L>(pools).is_some()).then_some(0)
            }
            #[inline]
            fn into_packed<'w, L: Layout>(pools: Self::Pools<'w, L>) -> (&'w [Entity], Self::Slices<'w>) {
                <Self as Term>::into_packed::<L>(pools)
            }
            #[inline]
            fn into_lanes<'w, L: Layout>(pools: Self::Pools<'w, L>, driver: usize) -> (&'w [Entity], Self::Lanes<'w, L>) {
                if driver == 0 {
                    let (order, values) = <Self as Term>::into_packed::<L>(pools);
                    (order, Lane::Packed(<Self as Term>::truncate(values, order.len())))
                } else {
                    (&[], Lane::Probe(pools))
                }
            }
            #[inline(always)]
            fn lane_get<'a, L: Layout>(lanes: &'a mut Self::Lanes<'_, L>, row: usize, index: u32) -> Option<Self::Item<'a>> {
                lanes.get(row, index)
            }
            #[inline(always)]
            fn probe<'a, L: Layout>(pools: &'a mut Self::Pools<'_, L>, index: u32) -> Option<Self::Item<'a>> {
                <Self as Term>::probe::<L>(pools, index)
            }
            fn collect<L: Layout>(pools: &Self::Pools<'_, L>, len: usize, done: &mut bool, entities: &Entities, out: &mut Vec<Entity>) {
                if !*done && <Self as Term>::len::<L>(pools) == len {
                    <Self as Term>::collect::<L>(pools, entities, out);
                    *done = true;
                }
            }
            #[inline]
            fn truncate<'w>(slices: Self::Slices<'w>, len: usize) -> Self::Slices<'w> {
                <Self as Term>::truncate(slices, len)
            }
            #[inline]
            fn split_front<'w>(slices: Self::Slices<'w>, n: usize) -> (Self::Slices<'w>, Self::Slices<'w>) {
                <Self as Term>::split_front(slices, n)
            }
            #[inline]
            fn columns<'w>(
                columns: &'w mut [TypeColumns],
                ids: &[ComponentId],
                _: &[u8],
            ) -> Option<Self::Columns<'w>> {
                <Self as Term>::columns(columns.get_mut(ids[0] as usize).and_then(|c| c.as_mut()))
            }
            #[inline]
            fn table_slices<'a>(columns: &'a mut Self::Columns<'_>, indices: &[u32; MAX_QUERY_TYPES]) -> Self::Slices<'a> {
                <Self as Term>::table_column(columns, indices[0])
            }
            #[inline]
            fn split_table<'w>(
                columns: Self::Columns<'w>,
                indices: &[u32; MAX_QUERY_TYPES],
                bases: &mut [u32; MAX_QUERY_TYPES],
            ) -> (Self::Slices<'w>, Self::Columns<'w>) {
                <Self as Term>::split_column(columns, next_column(indices[0], &mut bases[0]))
            }
            #[inline]
            fn each_row<Func>(rows: &[Entity], slices: Self::Slices<'_>, f: &mut Func)
            where
                Func: for<'a> FnMut(Entity, Self::Item<'a>),
            {
                let values = <Self as Term>::truncate(slices, rows.len());
                for (&entity, value) in rows.iter().zip(<Self as Term>::rows(values)) {
                    f(entity, value);
                }
            }
            #[inline]
            fn one_slices<'a>(item: Self::Item<'a>) -> Self::Slices<'a> {
                <Self as Term>::one(item)
            }
            #[inline]
            fn probe_into<'w, L: Layout>(pools: Self::Pools<'w, L>, index: u32) -> Option<Self::Item<'w>> {
                <Self as Term>::probe_into::<L>(pools, index)
            }
            fn probe_many<'w, L: Layout, const N: usize>(
                pools: Self::Pools<'w, L>,
                indices: [u32; N],
            ) -> [Option<Self::Item<'w>>; N] {
                <Self as Term>::probe_many::<L, N>(pools, indices)
            }
            #[inline]
            fn row_into<'w>(slices: Self::Slices<'w>, row: usize) -> Self::Item<'w> {
                <Self as Term>::at_into(slices, row)
            }
        }
    )+};
}

impl_bare_term!(&'r T, &'r mut T, Option<&'r T>, Option<&'r mut T>);

macro_rules! impl_bare_read_only {
    ($($ty:ty),+) => {$(
        impl<'r, T: 'static> ReadOnlyQueryData for $ty {
            fn pools_shared<'w, L: Layout>(
                pools: &mut dyn Iterator<Item = Option<&'w dyn ErasedPool>>,
            ) -> Option<Self::Pools<'w, L>> {
                <Self as ReadOnlyTerm>::pool_shared::<L>(pools.next().expect("a pool per term"))
            }
            fn columns_shared<'w>(columns: &'w [TypeColumns], access: &Access) -> Option<Self::Columns<'w>> {
                // A type the world never met (`ABSENT`) has no columns.
                <Self as ReadOnlyTerm>::columns_shared(columns.get(access.ids()[0] as usize).and_then(|c| c.as_deref()))
            }
        }
    )+};
}

impl_bare_read_only!(&'r T, Option<&'r T>);

impl_query_data!(A sa da ia 0);
impl_query_data!(A sa da ia 0, B sb db ib 1);
impl_query_data!(A sa da ia 0, B sb db ib 1, C sc dc ic 2);
impl_query_data!(A sa da ia 0, B sb db ib 1, C sc dc ic 2, D sd dd id 3);
impl_query_data!(A sa da ia 0, B sb db ib 1, C sc dc ic 2, D sd dd id 3, E se de ie 4);
impl_query_data!(A sa da ia 0, B sb db ib 1, C sc dc ic 2, D sd dd id 3, E se de ie 4, G sg dg ig 5);
