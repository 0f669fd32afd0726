//! The command buffer: structural changes recorded while systems iterate, applied after the frame.
//!
//! (The examples are on [`Commands`] and [`QueryBorrow::for_each_with_commands`](super::QueryBorrow::for_each_with_commands).)
//!
//! Layout: a list of small `Op`s, and one typed queue per bundle / component type that carries the values. An op
//! names its value by slot, so ops can be put in another order than the values were recorded in (a loop's ops are
//! sorted by the entity that recorded them). Values never go through a `Box` per command, and every vector keeps
//! its capacity when cleared, so after warm-up recording and applying allocate nothing.
//!
//! Order: ops recorded through [`World::commands`] apply in the order recorded. Ops recorded inside a query loop
//! carry the visited entity as a key; when the loop ends they are sorted by (key, order recorded for that key)
//! and appended, so the world after [`World::apply_commands`] does not depend on the order in which the storage
//! yielded the entities. Spawns recorded in a loop are *deferred*: they get their handles when applied, in that
//! same order, because which free index a spawn takes must not depend on the visiting order either.

use super::bundle::{Bundle, TypeList};
use super::component::{BundleIds, ComponentSet};
use super::entity::{Entities, Entity, WorldFull, DEFERRED_PER_BUFFER, MAX_PIECES};
use super::events::TooManyRounds;
use super::storage::Registry;
use super::world::World;
use crate::ecs::Component;
use rustc_hash::FxHashMap;
use std::any::{Any, TypeId};

/// Counts of the last [`World::apply_commands`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyStats {
    /// Commands that changed the world.
    pub applied: u32,
    /// Commands whose target was dead or stale (or lacked the component to remove): skipped, nothing written.
    pub skipped: u32,
    /// Deferred spawns (recorded inside a query loop) refused because the world was full when they were applied;
    /// later commands naming them are skipped.
    pub refused: u32,
}

impl ApplyStats {
    fn count(&mut self, applied: bool) {
        if applied {
            self.applied += 1;
        } else {
            self.skipped += 1;
        }
    }
}

/// Commands applied, skipped and refused since the world was made ([`World::command_totals`]). 64-bit: a game
/// applying 15,000 commands a frame at 60 frames a second would wrap 32-bit counters in under two days.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommandTotals {
    /// Commands that changed the world.
    pub applied: u64,
    /// Commands skipped (dead or stale target, or no component to remove).
    pub skipped: u64,
    /// Deferred spawns refused because the world was full.
    pub refused: u64,
}

impl CommandTotals {
    pub(crate) fn add(&mut self, stats: ApplyStats) {
        self.applied += u64::from(stats.applied);
        self.skipped += u64::from(stats.skipped);
        self.refused += u64::from(stats.refused);
    }
}

#[derive(Clone, Copy)]
enum Op {
    Spawn {
        entity: Entity,
        queue: u32,
        slot: u32,
    },
    Insert {
        entity: Entity,
        queue: u32,
        slot: u32,
    },
    Remove {
        entity: Entity,
        remove: fn(&mut World, Entity) -> bool,
    },
    Despawn(Entity),
    /// Makes `child` a child of `parent` at `index` (`u32::MAX`: at the end).
    Link {
        parent: Entity,
        child: Entity,
        index: u32,
    },
    /// Takes `child` out of `parent`'s list.
    Unlink {
        parent: Entity,
        child: Entity,
    },
}

impl Op {
    /// The op after its buffer's values moved to another buffer (`moved`: per queue, the queue there and the slot
    /// its first value took) and its target renumbered.
    #[inline]
    fn moved(self, moved: &[(u32, u32)], renumber: impl Fn(Entity) -> Entity) -> Op {
        match self {
            Op::Spawn { entity, queue, slot } => {
                let (queue, first) = moved[queue as usize];
                Op::Spawn { entity: renumber(entity), queue, slot: first + slot }
            }
            Op::Insert { entity, queue, slot } => {
                let (queue, first) = moved[queue as usize];
                Op::Insert { entity: renumber(entity), queue, slot: first + slot }
            }
            Op::Remove { entity, remove } => Op::Remove { entity: renumber(entity), remove },
            Op::Despawn(entity) => Op::Despawn(renumber(entity)),
            Op::Link { parent, child, index } => Op::Link { parent: renumber(parent), child: renumber(child), index },
            Op::Unlink { parent, child } => Op::Unlink { parent: renumber(parent), child: renumber(child) },
        }
    }
}

trait ErasedQueue: Any + Send + Sync {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// An empty queue of the same type.
    fn empty(&self) -> Box<dyn ErasedQueue>;
    /// Moves every value of `self` to the end of `into` (a queue of the same type); the slot the first one took.
    fn move_into(&mut self, into: &mut dyn ErasedQueue) -> u32;
    /// An insert queue's op: applies the value in `slot` to `entity`; whether it was applied (the value is dropped
    /// if not). Spawn queues never get insert ops.
    fn apply_insert(&mut self, world: &mut World, entity: Entity, slot: u32) -> bool;
    /// Whether its ops insert one component type (a run of them holds the parallel handlers' events).
    fn inserts_one_type(&self) -> bool {
        false
    }
    /// A spawn queue's run of ops: spawns the bundles in `slots` as `reserved` (pairwise), in order; `out`
    /// receives the handles made alive. Insert queues never get spawn ops.
    fn spawn_run(&mut self, world: &mut World, reserved: &[Entity], slots: &[u32], out: &mut Vec<Entity>);
    /// Drops every value (those of skipped and refused commands included).
    fn clear(&mut self);
    /// Adds to `set` the registered component types its values put (a type not registered has no pool); whether
    /// they are spawned (else inserted), or `None` if it holds no value.
    fn puts(&self, components: &Registry, set: &mut ComponentSet) -> Option<bool>;
}

/// Bundles to spawn, by slot, and their component ids, looked up once per registry (a queue belongs to one world).
struct SpawnQueue<B> {
    bundles: Vec<Option<B>>,
    /// With the number of the registry they were looked up in ([`World::registry_stamp`]): a buffer outlives a
    /// loaded snapshot (the handlers' buffers do), and the new registry may number the types otherwise.
    ids: Option<(u64, BundleIds)>,
}
/// Values to insert, by slot.
struct InsertQueue<T>(Vec<Option<T>>);

