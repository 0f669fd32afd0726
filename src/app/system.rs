//! Systems: a plain function whose parameters say what it touches ([`Query`], [`Res`], [`ResMut`], [`Commands`],
//! [`Local`], [`Allocator`], optional resources, up to 8 of them), or an exclusive `fn(&mut World)` that runs alone.
//!
//! What a function system touches is worked out once, when it is added ([`SystemAccess`]); a system whose own
//! parameters conflict is refused then, naming both. A run has three steps, so that systems can run side by side
//! without `unsafe`:
//! 1. *prepare*, on the world borrowed exclusively: the component types its queries write are moved out of the
//!    world into the system's [`Lease`] (`World::lend`), the resources it writes are moved into its parameters'
//!    state;
//! 2. *run*, on the world shared (`&World`, possibly on another thread, beside other systems): queries read the
//!    world and write the lease, `Res` reads the world, `ResMut` writes its own moved-out value, `Commands` records
//!    into the system's own buffer;
//! 3. *finish*, exclusive again, in the schedule's order: everything moved out goes back, and the system's command
//!    buffer joins the world's (so commands apply in the order the serial schedule records them).
//!
//! ```
//! use swarm::app::{App, Commands, Local, OrderSystems, Query, Res, ResMut, Stage};
//! use swarm::ecs::{With, Without};
//! struct Pos(f32); struct Vel(f32); struct Frozen;
//! struct Gravity(f32);
//! #[derive(Default)] struct Moved(u32);
//! fn fall(gravity: Res<Gravity>, mut q: Query<&mut Vel, Without<Frozen>>) {
//!     q.for_each(|_, vel| vel.0 -= gravity.0);
//! }
//! fn step(mut q: Query<(&mut Pos, &Vel)>, mut moved: ResMut<Moved>, mut runs: Local<u32>) {
//!     *runs += 1;
//!     q.for_each(|_, (pos, vel)| { pos.0 += vel.0; moved.0 += 1; });
//! }
//! fn thaw(mut q: Query<(), With<Frozen>>, mut commands: Commands) {
//!     q.for_each_with_commands(&mut commands, |e, (), commands| commands.remove::<Frozen>(e));
//! }
//! let mut app = App::new();
//! app.insert_resource(Gravity(1.0)).insert_resource(Moved::default());
//! app.world.spawn((Pos(10.0), Vel(0.0))).unwrap();
//! app.world.spawn((Pos(10.0), Vel(0.0), Frozen)).unwrap();
//! app.add_systems(Stage::Update, (fall, step, thaw).chain());
//! app.update();
//! assert_eq!(app.world.resource::<Moved>().0, 2);
//! app.update(); // both fall now: the frozen one was thawed after the first frame
//! let mut positions: Vec<f32> = Vec::new();
//! app.world.query::<&Pos>().for_each(|_, p| positions.push(p.0));
//! positions.sort_by(f32::total_cmp);
//! assert_eq!(positions, [7.0, 9.0]);
//! ```

// The impls spell out `'w` and `'s` to read like the trait's signatures they implement.
#![allow(clippy::needless_lifetimes)]

use super::schedule::{query_param_name, resource_param_name, AccessError, Param, SystemAccess, Touch};
use crate::ecs::__private::Lent;
use crate::ecs::holders::MapValue;
use crate::ecs::smaller_tuples_too;
use crate::ecs::{
    Batches, CommandQueue, Commands, ComponentId, Entities, Entity, Filter, Lease, OnLoan, Prepared, QueryBorrow,
    QueryData, QueryIter, QueryOneError, QueryState, ReadOnlyQueryData, Resource, Tracker, World,
};
use crate::ecs::{Component, Held, HeldShared, Listed, Loaned};
use std::any::{type_name, Any};
use std::cell::OnceCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

/// What a system runs on: the shared world and the types it holds on loan.
#[derive(Clone, Copy)]
pub struct SystemContext<'w> {
    world: &'w World,
    lease: &'w Lease,
    /// The tick the system last ran with (0: never): its change filters compare against it.
    last_run: u64,
    /// This run's tick: its writes are stamped with it.
    this_run: u64,
}

/// A system could not be prepared: a resource it needs is missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    /// The parameter, e.g. `Res<Grid>`.
    pub param: String,
}

