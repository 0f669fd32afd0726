//! Queries: tuples of `&T` / `&mut T`, filtered by [`With`] / [`Without`], run the same way on every backend.
//!
//! (The example is on [`Query`].)
//!
//! How a query runs: a mutable world looks the query's shape up in its cache (one hash lookup: the ids, the access
//! check, and on the archetype backend the matching tables are worked out the first time only), matches its backend
//! **once**, then calls a loop monomorphized for that layout.
//! - Per-component layouts ([`Layout`]): if every fetched pool keeps packed arrays in the same entity order
//!   (sparse sets after `sort_as`, or that got the same spawns and despawns) and no `With` pool is smaller, the
//!   packed value arrays are walked in lock-step. Sparse sets found alike once keep a journal of the positions
//!   they change, so the next check compares only those (see [`PackedOrder`]).
//!   Otherwise the smallest pool (fetched or `With`) drives (the textbook movement system): a fetched sparse set is
//!   walked by row and the other pools are probed by index; any other driver's handles are copied to a reused
//!   scratch buffer and every pool is probed by index.
//! - Archetype tables: every table whose set holds the fetched and `With` types and none of the `Without` types is
//!   walked column by column. A type's columns are kept together (one per table holding it), so each term's are
//!   downcast once per query and the shape's cache lists the matching tables with each term's column index.
//!
//! Either way the matches go to a [`Visit`]or: [`Query::for_each`] calls its closure per entity;
//! [`Query::for_each_run`] hands over runs of rows as parallel slices (the whole packed arrays of a lock-step walk,
//! a table's columns), so the caller's loop body compiles inside the caller's loop.
//!
//! A query may name each component type once. `(&mut A, &A)` would hand out a mutable and a shared reference to
//! the same value, so it is refused with [`QueryError::Conflict`]; `(&A, &A)` and a filter on a fetched type are
//! refused the same way (say it once).

// The impls spell out `'w` to read like the trait's signatures they implement.
#![allow(clippy::needless_lifetimes)]

use super::commands::{CommandQueue, Commands};
use super::component::{ComponentId, ComponentSet};
use super::entity::{Entities, Entity};
use super::storage::archetype::{typed, typed_mut, Archetypes, ErasedColumns, Table, TypeColumns};
use super::storage::sparse_set::PackedOrder;
use super::storage::{dispatch, AnyPool, ErasedPool, Layout, Pool, Registry};
use super::world::{ensure_pools, Storage, World};
use rustc_hash::FxHashMap;
use std::any::{type_name, TypeId};
use std::collections::hash_map::{Entry, VacantEntry};
use std::fmt;
use std::marker::PhantomData;

/// Most component types one query may name (fetched and filters together).
pub const MAX_QUERY_TYPES: usize = 12;

/// Why a query was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// The same component type appears twice (fetched twice, or fetched and filtered).
    Conflict {
        /// The type named twice.
        component: &'static str,
        /// Whether one of the two asks for `&mut`.
        mutable: bool,
    },
    /// More than [`MAX_QUERY_TYPES`] types.
    TooManyTypes,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::Conflict { component, mutable: true } => write!(
                f,
                "query conflict: `{component}` is requested twice and one request is `&mut`; \
                 a mutable reference may not alias another reference to the same value"
            ),
            QueryError::Conflict { component, mutable: false } => {
                write!(f, "query conflict: `{component}` is named twice in one query (fetch or filter it once)")
            }
            QueryError::TooManyTypes => {
                write!(f, "a query names at most {MAX_QUERY_TYPES} component types")
            }
        }
    }
}

impl std::error::Error for QueryError {}

/// Why [`Query::get`] (and [`World::query_one_mut`] and friends) found no match for an entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryOneError {
    /// The handle is stale or was never spawned.
    NoSuchEntity(Entity),
    /// The entity is alive but lacks a fetched component or fails the filter.
    Unsatisfied(Entity),
    /// The same entity is named twice in one [`Query::get_many`]: it would hand out two references to one value.
    Aliased(Entity),
    /// The query itself is refused (see [`QueryError`]).
    Refused(QueryError),
}

impl fmt::Display for QueryOneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryOneError::NoSuchEntity(e) => write!(f, "no such entity: {e:?} is stale or was never spawned"),
            QueryOneError::Unsatisfied(e) => {
                write!(f, "entity {e:?} does not match the query (a component is missing or the filter fails)")
            }
            QueryOneError::Aliased(e) => write!(
                f,
                "entity {e:?} is named twice in one lookup; a mutable reference may not alias another reference \
                 to the same value"
            ),
            QueryOneError::Refused(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for QueryOneError {}

/// The component ids a query names, in order, with whether each is borrowed mutably.
#[derive(Default)]
pub struct Access {
    ids: [ComponentId; MAX_QUERY_TYPES],
    types: [Option<TypeId>; MAX_QUERY_TYPES],
    mutable: [bool; MAX_QUERY_TYPES],
    len: usize,
    /// How many of the ids are fetched terms (the filter's follow).
    fetched: usize,
    /// Types that must be present (fetched and `With`).
    pub required: ComponentSet,
    /// Types that must be absent (`Without`).
    pub excluded: ComponentSet,
    /// Inside an [`Or`]: types are named (and checked for conflicts) but neither required nor excluded as such.
    neutral: u8,
    /// A required type the world has never met (a query through `&World`, which registers nothing): no entity
    /// can match.
    unmatchable: bool,
    error: Option<QueryError>,
}

/// The id of a type a query through `&World` names but the world has never met.
const ABSENT: ComponentId = ComponentId::MAX;

impl Access {
    /// Records a named type: `id` is `None` if the world has not met it (shared queries only). `required` for
    /// fetched terms and `With`; `excluded` for `Without`.
    fn name<T: 'static>(&mut self, id: Option<ComponentId>, mutable: bool, required: bool, excluded: bool) {
        if self.error.is_some() {
            return;
        }
        let (required, excluded) = if self.neutral > 0 { (false, false) } else { (required, excluded) };
        if let Some(k) = self.types[..self.len].iter().position(|&other| other == Some(TypeId::of::<T>())) {
            let component = type_name::<T>();
            self.error = Some(QueryError::Conflict { component, mutable: mutable || self.mutable[k] });
            return;
        }
        if self.len == MAX_QUERY_TYPES {
            self.error = Some(QueryError::TooManyTypes);
            return;
        }
        self.ids[self.len] = id.unwrap_or(ABSENT);
        self.types[self.len] = Some(TypeId::of::<T>());
        self.mutable[self.len] = mutable;
        self.len += 1;
        match id {
            Some(id) if required => {
                self.required.insert(id);
            }
            Some(id) if excluded => {
                self.excluded.insert(id);
            }
            None if required => self.unmatchable = true,
            _ => {}
        }
    }

    /// The ids, in the order the query names them.
    #[inline]
    pub fn ids(&self) -> &[ComponentId] {
        &self.ids[..self.len]
    }
}

/// One element of a query tuple: `&T` or `&mut T`.
pub trait Term {
    /// The component type.
    type Component: 'static;
    #[doc(hidden)]
    /// The term with its lifetime made `'static` (`&'static T` for `&T`): it names the query's shape in the
    /// world's query cache (see [`QueryData::Key`]).
    type Static: 'static;
    #[doc(hidden)]
    /// Whether the term borrows mutably.
    const MUTABLE: bool;
    #[doc(hidden)]
    /// Whether an entity must have the component to match (`false` for `Option<&T>`).
    const REQUIRED: bool = true;
    /// What the loop body receives.
    type Item<'a>;
    #[doc(hidden)]
    /// The typed pool borrow of a per-component layout.
    type PoolRef<'w, L: Layout>;
    /// Packed values: a slice of a sparse-set pool or of an archetype column, walked by row.
    type Slice<'w>;
    #[doc(hidden)]
    /// A slice's values row by row (a slice iterator: its pointer walk is what the compiler turns into the tightest
    /// loop, as for a plain `Vec`).
    type Rows<'w>: Iterator<Item = Self::Item<'w>>;
    #[doc(hidden)]
    /// Every archetype table's column of the component, borrowed once per query.
    type Columns<'w>;