impl<B: Bundle> ErasedQueue for SpawnQueue<B> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn empty(&self) -> Box<dyn ErasedQueue> {
        Box::new(SpawnQueue::<B> { bundles: Vec::new(), ids: self.ids })
    }
    fn move_into(&mut self, into: &mut dyn ErasedQueue) -> u32 {
        append_values(&mut self.bundles, &mut typed::<Self>(into).bundles)
    }
    fn apply_insert(&mut self, _: &mut World, _: Entity, _: u32) -> bool {
        unreachable!("insert ops name insert queues")
    }
    fn spawn_run(&mut self, world: &mut World, reserved: &[Entity], slots: &[u32], out: &mut Vec<Entity>) {
        let ids = self.ids(world);
        let bundles = &mut self.bundles;
        let values = slots.iter().map(|&slot| bundles[slot as usize].take().expect("a spawn op without its bundle"));
        world.spawn_reserved_batch(reserved, values, &ids, out);
    }
    fn clear(&mut self) {
        self.bundles.clear();
    }
    fn puts(&self, components: &Registry, set: &mut ComponentSet) -> Option<bool> {
        (!self.bundles.is_empty()).then(|| {
            registered(components, TypeList::of::<B>().types(), set);
            true
        })
    }
}

/// Adds the ids of those of `types` that `components` has registered to `set`.
fn registered(components: &Registry, types: &[TypeId], set: &mut ComponentSet) {
    for id in types.iter().filter_map(|&type_id| components.id_of(type_id)) {
        set.insert(id);
    }
}

impl<B: Bundle> SpawnQueue<B> {
    /// The bundle's component ids in `world`'s registry, looked up once per registry.
    fn ids(&mut self, world: &mut World) -> BundleIds {
        let stamp = world.registry_stamp();
        match self.ids {
            Some((of, ids)) if of == stamp => ids,
            _ => {
                let ids = world.bundle_ids::<B>();
                self.ids = Some((stamp, ids));
                ids
            }
        }
    }
}

impl<T: Component> ErasedQueue for InsertQueue<T> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn empty(&self) -> Box<dyn ErasedQueue> {
        Box::new(InsertQueue::<T>(Vec::new()))
    }
    fn move_into(&mut self, into: &mut dyn ErasedQueue) -> u32 {
        append_values(&mut self.0, &mut typed::<Self>(into).0)
    }
    fn apply_insert(&mut self, world: &mut World, entity: Entity, slot: u32) -> bool {
        let value = self.0[slot as usize].take().expect("an insert op without its value");
        world.insert(entity, value).is_ok()
    }
    fn inserts_one_type(&self) -> bool {
        true
    }
    fn spawn_run(&mut self, _: &mut World, _: &[Entity], _: &[u32], _: &mut Vec<Entity>) {
        unreachable!("spawn ops name spawn queues")
    }
    fn clear(&mut self) {
        self.0.clear();
    }
    fn puts(&self, components: &Registry, set: &mut ComponentSet) -> Option<bool> {
        (!self.0.is_empty()).then(|| {
            registered(components, &[TypeId::of::<T>()], set);
            false
        })
    }
}

/// Bundles to insert into existing entities, by slot.
struct BundleQueue<B>(Vec<Option<B>>);

impl<B: Bundle> ErasedQueue for BundleQueue<B> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn empty(&self) -> Box<dyn ErasedQueue> {
        Box::new(BundleQueue::<B>(Vec::new()))
    }
    fn move_into(&mut self, into: &mut dyn ErasedQueue) -> u32 {
        append_values(&mut self.0, &mut typed::<Self>(into).0)
    }
    fn apply_insert(&mut self, world: &mut World, entity: Entity, slot: u32) -> bool {
        let bundle = self.0[slot as usize].take().expect("an insert op without its bundle");
        world.insert_bundle(entity, bundle).is_ok()
    }
    fn spawn_run(&mut self, _: &mut World, _: &[Entity], _: &[u32], _: &mut Vec<Entity>) {
        unreachable!("spawn ops name spawn queues")
    }
    fn clear(&mut self) {
        self.0.clear();
    }
    fn puts(&self, components: &Registry, set: &mut ComponentSet) -> Option<bool> {
        (!self.0.is_empty()).then(|| {
            registered(components, TypeList::of::<B>().types(), set);
            false
        })
    }
}

/// Slot of the next value pushed onto `values`.
/// A value queue as its own type (queues are keyed by type, so the type is known).
fn typed<Q: ErasedQueue>(queue: &mut dyn ErasedQueue) -> &mut Q {
    queue.as_any_mut().downcast_mut::<Q>().expect("queue keyed by its type")
}

/// Moves every value of `from` to the end of `into`; the slot the first one took there.
fn append_values<T>(from: &mut Vec<Option<T>>, into: &mut Vec<Option<T>>) -> u32 {
    let first = into.len() as u32;
    into.append(from);
    first
}

fn push_slot<T>(values: &mut Vec<Option<T>>, value: T) -> u32 {
    let slot = values.len() as u32;
    values.push(Some(value));
    slot
}

/// The recorded commands. Lives in the [`World`]; record through [`World::commands`] or inside
/// [`QueryBorrow::for_each_with_commands`](super::QueryBorrow::for_each_with_commands).
#[derive(Default)]
pub struct CommandQueue {
    ops: Vec<Op>,
    /// Whether `ops` (or `keyed`) may hold a despawn, and a remove: set when one is recorded or joined, cleared when
    /// the ops go (a stale `true` only keeps an apply from holding removals back).
    despawns: bool,
    removes: bool,
    /// The ops of the query loop recording now, in recorded order; sorted into `ops` when it ends.
    keyed: Vec<Op>,
    /// Their sort keys: the visited entity's index in the high half, the op's position in `keyed` in the low half.
    /// (The entities a loop visits are alive, so their indices differ: the index alone orders them.)
    keys: Vec<u64>,
    queues: Vec<Box<dyn ErasedQueue>>,
    /// The type of each queue (the key it has in `queue_of`).
    queue_types: Vec<TypeId>,
    queue_of: FxHashMap<TypeId, u32>,
    /// Where each queue's values went in the last [`CommandQueue::append`] of this buffer to another, reused.
    moved: Vec<(u32, u32)>,
    /// The queue found last, by type.
    last: Option<(TypeId, u32)>,
    /// Deferred spawns recorded so far (the last deferred handle's number).
    deferred: u32,
    /// A piece of a parallel loop: the target buffer's deferred spawns when the loop began (its own start after).
    base: u32,
    /// The tag in this buffer's deferred handles: 0 for the world's own buffer, another for each system's, so a
    /// handle that leaves its system (through a resource, say) still names its spawn in the world's buffer.
    tag: u8,
    /// The world's buffer: per tag, the deferred spawns of that tag's buffers joined here (its own in `deferred`).
    joined: Vec<u32>,
    /// A piece of a parallel loop: its number among the pieces of the loops into the target buffer, carried by the
    /// deferred handles it makes ([`Entity::deferred_in_piece`]).
    piece: Option<u32>,
    /// The number the next parallel loop's first piece takes (counting on until the buffer is applied, so pieces
    /// of two loops never share a number).
    next_piece: u32,
    /// Per (tag, piece) that joined: what turns a piece's deferred number into its buffer's (added, wrapping).
    /// The world's buffer gathers the joined buffers' entries; applying resolves piece handles through them.
    piece_deltas: PieceDeltas,
    /// The last apply's `starts`, `resolved` and `piece_deltas`: what its deferred handles became, for values
    /// kept outside the world (a system's `Local`) to follow ([`CommandQueue::resolve_applied`]).
    applied: (Vec<u32>, Vec<Option<Entity>>, PieceDeltas),
    /// While applying: where each tag's deferred handles start in `resolved`.
    starts: Vec<u32>,
    /// While applying: the real handle of each deferred spawn (`None` until spawned, or if refused).
    resolved: Vec<Option<Entity>>,
    /// The run of despawns or spawns being applied, reused.
    run: Vec<Entity>,
    /// The value slots of a run of spawns, reused.
    run_slots: Vec<u32>,
    /// The handles a run of spawns made alive, reused.
    spawned: Vec<Entity>,
}