/// A parameter of a function system. Implemented for [`Query`], [`Res`], [`ResMut`], `Option<Res<R>>`,
/// `Option<ResMut<R>>`, [`Commands`], [`Local`], [`Allocator`] and tuples of them.
pub trait SystemParam: Sized {
    /// What the parameter keeps between runs (a query's shape, a moved-out resource, a command buffer).
    type State: Send + 'static;
    /// The parameter with its lifetimes: the world's (`'w`) and its state's (`'s`).
    type Item<'w, 's>: SystemParam<State = Self::State>;
    /// Records what the parameter touches in `access` (refused if it conflicts with the parameters before it)
    /// and makes its state, registering its types in `world`.
    fn init(world: &mut World, access: &mut SystemAccess) -> Result<Self::State, AccessError>;
    /// Before a run, on the exclusive world: the component types to move out for the run go to `lend`; written
    /// resources move into the state. A missing resource is refused.
    fn prepare(_state: &mut Self::State, _world: &mut World, _lend: &mut Vec<ComponentId>) -> Result<(), Missing> {
        Ok(())
    }
    /// The parameter for one run.
    fn fetch<'w, 's>(state: &'s mut Self::State, context: SystemContext<'w>) -> Self::Item<'w, 's>;
    /// After a run (or a refused prepare), on the exclusive world: what moved out goes back. Must do nothing for
    /// what `prepare` did not do.
    fn finish(_state: &mut Self::State, _world: &mut World) {}
    /// After `finish`, in the schedule's order of systems: recorded commands join the world's buffer.
    fn flush(_state: &mut Self::State, _world: &mut World) {}
    /// After the world's commands apply: `settle` turns the deferred handles the state keeps into the spawned
    /// entities' handles (a [`Local`] of a type registered as holding entities).
    fn settle_handles(_state: &mut Self::State, _settle: &mut dyn FnMut(&mut Entity)) {}
}

/// A query as a system parameter: the same terms and filters as [`World::query`], run with the same loops, on
/// the shared world and the system's loans. Its shape is worked out once, when the system is added.
///
/// Its matches come by closure (`for_each`, `for_each_run`, the parallel loops) or as an iterator: `iter` (through
/// `&self`, when every term only reads), `iter_mut`, and `for (e, item) in &query` / `&mut query`. An iterator or
/// an item from `get` keeps the types the system holds on loan that the query names until the query runs another
/// loop, is dropped, or the run ends; a second query of the same system that writes one of them (two queries kept
/// apart by `With`/`Without` may) then panics, naming the type: drop the first, or use `for_each` for it.
///
/// ```
/// use swarm::app::{App, Query, Stage};
/// struct Pos(f32); struct Vel(f32);
/// fn movement(mut movers: Query<(&mut Pos, &Vel)>) {
///     for (_, (pos, vel)) in &mut movers {
///         pos.0 += vel.0;
///     }
/// }
/// fn report(positions: Query<&Pos>, mut out: swarm::app::ResMut<Vec<f32>>) {
///     out.extend(positions.iter().map(|(_, p)| p.0));
/// }
/// let mut app = App::new();
/// app.world.insert_resource(Vec::<f32>::new());
/// app.world.spawn((Pos(0.0), Vel(2.0))).unwrap();
/// app.add_systems(Stage::Update, movement).add_systems(Stage::Last, report);
/// app.update();
/// assert_eq!(app.world.resource::<Vec<f32>>(), &[2.0]);
/// ```
pub struct Query<'w, 's, Q: QueryData, F: Filter = ()> {
    context: SystemContext<'w>,
    state: &'s mut QueryState<Q, F>,
    /// The loans kept for the last iterator or item handed out through `&mut self`.
    held: Held<'w>,
    /// The loans kept, shared, for the iterators handed out through `&self`.
    held_shared: OnceCell<HeldShared<'w>>,
}