    #[doc(hidden)]
    /// Borrows the typed pool out of an erased one (one downcast per query).
    fn pool_ref<'w, L: Layout>(pool: &'w mut dyn ErasedPool) -> Self::PoolRef<'w, L>;
    #[doc(hidden)]
    /// The value at `index`, if present.
    fn probe<'a, L: Layout>(pool: &'a mut Self::PoolRef<'_, L>, index: u32) -> Option<Self::Item<'a>>;
    #[doc(hidden)]
    /// Number of values in the pool.
    fn len<L: Layout>(pool: &Self::PoolRef<'_, L>) -> usize;
    #[doc(hidden)]
    /// Appends the pool's indices in its iteration order.
    fn collect<L: Layout>(pool: &Self::PoolRef<'_, L>, entities: &Entities, out: &mut Vec<Entity>);
    #[doc(hidden)]
    /// The packed entity order of the pool, if the layout packs (see [`Pool::order`]).
    fn order<'a, L: Layout>(pool: &'a Self::PoolRef<'_, L>) -> Option<PackedOrder<'a>>;
    #[doc(hidden)]
    /// Turns the pool borrow into its packed values (only called when `order` is `Some`).
    fn into_packed<'w, L: Layout>(pool: Self::PoolRef<'w, L>) -> (&'w [Entity], Self::Slice<'w>);
    #[doc(hidden)]
    /// The typed columns of the component out of the erased ones (one downcast per query); `None` (the world has
    /// no table with the type) for a required term means no table matches.
    fn columns<'w>(columns: Option<&'w mut Box<dyn ErasedColumns>>) -> Option<Self::Columns<'w>>;
    #[doc(hidden)]
    /// One table's column: the one at `index` among the type's columns (`NO_INDEX` where the table has none: then
    /// the table matches only an optional term).
    fn table_column<'a>(columns: &'a mut Self::Columns<'_>, index: u32) -> Self::Slice<'a>;
    #[doc(hidden)]
    /// The column at `index` (counted from the start of `columns`) and the columns after it, both borrowed for as
    /// long as `columns`: one-entity and many-entity lookups take their tables' columns this way, in ascending
    /// order. `NO_INDEX` (an optional term's type the table lacks) takes nothing and leaves `columns` whole.
    fn split_column<'w>(columns: Self::Columns<'w>, index: u32) -> (Self::Slice<'w>, Self::Columns<'w>);
    #[doc(hidden)]
    /// The first `len` values (so the loop's bounds checks fold away).
    fn truncate<'w>(slice: Self::Slice<'w>, len: usize) -> Self::Slice<'w>;
    #[doc(hidden)]
    /// The value at `row`.
    fn at<'a>(slice: &'a mut Self::Slice<'_>, row: usize) -> Self::Item<'a>;
    #[doc(hidden)]
    /// The values of `slice`, row by row.
    fn rows<'w>(slice: Self::Slice<'w>) -> Self::Rows<'w>;
    #[doc(hidden)]
    /// The first `n` values, and the rest.
    fn split_front<'w>(slice: Self::Slice<'w>, n: usize) -> (Self::Slice<'w>, Self::Slice<'w>);
    #[doc(hidden)]
    /// One value as a slice of one.
    fn one<'a>(item: Self::Item<'a>) -> Self::Slice<'a>;
    #[doc(hidden)]
    /// The value at `index`, if present, borrowed for as long as the pool.
    fn probe_into<'w, L: Layout>(pool: Self::PoolRef<'w, L>, index: u32) -> Option<Self::Item<'w>>;
    #[doc(hidden)]
    /// The values at `indices` (distinct), each if present, all borrowed at once.
    fn probe_many<'w, L: Layout, const N: usize>(
        pool: Self::PoolRef<'w, L>,
        indices: [u32; N],
    ) -> [Option<Self::Item<'w>>; N];
    #[doc(hidden)]
    /// The value at `row`, borrowed for as long as the slice.
    fn at_into<'w>(slice: Self::Slice<'w>, row: usize) -> Self::Item<'w>;
}

/// Not a column index: the table has no column of an optional term's type.
const NO_INDEX: u32 = u32::MAX;

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

/// A term that only reads (`&T`, `Option<&T>`): it can run through a shared `&World` ([`World::query_ref`]).
pub trait ReadOnlyTerm: Term {
    #[doc(hidden)]
    /// The typed pool borrow from a shared one (`None` where the world has no pool of the type); `None` if no
    /// entity can match.
    fn pool_shared<'w, L: Layout>(pool: Option<&'w dyn ErasedPool>) -> Option<Self::PoolRef<'w, L>>;
    #[doc(hidden)]
    /// The typed columns, shared, like [`Term::columns`].
    fn columns_shared<'w>(columns: Option<&'w dyn ErasedColumns>) -> Option<Self::Columns<'w>>;
}

impl<T: 'static> ReadOnlyTerm for &T {
    fn pool_shared<'w, L: Layout>(pool: Option<&'w dyn ErasedPool>) -> Option<&'w L::Pool<T>> {
        pool.map(|pool| L::pool_ref(AnyPool::<T>::downcast_ref(pool)))
    }
    fn columns_shared<'w>(columns: Option<&'w dyn ErasedColumns>) -> Option<&'w [Vec<T>]> {
        columns.map(typed::<T>)
    }
}

impl<'r, T: 'static> ReadOnlyTerm for Option<&'r T> {
    fn pool_shared<'w, L: Layout>(pool: Option<&'w dyn ErasedPool>) -> Option<Option<&'w L::Pool<T>>> {
        Some(<&T as ReadOnlyTerm>::pool_shared::<L>(pool))
    }
    fn columns_shared<'w>(columns: Option<&'w dyn ErasedColumns>) -> Option<Option<&'w [Vec<T>]>> {
        Some(columns.map(typed::<T>))
    }
}

impl<T: 'static> Term for &T {
    type Component = T;
    type Static = &'static T;
    const MUTABLE: bool = false;
    type Item<'a> = &'a T;
    type PoolRef<'w, L: Layout> = &'w L::Pool<T>;
    type Slice<'w> = &'w [T];
    type Rows<'w> = std::slice::Iter<'w, T>;
    type Columns<'w> = &'w [Vec<T>];

    fn pool_ref<'w, L: Layout>(pool: &'w mut dyn ErasedPool) -> &'w L::Pool<T> {
        L::pool_mut(AnyPool::<T>::downcast_mut(pool))
    }
    #[inline]
    fn probe<'a, L: Layout>(pool: &'a mut &L::Pool<T>, index: u32) -> Option<&'a T> {
        pool.get(index)
    }
    fn len<L: Layout>(pool: &&L::Pool<T>) -> usize {
        pool.len()
    }
    fn collect<L: Layout>(pool: &&L::Pool<T>, entities: &Entities, out: &mut Vec<Entity>) {
        pool.collect_entities(entities, out)
    }
    fn order<'a, L: Layout>(pool: &'a &L::Pool<T>) -> Option<PackedOrder<'a>> {
        pool.order()
    }
    fn into_packed<'w, L: Layout>(pool: Self::PoolRef<'w, L>) -> (&'w [Entity], &'w [T]) {
        pool.packed().expect("into_packed on a layout without packed arrays")
    }
    fn columns<'w>(columns: Option<&'w mut Box<dyn ErasedColumns>>) -> Option<&'w [Vec<T>]> {
        columns.map(|columns| typed::<T>(&**columns))
    }
    #[inline]
    fn table_column<'a>(columns: &'a mut &[Vec<T>], index: u32) -> &'a [T] {
        &columns[index as usize]
    }
    #[inline]
    fn split_column<'w>(columns: Self::Columns<'w>, index: u32) -> (Self::Slice<'w>, Self::Columns<'w>) {
        let (head, tail) = columns.split_at(index as usize + 1);
        (&head[index as usize], tail)
    }
    #[inline]
    fn truncate<'w>(slice: Self::Slice<'w>, len: usize) -> Self::Slice<'w> {
        &slice[..len]
    }
    #[inline]
    fn at<'a>(slice: &'a mut &[T], row: usize) -> &'a T {
        &slice[row]
    }
    #[inline]
    fn rows<'w>(slice: Self::Slice<'w>) -> Self::Rows<'w> {
        slice.iter()
    }
    #[inline]
    fn split_front<'w>(slice: Self::Slice<'w>, n: usize) -> (Self::Slice<'w>, Self::Slice<'w>) {
        slice.split_at(n)
    }
    #[inline]
    fn one<'a>(item: Self::Item<'a>) -> Self::Slice<'a> {
        std::slice::from_ref(item)
    }
    #[inline]
    fn probe_into<'w, L: Layout>(pool: Self::PoolRef<'w, L>, index: u32) -> Option<Self::Item<'w>> {
        pool.get(index)
    }
    fn probe_many<'w, L: Layout, const N: usize>(
        pool: Self::PoolRef<'w, L>,
        indices: [u32; N],
    ) -> [Option<Self::Item<'w>>; N] {
        indices.map(|index| pool.get(index))
    }
    #[inline]
    fn at_into<'w>(slice: Self::Slice<'w>, row: usize) -> Self::Item<'w> {
        &slice[row]
    }
}

