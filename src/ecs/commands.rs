//! The command buffer: structural changes recorded while systems iterate, applied after the frame in order.
//!
//! (The example is on [`Commands`].)
//!
//! Layout: a list of small `Op`s in recorded order, and one typed queue per bundle / component type that carries
//! the values (FIFO, in the same order). Values never go through a `Box` per command, and every vector keeps its
//! capacity when cleared, so after warm-up recording and applying allocate nothing.

use super::bundle::{Bundle, BundleIds};
use super::entity::{Entities, Entity, WorldFull};
use super::world::World;
use rustc_hash::FxHashMap;
use std::any::{Any, TypeId};
use std::collections::VecDeque;

/// Counts of the last [`World::apply_commands`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyStats {
    /// Commands that changed the world.
    pub applied: u32,
    /// Commands whose target was dead or stale (or lacked the component to remove): skipped, nothing written.
    pub skipped: u32,
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

#[derive(Clone, Copy)]
enum Op {
    Spawn { entity: Entity, queue: u32 },
    Insert { entity: Entity, queue: u32 },
    Remove { entity: Entity, remove: fn(&mut World, Entity) -> bool },
    Despawn(Entity),
}

trait ErasedQueue: Any {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// An insert queue's op: applies the front value to `entity`; whether it was applied (the value is dropped if
    /// not). Spawn queues never get insert ops.
    fn apply_front(&mut self, world: &mut World, entity: Entity) -> bool;
    /// A spawn queue's run of ops: spawns the front `reserved.len()` bundles as `reserved`, in order; `out`
    /// receives the handles made alive. Insert queues never get spawn ops.
    fn spawn_front(&mut self, world: &mut World, reserved: &[Entity], out: &mut Vec<Entity>);
    fn clear(&mut self);
}

/// Bundles to spawn, and their component ids, looked up once (a queue belongs to one world).
struct SpawnQueue<B> {
    bundles: VecDeque<B>,
    ids: Option<BundleIds>,
}
struct InsertQueue<T>(VecDeque<T>);

impl<B: Bundle> ErasedQueue for SpawnQueue<B> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn apply_front(&mut self, _: &mut World, _: Entity) -> bool {
        unreachable!("insert ops name insert queues")
    }
    fn spawn_front(&mut self, world: &mut World, reserved: &[Entity], out: &mut Vec<Entity>) {
        assert!(reserved.len() <= self.bundles.len(), "spawn ops without their bundles");
        let ids = *self.ids.get_or_insert_with(|| world.bundle_ids::<B>());
        world.spawn_reserved_batch(reserved, self.bundles.drain(..reserved.len()), &ids, out);
    }
    fn clear(&mut self) {
        self.bundles.clear();
    }
}

impl<T: 'static> ErasedQueue for InsertQueue<T> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn apply_front(&mut self, world: &mut World, entity: Entity) -> bool {
        let value = self.0.pop_front().expect("an insert op without its value");
        world.insert(entity, value).is_ok()
    }
    fn spawn_front(&mut self, _: &mut World, _: &[Entity], _: &mut Vec<Entity>) {
        unreachable!("spawn ops name spawn queues")
    }
    fn clear(&mut self) {
        self.0.clear();
    }
}

/// The recorded commands. Lives in the [`World`]; record through [`World::commands`].
#[derive(Default)]
pub(crate) struct CommandQueue {
    ops: Vec<Op>,
    queues: Vec<Box<dyn ErasedQueue>>,
    queue_of: FxHashMap<TypeId, u32>,
    /// The run of despawns or spawns being applied, reused.
    run: Vec<Entity>,
    /// The handles a run of spawns made alive, reused.
    spawned: Vec<Entity>,
}

impl CommandQueue {
    fn queue<Q: ErasedQueue>(&mut self, make: impl FnOnce() -> Q) -> (u32, &mut Q) {
        let next = self.queues.len() as u32;
        let k = *self.queue_of.entry(TypeId::of::<Q>()).or_insert(next);
        if k == next {
            self.queues.push(Box::new(make()));
        }
        let queue = self.queues[k as usize].as_any_mut().downcast_mut::<Q>().expect("queue keyed by its type");
        (k, queue)
    }

