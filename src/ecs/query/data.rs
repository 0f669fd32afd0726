//! The query trait, [`QueryData`], and its tuples: `()` and every arity up to six, each element a query of its
//! own (a term, `Option<_>`, or another tuple). The terms are in [`super::term`]; the loops over them in
//! [`super::run`].

// The impls spell out `'w` to read like the trait's signatures they implement.
#![allow(clippy::needless_lifetimes)]

use super::access::{Access, Names};
use super::term::Lent;
use crate::ecs::entity::{Entities, Entity};
use crate::ecs::storage::archetype::ErasedColumns;
use crate::ecs::storage::sparse_set::PackedOrder;
use crate::ecs::storage::{ErasedPool, Layout};

/// What a query fetches: a term (`&T`, `&mut T`), an optional query (`Option<Q>`), or a tuple of queries. Each
/// method is one step of a loop, applied to every term (a tuple only hands it on to its elements); the loops
/// themselves are ordinary generic code, the same for every query (the walk in `run.rs`).
///
/// Mutable and shared worlds run a query through the same methods: the world lends each term its pool or columns
/// (`Lent`), exclusively or shared, and a `&T` reads from either.
///
/// A single term needs no tuple, as hecs and bevy spell it: `world.query::<&mut Pos>()` hands the closure
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
///
/// `#[derive(QueryData)]` names the terms of a struct with one lifetime: the struct is the item, the query is the
/// tuple of its field types (any query each: a term, an `Option`, a tuple, another derived query), and it runs the
/// tuple's loops. It is a [`ReadOnlyQueryData`] when every field only reads.
///
/// ```
/// use swarm::ecs::{QueryData, World};
/// struct Pos(f32);
/// struct Vel(f32);
/// struct Hunter;
///
/// #[derive(QueryData)]
/// struct Mover<'a> {
///     pos: &'a mut Pos,
///     vel: &'a Vel,
///     hunter: Option<&'a Hunter>,
/// }
///
/// #[derive(QueryData)]
/// struct Look<'a> {
///     pos: &'a Pos,
/// }
///
/// let mut world = World::new();
/// let e = world.spawn((Pos(0.0), Vel(2.0), Hunter)).unwrap();
/// world.spawn((Pos(0.0), Vel(1.0))).unwrap();
/// world.query::<Mover>().for_each(|_, m| m.pos.0 += if m.hunter.is_some() { 2.0 * m.vel.0 } else { m.vel.0 });
/// assert_eq!(world.query_ref::<Look>().get(e).map(|look| look.pos.0), Ok(4.0));
/// let mut total = 0.0;
/// world.query_ref::<Look>().for_each(|_, look| total += look.pos.0);
/// assert_eq!(total, 5.0);
/// ```
///
/// The empty query, `()`, fetches entities alone. `world.query::<()>()` visits every live entity (those with no
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
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a query",
    label = "not a query",
    note = "a query is `&T`, `&mut T`, `Option<Q>` of a query, a tuple of queries, or a struct that derives `QueryData`"
)]
pub trait QueryData {
    /// What the loop body receives: a reference, an option, or a tuple of them.
    type Item<'a>;
    /// A run of rows: a slice, or a tuple of parallel slices. (`Send`: a parallel loop hands pieces of a run to
    /// other threads.)
    type Slices<'a>: Send;
    #[doc(hidden)]
    /// The typed pool borrows of a per-component layout, one per term.
    type Pools<'w, L: Layout>: Send + Sync;
    #[doc(hidden)]
    /// Per term, how a probing loop reaches its values (see [`super::term::Lane`]).
    type Lanes<'w, L: Layout>: Send;
    #[doc(hidden)]
    /// Every archetype table's columns, one borrow per term (a term's columns are all its type's columns).
    type Columns<'w>;
    #[doc(hidden)]
    /// A run's values row by row.
    type Rows<'w>: Iterator<Item = Self::Item<'w>>;
    #[doc(hidden)]
    /// A run's entities and values row by row: the entities' slice iterator zipped with each term's by std's
    /// `Zip`, so a run advances by one index test per row however many terms it has (what a query's iterator
    /// walks).
    type Run<'w>: Iterator<Item = (Entity, Self::Item<'w>)>;
    #[doc(hidden)]
    /// The query with every lifetime made `'static`: with the filter, the key of the query's shape in the world's
    /// query cache (so a shape's ids, checks and matching tables are worked out once per world).
    type Key: 'static;
    #[doc(hidden)]
    /// How many terms (`&T` / `&mut T`) it holds: a term is named by its position among them.
    const TERMS: usize;

    #[doc(hidden)]
    /// Names the fetched types (registering them in a mutable world) and records them in `access`.
    fn access(names: &mut impl Names, access: &mut Access);
    #[doc(hidden)]
    /// Takes the terms' pools from `lent`, in access order (`None` where the world has no pool of the type); `None`
    /// if no entity can match. Every term takes its pool, so what follows in `lent` stays in step.
    fn pools<'w, L: Layout>(
        lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
    ) -> Option<Self::Pools<'w, L>>;
    #[doc(hidden)]
    /// Hands `each` every term's pool length and packed order, in term order: what picks the loop and its driver.
    /// (A callback rather than an iterator: unrolled, it costs no iterator state per query.)
    fn each_term<'a, L: Layout>(pools: &'a Self::Pools<'_, L>, each: &mut impl FnMut(TermPool<'a>));
    #[doc(hidden)]
    /// Appends the handles in term `term`'s pool.
    fn collect<L: Layout>(pools: &Self::Pools<'_, L>, term: usize, entities: &Entities, out: &mut Vec<Entity>);
    #[doc(hidden)]
    /// Every term's packed values (only when every pool packs), and the first term's entities, which own the rows.
    fn into_packed<'w, L: Layout>(pools: Self::Pools<'w, L>) -> (Option<&'w [Entity]>, Self::Slices<'w>);
    #[doc(hidden)]
    /// Term `driver` walked by row (its entities returned), the others probed.
    fn into_lanes<'w, L: Layout>(
        pools: Self::Pools<'w, L>,
        driver: usize,
    ) -> (Option<&'w [Entity]>, Self::Lanes<'w, L>);
    #[doc(hidden)]
    /// Whether the lanes with term `driver` driving can be cut in two: every written term is the driver (walked
    /// by row), so the probed pools are only read and both halves may hold them.
    fn lanes_split(driver: usize) -> bool;
    #[doc(hidden)]
    /// The lanes cut at driver row `row` (only when [`QueryData::lanes_split`] said so): the driver's packed
    /// values split, the probed pools shared by both halves.
    fn split_lanes<'w, L: Layout>(lanes: Self::Lanes<'w, L>, row: usize) -> (Self::Lanes<'w, L>, Self::Lanes<'w, L>);
    #[doc(hidden)]
    /// A second handle on the pools if every term only reads them (`None` if one writes), so several threads may
    /// probe them at once.
    fn share<'a, L: Layout>(pools: &'a Self::Pools<'_, L>) -> Option<Self::Pools<'a, L>>;
    #[doc(hidden)]
    /// The values at `row` of the driver and at `index` of the probed pools, if every term has one.
    fn lane_get<'a, L: Layout>(lanes: &'a mut Self::Lanes<'_, L>, row: usize, index: u32) -> Option<Self::Item<'a>>;
    #[doc(hidden)]
    /// The pools again, for a shorter borrow (a loop probes them once per entity).
    fn reborrow<'a, L: Layout>(pools: &'a mut Self::Pools<'_, L>) -> Self::Pools<'a, L>;
    #[doc(hidden)]
    /// The values at `index`, if every term has one.
    fn probe<'w, L: Layout>(pools: Self::Pools<'w, L>, index: u32) -> Option<Self::Item<'w>>;
    #[doc(hidden)]
    /// The values at each of `indices` (distinct), where every term has one, all borrowed at once.
    fn probe_each<'w, L: Layout>(pools: Self::Pools<'w, L>, indices: &[u32]) -> Vec<Option<Self::Item<'w>>>;
    #[doc(hidden)]
    /// Takes every table's columns of each term's type from `lent`, in access order; `None` if a required term's
    /// type is in no table.
    fn columns<'w>(lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedColumns>>>) -> Option<Self::Columns<'w>>;
    #[doc(hidden)]
    /// One table's slices, borrowed for as long as `columns`, and the columns after them: per term, the column at
    /// `indices[k]` among its type's columns (`NO_INDEX` where the table has none), where `columns` starts at
    /// column `bases[k]`; `bases[k]` moves past it. Tables taken in ascending order take ascending columns of every
    /// type, so several tables are borrowed at once. `None` if the table lacks a required term's column.
    fn split_table<'w>(
        columns: Self::Columns<'w>,
        indices: &[u32],
        bases: &mut [u32],
    ) -> (Option<Self::Slices<'w>>, Self::Columns<'w>);
    #[doc(hidden)]
    /// The first `n` rows of each slice, and the rest.
    fn split_front<'w>(slices: Self::Slices<'w>, n: usize) -> (Self::Slices<'w>, Self::Slices<'w>);
    #[doc(hidden)]
    /// The slices again, for a shorter borrow.
    fn reborrow_slices<'a>(slices: &'a mut Self::Slices<'_>) -> Self::Slices<'a>;
    #[doc(hidden)]
    /// The values at `row` of each slice.
    fn row<'w>(slices: Self::Slices<'w>, row: usize) -> Self::Item<'w>;
    #[doc(hidden)]
    /// The values of `slices`, row by row.
    fn rows<'w>(slices: Self::Slices<'w>) -> Self::Rows<'w>;
    #[doc(hidden)]
    /// The rows of `slices` with their owners: `entities[k]` owns row `k` (the slices hold at least as many rows).
    fn run<'w>(entities: &'w [Entity], slices: Self::Slices<'w>) -> Self::Run<'w>;
    #[doc(hidden)]
    /// One entity's values as slices of one.
    fn one<'a>(item: Self::Item<'a>) -> Self::Slices<'a>;

    #[doc(hidden)]
    /// Calls `f` with each row of `slices`, `entities[k]` owning row `k`. (A tuple zips its terms' slice
    /// iterators directly: their pointer walk is what the compiler turns into the tightest loop.)
    #[inline]
    fn each_row<Func>(entities: &[Entity], slices: Self::Slices<'_>, f: &mut Func)
    where
        Func: for<'a> FnMut(Entity, Self::Item<'a>),
    {
        let slices = Self::split_front(slices, entities.len()).0;
        for (&entity, item) in entities.iter().zip(Self::rows(slices)) {
            f(entity, item);
        }
    }
}

