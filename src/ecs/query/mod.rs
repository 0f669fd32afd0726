//! Queries: tuples of `&T` / `&mut T`, filtered by [`With`] / [`Without`], run the same way on every backend.
//!
//! (The example is on [`QueryBorrow`].)
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
//! Either way the matches go to a [`Visit`]or: [`QueryBorrow::for_each`] calls its closure per entity;
//! [`QueryBorrow::for_each_run`] hands over runs of rows as parallel slices (the whole packed arrays of a lock-step walk,
//! a table's columns), so the caller's loop body compiles inside the caller's loop.
//!
//! A query may name each component type once. `(&mut A, &A)` would hand out a mutable and a shared reference to
//! the same value, so it is refused with [`QueryError::Conflict`]; `(&A, &A)` and a filter on a fetched type are
//! refused the same way (say it once).

// The impls spell out `'w` to read like the trait's signatures they implement.
#![allow(clippy::needless_lifetimes)]

mod access;
mod batch;
mod cache;
mod data;
mod error;
mod filter;
mod iter;
mod par;
mod run;
mod state;
mod term;

pub use access::QueryAccess;
#[doc(hidden)]
pub use access::{Access, Names};
pub use batch::{Batch, Batches};
pub(crate) use cache::QueryCache;
pub(crate) use data::smaller_tuples_too;
#[doc(hidden)]
pub use data::{is_query_data, ComposeQuery, ComposedRows, ComposedRun, TermPool, TermRun, TupleOf};
pub use data::{QueryData, ReadOnlyQueryData};
pub use error::{QueryError, QueryOneError, MAX_QUERY_TYPES};
pub use filter::{Added, Changed, Filter, Or, With, Without};
pub use iter::QueryIter;
pub(crate) use par::with_pieces;
#[doc(hidden)]
pub use par::Pieces;
pub use par::{count_elsewhere, halves_moved, join, Elsewhere};
pub(crate) use run::Loaned;
pub(crate) use run::QueryContext;
pub(crate) use state::{Held, HeldShared};
pub use state::{Lease, OnLoan, Prepared, QueryState};
#[doc(hidden)]
pub use term::Lent;

use crate::ecs::commands::CommandQueue;
use crate::ecs::commands::Commands;
use crate::ecs::entity::Entity;
use crate::ecs::world::World;
use crate::ecs::Component;
use par::{par_listed, par_run, ParCommands, ParEach, ParFold, ParFoldRuns, ParVisit};
#[doc(hidden)]
pub use run::Stamp;
use run::{batches, exclusive, exclusive_pieces, listed, many, one, run, shared, Parts};
use run::{Each, Runs, WithCommands};
use std::marker::PhantomData;

/// A query borrowing a world (hecs's name for it; a system's query is the parameter
/// [`app::Query`](crate::app::Query), and a struct of terms derives [`QueryData`](trait@QueryData)): fetch `Q` (a
/// tuple of `&T`, `&mut T`, `Option<&T>`, `Option<&mut T>`), filtered by `F` ([`With`], [`Without`]), over the world
/// `W` borrows: `&mut World` from [`World::query`], or `&World` from
/// [`World::query_ref`] when every term only reads ([`QueryRef`]). Run it with [`QueryBorrow::for_each`] or
/// [`QueryBorrow::for_each_run`]. The same query runs on every backend; the world matches its storage once per query,
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
pub struct QueryBorrow<W, Q: QueryData, F: Filter = ()> {
    world: W,
    _marker: PhantomData<fn() -> (Q, F)>,
}

/// A query through a shared `&World`, for systems and tools that only read (a digest, a census, drawing): every
/// term is `&T` or `Option<&T>`. Get one from [`World::query_ref`]; it runs like any [`QueryBorrow`]. It registers no
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
pub type QueryRef<'w, Q, F = ()> = QueryBorrow<&'w World, Q, F>;