impl<'w, Q: QueryData, F: Filter> Query<'w, '_, Q, F> {
    /// Lets go of the loans kept for iterators and items (none is alive: the caller has `&mut self`).
    fn release(&mut self) {
        self.held = Default::default();
        self.held_shared = OnceCell::new();
    }

    /// Runs `body` on the query over the system's loans, recording into `commands` if it is a buffer: the loans
    /// are held for the loop only.
    fn looped<C, R>(&mut self, commands: C, body: impl FnOnce(OnLoanQuery<'_, Q, F, C>) -> R) -> R {
        self.release();
        let loaned = hold_exclusive(&mut self.held, self.context, self.state.ids());
        let since = Some(self.state.since());
        let out = body(self.state.on_loan(self.context.world, loaned, commands, since));
        self.release();
        out
    }

    /// The query over the system's loans, held until the query's next use (for what it hands out).
    fn held(&mut self) -> OnLoanQuery<'_, Q, F, ()> {
        self.release();
        let loaned = hold_exclusive(&mut self.held, self.context, self.state.ids());
        let since = Some(self.state.since());
        self.state.on_loan(self.context.world, loaned, (), since)
    }

    /// Calls `f` with each matching entity and its components (as [`swarm::ecs::QueryBorrow::for_each`](crate::ecs::QueryBorrow::for_each)).
    pub fn for_each(&mut self, f: impl for<'a> FnMut(Entity, Q::Item<'a>)) {
        self.looped((), |query| query.for_each(f))
    }

    /// Calls `f` with runs of matches as parallel slices (as
    /// [`swarm::ecs::QueryBorrow::for_each_run`](crate::ecs::QueryBorrow::for_each_run)).
    pub fn for_each_run(&mut self, f: impl for<'a> FnMut(&[Entity], Q::Slices<'a>)) {
        self.looped((), |query| query.for_each_run(f))
    }

    /// Like [`Query::for_each`], recording into the system's `commands`, keyed by the visited entity (as
    /// [`swarm::ecs::QueryBorrow::for_each_with_commands`](crate::ecs::QueryBorrow::for_each_with_commands)): the commands
    /// apply sorted by that entity, whatever order the rows came in.
    pub fn for_each_with_commands(
        &mut self,
        commands: &mut Commands<'_>,
        f: impl for<'a, 'c> FnMut(Entity, Q::Item<'a>, &mut Commands<'c>),
    ) {
        self.looped(commands.queue(), |query| query.for_each_with_commands(f))
    }

    /// Calls `f` with each entry of `list` whose entity matches, and its components, in the list's order (as
    /// [`swarm::ecs::QueryBorrow::for_each_of`](crate::ecs::QueryBorrow::for_each_of)): one setup for the whole
    /// list, where a loop of [`Query::get`] sets the query up per entity.
    pub fn for_each_of<T: Listed>(&mut self, list: &[T], f: impl for<'a> FnMut(&T, Q::Item<'a>)) {
        self.looped((), |query| query.for_each_of(list, f))
    }

    /// [`Query::for_each_of`] on the app's thread pool (as
    /// [`swarm::ecs::QueryBorrow::par_for_each_of`](crate::ecs::QueryBorrow::par_for_each_of)): the same world for
    /// every thread count when `f` writes only the item it is handed.
    pub fn par_for_each_of<T: Listed + Sync>(&mut self, list: &[T], f: impl for<'a> Fn(&T, Q::Item<'a>) + Sync) {
        self.looped((), |query| query.par_for_each_of(list, f))
    }

    /// Calls `f` with each matching entity and its components, in pieces on the app's thread pool (as
    /// [`swarm::ecs::QueryBorrow::par_for_each`](crate::ecs::QueryBorrow::par_for_each)): the same world for every thread
    /// count.
    pub fn par_for_each(&mut self, f: impl for<'a> Fn(Entity, Q::Item<'a>) + Sync) {
        self.looped((), |query| query.par_for_each(f))
    }

    /// Like [`Query::par_for_each`], with a value per piece, in piece order (as
    /// [`swarm::ecs::QueryBorrow::par_fold`](crate::ecs::QueryBorrow::par_fold)).
    pub fn par_fold<A: Default + Send>(
        &mut self,
        out: &mut Vec<A>,
        start: impl Fn(&mut A) + Sync,
        f: impl for<'a> Fn(&mut A, Entity, Q::Item<'a>) + Sync,
    ) {
        self.looped((), |query| query.par_fold(out, start, f))
    }

    /// [`Query::par_fold`] by runs (as
    /// [`swarm::ecs::QueryBorrow::par_fold_runs`](crate::ecs::QueryBorrow::par_fold_runs)).
    pub fn par_fold_runs<A: Default + Send>(
        &mut self,
        out: &mut Vec<A>,
        start: impl Fn(&mut A) + Sync,
        f: impl for<'a> Fn(&mut A, &[Entity], Q::Slices<'a>) + Sync,
    ) {
        self.looped((), |query| query.par_fold_runs(out, start, f))
    }

    /// Like [`Query::par_for_each`], recording into the system's `commands`, keyed by the visited entity (as
    /// [`swarm::ecs::QueryBorrow::par_for_each_with_commands`](crate::ecs::QueryBorrow::par_for_each_with_commands)): the
    /// buffer is the one the serial [`Query::for_each_with_commands`] records, for every thread count.
    pub fn par_for_each_with_commands(
        &mut self,
        commands: &mut Commands<'_>,
        f: impl for<'a, 'c> Fn(Entity, Q::Item<'a>, &mut Commands<'c>) + Sync,
    ) {
        self.looped(commands.queue(), |query| query.par_for_each_with_commands(f))
    }

    /// Whether this query's parallel loops may run on several threads now (as
    /// [`swarm::ecs::World::parallel`](crate::ecs::World::parallel)): for work of the system's own, split the same
    /// way (with [`swarm::ecs::join`](crate::ecs::join)).
    pub fn parallel(&self) -> bool {
        self.context.world.parallel()
    }

    /// The matches as an iterator (as [`swarm::ecs::QueryBorrow::iter`](crate::ecs::QueryBorrow::iter)), through `&self`:
    /// every term only reads.
    pub fn iter(&self) -> QueryIter<'_, Q>
    where
        Q: ReadOnlyQueryData,
    {
        // Loans kept by `iter_mut` or `get` serve as they are; else the query keeps its own, shared.
        let loaned: Loaned<'_> = if self.held.iter().any(Option::is_some) {
            self.held.each_ref().map(|loan| loan.as_deref().map(Lent::Shared))
        } else {
            let held = self.held_shared.get_or_init(|| self.context.lease.hold_shared(self.state.ids()));
            held.each_ref().map(|loan| loan.as_deref().map(Lent::Shared))
        };
        self.state.iter_loaned(self.context.world, loaned)
    }

    /// The matches as an iterator whose items may write (as [`swarm::ecs::QueryBorrow::iter`](crate::ecs::QueryBorrow::iter)).
    pub fn iter_mut(&mut self) -> QueryIter<'_, Q> {
        self.held().iter()
    }

    /// One entity's components, if it matches (as [`swarm::ecs::QueryBorrow::get`](crate::ecs::QueryBorrow::get)): the item,
    /// borrowed until the query's next use.
    pub fn get(&mut self, entity: Entity) -> Result<Q::Item<'_>, QueryOneError> {
        self.held().get(entity)
    }

    /// Several distinct entities' components at once (as
    /// [`swarm::ecs::QueryBorrow::get_many`](crate::ecs::QueryBorrow::get_many)), borrowed until the query's next
    /// use.
    pub fn get_many<const N: usize>(&mut self, entities: [Entity; N]) -> Result<[Q::Item<'_>; N], QueryOneError> {
        self.held().get_many(entities)
    }

    /// The matches in batches of at most `batch_size` rows, to hand to threads of the system's own (as
    /// [`swarm::ecs::QueryBorrow::iter_batched`](crate::ecs::QueryBorrow::iter_batched)), borrowed until the
    /// query's next use.
    ///
    /// # Panics
    /// If `batch_size` is 0.
    pub fn iter_batched(&mut self, batch_size: usize) -> Batches<'_, Q> {
        self.held().iter_batched(batch_size)
    }

    /// Number of matching entities.
    pub fn count(&mut self) -> usize {
        self.looped((), |query| query.count())
    }
}