impl<T: 'static> Term for &mut T {
    type Component = T;
    type Static = &'static mut T;
    const MUTABLE: bool = true;
    type Item<'a> = &'a mut T;
    type PoolRef<'w, L: Layout> = &'w mut L::Pool<T>;
    type Slice<'w> = &'w mut [T];
    type Rows<'w> = std::slice::IterMut<'w, T>;
    type Columns<'w> = &'w mut [Vec<T>];

    fn pool_ref<'w, L: Layout>(pool: &'w mut dyn ErasedPool) -> &'w mut L::Pool<T> {
        L::pool_mut(AnyPool::<T>::downcast_mut(pool))
    }
    #[inline]
    fn probe<'a, L: Layout>(pool: &'a mut &mut L::Pool<T>, index: u32) -> Option<&'a mut T> {
        pool.get_mut(index)
    }
    fn len<L: Layout>(pool: &&mut L::Pool<T>) -> usize {
        pool.len()
    }
    fn collect<L: Layout>(pool: &&mut L::Pool<T>, entities: &Entities, out: &mut Vec<Entity>) {
        pool.collect_entities(entities, out)
    }
    fn order<'a, L: Layout>(pool: &'a &mut L::Pool<T>) -> Option<PackedOrder<'a>> {
        pool.order()
    }
    fn into_packed<'w, L: Layout>(pool: Self::PoolRef<'w, L>) -> (&'w [Entity], &'w mut [T]) {
        pool.packed_mut().expect("into_packed on a layout without packed arrays")
    }
    fn columns<'w>(columns: Option<&'w mut Box<dyn ErasedColumns>>) -> Option<&'w mut [Vec<T>]> {
        columns.map(|columns| typed_mut::<T>(&mut **columns))
    }
    #[inline]
    fn table_column<'a>(columns: &'a mut &mut [Vec<T>], index: u32) -> &'a mut [T] {
        &mut columns[index as usize]
    }
    #[inline]
    fn split_column<'w>(columns: Self::Columns<'w>, index: u32) -> (Self::Slice<'w>, Self::Columns<'w>) {
        let (head, tail) = columns.split_at_mut(index as usize + 1);
        (&mut head[index as usize], tail)
    }
    #[inline]
    fn truncate<'w>(slice: Self::Slice<'w>, len: usize) -> Self::Slice<'w> {
        &mut slice[..len]
    }
    #[inline]
    fn at<'a>(slice: &'a mut &mut [T], row: usize) -> &'a mut T {
        &mut slice[row]
    }
    #[inline]
    fn rows<'w>(slice: Self::Slice<'w>) -> Self::Rows<'w> {
        slice.iter_mut()
    }
    #[inline]
    fn split_front<'w>(slice: Self::Slice<'w>, n: usize) -> (Self::Slice<'w>, Self::Slice<'w>) {
        slice.split_at_mut(n)
    }
    #[inline]
    fn one<'a>(item: Self::Item<'a>) -> Self::Slice<'a> {
        std::slice::from_mut(item)
    }
    #[inline]
    fn probe_into<'w, L: Layout>(pool: Self::PoolRef<'w, L>, index: u32) -> Option<Self::Item<'w>> {
        pool.get_mut(index)
    }
    fn probe_many<'w, L: Layout, const N: usize>(
        pool: Self::PoolRef<'w, L>,
        indices: [u32; N],
    ) -> [Option<Self::Item<'w>>; N] {
        pool.get_disjoint_mut(indices)
    }
    #[inline]
    fn at_into<'w>(slice: Self::Slice<'w>, row: usize) -> Self::Item<'w> {
        &mut slice[row]
    }
}

/// An optional term's values row by row: the column's if the table or pool has one, else `None` for every row (the
/// walk is bounded by the entities it is zipped with).
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

/// `Option<&T>` and `Option<&mut T>`: the component if the entity has it. An optional term never restricts which
/// entities match and never drives a loop: a query of optional terms only visits every live entity (or those its
/// filters allow).
macro_rules! impl_optional_term {
    ($($mut:ident)?; $mutable:expr, $get:ident, $packed:ident, $split:ident, $one:path) => {
        impl<'r, T: 'static> Term for Option<&'r $($mut)? T> {
            type Component = T;
            type Static = Option<<&'r $($mut)? T as Term>::Static>;
            const MUTABLE: bool = $mutable;
            const REQUIRED: bool = false;
            type Item<'a> = Option<<&'r $($mut)? T as Term>::Item<'a>>;
            /// `None` where the world has no pool of `T` (a shared query of a type it never met).
            type PoolRef<'w, L: Layout> = Option<<&'r $($mut)? T as Term>::PoolRef<'w, L>>;
            type Slice<'w> = Option<<&'r $($mut)? T as Term>::Slice<'w>>;
            type Rows<'w> = OptionRows<<&'r $($mut)? T as Term>::Rows<'w>>;
            /// `None` where no table holds `T`.
            type Columns<'w> = Option<<&'r $($mut)? T as Term>::Columns<'w>>;

            fn pool_ref<'w, L: Layout>(pool: &'w mut dyn ErasedPool) -> Self::PoolRef<'w, L> {
                Some(<&'r $($mut)? T as Term>::pool_ref::<L>(pool))
            }
            #[inline]
            fn probe<'a, L: Layout>(pool: &'a mut Self::PoolRef<'_, L>, index: u32) -> Option<Self::Item<'a>> {
                Some(pool.as_mut().and_then(|pool| pool.$get(index)))
            }
            fn len<L: Layout>(_: &Self::PoolRef<'_, L>) -> usize {
                usize::MAX // never the smallest: an optional term does not drive
            }
            fn collect<L: Layout>(_: &Self::PoolRef<'_, L>, _: &Entities, _: &mut Vec<Entity>) {}
            fn order<'a, L: Layout>(_: &'a Self::PoolRef<'_, L>) -> Option<PackedOrder<'a>> {
                None // its pool holds other entities than the others': never walked in lock-step
            }
            fn into_packed<'w, L: Layout>(pool: Self::PoolRef<'w, L>) -> (&'w [Entity], Self::Slice<'w>) {
                let pool = pool.expect("into_packed on a pool that exists");
                let (entities, values) = pool.$packed().expect("into_packed on a layout without packed arrays");
                (entities, Some(values))
            }
            fn columns<'w>(columns: Option<&'w mut Box<dyn ErasedColumns>>) -> Option<Self::Columns<'w>> {
                Some(<&'r $($mut)? T as Term>::columns(columns))
            }
            #[inline]
            fn table_column<'a>(columns: &'a mut Self::Columns<'_>, index: u32) -> Self::Slice<'a> {
                match (columns, index) {
                    (Some(columns), index) if index != NO_INDEX => {
                        Some(<&'r $($mut)? T as Term>::table_column(columns, index))
                    }
                    _ => None,
                }
            }
            #[inline]
            fn split_column<'w>(columns: Self::Columns<'w>, index: u32) -> (Self::Slice<'w>, Self::Columns<'w>) {
                match columns {
                    Some(columns) if index != NO_INDEX => {
                        let (column, rest) = <&'r $($mut)? T as Term>::split_column(columns, index);
                        (Some(column), Some(rest))
                    }
                    columns => (None, columns),
                }
            }
            #[inline]
            fn truncate<'w>(slice: Self::Slice<'w>, len: usize) -> Self::Slice<'w> {
                slice.map(|s| <&'r $($mut)? T as Term>::truncate(s, len))
            }
            #[inline]
            fn at<'a>(slice: &'a mut Self::Slice<'_>, row: usize) -> Self::Item<'a> {
                slice.as_mut().map(|s| <&'r $($mut)? T as Term>::at(s, row))
            }
            #[inline]
            fn rows<'w>(slice: Self::Slice<'w>) -> Self::Rows<'w> {
                OptionRows(slice.map(<&'r $($mut)? T as Term>::rows))
            }
            #[inline]
            fn split_front<'w>(slice: Self::Slice<'w>, n: usize) -> (Self::Slice<'w>, Self::Slice<'w>) {
                match slice {
                    Some(s) => {
                        let (front, back) = s.$split(n);
                        (Some(front), Some(back))
                    }
                    None => (None, None),
                }
            }
            #[inline]
            fn one<'a>(item: Self::Item<'a>) -> Self::Slice<'a> {
                item.map($one)
            }
            #[inline]
            fn probe_into<'w, L: Layout>(pool: Self::PoolRef<'w, L>, index: u32) -> Option<Self::Item<'w>> {
                Some(pool.and_then(|pool| <&'r $($mut)? T as Term>::probe_into::<L>(pool, index)))
            }
            fn probe_many<'w, L: Layout, const N: usize>(
                pool: Self::PoolRef<'w, L>,
                indices: [u32; N],
            ) -> [Option<Self::Item<'w>>; N] {
                match pool {
                    Some(pool) => <&'r $($mut)? T as Term>::probe_many::<L, N>(pool, indices).map(Some),
                    None => std::array::from_fn(|_| Some(None)),
                }
            }
            #[inline]
            fn at_into<'w>(slice: Self::Slice<'w>, row: usize) -> Self::Item<'w> {
                slice.map(|s| <&'r $($mut)? T as Term>::at_into(s, row))
            }
        }
    };
}