/// What a query runs on: a world borrowed mutably (any terms; the named pools are borrowed apart while the loop
/// runs) or shared (read-only terms), or a prepared query's own shape on a world ([`Prepared`]: a
/// [`QueryState`]'s, or a system's [`Query`](crate::app::Query) parameter on the system's loans). Every source
/// lends its storage to the same loops: [`QueryBorrow`]'s methods are the loops of every front.
pub trait Source<'w, Q: QueryData, F: Filter> {
    #[doc(hidden)]
    /// Runs `body` on what query `(Q, F)` runs on, or says why it is refused.
    fn with_parts<R>(self, body: impl for<'s> FnOnce(Parts<'w, 's>) -> R) -> Result<R, QueryError>;
    #[doc(hidden)]
    /// Whether `entity` is alive (a mutable world applies its command buffer first if `entity` was reserved).
    fn settle(&mut self, entity: Entity) -> bool;
    #[doc(hidden)]
    /// How a parallel loop cuts its work here.
    fn pieces(&self) -> Pieces;
    #[doc(hidden)]
    /// Before a loop: stamps the matches it will hand out as `&mut` of a tracked type (or only those `rows` names,
    /// see [`Stamp`]). Nothing for a read-only source.
    #[inline(always)]
    fn stamp(&mut self, _rows: Stamp<'_>) {}
    #[doc(hidden)]
    /// [`Source::with_parts`] for a loop that notes what it hands out as it goes, where nothing in the loop reads a
    /// stamp (its filter has no change term), so a stamp made after it is one made before: `body` gets a list for
    /// the index of each match it hands out, or is about to, as `&mut` (`None` if the query writes no tracked type
    /// here), stamped once `body` returns or panics. Nothing to note for a read-only source.
    fn with_parts_noting<R>(
        self,
        body: impl for<'x, 's> FnOnce(Parts<'x, 's>, Option<&mut Vec<u32>>) -> R,
    ) -> Result<R, QueryError>
    where
        Self: Sized,
    {
        self.with_parts(|parts| body(parts, None))
    }
    #[doc(hidden)]
    /// Before a loop that hands out nothing as `&mut`: compares the writes waiting in exact tracks (a mutable world
    /// lends its storage whole; a shared one compares as it reads).
    #[inline(always)]
    fn compare(&mut self) {}
}

/// A [`Source`] with a command buffer, for the loops that record ([`QueryBorrow::for_each_with_commands`]): a
/// mutable world's own buffer, or the one a system's query is handed.
pub trait Recording<'w, Q: QueryData, F: Filter>: Source<'w, Q, F> {
    #[doc(hidden)]
    /// Runs `body` on what query `(Q, F)` runs on, the buffer to record into and the pieces' reused buffers.
    #[allow(clippy::type_complexity)]
    fn with_commands<R>(
        self,
        body: impl for<'s> FnOnce(Parts<'w, 's>, &'s mut CommandQueue, &'s mut Vec<CommandQueue>) -> R,
    ) -> Result<R, QueryError>;
}

impl<'w, Q: QueryData, F: Filter> Source<'w, Q, F> for &'w mut World {
    #[inline]
    fn with_parts<R>(self, body: impl for<'s> FnOnce(Parts<'w, 's>) -> R) -> Result<R, QueryError> {
        Ok(body(exclusive::<Q, F>(self)?.0))
    }
    fn with_parts_noting<R>(
        self,
        body: impl for<'x, 's> FnOnce(Parts<'x, 's>, Option<&mut Vec<u32>>) -> R,
    ) -> Result<R, QueryError> {
        let (ids, n) = run::written_tracked::<Q, F>(self, None);
        run::stamped_after(self, &ids[..n], |world, rows| Ok(body(exclusive::<Q, F>(world)?.0, rows)))
    }
    #[inline]
    fn stamp(&mut self, rows: Stamp<'_>) {
        if self.tracks_any() {
            self.compare_changes();
            run::stamp_rows::<Q, F>(self, None, rows);
        }
    }
    #[inline]
    fn compare(&mut self) {
        self.compare_changes();
    }
    fn settle(&mut self, entity: Entity) -> bool {
        World::settle(self, entity)
    }
    fn pieces(&self) -> Pieces {
        World::pieces(self)
    }
}

impl<'w, Q: QueryData, F: Filter> Recording<'w, Q, F> for &'w mut World {
    fn with_commands<R>(
        self,
        body: impl for<'s> FnOnce(Parts<'w, 's>, &'s mut CommandQueue, &'s mut Vec<CommandQueue>) -> R,
    ) -> Result<R, QueryError> {
        let (parts, commands, pieces) = exclusive_pieces::<Q, F>(self)?;
        Ok(body(parts, commands, pieces))
    }
}