/// A system's query over its loans, as the [`swarm::ecs::QueryBorrow`](crate::ecs::QueryBorrow) whose loops it offers.
type OnLoanQuery<'a, Q, F, C> = QueryBorrow<Prepared<'a, Q, F, OnLoan<'a, C>>, Q, F>;

/// Takes the loans of the types `ids` names from the system's lease into `held` (released first by the caller),
/// lent exclusively for as long as `held` is borrowed.
fn hold_exclusive<'a, 'w>(held: &'a mut Held<'w>, context: SystemContext<'w>, ids: &[ComponentId]) -> Loaned<'a> {
    *held = context.lease.hold(ids);
    held.each_mut().map(|loan| loan.as_deref_mut().map(Lent::Exclusive))
}

impl<'a, Q: ReadOnlyQueryData, F: Filter> IntoIterator for &'a Query<'_, '_, Q, F> {
    type Item = (Entity, Q::Item<'a>);
    type IntoIter = QueryIter<'a, Q>;

    /// [`Query::iter`].
    fn into_iter(self) -> QueryIter<'a, Q> {
        self.iter()
    }
}

impl<'a, Q: QueryData, F: Filter> IntoIterator for &'a mut Query<'_, '_, Q, F> {
    type Item = (Entity, Q::Item<'a>);
    type IntoIter = QueryIter<'a, Q>;

    /// [`Query::iter_mut`].
    fn into_iter(self) -> QueryIter<'a, Q> {
        self.iter_mut()
    }
}

impl<Q: QueryData + 'static, F: Filter + 'static> SystemParam for Query<'_, '_, Q, F> {
    type State = QueryState<Q, F>;
    type Item<'w, 's> = Query<'w, 's, Q, F>;

    fn init(world: &mut World, access: &mut SystemAccess) -> Result<Self::State, AccessError> {
        access.add_query::<Q, F>(world)?;
        let system = access.system;
        QueryState::new(world).map_err(|error| AccessError::Refused {
            system,
            param: query_param_name::<Q, F>(),
            error,
        })
    }
    fn prepare(state: &mut Self::State, _: &mut World, lend: &mut Vec<ComponentId>) -> Result<(), Missing> {
        for id in state.access().writes.iter() {
            if !lend.contains(&id) {
                lend.push(id);
            }
        }
        Ok(())
    }
    /// The rows the run handed out as `&mut` of tracked types are stamped with the run's tick.
    fn finish(state: &mut Self::State, world: &mut World) {
        state.flush_stamps(world);
    }
    fn fetch<'w, 's>(state: &'s mut Self::State, context: SystemContext<'w>) -> Self::Item<'w, 's> {
        // The run's iterators read the shape through `&self`.
        state.refresh(context.world);
        state.start_run(context.last_run, context.this_run);
        Query { context, state, held: Default::default(), held_shared: OnceCell::new() }
    }
}

/// Change detection of `T` as a system parameter: since the system last ran (its first run sees every value as
/// added). `T` must be tracked ([`World::track`]). The system cannot run beside one that writes `T`.
///
/// ```
/// use swarm::app::{App, Query, ResMut, Stage};
/// use swarm::ecs::{Changed, Tracker};
/// struct Health(i32);
/// fn hurt(mut all: Query<&mut Health>) {
///     all.for_each(|_, health| if health.0 > 5 { health.0 -= 1 });
/// }
/// fn watch(hurt: Query<&Health, Changed<Health>>, health: Tracker<Health>, mut seen: ResMut<Vec<usize>>) {
///     seen.push(hurt.iter().count() + health.removed().count());
/// }
/// let mut app = App::new();
/// app.world.track::<Health>();
/// app.world.insert_resource(Vec::<usize>::new());
/// for h in [3, 9] {
///     app.world.spawn((Health(h),)).unwrap();
/// }
/// app.add_systems(Stage::Update, hurt).add_systems(Stage::Last, watch);
/// app.update(); // both added
/// app.update(); // `hurt` hands both out as `&mut`
/// assert_eq!(app.world.resource::<Vec<usize>>(), &[2, 2]);
/// ```
impl<T: Component> SystemParam for Tracker<'_, T> {
    type State = ComponentId;
    type Item<'w, 's> = Tracker<'w, T>;

    fn init(world: &mut World, access: &mut SystemAccess) -> Result<ComponentId, AccessError> {
        access.add_tracker::<T>(world)
    }
    fn fetch<'w, 's>(state: &'s mut ComponentId, context: SystemContext<'w>) -> Tracker<'w, T> {
        Tracker::new(context.world, Some(*state), context.last_run)
    }
}