/// Per (tag, piece) of a parallel loop that joined: the piece's offset (see `CommandQueue::piece_deltas`).
type PieceDeltas = FxHashMap<(u8, u32), u32>;

impl CommandQueue {
    /// The number of the value queue of type `Q`, made by `make` the first time. `make` may panic (a bundle that
    /// names a type twice): then nothing has changed.
    #[inline]
    fn queue_index<Q: ErasedQueue>(&mut self, make: impl FnOnce() -> Q) -> u32 {
        let type_id = TypeId::of::<Q>();
        match self.last {
            // Systems record many commands of one type in a row: skip the map then.
            Some((last, k)) if last == type_id => k,
            _ => {
                let k = match self.queue_of.get(&type_id) {
                    Some(&k) => k,
                    None => {
                        let queue = Box::new(make());
                        let k = self.queues.len() as u32;
                        self.queues.push(queue);
                        self.queue_types.push(type_id);
                        self.queue_of.insert(type_id, k);
                        k
                    }
                };
                self.last = Some((type_id, k));
                k
            }
        }
    }

    /// Value queue number `k`, of type `Q`.
    #[inline]
    fn queue_at<Q: ErasedQueue>(&mut self, k: u32) -> &mut Q {
        typed::<Q>(&mut *self.queues[k as usize])
    }