impl<'w, Q: ReadOnlyQueryData, F: Filter> Source<'w, Q, F> for &'w World {
    fn with_parts<R>(self, body: impl for<'s> FnOnce(Parts<'w, 's>) -> R) -> Result<R, QueryError> {
        shared::<Q, F, R>(self, body)
    }
    fn settle(&mut self, entity: Entity) -> bool {
        self.is_alive(entity)
    }
    fn pieces(&self) -> Pieces {
        World::pieces(self)
    }
}

/// A world a query borrows whole ([`World::query`], [`World::query_ref`]): its filter may still be added to.
#[doc(hidden)]
pub trait WorldSource {}
impl WorldSource for &mut World {}
impl WorldSource for &World {}

impl<W, Q: QueryData, F: Filter> QueryBorrow<W, Q, F> {
    pub(crate) fn new(world: W) -> Self {
        Self { world, _marker: PhantomData }
    }
}

/// The filters of a query on a world (a prepared query's filter is part of its shape).
impl<W: WorldSource, Q: QueryData, F: Filter> QueryBorrow<W, Q, F> {
    /// Also requires `T`.
    pub fn with<T: Component>(self) -> QueryBorrow<W, Q, (F, With<T>)> {
        QueryBorrow::new(self.world)
    }

    /// Also requires the absence of `T`.
    pub fn without<T: Component>(self) -> QueryBorrow<W, Q, (F, Without<T>)> {
        QueryBorrow::new(self.world)
    }

    /// Also applies filter `G`, given as a type: an [`Or`], or any other [`Filter`] (on a shared query too, where
    /// there is no `query_filtered`).
    pub fn filter<G: Filter>(self) -> QueryBorrow<W, Q, (F, G)> {
        QueryBorrow::new(self.world)
    }
}