impl_optional_term!(; false, get, packed, split_at, std::slice::from_ref);
impl_optional_term!(mut; true, get_mut, packed_mut, split_at_mut, std::slice::from_mut);

/// How one term of a probing loop reaches its values: by row in the driver's packed array, or by index lookup.
#[doc(hidden)]
pub enum Lane<'w, T: Term, L: Layout> {
    Packed(T::Slice<'w>),
    Probe(T::PoolRef<'w, L>),
}

impl<T: Term, L: Layout> Lane<'_, T, L> {
    #[inline(always)]
    fn get(&mut self, row: usize, index: u32) -> Option<T::Item<'_>> {
        match self {
            Lane::Packed(values) => Some(T::at(values, row)),
            Lane::Probe(pool) => T::probe::<L>(pool, index),
        }
    }
}

/// Keeps only entities that have `T` (without borrowing it).
pub struct With<T>(PhantomData<fn() -> T>);
/// Keeps only entities that lack `T`.
pub struct Without<T>(PhantomData<fn() -> T>);

/// A filter: `()`, [`With<T>`], [`Without<T>`], or a pair of filters.
pub trait Filter: 'static {
    #[doc(hidden)]
    /// Typed pool borrows of a per-component layout.
    type Pools<'w, L: Layout>;
    #[doc(hidden)]
    /// Whether every entity matches (no `With` / `Without` in it), so loops need not ask.
    const ALWAYS: bool = false;
    #[doc(hidden)]
    /// Registers the filtered types and records them in `access`.
    fn access(components: &mut Registry, access: &mut Access);
    #[doc(hidden)]
    /// Records the filtered types in `access` without registering them (a query through `&World`).
    fn access_lookup(components: &Registry, access: &mut Access);
    #[doc(hidden)]
    /// This filter's pools, shared, in access order (`None` where the world has no pool of the type); `None` if
    /// no entity can pass.
    fn pools_shared<'w, L: Layout>(
        pools: &mut dyn Iterator<Item = Option<&'w dyn ErasedPool>>,
    ) -> Option<Self::Pools<'w, L>>;
    #[doc(hidden)]
    /// Borrows this filter's pools from `taken`, in the order `access` recorded them.
    fn pools<'w, L: Layout>(taken: &mut impl Iterator<Item = &'w mut dyn ErasedPool>) -> Self::Pools<'w, L>;
    #[doc(hidden)]
    /// Whether `index` passes.
    fn matches<L: Layout>(pools: &Self::Pools<'_, L>, index: u32) -> bool;
    #[doc(hidden)]
    /// The smallest `With` pool length (`usize::MAX` if none): a candidate to drive the loop.
    fn min_len<L: Layout>(pools: &Self::Pools<'_, L>) -> usize;
    #[doc(hidden)]
    /// Appends the indices of the first `With` pool of length `len`, once (`done` guards it).
    fn collect<L: Layout>(
        pools: &Self::Pools<'_, L>,
        len: usize,
        done: &mut bool,
        entities: &Entities,
        out: &mut Vec<Entity>,
    );
    #[doc(hidden)]
    /// Whether an archetype table of component set `set` passes; `ids` yields this filter's ids in access order
    /// (every part takes its own, even after an earlier part failed).
    fn table_passes(set: &ComponentSet, ids: &mut dyn Iterator<Item = ComponentId>) -> bool;
}

impl Filter for () {
    type Pools<'w, L: Layout> = ();
    const ALWAYS: bool = true;
    fn access(_: &mut Registry, _: &mut Access) {}
    fn access_lookup(_: &Registry, _: &mut Access) {}
    fn pools<'w, L: Layout>(_: &mut impl Iterator<Item = &'w mut dyn ErasedPool>) {}
    fn pools_shared<'w, L: Layout>(_: &mut dyn Iterator<Item = Option<&'w dyn ErasedPool>>) -> Option<()> {
        Some(())
    }
    #[inline]
    fn matches<L: Layout>(_: &(), _: u32) -> bool {
        true
    }
    fn min_len<L: Layout>(_: &()) -> usize {
        usize::MAX
    }
    fn collect<L: Layout>(_: &(), _: usize, _: &mut bool, _: &Entities, _: &mut Vec<Entity>) {}
    fn table_passes(_: &ComponentSet, _: &mut dyn Iterator<Item = ComponentId>) -> bool {
        true
    }
}

impl<T: 'static> Filter for With<T> {
    type Pools<'w, L: Layout> = &'w L::Pool<T>;
    fn access(components: &mut Registry, access: &mut Access) {
        access.name::<T>(Some(components.register::<T>().0), false, true, false);
    }
    fn access_lookup(components: &Registry, access: &mut Access) {
        access.name::<T>(components.id::<T>(), false, true, false);
    }
    fn pools<'w, L: Layout>(taken: &mut impl Iterator<Item = &'w mut dyn ErasedPool>) -> &'w L::Pool<T> {
        L::pool_mut(AnyPool::<T>::downcast_mut(taken.next().expect("a pool per filter")))
    }
    fn pools_shared<'w, L: Layout>(
        pools: &mut dyn Iterator<Item = Option<&'w dyn ErasedPool>>,
    ) -> Option<&'w L::Pool<T>> {
        pools.next().expect("a pool per filter").map(|pool| L::pool_ref(AnyPool::<T>::downcast_ref(pool)))
    }
    #[inline]
    fn matches<L: Layout>(pool: &&L::Pool<T>, index: u32) -> bool {
        pool.contains(index)
    }
    fn min_len<L: Layout>(pool: &&L::Pool<T>) -> usize {
        pool.len()
    }
    fn collect<L: Layout>(pool: &&L::Pool<T>, len: usize, done: &mut bool, entities: &Entities, out: &mut Vec<Entity>) {
        if !*done && pool.len() == len {
            pool.collect_entities(entities, out);
            *done = true;
        }
    }
    fn table_passes(set: &ComponentSet, ids: &mut dyn Iterator<Item = ComponentId>) -> bool {
        let id = ids.next().expect("an id per filter");
        id != ABSENT && set.contains(id)
    }
}

