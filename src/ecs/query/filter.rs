//! Filters: [`With`], [`Without`], [`Or`] and pairs of them, which keep or drop entities without borrowing
//! their values.

// The impls spell out `'w` to read like the trait's signatures they implement.
#![allow(clippy::needless_lifetimes)]

use super::access::{Access, Names, ABSENT};
use super::error::QueryError;
use super::term::Lent;
use crate::ecs::change::{ChangeView, Seen, Track};
use crate::ecs::component::{ComponentId, ComponentSet};
use crate::ecs::entity::{Entities, Entity};
use crate::ecs::storage::{AnyPool, ErasedPool, Layout, Pool};
use crate::ecs::Component;
use std::marker::PhantomData;

/// Keeps only entities that have `T` (without borrowing it).
pub struct With<T>(PhantomData<fn() -> T>);
/// Keeps only entities that lack `T`.
pub struct Without<T>(PhantomData<fn() -> T>);

/// A filter: `()`, [`With<T>`], [`Without<T>`], or a pair of filters.
pub trait Filter: 'static {
    #[doc(hidden)]
    /// Typed pool borrows of a per-component layout (`Sync`: the pieces of a parallel loop test the filter on
    /// several threads).
    type Pools<'w, L: Layout>: Sync;
    #[doc(hidden)]
    /// Whether every entity matches (no `With` / `Without` in it), so loops need not ask.
    const ALWAYS: bool = false;
    #[doc(hidden)]
    /// Registers the filtered types and records them in `access`.
    fn access(names: &mut impl Names, access: &mut Access);
    #[doc(hidden)]
    /// Takes this filter's pools from `lent`, in the order `access` recorded them (`None` where the world has no
    /// pool of the type); `None` if no entity can pass. Every part takes its pools, so `lent` stays in step.
    fn pools<'w, L: Layout>(
        lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
        changes: ChangeView<'w>,
    ) -> Option<Self::Pools<'w, L>>;
    #[doc(hidden)]
    /// Whether the filter holds a change filter ([`Added`], [`Changed`]) outside an `Or`: then it drives every walk,
    /// so the changed rows are visited in handle order, and its cost is theirs.
    const CHANGES: bool = false;
    #[doc(hidden)]
    /// What an archetype walk tests per row: the change filters' stamps (nothing for the others, which a table's
    /// component set decides).
    type Rows<'w>: Sync;
    #[doc(hidden)]
    /// The per-row state of a change filter.
    fn rows<'w>(changes: ChangeView<'w>) -> Self::Rows<'w>;
    #[doc(hidden)]
    /// Whether row `index` of a table that passes passes too.
    fn row_passes(rows: &Self::Rows<'_>, index: u32) -> bool;
    #[doc(hidden)]
    /// The fewest candidates a change filter offers (`usize::MAX` if none), and (with `out`) the candidates of the
    /// one offering `len`, ascending, once (`done` guards it).
    fn row_candidates(
        rows: &Self::Rows<'_>,
        len: usize,
        out: Option<(&mut bool, &Entities, &mut Vec<Entity>)>,
    ) -> usize;
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

/// A filter's pool of `T`, read whichever way it was lent (filters only test membership).
#[inline]
fn pool<T: Component, L: Layout>(pool: Lent<'_, dyn ErasedPool>) -> &L::Pool<T> {
    L::pool_ref(AnyPool::<T>::downcast_ref(pool.shared()))
}

/// The per-row part of a filter decided by a table's component set: nothing to test per row.
macro_rules! no_rows {
    () => {
        type Rows<'w> = ();
        fn rows<'w>(_: ChangeView<'w>) {}
        #[inline(always)]
        fn row_passes(_: &(), _: u32) -> bool {
            true
        }
        fn row_candidates(_: &(), _: usize, _: Option<(&mut bool, &Entities, &mut Vec<Entity>)>) -> usize {
            usize::MAX
        }
    };
}