    /// Number of commands recorded and not applied yet.
    pub fn len(&self) -> usize {
        self.ops.len() + self.keyed.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ends a query loop's recording: its ops, sorted by (visited entity, order recorded), join the list.
    pub(crate) fn end_loop(&mut self) {
        // Keys are unique (the low half is the position), so the unstable sort gives the stable order, and needs no
        // buffer: nothing allocates. Sorting 8-byte keys rather than the ops moves a third of the bytes.
        if !self.keys.is_sorted() {
            self.keys.sort_unstable();
        }
        let keyed = &self.keyed;
        self.ops.extend(self.keys.iter().map(|&key| keyed[key as u32 as usize]));
        self.keyed.clear();
        self.keys.clear();
    }

    /// The tag of this buffer's deferred handles.
    pub(crate) fn tag(&self) -> u8 {
        self.tag
    }

    /// A system's buffer, whose deferred handles carry `tag` (not 0, the world's).
    pub(crate) fn tagged(tag: u8) -> Self {
        Self { tag, ..Self::default() }
    }

    /// Moves every command of `other` (a system's buffer) to the end of this one (the world's), in `other`'s
    /// order, leaving `other` empty (with its capacity). Deferred handles keep their buffer's tag, so one that
    /// left its system (stored in a resource and used by a later system) still names its spawn; a buffer joined
    /// twice before an apply has its numbers moved past its first ones. A system's own buffer joins the world's
    /// this way, in the schedule's order.
    pub(crate) fn append(&mut self, other: &mut CommandQueue) {
        other.end_loop();
        if other.ops.is_empty() {
            other.clear_values();
            return;
        }
        let tag = other.tag;
        if self.joined.len() <= tag as usize {
            self.joined.resize(tag as usize + 1, 0);
        }
        let offset = self.joined[tag as usize];
        // Only a buffer joined again before an apply (a system run twice between applies) gets an offset.
        assert!(
            offset + other.deferred < DEFERRED_PER_BUFFER,
            "more than {} deferred spawns of one system's buffer before the world's buffer was applied",
            DEFERRED_PER_BUFFER - 1
        );
        let moved = self.take_values(other);
        let renumber = |entity: Entity| match entity.is_deferred() && entity.deferred_piece().is_none() {
            true => match entity.deferred_parts() {
                (of, n) if of == tag && offset > 0 => Entity::deferred(tag, n + offset),
                _ => entity,
            },
            false => entity,
        };
        self.ops.extend(other.ops.drain(..).map(|op| op.moved(&moved, renumber)));
        self.despawns |= std::mem::take(&mut other.despawns);
        self.removes |= std::mem::take(&mut other.removes);
        // Its pieces' handles resolve here now, past the tag's spawns joined before.
        for (key, delta) in other.piece_deltas.drain() {
            let taken = self.piece_deltas.insert(key, delta.wrapping_add(offset));
            assert!(
                taken.is_none(),
                "more than {MAX_PIECES} pieces of one buffer's parallel loops between two applies"
            );
        }
        // (Both below `DEFERRED_PER_BUFFER`: a buffer refuses more, and a joined tag counts toward it, see `spawn`.)
        self.joined[tag as usize] = offset + other.deferred;
        other.deferred = 0;
        other.moved = moved;
    }

    /// Moves every value of `other` to the end of this buffer's queues of the same types (made here if new);
    /// returns, per queue of `other`, the queue it went to here and the slot its first value took (`other`'s
    /// reused list: hand it back to `other.moved`).
    fn take_values(&mut self, other: &mut CommandQueue) -> Vec<(u32, u32)> {
        let mut moved = std::mem::take(&mut other.moved);
        moved.clear();
        for (queue, &type_id) in other.queues.iter_mut().zip(&other.queue_types) {
            let k = match self.queue_of.get(&type_id) {
                Some(&k) => k,
                None => {
                    let k = self.queues.len() as u32;
                    self.queues.push(queue.empty());
                    self.queue_types.push(type_id);
                    self.queue_of.insert(type_id, k);
                    k
                }
            };
            moved.push((k, queue.move_into(&mut *self.queues[k as usize])));
        }
        moved
    }

    /// Makes this buffer a piece of a parallel loop whose commands join a buffer tagged `tag` that holds `base`
    /// deferred spawns already: the piece numbers its own from `base + 1`, so a handle made before the loop (and
    /// handed into it) is told apart from the piece's. Anything left from a loop whose joining panicked is
    /// dropped (deferred spawns hold no handle yet).
    pub(crate) fn start_piece(&mut self, tag: u8, base: u32) {
        if !self.keyed.is_empty() || !self.ops.is_empty() {
            self.ops.clear();
            self.keyed.clear();
            self.keys.clear();
            self.clear_values();
            (self.despawns, self.removes) = (false, false);
        }
        self.tag = tag;
        self.deferred = base;
        self.base = base;
    }

    /// Deferred spawns recorded in this buffer so far.
    pub(crate) fn deferred_count(&self) -> u32 {
        self.deferred
    }

    /// The number the next parallel loop's first piece takes.
    pub(crate) fn next_piece(&self) -> u32 {
        self.next_piece
    }

    /// Makes this buffer piece `k` of a parallel loop whose first piece is numbered `first`.
    pub(crate) fn number_piece(&mut self, first: u32, k: usize) {
        self.piece = Some((first as usize + k) as u32 % MAX_PIECES);
    }

    /// Records the next commands straight into this buffer, in order, as piece `k` of a parallel loop whose first
    /// piece is numbered `first` would: its deferred spawns numbered from `base` and handed out as the piece's
    /// handles (the same bits as when the piece runs on a thread of its own). Returns what
    /// [`CommandQueue::end_inline_piece`] needs. The spawn ops keep the piece's handles; applying resolves them
    /// through the piece's entry.
    pub(crate) fn start_inline_piece(&mut self, first: u32, k: usize, base: u32) -> u32 {
        self.number_piece(first, k);
        std::mem::replace(&mut self.deferred, base)
    }

    /// Ends a piece recorded in place ([`CommandQueue::start_inline_piece`], which returned `offset`, the deferred
    /// spawns before it): its spawns follow this buffer's, as joining the piece would number them.
    ///
    /// # Panics
    /// As [`CommandQueue::join_piece`].
    pub(crate) fn end_inline_piece(&mut self, offset: u32, base: u32) {
        let number = self.piece.take().expect("a piece is numbered before it runs");
        self.next_piece = (number + 1) % MAX_PIECES;
        let made = self.deferred - base;
        self.follow_piece(number, base, offset, made);
        self.deferred = offset + made;
    }

    /// Notes that piece `number`'s `made` deferred spawns, numbered from `base`, follow this buffer's first `offset`:
    /// its handles kept elsewhere resolve through this entry.
    ///
    /// # Panics
    /// Past [`MAX_PIECES`] pieces between two applies, or past one buffer's deferred spawns.
    fn follow_piece(&mut self, number: u32, base: u32, offset: u32, made: u32) {
        if made > 0 {
            let taken = self.piece_deltas.insert((self.tag, number), offset.wrapping_sub(base));
            assert!(
                taken.is_none(),
                "more than {MAX_PIECES} pieces of one buffer's parallel loops between two applies"
            );
        }
        assert!(
            offset + made < DEFERRED_PER_BUFFER,
            "more than {} deferred spawns in one parallel loop's buffer",
            DEFERRED_PER_BUFFER - 1
        );
    }

    /// Moves the loop commands of `piece` (a piece of a parallel loop, see [`CommandQueue::start_piece`]) into this
    /// buffer's loop, keys and all, leaving `piece` empty: when the loop ends they are sorted with the other
    /// pieces' by visited entity, so the order the pieces join in does not matter. Its deferred handles are
    /// numbered on from this buffer's.
    ///
    /// # Panics
    /// If the pieces together recorded more deferred spawns than one buffer holds.
    pub(crate) fn join_piece(&mut self, piece: &mut CommandQueue) {
        debug_assert!(piece.ops.is_empty(), "a piece records loop commands only");
        let number = piece.piece.take().expect("a piece is numbered before it runs");
        self.next_piece = (number + 1) % MAX_PIECES;
        if piece.keyed.is_empty() {
            piece.clear_values();
            return;
        }
        // The piece's own spawns are numbered past `base`; they move to follow this buffer's spawns so far, and
        // its handles kept elsewhere (another piece's commands, a value) resolve through its entry.
        let (tag, base, offset) = (self.tag, piece.base, self.deferred);
        let made = piece.deferred - base;
        self.follow_piece(number, base, offset, made);
        let moved = self.take_values(piece);
        let renumber = |entity: Entity| match entity.deferred_piece() == Some(number) {
            true => match entity.deferred_parts() {
                (of, n) if of == tag => Entity::deferred(tag, n - base + offset),
                _ => entity,
            },
            false => entity,
        };
        let base = self.keyed.len() as u64;
        self.keyed.extend(piece.keyed.drain(..).map(|op| op.moved(&moved, renumber)));
        self.despawns |= std::mem::take(&mut piece.despawns);
        self.removes |= std::mem::take(&mut piece.removes);
        // A key is (visited index, position in its buffer's loop): the position moves past this buffer's.
        self.keys.extend(piece.keys.drain(..).map(|key| key + base));
        self.deferred = offset + made;
        piece.deferred = 0;
        piece.base = 0;
        piece.moved = moved;
    }

    /// The live handle a command's target stands for: itself, or for a deferred handle the entity its spawn made
    /// (`None` if that spawn was refused, not applied yet, or belongs to another buffer).
    fn resolve(resolved: &[Option<Entity>], starts: &[u32], pieces: &PieceDeltas, entity: Entity) -> Option<Entity> {
        if entity.is_deferred() {
            let (tag, n) = entity.deferred_parts();
            let n = match entity.deferred_piece() {
                Some(piece) => n.wrapping_add(*pieces.get(&(tag, piece))?),
                None => n,
            };
            let start = *starts.get(tag as usize)?;
            let end = starts.get(tag as usize + 1).copied().unwrap_or(resolved.len() as u32);
            let at = start + n - 1;
            if n == 0 || at >= end {
                return None; // a handle of a buffer not joined here, or from an earlier frame's
            }
            resolved[at as usize]
        } else {
            Some(entity)
        }
    }

    /// Lays out `resolved`: the world's own deferred spawns (tag 0), then each joined tag's.
    fn lay_out_resolved(&mut self) {
        self.starts.clear();
        let mut total = 0;
        for tag in 0..self.joined.len().max(1) {
            self.starts.push(total);
            total += if tag == 0 { self.deferred } else { self.joined[tag] };
        }
        self.resolved.clear();
        self.resolved.resize(total as usize, None);
    }

    /// Applies every command in order, then clears (keeping capacity).
    ///
    /// Inserts and removes apply one at a time. A *stretch* of consecutive spawns and despawns applies as: all its
    /// despawns (one [`World::despawn_batch`], which visits each pool once), then its spawns in order (each run of
    /// one bundle type resolves its pools once; deferred spawns reserve their handles here). The only differences
    /// from one by one: a spawn may take an index a later despawn of the stretch freed, and in a full world a
    /// deferred spawn may fit thanks to a later despawn of the stretch. A stretch ends before a despawn of an
    /// entity a spawn of the stretch makes, so nothing is despawned before it exists.
    pub(crate) fn apply(&mut self, world: &mut World) -> ApplyStats {
        self.end_loop(); // no-op: a loop's recording ends with the loop
                         // An apply inside another's run of inserts (a reserved handle settling) holds runs of its own.
        let outer_run = world.take_held();
        // An outer apply's held removals go first: this one's ops may put where that one's are held.
        world.release_removals();
        self.hold_removals(world);
        let mut stats = ApplyStats::default();
        self.lay_out_resolved();
        let (ops, run, slots, resolved) = (&self.ops, &mut self.run, &mut self.run_slots, &mut self.resolved);
        let pieces = &self.piece_deltas;
        let starts = &self.starts;
        let mut last_piece: Option<((u8, u32), u32)> = None;
        let mut at = 0;
        while at < ops.len() {
            match ops[at] {
                Op::Insert { queue, .. } => {
                    // A run of inserts of one type: the events of its parallel handlers are held until it ends.
                    let inserts = &mut self.queues[queue as usize];
                    world.events.holding = inserts.inserts_one_type();
                    while let Some(&Op::Insert { entity, queue: next, slot }) = ops.get(at) {
                        if next != queue {
                            break;
                        }
                        at += 1;
                        match Self::resolve(resolved, starts, pieces, entity) {
                            Some(entity) => stats.count(inserts.apply_insert(world, entity, slot)),
                            None => stats.skipped += 1,
                        }
                    }
                    world.fire_held();
                }
                Op::Remove { entity, remove } => {
                    at += 1;
                    match Self::resolve(resolved, starts, pieces, entity) {
                        Some(entity) => stats.count(remove(world, entity)),
                        None => stats.skipped += 1,
                    }
                }
                Op::Link { parent, child, index } => {
                    at += 1;
                    match (
                        Self::resolve(resolved, starts, pieces, parent),
                        Self::resolve(resolved, starts, pieces, child),
                    ) {
                        (Some(parent), Some(child)) => stats.count(match index {
                            u32::MAX => world.add_child(parent, child).is_ok(),
                            index => world.insert_child(parent, index as usize, child).is_ok(),
                        }),
                        _ => stats.skipped += 1,
                    }
                }
                Op::Unlink { parent, child } => {
                    at += 1;
                    match (
                        Self::resolve(resolved, starts, pieces, parent),
                        Self::resolve(resolved, starts, pieces, child),
                    ) {
                        (Some(parent), Some(child)) => stats.count(world.remove_child(parent, child).is_ok()),
                        _ => stats.skipped += 1,
                    }
                }
                Op::Spawn { .. } | Op::Despawn(_) => {
                    // The stretch: its despawns first, as one batch.
                    let start = at;
                    let mut spawns = false;
                    run.clear();
                    while let Some(&op) = ops.get(at) {
                        match op {
                            Op::Spawn { .. } => spawns = true,
                            Op::Despawn(entity) => {
                                // A target not alive yet may be spawned in this stretch: end it here. (Only
                                // asked once the stretch holds a spawn: the allocator lookup is a load per despawn.)
                                if spawns && (entity.is_deferred() || world.entities().is_reserved(entity)) {
                                    break;
                                }
                                match Self::resolve(resolved, starts, pieces, entity) {
                                    Some(entity) => run.push(entity),
                                    None => stats.skipped += 1,
                                }
                            }
                            _ => break,
                        }
                        at += 1;
                    }
                    if !run.is_empty() {
                        let despawned = world.despawn_batch(run) as u32;
                        stats.applied += despawned;
                        stats.skipped += run.len() as u32 - despawned;
                    }
                    // Then its spawns, in order, a run of one bundle type at a time.
                    let mut spawn_ops = ops[start..at].iter().filter_map(|op| match *op {
                        Op::Spawn { entity, queue, slot } => Some((entity, queue, slot)),
                        _ => None,
                    });
                    let mut next = spawn_ops.next();
                    while let Some((_, queue, _)) = next {
                        run.clear();
                        slots.clear();
                        while let Some((entity, same, slot)) = next.filter(|&(_, same, _)| same == queue) {
                            debug_assert_eq!(same, queue);
                            if entity.is_deferred() {
                                match world.reserve_for_apply() {
                                    Ok(handle) => {
                                        let (tag, n) = entity.deferred_parts();
                                        // A piece recorded in place keeps its own numbers (see `start_inline_piece`);
                                        // its spawns come together, so the last piece's entry is kept at hand.
                                        let n = match entity.deferred_piece() {
                                            Some(piece) => {
                                                let delta = match last_piece {
                                                    Some((key, delta)) if key == (tag, piece) => delta,
                                                    _ => pieces[&(tag, piece)],
                                                };
                                                last_piece = Some(((tag, piece), delta));
                                                n.wrapping_add(delta)
                                            }
                                            None => n,
                                        };
                                        match starts.get(tag as usize) {
                                            Some(&start) => resolved[(start + n - 1) as usize] = Some(handle),
                                            None => unreachable!("a deferred spawn's tag is laid out"),
                                        }
                                        run.push(handle);
                                        slots.push(slot);
                                    }
                                    Err(WorldFull { .. }) => stats.refused += 1,
                                }
                            } else {
                                run.push(entity);
                                slots.push(slot);
                            }
                            next = spawn_ops.next();
                        }
                        self.spawned.clear();
                        self.queues[queue as usize].spawn_run(world, run, slots, &mut self.spawned);
                        stats.applied += self.spawned.len() as u32;
                        stats.skipped += (run.len() - self.spawned.len()) as u32;
                    }
                }
            }
        }
        world.release_removals();
        if !resolved.is_empty() {
            // Deferred handles kept in values of the registered holder types become the spawns' handles.
            world.settle_held_handles(&|entity| Self::resolve(resolved, starts, pieces, entity));
        }
        self.ops.clear();
        (self.despawns, self.removes) = (false, false);
        let applied = &mut self.applied;
        std::mem::swap(&mut applied.0, &mut self.starts);
        std::mem::swap(&mut applied.1, &mut self.resolved);
        applied.2.clear();
        std::mem::swap(&mut applied.2, &mut self.piece_deltas);
        self.resolved.clear();
        self.clear_values();
        world.put_held(outer_run);
        stats
    }

    /// Holds back the despawns' removals from the pools this buffer's ops do not put
    /// ([`World::hold_removals`]): when it despawns, and removes nothing (a remove op's type is not known here).
    fn hold_removals(&mut self, world: &mut World) {
        if !self.despawns || self.removes {
            return;
        }
        let (mut puts, mut inserted, mut spawns) = (ComponentSet::EMPTY, ComponentSet::EMPTY, false);
        for queue in &self.queues {
            let mut set = ComponentSet::EMPTY;
            if let Some(spawn) = queue.puts(&world.components, &mut set) {
                for id in set.iter() {
                    puts.insert(id);
                    if !spawn {
                        inserted.insert(id);
                    }
                }
                spawns |= spawn;
            }
        }
        world.hold_removals(&puts, &inserted, spawns);
    }

    /// Whether the last apply made deferred spawns (or named any).
    pub(crate) fn applied_deferred(&self) -> bool {
        !self.applied.1.is_empty()
    }

    /// What deferred handle `entity` of the last apply became: the spawned entity's handle, or `None` if its spawn
    /// was refused or is not of that apply. Any other handle is itself.
    pub(crate) fn resolve_applied(&self, entity: Entity) -> Option<Entity> {
        let (starts, resolved, pieces) = &self.applied;
        Self::resolve(resolved, starts, pieces, entity)
    }

    /// Whether deferred spawns are recorded here and not applied.
    pub(crate) fn has_deferred(&self) -> bool {
        self.deferred > 0 || self.joined.iter().any(|&n| n > 0) || !self.piece_deltas.is_empty()
    }

    /// Drops every value and forgets the deferred handles.
    ///
    /// A value's `drop` may panic: every queue is still cleared, then the first panic goes on. (Ops name their values
    /// by slot, so a queue left holding values could not feed them to another buffer's ops anyway.)
    fn clear_values(&mut self) {
        self.deferred = 0;
        self.joined.iter_mut().for_each(|n| *n = 0);
        self.piece_deltas.clear();
        self.next_piece = 0;
        let mut first_panic = None;
        for queue in &mut self.queues {
            // A `Vec`'s clear sets its length first, so after a panic the queue is empty either way.
            if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| queue.clear())) {
                first_panic.get_or_insert(panic);
            }
        }
        if let Some(panic) = first_panic {
            std::panic::resume_unwind(panic);
        }
    }

    /// Drops every command; handles still reserved for spawns (recorded between queries, or deferred ones a
    /// panicking apply had reserved) are released. Values are dropped last, so a panicking `drop` cannot keep a
    /// reservation.
    pub(crate) fn discard(&mut self, entities: &mut Entities) {
        self.end_loop();
        self.piece = None; // a piece recorded in place that panicked
        for op in self.ops.drain(..) {
            if let Op::Spawn { entity, .. } = op {
                if !entity.is_deferred() {
                    entities.release(entity);
                }
            }
        }
        (self.despawns, self.removes) = (false, false);
        for entity in self.resolved.drain(..).flatten() {
            entities.release(entity);
        }
        self.run.clear();
        self.clear_values();
    }
}