impl<T: 'static> Filter for Without<T> {
    /// `None` where the world has no pool of `T` (a shared query): then nothing is excluded.
    type Pools<'w, L: Layout> = Option<&'w L::Pool<T>>;
    fn access(components: &mut Registry, access: &mut Access) {
        access.name::<T>(Some(components.register::<T>().0), false, false, true);
    }
    fn access_lookup(components: &Registry, access: &mut Access) {
        access.name::<T>(components.id::<T>(), false, false, true);
    }
    fn pools<'w, L: Layout>(taken: &mut impl Iterator<Item = &'w mut dyn ErasedPool>) -> Option<&'w L::Pool<T>> {
        Some(L::pool_mut(AnyPool::<T>::downcast_mut(taken.next().expect("a pool per filter"))))
    }
    fn pools_shared<'w, L: Layout>(
        pools: &mut dyn Iterator<Item = Option<&'w dyn ErasedPool>>,
    ) -> Option<Option<&'w L::Pool<T>>> {
        Some(pools.next().expect("a pool per filter").map(|pool| L::pool_ref(AnyPool::<T>::downcast_ref(pool))))
    }
    #[inline]
    fn matches<L: Layout>(pool: &Option<&L::Pool<T>>, index: u32) -> bool {
        pool.is_none_or(|pool| !pool.contains(index))
    }
    fn min_len<L: Layout>(_: &Option<&L::Pool<T>>) -> usize {
        usize::MAX
    }
    fn collect<L: Layout>(_: &Option<&L::Pool<T>>, _: usize, _: &mut bool, _: &Entities, _: &mut Vec<Entity>) {}
    fn table_passes(set: &ComponentSet, ids: &mut dyn Iterator<Item = ComponentId>) -> bool {
        let id = ids.next().expect("an id per filter");
        id == ABSENT || !set.contains(id)
    }
}

impl<A: Filter, B: Filter> Filter for (A, B) {
    type Pools<'w, L: Layout> = (A::Pools<'w, L>, B::Pools<'w, L>);
    const ALWAYS: bool = A::ALWAYS && B::ALWAYS;
    fn access(components: &mut Registry, access: &mut Access) {
        A::access(components, access);
        B::access(components, access);
    }
    fn access_lookup(components: &Registry, access: &mut Access) {
        A::access_lookup(components, access);
        B::access_lookup(components, access);
    }
    fn pools<'w, L: Layout>(taken: &mut impl Iterator<Item = &'w mut dyn ErasedPool>) -> Self::Pools<'w, L> {
        let a = A::pools::<L>(taken);
        (a, B::pools::<L>(taken))
    }
    fn pools_shared<'w, L: Layout>(
        pools: &mut dyn Iterator<Item = Option<&'w dyn ErasedPool>>,
    ) -> Option<Self::Pools<'w, L>> {
        // Both halves take their pools even if the first cannot match, so the iterator stays in step.
        let a = A::pools_shared::<L>(pools);
        let b = B::pools_shared::<L>(pools);
        Some((a?, b?))
    }
    #[inline]
    fn matches<L: Layout>(pools: &Self::Pools<'_, L>, index: u32) -> bool {
        A::matches::<L>(&pools.0, index) && B::matches::<L>(&pools.1, index)
    }
    fn min_len<L: Layout>(pools: &Self::Pools<'_, L>) -> usize {
        A::min_len::<L>(&pools.0).min(B::min_len::<L>(&pools.1))
    }
    fn collect<L: Layout>(
        pools: &Self::Pools<'_, L>,
        len: usize,
        done: &mut bool,
        entities: &Entities,
        out: &mut Vec<Entity>,
    ) {
        A::collect::<L>(&pools.0, len, done, entities, out);
        B::collect::<L>(&pools.1, len, done, entities, out);
    }
    fn table_passes(set: &ComponentSet, ids: &mut dyn Iterator<Item = ComponentId>) -> bool {
        let a = A::table_passes(set, ids);
        let b = B::table_passes(set, ids);
        a && b
    }
}

/// Keeps the entities that pass filter `A` or filter `B` (or both): `Or<With<Red>, With<Blue>>`; nest it for more
/// (`Or<A, Or<B, C>>`), and pair it with others (`(Or<..>, Without<Dead>)`). An `Or` never drives a loop: the
/// fetched pools do, or every live entity if the query fetches nothing.
///
/// ```
/// use swarm::ecs::{Or, With, World};
/// struct Pos(f32); struct Red; struct Blue;
/// let mut world = World::new();
/// world.spawn((Pos(1.0), Red)).unwrap();
/// world.spawn((Pos(2.0), Blue)).unwrap();
/// world.spawn((Pos(4.0),)).unwrap();
/// let mut sum = 0.0;
/// world.query_filtered::<(&Pos,), Or<With<Red>, With<Blue>>>().for_each(|_, (p,)| sum += p.0);
/// assert_eq!(sum, 3.0);
/// ```
pub struct Or<A, B>(PhantomData<fn() -> (A, B)>);

impl<A: Filter, B: Filter> Filter for Or<A, B> {
    /// `None` for a side no entity can pass (a shared query naming a type the world never met in a `With`).
    type Pools<'w, L: Layout> = (Option<A::Pools<'w, L>>, Option<B::Pools<'w, L>>);
    fn access(components: &mut Registry, access: &mut Access) {
        access.neutral += 1;
        A::access(components, access);
        B::access(components, access);
        access.neutral -= 1;
    }
    fn access_lookup(components: &Registry, access: &mut Access) {
        access.neutral += 1;
        A::access_lookup(components, access);
        B::access_lookup(components, access);
        access.neutral -= 1;
    }
    fn pools<'w, L: Layout>(taken: &mut impl Iterator<Item = &'w mut dyn ErasedPool>) -> Self::Pools<'w, L> {
        let a = A::pools::<L>(taken);
        (Some(a), Some(B::pools::<L>(taken)))
    }
    fn pools_shared<'w, L: Layout>(
        pools: &mut dyn Iterator<Item = Option<&'w dyn ErasedPool>>,
    ) -> Option<Self::Pools<'w, L>> {
        let a = A::pools_shared::<L>(pools);
        let b = B::pools_shared::<L>(pools);
        (a.is_some() || b.is_some()).then_some((a, b))
    }
    #[inline]
    fn matches<L: Layout>(pools: &Self::Pools<'_, L>, index: u32) -> bool {
        pools.0.as_ref().is_some_and(|a| A::matches::<L>(a, index))
            || pools.1.as_ref().is_some_and(|b| B::matches::<L>(b, index))
    }
    fn min_len<L: Layout>(_: &Self::Pools<'_, L>) -> usize {
        usize::MAX
    }
    fn collect<L: Layout>(_: &Self::Pools<'_, L>, _: usize, _: &mut bool, _: &Entities, _: &mut Vec<Entity>) {}
    fn table_passes(set: &ComponentSet, ids: &mut dyn Iterator<Item = ComponentId>) -> bool {
        let a = A::table_passes(set, ids);
        let b = B::table_passes(set, ids);
        a || b
    }
}

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
    fn access(components: &mut Registry, access: &mut Access);
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