/// A [`QueryData`] that only reads (every term a `&T`): it can run through a shared `&World`
/// ([`World::query_ref`](crate::ecs::World::query_ref)).
pub trait ReadOnlyQueryData: QueryData {}

/// One term's pool as a loop sees it: how many values, and the packed order (where the layout packs and the term
/// may walk in lock-step with others).
#[doc(hidden)]
pub struct TermPool<'a> {
    pub(super) len: usize,
    pub(super) order: Option<PackedOrder<'a>>,
}

/// A tuple's values row by row (a tuple nested in a query; at the top a tuple zips its terms' rows itself).
#[doc(hidden)]
pub struct TupleRows<T>(T);

/// A tuple's run: its entities zipped with its terms' rows ([`QueryData::Run`]); `Q` names the tuple.
#[doc(hidden)]
pub struct TupleRun<'w, I, Q>(I, std::marker::PhantomData<RowsOf<'w, Q>>);

/// The type of `entities.iter().zip(a).zip(b)...`: `Zip<Zip<$acc, A::Rows>, B::Rows>`...
macro_rules! zip_type {
    ($w:lifetime [$($acc:tt)*]) => { $($acc)* };
    ($w:lifetime [$($acc:tt)*] $head:ident $($rest:ident)*) => {
        zip_type!($w [std::iter::Zip<$($acc)*, <$head as QueryData>::Rows<$w>>] $($rest)*)
    };
}