/// Records structural changes (spawn, despawn, insert, remove) into the world's command queue; they land when
/// [`World::apply_commands`] runs (the app does it at the end of every frame). A command whose target is dead or
/// stale by then is skipped and counted, never applied to an entity that took its index.
///
/// There are three ways to get one:
/// - [`World::commands`], between queries: commands apply in the order recorded, and a spawn reserves its handle
///   at once (or says the world is full);
/// - inside a query loop, [`QueryBorrow::for_each_with_commands`](super::QueryBorrow::for_each_with_commands) hands one to
///   each visited row: those commands apply sorted by the visited entity, and a spawn returns a *deferred* handle
///   (see there);
/// - as a system parameter ([`crate::app::system`]): the system's own buffer, in recorded order, joined to the
///   world's after the system runs, in the schedule's order; a spawn returns a deferred handle (systems on several
///   threads must not take handles from the allocator in the order they happen to run). Such a handle also names
///   its spawn in the buffers of the systems after it in the same frame (a resource may carry it there).
///
/// ```
/// use swarm::ecs::World;
/// struct Health(i32);
/// let mut world = World::new();
/// let a = world.spawn((Health(0),)).unwrap();
/// let mut commands = world.commands();
/// let b = commands.spawn((Health(5),)).unwrap(); // a handle at once, alive after apply
/// commands.despawn(a);
/// commands.despawn(a); // a double despawn despawns once
/// commands.insert(b, 1u8); // later commands may target the reserved entity
/// let stats = world.apply_commands();
/// assert_eq!((stats.applied, stats.skipped), (3, 1));
/// assert!(!world.is_alive(a) && world.get::<u8>(b) == Some(&1));
/// ```
pub struct Commands<'w> {
    queue: &'w mut CommandQueue,
    mode: Mode<'w>,
}