/// A [`QueryData`] whose terms only read: it can run through a shared `&World` ([`World::query_ref`]).
pub trait ReadOnlyQueryData: QueryData {
    #[doc(hidden)]
    /// Records the fetched types in `access` without registering them.
    fn access_lookup(components: &Registry, access: &mut Access);
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

/// The loop over a per-component layout, given the query's pools and its filter's.
///
/// Lock-step when every fetched pool is packed in the same entity order (e.g. after `sort_as`, or because they get
/// the same spawns and despawns) and no `With` pool is smaller: shared order stamps prove it in O(1) when nothing
/// changed since they were given, and in O(changes) when something did; otherwise the orders are compared whole
/// once, and found equal they get one fresh stamp. Else the smallest pool drives and the others are probed.
#[inline]
fn run_pools<'w, Q: QueryData, L: Layout, F: Filter, V: Visit<Q>>(
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

/// Whether a table of component set `set` matches: it holds the fetched and `With` types and none of the
/// `Without` types, and passes the filter's [`Or`]s.
fn set_matches<F: Filter>(set: &ComponentSet, access: &Access) -> bool {
    !access.unmatchable
        && set.is_superset(&access.required)
        && !set.intersects(&access.excluded)
        && (F::ALWAYS || F::table_passes(set, &mut access.ids()[access.fetched..].iter().copied()))
}

/// Per fetched term, the index of `table`'s column among its type's columns (`NO_INDEX` where the table has none,
/// and past the fetched terms). A type the world never met (`ABSENT`) has no column in any table.
fn column_indices(table: &Table, access: &Access) -> [u32; MAX_QUERY_TYPES] {
    let mut indices = [NO_INDEX; MAX_QUERY_TYPES];
    for (index, &id) in indices.iter_mut().zip(&access.ids()[..access.fetched]) {
        *index = table.column_index(id).unwrap_or(NO_INDEX);
    }
    indices
}

/// Whether the rows of `table` match: it is not empty and its set matches.
fn table_matches<F: Filter>(table: &Table, access: &Access) -> bool {
    !table.is_empty() && set_matches::<F>(table.set(), access)
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
fn run_tables_shared<Q: ReadOnlyQueryData, F: Filter, V: Visit<Q>>(
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
struct Each<Func>(Func);

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
struct Runs<Func>(Func);

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

            fn access(components: &mut Registry, access: &mut Access) {
                $(
                    let (id, _) = components.register::<$T::Component>();
                    access.name::<$T::Component>(Some(id), $T::MUTABLE, $T::REQUIRED, false);
                )+
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
                pick_disjoint(columns, order, index, &mut picked);
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
            fn access_lookup(components: &Registry, access: &mut Access) {
                $(access.name::<$T::Component>(components.id::<$T::Component>(), false, $T::REQUIRED, false);)+
            }

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

    fn access(_: &mut Registry, _: &mut Access) {}
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
    fn access_lookup(_: &Registry, _: &mut Access) {}
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

            fn access(components: &mut Registry, access: &mut Access) {
                let (id, _) = components.register::<T>();
                access.name::<T>(Some(id), <Self as Term>::MUTABLE, <Self as Term>::REQUIRED, false);
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
            fn access_lookup(components: &Registry, access: &mut Access) {
                access.name::<T>(components.id::<T>(), false, <Self as Term>::REQUIRED, false);
            }
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
/// A query being built: fetch `Q` (a tuple of `&T`, `&mut T`, `Option<&T>`, `Option<&mut T>`), filtered by `F`
/// ([`With`], [`Without`]), over the world `W` borrows: `&mut World` from [`World::query`], or `&World` from
/// [`World::query_ref`] when every term only reads ([`QueryRef`]). Run it with [`Query::for_each`] or
/// [`Query::for_each_run`]. The same query runs on every backend; the world matches its storage once per query,
/// not per entity.
///
/// ```
/// use swarm::ecs::{World, With, Without};
/// struct Pos(f32); struct Vel(f32); struct Frozen; struct Red;
/// let mut world = World::new();
/// world.spawn((Pos(0.0), Vel(1.0), Red)).unwrap();
/// world.spawn((Pos(0.0), Vel(1.0), Frozen)).unwrap();
/// world.query::<(&mut Pos, &Vel)>().without::<Frozen>().for_each(|_entity, (pos, vel)| pos.0 += vel.0);
/// let mut moved = 0;
/// world.query::<(&Pos,)>().with::<Red>().for_each(|_, (pos,)| moved += (pos.0 == 1.0) as u32);
/// assert_eq!(moved, 1);
/// ```
///
/// A query may name each component type once: `(&mut A, &A)` would hand out a mutable and a shared reference to
/// the same value, so it is refused with [`QueryError::Conflict`], and so are `(&A, &A)` and a filter on a
/// fetched type.
pub struct Query<W, Q: QueryData, F: Filter = ()> {
    world: W,
    _marker: PhantomData<fn() -> (Q, F)>,
}

/// A query through a shared `&World`, for systems and tools that only read (a digest, a census, drawing): every
/// term is `&T` or `Option<&T>`. Get one from [`World::query_ref`]; it runs like any [`Query`]. It registers no
/// type: a type the world has never met matches no entity (or reads `None`, or excludes nothing).
///
/// ```
/// use swarm::ecs::World;
/// struct Pos(f32); struct Vel(f32); struct Never;
/// let mut world = World::new();
/// world.spawn((Pos(1.0), Vel(2.0))).unwrap();
/// world.spawn((Pos(3.0),)).unwrap();
/// let world = &world; // shared from here on
/// let mut sum = 0.0;
/// world.query_ref::<(&Pos, Option<&Vel>)>().for_each(|_, (p, v)| sum += p.0 + v.map_or(0.0, |v| v.0));
/// assert_eq!(sum, 6.0);
/// assert_eq!(world.query_ref::<(&Pos,)>().with::<Never>().count(), 0);
/// ```
pub type QueryRef<'w, Q, F = ()> = Query<&'w World, Q, F>;

/// The world a query runs on: borrowed mutably (any terms; the named pools are borrowed apart while the loop runs) or shared
/// (read-only terms; pools are borrowed). Both end in the same generic loops.
pub trait Source<Q: QueryData> {
    #[doc(hidden)]
    /// Runs the query with filter `F`, handing the matches to `visit`.
    fn visit<F: Filter>(self, visit: &mut impl Visit<Q>) -> Result<(), QueryError>;
}

impl<Q: QueryData> Source<Q> for &mut World {
    #[inline]
    fn visit<F: Filter>(self, visit: &mut impl Visit<Q>) -> Result<(), QueryError> {
        let context = self.query_context();
        let shape = prepare::<Q, F>(context.queries, context.components, context.storage)?;
        run_context::<Q, F, _>(context.storage, context.entities, context.scratch, shape, visit);
        Ok(())
    }
}

/// The query's shape from the world's cache: on its first run in this world, its types are registered, its access
/// checked and the result kept (a refusal too); every pool it names exists afterwards.
#[inline(always)]
fn prepare<'c, Q: QueryData, F: Filter>(
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
fn run_context<Q: QueryData, F: Filter, V: Visit<Q>>(
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

impl<Q: ReadOnlyQueryData> Source<Q> for &World {
    fn visit<F: Filter>(self, visit: &mut impl Visit<Q>) -> Result<(), QueryError> {
        let (entities, components, storage) = self.query_parts();
        let mut access = Access::default();
        Q::access_lookup(components, &mut access);
        access.fetched = access.len;
        F::access_lookup(components, &mut access);
        if let Some(error) = access.error.take() {
            return Err(error);
        }
        if access.unmatchable {
            return Ok(());
        }
        match storage {
            Storage::Pools { layout, pools } => {
                let mut shared = access.ids().iter().map(|&id| match id {
                    ABSENT => None,
                    id => pools.get(id as usize).map(|pool| pool.as_ref()),
                });
                // Only a probing loop over an index-only layout copies handles: then this buffer grows.
                let mut scratch = Vec::new();
                dispatch!(*layout, L => {
                    let Some(pools) = Q::pools_shared::<L>(&mut shared) else { return Ok(()) };
                    let Some(filter) = F::pools_shared::<L>(&mut shared) else { return Ok(()) };
                    run_pools::<Q, L, F, _>(pools, filter, entities, &mut scratch, visit)
                })
            }
            Storage::Tables(archetypes) => run_tables_shared::<Q, F, _>(archetypes, &access, visit),
        }
        Ok(())
    }
}

impl<W: Source<Q>, Q: QueryData, F: Filter> Query<W, Q, F> {
    pub(crate) fn new(world: W) -> Self {
        Self { world, _marker: PhantomData }
    }

    /// Also requires `T`.
    pub fn with<T: 'static>(self) -> Query<W, Q, (F, With<T>)> {
        Query::new(self.world)
    }

    /// Also requires the absence of `T`.
    pub fn without<T: 'static>(self) -> Query<W, Q, (F, Without<T>)> {
        Query::new(self.world)
    }

    /// Also applies filter `G`, given as a type: an [`Or`], or any other [`Filter`] (on a shared query too, where
    /// there is no `query_filtered`).
    pub fn filter<G: Filter>(self) -> Query<W, Q, (F, G)> {
        Query::new(self.world)
    }

    /// Calls `f` with each matching entity and its components.
    ///
    /// # Panics
    /// If the query is refused (see [`QueryError`]); [`Query::try_for_each`] returns the error instead.
    pub fn for_each(self, f: impl for<'a> FnMut(Entity, Q::Item<'a>)) {
        if let Err(error) = self.try_for_each(f) {
            panic!("{error}");
        }
    }

    /// Calls `f` with each matching entity and its components, or says why the query is refused.
    pub fn try_for_each(self, f: impl for<'a> FnMut(Entity, Q::Item<'a>)) -> Result<(), QueryError> {
        self.world.visit::<F>(&mut Each(f))
    }

    /// Calls `f` with runs of matching entities and their components as parallel slices (`entities[k]` owns
    /// row `k` of each): the whole packed arrays when the pools walk in lock-step (runs between non-matching
    /// rows if a filter is probed), one archetype table at a time, and one entity at a time when pools are
    /// probed. The loop over a run is the caller's, so a long loop body compiles as one piece with it, which a
    /// closure called per entity from several places may not.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Pos(f32); struct Vel(f32);
    /// let mut world = World::new();
    /// for i in 0..3 {
    ///     world.spawn((Pos(0.0), Vel(i as f32))).unwrap();
    /// }
    /// world.query::<(&mut Pos, &Vel)>().for_each_run(|entities, (positions, velocities)| {
    ///     assert_eq!(entities.len(), positions.len());
    ///     for (p, v) in positions.iter_mut().zip(velocities.iter()) {
    ///         p.0 += v.0;
    ///     }
    /// });
    /// let mut sum = 0.0;
    /// world.query::<(&Pos,)>().for_each(|_, (p,)| sum += p.0);
    /// assert_eq!(sum, 3.0);
    /// ```
    ///
    /// # Panics
    /// If the query is refused, like [`Query::for_each`].
    pub fn for_each_run(self, f: impl for<'a> FnMut(&[Entity], Q::Slices<'a>)) {
        if let Err(error) = self.world.visit::<F>(&mut Runs(f)) {
            panic!("{error}");
        }
    }

    /// Number of matching entities (a lock-step walk counts whole runs, without visiting their rows).
    pub fn count(self) -> usize {
        let mut n = 0;
        self.for_each_run(|entities, _| n += entities.len());
        n
    }
}

impl<Q: QueryData, F: Filter> Query<&mut World, Q, F> {
    /// Like [`Query::for_each`], with a [`Commands`] to record structural changes for the row being visited: the
    /// way to spawn, despawn, insert and remove while iterating.
    ///
    /// The commands recorded here are applied (by [`World::apply_commands`]) sorted by the visited entity's handle,
    /// each entity's in the order it recorded them, whatever order the storage yielded the rows in. So a system
    /// that decides per row gives the same world on every backend and after any reordering of a pool. A spawn
    /// recorded here returns a *deferred* handle ([`Entity::is_deferred`]): later commands of this buffer may name
    /// it, and the entity gets its real handle when applied, in the same sorted order (so which free index it
    /// takes does not depend on the visiting order either). A deferred handle stored in a component stays a dead
    /// handle; to keep a new entity's handle, spawn through [`World::commands`] after the loop.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Health(i32);
    /// struct Spark;
    /// let mut world = World::new();
    /// for h in [0, 5, 0] {
    ///     world.spawn((Health(h),)).unwrap();
    /// }
    /// world.query::<(&Health,)>().for_each_with_commands(|e, (health,), commands| {
    ///     if health.0 <= 0 {
    ///         commands.despawn(e);
    ///         let spark = commands.spawn((Spark,)).unwrap(); // deferred: alive after apply
    ///         commands.insert(spark, Health(1)); // later commands may name it
    ///     }
    /// });
    /// let stats = world.apply_commands();
    /// assert_eq!((stats.applied, stats.skipped, stats.refused), (6, 0, 0));
    /// assert_eq!(world.query::<(&Spark, &Health)>().count(), 2);
    /// assert_eq!(world.len(), 3);
    /// ```
    ///
    /// # Panics
    /// If the query is refused, like [`Query::for_each`]. If `f` panics, the commands it recorded so far stay in
    /// the buffer (sorted, as above).
    pub fn for_each_with_commands(self, f: impl for<'a, 'c> FnMut(Entity, Q::Item<'a>, &mut Commands<'c>)) {
        if let Err(error) = self.try_for_each_with_commands(f) {
            panic!("{error}");
        }
    }

