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
use super::batch::Batches;
use super::cache::Shape;
use super::data::QueryData;
use super::data::ReadOnlyQueryData;
use super::error::{QueryError, QueryOneError, MAX_QUERY_TYPES};
use super::filter::Filter;
use super::iter::QueryIter;
use super::par::{par_run, with_pieces, ParCommands, ParEach, ParFold};
use super::run::{batches, batches_of, many, one, run, Each, Loaned, Parts, QueryContext, Runs, Store, WithCommands};
use super::term::Lent;
use super::{all_match, distinct_and_alive};
use crate::ecs::commands::{CommandQueue, Commands};
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
    _marker: PhantomData<fn() -> (Q, F)>,
}

impl<Q: QueryData, F: Filter> QueryState<Q, F> {
    /// The query's shape in `world`, registering its types; refused as [`World::query`] would refuse it.
    pub fn new(world: &mut World) -> Result<Self, QueryError> {
        let QueryContext { storage, components, .. } = world.query_context();
        let shape = Shape::new::<Q, F>(components);
        let access = QueryAccess::of(&shape.access)?;
        storage.catch_up(components);
        Ok(Self { shape, access, scratch: Vec::new(), pieces: Vec::new(), _marker: PhantomData })
    }

    /// What the query reads and writes, requires and excludes.
    pub fn access(&self) -> &QueryAccess {
        &self.access
    }

    /// Runs `body` on the world's parts, the types of `lease` this query names taken from the lease.
    fn parts<R>(&mut self, world: &World, lease: &Lease, body: impl FnOnce(Parts<'_, '_>) -> R) -> R {
        let mut guards = lease.hold(self.shape.access.ids());
        let loaned: Loaned<'_> = guards.each_mut().map(|guard| guard.as_deref_mut().map(Lent::Exclusive));
        body(self.split_parts(world, loaned))
    }

