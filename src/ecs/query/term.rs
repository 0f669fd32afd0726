//! One element of a query: `&T`, `&mut T`, `Option<&T>` or `Option<&mut T>`, and how it reaches its values in a
//! pool (probed by index, or walked by row) and in archetype columns.

// The impls spell out `'w` to read like the trait's signatures they implement.
#![allow(clippy::needless_lifetimes)]

use crate::ecs::entity::{Entities, Entity};
use crate::ecs::storage::archetype::{typed, typed_mut, ErasedColumns};
use crate::ecs::storage::sparse_set::PackedOrder;
use crate::ecs::storage::{AnyPool, ErasedPool, Layout, Pool};

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
pub(super) const NO_INDEX: u32 = u32::MAX;

/// Column `index` of a type counted from `*base` (the first column of the type not yet split off), moving `*base`
/// past it; `NO_INDEX` stays as it is.
#[inline]
pub(super) fn next_column(index: u32, base: &mut u32) -> u32 {
    if index == NO_INDEX {
        return NO_INDEX;
    }
    let at = index - *base;
    *base = index + 1;
    at
}

/// A term that only reads (`&T`, `Option<&T>`): it can run through a shared `&World` ([`World::query_ref`](crate::ecs::World::query_ref)).
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
    pub(super) fn get(&mut self, row: usize, index: u32) -> Option<T::Item<'_>> {
        match self {
            Lane::Packed(values) => Some(T::at(values, row)),
            Lane::Probe(pool) => T::probe::<L>(pool, index),
        }
    }
}