    /// Number of commands recorded and not applied yet.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Applies every command in recorded order, then clears (keeping capacity).
    ///
    /// Runs are applied as batches, with the same result as one by one: a run of consecutive despawns goes to
    /// [`World::despawn_batch`], which visits each pool once for the run, and a run of consecutive spawns of one
    /// bundle type resolves its pools once for the run.
    pub(crate) fn apply(&mut self, world: &mut World) -> ApplyStats {
        let mut stats = ApplyStats::default();
        let mut ops = self.ops.drain(..).peekable();
        let run = &mut self.run;
        while let Some(op) = ops.next() {
            match op {
                Op::Insert { entity, queue } => {
                    stats.count(self.queues[queue as usize].apply_front(world, entity));
                }
                Op::Spawn { entity, queue } => {
                    run.clear();
                    run.push(entity);
                    while let Some(&Op::Spawn { entity: next, queue: same }) = ops.peek() {
                        if same != queue {
                            break;
                        }
                        run.push(next);
                        ops.next();
                    }
                    self.spawned.clear();
                    self.queues[queue as usize].spawn_front(world, run, &mut self.spawned);
                    stats.applied += self.spawned.len() as u32;
                    stats.skipped += (run.len() - self.spawned.len()) as u32;
                }
                Op::Remove { entity, remove } => stats.count(remove(world, entity)),
                Op::Despawn(entity) => {
                    run.clear();
                    run.push(entity);
                    while let Some(&Op::Despawn(next)) = ops.peek() {
                        run.push(next);
                        ops.next();
                    }
                    let despawned = world.despawn_batch(run) as u32;
                    stats.applied += despawned;
                    stats.skipped += run.len() as u32 - despawned;
                }
            }
        }
        stats
    }

    /// Drops every command; spawned handles that were reserved are released.
    pub(crate) fn discard(&mut self, entities: &mut Entities) {
        for op in self.ops.drain(..) {
            if let Op::Spawn { entity, .. } = op {
                entities.free(entity);
            }
        }
        for queue in &mut self.queues {
            queue.clear();
        }
    }
}

/// Records structural changes (spawn, despawn, insert, remove) into the world's command queue; they land, in
/// the order recorded, when [`World::apply_commands`] runs (the app does it at the end of every frame). Get one from
/// [`World::commands`]. A spawn hands back its handle at once. A command whose target is dead or stale by then is
/// skipped and counted, never applied to an entity that took its index.
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
    pub(crate) queue: &'w mut CommandQueue,
    pub(crate) entities: &'w mut Entities,
}

impl Commands<'_> {
    /// Records a spawn and returns the entity at once: reserved now, alive after [`World::apply_commands`].
    /// Later commands in the same buffer may target it. Fails if the world is full (reservations count).
    ///
    /// # Panics
    /// If the tuple names a component type twice (now, not when the buffer is applied).
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Result<Entity, WorldFull> {
        if !self.queue.queue_of.contains_key(&TypeId::of::<SpawnQueue<B>>()) {
            B::assert_distinct(); // once per bundle type and buffer
        }
        let entity = self.entities.reserve()?;
        let (queue, values) = self.queue.queue(|| SpawnQueue::<B> { bundles: VecDeque::new(), ids: None });
        values.bundles.push_back(bundle);
        self.queue.ops.push(Op::Spawn { entity, queue });
        Ok(entity)
    }

    /// Records a despawn. Skipped at apply time if `entity` is dead by then.
    pub fn despawn(&mut self, entity: Entity) {
        self.queue.ops.push(Op::Despawn(entity));
    }

    /// Records setting component `T` of `entity` to `value`. Skipped (the value dropped) if `entity` is dead.
    pub fn insert<T: 'static>(&mut self, entity: Entity, value: T) {
        let (queue, values) = self.queue.queue(|| InsertQueue::<T>(VecDeque::new()));
        values.0.push_back(value);
        self.queue.ops.push(Op::Insert { entity, queue });
    }

    /// Records removing component `T` from `entity`. Skipped if `entity` is dead or lacks `T`.
    pub fn remove<T: 'static>(&mut self, entity: Entity) {
        fn remove<T: 'static>(world: &mut World, entity: Entity) -> bool {
            world.remove::<T>(entity).is_ok()
        }
        self.queue.ops.push(Op::Remove { entity, remove: remove::<T> });
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
