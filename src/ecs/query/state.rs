//! A query a system keeps between runs ([`QueryState`]), and the types a system holds on loan while it runs
//! ([`Lease`]).
//!
//! A system runs on a *shared* world, beside other systems on other threads. The types its queries write are moved
//! out of the world before the run (`World::lend`) into the system's lease and put back after; every other type
//! is read where it is. So no two threads ever hold the same pool mutably, and nothing needs `unsafe`: the world
//! is `&World` on every thread, and each written pool is owned by one system's lease for the run.
//!
//! Two queries of one system may write the same type when their filters keep them apart (`With<T>` in one,
//! `Without<T>` in the other). They share the one loan: each run of a query borrows the loans it names for that
//! run only, so the two may run one after the other (not one inside the other's loop: that panics, naming the
//! type).

use super::access::QueryAccess;
use super::cache::Shape;
use super::data::QueryData;
use super::data::ReadOnlyQueryData;
use super::error::{QueryError, QueryOneError, MAX_QUERY_TYPES};
use super::filter::Filter;
use super::iter::QueryIter;
use super::par::Pieces;
use super::run::{batches_of, record, stamp_rows, stamped_after, tracked_writes, written_tracked};
use super::run::{Loaned, Parts, QueryContext, Stamp, Store};
use super::term::Lent;
use super::{QueryBorrow, Recording, Source};
use crate::ecs::change::ChangeView;
use crate::ecs::commands::CommandQueue;
use crate::ecs::component::ComponentId;
use crate::ecs::entity::Entity;
use crate::ecs::storage::Storage;
use crate::ecs::storage::{ErasedPool, Loan};
use crate::ecs::world::World;
use std::cell::{Ref, RefCell, RefMut};
use std::marker::PhantomData;

/// The component types a system holds on loan for one run: each moved out of the world (`World::lend`) and put
/// back after (`World::give_back`). Empty between runs.
#[derive(Default)]
pub struct Lease {
    loans: Vec<(ComponentId, RefCell<Loan>)>,
    /// The stand-ins the world held for the pools lent last time, for the next run.
    pub(crate) spares: Vec<Box<dyn ErasedPool>>,
}

impl Lease {
    /// Whether the lease holds nothing.
    pub fn is_empty(&self) -> bool {
        self.loans.is_empty()
    }

    /// The loan of type `id`, borrowed for one query run; `None` if the system does not hold it.
    fn borrow(&self, id: ComponentId) -> Option<RefMut<'_, Loan>> {
        Some(self.cell(id)?.try_borrow_mut().unwrap_or_else(|_| panic!("{}", held_elsewhere(id))))
    }

    /// The cell of the loan of type `id`, if the system holds it.
    fn cell(&self, id: ComponentId) -> Option<&RefCell<Loan>> {
        self.loans.iter().find(|(held, _)| *held == id).map(|(_, cell)| cell)
    }

    /// What `take` gives for each of the types `ids` names that the system holds (`None` for the others), kept by
    /// the caller for as long as its loop, iterator or item lives.
    fn hold_each<'l, G>(
        &'l self,
        ids: &[ComponentId],
        take: impl Fn(ComponentId) -> Option<G>,
    ) -> [Option<G>; MAX_QUERY_TYPES] {
        let mut held: [Option<G>; MAX_QUERY_TYPES] = Default::default();
        if !self.is_empty() {
            for (slot, &id) in held.iter_mut().zip(ids) {
                *slot = take(id);
            }
        }
        held
    }

    /// The loans of the types `ids` names, exclusively (see [`Lease::hold_each`]).
    pub(crate) fn hold<'l>(&'l self, ids: &[ComponentId]) -> Held<'l> {
        self.hold_each(ids, |id| self.borrow(id))
    }

    /// The loans of the types `ids` names, shared, for a read-only query's iterators (see [`Lease::hold_each`]).
    pub(crate) fn hold_shared<'l>(&'l self, ids: &[ComponentId]) -> HeldShared<'l> {
        self.hold_each(ids, |id| Some(self.cell(id)?.try_borrow().unwrap_or_else(|_| panic!("{}", held_elsewhere(id)))))
    }

    pub(crate) fn push(&mut self, loan: Loan) {
        self.loans.push((loan.id(), RefCell::new(loan)));
    }

    /// Empties the lease: its loans, and the spare stand-ins to put them back with.
    pub(crate) fn drain(&mut self) -> (impl Iterator<Item = Loan> + '_, &mut Vec<Box<dyn ErasedPool>>) {
        (self.loans.drain(..).map(|(_, cell)| cell.into_inner()), &mut self.spares)
    }
}

