//! Parallel query loops: the matches cut into *pieces* of a fixed number of rows, the pieces run on the thread
//! pool, each with a slot of its own (a command buffer, a partial sum), and the slots combined in piece order.
//!
//! The determinism rule: where a piece starts depends only on the storage's order and the piece size, never on the
//! thread count or on which thread ran what. A piece is up to `rows` consecutive matches of one run: the rows of
//! a lock-step walk or of the driver of a probing walk, or one archetype table's rows (a piece never spans two
//! tables). Piece `k` writes only slot `k`, so whatever a loop builds per piece comes back in piece order.
//!
//! Which walks run their pieces on several threads (no `unsafe`: each piece holds its own part of every borrow):
//! - lock-step pools and archetype tables: every term's slices are cut at the piece boundaries;
//! - a probing walk whose written terms are all the driver (walked by row): the driver's values are cut, and the
//!   probed pools, only read, are shared by every piece;
//! - a probing walk that only reads (any backend: hash map, ordered tree and direct array included): the
//!   candidate list is cut and every piece probes the shared pools.
//!
//! A list visit ([`par_listed`]) splits where every fetched pool is packed in one order: the list's halves find their
//! entries' packed positions, then each thread holds a half of the packed rows and visits the list's entries that
//! fall in it, in the list's order.
//!
//! A walk that probes a pool it writes (on the hash-map, ordered-tree and direct-array backends every walk probes;
//! on sparse sets, a written term that is not the smallest pool) runs its pieces in order on the calling thread:
//! handing two threads `&mut` into one map or array at entity-chosen places needs `unsafe` or a gathered list of
//! borrows (an allocation per loop). The pieces and their slots are the same either way, so the result is too.

use super::data::QueryData;
use super::filter::Filter;
use super::run::{lane_rows, lending, listed_pools, listed_tables, lock_step_runs, packed_alike, probe_rows};
use super::run::{refresh, take_pools, walk, Lending, Parts, Sink};
use super::Listed;
use crate::ecs::commands::{CommandQueue, Commands};
use crate::ecs::entity::{Entities, Entity};
use crate::ecs::storage::dispatch;
use crate::ecs::storage::Layout;
use crate::ecs::world::World;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

/// How a parallel loop cuts its work: `rows` matches a piece, on the pool if `parallel`.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Pieces {
    pub(crate) rows: usize,
    pub(crate) parallel: bool,
}

/// How a world's parallel loops cut their work.
impl World {
    /// Sets how many matches make one piece of a parallel query loop ([`QueryBorrow::par_for_each`](crate::ecs::QueryBorrow::par_for_each) and
    /// its kin; at least 1, default [`PIECE_ROWS`](crate::ecs::PIECE_ROWS)). Pieces are cut by position in the storage's order, so the result of a
    /// loop does not depend on the thread count; it does not depend on the piece size either, except what a loop
    /// folds per piece ([`QueryBorrow::par_fold`](crate::ecs::QueryBorrow::par_fold)).
    pub fn set_piece_rows(&mut self, rows: usize) {
        self.piece_rows = rows.max(1);
    }

    /// The matches in one piece of a parallel query loop.
    pub fn piece_rows(&self) -> usize {
        self.piece_rows
    }

    /// Sets the threads parallel query loops may use: 1 runs their pieces in order on the calling thread (no
    /// pool is touched); any other number lets them run on the current rayon pool (an [`App`](crate::app::App)'s
    /// own, which sets this to its thread count). The result is the same either way.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads;
    }

    /// Whether parallel loops on this world may use the thread pool now: it is not set to one thread, and the
    /// current rayon pool has more than one (for work of one's own split the same way, e.g. with `rayon::join`).
    pub fn parallel(&self) -> bool {
        self.pieces().parallel
    }

    /// How a parallel loop on this world cuts its work, and whether it may use the pool.
    pub(crate) fn pieces(&self) -> Pieces {
        Pieces { rows: self.piece_rows, parallel: self.threads != 1 && rayon::current_num_threads() > 1 }
    }
}

