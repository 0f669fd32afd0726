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
use super::error::{QueryError, QueryOneError, MAX_QUERY_TYPES};
use super::filter::Filter;
use super::par::{par_run, with_pieces, ParCommands, ParEach, ParFold};
use super::run::{one, run, Each, Loaned, Parts, QueryContext, Runs, Store, WithCommands};
use crate::ecs::commands::{CommandQueue, Commands};
use crate::ecs::component::ComponentId;
use crate::ecs::entity::Entity;
use crate::ecs::storage::{ErasedPool, Loan};
use crate::ecs::world::World;
use std::cell::{RefCell, RefMut};
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
        let (_, cell) = self.loans.iter().find(|(held, _)| *held == id)?;
        match cell.try_borrow_mut() {
            Ok(loan) => Some(loan),
            Err(_) => panic!(
                "a system ran a query inside the loop of another of its queries, and both name component #{id}, \
                 which the system writes: run one query after the other"
            ),
        }
    }

    pub(crate) fn push(&mut self, loan: Loan) {
        self.loans.push((loan.id(), RefCell::new(loan)));
    }

    /// Empties the lease: its loans, and the spare stand-ins to put them back with.
    pub(crate) fn drain(&mut self) -> (impl Iterator<Item = Loan> + '_, &mut Vec<Box<dyn ErasedPool>>) {
        (self.loans.drain(..).map(|(_, cell)| cell.into_inner()), &mut self.spares)
    }
}

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
        let ids = self.shape.access.ids();
        let mut guards: [Option<RefMut<'_, Loan>>; MAX_QUERY_TYPES] = Default::default();
        if !lease.is_empty() {
            for (guard, &id) in guards.iter_mut().zip(ids) {
                *guard = lease.borrow(id);
            }
        }
        let loaned: Loaned<'_> = guards.each_mut().map(|guard| guard.as_deref_mut());
        let (entities, _, storage) = world.query_parts();
        let parts = Parts {
            entities,
            storage: Store::Split(storage, loaned),
            shape: &mut self.shape,
            scratch: &mut self.scratch,
        };
        body(parts)
    }

    /// Calls `f` with each matching entity and its components (see [`Query::for_each`](super::Query::for_each)).
    pub fn for_each(&mut self, world: &World, lease: &Lease, f: impl for<'a> FnMut(Entity, Q::Item<'a>)) {
        self.parts(world, lease, |parts| run::<Q, F, _>(parts, &mut Each(f)))
    }

    /// Calls `f` with runs of matches as parallel slices (see [`Query::for_each_run`](super::Query::for_each_run)).
    pub fn for_each_run(&mut self, world: &World, lease: &Lease, f: impl for<'a> FnMut(&[Entity], Q::Slices<'a>)) {
        self.parts(world, lease, |parts| run::<Q, F, _>(parts, &mut Runs(f)))
    }

    /// Like [`QueryState::for_each`], recording into `commands` keyed by the visited entity (see
    /// [`Query::for_each_with_commands`](super::Query::for_each_with_commands)).
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

    /// Calls `f` with each match, in pieces on the thread pool (see [`Query::par_for_each`](super::Query::par_for_each)).
    pub fn par_for_each(&mut self, world: &World, lease: &Lease, f: impl for<'a> Fn(Entity, Q::Item<'a>) + Sync) {
        let (pieces, mut slots) = (world.pieces(), Vec::new());
        self.parts(world, lease, |parts| par_run::<Q, F, _>(parts, pieces, &ParEach(f), &mut slots))
    }

    /// A value per piece, in piece order (see [`Query::par_fold`](super::Query::par_fold)).
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
    /// [`Query::par_for_each_with_commands`](super::Query::par_for_each_with_commands)).
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

    /// Calls `f` with one entity's components if it matches, and returns what `f` returns.
    pub fn get<R>(
        &mut self,
        world: &World,
        lease: &Lease,
        entity: Entity,
        f: impl for<'a> FnOnce(Q::Item<'a>) -> R,
    ) -> Result<R, QueryOneError> {
        if !world.is_alive(entity) {
            return Err(QueryOneError::NoSuchEntity(entity));
        }
        self.parts(world, lease, |parts| one::<Q, F>(parts, entity.index()).map(f))
            .ok_or(QueryOneError::Unsatisfied(entity))
    }
}