    /// The parts of the shared `world`, with the types in `loaned` taken from there.
    fn split_parts<'a>(&'a mut self, world: &'a World, loaned: Loaned<'a>) -> Parts<'a, 'a> {
        let (entities, _, storage) = world.query_parts();
        Parts { entities, storage: Store::Split(storage, loaned), shape: &mut self.shape, scratch: &mut self.scratch }
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

    /// The matches on `world` and the loans in `loaned`, as an iterator. The tables must be up to date
    /// ([`QueryState::refresh`]).
    pub(crate) fn iter_loaned<'a>(&'a self, world: &'a World, loaned: Loaned<'a>) -> QueryIter<'a, Q> {
        QueryIter::new(self.batches_loaned(world, loaned, usize::MAX).0.collect())
    }

    /// One entity's match on `world` and the loans in `loaned` (`None` if it does not match); the handle must be
    /// alive.
    pub(crate) fn get_loaned<'a>(
        &'a mut self,
        world: &'a World,
        loaned: Loaned<'a>,
        entity: Entity,
    ) -> Option<Q::Item<'a>> {
        one::<Q, F>(self.split_parts(world, loaned), entity.index())
    }

    /// The matches on `world` and the loans in `loaned`, in batches of at most `size` (see
    /// [`QueryBorrow::iter_batched`](super::QueryBorrow::iter_batched)). The tables must be up to date.
    pub(crate) fn batches_loaned<'a>(&'a self, world: &'a World, loaned: Loaned<'a>, size: usize) -> Batches<'a, Q> {
        let (entities, _, storage) = world.query_parts();
        // Only a probing walk over an index-only layout copies handles: then this buffer grows.
        let mut scratch = Vec::new();
        let batches = batches_of::<Q, F>(entities, Store::Split(storage, loaned), &self.shape, &mut scratch, size);
        Batches(batches.into_iter())
    }

    /// Several distinct live entities' matches on `world` and the loans in `loaned` (see
    /// [`QueryBorrow::get_many`](super::QueryBorrow::get_many)).
    pub(crate) fn get_many_loaned<'a, const N: usize>(
        &'a mut self,
        world: &'a World,
        loaned: Loaned<'a>,
        entities: [Entity; N],
    ) -> Result<[Q::Item<'a>; N], QueryOneError> {
        distinct_and_alive(&entities, |entity| world.is_alive(entity))?;
        all_match(many::<Q, F, N>(self.split_parts(world, loaned), entities.map(Entity::index)), &entities)
    }

    /// The matches on a shared `world`, as an iterator (see [`QueryBorrow::iter`](super::QueryBorrow::iter)). The types are
    /// read where they are (a prepared query outside a system: nothing is on loan).
    pub fn iter<'a>(&'a mut self, world: &'a World) -> QueryIter<'a, Q>
    where
        Q: ReadOnlyQueryData,
    {
        self.refresh(world);
        self.iter_loaned(world, Default::default())
    }

    /// The matches on a mutable `world`, as an iterator that may write (see [`QueryBorrow::iter`](super::QueryBorrow::iter)).
    pub fn iter_mut<'a>(&'a mut self, world: &'a mut World) -> QueryIter<'a, Q> {
        QueryIter::new(batches::<Q, F>(self.exclusive_parts(world), usize::MAX))
    }

    /// The parts of a mutable `world`, its storage lent whole and exclusively: the types the query writes are
    /// marked written (they may receive a deferred handle) and the storage has a pool for every registered type.
    fn exclusive_parts<'a>(&'a mut self, world: &'a mut World) -> Parts<'a, 'a> {
        let QueryContext { entities, storage, components, written, .. } = world.query_context();
        for id in self.shape.access.writes() {
            written.insert(id);
        }
        storage.catch_up(components);
        let storage = Store::Whole(Lent::Exclusive(storage));
        Parts { entities, storage, shape: &mut self.shape, scratch: &mut self.scratch }
    }

    /// Calls `f` with each matching entity and its components (see [`QueryBorrow::for_each`](super::QueryBorrow::for_each)).
    pub fn for_each(&mut self, world: &World, lease: &Lease, f: impl for<'a> FnMut(Entity, Q::Item<'a>)) {
        self.parts(world, lease, |parts| run::<Q, F, _>(parts, &mut Each(f)))
    }

    /// Calls `f` with runs of matches as parallel slices (see [`QueryBorrow::for_each_run`](super::QueryBorrow::for_each_run)).
    pub fn for_each_run(&mut self, world: &World, lease: &Lease, f: impl for<'a> FnMut(&[Entity], Q::Slices<'a>)) {
        self.parts(world, lease, |parts| run::<Q, F, _>(parts, &mut Runs(f)))
    }

    /// Like [`QueryState::for_each`], recording into `commands` keyed by the visited entity (see
    /// [`QueryBorrow::for_each_with_commands`](super::QueryBorrow::for_each_with_commands)).
    pub fn for_each_with_commands(
        &mut self,
        world: &World,
        lease: &Lease,
        commands: &mut Commands<'_>,
        f: impl for<'a, 'c> FnMut(Entity, Q::Item<'a>, &mut Commands<'c>),
    ) {
        let commands = Commands::keyed(commands.queue());
        self.parts(world, lease, |parts| run::<Q, F, _>(parts, &mut WithCommands { f, commands }))
    }

    /// Calls `f` with each match, in pieces on the thread pool (see [`QueryBorrow::par_for_each`](super::QueryBorrow::par_for_each)).
    pub fn par_for_each(&mut self, world: &World, lease: &Lease, f: impl for<'a> Fn(Entity, Q::Item<'a>) + Sync) {
        let (pieces, mut slots) = (world.pieces(), Vec::new());
        self.parts(world, lease, |parts| par_run::<Q, F, _>(parts, pieces, &ParEach(f), &mut slots))
    }

    /// A value per piece, in piece order (see [`QueryBorrow::par_fold`](super::QueryBorrow::par_fold)).
    pub fn par_fold<A: Default + Send>(
        &mut self,
        world: &World,
        lease: &Lease,
        out: &mut Vec<A>,
        start: impl Fn(&mut A) + Sync,
        f: impl for<'a> Fn(&mut A, Entity, Q::Item<'a>) + Sync,
    ) {
        let (pieces, visit) = (world.pieces(), ParFold { start, f, _slot: PhantomData });
        self.parts(world, lease, |parts| par_run::<Q, F, _>(parts, pieces, &visit, out))
    }

    /// Like [`QueryState::par_for_each`], recording into `commands` keyed by the visited entity (see
    /// [`QueryBorrow::par_for_each_with_commands`](super::QueryBorrow::par_for_each_with_commands)).
    pub fn par_for_each_with_commands(
        &mut self,
        world: &World,
        lease: &Lease,
        commands: &mut Commands<'_>,
        f: impl for<'a, 'c> Fn(Entity, Q::Item<'a>, &mut Commands<'c>) + Sync,
    ) {
        let pieces = world.pieces();
        let into = commands.queue();
        let visit = ParCommands::new(f, into);
        let mut queues = std::mem::take(&mut self.pieces);
        with_pieces(into, &mut queues, |queues| {
            self.parts(world, lease, |parts| par_run::<Q, F, _>(parts, pieces, &visit, queues))
        });
        self.pieces = queues;
    }

    /// One entity's components on a shared `world`, if it matches (see [`QueryBorrow::get`](super::QueryBorrow::get)).
    pub fn get<'a>(&'a mut self, world: &'a World, entity: Entity) -> Result<Q::Item<'a>, QueryOneError>
    where
        Q: ReadOnlyQueryData,
    {
        if !world.is_alive(entity) {
            return Err(QueryOneError::NoSuchEntity(entity));
        }
        self.get_loaned(world, Default::default(), entity).ok_or(QueryOneError::Unsatisfied(entity))
    }

    /// One entity's components on a mutable `world`, if it matches (see [`QueryBorrow::get`](super::QueryBorrow::get)): a
    /// handle reserved by the command buffer applies the buffer first.
    pub fn get_mut<'a>(&'a mut self, world: &'a mut World, entity: Entity) -> Result<Q::Item<'a>, QueryOneError> {
        if !world.settle(entity) {
            return Err(QueryOneError::NoSuchEntity(entity));
        }
        one::<Q, F>(self.exclusive_parts(world), entity.index()).ok_or(QueryOneError::Unsatisfied(entity))
    }
}