/// The loops, for every source.
impl<'w, W: Source<'w, Q, F>, Q: QueryData, F: Filter> QueryBorrow<W, Q, F> {
    /// Calls `f` with each matching entity and its components.
    ///
    /// # Panics
    /// If the query is refused (see [`QueryError`]); [`QueryBorrow::try_for_each`] returns the error instead.
    pub fn for_each(self, f: impl for<'a> FnMut(Entity, Q::Item<'a>)) {
        if let Err(error) = self.try_for_each(f) {
            panic!("{error}");
        }
    }

    /// Calls `f` with each matching entity and its components, or says why the query is refused.
    pub fn try_for_each(mut self, f: impl for<'a> FnMut(Entity, Q::Item<'a>)) -> Result<(), QueryError> {
        self.world.stamp(Stamp::Loop);
        self.world.with_parts(|parts| run::<Q, F, _>(parts, &mut Each(f)))
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
    /// If the query is refused, like [`QueryBorrow::for_each`].
    pub fn for_each_run(mut self, f: impl for<'a> FnMut(&[Entity], Q::Slices<'a>)) {
        self.world.stamp(Stamp::Loop);
        if let Err(error) = self.world.with_parts(|parts| run::<Q, F, _>(parts, &mut Runs(f))) {
            panic!("{error}");
        }
    }

    /// One entity's components, if it matches (bevy's `Query::get`, hecs's `query_one_mut` and `query_one`): its
    /// own values of every fetched term, checked against the filter, borrowed for as long as the world. Through a
    /// mutable world, a handle reserved by the command buffer applies the buffer first (see
    /// [`World::reserve_entity`]); through a shared one it is not alive yet ([`QueryOneError::NoSuchEntity`]): a
    /// shared borrow cannot apply the buffer.
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
    pub fn get(mut self, entity: Entity) -> Result<Q::Item<'w>, QueryOneError> {
        if !self.world.settle(entity) {
            return Err(QueryOneError::NoSuchEntity(entity));
        }
        self.world.stamp(Stamp::Every(&[entity.index()]));
        let item = self.world.with_parts(|parts| one::<Q, F>(parts, entity.index()));
        item.map_err(QueryOneError::Refused)?.ok_or(QueryOneError::Unsatisfied(entity))
    }

    /// Calls `f` with each entry of `list` whose entity matches, and that entity's components, in the list's
    /// order: an entry whose handle is stale, or whose entity lacks a fetched term or fails the filter, is
    /// skipped; an entity listed twice is visited twice, one visit after the other (bevy's `iter_many_mut`). An
    /// entry is a handle, or a handle with a value of the caller's beside it ([`Listed`]), which `f` gets back:
    /// what a parallel pass worked out per entity, written by one pass over the list.
    ///
    /// Each entry costs a probe of every pool (on archetype tables, a row of its table's columns, split apart
    /// once per call), not a lookup of the query's shape: a loop of [`QueryBorrow::get`] calls finds the shape
    /// and lends the storage once per entity. (A query that writes a type change detection tracks first walks
    /// the list once more, to stamp the entries that match.) Through a mutable world, a listed handle the command buffer
    /// reserved applies the buffer before the visit starts, so every entry is visited in the world after it.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Pos(f32); struct Vel(f32);
    /// let mut world = World::new();
    /// let a = world.spawn((Pos(0.0), Vel(0.0))).unwrap();
    /// let b = world.spawn((Pos(5.0),)).unwrap();
    /// let c = world.spawn((Pos(9.0), Vel(0.0))).unwrap();
    /// let steer = [(c, -1.0), (b, 1.0), (a, 2.0)];
    /// let mut visited = Vec::new();
    /// world.query::<(&Pos, &mut Vel)>().for_each_of(&steer, |&(entity, speed), (pos, vel)| {
    ///     vel.0 = speed * pos.0;
    ///     visited.push(entity);
    /// });
    /// assert_eq!(visited, [c, a], "b has no Vel");
    /// assert_eq!(world.get::<Vel>(c).unwrap().0, -9.0);
    /// ```
    ///
    /// # Panics
    /// If the query is refused, like [`QueryBorrow::for_each`].
    pub fn for_each_of<T: Listed>(mut self, list: &[T], f: impl for<'a> FnMut(&T, Q::Item<'a>)) {
        for entry in list {
            self.world.settle(entry.entity());
        }
        self.world.stamp(Stamp::Each(&mut list.iter().map(Listed::entity)));
        if let Err(error) = self.world.with_parts(|parts| listed::<Q, F, T>(parts, list, f)) {
            panic!("{error}");
        }
    }

    /// [`QueryBorrow::for_each_of`] on the thread pool: `f` is called with each entry of `list` whose entity
    /// matches, and its item; an entity listed twice is visited twice, one visit after the other, on one thread.
    /// A body that writes only the item it is handed (and reads what it likes) leaves the same world for every
    /// thread count, and the same as `for_each_of`.
    ///
    /// How it splits: where every fetched pool is a sparse set and they are packed in one order (a query of one
    /// type always is), the list is cut in parts to find where each entity's values sit, then the values are cut
    /// into as many parts (the thread count rounded up to a power of two), each walking the list for the entries
    /// it holds. Elsewhere the list is visited in order on this thread, as [`QueryBorrow::for_each_of`] visits it:
    /// a list shorter than [`World::piece_rows`], a world set to one thread, an `Option` term, sparse sets packed in
    /// different orders, pools probed by index (the hash-map, ordered-tree and direct-array backends) and archetype
    /// tables.
    ///
    /// The values handed out as `&mut` of a tracked type count as changed, as in `for_each_of`. Without a change
    /// filter they are stamped after the visit (where it splits, from the pass that finds the entries, so the list
    /// is not probed twice); with one, before it, as `for_each_of` stamps them (the filter sees the visit's own
    /// stamps).
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Health(i32);
    /// let mut world = World::new();
    /// world.set_piece_rows(64);
    /// let all: Vec<_> = (0..1000).map(|_| world.spawn((Health(100),)).unwrap()).collect();
    /// let hits: Vec<_> = all.iter().step_by(3).map(|&e| (e, 7)).collect();
    /// world.query::<&mut Health>().par_for_each_of(&hits, |&(_, damage), health| health.0 -= damage);
    /// assert_eq!(world.get::<Health>(all[3]).unwrap().0, 93);
    /// assert_eq!(world.get::<Health>(all[4]).unwrap().0, 100);
    /// ```
    ///
    /// # Panics
    /// If the query is refused, like [`QueryBorrow::for_each`]; if `f` panics, the panic reaches the caller once
    /// every other part has run whole (what they wrote stays written); where the visit runs on this thread, it
    /// stops at the panic. The stamps made after the visit are made then too: where it split, every entry found;
    /// on this thread, the entries handed out up to the panic.
    pub fn par_for_each_of<T: Listed + Sync>(mut self, list: &[T], f: impl for<'a> Fn(&T, Q::Item<'a>) + Sync) {
        for entry in list {
            self.world.settle(entry.entity());
        }
        let pieces = self.world.pieces();
        let visited = match F::CHANGES {
            // A change filter reads the visit's own stamps: made first, as `for_each_of` makes them.
            true => {
                self.world.stamp(Stamp::Each(&mut list.iter().map(Listed::entity)));
                self.world.with_parts(|parts| par_listed::<Q, F, T>(parts, pieces, list, &f, None))
            }
            // Else the visit notes what it hands out (where it splits, from the pass that finds the entries), and
            // the stamps are made after it: the list is not probed twice.
            false => {
                self.world.with_parts_noting(|parts, stamps| par_listed::<Q, F, T>(parts, pieces, list, &f, stamps))
            }
        };
        if let Err(error) = visited {
            panic!("{error}");
        }
    }

    /// The matches as an iterator of `(entity, item)`, in the order [`QueryBorrow::for_each`] visits them (hecs's
    /// `QueryBorrow::iter`): for `for` loops, adapters, an early `break` and `collect`. A query is also
    /// [`IntoIterator`], so `for (e, (pos, vel)) in world.query::<(&mut Pos, &Vel)>()` works as well. The items
    /// borrow the world for as long as the query did.
    ///
    /// `for_each` stays the faster loop: it compiles the body inside the walk, where the iterator hands out one
    /// row per call, and a probing walk (pools packed in different orders, a `With` filter that drives) gathers
    /// its matches into a list before the first one comes out ([`QueryIter`]; figures in BENCHMARKS.md).
    ///
    /// ```
    /// use swarm::ecs::{World, Without};
    /// struct Pos(f32); struct Vel(f32); struct Frozen;
    /// let mut world = World::new();
    /// for k in 0..5 {
    ///     world.spawn((Pos(0.0), Vel(k as f32))).unwrap();
    /// }
    /// world.spawn((Pos(0.0), Vel(9.0), Frozen)).unwrap();
    /// for (_, (pos, vel)) in world.query::<(&mut Pos, &Vel)>().without::<Frozen>().iter() {
    ///     pos.0 += vel.0;
    /// }
    /// let first_far = world.query_ref::<&Pos>().iter().find(|(_, p)| p.0 > 2.5).map(|(_, p)| p.0);
    /// assert_eq!(first_far, Some(3.0));
    /// let moved = world.query_ref::<&Pos>().iter().filter(|(_, p)| p.0 > 0.0).count();
    /// assert_eq!(moved, 4);
    /// ```
    ///
    /// # Panics
    /// If the query is refused, like [`QueryBorrow::for_each`]; [`QueryBorrow::try_iter`] returns the error instead.
    pub fn iter(self) -> QueryIter<'w, Q> {
        self.try_iter().unwrap_or_else(|error| panic!("{error}"))
    }

    /// The matches as an iterator ([`QueryBorrow::iter`]), or why the query is refused.
    pub fn try_iter(mut self) -> Result<QueryIter<'w, Q>, QueryError> {
        self.world.stamp(Stamp::Loop);
        self.world.with_parts(|parts| QueryIter::new(batches::<Q, F>(parts, usize::MAX)))
    }

    /// The matches cut into batches of at most `batch_size` rows (hecs's `iter_batched`), to hand to threads of the
    /// caller's own: the batches borrow disjoint rows, all at once. A run of rows (pools walked in lock-step, between
    /// rows a filter refuses; an archetype table) is cut into slices, so a batch never spans two runs; matches found by probing are
    /// gathered first (every pool hands out all the values asked for at once) and the list is cut. Batches come
    /// in the storage's order, as [`QueryBorrow::for_each`] visits: code that must give the same world whatever that
    /// order is records its structural changes in [`World::commands`] and applies them after.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Pos(f32); struct Vel(f32);
    /// let mut world = World::new();
    /// for i in 0..1000 {
    ///     world.spawn((Pos(0.0), Vel(i as f32))).unwrap();
    /// }
    /// let batches: Vec<_> = world.query::<(&mut Pos, &Vel)>().iter_batched(256).collect();
    /// assert_eq!(batches.iter().map(|batch| batch.len()).sum::<usize>(), 1000);
    /// std::thread::scope(|scope| {
    ///     for batch in batches {
    ///         scope.spawn(move || batch.for_each(|(_, (pos, vel))| pos.0 += vel.0));
    ///     }
    /// });
    /// let mut sum = 0.0;
    /// world.query::<&Pos>().for_each(|_, pos| sum += pos.0);
    /// assert_eq!(sum, (0..1000).sum::<i32>() as f32);
    /// ```
    ///
    /// # Panics
    /// If `batch_size` is 0, or if the query is refused, like [`QueryBorrow::for_each`].
    pub fn iter_batched(mut self, batch_size: usize) -> Batches<'w, Q> {
        assert!(batch_size > 0, "iter_batched: a batch holds at least one row (batch_size is 0)");
        self.world.stamp(Stamp::Loop);
        match self.world.with_parts(|parts| batches::<Q, F>(parts, batch_size)) {
            Ok(batches) => Batches(batches.into_iter()),
            Err(error) => panic!("{error}"),
        }
    }

    /// Calls `f` with each matching entity and its components, the matches cut into pieces that run on the thread
    /// pool (rayon's current one: an [`App`](crate::app::App)'s own inside its systems). A piece is up to
    /// [`World::piece_rows`] consecutive matches in the storage's order, wherever the threads are, so a loop that
    /// writes only the visited entity's components gives the same world for every thread count. (Which walks run
    /// their pieces on several threads and which in order on this one: `ecs/query/par.rs`.)
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Pos(f32); struct Vel(f32);
    /// let mut world = World::new();
    /// world.set_piece_rows(100);
    /// for i in 0..1000 {
    ///     world.spawn((Pos(0.0), Vel(i as f32))).unwrap();
    /// }
    /// world.query::<(&mut Pos, &Vel)>().par_for_each(|_, (pos, vel)| pos.0 += vel.0);
    /// let mut sum = 0.0;
    /// world.query::<&Pos>().for_each(|_, pos| sum += pos.0);
    /// assert_eq!(sum, (0..1000).sum::<i32>() as f32);
    /// ```
    ///
    /// # Panics
    /// If the query is refused, like [`QueryBorrow::for_each`]; if `f` panics, once every piece already started has
    /// finished (what they wrote stays written).
    pub fn par_for_each(self, f: impl for<'a> Fn(Entity, Q::Item<'a>) + Sync) {
        let mut slots = Vec::new(); // of `()`: never allocates
        self.par_visit(&ParEach(f), &mut slots);
    }

    /// The parallel loops' one body: `visit` over the matches in pieces, one slot of `slots` each.
    fn par_visit<V: ParVisit<Q>>(mut self, visit: &V, slots: &mut Vec<V::Slot>) {
        self.world.stamp(Stamp::Loop);
        let pieces = self.world.pieces();
        if let Err(error) = self.world.with_parts(|parts| par_run::<Q, F, _>(parts, pieces, visit, slots)) {
            panic!("{error}");
        }
    }

    /// Like [`QueryBorrow::par_for_each`], with a value per piece: `out` ends with one value per piece, in piece order
    /// (so a list or a float sum combined from them is the same for every thread count). Each piece's value is
    /// the one `out` held at that position (its memory reused) or a new default one, handed to `start` (to clear
    /// it) before `f` sees the piece's matches.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Pos(f32);
    /// let mut world = World::new();
    /// world.set_piece_rows(64);
    /// for i in 0..1000 {
    ///     world.spawn((Pos(i as f32 * 0.1),)).unwrap();
    /// }
    /// let mut far: Vec<Vec<f32>> = Vec::new();
    /// world.query::<&Pos>().par_fold(&mut far, Vec::clear, |list, _, pos| {
    ///     if pos.0 > 90.0 {
    ///         list.push(pos.0);
    ///     }
    /// });
    /// assert_eq!(far.len(), 16); // 1000 matches, 64 a piece
    /// let far: Vec<f32> = far.concat(); // in piece order: the storage's order
    /// assert_eq!(far.len(), 99);
    /// assert!(far.windows(2).all(|w| w[0] < w[1]));
    /// ```
    ///
    /// # Panics
    /// As [`QueryBorrow::par_for_each`].
    pub fn par_fold<A: Default + Send>(
        self,
        out: &mut Vec<A>,
        start: impl Fn(&mut A) + Sync,
        f: impl for<'a> Fn(&mut A, Entity, Q::Item<'a>) + Sync,
    ) {
        self.par_visit(&ParFold { start, f, _slot: PhantomData }, out);
    }

    /// [`QueryBorrow::par_fold`] by runs, as [`QueryBorrow::for_each_run`] is [`QueryBorrow::for_each`] by runs:
    /// `f` gets each piece's value with a run of matching rows (or one probed entity as a run of one), and the loop
    /// over the run is its own, so a long body compiles as one piece with it. Pieces and `out` are as in
    /// `par_fold`.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Pos(f32);
    /// let mut world = World::new();
    /// world.set_piece_rows(64);
    /// for i in 0..1000 {
    ///     world.spawn((Pos(i as f32 * 0.1),)).unwrap();
    /// }
    /// let mut far: Vec<Vec<f32>> = Vec::new();
    /// world.query::<(&Pos,)>().par_fold_runs(&mut far, Vec::clear, |list, _, (positions,)| {
    ///     list.extend(positions.iter().map(|pos| pos.0).filter(|&x| x > 90.0));
    /// });
    /// assert_eq!(far.len(), 16); // 1000 matches, 64 a piece
    /// let far: Vec<f32> = far.concat(); // in piece order: the storage's order
    /// assert_eq!(far.len(), 99);
    /// assert!(far.windows(2).all(|w| w[0] < w[1]));
    /// ```
    ///
    /// # Panics
    /// As [`QueryBorrow::par_for_each`].
    pub fn par_fold_runs<A: Default + Send>(
        self,
        out: &mut Vec<A>,
        start: impl Fn(&mut A) + Sync,
        f: impl for<'a> Fn(&mut A, &[Entity], Q::Slices<'a>) + Sync,
    ) {
        self.par_visit(&ParFoldRuns { start, f, _slot: PhantomData }, out);
    }

    /// Number of matching entities (a lock-step walk counts whole runs, without visiting their rows).
    pub fn count(mut self) -> usize {
        // (Through the loop itself: counting hands out nothing, so nothing is stamped.)
        let mut n = 0;
        let count = |entities: &[Entity], _: Q::Slices<'_>| n += entities.len();
        self.world.compare();
        if let Err(error) = self.world.with_parts(|parts| run::<Q, F, _>(parts, &mut Runs(count))) {
            panic!("{error}");
        }
        n
    }
}