    /// [`Query::for_each_with_commands`], or says why the query is refused.
    pub fn try_for_each_with_commands(
        self,
        f: impl for<'a, 'c> FnMut(Entity, Q::Item<'a>, &mut Commands<'c>),
    ) -> Result<(), QueryError> {
        let context = self.world.query_context();
        let shape = prepare::<Q, F>(context.queries, context.components, context.storage)?;
        let mut visit = WithCommands { f, commands: Commands::keyed(context.commands) };
        run_context::<Q, F, _>(context.storage, context.entities, context.scratch, shape, &mut visit);
        Ok(())
    }
}

impl<'w, Q: QueryData, F: Filter> Query<&'w mut World, Q, F> {
    /// One entity's components, if it matches (bevy's `Query::get`, hecs's `query_one_mut`): its own values of
    /// every fetched term, checked against the filter, borrowed for as long as the world. A handle reserved by
    /// the command buffer applies the buffer first (see [`World::reserve_entity`]).
    ///
    /// ```
    /// use swarm::ecs::{QueryOneError, World, Without};
    /// struct Pos(f32); struct Vel(f32); struct Frozen;
    /// let mut world = World::new();
    /// let a = world.spawn((Pos(0.0), Vel(2.0))).unwrap();
    /// let b = world.spawn((Pos(0.0), Vel(2.0), Frozen)).unwrap();
    /// let (pos, vel) = world.query::<(&mut Pos, &Vel)>().without::<Frozen>().get(a).unwrap();
    /// pos.0 += vel.0;
    /// assert_eq!(world.get::<Pos>(a).unwrap().0, 2.0);
    /// assert_eq!(world.query::<(&Pos,)>().without::<Frozen>().get(b).err(), Some(QueryOneError::Unsatisfied(b)));
    /// ```
    pub fn get(self, entity: Entity) -> Result<Q::Item<'w>, QueryOneError> {
        if !self.world.settle(entity) {
            return Err(QueryOneError::NoSuchEntity(entity));
        }
        let context = self.world.query_context();
        let shape =
            prepare::<Q, F>(context.queries, context.components, context.storage).map_err(QueryOneError::Refused)?;
        one_mut::<Q, F>(context.storage, shape, entity.index()).ok_or(QueryOneError::Unsatisfied(entity))
    }

    /// Several distinct entities' components at once, mutably (hecs's `query_many_mut`): e.g. a hunter writes its
    /// own velocity while it reads its target's position. Refused with [`QueryOneError::Aliased`] if an entity is
    /// named twice, which would hand out two references to one value; otherwise the first entity that is not
    /// alive or does not match is the error.
    ///
    /// ```
    /// use swarm::ecs::{QueryOneError, World};
    /// struct Pos(f32); struct Vel(f32);
    /// let mut world = World::new();
    /// let hunter = world.spawn((Pos(0.0), Vel(0.0))).unwrap();
    /// let prey = world.spawn((Pos(5.0), Vel(1.0))).unwrap();
    /// let [(hp, hv), (pp, _)] = world.query::<(&Pos, &mut Vel)>().get_many([hunter, prey]).unwrap();
    /// hv.0 = (pp.0 - hp.0).signum();
    /// assert_eq!(world.get::<Vel>(hunter).unwrap().0, 1.0);
    /// assert_eq!(world.query::<(&mut Vel,)>().get_many([prey, prey]).err(), Some(QueryOneError::Aliased(prey)));
    /// ```
    pub fn get_many<const N: usize>(self, entities: [Entity; N]) -> Result<[Q::Item<'w>; N], QueryOneError> {
        for (k, &entity) in entities.iter().enumerate() {
            if entities[..k].contains(&entity) {
                return Err(QueryOneError::Aliased(entity));
            }
        }
        for &entity in &entities {
            if !self.world.settle(entity) {
                return Err(QueryOneError::NoSuchEntity(entity));
            }
        }
        let context = self.world.query_context();
        let shape =
            prepare::<Q, F>(context.queries, context.components, context.storage).map_err(QueryOneError::Refused)?;
        let items = many_mut::<Q, F, N>(context.storage, shape, entities.map(Entity::index));
        if let Some(k) = items.iter().position(Option::is_none) {
            return Err(QueryOneError::Unsatisfied(entities[k]));
        }
        Ok(items.map(|item| item.expect("checked above")))
    }
}

