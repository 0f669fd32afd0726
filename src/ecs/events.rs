//! Lifecycle events: handlers the world calls when an entity is spawned or despawned, or a component type is
//! inserted into or removed from a live entity.
//!
//! # The rule
//!
//! A handler sees the world read-only and records follow-up changes into a [`Commands`] of its own; it never
//! changes the world while it runs. It is called:
//! - **spawn**: right after the entity is alive with its components;
//! - **despawn**: right before the entity's components drop (the handler reads them); a despawn of a parent
//!   despawns its subtree first, children before their parent and in child order, one event each
//!   ([`World::add_child`]);
//! - **insert** of `T`: right after the value is in (a new value or one that replaced another);
//! - **remove** of `T`: right before the value leaves (the handler reads it).
//!
//! A spawn fires its spawn event only, a despawn its despawn event only: insert and remove are changes to a live
//! entity. A bundle fires one event per component, in the bundle's order ([`World::insert_built`]: in the order
//! the world registered the types). Several handlers of one event run in the order they were registered.
//! [`World::clear`], a loaded snapshot and the hierarchy's own components ([`crate::ecs::hierarchy`]) fire
//! nothing; nor does a change made through a pool directly ([`World::sparse_set_mut`]).
//!
//! **When.** A direct world operation ([`World::spawn`], [`World::insert`], ...) fires its events as it goes and
//! then applies the handlers' commands before it returns (a batch, such as [`World::insert_many`], once at its
//! end; where a reserved handle in a batch makes the command buffer apply, [`World::despawn_batch`] and
//! [`World::remove_many`] first apply what their handlers recorded so far, as one-by-one calls would, while
//! `insert_many` keeps it for its end). [`World::apply_commands`] fires them as each command applies, in the buffer's order (the keyed order of
//! query loops, so the same on every backend, at every thread count and whatever order the storage yields entities
//! in; a stretch of consecutive spawns and despawns applies, and fires, its despawns first), and applies the handlers' commands after the
//! buffer, as the next *round*, in the order they were recorded; their own events' commands make the round
//! after, and so on, up to [`World::set_event_rounds`] rounds (default [`EVENT_ROUNDS`]). Past that the commands
//! left are dropped and [`World::try_apply_commands`] returns [`TooManyRounds`] ([`World::apply_commands`] and
//! the direct operations panic with it): handlers that keep answering each other's events are a bug to see,
//! not a loop to wait out.
//!
//! # Parallel handlers
//!
//! An insert handler registered with [`World::on_insert_parallel`] keeps no state of its own (`Fn`). In an apply,
//! while every insert handler of a type is such a handler, a *run* of consecutive insert commands of that type
//! (one component each, not bundles) applies whole first; then the handlers fire for each insert of the run, in
//! its order, each call seeing the world with the whole run in. Their calls may run at once, in pieces on the
//! thread pool ([`World::parallel`]); each piece records into a buffer of its own and the pieces join in the run's
//! order, so the next round holds the same commands, and the calls the same deferred handles, on every thread
//! count (a run of more than 64 inserts is cut into pieces whatever the threads). An entity inserted twice in a
//! run gets two calls, both seeing its last value. That sameness holds for what a handler reads from the world and
//! records: one that keeps state of its own through interior mutability, or reserves handles through `&World`
//! ([`World::reserve_entities`]), sees its calls in an order that depends on the threads. Outside an apply (a
//! direct [`World::insert`], a batch) they fire like any handler. A game's death handler, reading the fallen
//! entity's neighbours and recording a burst of spawns, is the use: the deaths of a frame are one run.
//!
//! How others do it: EnTT's signals fire inside the operation, and a listener must not remove the type it
//! observes; bevy's hooks fire inside the operation and its observers at the next sync point, in an order it
//! documents as arbitrary; flecs leaves the order of add and remove events undefined; Friflo sends them after a
//! command-buffer playback, grouped by component type. Here the order is the order of the changes, on every
//! backend and thread count, and a handler cannot break the operation it observes.
//!
//! ```
//! use swarm::ecs::World;
//! struct Health(i32);
//! struct Burst;
//! let mut world = World::new();
//! world.on_despawn(|world, e, commands| {
//!     if world.get::<Health>(e).is_some() {
//!         commands.spawn((Burst,)).unwrap(); // applied before `despawn` returns
//!     }
//! });
//! let e = world.spawn((Health(0),)).unwrap();
//! world.despawn(e).unwrap();
//! assert_eq!(world.count_of::<Burst>(), 1);
//! ```