/// The item type of that zip: `((&Entity, A::Item), B::Item)`...
macro_rules! zip_item {
    ($w:lifetime [$($acc:tt)*]) => { $($acc)* };
    ($w:lifetime [$($acc:tt)*] $head:ident $($rest:ident)*) => {
        zip_item!($w [($($acc)*, <$head as QueryData>::Item<$w>)] $($rest)*)
    };
}

/// The pattern of `entities.iter().zip(a).zip(b)...`'s items, `((entity, a), b)...`, binding each value to its name.
macro_rules! zip_pattern {
    ([$($acc:tt)*]) => { $($acc)* };
    ([$($acc:tt)*] $head:ident $($rest:ident)*) => { zip_pattern!([($($acc)*, $head)] $($rest)*) };
}

/// `()` and the tuples of one to six queries. Each method hands the step on to every element in order; an element
/// that names terms by position (the driver, a table's column indices) gets the positions from its first term on.
/// The type parameters double as the names of the elements' values (`let (A, B) = pools;`).
macro_rules! impl_query_data {
    ($($T:ident)*) => {
        #[allow(non_snake_case, unused_variables, unused_mut, unused_assignments, clippy::unused_unit)]
        impl<$($T: QueryData),*> QueryData for ($($T,)*) {
            type Item<'a> = ($($T::Item<'a>,)*);
            type Slices<'a> = ($($T::Slices<'a>,)*);
            type Pools<'w, L: Layout> = ($($T::Pools<'w, L>,)*);
            type Lanes<'w, L: Layout> = ($($T::Lanes<'w, L>,)*);
            type Columns<'w> = ($($T::Columns<'w>,)*);
            type Rows<'w> = TupleRows<($($T::Rows<'w>,)*)>;
            type Run<'w> = TupleRun<'w, zip_type!('w [std::slice::Iter<'w, Entity>] $($T)*), Self>;
            type Key = ($($T::Key,)*);
            const TERMS: usize = 0 $(+ $T::TERMS)*;

            fn access(names: &mut impl Names, access: &mut Access) {
                $($T::access(names, access);)*
            }

            #[inline]
            fn pools<'w, L: Layout>(
                lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
            ) -> Option<Self::Pools<'w, L>> {
                $(let $T = $T::pools::<L>(lent);)*
                Some(($($T?,)*))
            }

            #[inline]
            fn each_term<'a, L: Layout>(pools: &'a Self::Pools<'_, L>, each: &mut impl FnMut(TermPool<'a>)) {
                let ($($T,)*) = pools;
                $($T::each_term::<L>($T, each);)*
            }

            #[inline]
            fn collect<L: Layout>(pools: &Self::Pools<'_, L>, term: usize, entities: &Entities, out: &mut Vec<Entity>) {
                let ($($T,)*) = pools;
                let mut term = term;
                $(
                    if term < $T::TERMS {
                        return $T::collect::<L>($T, term, entities, out);
                    }
                    term -= $T::TERMS;
                )*
            }

            #[inline]
            fn into_packed<'w, L: Layout>(pools: Self::Pools<'w, L>) -> (Option<&'w [Entity]>, Self::Slices<'w>) {
                let ($($T,)*) = pools;
                let mut rows = None;
                $(let $T = { let (entities, slices) = $T::into_packed::<L>($T); rows = rows.or(entities); slices };)*
                (rows, ($($T,)*))
            }

            #[inline]
            fn into_lanes<'w, L: Layout>(
                pools: Self::Pools<'w, L>,
                driver: usize,
            ) -> (Option<&'w [Entity]>, Self::Lanes<'w, L>) {
                let ($($T,)*) = pools;
                let (mut rows, mut driver) = (None, driver);
                $(
                    let $T = {
                        let (entities, lanes) = $T::into_lanes::<L>($T, driver);
                        rows = rows.or(entities);
                        driver = driver.wrapping_sub($T::TERMS);
                        lanes
                    };
                )*
                (rows, ($($T,)*))
            }

            fn lanes_split(driver: usize) -> bool {
                let mut driver = driver;
                let mut splits = true;
                $(
                    splits &= $T::lanes_split(driver);
                    driver = driver.wrapping_sub($T::TERMS);
                )*
                splits
            }

            #[inline]
            fn split_lanes<'w, L: Layout>(
                lanes: Self::Lanes<'w, L>,
                row: usize,
            ) -> (Self::Lanes<'w, L>, Self::Lanes<'w, L>) {
                let ($($T,)*) = lanes;
                $(let $T = $T::split_lanes::<L>($T, row);)*
                (($($T.0,)*), ($($T.1,)*))
            }

            #[inline]
            fn share<'a, L: Layout>(pools: &'a Self::Pools<'_, L>) -> Option<Self::Pools<'a, L>> {
                let ($($T,)*) = pools;
                Some(($($T::share::<L>($T)?,)*))
            }

            // Forced inline, like `probe` below, and every term looked up before the match: as plain `#[inline]`
            // calls the probing loops over two sparse sets in different orders measured 1.5-1.9x slower.
            #[inline(always)]
            fn lane_get<'a, L: Layout>(lanes: &'a mut Self::Lanes<'_, L>, row: usize, index: u32) -> Option<Self::Item<'a>> {
                let ($($T,)*) = lanes;
                $(let $T = $T::lane_get::<L>($T, row, index);)*
                match ($($T,)*) {
                    ($(Some($T),)*) => Some(($($T,)*)),
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }

            #[inline(always)]
            fn reborrow<'a, L: Layout>(pools: &'a mut Self::Pools<'_, L>) -> Self::Pools<'a, L> {
                let ($($T,)*) = pools;
                ($($T::reborrow::<L>($T),)*)
            }

            #[inline(always)]
            fn probe<'w, L: Layout>(pools: Self::Pools<'w, L>, index: u32) -> Option<Self::Item<'w>> {
                let ($($T,)*) = pools;
                $(let $T = $T::probe::<L>($T, index);)*
                match ($($T,)*) {
                    ($(Some($T),)*) => Some(($($T,)*)),
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }

            fn probe_each<'w, L: Layout>(pools: Self::Pools<'w, L>, indices: &[u32]) -> Vec<Option<Self::Item<'w>>> {
                let ($($T,)*) = pools;
                $(let mut $T = $T::probe_each::<L>($T, indices).into_iter();)*
                indices.iter().map(|_| {
                    match ($($T.next().expect("one per index"),)*) {
                        ($(Some($T),)*) => Some(($($T,)*)),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }).collect()
            }

            #[inline]
            fn columns<'w>(
                lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedColumns>>>,
            ) -> Option<Self::Columns<'w>> {
                $(let $T = $T::columns(lent);)*
                Some(($($T?,)*))
            }

            #[inline]
            fn split_table<'w>(
                columns: Self::Columns<'w>,
                indices: &[u32],
                bases: &mut [u32],
            ) -> (Option<Self::Slices<'w>>, Self::Columns<'w>) {
                let ($($T,)*) = columns;
                let mut at = 0;
                $(
                    let $T = $T::split_table($T, &indices[at..], &mut bases[at..]);
                    at += $T::TERMS;
                )*
                let columns = ($($T.1,)*);
                let slices = match ($($T.0,)*) {
                    ($(Some($T),)*) => Some(($($T,)*)),
                    #[allow(unreachable_patterns)]
                    _ => None,
                };
                (slices, columns)
            }


            #[inline]
            fn split_front<'w>(slices: Self::Slices<'w>, n: usize) -> (Self::Slices<'w>, Self::Slices<'w>) {
                let ($($T,)*) = slices;
                $(let $T = $T::split_front($T, n);)*
                (($($T.0,)*), ($($T.1,)*))
            }

            #[inline(always)]
            fn reborrow_slices<'a>(slices: &'a mut Self::Slices<'_>) -> Self::Slices<'a> {
                let ($($T,)*) = slices;
                ($($T::reborrow_slices($T),)*)
            }

            #[inline(always)]
            fn row<'w>(slices: Self::Slices<'w>, row: usize) -> Self::Item<'w> {
                let ($($T,)*) = slices;
                ($($T::row($T, row),)*)
            }

            #[inline]
            fn rows<'w>(slices: Self::Slices<'w>) -> Self::Rows<'w> {
                let ($($T,)*) = slices;
                TupleRows(($($T::rows($T),)*))
            }

            #[inline]
            fn run<'w>(entities: &'w [Entity], slices: Self::Slices<'w>) -> Self::Run<'w> {
                let ($($T,)*) = slices;
                TupleRun(entities.iter()$(.zip($T::rows($T)))*, std::marker::PhantomData)
            }

            #[inline]
            fn one<'a>(item: Self::Item<'a>) -> Self::Slices<'a> {
                let ($($T,)*) = item;
                ($($T::one($T),)*)
            }

            #[inline]
            fn each_row<Func>(entities: &[Entity], slices: Self::Slices<'_>, f: &mut Func)
            where
                Func: for<'a> FnMut(Entity, Self::Item<'a>),
            {
                let ($($T,)*) = Self::split_front(slices, entities.len()).0;
                for zip_pattern!([&entity] $($T)*) in entities.iter()$(.zip($T::rows($T)))* {
                    f(entity, ($($T,)*));
                }
            }
        }

        impl<$($T: ReadOnlyQueryData),*> ReadOnlyQueryData for ($($T,)*) {}

        #[allow(non_snake_case, clippy::unused_unit)]
        impl<'w, I, $($T: QueryData),*> Iterator for TupleRun<'w, I, ($($T,)*)>
        where
            I: Iterator<Item = zip_item!('w [&'w Entity] $($T)*)>,
        {
            type Item = (Entity, ($($T::Item<'w>,)*));
            #[inline]
            fn next(&mut self) -> Option<Self::Item> {
                let zip_pattern!([entity] $($T)*) = self.0.next()?;
                Some((*entity, ($($T,)*)))
            }
            #[inline]
            fn size_hint(&self) -> (usize, Option<usize>) {
                self.0.size_hint()
            }
            #[inline]
            fn fold<Acc, Func: FnMut(Acc, Self::Item) -> Acc>(self, init: Acc, mut f: Func) -> Acc {
                self.0.fold(init, |acc, zip_pattern!([entity] $($T)*)| f(acc, (*entity, ($($T,)*))))
            }
        }

        #[allow(non_snake_case, clippy::unused_unit)]
        impl<$($T: Iterator),*> Iterator for TupleRows<($($T,)*)> {
            type Item = ($($T::Item,)*);
            #[inline]
            fn next(&mut self) -> Option<Self::Item> {
                let ($($T,)*) = &mut self.0;
                Some(($($T.next()?,)*))
            }
        }
    };
}

/// Calls `$m` with every tail of the list, the empty one first: `()`, `(G)`, `(E, G)`, ... `(A, B, C, D, E, G)`.
macro_rules! smaller_tuples_too {
    ($m:ident) => { $m!(); };
    ($m:ident $head:ident $($tail:ident)*) => {
        smaller_tuples_too!($m $($tail)*);
        $m!($head $($tail)*);
    };
}

pub(crate) use smaller_tuples_too;

smaller_tuples_too!(impl_query_data A B C D E G);

/// A query that is a struct deriving `QueryData`: the tuple of its field types (its lifetime made `'static`), and the
/// moves between the tuple's items and the struct's. Its [`QueryData`] methods are the tuple's
/// (`__delegate_query!`), converting items where they come out, so the loops are the tuple's.
#[doc(hidden)]
pub trait ComposeQuery {
    /// The field types as a tuple (nested past six fields).
    type Tuple: QueryData;
    /// The struct with the world's lifetime.
    type Item<'w>;
    /// The tuple's item as the struct.
    fn from_tuple<'w>(item: <Self::Tuple as QueryData>::Item<'w>) -> Self::Item<'w>;
    /// The struct as the tuple's item.
    fn into_tuple<'w>(item: Self::Item<'w>) -> <Self::Tuple as QueryData>::Item<'w>;
}