/// What a parallel loop hands its matches to: like [`super::run::Visit`], shared between threads, with the piece's
/// slot beside each call.
pub(super) trait ParVisit<Q: QueryData>: Sync {
    /// Each piece's own state, kept by the caller between loops (so its memory is reused).
    type Slot: Default + Send;
    /// Slots of a loop's pieces, in piece order, before any of them starts: the first is piece `first`.
    fn number(&self, _slots: &mut [Self::Slot], _first: usize) {}
    /// A piece starts on `slot`.
    fn start(&self, slot: &mut Self::Slot);
    /// One entity, found by probing.
    fn one(&self, slot: &mut Self::Slot, entity: Entity, item: Q::Item<'_>);
    /// A run of rows: `entities[k]` owns row `k` of every slice.
    fn run(&self, slot: &mut Self::Slot, entities: &[Entity], slices: Q::Slices<'_>);
}

/// Halves of parallel work that ran on another thread than the one that split them, over the process.
static MOVED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The split this thread is running a half of (`None` outside any half): a join's halves, and every join
    /// inside them, belong to the thread that called the outermost join, and count into its account.
    static SPLIT: RefCell<Option<Split>> = const { RefCell::new(None) };
    /// The account of the code this thread runs ([`count_elsewhere`]), for the joins it begins.
    static ACCOUNT: RefCell<Option<Elsewhere>> = const { RefCell::new(None) };
    /// Joins this thread has called: a half during which it called none is a leaf, timed whole.
    static JOINS: Cell<u64> = const { Cell::new(0) };
}

/// A split's thread and account, handed to its halves.
#[derive(Clone)]
struct Split {
    origin: usize,
    account: Elsewhere,
}

/// Adds up the work that other threads do for some code ([`count_elsewhere`]): the time of the halves of
/// [`join`] (the parallel loops' pieces, the simulation's own splits) that ran on another thread than the one
/// that began the split. Clones share the sum.
///
/// Only halves that split no further are timed, so no time is counted twice, and a thread's wait inside a join is
/// never counted. A leaf is timed by the clock: if it blocks (a lock, a sleep) or the system runs another thread
/// meanwhile, that time counts too. A half that splits and also works outside its joins has that work left out. A
/// split begun outside any rayon pool is not counted.
#[derive(Clone, Debug, Default)]
pub struct Elsewhere(Arc<AtomicU64>);

impl Elsewhere {
    /// Nanoseconds counted so far.
    pub fn ns(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// Runs `f` on this thread, adding the work other threads do for the joins it begins to `account`: the joins `f`
/// begins are splits of its own, begun on this thread, even when `f` itself runs inside a half of another split.
pub fn count_elsewhere<T>(account: &Elsewhere, f: impl FnOnce() -> T) -> T {
    /// Puts the thread's [`ACCOUNT`] and [`SPLIT`] back, also when `f` panics.
    struct Restore(Option<Elsewhere>, Option<Split>);
    impl Drop for Restore {
        fn drop(&mut self) {
            ACCOUNT.set(self.0.take());
            SPLIT.set(self.1.take());
        }
    }
    let _restore = Restore(ACCOUNT.replace(Some(account.clone())), SPLIT.replace(None));
    f()
}

/// `rayon::join`, counting the times the second half runs on another thread (the pool took it: the work really
/// ran in parallel), and adding the work other threads do to the account of the code that began it
/// ([`count_elsewhere`]). Parallel loops and the simulation's own splits go through it.
pub fn join<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    join_noting(a, |_| b())
}

/// [`join`], telling the second half whether another thread took it (and counting it if so).
fn join_noting<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce(bool) -> B + Send) -> (A, B) {
    // A split begun outside any pool is not counted: rayon runs both of its halves on the global pool's threads,
    // neither of them the one that began it.
    let split = SPLIT.with_borrow(Option::clone).or_else(|| {
        let origin = rayon::current_thread_index()?;
        ACCOUNT.with_borrow(Option::clone).map(|account| Split { origin, account })
    });
    if split.is_some() {
        JOINS.set(JOINS.get() + 1);
    }
    let other = split.clone();
    rayon::join_context(
        |_| half(split, a),
        |context| {
            let moved = context.migrated();
            if moved {
                MOVED.fetch_add(1, Relaxed);
            }
            half(other, || b(moved))
        },
    )
}

/// This thread's number for a [`Split`]: its index in the current pool, or a number no pool thread has.
fn thread_number() -> usize {
    rayon::current_thread_index().unwrap_or(usize::MAX)
}

/// Runs one half of `split` (none: nobody counts). On another thread than the split's, a half that calls no join
/// is timed into the split's account: only leaves are (see [`Elsewhere`]).
fn half<R>(split: Option<Split>, f: impl FnOnce() -> R) -> R {
    /// Puts the thread's [`SPLIT`] back, also when the half panics.
    struct Restore(Option<Split>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SPLIT.set(self.0.take());
        }
    }
    // Nobody counts: the half runs as it is.
    let Some(split) = split else { return f() };
    let here = split.origin == thread_number();
    let account = split.account.clone();
    let _restore = Restore(SPLIT.replace(Some(split)));
    if here {
        return f();
    }
    let (joins, start) = (JOINS.get(), Instant::now());
    let out = f();
    if JOINS.get() == joins {
        account.0.fetch_add(start.elapsed().as_nanos() as u64, Relaxed);
    }
    out
}

