//! Rollback: a world's state kept in memory and put back, for rollback netcode and rewinding. Nothing is encoded:
//! a [`Checkpoint`] holds copies (`Clone`) of the storage (every pool, or every table, as laid out), the allocator,
//! the command totals, the change state and the resources registered for it.
//!
//! A type takes part once registered ([`World::rollback_component`], [`World::rollback_resource`]).
//! [`World::checkpoint`] refuses a world with values of a component type that is not registered (it could not be
//! put back) and a world with commands waiting (their handles name spawns that are not in the state).
//! [`World::restore`] puts the state back whole, on the backend the world uses now: no handler runs, the change
//! state comes back as it was (a type tracked since stays tracked, starting over), commands recorded since are
//! dropped, and afterwards the world runs exactly as the saved one did. A checkpoint restores any number of times;
//! [`Checkpoints`] keeps the last few by frame.
//!
//! ```
//! use swarm::ecs::World;
//! #[derive(Clone, Debug, PartialEq)]
//! struct Hp(i32);
//! let mut world = World::new();
//! world.rollback_component::<Hp>();
//! let a = world.spawn((Hp(3),)).unwrap();
//! let saved = world.checkpoint().unwrap();
//! let next = world.spawn((Hp(9),)).unwrap();
//! world.get_mut::<Hp>(a).unwrap().0 = 0;
//! world.despawn(a).unwrap();
//! world.restore(&saved).unwrap();
//! assert_eq!(world.get::<Hp>(a), Some(&Hp(3)));
//! assert!(!world.is_alive(next));
//! // The allocator came back too: the next spawn gets the handle the first one after the save got.
//! assert_eq!(world.spawn((Hp(1),)).unwrap(), next);
//! ```

use super::change::Changes;
use super::commands::CommandTotals;
use super::component::ComponentId;
use super::entity::Entities;
use super::storage::archetype::{Columns, ErasedColumns};
use super::storage::{AnyPool, ErasedPool, LayoutFns, Storage};
use super::{Children, Component, Parent, Resource, World};
use std::any::{Any, TypeId};
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

/// How to copy one component type's pool and columns.
#[derive(Clone, Copy)]
struct ComponentCopy {
    type_id: TypeId,
    pool: fn(&dyn ErasedPool) -> Box<dyn ErasedPool>,
    /// Copies the first pool into the second (of the same type), in its buffers where the layouts allow.
    pool_into: fn(&dyn ErasedPool, &mut dyn ErasedPool),
    columns: fn(&dyn ErasedColumns) -> Box<dyn ErasedColumns>,
}

/// A component type a checkpoint can copy: every `Clone` type, and the hierarchy's (which are not `Clone`, so
/// that no bundle can carry a copy of one).
pub(crate) trait Copyable: Component + Sized {
    fn copy(&self) -> Self;
}

impl<T: Component + Clone> Copyable for T {
    fn copy(&self) -> Self {
        self.clone()
    }
}

impl ComponentCopy {
    pub(crate) fn of<T: Copyable>() -> Self {
        Self {
            type_id: TypeId::of::<T>(),
            pool: |pool| {
                let pool: &AnyPool<T> = pool.as_any().downcast_ref().expect("a pool of its own type");
                Box::new(pool.clone_with(T::copy))
            },
            pool_into: |pool, into| {
                let pool: &AnyPool<T> = pool.as_any().downcast_ref().expect("a pool of its own type");
                pool.copy_into(AnyPool::downcast_mut(into), T::copy);
            },
            columns: |columns| {
                let columns: &dyn Any = columns;
                let columns: &Columns<T> = columns.downcast_ref().expect("columns of their own type");
                Box::new(columns.clone_with(T::copy))
            },
        }
    }
}

/// The registry stamp of a checkpoint that [`World::checkpoint_into`] left half-written (a world's stamps start at
/// 1): no world's, so a restore refuses it.
const HALF_WRITTEN: u64 = 0;

/// A boxed resource.
type Boxed = Box<dyn Any + Send + Sync>;

/// How to copy one resource type.
#[derive(Clone, Copy)]
struct ResourceCopy {
    type_id: TypeId,
    copy: fn(&(dyn Any + Send + Sync)) -> Boxed,
}