/// The field types of a derived query, as a tuple.
#[doc(hidden)]
pub type TupleOf<Q> = <Q as ComposeQuery>::Tuple;

/// A derived query's rows: the tuple's rows, converted.
#[doc(hidden)]
pub struct ComposedRows<'w, Q, R>(R, std::marker::PhantomData<RowsOf<'w, Q>>);

/// What [`ComposedRows`] yields, for its type only: the query and the world's lifetime.
type RowsOf<'w, Q> = (&'w (), fn() -> Q);

impl<'w, Q: ComposeQuery, R: Iterator<Item = <Q::Tuple as QueryData>::Item<'w>>> ComposedRows<'w, Q, R> {
    #[doc(hidden)]
    #[inline]
    pub fn new(rows: R) -> Self {
        Self(rows, std::marker::PhantomData)
    }
}

impl<'w, Q: ComposeQuery, R: Iterator<Item = <Q::Tuple as QueryData>::Item<'w>>> Iterator for ComposedRows<'w, Q, R> {
    type Item = Q::Item<'w>;
    #[inline]
    fn next(&mut self) -> Option<Q::Item<'w>> {
        self.0.next().map(Q::from_tuple)
    }
}

/// A derived query's run: the tuple's run, its items converted.
#[doc(hidden)]
pub struct ComposedRun<'w, Q, R>(R, std::marker::PhantomData<RowsOf<'w, Q>>);