enum Mode<'w> {
    /// Between queries: ops in recorded order; spawns reserve from the allocator at once.
    Direct(&'w mut Entities),
    /// Inside a query loop, visiting the entity of index `key` (or a run's insert at that position): ops keyed by
    /// it; spawns deferred.
    Keyed(u32),
    /// A system's own buffer: ops in recorded order; spawns deferred (a handle reserved on one of several threads
    /// would depend on which thread came first).
    Deferred,
}

impl<'w> Commands<'w> {
    pub(crate) fn direct(queue: &'w mut CommandQueue, entities: &'w mut Entities) -> Self {
        Self { queue, mode: Mode::Direct(entities) }
    }

    /// A system's recorder over its own buffer: ops in recorded order, spawns deferred.
    pub(crate) fn deferred(queue: &'w mut CommandQueue) -> Self {
        Self { queue, mode: Mode::Deferred }
    }

    /// The buffer recorded into.
    pub(crate) fn queue(&mut self) -> &mut CommandQueue {
        self.queue
    }

    /// A recorder for a query loop; [`Commands::visit`] sets the row before each call, and
    /// [`Commands::end_loop`] sorts its ops into the buffer when the loop ends (or unwinds).
    pub(crate) fn keyed(queue: &'w mut CommandQueue) -> Self {
        Self { queue, mode: Mode::Keyed(0) }
    }

    /// Makes `entity` the key of the ops recorded next (keyed recorders only).
    #[inline(always)]
    pub(crate) fn visit(&mut self, entity: Entity) {
        self.visit_at(entity.index());
    }

    /// Makes `key` the key of the ops recorded next (keyed recorders only): ops sort by it, then by the order they
    /// were recorded in.
    #[inline(always)]
    pub(crate) fn visit_at(&mut self, key: u32) {
        if let Mode::Keyed(at) = &mut self.mode {
            *at = key;
        }
    }

    /// Ends a keyed recorder's loop (see [`Commands::keyed`]).
    pub(crate) fn end_loop(&mut self) {
        self.queue.end_loop();
    }

    #[inline]
    fn push(&mut self, op: Op) {
        match self.mode {
            Mode::Direct(_) | Mode::Deferred => self.queue.ops.push(op),
            Mode::Keyed(key) => {
                let position = self.queue.keyed.len() as u64;
                self.queue.keys.push(u64::from(key) << 32 | position);
                self.queue.keyed.push(op);
            }
        }
    }