/// How many halves of parallel work ran on another thread than the one that split them, in this process so far.
pub fn halves_moved() -> u64 {
    MOVED.load(Relaxed)
}

/// Runs `body` on each piece of `work` (`size` rows a piece, one slot each), halving the pieces. While `splits`
/// lasts the halves are joined on the pool (joins keep their jobs on the stack: nothing allocates), each half with
/// half the splits, and a half another thread took gets the thread count again: rayon's own adaptive rule, so a
/// loop makes a few tasks a thread rather than one per piece. Past that a task runs its pieces in order. Which
/// task or thread runs a piece changes nothing: pieces and slots are fixed before.
fn pieces<T: Send, S: Send>(
    work: T,
    slots: &mut [S],
    size: usize,
    splits: usize,
    cut: &(impl Fn(T, usize) -> (T, T) + Sync),
    body: &(impl Fn(T, &mut S) + Sync),
) {
    match slots {
        [] => {}
        [slot] => body(work, slot),
        _ => {
            let middle = slots.len() / 2;
            let (front, back) = cut(work, middle * size);
            let (first, second) = slots.split_at_mut(middle);
            if splits > 0 {
                join_noting(
                    || pieces(front, first, size, splits / 2, cut, body),
                    |moved| {
                        let splits = if moved { (splits / 2).max(rayon::current_num_threads()) } else { splits / 2 };
                        pieces(back, second, size, splits, cut, body)
                    },
                );
            } else {
                pieces(front, first, size, 0, cut, body);
                pieces(back, second, size, 0, cut, body);
            }
        }
    }
}

/// Runs query `(Q, F)` on `parts` in pieces (see the module doc); `slots` ends with one slot per piece, in piece
/// order (kept slots keep their memory; unwinding, the slots of the pieces numbered so far).
pub(super) fn par_run<Q: QueryData, F: Filter, V: ParVisit<Q>>(
    parts: Parts<'_, '_>,
    split: Pieces,
    visit: &V,
    slots: &mut Vec<V::Slot>,
) {
    let Parts { entities, storage, shape, scratch, changes } = parts;
    refresh::<F>(&storage, shape);
    let splits = if split.parallel { rayon::current_num_threads() } else { 0 };
    let mut sink = InPieces { visit, slots, used: 0, size: split.rows.max(1), splits };
    walk::<Q, F, _>(entities, storage, shape, scratch, changes, &mut sink);
}

/// The parallel loop's sink: each strategy's rows cut into pieces of `size` rows, the next unused slots numbered and
/// handed to them, the pieces run on the pool while `splits` lasts.
struct InPieces<'v, V, S> {
    visit: &'v V,
    slots: &'v mut Vec<S>,
    /// Slots handed to pieces so far.
    used: usize,
    size: usize,
    splits: usize,
}

impl<V, S> Drop for InPieces<'_, V, S> {
    /// The loop is over, or unwinding: the slots are the pieces' that were numbered, no others.
    fn drop(&mut self) {
        self.slots.truncate(self.used);
    }
}