/// A query on each kind of source is [`IntoIterator`] ([`QueryBorrow::iter`]).
macro_rules! into_iter {
    ($([$($g:tt)*] $source:ty;)*) => {$(
        impl<'w, $($g)*> IntoIterator for QueryBorrow<$source, Q, F> {
            type Item = (Entity, Q::Item<'w>);
            type IntoIter = QueryIter<'w, Q>;

            /// [`QueryBorrow::iter`].
            fn into_iter(self) -> QueryIter<'w, Q> {
                self.iter()
            }
        }
    )*};
}

into_iter! {
    [Q: QueryData, F: Filter] &'w mut World;
    [Q: ReadOnlyQueryData, F: Filter] &'w World;
}

/// The loops that record, for every source with a command buffer.
impl<'w, W: Recording<'w, Q, F>, Q: QueryData, F: Filter> QueryBorrow<W, Q, F> {
    /// Like [`QueryBorrow::for_each`], with a [`Commands`] to record structural changes for the row being visited: the
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
    /// If the query is refused, like [`QueryBorrow::for_each`]. If `f` panics, the commands it recorded so far stay in
    /// the buffer (sorted, as above).
    pub fn for_each_with_commands(self, f: impl for<'a, 'c> FnMut(Entity, Q::Item<'a>, &mut Commands<'c>)) {
        if let Err(error) = self.try_for_each_with_commands(f) {
            panic!("{error}");
        }
    }

