//! Entity handles and the allocator that hands them out.
//!
//! An [`Entity`] is an `index` into every per-entity array plus a `generation` that tells apart the successive
//! occupants of that index. The allocator keeps one `Slot` per index ever handed out:
//!
//! ```text
//!  index:        0        1        2        3
//!  slots:     [g=1 A]  [g=3 F]  [g=1 A]  [g=2 F]      A = alive, R = reserved, F = free, X = retired
//!  free:      [3, 1]   (a stack: the next spawn reuses index 1 at generation 3)
//! ```
//!
//! Invariants (checked by `assert_invariants` in tests):
//! - `e` is alive  <=>  `slots[e.index].state == Alive && slots[e.index].generation == e.generation`;
//! - every index on `free` is `Free`, appears once, and its slot holds the generation the next occupant will get;
//! - `live + reserved <= capacity`.
//!
//! Freeing bumps the generation, so a stale handle never reaches the entity that reuses its index. When an
//! index's generation is used up (it reached `max_generation`), the index is *retired*: never handed out again,
//! and counted in [`Entities::retired`].

use std::fmt;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, Ordering};

/// A handle to an entity: 8 bytes, and `Option<Entity>` is 8 bytes too (the generation is never zero).
///
/// ```
/// use swarm::ecs::{World, Entity};
/// assert_eq!(std::mem::size_of::<Option<Entity>>(), 8);
/// let mut world = World::new();
/// let e = world.spawn((1u32,)).unwrap();
/// world.despawn(e).unwrap();
/// let f = world.spawn((2u32,)).unwrap();
/// assert_eq!(e.index(), f.index()); // the index is reused...
/// assert_ne!(e, f); // ...under a new generation, so `e` stays dead
/// assert!(world.get::<u32>(e).is_none());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Entity {
    // Field order makes the derived `Ord` sort by index first: a canonical order for deterministic systems.
    index: u32,
    generation: NonZeroU32,
}

impl Entity {
    /// Builds a handle from its parts. A handle made up this way is only alive if the world agrees.
    pub const fn from_parts(index: u32, generation: NonZeroU32) -> Self {
        Self { index, generation }
    }

    /// The slot this entity occupies in every per-entity array.
    #[inline]
    pub const fn index(self) -> u32 {
        self.index
    }

    /// Which occupant of `index` this handle refers to.
    #[inline]
    pub const fn generation(self) -> NonZeroU32 {
        self.generation
    }

    /// Whether this is a deferred handle: one that a spawn recorded inside
    /// [`QueryBorrow::for_each_with_commands`](super::QueryBorrow::for_each_with_commands) hands out. It names the new entity
    /// in later commands of the same buffer only; the entity gets its real handle when the buffer is applied, and
    /// the deferred handle never refers to a live entity (lookups answer "no such entity").
    pub const fn is_deferred(self) -> bool {
        self.index >= DEFERRED_MIN && self.generation.get() & (DEFERRED_PER_BUFFER - 1) != 0
    }

    /// A handle that never names an entity: what a deferred handle kept in a value becomes when its spawn is
    /// refused (a full world) or its buffer discarded ([`World::register_entity_holder`](super::World::register_entity_holder)).
    /// Lookups answer "no such entity", and it is not deferred.
    pub const DEAD: Entity = match NonZeroU32::new(DEFERRED_PER_BUFFER) {
        Some(generation) => Entity { index: DEFERRED_INDEX, generation },
        None => panic!("a nonzero generation"),
    };

    /// The `n`-th deferred handle (`n` from 1, below [`DEFERRED_PER_BUFFER`]) of the command buffer tagged `tag`
    /// (0: the world's own; a system's buffer has its own tag). The tag rides in the generation's top byte.
    pub(crate) const fn deferred(tag: u8, n: u32) -> Self {
        let bits = (tag as u32) << 24 | n;
        match NonZeroU32::new(bits) {
            Some(generation) => Self { index: DEFERRED_INDEX, generation },
            None => panic!("a deferred number starts at 1"),
        }
    }

    /// The `n`-th deferred handle made by piece `piece` of a parallel loop recording into the buffer tagged `tag`
    /// (its number counts from the buffer's count when the loop began). The piece rides in the index, below the
    /// marker of plain deferred handles, so a handle carried to another piece (or out of the loop) still names its
    /// own spawn: the buffer learns each piece's place when the pieces join ([`Entity::deferred_piece`]).
    pub(crate) const fn deferred_in_piece(tag: u8, piece: u32, n: u32) -> Self {
        assert!(piece < MAX_PIECES, "a piece number fits below the plain deferred marker");
        let deferred = Self::deferred(tag, n);
        Self { index: DEFERRED_MIN + piece, generation: deferred.generation }
    }

    /// The piece of a parallel loop that made this deferred handle, if a piece made it.
    pub(crate) const fn deferred_piece(self) -> Option<u32> {
        match self.index {
            DEFERRED_INDEX => None,
            index if index >= DEFERRED_MIN => Some(index - DEFERRED_MIN),
            _ => None,
        }
    }

    /// A deferred handle's buffer tag and number (see [`Entity::deferred`]).
    pub(crate) const fn deferred_parts(self) -> (u8, u32) {
        ((self.generation.get() >> 24) as u8, self.generation.get() & (DEFERRED_PER_BUFFER - 1))
    }

    /// Packs the handle into 64 bits (`generation << 32 | index`), e.g. for digests or serialization.
    pub const fn to_bits(self) -> u64 {
        (self.generation.get() as u64) << 32 | self.index as u64
    }

    /// The inverse of [`Entity::to_bits`]; `None` if the generation half is zero.
    pub const fn from_bits(bits: u64) -> Option<Self> {
        match NonZeroU32::new((bits >> 32) as u32) {
            Some(generation) => Some(Self { index: bits as u32, generation }),
            None => None,
        }
    }
}

/// Written as 64 bits ([`Entity::to_bits`]) in binary formats and as `"<index>v<generation>"` (as `Debug` shows
/// it) in human-readable ones such as JSON. Reading refuses generation 0.
impl serde::Serialize for Entity {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.collect_str(&format_args!("{}v{}", self.index, self.generation))
        } else {
            serializer.serialize_u64(self.to_bits())
        }
    }
}