/// A resource, read. The system cannot be prepared without it (use `Option<Res<R>>` for one that may be absent).
pub struct Res<'w, R: Resource> {
    value: &'w R,
}

impl<R: Resource> Deref for Res<'_, R> {
    type Target = R;
    fn deref(&self) -> &R {
        self.value
    }
}

impl<R: Resource> SystemParam for Res<'_, R> {
    type State = ();
    type Item<'w, 's> = Res<'w, R>;

    fn init(_: &mut World, access: &mut SystemAccess) -> Result<(), AccessError> {
        access.add_resource::<R>(false)
    }
    fn prepare(_: &mut (), world: &mut World, _: &mut Vec<ComponentId>) -> Result<(), Missing> {
        match world.contains_resource::<R>() {
            true => Ok(()),
            false => Err(Missing { param: resource_param_name::<R>(false) }),
        }
    }
    fn fetch<'w, 's>(_: &'s mut (), context: SystemContext<'w>) -> Res<'w, R> {
        Res { value: context.world.resource::<R>() }
    }
}

impl<R: Resource> SystemParam for Option<Res<'_, R>> {
    type State = ();
    type Item<'w, 's> = Option<Res<'w, R>>;

    fn init(_: &mut World, access: &mut SystemAccess) -> Result<(), AccessError> {
        access.add_resource::<R>(false)
    }
    fn fetch<'w, 's>(_: &'s mut (), context: SystemContext<'w>) -> Option<Res<'w, R>> {
        context.world.get_resource::<R>().map(|value| Res { value })
    }
}

/// A resource, written. While the system runs, the value is moved out of the world into the parameter, so
/// systems beside it cannot see it (the schedule never runs two systems that touch it at once).
pub struct ResMut<'s, R: Resource> {
    value: &'s mut R,
}

impl<R: Resource> Deref for ResMut<'_, R> {
    type Target = R;
    fn deref(&self) -> &R {
        self.value
    }
}

impl<R: Resource> DerefMut for ResMut<'_, R> {
    fn deref_mut(&mut self) -> &mut R {
        self.value
    }
}

/// A written resource moved out of the world for a run.
pub struct Taken<R> {
    value: Option<Box<dyn Any + Send + Sync>>,
    _marker: PhantomData<fn() -> R>,
}

impl<R: Resource> Taken<R> {
    fn take(&mut self, world: &mut World) -> bool {
        assert!(self.value.is_none(), "a written resource is put back before it is taken again");
        self.value = world.resources_mut().take_boxed::<R>();
        self.value.is_some()
    }
    fn put_back(&mut self, world: &mut World) {
        if let Some(value) = self.value.take() {
            world.resources_mut().put_boxed::<R>(value);
        }
    }
    fn get(&mut self) -> Option<&mut R> {
        Some(self.value.as_mut()?.downcast_mut::<R>().expect("keyed by type"))
    }
}

