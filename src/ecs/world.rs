//! The world: entities, their components in the chosen storage backend, resources and the command buffer.

use super::bundle::Bundle;
use super::change::Changes;
use super::commands::{CommandQueue, CommandTotals};
use super::component::BundleIds;
use super::component::{ComponentId, ComponentInfo};
use super::entity::{ComponentError, Entities, Entity, NoSuchEntity, ReservedHandles, SpawnAtError, WorldFull};
use super::events::Events;
use super::hierarchy::{refuse_kept, Tree};
use super::holders::Holders;
use super::pipeline::{HookTable, Mode};
use super::query::{
    Filter, Lease, QueryAccess, QueryBorrow, QueryCache, QueryContext, QueryData, QueryError, QueryOneError, QueryRef,
    ReadOnlyQueryData,
};
use super::resources::Resources;
use super::storage::sparse_set::SparseSet;
use super::storage::values::ComponentValues;
use super::storage::{Backend, HeldRemovals, Registry, Storage};
use super::view::ViewMut;
use crate::ecs::Component;

/// Bytes held by one component type's storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentBytes {
    /// The type name.
    pub name: &'static str,
    /// Bytes held (capacity, not length).
    pub bytes: usize,
}

/// A collection of entities and their components.
///
/// Similar to `HashMap<Entity, Vec<Box<dyn Any>>>`, but components of one type are stored together in the chosen
/// [`Backend`], so systems walk them without chasing a pointer per entity, and the backend can be changed while
/// the world runs ([`World::set_backend`]).
///
/// ```
/// use swarm::ecs::{World, Backend};
/// #[derive(Debug, PartialEq)] struct Pos(i32);
/// let mut world = World::with_capacity(1_000);
/// let e = world.spawn((Pos(1), "a tag-like &str")).unwrap();
/// world.set_backend(Backend::Archetype);
/// assert_eq!(world.get::<Pos>(e), Some(&Pos(1)));
/// world.despawn(e).unwrap();
/// assert!(world.get::<Pos>(e).is_none()); // stale handles answer "no such entity"
/// ```
pub struct World {
    pub(super) entities: Entities,
    pub(super) components: Registry,
    pub(super) storage: Storage,
    pub(super) resources: Resources,
    pub(super) commands: CommandQueue,
    pub(super) totals: CommandTotals,
    /// Reused index buffer (backend switches).
    scratch: Vec<u32>,
    /// Reused handle buffer (a query's driver handles, a batch despawn's live targets).
    pub(super) handle_scratch: Vec<Entity>,
    /// Despawns' removals held back while a command buffer applies ([`World::hold_removals`]).
    pub(super) held_removals: HeldRemovals,
    /// What queries worked out per query shape (ids, access check, matching tables), for this registry.
    queries: QueryCache,
    /// Names the registry: a new one (a loaded snapshot's) gets a new number, so state worked out for the old ids
    /// (a system's queries) knows to start again.
    registry_stamp: u64,
    /// The last tag handed to a system's command buffer ([`World::command_tag`]).
    pub(super) command_tags: u8,
    /// How parallel query loops cut their work ([`World::set_piece_rows`], [`World::set_threads`]).
    pub(super) piece_rows: usize,
    pub(super) threads: usize,
    /// The pieces' command buffers of a parallel loop through this world, reused.
    piece_queues: Vec<CommandQueue>,
    /// Which hooks watch each change ([`crate::ecs::pipeline`]).
    pub(super) hooks: HookTable,
    /// Lifecycle handlers and the rounds of their commands ([`crate::ecs::events`]).
    pub(super) events: Events,
    /// The hierarchy's ids and buffers ([`crate::ecs::hierarchy`]).
    pub(super) tree: Tree,
    /// A hooked despawn's order (subtrees expanded), reused.
    pub(super) despawn_order: Vec<Entity>,
    /// The types whose values hold entity handles ([`crate::ecs::holders`]).
    pub(super) holders: Holders,
    /// Change detection's ticks and tracks ([`crate::ecs::change`]).
    pub(super) changes: Changes,
    /// A reused list of the rows a query stamps.
    pub(super) change_rows: Vec<u32>,
    /// The types checkpoints hold ([`crate::ecs::rollback`]).
    pub(super) rollback: super::rollback::RollbackTypes,
}

/// The default piece of a parallel query loop: this many matches ([`World::set_piece_rows`]).
pub const PIECE_ROWS: usize = 2048;

/// The next registry's number.
static NEXT_REGISTRY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The default capacity of [`World::new`]: about a million entities.
pub const DEFAULT_CAPACITY: u32 = 1 << 20;

impl Default for World {
    fn default() -> Self {
        Self::new()
    }
}