    /// [`QueryBorrow::for_each_with_commands`] in pieces on the thread pool (as [`QueryBorrow::par_for_each`]): each piece
    /// records into a buffer of its own, keyed by the visited entity, and when the loop ends every piece's
    /// commands join the world's buffer sorted by that entity, so the buffer, and the world after
    /// [`World::apply_commands`], are exactly what the serial loop gives, for every thread count and piece size.
    /// Spawns get deferred handles that carry their piece's number: one kept and used by another piece, or by a
    /// command recorded after the loop, names the spawn it names in the serial loop.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Health(i32);
    /// struct Spark;
    /// let mut world = World::new();
    /// world.set_piece_rows(7);
    /// for h in 0..100 {
    ///     world.spawn((Health(h % 3),)).unwrap();
    /// }
    /// world.query::<&Health>().par_for_each_with_commands(|e, health, commands| {
    ///     if health.0 == 0 {
    ///         commands.despawn(e);
    ///         let spark = commands.spawn((Spark,)).unwrap();
    ///         commands.insert(spark, Health(9));
    ///     }
    /// });
    /// let stats = world.apply_commands();
    /// assert_eq!((stats.applied, stats.skipped), (3 * 34, 0));
    /// assert_eq!(world.query::<(&Spark, &Health)>().count(), 34);
    /// ```
    ///
    /// # Panics
    /// If the query is refused, like [`QueryBorrow::for_each`]. If `f` panics, once every piece already started has
    /// finished: the commands every piece recorded so far stay in the buffer (sorted, as above).
    pub fn par_for_each_with_commands(mut self, f: impl for<'a, 'c> Fn(Entity, Q::Item<'a>, &mut Commands<'c>) + Sync) {
        self.world.stamp(Stamp::Loop);
        let pieces = self.world.pieces();
        let outcome = self.world.with_commands(|parts, commands, queues| {
            let visit = ParCommands::new(f, commands);
            with_pieces(commands, queues, |queues| par_run::<Q, F, _>(parts, pieces, &visit, queues));
        });
        if let Err(error) = outcome {
            panic!("{error}");
        }
    }