impl<R: Resource> SystemParam for ResMut<'_, R> {
    type State = Taken<R>;
    type Item<'w, 's> = ResMut<'s, R>;

    fn init(_: &mut World, access: &mut SystemAccess) -> Result<Taken<R>, AccessError> {
        access.add_resource::<R>(true)?;
        Ok(Taken { value: None, _marker: PhantomData })
    }
    fn prepare(state: &mut Taken<R>, world: &mut World, _: &mut Vec<ComponentId>) -> Result<(), Missing> {
        match state.take(world) {
            true => Ok(()),
            false => Err(Missing { param: resource_param_name::<R>(true) }),
        }
    }
    fn fetch<'w, 's>(state: &'s mut Taken<R>, _: SystemContext<'w>) -> ResMut<'s, R> {
        ResMut { value: state.get().expect("taken in prepare") }
    }
    fn finish(state: &mut Taken<R>, world: &mut World) {
        state.put_back(world)
    }
}

impl<R: Resource> SystemParam for Option<ResMut<'_, R>> {
    type State = Taken<R>;
    type Item<'w, 's> = Option<ResMut<'s, R>>;

    fn init(_: &mut World, access: &mut SystemAccess) -> Result<Taken<R>, AccessError> {
        access.add_resource::<R>(true)?;
        Ok(Taken { value: None, _marker: PhantomData })
    }
    fn prepare(state: &mut Taken<R>, world: &mut World, _: &mut Vec<ComponentId>) -> Result<(), Missing> {
        state.take(world);
        Ok(())
    }
    fn fetch<'w, 's>(state: &'s mut Taken<R>, _: SystemContext<'w>) -> Option<ResMut<'s, R>> {
        state.get().map(|value| ResMut { value })
    }
    fn finish(state: &mut Taken<R>, world: &mut World) {
        state.put_back(world)
    }
}

/// State a system keeps between its runs (bevy's `Local`): starts as `T::default()`, one per system.
pub struct Local<'s, T: Default + Send + 'static>(&'s mut T);

impl<T: Default + Send + 'static> Deref for Local<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0
    }
}

impl<T: Default + Send + 'static> DerefMut for Local<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0
    }
}

/// The world's allocator, read-only, as a system parameter: how many entities are alive and how many the world
/// holds ([`Entities::len`], [`Entities::capacity`]), so a system that spawns through its [`Commands`] can tell
/// how many will fit (they are refused at apply when the world is full). It touches no component or resource,
/// so it conflicts with nothing (the count changes only when commands apply, between systems).
pub struct Allocator<'w>(&'w Entities);

impl Deref for Allocator<'_> {
    type Target = Entities;
    fn deref(&self) -> &Entities {
        self.0
    }
}

impl SystemParam for Allocator<'_> {
    type State = ();
    type Item<'w, 's> = Allocator<'w>;

    fn init(_: &mut World, _: &mut SystemAccess) -> Result<(), AccessError> {
        Ok(())
    }
    fn fetch<'w, 's>(_: &'s mut (), context: SystemContext<'w>) -> Allocator<'w> {
        Allocator(context.world.entities())
    }
}

/// A [`Local`]'s value, and how to map the handles it holds if its type is registered as holding entities
/// ([`World::register_entity_holder`], before the system is added).
pub struct LocalState<T> {
    value: T,
    holds: Option<MapValue>,
}

impl<T: Default + Send + 'static> SystemParam for Local<'_, T> {
    type State = LocalState<T>;
    type Item<'w, 's> = Local<'s, T>;

    fn init(world: &mut World, _: &mut SystemAccess) -> Result<LocalState<T>, AccessError> {
        Ok(LocalState { value: T::default(), holds: world.holder_of::<T>() })
    }
    fn fetch<'w, 's>(state: &'s mut LocalState<T>, _: SystemContext<'w>) -> Local<'s, T> {
        Local(&mut state.value)
    }
    fn settle_handles(state: &mut LocalState<T>, settle: &mut dyn FnMut(&mut Entity)) {
        if let Some(map) = state.holds {
            map(&mut state.value, settle);
        }
    }
}

/// Structural changes from a system: recorded into the system's own buffer (ops in recorded order, spawns
/// deferred: a spawn gets its handle when applied), which joins the world's buffer after the system runs, in the
/// schedule's order; the app applies it at the end of the frame. Inside
/// [`Query::for_each_with_commands`] the commands are keyed by the visited entity instead.
impl SystemParam for Commands<'_> {
    type State = CommandQueue;
    type Item<'w, 's> = Commands<'s>;

    fn init(world: &mut World, access: &mut SystemAccess) -> Result<CommandQueue, AccessError> {
        access.add(Param { name: "Commands".into(), touch: Touch::Commands })?;
        Ok(CommandQueue::tagged(world.command_tag()))
    }
    fn fetch<'w, 's>(state: &'s mut CommandQueue, _: SystemContext<'w>) -> Commands<'s> {
        Commands::deferred(state)
    }
    fn flush(state: &mut CommandQueue, world: &mut World) {
        world.command_queue().append(state);
    }
}