/// Why a query of a system could not borrow the loan of type `id`: another query of the system holds it.
fn held_elsewhere(id: ComponentId) -> String {
    format!(
        "a system ran a query while another of its queries held component #{id}, which the system writes: inside \
         that query's loop, or while an iterator or item it handed out is still in use (`iter`, `iter_mut`, \
         `get` keep their loans until the query's next loop, its drop or the end of the run): run one query after \
         the other, drop the first, or use `for_each` for it"
    )
}

/// The loans a query of a system keeps for its iterator or item ([`Lease::hold`]), one per named type.
pub(crate) type Held<'l> = [Option<RefMut<'l, Loan>>; MAX_QUERY_TYPES];

/// The loans a read-only query of a system keeps for its iterator, shared ([`Lease::hold_shared`]).
pub(crate) type HeldShared<'l> = [Option<Ref<'l, Loan>>; MAX_QUERY_TYPES];

/// A query kept by a system between runs: its shape (ids, access check, matching archetype tables) worked out once
/// when the system is added, and a scratch buffer. It runs on a shared world and the system's [`Lease`].
pub struct QueryState<Q: QueryData, F: Filter = ()> {
    shape: Shape,
    access: QueryAccess,
    scratch: Vec<Entity>,
    /// The pieces' command buffers of its parallel loops, reused.
    pieces: Vec<CommandQueue>,
    /// In a system's run: the rows handed out as `&mut` of the tracked types `stamp_ids` (stamped `tick` when the
    /// run is over), and the moment its change filters compare against.
    stamps: Vec<u32>,
    stamp_ids: Vec<ComponentId>,
    /// In a system's run: the types in the exact mode a loop handed out whole (compared in one pass at the end).
    whole_ids: Vec<ComponentId>,
    tick: u64,
    since: u64,
    _marker: PhantomData<fn() -> (Q, F)>,
}

impl<Q: QueryData, F: Filter> QueryState<Q, F> {
    /// The query's shape in `world`, registering its types; refused as [`World::query`] would refuse it.
    pub fn new(world: &mut World) -> Result<Self, QueryError> {
        let QueryContext { storage, components, .. } = world.query_context();
        let shape = Shape::new::<Q, F>(components);
        let access = QueryAccess::of(&shape.access)?;
        storage.catch_up(components);
        Ok(Self {
            shape,
            access,
            scratch: Vec::new(),
            pieces: Vec::new(),
            stamps: Vec::new(),
            stamp_ids: Vec::new(),
            whole_ids: Vec::new(),
            tick: 0,
            since: 0,
            _marker: PhantomData,
        })
    }

    /// What the query reads and writes, requires and excludes.
    pub fn access(&self) -> &QueryAccess {
        &self.access
    }