impl<V, S: Default> InPieces<'_, V, S> {
    /// The slots of the pieces of `rows` rows (new ones made as needed), and the number of the first.
    fn take(&mut self, rows: usize) -> (&mut [S], usize) {
        let (first, end) = (self.used, self.used + rows.div_ceil(self.size));
        if self.slots.len() < end {
            self.slots.resize_with(end, S::default);
        }
        self.used = end;
        (&mut self.slots[first..end], first)
    }
}

impl<'w, Q: QueryData, V: ParVisit<Q>> Sink<'w, Q> for InPieces<'_, V, V::Slot> {
    fn lock_step<L: Layout, F: Filter>(&mut self, filter: &F::Pools<'w, L>, rows: &'w [Entity], slices: Q::Slices<'w>) {
        let (visit, size, splits) = (self.visit, self.size, self.splits);
        let (slots, first) = self.take(rows.len());
        visit.number(slots, first);
        let body = |(rows, slices): (&[Entity], Q::Slices<'_>), slot: &mut V::Slot| {
            visit.start(slot);
            lock_step_runs::<Q, L, F>(filter, rows, slices, |rows, run| visit.run(slot, rows, run));
        };
        pieces((rows, slices), slots, size, splits, &cut_run::<Q>, &body);
    }

    fn lanes<L: Layout, F: Filter>(
        &mut self,
        filter: &F::Pools<'w, L>,
        pools: Q::Pools<'w, L>,
        driver: usize,
        _: &Entities,
        _: &mut Vec<Entity>,
    ) {
        let (visit, size, splits) = (self.visit, self.size, self.splits);
        let (rows, mut lanes) = Q::into_lanes::<L>(pools, driver);
        let rows = rows.unwrap_or(&[]);
        let (slots, first) = self.take(rows.len());
        visit.number(slots, first);
        if Q::lanes_split(driver) {
            let body = |(rows, mut lanes): (&[Entity], Q::Lanes<'_, L>), slot: &mut V::Slot| {
                visit.start(slot);
                lane_rows::<Q, L, F>(filter, rows, 0, &mut lanes, |entity, item| visit.one(slot, entity, item));
            };
            pieces((rows, lanes), slots, size, splits, &cut_lanes::<Q, L>, &body);
        } else {
            // A written pool is probed: the pieces run in order here, each starting at its own row.
            for (k, (piece, slot)) in rows.chunks(size).zip(slots.iter_mut()).enumerate() {
                visit.start(slot);
                let emit = |entity, item: Q::Item<'_>| visit.one(slot, entity, item);
                lane_rows::<Q, L, F>(filter, piece, k * size, &mut lanes, emit);
            }
        }
    }

    fn probe<L: Layout, F: Filter>(&mut self, filter: &F::Pools<'w, L>, mut pools: Q::Pools<'w, L>, found: &[Entity]) {
        let (visit, size, splits) = (self.visit, self.size, self.splits);
        let (slots, first) = self.take(found.len());
        visit.number(slots, first);
        let body = |found: &[Entity], mut pools: Q::Pools<'_, L>, slot: &mut V::Slot| {
            visit.start(slot);
            probe_rows::<Q, L, F>(filter, found, &mut pools, |entity, item| visit.one(slot, entity, item));
        };
        if Q::share::<L>(&pools).is_some() {
            // Only reads: every piece probes the pools through a handle of its own.
            let shared = &pools;
            let body = |found: &[Entity], slot: &mut V::Slot| {
                body(found, Q::share::<L>(shared).expect("read-only pools share"), slot)
            };
            pieces(found, slots, size, splits, &cut_list, &body);
        } else {
            for (found, slot) in found.chunks(size).zip(slots.iter_mut()) {
                body(found, Q::reborrow::<L>(&mut pools), slot);
            }
        }
    }

    /// (In order on this thread: a change filter's gathered rows.)
    fn gathered(&mut self, items: Vec<(Entity, Q::Item<'w>)>) {
        let (visit, size) = (self.visit, self.size);
        let (slots, first) = self.take(items.len());
        visit.number(slots, first);
        let mut items = items.into_iter();
        for slot in slots {
            visit.start(slot);
            for (entity, item) in items.by_ref().take(size) {
                visit.one(slot, entity, item);
            }
        }
    }

    fn table(&mut self, rows: &'w [Entity], slices: Q::Slices<'w>) {
        let (visit, size, splits) = (self.visit, self.size, self.splits);
        let (slots, first) = self.take(rows.len());
        visit.number(slots, first);
        let body = |(rows, slices): (&[Entity], Q::Slices<'_>), slot: &mut V::Slot| {
            visit.start(slot);
            visit.run(slot, rows, slices);
        };
        pieces((rows, slices), slots, size, splits, &cut_run::<Q>, &body);
    }
}