impl<'de> serde::Deserialize<'de> for Entity {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        if deserializer.is_human_readable() {
            let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
            let parsed = text.split_once('v').and_then(|(index, generation)| {
                Some(Entity { index: index.parse().ok()?, generation: generation.parse().ok()? })
            });
            parsed.ok_or_else(|| D::Error::custom(format!("`{text}` is not an entity handle like `12v3`")))
        } else {
            let bits = u64::deserialize(deserializer)?;
            Entity::from_bits(bits).ok_or_else(|| D::Error::custom(format!("entity handle {bits:#x} has generation 0")))
        }
    }
}

/// The index of deferred handles; the allocator never hands it out.
const DEFERRED_INDEX: u32 = u32::MAX;

/// The lowest index of a deferred handle: the indices from here up mark deferred handles (a parallel loop's piece
/// number in the index, plain ones at [`DEFERRED_INDEX`]), and the allocator hands out only indices below it.
const DEFERRED_MIN: u32 = u32::MAX - MAX_PIECES;

/// Pieces of parallel loops one buffer may number between two applies ([`Entity::deferred_in_piece`]).
pub(crate) const MAX_PIECES: u32 = 1 << 24;

/// Deferred spawns one command buffer may hold before it is applied: the number takes the low 24 bits of a deferred
/// handle's generation, the buffer's tag the top 8.
pub(crate) const DEFERRED_PER_BUFFER: u32 = 1 << 24;

impl fmt::Debug for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Entity::DEAD {
            write!(f, "dead")
        } else if self.is_deferred() {
            match (self.deferred_parts(), self.deferred_piece()) {
                ((0, n), None) => write!(f, "deferred#{n}"),
                ((tag, n), None) => write!(f, "deferred#{n} of buffer {tag}"),
                ((tag, n), Some(piece)) => write!(f, "deferred#{n} of piece {piece} of buffer {tag}"),
            }
        } else {
            write!(f, "{}v{}", self.index, self.generation)
        }
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The world holds its maximum number of entities; spawning more is refused (nothing already there is touched).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorldFull {
    /// The capacity the world was built with.
    pub capacity: u32,
}

impl fmt::Display for WorldFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "world is full: it holds its capacity of {} entities", self.capacity)
    }
}

impl std::error::Error for WorldFull {}

/// The handle is stale (its entity was despawned) or was never handed out by this world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoSuchEntity(pub Entity);

impl fmt::Display for NoSuchEntity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no such entity: {:?} is stale or was never spawned", self.0)
    }
}

impl std::error::Error for NoSuchEntity {}

/// Why [`World::spawn_at`](super::World::spawn_at) refused a handle; nothing in the world changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpawnAtError {
    /// The index is taken by this live entity (the same handle, or another generation of it).
    Live(Entity),
    /// The generation is behind the one the allocator holds for the index: handles of that generation were
    /// handed out and retired, and must stay dead.
    Stale {
        /// The handle asked for.
        entity: Entity,
        /// The lowest generation the index may still take.
        current: NonZeroU32,
    },
    /// The index's generations are used up: it is never handed out again.
    Retired(Entity),
    /// The index is reserved for a spawn that cannot be applied now (the command buffer is being applied).
    Reserved(Entity),
    /// The generation is past the allocator's `max_generation`.
    GenerationOutOfRange {
        /// The handle asked for.
        entity: Entity,
        /// The allocator's maximum generation.
        max: u32,
    },
    /// The index is past what this world can hand out: `capacity + retired` indices (the allocator never holds
    /// more slots than that), and never the indices that mark deferred handles (the top 2^24).
    IndexOutOfRange {
        /// The handle asked for.
        entity: Entity,
        /// One past the highest index the world accepts now.
        bound: u32,
    },
    /// The world holds its capacity.
    WorldFull(WorldFull),
}

impl fmt::Display for SpawnAtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnAtError::Live(live) => {
                write!(f, "cannot spawn at index {}: the live entity {live:?} holds it", live.index)
            }
            SpawnAtError::Stale { entity, current } => write!(
                f,
                "cannot spawn at {entity:?}: generation {} is behind generation {current} of index {}",
                entity.generation, entity.index
            ),
            SpawnAtError::Retired(entity) => {
                write!(f, "cannot spawn at {entity:?}: index {} is retired (its generations are used up)", entity.index)
            }
            SpawnAtError::Reserved(entity) => {
                write!(f, "cannot spawn at {entity:?}: the index is reserved by the command buffer being applied")
            }
            SpawnAtError::GenerationOutOfRange { entity, max } => {
                write!(f, "cannot spawn at {entity:?}: generation {} is past the maximum {max}", entity.generation)
            }
            SpawnAtError::IndexOutOfRange { entity, bound } => {
                write!(f, "cannot spawn at {entity:?}: index {} is past this world's bound of {bound}", entity.index)
            }
            SpawnAtError::WorldFull(full) => full.fmt(f),
        }
    }
}

impl std::error::Error for SpawnAtError {}

impl From<WorldFull> for SpawnAtError {
    fn from(full: WorldFull) -> Self {
        SpawnAtError::WorldFull(full)
    }
}

/// Why a component could not be removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentError {
    /// The handle is stale or was never spawned.
    NoSuchEntity(Entity),
    /// The handle is reserved: its spawn waits in the command buffer (a [`ViewMut`](super::ViewMut) cannot apply
    /// the buffer; operations through `&mut World` do, see [`World::reserve_entity`](super::World::reserve_entity)).
    Reserved(Entity),
    /// The entity is alive but has no component of that type.
    MissingComponent {
        /// The entity.
        entity: Entity,
        /// The component's type name.
        component: &'static str,
    },
}

impl fmt::Display for ComponentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ComponentError::NoSuchEntity(e) => NoSuchEntity(*e).fmt(f),
            ComponentError::Reserved(e) => {
                write!(f, "entity {e:?} is reserved: its spawn waits in the command buffer (apply the commands first)")
            }
            ComponentError::MissingComponent { entity, component } => {
                write!(f, "entity {entity:?} has no `{component}` component")
            }
        }
    }
}