    /// The parts of the shared `world`, with the types in `loaned` taken from there.
    fn split_parts<'a>(&'a mut self, world: &'a World, loaned: Loaned<'a>, since: Option<u64>) -> Parts<'a, 'a> {
        let (entities, _, storage) = world.query_parts();
        let (shape, scratch, changes) = (&mut self.shape, &mut self.scratch, world.change_view(since));
        Parts { entities, storage: Store::Split(storage, loaned), shape, scratch, changes }
    }

    /// The parts of a mutable `world`, its storage lent whole and exclusively, its command buffer and its pieces'
    /// buffers: the types the query writes are marked written (they may receive a deferred handle) and the storage
    /// has a pool for every registered type.
    #[allow(clippy::type_complexity)]
    fn exclusive_parts<'a>(
        &'a mut self,
        world: &'a mut World,
    ) -> (Parts<'a, 'a>, &'a mut CommandQueue, &'a mut Vec<CommandQueue>) {
        let QueryContext { entities, storage, components, written, commands, pieces, changes, .. } =
            world.query_context();
        for id in self.shape.access.writes() {
            written.insert(id);
        }
        storage.catch_up(components);
        let storage = Store::Whole(Lent::Exclusive(storage));
        let changes = ChangeView { since: changes.last_clear, changes, components, world: None };
        (Parts { entities, storage, shape: &mut self.shape, scratch: &mut self.scratch, changes }, commands, pieces)
    }

    /// Brings the list of matching archetype tables up to date with `world`'s (a system's queries do it before
    /// each run, so the run's iterators can read the shape through `&self`).
    pub(crate) fn refresh(&mut self, world: &World) {
        let (_, _, storage) = world.query_parts();
        if let Storage::Tables(archetypes) = storage {
            self.shape.tables.update::<F>(archetypes, &self.shape.access);
        }
    }

    /// The ids of the types the query names, in access order (the loans it may borrow).
    pub(crate) fn ids(&self) -> &[ComponentId] {
        self.shape.access.ids()
    }

    /// The matches on `world` and the loans in `loaned`, as an iterator, through `&self` (a system's read-only
    /// query hands out several at once). The tables must be up to date ([`QueryState::refresh`]).
    pub(crate) fn iter_loaned<'a>(&'a self, world: &'a World, loaned: Loaned<'a>) -> QueryIter<'a, Q> {
        let (entities, _, storage) = world.query_parts();
        // Only a probing walk over an index-only layout copies handles: then this buffer grows.
        let mut scratch = Vec::new();
        let (storage, changes) = (Store::Split(storage, loaned), world.change_view(Some(self.since)));
        QueryIter::new(batches_of::<Q, F>(entities, storage, &self.shape, &mut scratch, changes, usize::MAX))
    }

    /// The query on a mutable `world`: every loop of [`QueryBorrow`] (`for_each`, `iter`, `get`, the parallel
    /// loops, the loops that record into the world's command buffer), on this query's shape, worked out once.
    ///
    /// ```
    /// use swarm::ecs::{QueryState, With, World};
    /// struct Pos(f32); struct Vel(f32); struct Red;
    /// let mut world = World::new();
    /// world.spawn((Pos(0.0), Vel(1.0), Red)).unwrap();
    /// world.spawn((Pos(0.0), Vel(1.0))).unwrap();
    /// let mut movers = QueryState::<(&mut Pos, &Vel), With<Red>>::new(&mut world).unwrap();
    /// for _frame in 0..3 {
    ///     movers.query(&mut world).for_each(|_, (pos, vel)| pos.0 += vel.0);
    /// }
    /// let mut look = QueryState::<&Pos>::new(&mut world).unwrap();
    /// let xs: Vec<f32> = look.query_ref(&world).iter().map(|(_, p)| p.0).collect();
    /// assert_eq!(xs, [3.0, 0.0]);
    /// ```
    pub fn query<'a>(&'a mut self, world: &'a mut World) -> QueryBorrow<Prepared<'a, Q, F, &'a mut World>, Q, F> {
        QueryBorrow::new(Prepared { state: self, world })
    }

    /// The query on a shared `world` (every term only reads): every loop of [`QueryBorrow`] but the ones that
    /// record.
    pub fn query_ref<'a>(&'a mut self, world: &'a World) -> QueryBorrow<Prepared<'a, Q, F, OnLoan<'a, ()>>, Q, F>
    where
        Q: ReadOnlyQueryData,
    {
        self.on_loan(world, Default::default(), (), None)
    }

    /// The query on a shared `world` and the loans in `loaned` (a system's run), recording into `commands` if it
    /// is a buffer; its change filters compare against `since`.
    pub(crate) fn on_loan<'a, C>(
        &'a mut self,
        world: &'a World,
        loaned: Loaned<'a>,
        commands: C,
        since: Option<u64>,
    ) -> QueryBorrow<Prepared<'a, Q, F, OnLoan<'a, C>>, Q, F> {
        QueryBorrow::new(Prepared { state: self, world: OnLoan { world, loaned, commands, since } })
    }

    /// A system's run starts: its change filters compare against `since`, its writes are stamped `tick`.
    pub(crate) fn start_run(&mut self, since: u64, tick: u64) {
        (self.since, self.tick) = (since, tick);
    }

    /// The moment a system's run compares against.
    pub(crate) fn since(&self) -> u64 {
        self.since
    }

    /// A system's run is over: the rows it stamped go to the world's tracks, with the run's tick.
    pub(crate) fn flush_stamps(&mut self, world: &mut World) {
        if !self.stamps.is_empty() || !self.whole_ids.is_empty() {
            world.stamp_whole(&mut self.whole_ids, self.tick);
            world.stamp_all(&self.stamp_ids, &self.stamps, self.tick);
            self.stamps.clear();
        }
    }

    /// The matches on a shared `world`, as an iterator (`self.query_ref(world).iter()`).
    pub fn iter<'a>(&'a mut self, world: &'a World) -> QueryIter<'a, Q>
    where
        Q: ReadOnlyQueryData,
    {
        self.query_ref(world).iter()
    }

    /// The matches on a mutable `world`, as an iterator that may write (`self.query(world).iter()`).
    pub fn iter_mut<'a>(&'a mut self, world: &'a mut World) -> QueryIter<'a, Q> {
        self.query(world).iter()
    }

    /// One entity's components on a shared `world`, if it matches (`self.query_ref(world).get(entity)`).
    pub fn get<'a>(&'a mut self, world: &'a World, entity: Entity) -> Result<Q::Item<'a>, QueryOneError>
    where
        Q: ReadOnlyQueryData,
    {
        self.query_ref(world).get(entity)
    }

    /// One entity's components on a mutable `world`, if it matches (`self.query(world).get(entity)`): a handle
    /// reserved by the command buffer applies the buffer first.
    pub fn get_mut<'a>(&'a mut self, world: &'a mut World, entity: Entity) -> Result<Q::Item<'a>, QueryOneError> {
        self.query(world).get(entity)
    }
}