/// [`QueryBorrow::par_for_each_of`](super::QueryBorrow::par_for_each_of): the matches among `list`, each to `f`
/// with its entry, on the pool where the pools are cut by position.
///
/// Where every fetched pool is a sparse set and they are packed in one order (a lock-step walk's condition), the
/// list is visited in two passes, each cut into the thread count rounded up to a power of two, the parts on the
/// pool: the list's parts find each entry's packed position (its liveness, the filter and one sparse lookup); then
/// the packed rows are cut into parts, and each part walks the whole list of positions, visiting the entries whose
/// row it holds. An entity's visits all fall in one part, in the list's order, so a body that writes only the item
/// it is handed leaves the world [`listed`](super::run::listed) leaves. Elsewhere (a short list, one thread, an
/// `Option` term, pools packed in different orders, pools probed by index, archetype tables) the list is visited
/// in order on this thread.
///
/// `stamps`, if given, receives the index of each entry to be visited, in the list's order: where it splits, every
/// entry the first pass found, before any part visits; on this thread, each entry right before its call.
pub(super) fn par_listed<Q: QueryData, F: Filter, T: Listed + Sync>(
    parts: Parts<'_, '_>,
    split: Pieces,
    list: &[T],
    f: &(impl for<'a> Fn(&T, Q::Item<'a>) + Sync),
    mut stamps: Option<&mut Vec<u32>>,
) {
    let Parts { entities, storage, shape, changes, .. } = parts;
    // On this thread, each entry's index is noted right before its visit.
    let mut visit_noting = |entry: &T, item: Q::Item<'_>| {
        if let Some(stamps) = stamps.as_mut() {
            stamps.push(entry.entity().index());
        }
        f(entry, item)
    };
    let (layout, pools) = match lending(storage) {
        Lending::Pools(layout, pools) => (layout, pools),
        Lending::Tables(archetypes) => {
            return listed_tables::<Q, F, T>(entities, archetypes, shape, changes, list, visit_noting)
        }
    };
    dispatch!(layout, L => {
        let Some((pools, filter)) = take_pools::<Q, F, L>(pools, shape, changes) else { return };
        // Halvings: at least a part per thread.
        let depth = rayon::current_num_threads().next_power_of_two().trailing_zeros() as usize;
        let order = match packed_alike::<Q, L>(&pools) {
            Some(order) if split.parallel && list.len() >= split.rows => order,
            _ => return listed_pools::<Q, F, L, T>(entities, pools, &filter, list, &mut visit_noting),
        };
        // Each entry's packed position, or `NOT_HERE` (in this thread's reused buffer).
        let mut at = FOUND.take();
        at.clear();
        at.resize(list.len(), NOT_HERE);
        let (order, filter) = (&order, &filter);
        let find = |(list, at): (&[T], &mut [u32])| {
            for (entry, at) in list.iter().zip(at) {
                let entity = entry.entity();
                if entities.is_alive(entity) && F::matches::<L>(filter, entity.index()) {
                    *at = order.position(entity.index()).map_or(NOT_HERE, |row| row as u32);
                }
            }
        };
        halves((list, &mut at[..]), depth, &cut_found::<T>, &find);
        if let Some(stamps) = stamps {
            // The entries found are the entries the parts visit (unless one panics): noted before the visit.
            let found = list.iter().zip(&at).filter(|&(_, &row)| row != NOT_HERE);
            stamps.extend(found.map(|(entry, _)| entry.entity().index()));
        }
        let (rows, slices) = Q::into_packed::<L>(pools);
        let rows = rows.map_or(0, <[Entity]>::len);
        let slices = Q::split_front(slices, rows).0;
        // A half's rows: its first row, how many, and their slices.
        let found = &at[..];
        let visit = |(start, len, mut slices): (usize, usize, Q::Slices<'_>)| {
            for (entry, &row) in list.iter().zip(found) {
                // `NOT_HERE` and the other halves' rows fall outside `0..len`.
                let row = (row as usize).wrapping_sub(start);
                if row < len {
                    f(entry, Q::row(Q::reborrow_slices(&mut slices), row));
                }
            }
        };
        halves((0, rows, slices), depth, &cut_rows::<Q>, &visit);
        FOUND.set(at);
    })
}