/// The types a world's checkpoints hold (registered by type, so they outlive a registry a snapshot replaces); the
/// hierarchy's always.
#[derive(Clone)]
pub(crate) struct RollbackTypes {
    components: Vec<ComponentCopy>,
    resources: Vec<ResourceCopy>,
}

impl Default for RollbackTypes {
    fn default() -> Self {
        let components = vec![ComponentCopy::of::<Parent>(), ComponentCopy::of::<Children>()];
        Self { components, resources: Vec::new() }
    }
}

/// Why a world could not be saved or restored; the world is as it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RollbackError {
    /// Commands are recorded and not applied (or handles reserved): the state between frames is wanted.
    PendingCommands,
    /// A component type with values is not registered with [`World::rollback_component`].
    NotRegistered {
        /// The type's name.
        component: &'static str,
    },
    /// The checkpoint was taken in a world with another registry (another world, or before a snapshot was
    /// loaded into this one).
    OtherWorld,
}

impl fmt::Display for RollbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RollbackError::PendingCommands => {
                write!(f, "commands are waiting to be applied: save the world between frames")
            }
            RollbackError::NotRegistered { component } => write!(
                f,
                "component `{component}` has values but cannot be put back: register it with \
                 World::rollback_component"
            ),
            RollbackError::OtherWorld => write!(f, "the checkpoint was taken in another world (or another registry)"),
        }
    }
}

impl std::error::Error for RollbackError {}

/// A world's state in memory ([`World::checkpoint`]); [`World::restore`] puts it back, as often as asked.
pub struct Checkpoint {
    entities: Entities,
    storage: Storage,
    totals: CommandTotals,
    changes: Changes,
    /// Each registered resource type: a copy, or `None` if the world had none.
    resources: Vec<(TypeId, Option<Boxed>)>,
    registry_stamp: u64,
    /// Per component id: how to make its storage, and how to copy its values (registered types).
    layouts: Arc<[LayoutFns]>,
    copies: Arc<[Option<ComponentCopy>]>,
    resource_copies: Arc<[ResourceCopy]>,
}

impl Checkpoint {
    /// A copy of the saved storage.
    fn copy_storage(&self) -> Storage {
        copy_storage(&self.storage, &self.layouts, &self.copies)
            .unwrap_or_else(|_| unreachable!("a checkpoint holds values only of types it can copy"))
    }

    /// Copies of the saved resources.
    fn copy_resources(&self) -> Vec<(TypeId, Option<Boxed>)> {
        let copy = |type_id: TypeId, value: &Boxed| {
            let copier = self.resource_copies.iter().find(|r| r.type_id == type_id).expect("registered");
            (copier.copy)(value.as_ref())
        };
        self.resources.iter().map(|(type_id, value)| (*type_id, value.as_ref().map(|v| copy(*type_id, v)))).collect()
    }

    /// Live entities in the saved state.
    pub fn len(&self) -> u32 {
        self.entities.len()
    }

    /// Whether the saved state has no live entity.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Clone for Checkpoint {
    fn clone(&self) -> Self {
        Self {
            entities: self.entities.clone(),
            storage: self.copy_storage(),
            totals: self.totals,
            changes: self.changes.clone(),
            resources: self.copy_resources(),
            registry_stamp: self.registry_stamp,
            layouts: self.layouts.clone(),
            copies: self.copies.clone(),
            resource_copies: self.resource_copies.clone(),
        }
    }
}

impl fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checkpoint").field("live", &self.len()).field("backend", &self.storage.backend()).finish()
    }
}

/// `storage` copied type by type with `copies` (by component id); a type without one is made empty with `layouts`
/// if it has no values, else the copy fails with its id.
fn copy_storage(
    storage: &Storage,
    layouts: &[LayoutFns],
    copies: &[Option<ComponentCopy>],
) -> Result<Storage, ComponentId> {
    let copy = |id: ComponentId| copies.get(id as usize).copied().flatten();
    storage.try_clone(layouts, |id, pool| copy(id).map(|c| (c.pool)(pool)), |id, of| copy(id).map(|c| (c.columns)(of)))
}