impl std::error::Error for ComponentError {}

impl From<NoSuchEntity> for ComponentError {
    fn from(NoSuchEntity(entity): NoSuchEntity) -> Self {
        ComponentError::NoSuchEntity(entity)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    Reserved,
    Alive,
    Retired,
}

/// Whether `slots` hold `entity` alive, with its generation.
#[inline(always)]
fn alive_in(slots: &[Slot], entity: Entity) -> bool {
    matches!(slots.get(entity.index as usize), Some(slot) if slot.state == State::Alive && slot.generation == entity.generation)
}

/// The allocator's liveness test with its slots bound ([`Entities::alive_test`]): a copy held across a loop tests
/// each handle without going through the allocator again.
#[derive(Clone, Copy)]
pub(crate) struct AliveTest<'a>(&'a [Slot]);

impl AliveTest<'_> {
    /// Whether `entity` is alive, as [`Entities::is_alive`] answers.
    #[inline(always)]
    pub(crate) fn test(self, entity: Entity) -> bool {
        alive_in(self.0, entity)
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    /// The generation of the current occupant, or of the next one while the slot is free.
    generation: NonZeroU32,
    state: State,
}

/// The state of an [`Entities`] allocator as plain data: what a snapshot stores ([`Entities::state`],
/// [`Entities::from_state`]). Every index below `generations.len()` that is neither free nor retired is alive.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AllocatorState {
    /// Most live entities at once.
    pub capacity: u32,
    /// The generation at which an index retires.
    pub max_generation: u32,
    /// Per index: the generation of its occupant, or of the next one if it is free.
    pub generations: Vec<u32>,
    /// The free list, in order: the next spawn takes the last one.
    pub free: Vec<u32>,
    /// Indices retired for good, ascending.
    pub retired: Vec<u32>,
}

/// The entity allocator: a slot per index, a free list, a capacity and a count of retired indices.
///
/// Similar to `Vec<Option<u32>>` plus a `Vec<u32>` of holes; spawn and despawn are O(1).
#[derive(Debug)]
pub struct Entities {
    slots: Vec<Slot>,
    free: Vec<u32>,
    capacity: u32,
    max_generation: u32,
    live: u32,
    reserved: u32,
    retired: u32,
    /// Handles reserved through `&self` ([`Entities::reserve_many`]) and not yet given slots: positions
    /// `0..pending` name `free`'s entries from the top down, then new indices from `slots.len()` up, each at the
    /// generation its slot holds (1 for a new one). Every `&mut self` method gives them their `Reserved` slots
    /// first ([`Entities::flush_pending`]), so the rest of the allocator never sees them.
    pending: AtomicU32,
    /// Reserved handles no command buffer holds (from `pending`): the world makes them alive when it applies its
    /// buffer, before the buffer's commands.
    unrecorded: Vec<Entity>,
}

impl Clone for Entities {
    fn clone(&self) -> Self {
        Self {
            slots: self.slots.clone(),
            free: self.free.clone(),
            capacity: self.capacity,
            max_generation: self.max_generation,
            live: self.live,
            reserved: self.reserved,
            retired: self.retired,
            pending: AtomicU32::new(self.pending.load(Ordering::Acquire)),
            unrecorded: self.unrecorded.clone(),
        }
    }

    /// A copy in `self`'s buffers (a checkpoint taken again into an old one's memory).
    fn clone_from(&mut self, source: &Self) {
        self.slots.clone_from(&source.slots);
        self.free.clone_from(&source.free);
        self.capacity = source.capacity;
        self.max_generation = source.max_generation;
        self.live = source.live;
        self.reserved = source.reserved;
        self.retired = source.retired;
        *self.pending.get_mut() = source.pending.load(Ordering::Acquire);
        self.unrecorded.clone_from(&source.unrecorded);
    }
}

impl Entities {
    /// An allocator for at most `capacity` live (or reserved) entities at once.
    pub fn new(capacity: u32) -> Self {
        Self::with_max_generation(capacity, u32::MAX)
    }