impl Filter for () {
    type Pools<'w, L: Layout> = ();
    const ALWAYS: bool = true;
    no_rows!();
    fn access(_: &mut impl Names, _: &mut Access) {}
    fn pools<'w, L: Layout>(
        _: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
        _: ChangeView<'w>,
    ) -> Option<()> {
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

impl<T: Component> Filter for With<T> {
    type Pools<'w, L: Layout> = &'w L::Pool<T>;
    no_rows!();
    fn access(names: &mut impl Names, access: &mut Access) {
        access.name::<T>(names.id::<T>(), false, true, false);
    }
    #[inline]
    fn pools<'w, L: Layout>(
        lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
        _: ChangeView<'w>,
    ) -> Option<&'w L::Pool<T>> {
        Some(pool::<T, L>(lent.next().expect("a pool per filter")?))
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

impl<T: Component> Filter for Without<T> {
    /// `None` where the world has no pool of `T` (a shared query): then nothing is excluded.
    type Pools<'w, L: Layout> = Option<&'w L::Pool<T>>;
    no_rows!();
    fn access(names: &mut impl Names, access: &mut Access) {
        access.name::<T>(names.id::<T>(), false, false, true);
    }
    #[inline]
    fn pools<'w, L: Layout>(
        lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
        _: ChangeView<'w>,
    ) -> Option<Option<&'w L::Pool<T>>> {
        Some(lent.next().expect("a pool per filter").map(pool::<T, L>))
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
    const CHANGES: bool = A::CHANGES || B::CHANGES;
    type Rows<'w> = (A::Rows<'w>, B::Rows<'w>);
    fn rows<'w>(changes: ChangeView<'w>) -> Self::Rows<'w> {
        (A::rows(changes), B::rows(changes))
    }
    #[inline]
    fn row_passes(rows: &Self::Rows<'_>, index: u32) -> bool {
        A::row_passes(&rows.0, index) && B::row_passes(&rows.1, index)
    }
    fn row_candidates(
        rows: &Self::Rows<'_>,
        len: usize,
        mut out: Option<(&mut bool, &Entities, &mut Vec<Entity>)>,
    ) -> usize {
        let a = A::row_candidates(&rows.0, len, out.as_mut().map(|(done, e, out)| (&mut **done, *e, &mut **out)));
        let b = B::row_candidates(&rows.1, len, out);
        a.min(b)
    }
    fn access(names: &mut impl Names, access: &mut Access) {
        A::access(names, access);
        B::access(names, access);
    }
    #[inline]
    fn pools<'w, L: Layout>(
        lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
        changes: ChangeView<'w>,
    ) -> Option<Self::Pools<'w, L>> {
        let a = A::pools::<L>(lent, changes);
        let b = B::pools::<L>(lent, changes);
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
    no_rows!();
    fn access(names: &mut impl Names, access: &mut Access) {
        if A::CHANGES || B::CHANGES {
            access.refuse(QueryError::ChangesInOr);
        }
        access.neutral += 1;
        A::access(names, access);
        B::access(names, access);
        access.neutral -= 1;
    }
    fn pools<'w, L: Layout>(
        lent: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
        changes: ChangeView<'w>,
    ) -> Option<Self::Pools<'w, L>> {
        let a = A::pools::<L>(lent, changes);
        let b = B::pools::<L>(lent, changes);
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

/// Keeps only entities whose `T` changed (or was added) since the moment the query compares against: since the
/// system last ran, for a system's query; since the last [`World::clear_trackers`](crate::ecs::World::clear_trackers)
/// for the world's queries. `T` must be tracked ([`World::track`](crate::ecs::World::track)). The changed rows drive
/// the loop, in handle order, on every backend: a pass costs the rows changed, not the rows tracked. Pair it with
/// [`With`], [`Without`] and other change filters; inside an [`Or`] it is refused
/// ([`QueryError::ChangesInOr`](super::QueryError::ChangesInOr)).
///
/// ```
/// use swarm::ecs::{Added, Changed, World};
/// struct Health(i32);
/// let mut world = World::new();
/// world.track::<Health>();
/// let a = world.spawn((Health(10),)).unwrap();
/// world.clear_trackers();
/// let b = world.spawn((Health(5),)).unwrap();
/// world.query::<&mut Health>().for_each(|_, h| h.0 -= 1); // hands every row out as `&mut`: all changed
/// let changed: Vec<_> = world.query::<()>().filter::<Changed<Health>>().iter().map(|(e, _)| e).collect();
/// let added: Vec<_> = world.query::<()>().filter::<Added<Health>>().iter().map(|(e, _)| e).collect();
/// assert_eq!((changed, added), (vec![a, b], vec![b]));
/// ```
pub struct Changed<T>(PhantomData<fn() -> T>);