impl World {
    /// Lets checkpoints hold component `T` (registering it if new): [`World::checkpoint`] copies its values with
    /// `Clone`. A type with values that is not registered makes the checkpoint fail, naming it.
    pub fn rollback_component<T: Component + Clone>(&mut self) -> &mut Self {
        self.register::<T>();
        let copy = ComponentCopy::of::<T>();
        if !self.rollback.components.iter().any(|c| c.type_id == copy.type_id) {
            self.rollback.components.push(copy);
        }
        self
    }

    /// Lets checkpoints hold resource `R` (present or not: a restore puts back either).
    pub fn rollback_resource<R: Resource + Clone>(&mut self) -> &mut Self {
        let copy = ResourceCopy {
            type_id: TypeId::of::<R>(),
            copy: |value| {
                let value: &R = (value as &dyn Any).downcast_ref().expect("a resource of its own type");
                Box::new(value.clone())
            },
        };
        if !self.rollback.resources.iter().any(|r| r.type_id == copy.type_id) {
            self.rollback.resources.push(copy);
        }
        self
    }

    /// The world's state, in memory: every entity and handle, the allocator, the components (the hierarchy
    /// with them), the command totals, the change state and the registered resources (see the
    /// [module](crate::ecs::rollback)). Refused while commands wait to be applied, or if a component type
    /// with values is not registered.
    pub fn checkpoint(&self) -> Result<Checkpoint, RollbackError> {
        self.between_frames()?;
        let copies: Arc<[Option<ComponentCopy>]> = (0..self.components.len()).map(|id| self.copy_of(id)).collect();
        let layouts: Arc<[LayoutFns]> =
            (0..self.components.len()).map(|id| *self.components.data(id as ComponentId)).collect();
        let storage = copy_storage(&self.storage, &layouts, &copies)
            .map_err(|id| RollbackError::NotRegistered { component: self.components.info(id).name })?;
        let resources = self.copy_rollback_resources();
        Ok(Checkpoint {
            entities: self.entities.clone(),
            storage,
            totals: self.totals,
            changes: self.changes.clone(),
            resources,
            registry_stamp: self.registry_stamp(),
            layouts,
            copies,
            resource_copies: self.rollback.resources.iter().copied().collect(),
        })
    }

    /// [`World::checkpoint`] into `into`, reusing its memory: on the sparse set and the direct array, when `into`
    /// was taken from this world on the same layout and with the same types registered for rollback, every pool is
    /// copied into the old copy's buffers, which allocate only to grow (a ring of checkpoints that recycles its
    /// oldest takes each new one without asking the system for memory). Otherwise `into` becomes a new
    /// checkpoint. Refused as [`World::checkpoint`] refuses, with `into` as it was. If a component's `Clone`
    /// panics partway, `into` holds parts of two states: it is marked so, and a restore from it is refused
    /// ([`RollbackError::OtherWorld`]) until a checkpoint is taken into it again.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// #[derive(Clone, Debug, PartialEq)]
    /// struct Hp(i32);
    /// let mut world = World::new();
    /// world.rollback_component::<Hp>();
    /// let a = world.spawn((Hp(3),)).unwrap();
    /// let mut saved = world.checkpoint().unwrap();
    /// world.get_mut::<Hp>(a).unwrap().0 = 7;
    /// world.checkpoint_into(&mut saved).unwrap();
    /// world.get_mut::<Hp>(a).unwrap().0 = 0;
    /// world.restore(&saved).unwrap();
    /// assert_eq!(world.get::<Hp>(a), Some(&Hp(7)));
    /// ```
    pub fn checkpoint_into(&self, into: &mut Checkpoint) -> Result<(), RollbackError> {
        let (Storage::Pools { layout, pools }, Storage::Pools { layout: old_layout, pools: old_pools }) =
            (&self.storage, &mut into.storage)
        else {
            *into = self.checkpoint()?;
            return Ok(());
        };
        let same_types = into.copies.len() == self.components.len()
            && into
                .copies
                .iter()
                .enumerate()
                .all(|(id, c)| c.map(|c| c.type_id) == self.copy_of(id).map(|c| c.type_id));
        let same_shape = into.registry_stamp == self.registry_stamp()
            && layout == old_layout
            && pools.len() == old_pools.len()
            && same_types;
        if !same_shape {
            *into = self.checkpoint()?;
            return Ok(());
        }
        // Every refusal before anything is written, so a refused call leaves `into` whole.
        self.between_frames()?;
        if let Some(id) = (0..pools.len()).find(|&id| !pools[id].is_empty() && into.copies[id].is_none()) {
            return Err(RollbackError::NotRegistered { component: self.components.info(id as ComponentId).name });
        }
        // Marked half-written until the last copy is in: a `Clone` that panics leaves it refused by `restore`.
        into.registry_stamp = HALF_WRITTEN;
        for (id, (pool, old)) in pools.iter().zip(old_pools.iter_mut()).enumerate() {
            match into.copies[id] {
                Some(copy) => (copy.pool_into)(pool.as_ref(), old.as_mut()),
                None => *old = (into.layouts[id].new_pool)(*layout),
            }
        }
        into.entities.clone_from(&self.entities);
        into.totals = self.totals;
        into.changes.clone_from(&self.changes);
        into.resources = self.copy_rollback_resources();
        into.registry_stamp = self.registry_stamp();
        Ok(())
    }