use super::commands::{ApplyStats, CommandQueue, Commands};
use super::component::{ComponentId, ComponentSet};
use super::entity::Entity;
use super::pipeline::{HookSet, HookTable};
use super::world::World;
use std::fmt;

/// The most rounds of handlers' follow-up commands one apply runs, unless [`World::set_event_rounds`] says
/// otherwise.
pub const EVENT_ROUNDS: u32 = 64;

/// A handler as the world keeps it: any event's handler reads its value from the world.
pub(crate) type Handler = Box<dyn FnMut(&World, Entity, &mut Commands<'_>) + Send + Sync>;

/// A handler that keeps no state of its own ([`World::on_insert_parallel`]): calls of it may run at once.
type SharedHandler = Box<dyn Fn(&World, Entity, &mut Commands<'_>) + Send + Sync>;

/// How a registered handler is called.
enum Call {
    /// One call at a time, right after its change.
    Serial(Handler),
    /// After the run of inserts it watches, several calls at once ([`World::on_insert_parallel`]).
    Parallel(SharedHandler),
}

impl Call {
    #[inline]
    fn call(&mut self, world: &World, entity: Entity, commands: &mut Commands<'_>) {
        match self {
            Call::Serial(handler) => handler(world, entity, commands),
            Call::Parallel(handler) => handler(world, entity, commands),
        }
    }
}

/// Inserts held back while a run of inserts of one type applies: their parallel handlers fire when it ends.
/// Pieces of this many calls go to the thread pool.
const HELD_PIECE: usize = 64;

/// Names a registered handler, to take it off again ([`World::remove_handler`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HandlerId(u32);

/// Which change an event reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventKind {
    Spawn,
    Despawn,
    Insert(ComponentId),
    Remove(ComponentId),
}

/// Handlers' follow-up commands went on for more rounds than the world allows ([`World::set_event_rounds`]);
/// the commands of the round past the last were dropped. Everything applied before stays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyRounds {
    /// The rounds that ran.
    pub rounds: u32,
    /// The commands dropped.
    pub dropped: usize,
}

impl fmt::Display for TooManyRounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "event handlers kept recording commands for {} rounds (the world's limit, see World::set_event_rounds); \
             the {} commands of the next round were dropped",
            self.rounds, self.dropped
        )
    }
}

impl std::error::Error for TooManyRounds {}

/// A component type some insert or remove handler watches: its lists are found by component id, and a loaded
/// snapshot brings a new registry (new ids), so the type is kept to find its id again.
struct Watched {
    type_id: std::any::TypeId,
    /// Registers the type in a world and returns its id there.
    register: fn(&mut World) -> ComponentId,
    id: ComponentId,
}

/// One registered handler.
struct Entry {
    id: HandlerId,
    call: Call,
}

/// The handlers of each kind of event.
#[derive(Default)]
struct Lists {
    spawn: Vec<Entry>,
    despawn: Vec<Entry>,
    /// By component id.
    insert: Vec<Vec<Entry>>,
    remove: Vec<Vec<Entry>>,
}

impl Lists {
    /// The handlers of `kind`, made empty if the type has none yet (registration).
    fn list(&mut self, kind: EventKind) -> &mut Vec<Entry> {
        fn at(lists: &mut Vec<Vec<Entry>>, id: ComponentId) -> &mut Vec<Entry> {
            let id = id as usize;
            if lists.len() <= id {
                lists.resize_with(id + 1, Vec::new);
            }
            &mut lists[id]
        }
        match kind {
            EventKind::Spawn => &mut self.spawn,
            EventKind::Despawn => &mut self.despawn,
            EventKind::Insert(id) => at(&mut self.insert, id),
            EventKind::Remove(id) => at(&mut self.remove, id),
        }
    }