    /// Like [`Entities::new`], with indices retired once their generation reaches `max_generation` (at least 1).
    /// Useful to exercise exhaustion without four billion respawns.
    pub fn with_max_generation(capacity: u32, max_generation: u32) -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            capacity,
            max_generation: max_generation.max(1),
            live: 0,
            reserved: 0,
            retired: 0,
            pending: AtomicU32::new(0),
            unrecorded: Vec::new(),
        }
    }

    /// Hands out a handle that is not alive yet ([`Entities::activate`] makes it so). Reserved handles count
    /// against the capacity.
    pub(crate) fn reserve(&mut self) -> Result<Entity, WorldFull> {
        let entity = self.take(State::Reserved)?;
        self.reserved += 1;
        Ok(entity)
    }

    /// A free index (recycled, else new) put in `state`; counters are the caller's.
    #[inline]
    fn take(&mut self, state: State) -> Result<Entity, WorldFull> {
        self.flush_pending();
        if self.live + self.reserved >= self.capacity {
            return Err(WorldFull { capacity: self.capacity });
        }
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                // `capacity <= u32::MAX` live entities and retired slots never come back, so a new index exists
                // unless every u32 index was used: then the world is full for good.
                // Indices from `DEFERRED_MIN` up are never handed out: they mark deferred handles (see
                // `Entity::is_deferred`).
                let index = match u32::try_from(self.slots.len()) {
                    Ok(index) if index < DEFERRED_MIN => index,
                    _ => return Err(WorldFull { capacity: self.capacity }),
                };
                self.slots.push(Slot { generation: NonZeroU32::MIN, state });
                return Ok(Entity { index, generation: NonZeroU32::MIN });
            }
        };
        let slot = &mut self.slots[index as usize];
        debug_assert_eq!(slot.state, State::Free, "free list pointed to a slot that is not free");
        slot.state = state;
        Ok(Entity { index, generation: slot.generation })
    }

    /// Makes `entity` alive under exactly its index and generation (see
    /// [`World::spawn_at`](super::World::spawn_at)): the index leaves the free list wherever it is on it (the
    /// others keep their order), and an index past [`Entities::index_bound`] grows the allocator, putting the
    /// indices skipped on the free list so that the lowest is handed out first. Refused with the reason, and
    /// nothing changed, if the index is live, reserved or retired, the generation is behind the index's or past
    /// `max_generation`, the index is past `capacity + retired`, or the world is full.
    pub(crate) fn alloc_at(&mut self, entity: Entity) -> Result<(), SpawnAtError> {
        self.flush_pending();
        let index = entity.index as usize;
        if let Some(slot) = self.slots.get(index) {
            match slot.state {
                State::Alive => {
                    return Err(SpawnAtError::Live(Entity { index: entity.index, generation: slot.generation }))
                }
                State::Reserved => return Err(SpawnAtError::Reserved(entity)),
                State::Retired => return Err(SpawnAtError::Retired(entity)),
                State::Free if entity.generation < slot.generation => {
                    return Err(SpawnAtError::Stale { entity, current: slot.generation })
                }
                State::Free => {}
            }
        }
        if entity.generation.get() > self.max_generation {
            return Err(SpawnAtError::GenerationOutOfRange { entity, max: self.max_generation });
        }
        if self.live + self.reserved >= self.capacity {
            return Err(WorldFull { capacity: self.capacity }.into());
        }
        // A new slot is pushed only while every slot is live, reserved or retired, so `slots <= capacity + retired`
        // holds for `alloc`; it holds here too, and bounds what a handle from a file can make the allocator hold.
        // (Never past the deferred handles' indices.)
        let bound = self.capacity.saturating_add(self.retired).min(DEFERRED_MIN);
        if entity.index >= bound.max(self.slots.len() as u32) {
            return Err(SpawnAtError::IndexOutOfRange { entity, bound });
        }
        if index < self.slots.len() {
            // Free lists are short next to the entities; the search runs from the end, where recent frees are.
            let at = self.free.iter().rposition(|&i| i == entity.index).expect("a free slot is on the free list");
            self.free.remove(at);
        } else {
            let start = self.slots.len() as u32;
            self.slots.resize(index + 1, Slot { generation: NonZeroU32::MIN, state: State::Free });
            self.free.extend((start..entity.index).rev());
        }
        self.slots[index] = Slot { generation: entity.generation, state: State::Alive };
        self.live += 1;
        Ok(())
    }

    /// Turns a reserved handle into a live entity. Returns `false` (and changes nothing) if `entity` is not reserved.
    pub(crate) fn activate(&mut self, entity: Entity) -> bool {
        self.flush_pending();
        match self.slots.get_mut(entity.index as usize) {
            Some(slot) if slot.state == State::Reserved && slot.generation == entity.generation => {
                slot.state = State::Alive;
                self.reserved -= 1;
                self.live += 1;
                true
            }
            _ => false,
        }
    }

    /// How many entities [`Entities::alloc`] would hand out before refusing: the capacity left, and the indices
    /// left (free ones, then never-used ones below the deferred marker).
    pub(crate) fn room(&self) -> usize {
        self.room_after(self.pending.load(Ordering::Acquire))
    }

    /// [`Entities::room`] with `pending` handles reserved through `&self` taken from it.
    fn room_after(&self, pending: u32) -> usize {
        let capacity_left = self.capacity.saturating_sub(self.live + self.reserved + pending) as usize;
        let unused = (DEFERRED_MIN as usize).saturating_sub(self.slots.len());
        capacity_left.min(self.free.len().saturating_add(unused).saturating_sub(pending as usize))
    }

    /// Reserves up to `count` handles through a shared borrow and returns them (fewer if the world fills up; the
    /// iterator's `len()` says how many): the handles [`Entities::reserve`] would hand out one after another.
    /// Their slots are taken by the next `&mut self` call, and they come alive when the world applies its
    /// command buffer. Safe to call from several threads at once: each call gets its own run of positions.
    pub(crate) fn reserve_many(&self, count: u32) -> ReservedHandles<'_> {
        let mut start = 0;
        let mut taken = 0;
        // A run of positions past `pending`, as long as the room left allows.
        let _ = self.pending.fetch_update(Ordering::AcqRel, Ordering::Acquire, |pending| {
            start = pending;
            taken = count.min(self.room_after(pending).min(u32::MAX as usize) as u32);
            Some(pending + taken)
        });
        ReservedHandles { entities: self, next: start, end: start + taken }
    }

    /// The handle at position `position` of the reservations made through `&self` (see `pending`).
    fn pending_handle(&self, position: u32) -> Entity {
        let position = position as usize;
        match self.free.len().checked_sub(position + 1) {
            Some(k) => {
                let index = self.free[k];
                Entity { index, generation: self.slots[index as usize].generation }
            }
            None => {
                Entity { index: (self.slots.len() + position - self.free.len()) as u32, generation: NonZeroU32::MIN }
            }
        }
    }

    /// Gives the handles reserved through `&self` their `Reserved` slots (in the order they were handed out, which
    /// is the order `reserve` takes indices) and records them as unrecorded.
    #[inline]
    pub(crate) fn flush_pending(&mut self) {
        if *self.pending.get_mut() != 0 {
            self.flush_pending_cold();
        }
    }

    #[cold]
    fn flush_pending_cold(&mut self) {
        let pending = std::mem::take(self.pending.get_mut());
        for _ in 0..pending {
            let expected = self.next_taken();
            let entity = self.take(State::Reserved).expect("a pending reservation was counted against the room");
            debug_assert_eq!(entity, expected, "a pending reservation got another slot than it was handed out");
            self.reserved += 1;
            self.unrecorded.push(entity);
        }
    }

    /// The handle `take` hands out next (the free list's top, else a new index), for the flush's check.
    fn next_taken(&self) -> Entity {
        match self.free.last() {
            Some(&index) => Entity { index, generation: self.slots[index as usize].generation },
            None => Entity { index: self.slots.len() as u32, generation: NonZeroU32::MIN },
        }
    }

    /// Whether handles reserved through `&self` wait to come alive.
    #[inline]
    pub(crate) fn has_unrecorded(&self) -> bool {
        !self.unrecorded.is_empty() || self.pending.load(Ordering::Acquire) != 0
    }

    /// Moves the reserved handles no command buffer holds into `out` (for the world to make alive).
    pub(crate) fn take_unrecorded(&mut self, out: &mut Vec<Entity>) {
        self.flush_pending();
        out.append(&mut self.unrecorded);
    }

    /// Frees the reserved handles no command buffer holds (the buffer was discarded).
    pub(crate) fn release_unrecorded(&mut self) {
        self.flush_pending();
        let unrecorded = std::mem::take(&mut self.unrecorded);
        for &entity in &unrecorded {
            self.release(entity);
        }
        self.unrecorded = unrecorded;
        self.unrecorded.clear();
    }

    /// Allocates `count` live entities at once and appends their handles to `out`: the same handles, in the same
    /// order, as `count` calls of [`Entities::alloc`] (recycled indices first, from the end of the free list, then
    /// new ones), with the loops split so that new indices are pushed as one run.
    ///
    /// # Panics
    /// If `count` exceeds [`Entities::room`] (nothing is allocated then).
    pub(crate) fn alloc_many(&mut self, count: usize, out: &mut Vec<Entity>) {
        self.flush_pending();
        assert!(count <= self.room(), "alloc_many of {count} entities with room for {}", self.room());
        out.reserve(count);
        let recycled = count.min(self.free.len());
        for _ in 0..recycled {
            let index = self.free.pop().expect("counted above");
            let slot = &mut self.slots[index as usize];
            debug_assert_eq!(slot.state, State::Free, "free list pointed to a slot that is not free");
            slot.state = State::Alive;
            out.push(Entity { index, generation: slot.generation });
        }
        let start = self.slots.len() as u32;
        let new = (count - recycled) as u32;
        self.slots.resize(self.slots.len() + new as usize, Slot { generation: NonZeroU32::MIN, state: State::Alive });
        out.extend((start..start + new).map(|index| Entity { index, generation: NonZeroU32::MIN }));
        self.live += count as u32;
    }

    /// Reserves and activates in one step (without passing through `Reserved`).
    #[inline]
    pub fn alloc(&mut self) -> Result<Entity, WorldFull> {
        let entity = self.take(State::Alive)?;
        self.live += 1;
        Ok(entity)
    }

    /// Frees a live or reserved entity: bumps the index's generation and puts it on the free list, or retires the
    /// index when its generations are used up. Returns `false` for a stale or unknown handle (nothing changes).
    pub fn free(&mut self, entity: Entity) -> bool {
        self.flush_pending();
        let Some(slot) = self.slots.get_mut(entity.index as usize) else {
            return false;
        };
        if slot.generation != entity.generation {
            return false;
        }
        match slot.state {
            State::Alive => self.live -= 1,
            State::Reserved => self.reserved -= 1,
            State::Free | State::Retired => return false,
        }
        if slot.generation.get() >= self.max_generation {
            slot.state = State::Retired;
            self.retired += 1;
        } else {
            slot.state = State::Free;
            slot.generation = slot.generation.saturating_add(1);
            self.free.push(entity.index);
        }
        true
    }

    /// Frees `entity` if it is reserved (and not alive yet); whether it was. Alive entities are left alone.
    pub(crate) fn release(&mut self, entity: Entity) -> bool {
        self.is_reserved(entity) && self.free(entity)
    }

    /// Whether `entity` is alive (spawned, not despawned, generation matches).
    #[inline]
    pub fn is_alive(&self, entity: Entity) -> bool {
        alive_in(&self.slots, entity)
    }

    /// [`Entities::is_alive`] with the slots bound once: for loops over many handles.
    #[inline]
    pub(crate) fn alive_test(&self) -> AliveTest<'_> {
        AliveTest(&self.slots)
    }

    /// Whether `entity` is reserved by a command buffer and not applied yet.
    pub fn is_reserved(&self, entity: Entity) -> bool {
        match self.slots.get(entity.index as usize) {
            Some(slot) if slot.generation != entity.generation => false,
            Some(slot) if slot.state == State::Reserved => true,
            _ => self.is_pending(entity),
        }
    }

    /// Whether `entity` was reserved through `&self` and has no slot yet.
    #[cold]
    fn is_pending(&self, entity: Entity) -> bool {
        let pending = self.pending.load(Ordering::Acquire) as usize;
        if pending == 0 {
            return false;
        }
        let from_free = pending.min(self.free.len());
        let index = entity.index as usize;
        if index < self.slots.len() {
            self.slots[index].state == State::Free && self.free[self.free.len() - from_free..].contains(&entity.index)
        } else {
            entity.generation == NonZeroU32::MIN && index - self.slots.len() < pending - from_free
        }
    }

    /// Whether `index` is reserved by a command buffer, under any generation.
    pub(crate) fn index_is_reserved(&self, index: u32) -> bool {
        match self.slots.get(index as usize) {
            Some(slot) if slot.state == State::Reserved => true,
            Some(slot) => self.is_reserved(Entity { index, generation: slot.generation }),
            None => self.is_reserved(Entity { index, generation: NonZeroU32::MIN }),
        }
    }

    /// The live entity at `index`, if any.
    #[inline]
    pub fn alive_at(&self, index: u32) -> Option<Entity> {
        match self.slots.get(index as usize) {
            Some(slot) if slot.state == State::Alive => Some(Entity { index, generation: slot.generation }),
            _ => None,
        }
    }

    /// Live entities in index order.
    pub fn iter(&self) -> impl Iterator<Item = Entity> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.state == State::Alive)
            .map(|(index, slot)| Entity { index: index as u32, generation: slot.generation })
    }

    /// Number of live entities.
    pub fn len(&self) -> u32 {
        self.live
    }

    /// Whether no entity is alive.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Number of handles reserved and not yet activated.
    pub fn reserved(&self) -> u32 {
        self.reserved + self.pending.load(Ordering::Acquire)
    }

    /// The maximum number of live plus reserved entities.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Indices retired for good because their generations were used up.
    pub fn retired(&self) -> u32 {
        self.retired
    }

    /// One past the highest index ever handed out: the length per-entity arrays must cover.
    pub fn index_bound(&self) -> u32 {
        self.slots.len() as u32
    }

    /// Makes room for `additional` more indices.
    pub(crate) fn reserve_indices(&mut self, additional: usize) {
        self.slots.reserve(additional.saturating_sub(self.free.len()));
    }

    /// Bytes held by the allocator (capacity, not length).
    pub fn bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>() + self.free.capacity() * 4
    }

    /// Frees every entity at once (generations bumped as by [`Entities::free`]).
    pub fn clear(&mut self) {
        self.flush_pending();
        self.unrecorded.clear();
        for index in 0..self.slots.len() as u32 {
            let slot = self.slots[index as usize];
            if matches!(slot.state, State::Alive | State::Reserved) {
                self.free(Entity { index, generation: slot.generation });
            }
        }
    }

    /// The allocator's whole state, for a snapshot: the generation of every index, the free list in its order (the
    /// next spawns take its indices from the end), the retired indices and the capacity. `None` while handles are
    /// reserved by a command buffer (apply or discard it first: a reserved handle belongs to no saved entity).
    pub fn state(&self) -> Option<AllocatorState> {
        if self.reserved() > 0 {
            return None;
        }
        Some(AllocatorState {
            capacity: self.capacity,
            max_generation: self.max_generation,
            generations: self.slots.iter().map(|slot| slot.generation.get()).collect(),
            free: self.free.clone(),
            retired: (0..self.slots.len() as u32).filter(|&i| self.slots[i as usize].state == State::Retired).collect(),
        })
    }

    /// Rebuilds an allocator from [`Entities::state`]: every index neither free nor retired is alive, with its
    /// generation. A state that no allocator could have been in is refused with the reason, and nothing is built.
    pub fn from_state(state: &AllocatorState) -> Result<Self, String> {
        let n = state.generations.len();
        if n > DEFERRED_MIN as usize {
            return Err(format!("{n} entity indices: more than a world can hand out"));
        }
        if state.max_generation == 0 {
            return Err("the maximum generation is 0 (at least 1)".into());
        }
        let mut slots = Vec::with_capacity(n);
        for (index, &generation) in state.generations.iter().enumerate() {
            match NonZeroU32::new(generation) {
                Some(generation) if generation.get() <= state.max_generation => {
                    slots.push(Slot { generation, state: State::Alive })
                }
                _ => {
                    return Err(format!(
                        "entity index {index} has generation {generation}, outside 1..={}",
                        state.max_generation
                    ))
                }
            }
        }
        let mut mark = |list: &[u32], what: &str, to: State| -> Result<u32, String> {
            for &index in list {
                let Some(slot) = slots.get_mut(index as usize) else {
                    return Err(format!("{what} index {index} is out of range (the allocator has {n} indices)"));
                };
                if slot.state != State::Alive {
                    return Err(format!("index {index} is listed twice among the free and retired indices"));
                }
                slot.state = to;
            }
            Ok(list.len() as u32)
        };
        let free = mark(&state.free, "free", State::Free)?;
        let retired = mark(&state.retired, "retired", State::Retired)?;
        if let Some(index) = state.retired.iter().find(|&&i| slots[i as usize].generation.get() != state.max_generation)
        {
            return Err(format!("retired index {index} has not used up its generations"));
        }
        let live = n as u32 - free - retired;
        if live > state.capacity {
            return Err(format!("{live} live entities exceed the capacity of {}", state.capacity));
        }
        Ok(Self {
            slots,
            free: state.free.clone(),
            capacity: state.capacity,
            max_generation: state.max_generation,
            live,
            reserved: 0,
            retired,
            pending: AtomicU32::new(0),
            unrecorded: Vec::new(),
        })
    }

    /// Whether `entity` could have been handed out by this allocator: alive now, or stale (an earlier generation of
    /// an index it has used). A snapshot's stored handles must pass this; one that fails was made up or corrupted.
    pub fn was_handed_out(&self, entity: Entity) -> bool {
        match self.slots.get(entity.index as usize) {
            Some(slot) if slot.state == State::Free => entity.generation < slot.generation,
            Some(slot) => entity.generation <= slot.generation,
            None => false,
        }
    }

    #[cfg(test)]
    pub(crate) fn force_generation(&mut self, index: u32, generation: NonZeroU32) {
        self.flush_pending();
        let slot = &mut self.slots[index as usize];
        assert_eq!(slot.state, State::Free, "force_generation only on free slots");
        slot.generation = generation;
    }

    /// Panics with a message naming the broken invariant (free list, counters, capacity, reservations). For tests.
    #[doc(hidden)]
    pub fn assert_invariants(&self) {
        let mut seen = vec![false; self.slots.len()];
        for &index in &self.free {
            let slot = self.slots[index as usize];
            assert_eq!(slot.state, State::Free, "free list holds index {index} whose slot is {:?}", slot.state);
            assert!(!seen[index as usize], "index {index} is on the free list twice");
            seen[index as usize] = true;
        }
        let count = |s: State| self.slots.iter().filter(|slot| slot.state == s).count() as u32;
        assert_eq!(count(State::Alive), self.live, "live count drifted");
        assert_eq!(count(State::Reserved), self.reserved, "reserved count drifted");
        assert_eq!(count(State::Retired), self.retired, "retired count drifted");
        assert_eq!(count(State::Free) as usize, self.free.len(), "a free slot is missing from the free list");
        let pending = self.pending.load(Ordering::Acquire);
        assert!(self.live + self.reserved + pending <= self.capacity, "more entities than the capacity");
        for &entity in &self.unrecorded {
            assert!(self.is_reserved(entity), "unrecorded reservation {entity:?} is not reserved");
        }
    }
}