impl<'w, Q: ComposeQuery, R: Iterator<Item = (Entity, <Q::Tuple as QueryData>::Item<'w>)>> ComposedRun<'w, Q, R> {
    #[doc(hidden)]
    #[inline]
    pub fn new(run: R) -> Self {
        Self(run, std::marker::PhantomData)
    }
}

impl<'w, Q: ComposeQuery, R: Iterator<Item = (Entity, <Q::Tuple as QueryData>::Item<'w>)>> Iterator
    for ComposedRun<'w, Q, R>
{
    type Item = (Entity, Q::Item<'w>);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(entity, item)| (entity, Q::from_tuple(item)))
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

/// One term's run (`&T`, `&mut T`, `Option<Q>`): its entities zipped with its rows.
#[doc(hidden)]
pub struct TermRun<'w, R>(pub(super) std::iter::Zip<std::slice::Iter<'w, Entity>, R>);

impl<R: Iterator> Iterator for TermRun<'_, R> {
    type Item = (Entity, R::Item);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(&entity, item)| (entity, item))
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
    #[inline]
    fn fold<B, Func: FnMut(B, Self::Item) -> B>(self, init: B, mut f: Func) -> B {
        self.0.fold(init, |acc, (&entity, item)| f(acc, (entity, item)))
    }
}