    /// Records a spawn and returns the entity's handle at once. Later commands in the same buffer may target it.
    ///
    /// From [`World::commands`] the handle is reserved now and alive after [`World::apply_commands`]; this fails
    /// if the world is full (reservations count). Inside a query loop, and from a system's `Commands` parameter,
    /// the handle is deferred (see [`Entity::is_deferred`]): the spawn takes a real handle when applied, or is
    /// refused then if the world is full (counted in [`ApplyStats::refused`]), so this fails only past 16,777,215
    /// deferred spawns in one buffer before it is applied.
    ///
    /// # Panics
    /// If the tuple names a component type twice, or one of the hierarchy's (now, not when the buffer is applied).
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Result<Entity, WorldFull> {
        // Checked when the bundle type's queue is made: once per type and world, before anything is reserved.
        let queue = self.queue.queue_index(|| {
            B::assert_puttable();
            SpawnQueue::<B> { bundles: Vec::new(), ids: None }
        });
        let entity = match &mut self.mode {
            Mode::Direct(entities) => entities.reserve()?,
            Mode::Keyed(_) | Mode::Deferred => {
                // The world's buffer counts the deferred spawns of its tag joined from elsewhere (none: its tag is
                // its own) toward the same bound.
                let n = self.queue.deferred + 1;
                if n >= DEFERRED_PER_BUFFER {
                    // Sixteen million deferred spawns in one buffer between applies: refused like a full world.
                    return Err(WorldFull { capacity: DEFERRED_PER_BUFFER - 1 });
                }
                self.queue.deferred = n;
                match self.queue.piece {
                    Some(piece) => Entity::deferred_in_piece(self.queue.tag, piece, n),
                    None => Entity::deferred(self.queue.tag, n),
                }
            }
        };
        let slot = push_slot(&mut self.queue.queue_at::<SpawnQueue<B>>(queue).bundles, bundle);
        self.push(Op::Spawn { entity, queue, slot });
        Ok(entity)
    }

    /// Records a despawn. Skipped at apply time if `entity` is dead by then.
    pub fn despawn(&mut self, entity: Entity) {
        self.queue.despawns = true;
        self.push(Op::Despawn(entity));
    }

    /// Records setting component `T` of `entity` to `value`. Skipped (the value dropped) if `entity` is dead.
    ///
    /// # Panics
    /// For the hierarchy's components (now, not when the buffer is applied): use [`Commands::add_child`] and its
    /// kin.
    pub fn insert<T: Component>(&mut self, entity: Entity, value: T) {
        crate::ecs::hierarchy::refuse_kept::<T>("inserted");
        let queue = self.queue.queue_index(|| InsertQueue::<T>(Vec::new()));
        let slot = push_slot(&mut self.queue.queue_at::<InsertQueue<T>>(queue).0, value);
        self.push(Op::Insert { entity, queue, slot });
    }

    /// Records removing component `T` from `entity`. Skipped if `entity` is dead or lacks `T`.
    pub fn remove<T: Component>(&mut self, entity: Entity) {
        fn remove<T: Component>(world: &mut World, entity: Entity) -> bool {
            world.remove::<T>(entity).is_ok()
        }
        self.queue.removes = true;
        self.push(Op::Remove { entity, remove: remove::<T> });
    }

    /// Records inserting every component of `bundle` into `entity` ([`World::insert_bundle`]). Skipped (the values
    /// dropped) if `entity` is dead.
    ///
    /// # Panics
    /// If the tuple names a component type twice, or one of the hierarchy's (now, not when the buffer is applied).
    pub fn insert_bundle<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        let queue = self.queue.queue_index(|| {
            B::assert_puttable();
            BundleQueue::<B>(Vec::new())
        });
        let slot = push_slot(&mut self.queue.queue_at::<BundleQueue<B>>(queue).0, bundle);
        self.push(Op::Insert { entity, queue, slot });
    }

    /// Records removing every component of bundle type `B` from `entity`, all or nothing
    /// ([`World::remove_bundle`]). Skipped if `entity` is dead or lacks one of them.
    ///
    /// # Panics
    /// If the tuple names a component type twice (now, not when the buffer is applied).
    pub fn remove_bundle<B: Bundle>(&mut self, entity: Entity) {
        fn remove<B: Bundle>(world: &mut World, entity: Entity) -> bool {
            world.remove_bundle::<B>(entity).is_ok()
        }
        B::assert_distinct();
        self.queue.removes = true;
        self.push(Op::Remove { entity, remove: remove::<B> });
    }

    /// Records making `child` the last child of `parent` ([`World::add_child`]). Skipped if refused when applied
    /// (a dead entity, a cycle).
    pub fn add_child(&mut self, parent: Entity, child: Entity) {
        self.push(Op::Link { parent, child, index: u32::MAX });
    }

    /// Records making `child` the child of `parent` at `index` ([`World::insert_child`]). Skipped if refused when
    /// applied (a dead entity, a cycle, a position past the end).
    pub fn insert_child(&mut self, parent: Entity, index: usize, child: Entity) {
        let index = u32::try_from(index).unwrap_or(u32::MAX - 1).min(u32::MAX - 1);
        self.push(Op::Link { parent, child, index });
    }

    /// Records taking `child` out of `parent`'s list ([`World::remove_child`]). Skipped if it is not its child then.
    pub fn remove_child(&mut self, parent: Entity, child: Entity) {
        self.push(Op::Unlink { parent, child });
    }

    /// Number of commands recorded and not applied yet.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// A world's command buffer.