    /// [`QueryBorrow::for_each_with_commands`], or says why the query is refused.
    pub fn try_for_each_with_commands(
        mut self,
        f: impl for<'a, 'c> FnMut(Entity, Q::Item<'a>, &mut Commands<'c>),
    ) -> Result<(), QueryError> {
        self.world.stamp(Stamp::Loop);
        self.world.with_commands(|parts, commands, _| {
            run::<Q, F, _>(parts, &mut WithCommands { f, commands: Commands::keyed(commands) })
        })
    }
}

impl<'w, W: Source<'w, Q, F>, Q: QueryData, F: Filter> QueryBorrow<W, Q, F> {
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
    pub fn get_many<const N: usize>(mut self, entities: [Entity; N]) -> Result<[Q::Item<'w>; N], QueryOneError> {
        distinct_and_alive(&entities, |entity| self.world.settle(entity))?;
        self.world.stamp(Stamp::Every(&entities.map(Entity::index)));
        let items = self.world.with_parts(|parts| many::<Q, F, N>(parts, entities.map(Entity::index)));
        all_match(items.map_err(QueryOneError::Refused)?, &entities)
    }
}

/// An entry of the list [`QueryBorrow::for_each_of`] visits: a handle, or a handle with a value beside it.
pub trait Listed {
    /// The entity this entry names.
    fn entity(&self) -> Entity;
}