    /// The handlers of `kind`, if any list was made for it (firing: the hook table names only watched kinds).
    #[inline]
    fn get(&mut self, kind: EventKind) -> Option<&mut Vec<Entry>> {
        match kind {
            EventKind::Spawn => Some(&mut self.spawn),
            EventKind::Despawn => Some(&mut self.despawn),
            EventKind::Insert(id) => self.insert.get_mut(id as usize),
            EventKind::Remove(id) => self.remove.get_mut(id as usize),
        }
    }
}

/// The handlers and the buffers their commands go to.
#[derive(Default)]
struct State {
    lists: Lists,
    watched: Vec<Watched>,
    next_id: u32,
    /// Where handlers record: applied as the next round.
    recording: CommandQueue,
    /// The round being applied (swapped with `recording`, so both keep their capacity).
    spare: CommandQueue,
    /// The pieces of a run's parallel handlers, each recording into its own buffer (as many as the last run in
    /// pieces used, kept for their memory).
    pieces: Vec<CommandQueue>,
}

/// The world's lifecycle handlers: the hook of the mutation pipeline that calls them
/// ([`crate::ecs::pipeline`]), and the rounds of their commands.
#[derive(Default)]
pub(crate) struct Events {
    /// Boxed, so a firing moves one pointer out of the world and back (the handlers run with `&World`); `None`
    /// until a handler is registered, and while handlers run.
    state: Option<Box<State>>,
    /// While a buffer or a round is applied: direct operations that it makes leave their events' commands to the
    /// next round instead of applying them at once.
    pub(crate) applying: bool,
    /// Events delivered to at least one handler, since the world was made.
    fired: u64,
    /// Rounds one apply may run (0: the default).
    rounds: u32,
    /// While an apply applies a run of inserts of one type: inserts whose handlers are all parallel are held
    /// (in `held`, of type `held_id`) and fire when the run ends ([`World::fire_held`]).
    pub(crate) holding: bool,
    held: Vec<Entity>,
    held_id: ComponentId,
    /// The types whose insert handlers are all parallel (and at least one): their inserts are held in a run. Kept
    /// with the hook table ([`Events::mark`]).
    parallel_inserts: ComponentSet,
}

impl Events {
    fn state(&mut self) -> &mut State {
        self.state.get_or_insert_with(Box::default)
    }

    /// Marks the changes handlers watch in the pipeline's hook table, and notes the types whose inserts a run
    /// holds.
    pub(crate) fn mark(&mut self, table: &mut HookTable) {
        self.parallel_inserts = ComponentSet::EMPTY;
        let Some(state) = &self.state else { return };
        let lists = &state.lists;
        for (id, list) in lists.insert.iter().enumerate().filter(|(_, list)| !list.is_empty()) {
            if list.iter().all(|entry| matches!(entry.call, Call::Parallel(_))) {
                self.parallel_inserts.insert(id as ComponentId);
            }
        }
        table.mark(EventKind::Spawn, HookSet::EVENTS, !lists.spawn.is_empty());
        table.mark(EventKind::Despawn, HookSet::EVENTS, !lists.despawn.is_empty());
        for (kind, lists) in [(EventKind::Insert as fn(_) -> _, &lists.insert), (EventKind::Remove, &lists.remove)] {
            for (id, _) in lists.iter().enumerate().filter(|(_, list)| !list.is_empty()) {
                table.mark(kind(id as ComponentId), HookSet::EVENTS, true);
            }
        }
    }

    /// Whether handlers recorded commands not applied yet.
    #[inline(always)]
    pub(crate) fn has_recorded(&self) -> bool {
        self.state.as_ref().is_some_and(|state| !state.recording.is_empty())
    }

    /// The rounds one apply may run.
    fn round_limit(&self) -> u32 {
        if self.rounds == 0 {
            EVENT_ROUNDS
        } else {
            self.rounds
        }
    }
}