macro_rules! impl_param_tuple {
    ($($P:ident)*) => {
        #[allow(non_snake_case, unused_variables, clippy::unused_unit)]
        impl<$($P: SystemParam),*> SystemParam for ($($P,)*) {
            type State = ($($P::State,)*);
            type Item<'w, 's> = ($($P::Item<'w, 's>,)*);

            fn init(world: &mut World, access: &mut SystemAccess) -> Result<Self::State, AccessError> {
                Ok(($($P::init(world, access)?,)*))
            }
            fn prepare(state: &mut Self::State, world: &mut World, lend: &mut Vec<ComponentId>) -> Result<(), Missing> {
                let ($($P,)*) = state;
                $($P::prepare($P, world, lend)?;)*
                Ok(())
            }
            fn fetch<'w, 's>(state: &'s mut Self::State, context: SystemContext<'w>) -> Self::Item<'w, 's> {
                let ($($P,)*) = state;
                ($($P::fetch($P, context),)*)
            }
            fn finish(state: &mut Self::State, world: &mut World) {
                let ($($P,)*) = state;
                $($P::finish($P, world);)*
            }
            fn flush(state: &mut Self::State, world: &mut World) {
                let ($($P,)*) = state;
                $($P::flush($P, world);)*
            }
            fn settle_handles(state: &mut Self::State, settle: &mut dyn FnMut(&mut Entity)) {
                let ($($P,)*) = state;
                $($P::settle_handles($P, settle);)*
            }
        }
    };
}
smaller_tuples_too!(impl_param_tuple A B C D E G H I);

/// A system: a function system (parameters), or an exclusive `fn(&mut World)`. Its name (for spans, reports and
/// messages) is the function's name.
pub trait System: Send + 'static {
    /// The name in spans, reports and messages.
    fn name(&self) -> &'static str;
    /// Works out what the system touches in `world` (registering its types) and makes its parameters' state.
    /// Called when the system is added.
    fn init(&mut self, world: &mut World) -> Result<SystemAccess, AccessError>;
    /// Runs an exclusive system.
    fn run_exclusive(&mut self, world: &mut World);
    /// Step 1 of a function system's run (see the module): moves out what it writes.
    fn prepare(&mut self, world: &mut World) -> Result<(), Missing>;
    /// Step 2: runs on the shared world.
    fn run_shared(&mut self, world: &World);
    /// Step 3: puts back what moved out. Safe after a refused or panicking step.
    fn finish(&mut self, world: &mut World);
    /// Step 4, in the schedule's order of systems (a batch may hold systems out of that order): the recorded
    /// commands join the world's buffer.
    fn flush(&mut self, world: &mut World);
    /// After the world's commands apply: the deferred handles the system keeps (its `Local`s of types registered
    /// as holding entities) become the spawned entities' handles through `settle`.
    fn settle_handles(&mut self, _settle: &mut dyn FnMut(&mut Entity)) {}
}

/// An exclusive system: a function of the whole world, run alone.
pub struct ExclusiveSystem<F>(F);

impl<F: FnMut(&mut World) + Send + 'static> System for ExclusiveSystem<F> {
    fn name(&self) -> &'static str {
        short_fn_name::<F>()
    }
    fn init(&mut self, _: &mut World) -> Result<SystemAccess, AccessError> {
        Ok(SystemAccess::exclusive(self.name()))
    }
    fn run_exclusive(&mut self, world: &mut World) {
        (self.0)(world)
    }
    fn prepare(&mut self, _: &mut World) -> Result<(), Missing> {
        unreachable!("an exclusive system runs alone")
    }
    fn run_shared(&mut self, _: &World) {
        unreachable!("an exclusive system runs alone")
    }
    fn finish(&mut self, _: &mut World) {}
    fn flush(&mut self, _: &mut World) {}
}

/// The last path segment of a function's type name: its name.
pub(crate) fn short_fn_name<F>() -> &'static str {
    let full = type_name::<F>();
    full.rsplit("::").next().unwrap_or(full)
}

/// A function whose arguments are system parameters. Implemented for functions of up to 8 parameters.
pub trait SystemParamFunction<Marker>: Send + 'static {
    /// The parameters, as a tuple.
    type Param: SystemParam;
    /// Calls the function.
    fn call(&mut self, param: <Self::Param as SystemParam>::Item<'_, '_>);
}