impl Listed for Entity {
    #[inline(always)]
    fn entity(&self) -> Entity {
        *self
    }
}

impl<T> Listed for (Entity, T) {
    #[inline(always)]
    fn entity(&self) -> Entity {
        self.0
    }
}

/// Refuses a list of entities that names one twice ([`QueryOneError::Aliased`]) or one that `alive` says is not.
pub(crate) fn distinct_and_alive(
    entities: &[Entity],
    mut alive: impl FnMut(Entity) -> bool,
) -> Result<(), QueryOneError> {
    for (k, &entity) in entities.iter().enumerate() {
        if entities[..k].contains(&entity) {
            return Err(QueryOneError::Aliased(entity));
        }
    }
    match entities.iter().find(|&&entity| !alive(entity)) {
        Some(&entity) => Err(QueryOneError::NoSuchEntity(entity)),
        None => Ok(()),
    }
}

/// Every entity's item, or the first entity that does not match.
pub(crate) fn all_match<T, const N: usize>(
    items: [Option<T>; N],
    entities: &[Entity; N],
) -> Result<[T; N], QueryOneError> {
    if let Some(k) = items.iter().position(Option::is_none) {
        return Err(QueryOneError::Unsatisfied(entities[k]));
    }
    Ok(items.map(|item| item.expect("checked above")))
}