impl World {
    /// An empty world on the sparse-set backend, holding up to [`DEFAULT_CAPACITY`] entities.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// An empty world holding up to `capacity` live entities.
    pub fn with_capacity(capacity: u32) -> Self {
        Self::from_entities(Entities::new(capacity))
    }

    /// An empty world with a given allocator (e.g. [`Entities::with_max_generation`] to exercise exhaustion).
    pub fn from_entities(entities: Entities) -> Self {
        Self {
            entities,
            components: Registry::default(),
            storage: Storage::new(Backend::default()),
            resources: Resources::default(),
            commands: CommandQueue::default(),
            totals: CommandTotals::default(),
            scratch: Vec::new(),
            handle_scratch: Vec::new(),
            held_removals: HeldRemovals::default(),
            queries: QueryCache::default(),
            registry_stamp: NEXT_REGISTRY.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            command_tags: 0,
            piece_rows: PIECE_ROWS,
            threads: 0,
            piece_queues: Vec::new(),
            hooks: HookTable::default(),
            events: Events::default(),
            tree: Tree::default(),
            despawn_order: Vec::new(),
            holders: Holders::new(),
            changes: Changes::default(),
            change_rows: Vec::new(),
            rollback: Default::default(),
        }
    }

    /// The number of the world's component registry: it changes when the registry is replaced (a snapshot loaded
    /// into the world), and then component ids worked out before may name other types.
    pub(crate) fn registry_stamp(&self) -> u64 {
        self.registry_stamp
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.storage.backend()
    }

    /// The allocator: live entities, capacity, retired indices.
    pub fn entities(&self) -> &Entities {
        &self.entities
    }

    /// Number of live entities.
    pub fn len(&self) -> u32 {
        self.entities.len()
    }

    /// Whether no entity is alive.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// The maximum number of live entities (reserved ones included).
    pub fn capacity(&self) -> u32 {
        self.entities.capacity()
    }

    /// Whether `entity` is alive.
    #[inline]
    pub fn is_alive(&self, entity: Entity) -> bool {
        self.entities.is_alive(entity)
    }

    #[inline]
    pub(crate) fn register<T: Component>(&mut self) -> ComponentId {
        let (id, _) = self.components.register::<T>();
        self.storage.init_component(id, &self.components);
        id
    }

    /// Reserves a handle for an entity with no components yet, to be filled in later: the same as
    /// `world.commands().spawn(())`. The entity comes alive when the command buffer is applied.
    ///
    /// The rule for reserved handles (from here or from [`Commands::spawn`](super::Commands::spawn)): an operation through `&mut World`
    /// handed a reserved handle ([`World::insert`], [`World::remove`], [`World::despawn`], [`World::get_mut`],
    /// the bundle and query lookups) first applies the command buffer, as [`World::apply_commands`] would, so
    /// the commands recorded before it land first and the handle is alive when the operation runs. A despawned
    /// reservation therefore stays dead. Reads through `&World` ([`World::get`], [`World::is_alive`],
    /// [`World::query_one`]) cannot apply anything: to them the handle is not alive yet
    /// ([`Entities::is_reserved`] tells). A [`ViewMut`] refuses it with [`ComponentError::Reserved`].
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Pos(f32);
    /// let mut world = World::new();
    /// let e = world.reserve_entity().unwrap();
    /// assert!(!world.is_alive(e) && world.entities().is_reserved(e));
    /// world.insert(e, Pos(1.0)).unwrap(); // applies the buffer: `e` is alive, then gets `Pos`
    /// assert_eq!(world.get::<Pos>(e).map(|p| p.0), Some(1.0));
    ///
    /// let r = world.reserve_entity().unwrap();
    /// world.despawn(r).unwrap(); // spawned, then despawned: it never comes back
    /// world.apply_commands();
    /// assert!(!world.is_alive(r));
    /// ```
    pub fn reserve_entity(&mut self) -> Result<Entity, WorldFull> {
        self.commands().spawn(())
    }