/// A list and its entries' positions cut in halves.
#[allow(clippy::type_complexity)]
fn cut_found<'a, T>((list, at): (&'a [T], &'a mut [u32])) -> ((&'a [T], &'a mut [u32]), (&'a [T], &'a mut [u32])) {
    let (front, back) = at.split_at_mut(at.len() / 2);
    let (list_front, list_back) = list.split_at(front.len());
    ((list_front, front), (list_back, back))
}

/// Packed rows (the first, how many, their slices) cut in halves.
#[allow(clippy::type_complexity)]
fn cut_rows<'w, Q: QueryData>(
    (start, len, slices): (usize, usize, Q::Slices<'w>),
) -> ((usize, usize, Q::Slices<'w>), (usize, usize, Q::Slices<'w>)) {
    let (front, back) = Q::split_front(slices, len / 2);
    ((start, len / 2, front), (start + len / 2, len - len / 2, back))
}

thread_local! {
    /// [`par_listed`]'s positions, kept between visits so a steady frame allocates nothing. Taken while in use: a
    /// visit this thread begins meanwhile (inside another's body, or another system's picked up while it waits in
    /// a join) makes its own. Each thread that begins visits keeps one, as long as the longest list it saw.
    static FOUND: Cell<Vec<u32>> = const { Cell::new(Vec::new()) };
}

/// A list entry whose entity does not match.
const NOT_HERE: u32 = u32::MAX;

/// Runs `body` on `work` cut in halves `depth` times (`2^depth` parts), the halves joined on the pool.
fn halves<W: Send>(work: W, depth: usize, cut: &(impl Fn(W) -> (W, W) + Sync), body: &(impl Fn(W) + Sync)) {
    if depth == 0 {
        return body(work);
    }
    let (front, back) = cut(work);
    join(|| halves(front, depth - 1, cut, body), || halves(back, depth - 1, cut, body));
}

/// A run's rows and slices cut at row `at`.
#[allow(clippy::type_complexity)]
fn cut_run<'w, Q: QueryData>(
    (rows, slices): (&'w [Entity], Q::Slices<'w>),
    at: usize,
) -> ((&'w [Entity], Q::Slices<'w>), (&'w [Entity], Q::Slices<'w>)) {
    let (front, back) = Q::split_front(slices, at);
    ((&rows[..at], front), (&rows[at..], back))
}

/// A probing walk's driver rows and lanes cut at row `at` (see [`QueryData::lanes_split`]).
#[allow(clippy::type_complexity)]
fn cut_lanes<'w, Q: QueryData, L: Layout>(
    (rows, lanes): (&'w [Entity], Q::Lanes<'w, L>),
    at: usize,
) -> ((&'w [Entity], Q::Lanes<'w, L>), (&'w [Entity], Q::Lanes<'w, L>)) {
    let (front, back) = Q::split_lanes::<L>(lanes, at);
    ((&rows[..at], front), (&rows[at..], back))
}

/// A list of candidates cut at `at`.
fn cut_list(found: &[Entity], at: usize) -> (&[Entity], &[Entity]) {
    found.split_at(at)
}

/// [`QueryBorrow::par_for_each`](super::QueryBorrow::par_for_each)'s visitor: one call per entity, no slot.
pub(super) struct ParEach<Func>(pub(super) Func);