    /// Refused with commands waiting or handles reserved: a checkpoint holds the state between frames.
    fn between_frames(&self) -> Result<(), RollbackError> {
        match self.has_pending_commands() || self.entities().state().is_none() {
            true => Err(RollbackError::PendingCommands),
            false => Ok(()),
        }
    }

    /// How checkpoints copy component `id`'s values, if its type is registered for rollback.
    fn copy_of(&self, id: usize) -> Option<ComponentCopy> {
        let type_id = self.components.info(id as ComponentId).type_id;
        self.rollback.components.iter().find(|c| c.type_id == type_id).copied()
    }

    /// Copies of the resources registered for rollback (`None` for one the world does not hold).
    fn copy_rollback_resources(&self) -> Vec<(TypeId, Option<Boxed>)> {
        self.rollback
            .resources
            .iter()
            .map(|r| (r.type_id, self.resources.get_any(r.type_id).map(|value| (r.copy)(value))))
            .collect()
    }

    /// Puts the state `checkpoint` saved back (see the [module](crate::ecs::rollback)), on this world's current
    /// backend: no handler runs, commands recorded since are dropped; types registered since have no values. The
    /// change state comes back as saved for the types the checkpoint tracked; every type tracked now stays tracked
    /// (in the exact mode if it is now), and one tracked since the checkpoint starts over on the restored values,
    /// which count as added, as [`World::track`] counts a world's values. Refused (the world as it was) for a
    /// checkpoint of another world or registry.
    pub fn restore(&mut self, checkpoint: &Checkpoint) -> Result<(), RollbackError> {
        if checkpoint.registry_stamp != self.registry_stamp() {
            return Err(RollbackError::OtherWorld);
        }
        // Copied aside first, every copy made (each runs `Clone`, the exact mode's copies too) before anything is
        // swapped in: the checkpoint stays whole for the next restore, and a `clone` that panics changes nothing.
        let storage = checkpoint.copy_storage();
        let resources = checkpoint.copy_resources();
        let mut changes = checkpoint.changes.clone();
        let backend = self.backend();
        // The types tracked now stay tracked, in the exact mode if they are now.
        let tracking = self.tracking();
        let old_commands = std::mem::take(&mut self.commands);
        let old_storage = std::mem::replace(&mut self.storage, storage);
        self.entities = checkpoint.entities.clone();
        self.totals = checkpoint.totals;
        // The systems keep their slots (handed out by this world since); their last runs come back.
        changes.next_slot = self.changes.next_slot;
        let old_changes = std::mem::replace(&mut self.changes, changes);
        // The resources replaced are dropped with the rest, at the end.
        let old_resources: Vec<_> = resources
            .into_iter()
            .filter_map(|(type_id, value)| match value {
                Some(value) => self.resources.insert_any(type_id, value),
                None => self.resources.remove_any(type_id),
            })
            .collect();
        // Types registered after the checkpoint get their (empty) pools; then the backend in use now.
        self.storage.catch_up(&self.components);
        self.set_backend(backend);
        // A type tracked since the checkpoint starts over on the values restored, as `track` would start it now.
        self.keep_tracking(tracking);
        // Last, when the world is whole: dropped values, resources, change state and commands (a drop may panic;
        // the first panic goes on once everything is dropped).
        let discarded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.discard_events()));
        drop(old_resources);
        drop(old_changes);
        drop(old_storage);
        drop(old_commands);
        if let Err(panic) = discarded {
            std::panic::resume_unwind(panic);
        }
        Ok(())
    }
}