/// A prepared query on a world ([`QueryState::query`], [`QueryState::query_ref`], a system's
/// [`Query`](crate::app::Query)): the [`Source`] of a [`QueryBorrow`] whose shape is the state's.
pub struct Prepared<'a, Q: QueryData, F: Filter, W> {
    state: &'a mut QueryState<Q, F>,
    world: W,
}

/// A shared world with the types a system holds on loan for its run (none for [`QueryState::query_ref`]), and the
/// command buffer its query records into (`()`: none).
#[doc(hidden)]
pub struct OnLoan<'a, C> {
    world: &'a World,
    loaned: Loaned<'a>,
    commands: C,
    /// The moment change filters compare against (`None`: the world's last `clear_trackers`).
    since: Option<u64>,
}

impl<'a, Q: QueryData, F: Filter> Source<'a, Q, F> for Prepared<'a, Q, F, &'a mut World> {
    fn with_parts<R>(self, body: impl for<'s> FnOnce(Parts<'a, 's>) -> R) -> Result<R, QueryError> {
        Ok(body(self.state.exclusive_parts(self.world).0))
    }
    fn with_parts_noting<R>(
        self,
        body: impl for<'x, 's> FnOnce(Parts<'x, 's>, Option<&mut Vec<u32>>) -> R,
    ) -> Result<R, QueryError> {
        let Prepared { world, state, .. } = self;
        let (ids, n) = written_tracked::<Q, F>(world, Some(&state.shape));
        Ok(stamped_after(world, &ids[..n], |world, rows| body(state.exclusive_parts(world).0, rows)))
    }
    #[inline]
    fn stamp(&mut self, rows: Stamp<'_>) {
        if self.world.tracks_any() {
            self.world.compare_changes();
            stamp_rows::<Q, F>(self.world, Some(&mut self.state.shape), rows);
        }
    }
    #[inline]
    fn compare(&mut self) {
        self.world.compare_changes();
    }
    fn settle(&mut self, entity: Entity) -> bool {
        World::settle(self.world, entity)
    }
    fn pieces(&self) -> Pieces {
        World::pieces(self.world)
    }
}

impl<'a, Q: QueryData, F: Filter> Recording<'a, Q, F> for Prepared<'a, Q, F, &'a mut World> {
    fn with_commands<R>(
        self,
        body: impl for<'s> FnOnce(Parts<'a, 's>, &'s mut CommandQueue, &'s mut Vec<CommandQueue>) -> R,
    ) -> Result<R, QueryError> {
        let (parts, commands, pieces) = self.state.exclusive_parts(self.world);
        Ok(body(parts, commands, pieces))
    }
}