impl<Q: QueryData, Func: for<'a> Fn(Entity, Q::Item<'a>) + Sync> ParVisit<Q> for ParEach<Func> {
    type Slot = ();
    fn start(&self, _: &mut ()) {}
    #[inline(always)]
    fn one(&self, _: &mut (), entity: Entity, item: Q::Item<'_>) {
        (self.0)(entity, item)
    }
    #[inline]
    fn run(&self, _: &mut (), entities: &[Entity], slices: Q::Slices<'_>) {
        Q::each_row(entities, slices, &mut |entity, item| (self.0)(entity, item))
    }
}

/// [`QueryBorrow::par_fold`](super::QueryBorrow::par_fold)'s visitor: each piece's value started by `start`, then fed its
/// matches.
pub(super) struct ParFold<A, Start, Func> {
    pub(super) start: Start,
    pub(super) f: Func,
    pub(super) _slot: std::marker::PhantomData<fn() -> A>,
}

impl<Q, A, Start, Func> ParVisit<Q> for ParFold<A, Start, Func>
where
    Q: QueryData,
    A: Default + Send,
    Start: Fn(&mut A) + Sync,
    Func: for<'a> Fn(&mut A, Entity, Q::Item<'a>) + Sync,
{
    type Slot = A;
    fn start(&self, slot: &mut A) {
        (self.start)(slot)
    }
    #[inline(always)]
    fn one(&self, slot: &mut A, entity: Entity, item: Q::Item<'_>) {
        (self.f)(slot, entity, item)
    }
    #[inline]
    fn run(&self, slot: &mut A, entities: &[Entity], slices: Q::Slices<'_>) {
        Q::each_row(entities, slices, &mut |entity, item| (self.f)(slot, entity, item))
    }
}

/// [`QueryBorrow::par_fold_runs`](super::QueryBorrow::par_fold_runs)'s visitor: [`ParFold`]'s, handing over runs
/// (a probed entity as a run of one) so the loop over a run is the caller's.
pub(super) struct ParFoldRuns<A, Start, Func> {
    pub(super) start: Start,
    pub(super) f: Func,
    pub(super) _slot: std::marker::PhantomData<fn() -> A>,
}

impl<Q, A, Start, Func> ParVisit<Q> for ParFoldRuns<A, Start, Func>
where
    Q: QueryData,
    A: Default + Send,
    Start: Fn(&mut A) + Sync,
    Func: for<'a> Fn(&mut A, &[Entity], Q::Slices<'a>) + Sync,
{
    type Slot = A;
    fn start(&self, slot: &mut A) {
        (self.start)(slot)
    }
    #[inline(always)]
    fn one(&self, slot: &mut A, entity: Entity, item: Q::Item<'_>) {
        (self.f)(slot, std::slice::from_ref(&entity), Q::one(item))
    }
    #[inline(always)]
    fn run(&self, slot: &mut A, entities: &[Entity], slices: Q::Slices<'_>) {
        (self.f)(slot, entities, slices)
    }
}

/// [`QueryBorrow::par_for_each_with_commands`](super::QueryBorrow::par_for_each_with_commands)'s visitor: each piece records
/// into a buffer of its own, keyed by the visited entity, with the deferred handles of the buffer the pieces
/// join (`tag`).
pub(super) struct ParCommands<Func> {
    pub(super) f: Func,
    pub(super) tag: u8,
    /// The deferred spawns the target buffer held when the loop began.
    pub(super) base: u32,
    /// The number of the loop's first piece in the target buffer.
    pub(super) first_piece: u32,
}

impl<Func> ParCommands<Func> {
    /// The visitor of a loop whose pieces join `into`.
    pub(super) fn new(f: Func, into: &CommandQueue) -> Self {
        Self { f, tag: into.tag(), base: into.deferred_count(), first_piece: into.next_piece() }
    }
}