/// The last few checkpoints, by frame: what rollback netcode loads from, and what a rewind steps back through.
/// Keeping one past its capacity forgets the oldest.
#[derive(Clone, Debug)]
pub struct Checkpoints {
    capacity: usize,
    kept: VecDeque<(u64, Checkpoint)>,
}

impl Checkpoints {
    /// Room for `capacity` checkpoints (at least one).
    pub fn new(capacity: usize) -> Self {
        Self { capacity: capacity.max(1), kept: VecDeque::with_capacity(capacity.max(1)) }
    }

    /// Keeps `checkpoint` as frame `frame`'s, forgetting any kept for that frame or a later one (a new future), and
    /// the oldest if full.
    pub fn keep(&mut self, frame: u64, checkpoint: Checkpoint) {
        while self.kept.back().is_some_and(|(f, _)| *f >= frame) {
            self.kept.pop_back();
        }
        if self.kept.len() == self.capacity {
            self.kept.pop_front();
        }
        self.kept.push_back((frame, checkpoint));
    }

    /// Keeps a checkpoint of `world` as frame `frame`'s, as [`Checkpoints::keep`] with [`World::checkpoint`] would,
    /// but taken into the memory of a checkpoint the ring forgets anyway (a later frame's, else the oldest when
    /// full; see [`World::checkpoint_into`]): a full ring saves without allocating. Refused as
    /// [`World::checkpoint`] refuses, with the ring as it was.
    pub fn save(&mut self, frame: u64, world: &World) -> Result<(), RollbackError> {
        let later = self.kept.iter().rev().take_while(|(f, _)| *f >= frame).count();
        let spare = match later {
            0 if self.kept.len() >= self.capacity => Some(0),
            0 => None,
            _ => Some(self.kept.len() - 1),
        };
        let checkpoint = match spare {
            // Out of the ring while it is written, so a `Clone` that panics cannot leave a half-written one kept;
            // back in place if refused.
            Some(at) => {
                let (old_frame, mut old) = self.kept.remove(at).expect("a kept position");
                if let Err(error) = world.checkpoint_into(&mut old) {
                    self.kept.insert(at, (old_frame, old));
                    return Err(error);
                }
                old
            }
            None => world.checkpoint()?,
        };
        self.keep(frame, checkpoint);
        Ok(())
    }

    /// The checkpoint of `frame`, if kept.
    pub fn get(&self, frame: u64) -> Option<&Checkpoint> {
        self.kept.iter().find(|(f, _)| *f == frame).map(|(_, c)| c)
    }

    /// The latest checkpoint kept for `frame` or an earlier one, with its frame: where a rewind to `frame` starts
    /// simulating from.
    pub fn at_or_before(&self, frame: u64) -> Option<(u64, &Checkpoint)> {
        self.kept.iter().rev().find(|(f, _)| *f <= frame).map(|(f, c)| (*f, c))
    }

    /// The oldest frame kept.
    pub fn oldest(&self) -> Option<u64> {
        self.kept.front().map(|(f, _)| *f)
    }

    /// How many it keeps at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Keeps at most `capacity` (at least one) from now on, forgetting the oldest beyond it.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity.max(1);
        while self.kept.len() > self.capacity {
            self.kept.pop_front();
        }
    }

    /// Forgets every checkpoint.
    pub fn clear(&mut self) {
        self.kept.clear();
    }

    /// The frames kept, oldest first.
    pub fn frames(&self) -> impl Iterator<Item = u64> + '_ {
        self.kept.iter().map(|(f, _)| *f)
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}