/// Keeps only entities whose `T` was added since the moment the query compares against (see [`Changed`]): a
/// spawn with it, an insert of it onto an entity without it.
pub struct Added<T>(PhantomData<fn() -> T>);

/// A change filter's stamps of its type, the moment it compares against, and which stamps it reads.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct ChangeTerm<'w> {
    track: &'w Track,
    seen: Seen<'w>,
    since: u64,
    added: bool,
}

impl<'w> ChangeTerm<'w> {
    /// The term of `T`.
    ///
    /// # Panics
    /// If `T` is not tracked: the filter would never pass, which is a mistake, not a query.
    fn of<T: Component>(changes: ChangeView<'w>, added: bool) -> Self {
        let (track, seen) = changes.track_of::<T>().unwrap_or_else(|| {
            let name = std::any::type_name::<T>();
            panic!(
                "{}<{name}>: {name} is not tracked; call world.track::<{name}>() before querying its changes",
                if added { "Added" } else { "Changed" }
            )
        });
        Self { track, seen, since: changes.since, added }
    }

    #[inline]
    fn passes(&self, index: u32) -> bool {
        self.track.changed_since(index, self.since, self.added, self.seen)
    }

    fn candidates(&self, len: usize, out: Option<(&mut bool, &Entities, &mut Vec<Entity>)>) -> usize {
        let newer = self.track.newer_than(self.since);
        if let Some((done, entities, out)) = out {
            if !*done && newer == len {
                *done = true;
                crate::ecs::change::INDICES.with_borrow_mut(|indices| {
                    indices.clear();
                    self.track.since(self.since, self.added, self.seen, indices);
                    out.extend(indices.iter().filter_map(|&index| entities.alive_at(index)));
                });
            }
        }
        newer
    }
}

macro_rules! change_filter {
    ($name:ident, $added:expr) => {
        impl<T: Component> Filter for $name<T> {
            type Pools<'w, L: Layout> = ChangeTerm<'w>;
            const CHANGES: bool = true;
            type Rows<'w> = ChangeTerm<'w>;
            fn rows<'w>(changes: ChangeView<'w>) -> ChangeTerm<'w> {
                ChangeTerm::of::<T>(changes, $added)
            }
            #[inline]
            fn row_passes(term: &ChangeTerm<'_>, index: u32) -> bool {
                term.passes(index)
            }
            fn row_candidates(
                term: &ChangeTerm<'_>,
                len: usize,
                out: Option<(&mut bool, &Entities, &mut Vec<Entity>)>,
            ) -> usize {
                term.candidates(len, out)
            }
            /// `T` is required, and watched (a system writing `T` cannot run beside this query); it may be fetched
            /// too (`(&mut T, Changed<T>)`), and it borrows no pool.
            fn access(names: &mut impl Names, access: &mut Access) {
                access.watch(names.id::<T>());
            }
            fn pools<'w, L: Layout>(
                _: &mut impl Iterator<Item = Option<Lent<'w, dyn ErasedPool>>>,
                changes: ChangeView<'w>,
            ) -> Option<ChangeTerm<'w>> {
                Some(ChangeTerm::of::<T>(changes, $added))
            }
            #[inline]
            fn matches<L: Layout>(term: &ChangeTerm<'_>, index: u32) -> bool {
                term.passes(index)
            }
            /// (A change filter drives through [`Filter::row_candidates`]: the walk never asks its pools.)
            fn min_len<L: Layout>(_: &ChangeTerm<'_>) -> usize {
                usize::MAX
            }
            fn collect<L: Layout>(_: &ChangeTerm<'_>, _: usize, _: &mut bool, _: &Entities, _: &mut Vec<Entity>) {}
            /// (Required: the access's set says so.)
            fn table_passes(_: &ComponentSet, _: &mut dyn Iterator<Item = ComponentId>) -> bool {
                true
            }
        }
    };
}

change_filter!(Changed, false);
change_filter!(Added, true);