impl<Q, Func> ParVisit<Q> for ParCommands<Func>
where
    Q: QueryData,
    Func: for<'a, 'c> Fn(Entity, Q::Item<'a>, &mut Commands<'c>) + Sync,
{
    type Slot = CommandQueue;
    fn number(&self, slots: &mut [CommandQueue], first: usize) {
        for (k, slot) in slots.iter_mut().enumerate() {
            slot.number_piece(self.first_piece, first + k);
        }
    }
    fn start(&self, slot: &mut CommandQueue) {
        slot.start_piece(self.tag, self.base);
    }
    #[inline(always)]
    fn one(&self, slot: &mut CommandQueue, entity: Entity, item: Q::Item<'_>) {
        let mut commands = Commands::keyed(slot);
        commands.visit(entity);
        (self.f)(entity, item, &mut commands)
    }
    #[inline]
    fn run(&self, slot: &mut CommandQueue, entities: &[Entity], slices: Q::Slices<'_>) {
        let mut commands = Commands::keyed(slot);
        Q::each_row(entities, slices, &mut |entity, item| {
            commands.visit(entity);
            (self.f)(entity, item, &mut commands)
        })
    }
}

/// Runs a parallel loop that records commands: `run` fills `pieces` (one buffer per piece), then every piece's
/// commands join `into`'s loop, panicking or not, and the loop ends (sorted by visited entity, as a serial
/// loop's), so the buffer after it is the same for every thread count and piece size. A panic in a piece goes on
/// from here, after the join: what every piece recorded before it stays, as a serial loop's would.
pub(crate) fn with_pieces(
    into: &mut CommandQueue,
    pieces: &mut Vec<CommandQueue>,
    run: impl FnOnce(&mut Vec<CommandQueue>),
) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(pieces)));
    for piece in pieces.iter_mut() {
        into.join_piece(piece);
    }
    into.end_loop();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::time::Duration;

    /// Milliseconds each half of the tests' splits sleeps.
    const NAP_MS: u64 = 5;

    fn nap() {
        std::thread::sleep(Duration::from_millis(NAP_MS));
    }

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool")
    }

    /// Counts into `account` a split on a pool of two whose first half waits for the second, so the second (which
    /// runs `second`) runs on the pool's other thread.
    fn second_elsewhere(account: &Elsewhere, second: impl FnOnce() + Send) {
        let barrier = Barrier::new(2);
        let meet = || {
            barrier.wait();
        };
        pool(2).install(|| {
            count_elsewhere(account, || {
                join(meet, || {
                    meet();
                    second();
                })
            })
        });
    }

    #[test]
    fn work_on_the_thread_that_split_is_not_counted() {
        let account = Elsewhere::default();
        // A pool of one: both halves run on the thread that split.
        pool(1).install(|| count_elsewhere(&account, || join(nap, || join(nap, nap))));
        assert_eq!(account.ns(), 0);
    }

    #[test]
    fn a_half_another_thread_runs_is_counted_once() {
        let account = Elsewhere::default();
        // The second half splits again on the other thread: its two leaves are counted (each where it ran), the
        // half around them is not.
        second_elsewhere(&account, || {
            join(nap, nap);
        });
        let ms = account.ns() as f64 / 1e6;
        // At least one leaf ran on the other thread (the one it split on); at most both did.
        assert!(ms >= NAP_MS as f64, "{ms} ms");
        // Outside the count, nothing more is added.
        let before = account.ns();
        pool(2).install(|| join(nap, nap));
        assert_eq!(account.ns(), before);
    }

    #[test]
    fn a_split_begun_outside_any_pool_is_not_counted() {
        // Rayon runs both halves on its global pool: neither is on the thread that began the split.
        let account = Elsewhere::default();
        count_elsewhere(&account, || join(nap, nap));
        assert_eq!(account.ns(), 0);
    }

    #[test]
    fn code_counted_inside_a_half_counts_its_own_splits() {
        // The second half runs on the other thread and counts its work into an account of its own (as a system
        // run inside a batch's half does): its split is its own, begun there, and nothing of it reaches the outer
        // account, whose own halves are the first (on its thread) and the second (which split: not a leaf).
        let (outer, inner) = (Elsewhere::default(), Elsewhere::default());
        second_elsewhere(&outer, || {
            count_elsewhere(&inner, || join(nap, nap));
        });
        assert_eq!(outer.ns(), 0);
    }
}