impl<'a, Q: QueryData, F: Filter, C> Source<'a, Q, F> for Prepared<'a, Q, F, OnLoan<'a, C>> {
    fn with_parts<R>(self, body: impl for<'s> FnOnce(Parts<'a, 's>) -> R) -> Result<R, QueryError> {
        let OnLoan { world, loaned, since, .. } = self.world;
        Ok(body(self.state.split_parts(world, loaned, since)))
    }
    /// The noted rows join the system's stamps, which wait in its query state until the run is over.
    fn with_parts_noting<R>(
        self,
        body: impl for<'x, 's> FnOnce(Parts<'x, 's>, Option<&mut Vec<u32>>) -> R,
    ) -> Result<R, QueryError> {
        let OnLoan { world, loaned, since, .. } = self.world;
        let (ids, n) = match world.tracks_any() {
            true => tracked_writes(world.changes(), &self.state.shape),
            false => ([0; MAX_QUERY_TYPES], 0),
        };
        if n == 0 {
            return Ok(body(self.state.split_parts(world, loaned, since), None));
        }
        let mut stamps = std::mem::take(&mut self.state.stamps);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            body(self.state.split_parts(world, loaned, since), Some(&mut stamps))
        }));
        self.state.stamps = stamps;
        self.state.stamp_ids.clear();
        self.state.stamp_ids.extend_from_slice(&ids[..n]);
        Ok(outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    }
    /// A system's stamps wait in its query state until the run is over (the world is shared meanwhile).
    #[inline]
    fn stamp(&mut self, rows: Stamp<'_>) {
        let world = self.world.world;
        if world.tracks_any() {
            let (mut ids, mut n) = tracked_writes(world.changes(), &self.state.shape);
            if let Stamp::Loop = rows {
                // A loop: the exact types are compared whole when the run ends.
                let exact = |id: ComponentId| world.changes().is_exact(id);
                for &id in ids[..n].iter().filter(|&&id| exact(id)) {
                    if !self.state.whole_ids.contains(&id) {
                        self.state.whole_ids.push(id);
                    }
                }
                let mut kept = 0;
                for k in 0..n {
                    if !exact(ids[k]) {
                        ids[kept] = ids[k];
                        kept += 1;
                    }
                }
                n = kept;
            }
            if n > 0 {
                let mut stamps = std::mem::take(&mut self.state.stamps);
                let loaned = self.world.loaned.each_mut().map(|loan| loan.as_mut().map(Lent::reborrow));
                record::<Q, F>(self.state.split_parts(world, loaned, self.world.since), rows, &mut stamps);
                self.state.stamps = stamps;
                self.state.stamp_ids.clear();
                self.state.stamp_ids.extend_from_slice(&ids[..n]);
            }
        }
    }
    fn settle(&mut self, entity: Entity) -> bool {
        self.world.world.is_alive(entity)
    }
    fn pieces(&self) -> Pieces {
        World::pieces(self.world.world)
    }
}

impl<'a, 'c: 'a, Q: QueryData, F: Filter> Recording<'a, Q, F> for Prepared<'a, Q, F, OnLoan<'a, &'c mut CommandQueue>> {
    fn with_commands<R>(
        self,
        body: impl for<'s> FnOnce(Parts<'a, 's>, &'s mut CommandQueue, &'s mut Vec<CommandQueue>) -> R,
    ) -> Result<R, QueryError> {
        let OnLoan { world, loaned, commands, since } = self.world;
        let (entities, _, storage) = world.query_parts();
        let QueryState { shape, scratch, pieces, .. } = self.state;
        let (storage, changes) = (Store::Split(storage, loaned), world.change_view(since));
        Ok(body(Parts { entities, storage, shape, scratch, changes }, commands, pieces))
    }
}

impl<'a, Q: QueryData, F: Filter> IntoIterator for QueryBorrow<Prepared<'a, Q, F, &'a mut World>, Q, F> {
    type Item = (Entity, Q::Item<'a>);
    type IntoIter = QueryIter<'a, Q>;

    /// [`QueryBorrow::iter`].
    fn into_iter(self) -> QueryIter<'a, Q> {
        self.iter()
    }
}