macro_rules! impl_system_function {
    ($($P:ident)*) => {
        #[allow(non_snake_case, unused_variables)]
        impl<Func, $($P: SystemParam),*> SystemParamFunction<fn($($P,)*)> for Func
        where
            Func: Send + 'static,
            for<'a> &'a mut Func: FnMut($($P),*) + FnMut($($P::Item<'_, '_>),*),
        {
            type Param = ($($P,)*);
            fn call(&mut self, param: <($($P,)*) as SystemParam>::Item<'_, '_>) {
                // A named function with plain parameters helps the closure's types along (as bevy does).
                #[allow(clippy::too_many_arguments)]
                fn call_inner<$($P),*>(mut f: impl FnMut($($P),*), $($P: $P),*) {
                    f($($P),*)
                }
                let ($($P,)*) = param;
                call_inner(self, $($P),*)
            }
        }
    };
}
smaller_tuples_too!(impl_system_function A B C D E G H I);

/// A function system: the function, its parameters' state, and its lease for a run.
pub struct FunctionSystem<Marker, F: SystemParamFunction<Marker>> {
    f: F,
    state: Option<<F::Param as SystemParam>::State>,
    lease: Lease,
    lend: Vec<ComponentId>,
    /// The change ticks of the last run (0: never ran) and of this one, and where the world keeps the last run.
    last_run: u64,
    this_run: u64,
    slot: Option<usize>,
    _marker: PhantomData<fn() -> Marker>,
}

impl<Marker: 'static, F: SystemParamFunction<Marker>> System for FunctionSystem<Marker, F> {
    fn name(&self) -> &'static str {
        short_fn_name::<F>()
    }
    fn init(&mut self, world: &mut World) -> Result<SystemAccess, AccessError> {
        let mut access = SystemAccess::new(self.name());
        self.state = Some(F::Param::init(world, &mut access)?);
        Ok(access)
    }
    fn run_exclusive(&mut self, world: &mut World) {
        if let Err(missing) = self.prepare(world) {
            self.finish(world);
            panic!("system `{}`: {}", self.name(), missing);
        }
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_shared(world)));
        self.finish(world);
        self.flush(world);
        if let Err(panic) = run {
            std::panic::resume_unwind(panic);
        }
    }
    fn prepare(&mut self, world: &mut World) -> Result<(), Missing> {
        let state = self.state.as_mut().expect("a system is initialised when added");
        self.lend.clear();
        F::Param::prepare(state, world, &mut self.lend)?;
        world.lend(&self.lend, &mut self.lease);
        let slot = *self.slot.get_or_insert_with(|| world.change_slot());
        (self.last_run, self.this_run) = world.start_run(slot);
        Ok(())
    }
    fn run_shared(&mut self, world: &World) {
        let state = self.state.as_mut().expect("a system is initialised when added");
        let context = SystemContext { world, lease: &self.lease, last_run: self.last_run, this_run: self.this_run };
        self.f.call(F::Param::fetch(state, context));
    }
    fn finish(&mut self, world: &mut World) {
        world.give_back(&mut self.lease);
        if let Some(state) = self.state.as_mut() {
            F::Param::finish(state, world);
        }
        // The next run's change filters see what changed after this one's start, but not its own writes.
        if let Some(slot) = self.slot.filter(|_| self.this_run != 0) {
            world.end_run(slot, self.this_run);
        }
    }
    fn flush(&mut self, world: &mut World) {
        if let Some(state) = self.state.as_mut() {
            F::Param::flush(state, world);
        }
    }
    fn settle_handles(&mut self, settle: &mut dyn FnMut(&mut Entity)) {
        if let Some(state) = self.state.as_mut() {
            F::Param::settle_handles(state, settle);
        }
    }
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "parameter `{}`: the resource was never inserted (insert it first, or take an Option)", self.param)
    }
}

impl std::error::Error for Missing {}

/// Something [`App::add_systems`](super::App::add_systems) takes as a system: a function of system parameters, or
/// an exclusive `fn(&mut World)`. (`Marker` tells the two kinds apart; callers never name it.)
pub trait IntoSystem<Marker> {
    /// The system.
    fn into_system(self) -> Box<dyn System>;
}

/// [`IntoSystem`]'s marker for exclusive systems.
pub struct IsExclusive;

/// [`IntoSystem`]'s marker for function systems.
pub struct IsFunction<M>(PhantomData<M>);

impl<F: FnMut(&mut World) + Send + 'static> IntoSystem<IsExclusive> for F {
    fn into_system(self) -> Box<dyn System> {
        Box::new(ExclusiveSystem(self))
    }
}

impl<M: 'static, F: SystemParamFunction<M>> IntoSystem<IsFunction<M>> for F {
    fn into_system(self) -> Box<dyn System> {
        Box::new(FunctionSystem {
            f: self,
            state: None,
            lease: Lease::default(),
            lend: Vec::new(),
            last_run: 0,
            this_run: 0,
            slot: None,
            _marker: PhantomData,
        })
    }
}