impl<'w, Q: ReadOnlyQueryData, F: Filter> Query<&'w World, Q, F> {
    /// One entity's components through a shared world, if it matches (hecs's `query_one`). A handle reserved by
    /// the command buffer is not alive yet here ([`QueryOneError::NoSuchEntity`]): a shared borrow cannot apply
    /// the buffer.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Pos(f32); struct Name(&'static str);
    /// let mut world = World::new();
    /// let a = world.spawn((Pos(1.0), Name("a"))).unwrap();
    /// let world = &world;
    /// let (pos, name) = world.query_ref::<(&Pos, &Name)>().get(a).unwrap();
    /// assert_eq!((pos.0, name.0), (1.0, "a"));
    /// ```
    pub fn get(self, entity: Entity) -> Result<Q::Item<'w>, QueryOneError> {
        let world = self.world;
        if !world.is_alive(entity) {
            return Err(QueryOneError::NoSuchEntity(entity));
        }
        let unsatisfied = QueryOneError::Unsatisfied(entity);
        let index = entity.index();
        let (_, components, storage) = world.query_parts();
        let mut access = Access::default();
        Q::access_lookup(components, &mut access);
        access.fetched = access.len;
        F::access_lookup(components, &mut access);
        if let Some(error) = access.error.take() {
            return Err(QueryOneError::Refused(error));
        }
        if access.unmatchable {
            return Err(unsatisfied);
        }
        match storage {
            Storage::Pools { layout, pools } => {
                let mut shared = access.ids().iter().map(|&id| match id {
                    ABSENT => None,
                    id => pools.get(id as usize).map(|pool| pool.as_ref()),
                });
                dispatch!(*layout, L => {
                    let Some(pools) = Q::pools_shared::<L>(&mut shared) else { return Err(unsatisfied) };
                    let Some(filter) = F::pools_shared::<L>(&mut shared) else { return Err(unsatisfied) };
                    if !F::matches::<L>(&filter, index) {
                        return Err(unsatisfied);
                    }
                    Q::probe_into::<L>(pools, index).ok_or(unsatisfied)
                })
            }
            Storage::Tables(archetypes) => {
                let (table, row) = archetypes.location(index).ok_or(unsatisfied.clone())?;
                let (tables, columns) = archetypes.parts();
                let table = &tables[table as usize];
                if !table_matches::<F>(table, &access) {
                    return Err(unsatisfied);
                }
                // A matching table holds every required term's type, so each has columns.
                let columns = Q::columns_shared(columns, &access).ok_or(unsatisfied)?;
                let indices = column_indices(table, &access);
                let (slices, _) = Q::split_table(columns, &indices, &mut [0; MAX_QUERY_TYPES]);
                Ok(Q::row_into(slices, row))
            }
        }
    }
}

/// [`Query::for_each_with_commands`]'s visitor: one call per entity, with the recorder keyed to it.
struct WithCommands<'q, Func> {
    f: Func,
    commands: Commands<'q>,
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

/// Borrows `items[index(k)]` into `out[k]` for each `k` of `order`, skipping the `k` whose index is `None`.
/// `order` must list the `k` by ascending index, all indices distinct: each borrow is then split off the front of
/// what is left, so several elements are borrowed mutably at once without `unsafe`. Indices out of order or out of
/// bounds panic (in `split_at_mut`).
#[inline]
fn pick_disjoint<'a, T>(
    mut items: &'a mut [T],
    order: &[u8],
    index: impl Fn(usize) -> Option<usize>,
    out: &mut [Option<&'a mut T>],
) {
    let mut base = 0;
    for &k in order {
        let Some(at) = index(k as usize) else { continue };
        let (head, tail) = std::mem::take(&mut items).split_at_mut(at + 1 - base);
        out[k as usize] = head.last_mut();
        items = tail;
        base = at + 1;
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
    // One or two pools (most systems' queries) are borrowed directly; more go through `pick_disjoint`.
    match *ids {
        [a] => split::<Q, F, L>(std::iter::once(pools[a as usize].as_mut())),
        [a, b] => {
            let [a, b] = pools.get_disjoint_mut([a as usize, b as usize]).expect("a query names distinct pools");
            split::<Q, F, L>([a.as_mut(), b.as_mut()].into_iter())
        }
        _ => {
            let mut picked: [Option<&'w mut Box<dyn ErasedPool>>; MAX_QUERY_TYPES] = Default::default();
            pick_disjoint(pools, &shape.order[..ids.len()], |k| Some(ids[k] as usize), &mut picked);
            split::<Q, F, L>(picked.into_iter().take(ids.len()).map(|pool| pool.expect("picked above").as_mut()))
        }
    }
}

/// One entity's match through a mutable world (`None` if it has not every fetched component, or fails the
/// filter): a probe of each pool, or its table's columns at its row.
fn one_mut<'w, Q: QueryData, F: Filter>(
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
fn many_mut<'w, Q: QueryData, F: Filter, const N: usize>(
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

/// A query shape's cached facts in one world (see [`QueryCache`]).
pub(crate) struct Shape {
    /// The ids, the required and excluded sets, or the refusal.
    access: Access,
    /// The positions of `access.ids()` by ascending id (the order the pools, or the types' columns, are borrowed in).
    order: [u8; MAX_QUERY_TYPES],
    /// The archetype tables that match.
    tables: TableMatches,
}

impl Shape {
    fn new<Q: QueryData, F: Filter>(components: &mut Registry) -> Self {
        let mut access = Access::default();
        Q::access(components, &mut access);
        access.fetched = access.len;
        F::access(components, &mut access);
        let mut order: [u8; MAX_QUERY_TYPES] = std::array::from_fn(|k| k as u8);
        order[..access.len].sort_unstable_by_key(|&k| access.ids[k as usize]);
        Self { access, order, tables: TableMatches::default() }
    }
}

/// The archetype tables a shape matches, with the index of each fetched term's column among its type's columns.
#[derive(Default)]
struct TableMatches {
    /// [`Archetypes::stamp`] of the tables these were found in; another stamp means other tables.
    archetypes: u64,
    /// How many tables (in creation order) have been looked at; tables are only ever appended.
    seen: usize,
    /// Each matching table, and per term the index of its column (`NO_INDEX` past the fetched terms, or for an
    /// optional term whose type the table lacks).
    found: Vec<(u32, [u32; MAX_QUERY_TYPES])>,
}

impl TableMatches {
    /// Looks at the tables made since the last call (all of them if the archetypes were replaced).
    #[inline]
    fn update<F: Filter>(&mut self, archetypes: &Archetypes, access: &Access) {
        if self.archetypes != archetypes.stamp() {
            *self = Self { archetypes: archetypes.stamp(), seen: 0, found: Vec::new() };
        }
        let tables = archetypes.tables();
        if self.seen < tables.len() {
            self.add::<F>(&tables[self.seen..], access);
            self.seen = tables.len();
        }
    }

    #[cold]
    fn add<F: Filter>(&mut self, new: &[Table], access: &Access) {
        for (k, table) in new.iter().enumerate() {
            if set_matches::<F>(table.set(), access) {
                self.found.push(((self.seen + k) as u32, column_indices(table, access)));
            }
        }
    }

    /// The column indices of matching table `table`; `None` if it does not match.
    #[inline]
    fn indices(&self, table: u32) -> Option<[u32; MAX_QUERY_TYPES]> {
        // Found in creation order, so sorted by table number.
        let at = self.found.binary_search_by_key(&table, |(t, _)| *t).ok()?;
        Some(self.found[at].1)
    }
}

/// What a mutable world's queries work out once per query shape (the fetched tuple and the filter, as types):
/// the component ids (registering the types), the access check, the borrow order and the matching archetype
/// tables. Keyed by `TypeId`, so a query pays one hash lookup for all of it. Ids never change while the registry
/// lives; a world that replaces its registry replaces its cache with it.
#[derive(Default)]
pub(crate) struct QueryCache {
    shapes: FxHashMap<TypeId, Box<Shape>>,
}

impl QueryCache {
    /// The shape of `(Q, F)`, worked out now if new.
    #[inline]
    fn shape<Q: QueryData, F: Filter>(&mut self, components: &mut Registry) -> &mut Shape {
        match self.shapes.entry(TypeId::of::<(Q::Key, F)>()) {
            Entry::Occupied(shape) => shape.into_mut(),
            Entry::Vacant(slot) => Self::first_run::<Q, F>(slot, components),
        }
    }

    /// The shape of a query's first run in this world, kept: out of line, so the lookup above stays small enough
    /// to inline into every query.
    #[cold]
    #[inline(never)]
    fn first_run<'c, Q: QueryData, F: Filter>(
        slot: VacantEntry<'c, TypeId, Box<Shape>>,
        components: &mut Registry,
    ) -> &'c mut Shape {
        slot.insert(Box::new(Shape::new::<Q, F>(components)))
    }
}