    /// Reserves up to `count` handles through a shared borrow (hecs's `reserve_entities`), for code that holds
    /// `&World` (a system reading the world, several threads at once) and must name entities before they exist.
    /// Each comes alive with no components when the command buffer is applied ([`World::apply_commands`], or
    /// any `&mut World` call handed one, by the rule of [`World::reserve_entity`]), before the commands in the
    /// buffer; [`World::discard_commands`] releases them. Until then they are reserved
    /// ([`Entities::is_reserved`]) and count against the capacity.
    ///
    /// A full world hands out fewer: the iterator yields as many handles as fitted, and its `len()` says how
    /// many before it is walked (0 when the world is full).
    ///
    /// ```
    /// use swarm::ecs::World;
    /// let mut world = World::with_capacity(3);
    /// world.spawn(()).unwrap();
    /// let shared: &World = &world;
    /// let handles: Vec<_> = shared.reserve_entities(5).collect();
    /// assert_eq!(handles.len(), 2); // room for two more
    /// assert!(world.entities().is_reserved(handles[0]) && !world.is_alive(handles[0]));
    /// world.insert(handles[1], 7u8).unwrap(); // applies the buffer: both are alive
    /// assert!(world.is_alive(handles[0]) && world.get::<u8>(handles[1]) == Some(&7));
    /// ```
    pub fn reserve_entities(&self, count: u32) -> ReservedHandles<'_> {
        self.entities.reserve_many(count)
    }

    /// Spawns an entity with the components of `bundle` (a tuple).
    ///
    /// Fails with [`WorldFull`] if the world holds its capacity; nothing in the world changes then.
    ///
    /// # Panics
    /// If the tuple names a component type twice.
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Result<Entity, WorldFull> {
        self.spawn_bundle(bundle)
    }

    /// Spawns an entity with the components of `bundle` under exactly the handle `entity`: the handle a server,
    /// a file or another world gave it (hecs's `spawn_at`). Returns the handle.
    ///
    /// The index must not be live, retired, or past `capacity + retired` (the most indices a world of that
    /// capacity holds), and the generation must be neither behind the allocator's for that index (handles of
    /// older generations stay dead) nor past its maximum. A reserved index follows the rule of
    /// [`World::reserve_entity`]: the command buffer is applied first, after which the index is live (refused,
    /// naming the live handle) or, if the buffer despawned it, free. The index leaves the free list wherever it
    /// is on it, the others keeping their order; an index past [`Entities::index_bound`] grows the allocator and
    /// puts the indices skipped on the free list, lowest first out. Refused with the reason (and nothing changed,
    /// `bundle` dropped) otherwise; [`SpawnAtError::WorldFull`] if the world holds its capacity.
    ///
    /// ```
    /// use swarm::ecs::{SpawnAtError, World};
    /// #[derive(Debug, PartialEq)] struct Pos(i32);
    /// let mut server = World::new();
    /// let e = server.spawn((Pos(1),)).unwrap();
    /// let mut client = World::new();
    /// assert_eq!(client.spawn_at(e, (Pos(1),)), Ok(e));
    /// assert_eq!(client.get::<Pos>(e), Some(&Pos(1)));
    /// assert_eq!(client.spawn_at(e, (Pos(2),)), Err(SpawnAtError::Live(e)));
    /// ```
    ///
    /// # Panics
    /// If the tuple names a component type twice (before anything changes).
    pub fn spawn_at<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<Entity, SpawnAtError> {
        let ids = B::ids(&mut self.components);
        self.guard_put(&ids);
        if self.entities.index_is_reserved(entity.index()) && self.has_buffered_commands() {
            self.apply_commands();
        }
        self.entities.alloc_at(entity)?;
        Ok(self.spawn_as(entity, &ids, bundle))
    }

    /// Spawns one entity per bundle, resolving component ids and tables once, and returns how many it spawned.
    /// Stops at the first bundle that does not fit (the world is full) with `WorldFull`; the ones before it stay.
    /// [`World::spawn_batch_into`] also hands back the handles.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Pos(f32);
    /// let mut world = World::with_capacity(10);
    /// assert_eq!(world.spawn_batch((0..4).map(|i| (Pos(i as f32),))), Ok(4));
    /// assert!(world.spawn_batch((0..10).map(|i| (Pos(i as f32),))).is_err());
    /// assert_eq!(world.len(), 10); // six more fitted
    /// ```
    pub fn spawn_batch<B: Bundle>(&mut self, bundles: impl IntoIterator<Item = B>) -> Result<usize, WorldFull> {
        if self.backend() == Backend::SparseSet && !self.hooks.spawn.any() {
            return self.spawn_sparse_batch(bundles.into_iter(), None);
        }
        let mut handles = std::mem::take(&mut self.handle_scratch);
        handles.clear();
        let result = self.spawn_batch_into(bundles, &mut handles);
        let spawned = handles.len();
        self.handle_scratch = handles;
        result.map(|()| spawned)
    }

    /// Like [`World::spawn_batch`], and `out` receives the new handles in order (those spawned before a
    /// `WorldFull` too).
    pub fn spawn_batch_into<B: Bundle>(
        &mut self,
        bundles: impl IntoIterator<Item = B>,
        out: &mut Vec<Entity>,
    ) -> Result<(), WorldFull> {
        self.spawn_many(bundles, out)
    }

    /// Makes room for `additional` more entities with the components of bundle type `B`, so that spawning them
    /// one by one does not grow the storage on the way: the allocator's slots, and each component's pool (the
    /// per-component backends) or the bundle's table (archetype). The b-tree has no capacity to reserve, and a
    /// backend switch rebuilds the storage at the size it needs. Batch spawns reserve by themselves, from the
    /// iterator's size hint.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Pos(f32);
    /// struct Vel(f32);
    /// let mut world = World::new();
    /// world.reserve::<(Pos, Vel)>(10_000);
    /// for i in 0..10_000 {
    ///     world.spawn((Pos(i as f32), Vel(1.0))).unwrap();
    /// }
    /// ```
    ///
    /// # Panics
    /// If the tuple names a component type twice.
    pub fn reserve<B: Bundle>(&mut self, additional: usize) {
        let ids = B::ids(&mut self.components);
        self.entities.reserve_indices(additional);
        self.storage.reserve(&self.components, &ids, additional);
    }

    /// Reserves a handle for a spawn the command buffer applies now.
    pub(crate) fn reserve_for_apply(&mut self) -> Result<Entity, WorldFull> {
        self.entities.reserve()
    }

    /// The component ids of bundle type `B`, registering its types.
    pub(crate) fn bundle_ids<B: Bundle>(&mut self) -> BundleIds {
        B::ids(&mut self.components)
    }

    /// Despawns `entity`, dropping its components. A stale handle is an error and changes nothing. A handle
    /// reserved by the command buffer applies the buffer first, so a despawned reservation stays dead (see
    /// [`World::reserve_entity`]).
    pub fn despawn(&mut self, entity: Entity) -> Result<(), NoSuchEntity> {
        self.live(entity)?;
        self.despawn_one(entity);
        Ok(())
    }

    /// Despawns every live entity of `targets`; returns how many (dead or stale handles, and repeats, are passed
    /// over; a reserved handle applies the command buffer first, as in [`World::despawn`]). The same as
    /// [`World::despawn`] on each in turn (pools see the removals in the same order), but with one dynamic call
    /// per pool for the whole batch instead of one per entity and pool.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// let mut world = World::new();
    /// let a = world.spawn((1u8,)).unwrap();
    /// let b = world.spawn((2u8, 'b')).unwrap();
    /// assert_eq!(world.despawn_batch(&[a, b, a]), 2);
    /// assert!(world.is_empty());
    /// ```
    pub fn despawn_batch(&mut self, targets: &[Entity]) -> usize {
        // A reserved target is settled where it comes, as `despawn` one by one would (see `World::reserve_entity`).
        self.settle_batch(targets, |world, run| {
            let despawned = world.despawn_run(run);
            world.finish();
            despawned
        })
    }

    /// Sets component `T` of `entity`; returns the previous value.
    ///
    /// # Panics
    /// For the hierarchy's components ([`Parent`](super::Parent), [`Children`](super::Children)): use
    /// [`World::add_child`] and its kin, which keep both sides of a link in step.
    pub fn insert<T: Component>(&mut self, entity: Entity, value: T) -> Result<Option<T>, NoSuchEntity> {
        refuse_kept::<T>("inserted");
        self.live(entity)?;
        let (id, _) = self.components.register::<T>();
        Ok(self.insert_value(id, entity, value, Mode::Hooked))
    }

    /// Removes component `T` from `entity` and returns it.
    pub fn remove<T: Component>(&mut self, entity: Entity) -> Result<T, ComponentError> {
        let id = self.components.id::<T>();
        self.remove_value::<T>(id, entity, Mode::Hooked)
    }

    /// Sets component `T` on many entities: the type lookup, the pool's downcast and the backend dispatch happen
    /// once for the batch instead of once per entity. Dead or stale handles are skipped (their values dropped);
    /// returns how many were skipped. A reserved handle applies the command buffer first, as [`World::insert`]
    /// would one by one: the items before it, then the buffer, then the rest (see [`World::reserve_entity`]).
    ///
    /// ```
    /// use swarm::ecs::World;
    /// let mut world = World::new();
    /// let a = world.spawn(()).unwrap();
    /// let r = world.reserve_entity().unwrap();
    /// assert_eq!(world.insert_many([(a, 1u8), (r, 2u8)]), 0); // `r` comes alive, then gets its value
    /// assert_eq!(world.get::<u8>(r), Some(&2));
    /// ```
    pub fn insert_many<T: Component>(&mut self, items: impl IntoIterator<Item = (Entity, T)>) -> usize {
        refuse_kept::<T>("inserted");
        let id = self.register::<T>();
        if self.hooks.insert(id).any() {
            // One at a time, each event after its value is in; the handlers' commands apply once, at the end.
            return self.as_one_operation(|world| {
                items.into_iter().map(|(entity, value)| world.insert(entity, value)).filter(Result::is_err).count()
            });
        }
        let mut items = items.into_iter().peekable();
        let mut skipped = 0;
        // A reserved target is settled where it comes: the run before it goes in, then the buffer is applied.
        while self.has_buffered_commands() {
            let entities = &self.entities;
            let run = std::iter::from_fn(|| items.next_if(|(entity, _)| !entities.is_reserved(*entity)));
            skipped += self.storage.insert_many(id, &self.components, &self.entities, run);
            if items.peek().is_none() {
                return skipped;
            }
            self.apply_commands();
        }
        skipped + self.storage.insert_many(id, &self.components, &self.entities, items)
    }

    /// Removes component `T` from many entities, dropping the values, with one dispatch for the batch. Returns how
    /// many had it (dead handles and entities without `T` are passed over). A reserved handle applies the command
    /// buffer first, as [`World::remove`] would one by one: the targets before it, then the buffer, then the rest.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// let mut world = World::new();
    /// let a = world.spawn((1u8,)).unwrap();
    /// let r = world.commands().spawn((2u8,)).unwrap();
    /// assert_eq!(world.remove_many::<u8>(&[a, r]), 2); // `r` is spawned with its `u8`, then loses it
    /// assert!(world.is_alive(r) && !world.has::<u8>(r));
    /// ```
    pub fn remove_many<T: Component>(&mut self, targets: &[Entity]) -> usize {
        self.settle_batch(targets, |world, run| {
            let Some(id) = world.components.id::<T>() else { return 0 };
            if world.hooks.remove(id).any() {
                // One at a time, each hook before its value goes; the handlers' commands apply once, at the end.
                return world.as_one_operation(|w| run.iter().filter(|&&entity| w.remove::<T>(entity).is_ok()).count());
            }
            world.storage.remove_many::<T>(id, &world.components, &world.entities, run)
        })
    }

    /// Component `T` of `entity`; `None` if the handle is stale or the component absent.
    #[inline]
    pub fn get<T: Component>(&self, entity: Entity) -> Option<&T> {
        if !self.entities.is_alive(entity) {
            return None;
        }
        let id = self.components.id::<T>()?;
        self.storage.get::<T>(id, entity.index())
    }

    /// Component `T` of `entity`, mutably.
    ///
    /// # Panics
    /// For the hierarchy's components ([`Parent`](super::Parent), [`Children`](super::Children)), which only its
    /// own operations write (read them with [`World::get`]).
    #[inline]
    pub fn get_mut<T: Component>(&mut self, entity: Entity) -> Option<&mut T> {
        refuse_kept::<T>("written through `&mut`");
        if !self.settle(entity) {
            return None;
        }
        let id = self.components.id::<T>()?;
        self.note_write(id, entity.index());
        self.store::<T>(id)?.into_mut(entity.index())
    }

    /// A view of component `T`: per-entity get / insert / remove with the type's storage found once, for systems
    /// that touch many chosen entities (registers `T` if new). See [`ViewMut`].
    ///
    /// For a type that lifecycle handlers watch, the view's inserts and removals go through the world's
    /// operations, so the handlers run (and each call finds the storage again).
    ///
    /// # Panics
    /// For the hierarchy's components ([`Parent`](super::Parent), [`Children`](super::Children)), which only its
    /// own operations write.
    pub fn view_mut<T: Component>(&mut self) -> ViewMut<'_, T> {
        refuse_kept::<T>("written through a view");
        let id = self.register::<T>();
        if self.hooks.watches_type(id) {
            return ViewMut::hooked(self);
        }
        let (entities, store) = self.entities_and_store::<T>(id);
        ViewMut::direct(entities, store.expect("register made the pool"))
    }

    /// Where component `id`'s values live in the current layout; `None` if the type was registered (by a refused
    /// query or spawn) but never given a pool, which means no entity has it.
    #[inline]
    fn store<T: Component>(&mut self, id: ComponentId) -> Option<ComponentValues<'_, T>> {
        self.entities_and_store(id).1
    }

    #[inline]
    fn entities_and_store<T: Component>(&mut self, id: ComponentId) -> (&Entities, Option<ComponentValues<'_, T>>) {
        self.wrote(id);
        (&self.entities, self.storage.values(id, &self.components))
    }

    /// How many live entities have `T`, without visiting them: the length of `T`'s pool, or the row counts of the
    /// tables that hold `T`. Every backend keeps that number anyway, so this costs nothing per entity, unlike
    /// counting with a query (a walk of every row on the b-tree, hash map and direct-array backends).
    ///
    /// ```
    /// use swarm::ecs::{Backend, World};
    /// struct Red;
    /// let mut world = World::new();
    /// world.spawn((Red,)).unwrap();
    /// world.spawn((Red, 1u8)).unwrap();
    /// world.spawn((2u8,)).unwrap();
    /// for backend in Backend::ALL {
    ///     world.set_backend(backend);
    ///     assert_eq!(world.count_of::<Red>(), 2);
    ///     assert_eq!(world.count_of::<u32>(), 0);
    /// }
    /// ```
    pub fn count_of<T: Component>(&self) -> usize {
        self.components.id::<T>().map_or(0, |id| self.storage.count_of(id))
    }

    /// Whether `entity` is alive and has `T`.
    pub fn has<T: Component>(&self, entity: Entity) -> bool {
        self.get::<T>(entity).is_some()
    }

    /// Inserts every component of `bundle` into `entity` (replacing those it has), like [`World::insert`] on each
    /// in turn. hecs spells it `insert`, bevy `EntityWorldMut::insert`; here `insert` takes one component of any
    /// type (a tuple is a component type too), so the bundle form has its own name.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// #[derive(Debug, PartialEq)] struct Pos(f32);
    /// #[derive(Debug, PartialEq)] struct Vel(f32);
    /// let mut world = World::new();
    /// let e = world.spawn(()).unwrap();
    /// world.insert_bundle(e, (Pos(1.0), Vel(2.0))).unwrap();
    /// assert_eq!(world.remove_bundle::<(Pos, Vel)>(e), Ok((Pos(1.0), Vel(2.0))));
    /// assert!(world.remove_bundle::<(Pos,)>(e).is_err()); // nothing left to take
    /// ```
    ///
    /// # Panics
    /// If the tuple names a component type twice (before anything is inserted).
    pub fn insert_bundle<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<(), NoSuchEntity> {
        B::assert_distinct();
        self.live(entity)?;
        self.insert_bundle_values(entity, bundle);
        Ok(())
    }

    /// Removes every component of bundle type `B` from `entity` and returns them, all or nothing: if the entity
    /// lacks one, the error names it and nothing is removed (as hecs's `remove`).
    ///
    /// # Panics
    /// If the tuple names a component type twice (before anything is removed).
    pub fn remove_bundle<B: Bundle>(&mut self, entity: Entity) -> Result<B, ComponentError> {
        B::assert_distinct();
        if !self.settle(entity) {
            return Err(ComponentError::NoSuchEntity(entity));
        }
        self.remove_bundle_values::<B>(entity)
    }

    /// One entity's components through a mutable world, any terms, checked for aliasing like a query:
    /// `world.query_one_mut::<(&mut Pos, &Vel)>(e)` (hecs's name). The same as `world.query::<Q>().get(e)`,
    /// which also takes filters; see [`QueryBorrow::get`].
    pub fn query_one_mut<Q: QueryData>(&mut self, entity: Entity) -> Result<Q::Item<'_>, QueryOneError> {
        self.query::<Q>().get(entity)
    }

    /// One entity's components through a shared world, read-only terms: `world.query_one::<(&Pos, &Vel)>(e)`.
    /// The same as `world.query_ref::<Q>().get(e)`; see [`QueryBorrow::get`].
    pub fn query_one<Q: ReadOnlyQueryData>(&self, entity: Entity) -> Result<Q::Item<'_>, QueryOneError> {
        self.query_ref::<Q>().get(entity)
    }

    /// Several distinct entities' components at once, mutably; refused if one is named twice. The same as
    /// `world.query::<Q>().get_many(entities)`; see [`QueryBorrow::get_many`].
    pub fn query_many_mut<Q: QueryData, const N: usize>(
        &mut self,
        entities: [Entity; N],
    ) -> Result<[Q::Item<'_>; N], QueryOneError> {
        self.query::<Q>().get_many(entities)
    }

    /// Component `T` of several distinct entities at once, mutably; refused with [`QueryOneError::Aliased`] if one
    /// is named twice (bevy's and hashbrown's `get_many_mut`).
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Health(i32);
    /// let mut world = World::new();
    /// let a = world.spawn((Health(10),)).unwrap();
    /// let b = world.spawn((Health(3),)).unwrap();
    /// let [ha, hb] = world.get_many_mut::<Health, 2>([a, b]).unwrap();
    /// std::mem::swap(&mut ha.0, &mut hb.0);
    /// assert_eq!(world.get::<Health>(a).unwrap().0, 3);
    /// assert!(world.get_many_mut::<Health, 2>([a, a]).is_err());
    /// ```
    pub fn get_many_mut<T: Component, const N: usize>(
        &mut self,
        entities: [Entity; N],
    ) -> Result<[&mut T; N], QueryOneError> {
        Ok(self.query_many_mut::<(&mut T,), N>(entities)?.map(|(value,)| value))
    }

    /// A query over tuples of `&T` / `&mut T`; add filters with [`QueryBorrow::with`] / [`QueryBorrow::without`].
    pub fn query<Q: QueryData>(&mut self) -> QueryBorrow<&mut World, Q, ()> {
        QueryBorrow::new(self)
    }

    /// A query with a filter given as a type: `With<T>`, `Without<T>`, or pairs of them.
    pub fn query_filtered<Q: QueryData, F: Filter>(&mut self) -> QueryBorrow<&mut World, Q, F> {
        QueryBorrow::new(self)
    }

    /// The id the world gave type `T`, if it has met it (ids name types in a [`QueryAccess`] and a
    /// [`ComponentSet`](super::ComponentSet)).
    pub fn component_id<T: Component>(&self) -> Option<ComponentId> {
        self.components.id::<T>()
    }

    /// The name and size of the type with id `id`, if the world gave that id.
    pub fn component_info(&self, id: ComponentId) -> Option<&ComponentInfo> {
        self.components.infos().get(id as usize)
    }

    /// What query `Q` filtered by `F` reads and writes (registering its types), or why it is refused: what a
    /// schedule compares to run two queries at once. Two queries that can match the same entity conflict when
    /// one writes a type the other names; `With`/`Without` filters can make them disjoint.
    ///
    /// ```
    /// use swarm::ecs::{With, Without, World};
    /// struct Pos(f32); struct Vel(f32); struct Frozen;
    /// let mut world = World::new();
    /// let movement = world.query_access::<(&mut Pos, &Vel), Without<Frozen>>().unwrap();
    /// let look = world.query_access::<&Pos, ()>().unwrap();
    /// let frozen = world.query_access::<&mut Pos, With<Frozen>>().unwrap();
    /// assert_eq!(movement.conflict(&look), world.component_id::<Pos>());
    /// assert!(movement.is_disjoint(&frozen) && movement.conflict(&frozen).is_none());
    /// ```
    pub fn query_access<Q: QueryData, F: Filter>(&mut self) -> Result<QueryAccess, QueryError> {
        QueryAccess::of_query::<Q, F>(&mut self.components)
    }

    /// A read-only query through a shared borrow: every term `&T` or `Option<&T>` (see [`QueryRef`]).
    pub fn query_ref<Q: ReadOnlyQueryData>(&self) -> QueryRef<'_, Q, ()> {
        QueryBorrow::new(self)
    }

    pub(crate) fn query_parts(&self) -> (&Entities, &Registry, &Storage) {
        (&self.entities, &self.components, &self.storage)
    }

    /// Moves the storage of each component type of `ids` (registered, no repeats) out of the world into `lease`,
    /// for a system to write while the rest of the world is shared. The world must get them back
    /// ([`World::give_back`]) before anything else changes it: meanwhile its storage holds empty stand-ins.
    pub(crate) fn lend(&mut self, ids: &[ComponentId], lease: &mut Lease) {
        assert!(lease.is_empty(), "a lease is given back before it is lent again");
        ids.iter().for_each(|&id| self.wrote(id));
        let mut spares = std::mem::take(&mut lease.spares);
        self.storage.lend(&self.components, ids, &mut spares, |loan| lease.push(loan));
        lease.spares = spares;
    }

    /// Puts back everything `lease` holds (lent by [`World::lend`]), emptying it.
    pub(crate) fn give_back(&mut self, lease: &mut Lease) {
        let (loans, spares) = lease.drain();
        self.storage.give_back(loans, spares);
    }

    pub(crate) fn query_context(&mut self) -> QueryContext<'_> {
        QueryContext {
            entities: &self.entities,
            storage: &mut self.storage,
            scratch: &mut self.handle_scratch,
            commands: &mut self.commands,
            components: &mut self.components,
            queries: &mut self.queries,
            pieces: &mut self.piece_queues,
            written: &mut self.holders.written,
            changes: &mut self.changes,
            change_rows: &mut self.change_rows,
        }
    }

    /// The packed sparse-set pool of `T`, when the backend is [`Backend::SparseSet`] (for sorting, inspection).
    pub fn sparse_set<T: Component>(&self) -> Option<&SparseSet<T>> {
        self.storage.sparse_set(self.components.id::<T>()?)
    }

    /// The packed sparse-set pool of `T`, mutably: for its values and for sorting (see
    /// [`SparseSet`](super::storage::sparse_set::SparseSet)). Inserting or removing through it bypasses the world's
    /// checks (liveness, the other pools) and is the caller's responsibility. The world keeps values only under live
    /// handles and relies on it: a value held under exactly the handle given to [`World::remove`] (or a view's
    /// `remove`) is taken without asking the allocator whether the handle is live.
    ///
    /// # Panics
    /// For the hierarchy's components, as [`World::get_mut`].
    pub fn sparse_set_mut<T: Component>(&mut self) -> Option<&mut SparseSet<T>> {
        refuse_kept::<T>("written through its pool");
        let id = self.components.id::<T>()?;
        self.wrote(id);
        self.storage.sparse_set_mut(id)
    }

    /// Moves every component to `backend`'s layout. Every live handle stays valid with the same index and
    /// generation and the same values; stale handles stay dead; free list, capacity and retired indices are kept
    /// (they live in the allocator, which does not change).
    pub fn set_backend(&mut self, backend: Backend) {
        if backend == self.backend() {
            return;
        }
        self.storage.convert(backend, &self.entities, &self.components, &mut self.scratch);
    }

    /// Bytes held by component storage (capacity, not length), per component type, in registry order.
    pub fn component_bytes(&self, out: &mut Vec<ComponentBytes>) {
        out.clear();
        for (id, info) in self.components.infos().iter().enumerate() {
            out.push(ComponentBytes { name: info.name, bytes: self.storage.component_bytes(id as ComponentId) });
        }
    }

    /// Bytes held by the backend's bookkeeping beyond component values (archetype tables and records, the pool
    /// table of per-component backends). The allocator is counted apart: see [`Entities::bytes`].
    pub fn overhead_bytes(&self) -> usize {
        self.storage.overhead_bytes()
    }

    /// Total bytes of the current backend's storage: components plus bookkeeping. Allocates nothing.
    pub fn storage_bytes(&self) -> usize {
        self.storage.bytes(self.components.len())
    }

    /// Takes `other`'s entities, components, storage and command totals, and moves its resources in over this
    /// world's (resources `other` lacks stay). Recorded commands are dropped (their handles named the old world).
    pub(crate) fn replace_contents(&mut self, other: World) {
        // The cache goes with the registry it was worked out for.
        let World { entities, components, storage, resources, totals, queries, registry_stamp, tree, changes, .. } =
            other;
        // The types tracked here stay tracked (by type: the new registry numbers them its own way).
        let tracking = self.tracking();
        let old_commands = std::mem::take(&mut self.commands);
        let old_storage = std::mem::replace(&mut self.storage, storage);
        self.entities = entities;
        self.components = components;
        self.queries = queries;
        self.registry_stamp = registry_stamp;
        self.tree.ids = tree.ids;
        self.totals = totals;
        self.resources.absorb(resources);
        // The handlers stay with this world; the types they watch have ids in the new registry, and the hook table
        // is rebuilt for it before anything may panic.
        self.rekey_events();
        // The systems keep their slots; the loaded state's last runs go with them.
        let next_slot = self.changes.next_slot;
        self.changes = changes;
        self.changes.next_slot = next_slot;
        self.keep_tracking(tracking);
        // A deferred handle in a loaded value names a spawn of no buffer of this world: it names nothing. (Every
        // value is new here.)
        self.holders.wrote_all();
        self.settle_held_handles(&|_| None);
        // Last, when the world is whole: commands the handlers recorded named the old world's entities, and a
        // value's drop may panic (the first panic goes on once everything is dropped).
        let discarded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.discard_events()));
        drop(old_storage);
        drop(old_commands);
        if let Err(panic) = discarded {
            std::panic::resume_unwind(panic);
        }
    }

    /// Despawns every entity (generations bump as usual, so old handles stay dead); keeps resources and backend.
    ///
    /// Values go first and handles last. If a value's `drop` panics, clearing goes on (every pool is emptied, the
    /// buffer discarded, every handle freed) and then the first panic goes on: the world is empty either way, and
    /// no index's next owner can meet an old value.
    pub fn clear(&mut self) {
        let discarded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.commands.discard(&mut self.entities);
            self.discard_events();
        }));
        let cleared = self.storage.clear();
        self.entities.clear();
        // Tracked types stay tracked, with no value anywhere (a clear fires no change and lists no removal).
        self.changes.forget_values();
        // The first panic goes on; a later one is dropped.
        if let Err(panic) = discarded.and(cleared) {
            std::panic::resume_unwind(panic);
        }
    }

    /// Panics with a message naming the broken invariant (allocator, pools, tables all agree). For tests.
    #[doc(hidden)]
    pub fn assert_invariants(&self) {
        assert!(!self.held_removals.is_on() && self.held_removals.is_empty(), "removals held outside an apply");
        self.entities.assert_invariants();
        self.storage.assert_invariants(&self.entities, &self.components);
        if let Err(why) = self.check_tree() {
            panic!("hierarchy: {why}");
        }
    }
}