impl World {
    /// Calls `handler` right after each spawn, with the new entity (see [the rule](crate::ecs::events)).
    pub fn on_spawn(
        &mut self,
        handler: impl FnMut(&World, Entity, &mut Commands<'_>) + Send + Sync + 'static,
    ) -> HandlerId {
        self.add_handler(EventKind::Spawn, Call::Serial(Box::new(handler)))
    }

    /// Calls `handler` right before each despawn, with the entity, whose components it can still read (see
    /// [the rule](crate::ecs::events)).
    pub fn on_despawn(
        &mut self,
        handler: impl FnMut(&World, Entity, &mut Commands<'_>) + Send + Sync + 'static,
    ) -> HandlerId {
        self.add_handler(EventKind::Despawn, Call::Serial(Box::new(handler)))
    }

    /// Calls `handler` right after each insert of a `T` into a live entity (new or replacing), with the value
    /// (see [the rule](crate::ecs::events)).
    ///
    /// ```
    /// use swarm::ecs::World;
    /// #[derive(Debug)] struct Armor(u8);
    /// struct Clank;
    /// let mut world = World::new();
    /// world.on_insert::<Armor>(|_, e, armor, commands| {
    ///     if armor.0 > 3 {
    ///         commands.insert(e, Clank);
    ///     }
    /// });
    /// let e = world.spawn(()).unwrap();
    /// world.insert(e, Armor(5)).unwrap();
    /// assert!(world.has::<Clank>(e));
    /// ```
    ///
    /// # Panics
    /// For the hierarchy's components, which fire nothing (their changes are the hierarchy's own).
    pub fn on_insert<T: crate::ecs::Component>(
        &mut self,
        handler: impl FnMut(&World, Entity, &T, &mut Commands<'_>) + Send + Sync + 'static,
    ) -> HandlerId {
        self.add_typed(EventKind::Insert, handler)
    }

    /// Calls `handler` after each insert of a `T` into a live entity, like [`World::on_insert`], but a handler
    /// that keeps no state of its own (`Fn`): in a command buffer's apply, the handlers of a run of consecutive
    /// inserts of `T` fire once the whole run is in, and their calls may run at once on the thread pool (see
    /// [the rule](crate::ecs::events#parallel-handlers)). While every insert handler of `T` is one of these, a run's
    /// inserts are held; a handler of `T` registered with [`World::on_insert`] makes every insert of `T` fire at
    /// once again.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// struct Fallen;
    /// struct Spark;
    /// let mut world = World::new();
    /// world.on_insert_parallel::<Fallen>(|world, e, _, commands| {
    ///     // The run is in: every fighter of the run already has `Fallen` here.
    ///     assert_eq!(world.count_of::<Fallen>(), 3);
    ///     commands.spawn((Spark,)).unwrap();
    ///     commands.despawn(e);
    /// });
    /// let fighters: Vec<_> = (0..3).map(|_| world.spawn(()).unwrap()).collect();
    /// for &e in &fighters {
    ///     world.commands().insert(e, Fallen);
    /// }
    /// world.apply_commands();
    /// assert_eq!((world.count_of::<Spark>(), world.count_of::<Fallen>()), (3, 0));
    /// ```
    ///
    /// # Panics
    /// For the hierarchy's components, as [`World::on_insert`].
    pub fn on_insert_parallel<T: crate::ecs::Component>(
        &mut self,
        handler: impl Fn(&World, Entity, &T, &mut Commands<'_>) + Send + Sync + 'static,
    ) -> HandlerId {
        let id = self.watch::<T>();
        self.add_handler(
            EventKind::Insert(id),
            Call::Parallel(Box::new(move |world, entity, commands| {
                if let Some(value) = world.get::<T>(entity) {
                    handler(world, entity, value, commands);
                }
            })),
        )
    }

    /// Calls `handler` right before each removal of a `T` from a live entity, with the value before it leaves (see
    /// [the rule](crate::ecs::events)).
    ///
    /// # Panics
    /// For the hierarchy's components, as [`World::on_insert`].
    pub fn on_remove<T: crate::ecs::Component>(
        &mut self,
        handler: impl FnMut(&World, Entity, &T, &mut Commands<'_>) + Send + Sync + 'static,
    ) -> HandlerId {
        self.add_typed(EventKind::Remove, handler)
    }

    fn add_handler(&mut self, kind: EventKind, call: Call) -> HandlerId {
        let state = self.events.state();
        let id = HandlerId(state.next_id);
        state.next_id += 1;
        state.lists.list(kind).push(Entry { id, call });
        self.mark_hooks();
        id
    }

    /// Registers a handler of `T`'s insert or remove (`kind`), which reads `T`'s value from the world.
    fn add_typed<T: crate::ecs::Component>(
        &mut self,
        kind: fn(ComponentId) -> EventKind,
        mut handler: impl FnMut(&World, Entity, &T, &mut Commands<'_>) + Send + Sync + 'static,
    ) -> HandlerId {
        let id = self.watch::<T>();
        self.add_handler(
            kind(id),
            Call::Serial(Box::new(move |world, entity, commands| {
                if let Some(value) = world.get::<T>(entity) {
                    handler(world, entity, value, commands);
                }
            })),
        )
    }

    /// `T`'s id, noting that handlers watch it (so a new registry finds their lists again: [`World::rekey_events`]).
    /// Refuses the hierarchy's types.
    fn watch<T: crate::ecs::Component>(&mut self) -> ComponentId {
        super::hierarchy::refuse_kept::<T>("watched by a handler (the hierarchy's changes fire nothing)");
        let id = self.register::<T>();
        let type_id = std::any::TypeId::of::<T>();
        let state = self.events.state();
        if !state.watched.iter().any(|w| w.type_id == type_id) {
            state.watched.push(Watched { type_id, register: |world| world.register::<T>(), id });
        }
        id
    }

    /// Moves the insert and remove handlers to their types' ids in the world's registry, after the registry was
    /// replaced (a loaded snapshot's numbers its types its own way).
    pub(crate) fn rekey_events(&mut self) {
        let Some(mut state) = self.events.state.take() else { return };
        let (mut insert, mut remove) = (Vec::new(), Vec::new());
        for w in &mut state.watched {
            let id = (w.register)(self);
            for (old, new) in [(&mut state.lists.insert, &mut insert), (&mut state.lists.remove, &mut remove)] {
                if let Some(list) = old.get_mut(w.id as usize) {
                    if new.len() <= id as usize {
                        new.resize_with(id as usize + 1, Vec::new);
                    }
                    new[id as usize] = std::mem::take(list);
                }
            }
            w.id = id;
        }
        state.lists.insert = insert;
        state.lists.remove = remove;
        self.events.state = Some(state);
    }

    /// Takes a handler off; whether it was registered.
    pub fn remove_handler(&mut self, id: HandlerId) -> bool {
        let Some(state) = &mut self.events.state else { return false };
        let Lists { spawn, despawn, insert, remove } = &mut state.lists;
        let lists = [spawn, despawn].into_iter().chain(insert).chain(remove);
        let mut found = false;
        for list in lists {
            if let Some(at) = list.iter().position(|entry| entry.id == id) {
                list.remove(at);
                found = true;
                break;
            }
        }
        if found {
            self.mark_hooks();
        }
        found
    }

    /// Sets the most rounds of handlers' follow-up commands one apply runs (at least 1; default [`EVENT_ROUNDS`]).
    pub fn set_event_rounds(&mut self, rounds: u32) {
        self.events.rounds = rounds.max(1);
    }

    /// Events delivered to at least one handler since the world was made.
    pub fn events_fired(&self) -> u64 {
        self.events.fired
    }

    /// Calls the handlers of `kind` for `entity`, in registration order; their commands go to the next round. A
    /// panicking handler's panic goes on after the handlers and their buffer are back in the world.
    pub(crate) fn fire(&mut self, kind: EventKind, entity: Entity) {
        if self.events.holding {
            if let EventKind::Insert(id) = kind {
                if self.hold(id, entity) {
                    return;
                }
            }
        }
        // The handlers see the world shared: their state leaves it for the call (one pointer out and back).
        let Some(mut state) = self.events.state.take() else { return };
        let world = &*self;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let State { lists, recording, .. } = &mut *state;
            let list = lists.get(kind).expect("the hook table names watched kinds only");
            let mut commands = Commands::deferred(recording);
            for entry in list {
                entry.call.call(world, entity, &mut commands);
            }
        }));
        self.events.state = Some(state);
        self.events.fired += 1;
        if let Err(panic) = outcome {
            // In a direct operation, the commands its handlers recorded answer an operation that did not finish:
            // dropped, never left for the next one. (An apply drops its own when the panic reaches it.)
            if !self.events.applying {
                self.discard_events();
            }
            std::panic::resume_unwind(panic);
        }
    }

    /// Takes the run of inserts an apply is holding, if any, out of the world (an apply inside it, from a reserved
    /// handle settling, holds its own runs), to put back with [`World::put_held`]. Nothing moves when none is held,
    /// so the held list keeps its memory from apply to apply.
    pub(crate) fn take_held(&mut self) -> Option<(bool, Vec<Entity>, ComponentId)> {
        let events = &mut self.events;
        if !events.holding && events.held.is_empty() {
            return None;
        }
        Some((std::mem::take(&mut events.holding), std::mem::take(&mut events.held), events.held_id))
    }

    /// Puts back what [`World::take_held`] took.
    pub(crate) fn put_held(&mut self, outer: Option<(bool, Vec<Entity>, ComponentId)>) {
        let events = &mut self.events;
        debug_assert!(events.held.is_empty(), "an apply's runs end inside it");
        if let Some((holding, held, id)) = outer {
            (events.holding, events.held, events.held_id) = (holding, held, id);
        }
    }

    /// Holds the insert of component `id` into `entity` until the run of inserts ends, if every handler of the
    /// type is parallel; whether it was held. (A held run of another type fires first: a run is of one type.)
    fn hold(&mut self, id: ComponentId, entity: Entity) -> bool {
        if !self.events.parallel_inserts.contains(id) {
            return false;
        }
        if !self.events.held.is_empty() && self.events.held_id != id {
            self.fire_held_now();
        }
        self.events.held_id = id;
        self.events.held.push(entity);
        true
    }

    /// Ends a run of inserts: stops holding, and fires the held inserts' handlers, each call seeing the world with
    /// the whole run in. Their commands go to the next round in the run's order (per insert, its handlers' in
    /// registration order), recorded by pieces of [`HELD_PIECE`] inserts on the thread pool when the world's
    /// parallel loops may use it ([`World::parallel`]), else in turn here: the same commands either way. A
    /// panicking handler's panic goes on after every piece has joined and the handlers are back in the world.
    #[inline]
    pub(crate) fn fire_held(&mut self) {
        self.events.holding = false;
        if !self.events.held.is_empty() {
            self.fire_held_now();
        }
    }

    /// [`World::fire_held`] with inserts held.
    #[cold]
    fn fire_held_now(&mut self) {
        let held = std::mem::take(&mut self.events.held);
        let kind = EventKind::Insert(self.events.held_id);
        let Some(mut state) = self.events.state.take() else {
            self.events.held = held;
            self.events.held.clear();
            return;
        };
        // Pieces by the run's length alone, so the handles the calls get are the same on every thread count; the
        // thread count only says whether they go to the pool or are recorded in place, in turn.
        let (in_pieces, parallel) = (held.len() > HELD_PIECE, self.parallel());
        let world = &*self;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let State { lists, recording, pieces, .. } = &mut *state;
            let list = lists.get(kind).expect("held inserts are of a watched type");
            if !in_pieces {
                return call_each(world, list, &held, &mut Commands::deferred(recording));
            }
            let (tag, base, first) = (recording.tag(), recording.deferred_count(), recording.next_piece());
            if !parallel {
                // In turn, each piece recorded in place: the order and the handles of the pieces, without moving
                // anything from buffer to buffer.
                for (k, chunk) in held.chunks(HELD_PIECE).enumerate() {
                    let offset = recording.start_inline_piece(first, k, base);
                    call_each(world, list, chunk, &mut Commands::deferred(recording));
                    recording.end_inline_piece(offset, base);
                }
                return;
            }
            let list = &*list;
            let chunks = held.len().div_ceil(HELD_PIECE);
            pieces.resize_with(chunks, CommandQueue::default);
            for (k, piece) in pieces.iter_mut().enumerate() {
                piece.number_piece(first, k);
                piece.start_piece(tag, base);
            }
            crate::ecs::query::with_pieces(recording, pieces, |pieces| {
                fire_pieces(world, list, &held, 0, pieces);
            });
        }));
        self.events.state = Some(state);
        self.events.fired += held.len() as u64;
        self.events.held = held;
        self.events.held.clear();
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }

    /// After a direct operation: applies the commands its events' handlers recorded, round after round. Nothing
    /// to do inside an apply (the apply runs the rounds after its buffer).
    ///
    /// # Panics
    /// Past the round limit, with [`TooManyRounds`] (the commands left are dropped first).
    pub(crate) fn settle_events(&mut self) {
        if !self.events.applying && self.events.has_recorded() {
            self.events.applying = true;
            let rounds = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_rounds()));
            self.events.applying = false;
            match rounds {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => panic!("{error}"),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    }

    /// Runs `f`, a batch of direct operations, as one: their events fire as they go and the handlers' commands
    /// apply once, when `f` is done. If `f` panics, what the handlers recorded is dropped.
    pub(crate) fn as_one_operation<R>(&mut self, f: impl FnOnce(&mut World) -> R) -> R {
        let outer = std::mem::replace(&mut self.events.applying, true);
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self)));
        self.events.applying = outer;
        let out = out.unwrap_or_else(|panic| {
            if !outer {
                self.discard_events();
            }
            std::panic::resume_unwind(panic)
        });
        self.settle_events();
        out
    }

    /// Drops the handlers' commands not applied yet (releasing nothing else: their spawns are deferred).
    pub(crate) fn discard_events(&mut self) {
        self.events.holding = false;
        self.events.held.clear();
        if let Some(state) = &mut self.events.state {
            state.recording.discard(&mut self.entities);
        }
    }

    /// Applies the handlers' recorded commands as rounds until none are left or the limit is reached (the caller
    /// has set `applying`). If a round panics, its commands and those recorded for the next are dropped and the
    /// panic goes on.
    pub(crate) fn run_rounds(&mut self) -> Result<ApplyStats, TooManyRounds> {
        let mut stats = ApplyStats::default();
        let mut rounds = 0;
        while self.events.has_recorded() {
            if rounds == self.events.round_limit() {
                let dropped = self.events.state().recording.len();
                self.discard_events();
                return Err(TooManyRounds { rounds, dropped });
            }
            rounds += 1;
            let state = self.events.state();
            let mut round = std::mem::take(&mut state.spare);
            std::mem::swap(&mut round, &mut state.recording);
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| round.apply(self)));
            match outcome {
                Ok(round_stats) => {
                    stats.applied += round_stats.applied;
                    stats.skipped += round_stats.skipped;
                    stats.refused += round_stats.refused;
                    self.events.state().spare = round;
                }
                Err(panic) => {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        self.release_removals();
                        round.discard(self.entities_mut());
                        self.discard_events();
                    }));
                    self.events.state().spare = round;
                    std::panic::resume_unwind(panic);
                }
            }
        }
        Ok(stats)
    }
}