impl World {
    /// A recorder for deferred structural changes, applied by [`World::apply_commands`] in the order recorded.
    /// To record while a query runs, use [`QueryBorrow::for_each_with_commands`](crate::ecs::QueryBorrow::for_each_with_commands).
    pub fn commands(&mut self) -> Commands<'_> {
        Commands::direct(&mut self.commands, &mut self.entities)
    }

    /// Applies the recorded commands (in the order described on [`Commands`]); commands on dead or stale targets
    /// are skipped and counted.
    ///
    /// If a command panics (a component's `drop` when a value is replaced, say), the commands after it are dropped
    /// with their values, the handles reserved for their spawns are released, and the panic goes on: the world
    /// holds what was applied before it, and the next buffer starts empty.
    ///
    /// Lifecycle handlers fire as the commands apply, and the commands they record apply after the buffer, round
    /// by round ([`crate::ecs::events`]); the counts include them.
    ///
    /// # Panics
    /// Also when handlers' commands go past the round limit ([`World::try_apply_commands`] returns the error).
    pub fn apply_commands(&mut self) -> ApplyStats {
        self.try_apply_commands().unwrap_or_else(|error| panic!("{error}"))
    }

    /// [`World::apply_commands`], returning [`TooManyRounds`] if lifecycle handlers' commands went past the round
    /// limit ([`World::set_event_rounds`]): what applied stays, the commands left are dropped.
    pub fn try_apply_commands(&mut self) -> Result<ApplyStats, TooManyRounds> {
        self.apply_buffer()
    }

    /// Drops the recorded commands without applying them; handles they reserved are released, and deferred
    /// handles kept in values of the types registered as holding entities become [`Entity::DEAD`]
    /// ([`World::register_entity_holder`]). If a value's `drop` panics, every reservation is released and every
    /// value dropped first, then the panic goes on.
    pub fn discard_commands(&mut self) {
        let deferred = self.commands.has_deferred();
        self.entities.release_unrecorded();
        self.commands.discard(&mut self.entities);
        if deferred {
            // Their spawns will never be: a deferred handle kept in a value names nothing from now on.
            self.settle_held_handles(&|_| None);
        }
    }

    /// Whether commands are recorded and not yet applied.
    pub fn has_pending_commands(&self) -> bool {
        !self.commands.is_empty() || self.entities.reserved() > 0
    }

    /// Commands applied, skipped and refused since the world was made.
    pub fn command_totals(&self) -> CommandTotals {
        self.totals
    }

    /// Sets the command totals (a loaded snapshot carries them on).
    pub(crate) fn set_command_totals(&mut self, totals: CommandTotals) {
        self.totals = totals;
    }

    /// A tag for a system's own command buffer: 1, 2, ... 255, then 1 again (0 is the world's buffer's). Two
    /// buffers share a tag only past 255 systems with `Commands`; a deferred handle one of them hands to the
    /// other may then name the wrong spawn.
    pub(crate) fn command_tag(&mut self) -> u8 {
        self.command_tags = self.command_tags % 255 + 1;
        self.command_tags
    }

    /// Turns the deferred handles of the last apply that `value` holds (by `settle`) into the spawned entities'
    /// handles, or [`Entity::DEAD`]; nothing if that apply made no deferred spawn.
    pub(crate) fn settle_applied(&self, settle: impl FnOnce(&mut dyn FnMut(&mut Entity))) {
        if self.commands.applied_deferred() {
            let resolve = |entity| self.commands.resolve_applied(entity);
            settle(&mut |entity| crate::ecs::holders::settle_handle(entity, &resolve));
        }
    }

    /// The command buffer, for a system's own buffer to join.
    pub(crate) fn command_queue(&mut self) -> &mut CommandQueue {
        &mut self.commands
    }

    /// The allocator, mutably (to release a dropped buffer's reservations).
    pub(super) fn entities_mut(&mut self) -> &mut Entities {
        &mut self.entities
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The types a buffer's apply holds removals back for, worked out as `apply` starts (then released).
    fn held_types(world: &mut World) -> Vec<crate::ecs::component::ComponentId> {
        let mut queue = std::mem::take(&mut world.commands);
        queue.hold_removals(world);
        let held = world.held_removals.types().iter().collect();
        world.release_removals();
        world.commands = queue;
        held
    }

    #[test]
    fn a_buffer_holds_back_the_removals_of_the_types_it_neither_puts_nor_lets_a_handler_read() {
        let mut world = World::new();
        world.track::<i32>();
        world.track_exact::<u64>();
        let id = |world: &mut World, id: TypeId| world.components.id_of(id).unwrap();
        let a = world.spawn((1u8, 2u16, 3u32, 4i32, 5u64, String::from("drops"))).unwrap();
        let b = world.spawn((1u8,)).unwrap();
        world.add_child(a, b).unwrap();
        let record = |world: &mut World| {
            let mut c = world.commands();
            c.spawn((7u8,)).unwrap();
            c.insert(b, 8u16);
            c.despawn(a);
        };
        record(&mut world);
        let held = held_types(&mut world);
        let mut expected = [TypeId::of::<u32>(), TypeId::of::<i32>()].map(|t| id(&mut world, t));
        expected.sort_unstable();
        // Not the spawned u8, the inserted u16, the exactly tracked u64, the String (drop glue) nor the tree's.
        assert_eq!(held, expected);
        assert!(!world.held_removals.is_on(), "released");
        // What keeps a buffer from holding anything back.
        let nothing = |world: &mut World, case: &str| {
            record(world);
            assert!(held_types(world).is_empty(), "{case}");
            world.discard_commands();
        };
        world.discard_commands();
        world.commands().remove::<u32>(b);
        nothing(&mut world, "a remove op (of a type not known here)");
        let handler = world.on_insert::<u16>(|_, _, _, _| {});
        nothing(&mut world, "a handler of an inserted type");
        world.remove_handler(handler);
        let handler = world.on_spawn(|_, _, _| {});
        nothing(&mut world, "a spawn handler");
        world.remove_handler(handler);
        let handler = world.on_despawn(|_, _, _| {});
        nothing(&mut world, "a despawn handler");
        world.remove_handler(handler);
        let mut c = world.commands();
        c.spawn((7u8,)).unwrap();
        c.insert(b, 8u16);
        assert!(held_types(&mut world).is_empty(), "no despawn");
        world.discard_commands();
        world.set_backend(crate::ecs::Backend::Archetype);
        nothing(&mut world, "the archetype tables");
        world.set_backend(crate::ecs::Backend::SparseSet);
        record(&mut world);
        assert_eq!(held_types(&mut world), expected, "the same buffer again");
        // The tree's types are never held, also when a query made their pools before the first link.
        let mut world = World::new();
        assert_eq!(world.query::<&u32>().without::<crate::ecs::Parent>().count(), 0);
        let a = world.spawn((3u32,)).unwrap();
        world.commands().despawn(a);
        let parent = id(&mut world, TypeId::of::<crate::ecs::Parent>());
        assert!(world.storage.holdable().contains(parent), "the query made the pool, and a parent has no drop glue");
        let u32_id = id(&mut world, TypeId::of::<u32>());
        assert_eq!(held_types(&mut world), [u32_id]);
    }

    #[test]
    fn a_buffer_joined_twice_before_an_apply_keeps_each_handle_on_its_spawn() {
        let mut world = World::new();
        let mut own = CommandQueue::tagged(1);
        let first = Commands::deferred(&mut own).spawn((1u8,)).unwrap();
        Commands::deferred(&mut own).insert(first, 2u16);
        world.command_queue().append(&mut own);
        let second = Commands::deferred(&mut own).spawn((3u8,)).unwrap();
        assert_eq!(first, second, "the buffer numbers afresh once joined");
        Commands::deferred(&mut own).insert(second, 4u16);
        // A handle of the first round, used again by a later buffer: it names the first spawn.
        let mut other = CommandQueue::tagged(2);
        Commands::deferred(&mut other).insert(first, 5u32);
        world.command_queue().append(&mut own);
        world.command_queue().append(&mut other);
        assert_eq!(world.apply_commands().applied, 5);
        let mut rows = Vec::new();
        world.query_ref::<(&u8, &u16, Option<&u32>)>().for_each(|_, (a, b, c)| rows.push((*a, *b, c.copied())));
        rows.sort_unstable();
        assert_eq!(rows, [(1, 2, Some(5)), (3, 4, None)]);
    }

    #[test]
    fn totals_add_up_every_apply() {
        let mut totals = CommandTotals::default();
        totals.add(ApplyStats { applied: 3, skipped: 2, refused: 1 });
        totals.add(ApplyStats { applied: 4, skipped: 5, refused: 6 });
        assert_eq!(totals, CommandTotals { applied: 7, skipped: 7, refused: 7 });
        // 64-bit: past what a 32-bit counter holds.
        for _ in 0..3 {
            totals.add(ApplyStats { applied: u32::MAX, skipped: 0, refused: 0 });
        }
        assert_eq!(totals.applied, 7 + 3 * u64::from(u32::MAX));
    }
}