/// Handles reserved through a shared borrow ([`World::reserve_entities`](super::World::reserve_entities)), in
/// the order the allocator hands them out; `len()` is how many were reserved.
#[derive(Clone, Debug)]
pub struct ReservedHandles<'a> {
    entities: &'a Entities,
    next: u32,
    end: u32,
}

impl Iterator for ReservedHandles<'_> {
    type Item = Entity;
    fn next(&mut self) -> Option<Entity> {
        if self.next == self.end {
            return None;
        }
        self.next += 1;
        Some(self.entities.pending_handle(self.next - 1))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.end - self.next) as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for ReservedHandles<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_many_hands_out_what_alloc_would() {
        // Two allocators in the same state (holes on the free list, a retired index); one allocates one at a time.
        let mut one = Entities::with_max_generation(40, 3);
        let handles: Vec<Entity> = (0..30).map(|_| one.alloc().unwrap()).collect();
        for &e in handles.iter().step_by(3) {
            one.free(e);
        }
        let retired = one.alloc().unwrap();
        one.free(retired);
        let again = one.alloc().unwrap();
        one.free(again); // generation 3: this index retires
        let mut many = one.clone();
        assert_eq!(many.room(), one.room());
        let expected: Vec<Entity> = (0..many.room()).map(|_| one.alloc().unwrap()).collect();
        assert!(one.alloc().is_err());
        let mut got = vec![Entity::from_parts(99, NonZeroU32::MIN)]; // appended to, not replaced
        many.alloc_many(many.room(), &mut got);
        assert_eq!(&got[1..], &expected[..]);
        assert_eq!(many.room(), 0);
        assert_eq!(many.len(), one.len());
        many.assert_invariants();
    }

    #[test]
    #[should_panic(expected = "alloc_many of 3 entities with room for 2")]
    fn alloc_many_refuses_more_than_the_room() {
        let mut entities = Entities::new(2);
        entities.alloc_many(3, &mut Vec::new());
    }

    #[test]
    fn reserve_many_hands_out_what_reserve_would() {
        let mut one = Entities::new(10);
        let handles: Vec<Entity> = (0..5).map(|_| one.alloc().unwrap()).collect();
        one.free(handles[1]);
        one.free(handles[3]);
        let mut many = one.clone();
        let expected: Vec<Entity> = (0..4).map(|_| one.reserve().unwrap()).collect();
        let got: Vec<Entity> = many.reserve_many(3).chain(many.reserve_many(1)).collect();
        assert_eq!(got, expected);
        assert!(got.iter().all(|&e| many.is_reserved(e) && !many.is_alive(e)));
        assert_eq!((many.reserved(), many.room()), (4, one.room()));
        many.assert_invariants();
        many.flush_pending();
        assert_eq!(many.unrecorded, expected);
        assert_eq!(many.alloc(), one.alloc(), "the flush took the slots `reserve` would");
        many.assert_invariants();
        many.release_unrecorded();
        assert_eq!(many.reserved(), 0);
        many.assert_invariants();
    }

    #[test]
    fn alloc_at_keeps_the_free_list_consistent() {
        let mut entities = Entities::new(10);
        let all: Vec<Entity> = (0..4).map(|_| entities.alloc().unwrap()).collect();
        for &e in &all[..3] {
            entities.free(e);
        }
        let at = Entity::from_parts(1, NonZeroU32::new(4).unwrap());
        assert_eq!(entities.alloc_at(at), Ok(()));
        assert_eq!(entities.free, [0, 2], "index 1 left the middle of the list, the others kept their order");
        entities.assert_invariants();
        let far = Entity::from_parts(7, NonZeroU32::MIN);
        assert_eq!(entities.alloc_at(far), Ok(()));
        assert_eq!(entities.free, [0, 2, 6, 5, 4]);
        assert_eq!(entities.index_bound(), 8);
        entities.assert_invariants();
        assert_eq!(entities.alloc_at(far), Err(SpawnAtError::Live(far)));
        let err = SpawnAtError::Live(far).to_string();
        assert_eq!(err, "cannot spawn at index 7: the live entity 7v1 holds it");
    }

    #[test]
    fn handles_are_eight_bytes() {
        assert_eq!(std::mem::size_of::<Entity>(), 8);
        assert_eq!(std::mem::size_of::<Option<Entity>>(), 8);
    }

    #[test]
    fn bits_round_trip() {
        let e = Entity::from_parts(7, NonZeroU32::new(3).unwrap());
        assert_eq!(Entity::from_bits(e.to_bits()), Some(e));
        assert_eq!(Entity::from_bits(7), None);
    }

    #[test]
    fn free_bumps_generation_and_recycles() {
        let mut entities = Entities::new(10);
        let a = entities.alloc().unwrap();
        let b = entities.alloc().unwrap();
        assert!(entities.free(a));
        assert!(!entities.free(a), "double free must be refused");
        let c = entities.alloc().unwrap();
        assert_eq!(c.index(), a.index());
        assert_eq!(c.generation().get(), a.generation().get() + 1);
        assert!(!entities.is_alive(a));
        assert!(entities.is_alive(b) && entities.is_alive(c));
        entities.assert_invariants();
    }

    #[test]
    fn capacity_is_enforced_without_losing_anything() {
        let mut entities = Entities::new(3);
        let all: Vec<_> = (0..3).map(|_| entities.alloc().unwrap()).collect();
        assert_eq!(entities.alloc(), Err(WorldFull { capacity: 3 }));
        assert_eq!(entities.reserve(), Err(WorldFull { capacity: 3 }));
        assert!(all.iter().all(|&e| entities.is_alive(e)));
        entities.free(all[1]);
        assert!(entities.alloc().is_ok());
        entities.assert_invariants();
    }

    #[test]
    fn exhausted_index_is_retired_for_good() {
        let mut entities = Entities::with_max_generation(4, 3);
        let mut e = entities.alloc().unwrap();
        let index = e.index();
        for expected in 2..=3 {
            entities.free(e);
            e = entities.alloc().unwrap();
            assert_eq!((e.index(), e.generation().get()), (index, expected));
        }
        entities.free(e);
        assert_eq!(entities.retired(), 1);
        let next = entities.alloc().unwrap();
        assert_ne!(next.index(), index, "a retired index was handed out again");
        entities.assert_invariants();
    }

    #[test]
    fn generation_exhaustion_at_u32_max() {
        let mut entities = Entities::new(2);
        let e = entities.alloc().unwrap();
        entities.free(e);
        entities.force_generation(e.index(), NonZeroU32::new(u32::MAX).unwrap());
        let last = entities.alloc().unwrap();
        assert_eq!((last.index(), last.generation().get()), (e.index(), u32::MAX));
        entities.free(last);
        assert_eq!(entities.retired(), 1);
        assert!(!entities.is_alive(last));
        assert_ne!(entities.alloc().unwrap().index(), e.index());
        entities.assert_invariants();
    }

    #[test]
    fn reserved_handles_are_not_alive_until_activated() {
        let mut entities = Entities::new(1);
        let r = entities.reserve().unwrap();
        assert!(!entities.is_alive(r) && entities.is_reserved(r));
        assert!(entities.alloc().is_err(), "a reservation counts against the capacity");
        assert!(entities.activate(r));
        assert!(!entities.activate(r));
        assert!(entities.is_alive(r));
        entities.assert_invariants();
    }

    #[test]
    fn errors_and_handles_print_what_they_mean() {
        let e = Entity::from_parts(7, NonZeroU32::new(3).unwrap());
        assert_eq!((format!("{e}"), format!("{e:?}")), ("7v3".to_string(), "7v3".to_string()));
        assert_eq!(format!("{}", Entity::deferred(0, 2)), "deferred#2");
        assert_eq!(format!("{}", Entity::deferred(3, 2)), "deferred#2 of buffer 3");
        assert_eq!(format!("{}", Entity::deferred_in_piece(3, 5, 2)), "deferred#2 of piece 5 of buffer 3");
        assert!(
            Entity::deferred_in_piece(0, 0, 1).is_deferred()
                && Entity::deferred_in_piece(0, 0, 1).deferred_piece() == Some(0)
        );
        assert_eq!(WorldFull { capacity: 5 }.to_string(), "world is full: it holds its capacity of 5 entities");
        assert_eq!(NoSuchEntity(e).to_string(), "no such entity: 7v3 is stale or was never spawned");
        assert_eq!(ComponentError::NoSuchEntity(e).to_string(), NoSuchEntity(e).to_string());
        let missing = ComponentError::MissingComponent { entity: e, component: "Pos" };
        assert_eq!(missing.to_string(), "entity 7v3 has no `Pos` component");
        assert_eq!(Entity::from_bits(e.to_bits()), Some(e));
        assert_eq!(e.to_bits(), 3 << 32 | 7);
    }

    #[test]
    fn alive_at_and_the_counters_see_only_what_they_name() {
        let mut entities = Entities::with_max_generation(4, 1);
        assert!(entities.is_empty());
        let alive = entities.alloc().unwrap();
        let reserved = entities.reserve().unwrap();
        let retired = entities.alloc().unwrap();
        entities.free(retired); // generation 1 is the last: the index retires
        let freed = entities.alloc().unwrap();
        entities.free(freed);
        assert_eq!(entities.alive_at(alive.index()), Some(alive));
        for gone in [reserved, retired, freed] {
            assert_eq!(entities.alive_at(gone.index()), None, "{gone:?} is not alive");
        }
        assert_eq!(entities.alive_at(99), None);
        assert_eq!((entities.len(), entities.reserved(), entities.retired()), (1, 1, 2));
        assert!(!entities.is_empty());
        assert!(entities.release(reserved) && !entities.release(reserved) && !entities.release(alive));
        assert_eq!((entities.len(), entities.reserved()), (1, 0));
        entities.assert_invariants();
    }

    #[test]
    fn bytes_count_the_slots_and_the_free_list_by_capacity() {
        let mut entities = Entities::new(100);
        assert_eq!(entities.bytes(), 0);
        entities.reserve_indices(10);
        let slot = std::mem::size_of::<Slot>();
        assert!(entities.slots.capacity() >= 10, "reserve_indices made room");
        assert_eq!(entities.bytes(), entities.slots.capacity() * slot);
        let e = entities.alloc().unwrap();
        entities.free(e);
        let expected = entities.slots.capacity() * slot + entities.free.capacity() * 4;
        assert!(entities.free.capacity() >= 1);
        assert_eq!(entities.bytes(), expected);
        // Indices on the free list need no new slots.
        let before = entities.slots.capacity();
        entities.reserve_indices(1);
        assert_eq!(entities.slots.capacity(), before);
    }

    #[test]
    fn state_round_trips_and_impossible_states_are_refused() {
        let mut entities = Entities::with_max_generation(8, 2);
        let all: Vec<Entity> = (0..6).map(|_| entities.alloc().unwrap()).collect();
        entities.free(all[1]);
        entities.free(all[4]);
        let again = entities.alloc().unwrap(); // index 4 at generation 2
        entities.free(again); // generation 2 is the last: index 4 retires
        entities.free(all[2]);
        let state = entities.state().unwrap();
        assert_eq!(state.free, [1, 2]);
        assert_eq!(state.retired, [4]);
        let mut back = Entities::from_state(&state).unwrap();
        back.assert_invariants();
        assert_eq!((back.len(), back.retired(), back.capacity()), (3, 1, 8));
        assert!(back.was_handed_out(all[1]) && !back.is_alive(all[1]), "stale, yet once handed out");
        assert!(!back.was_handed_out(Entity::from_parts(1, NonZeroU32::new(2).unwrap())), "the next one was not");
        assert!(back.was_handed_out(again) && !back.was_handed_out(Entity::from_parts(6, NonZeroU32::MIN)));
        for _ in 0..5 {
            assert_eq!(back.alloc(), entities.alloc(), "the free list's order was kept");
        }

        let refused = |edit: &dyn Fn(&mut AllocatorState), needle: &str| {
            let mut bad = state.clone();
            edit(&mut bad);
            let why = Entities::from_state(&bad).unwrap_err();
            assert!(why.contains(needle), "{why:?} lacks {needle:?}");
        };
        refused(&|s| s.generations[0] = 0, "generation 0");
        refused(&|s| s.generations[0] = 3, "generation 3, outside 1..=2");
        refused(&|s| s.free.push(1), "listed twice");
        refused(&|s| s.retired.push(1), "listed twice");
        refused(&|s| s.free.push(99), "out of range");
        refused(&|s| s.retired = vec![0], "not used up");
        refused(&|s| s.capacity = 2, "exceed the capacity");
        refused(&|s| s.max_generation = 0, "maximum generation is 0");

        let mut pending = Entities::new(4);
        pending.reserve().unwrap();
        assert_eq!(pending.state(), None, "reserved handles belong to no saved entity");
    }
}