/// Calls the parallel handlers `list` for the held inserts `held` (the first at position `first` of the run),
/// `HELD_PIECE` of them per piece of `pieces`, halving and joining the halves on the thread pool. Each call records
/// keyed by its insert's position in the run, so the pieces' commands join in the run's order.
fn fire_pieces(world: &World, list: &[Entry], held: &[Entity], first: usize, pieces: &mut [CommandQueue]) {
    if let [piece] = pieces {
        let mut commands = Commands::keyed(piece);
        for (k, &entity) in held.iter().enumerate() {
            commands.visit_at((first + k) as u32);
            for entry in list {
                match &entry.call {
                    Call::Parallel(handler) => handler(world, entity, &mut commands),
                    Call::Serial(_) => unreachable!("held inserts have parallel handlers only"),
                }
            }
        }
        return;
    }
    let middle = pieces.len() / 2;
    let (front, back) = pieces.split_at_mut(middle);
    let (held_front, held_back) = held.split_at(middle * HELD_PIECE);
    crate::ecs::join(
        || fire_pieces(world, list, held_front, first, front),
        || fire_pieces(world, list, held_back, first + middle * HELD_PIECE, back),
    );
}

/// Calls every handler of `list` for each entity of `held`, in turn, recording into `commands`.
fn call_each(world: &World, list: &mut [Entry], held: &[Entity], commands: &mut Commands<'_>) {
    for &entity in held {
        for entry in list.iter_mut() {
            entry.call.call(world, entity, commands);
        }
    }
}