/// Names a derived query's field type, so a field that is not a query is reported at the field.
#[doc(hidden)]
pub fn is_query_data<Q: QueryData>() {}

/// Implements [`QueryData`] for a type that implements [`ComposeQuery`], handing every method to its tuple and
/// converting items: what `#[derive(QueryData)]` emits. `each_row` calls the tuple's own, so the loop stays the zip of
/// the tuple's slices.
#[doc(hidden)]
#[macro_export]
macro_rules! __delegate_query {
    (impl [$($generics:tt)*] $ty:ty) => {
        // The bound makes every step below generic over `ComposeQuery::Tuple`, so a field that is not a query is
        // reported where the tuple is named, not once per step.
        impl $($generics)* $crate::ecs::QueryData for $ty
        where
            Self: $crate::ecs::__private::ComposeQuery,
        {
            type Item<'__a> = <Self as $crate::ecs::__private::ComposeQuery>::Item<'__a>;
            type Slices<'__a> =
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::Slices<'__a>;
            type Pools<'__w, __L: $crate::ecs::__private::Layout> =
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::Pools<'__w, __L>;
            type Lanes<'__w, __L: $crate::ecs::__private::Layout> =
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::Lanes<'__w, __L>;
            type Columns<'__w> =
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::Columns<'__w>;
            type Rows<'__w> = $crate::ecs::__private::ComposedRows<
                '__w,
                Self,
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::Rows<'__w>,
            >;
            type Run<'__w> = $crate::ecs::__private::ComposedRun<
                '__w,
                Self,
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::Run<'__w>,
            >;
            type Key = <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::Key;
            const TERMS: usize = <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::TERMS;

            fn access(
                names: &mut impl $crate::ecs::__private::Names,
                access: &mut $crate::ecs::__private::Access,
            ) {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::access(names, access)
            }
            #[inline]
            fn pools<'__w, __L: $crate::ecs::__private::Layout>(
                lent: &mut impl ::core::iter::Iterator<
                    Item = ::core::option::Option<
                        $crate::ecs::__private::Lent<'__w, dyn $crate::ecs::__private::ErasedPool>,
                    >,
                >,
            ) -> ::core::option::Option<Self::Pools<'__w, __L>> {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::pools::<__L>(lent)
            }
            #[inline]
            fn each_term<'__a, __L: $crate::ecs::__private::Layout>(
                pools: &'__a Self::Pools<'_, __L>,
                each: &mut impl ::core::ops::FnMut($crate::ecs::__private::TermPool<'__a>),
            ) {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::each_term::<__L>(pools, each)
            }
            fn collect<__L: $crate::ecs::__private::Layout>(
                pools: &Self::Pools<'_, __L>,
                term: usize,
                entities: &$crate::ecs::Entities,
                out: &mut ::std::vec::Vec<$crate::ecs::Entity>,
            ) {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::collect::<__L>(
                    pools, term, entities, out,
                )
            }
            #[inline]
            fn into_packed<'__w, __L: $crate::ecs::__private::Layout>(
                pools: Self::Pools<'__w, __L>,
            ) -> (::core::option::Option<&'__w [$crate::ecs::Entity]>, Self::Slices<'__w>) {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::into_packed::<__L>(pools)
            }
            #[inline]
            fn into_lanes<'__w, __L: $crate::ecs::__private::Layout>(
                pools: Self::Pools<'__w, __L>,
                driver: usize,
            ) -> (::core::option::Option<&'__w [$crate::ecs::Entity]>, Self::Lanes<'__w, __L>) {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::into_lanes::<__L>(pools, driver)
            }
            fn lanes_split(driver: usize) -> bool {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::lanes_split(driver)
            }
            #[inline]
            fn split_lanes<'__w, __L: $crate::ecs::__private::Layout>(
                lanes: Self::Lanes<'__w, __L>,
                row: usize,
            ) -> (Self::Lanes<'__w, __L>, Self::Lanes<'__w, __L>) {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::split_lanes::<__L>(lanes, row)
            }
            #[inline]
            fn share<'__a, __L: $crate::ecs::__private::Layout>(
                pools: &'__a Self::Pools<'_, __L>,
            ) -> ::core::option::Option<Self::Pools<'__a, __L>> {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::share::<__L>(pools)
            }
            #[inline(always)]
            fn lane_get<'__a, __L: $crate::ecs::__private::Layout>(
                lanes: &'__a mut Self::Lanes<'_, __L>,
                row: usize,
                index: u32,
            ) -> ::core::option::Option<Self::Item<'__a>> {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::lane_get::<__L>(lanes, row, index)
                    .map(<Self as $crate::ecs::__private::ComposeQuery>::from_tuple)
            }
            #[inline(always)]
            fn reborrow<'__a, __L: $crate::ecs::__private::Layout>(
                pools: &'__a mut Self::Pools<'_, __L>,
            ) -> Self::Pools<'__a, __L> {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::reborrow::<__L>(pools)
            }
            #[inline(always)]
            fn probe<'__w, __L: $crate::ecs::__private::Layout>(
                pools: Self::Pools<'__w, __L>,
                index: u32,
            ) -> ::core::option::Option<Self::Item<'__w>> {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::probe::<__L>(pools, index)
                    .map(<Self as $crate::ecs::__private::ComposeQuery>::from_tuple)
            }
            fn probe_each<'__w, __L: $crate::ecs::__private::Layout>(
                pools: Self::Pools<'__w, __L>,
                indices: &[u32],
            ) -> ::std::vec::Vec<::core::option::Option<Self::Item<'__w>>> {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::probe_each::<__L>(pools, indices)
                    .into_iter()
                    .map(|item| item.map(<Self as $crate::ecs::__private::ComposeQuery>::from_tuple))
                    .collect()
            }
            #[inline]
            fn columns<'__w>(
                lent: &mut impl ::core::iter::Iterator<
                    Item = ::core::option::Option<
                        $crate::ecs::__private::Lent<'__w, dyn $crate::ecs::__private::ErasedColumns>,
                    >,
                >,
            ) -> ::core::option::Option<Self::Columns<'__w>> {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::columns(lent)
            }
            #[inline]
            fn split_table<'__w>(
                columns: Self::Columns<'__w>,
                indices: &[u32],
                bases: &mut [u32],
            ) -> (::core::option::Option<Self::Slices<'__w>>, Self::Columns<'__w>) {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::split_table(columns, indices, bases)
            }
            #[inline]
            fn split_front<'__w>(slices: Self::Slices<'__w>, n: usize) -> (Self::Slices<'__w>, Self::Slices<'__w>) {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::split_front(slices, n)
            }
            #[inline(always)]
            fn reborrow_slices<'__a>(slices: &'__a mut Self::Slices<'_>) -> Self::Slices<'__a> {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::reborrow_slices(slices)
            }
            #[inline(always)]
            fn row<'__w>(slices: Self::Slices<'__w>, row: usize) -> Self::Item<'__w> {
                <Self as $crate::ecs::__private::ComposeQuery>::from_tuple(
                    <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::row(slices, row),
                )
            }
            #[inline]
            fn rows<'__w>(slices: Self::Slices<'__w>) -> Self::Rows<'__w> {
                $crate::ecs::__private::ComposedRows::new(
                    <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::rows(slices),
                )
            }
            #[inline]
            fn run<'__w>(
                entities: &'__w [$crate::ecs::Entity],
                slices: Self::Slices<'__w>,
            ) -> Self::Run<'__w> {
                $crate::ecs::__private::ComposedRun::new(
                    <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::run(entities, slices),
                )
            }
            #[inline]
            fn one<'__a>(item: Self::Item<'__a>) -> Self::Slices<'__a> {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::one(
                    <Self as $crate::ecs::__private::ComposeQuery>::into_tuple(item),
                )
            }
            #[inline]
            fn each_row<__F>(entities: &[$crate::ecs::Entity], slices: Self::Slices<'_>, f: &mut __F)
            where
                __F: for<'__a> ::core::ops::FnMut($crate::ecs::Entity, Self::Item<'__a>),
            {
                <$crate::ecs::__private::TupleOf<Self> as $crate::ecs::QueryData>::each_row(
                    entities,
                    slices,
                    &mut |entity, item| f(entity, <Self as $crate::ecs::__private::ComposeQuery>::from_tuple(item)),
                )
            }
        }
    };
}
