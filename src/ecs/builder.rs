//! [`EntityBuilder`]: an entity's components gathered one by one at run time, then moved into a world at once.

use super::component::ComponentId;
use super::entity::Entity;
use super::entity::{NoSuchEntity, WorldFull};
use super::storage::archetype::Archetypes;
use super::storage::{ErasedValue, Registry, Storage};
use super::world::World;
use crate::ecs::Component;
use rustc_hash::FxHashMap;
use std::any::{Any, TypeId};

/// Components gathered one by one, for entities whose makeup is known only at run time (read from data, chosen
/// by a spawner), then moved into a world by [`World::spawn_built`](super::World::spawn_built) or
/// [`World::insert_built`](super::World::insert_built) (hecs's `EntityBuilder`).
///
/// Similar to a `HashMap<TypeId, Box<dyn Any>>` that is drained into the world: one slot per type ever added,
/// each a boxed `Option<T>` that keeps its box when emptied, so a builder reused for entities of the same types
/// allocates nothing after the first. Adding a type twice replaces the first value (dropped), as in hecs.
///
/// ```
/// use swarm::ecs::{EntityBuilder, World};
/// #[derive(Debug, PartialEq)] struct Pos(f32);
/// struct Armor(u32);
/// let mut world = World::new();
/// let mut builder = EntityBuilder::new();
/// for armored in [false, true] {
///     builder.add(Pos(1.0));
///     if armored {
///         builder.add(Armor(5));
///     }
///     let e = world.spawn_built(&mut builder).unwrap(); // the builder is empty again
///     assert_eq!(world.has::<Armor>(e), armored);
/// }
/// assert!(builder.is_empty());
/// ```
#[derive(Default)]
pub struct EntityBuilder {
    /// One slot per type ever added, by first use.
    slots: Vec<Box<dyn Slot>>,
    /// `slots[slot_of[t]]` holds type `t`.
    slot_of: FxHashMap<TypeId, usize>,
    /// How many slots hold a value.
    len: usize,
}

impl EntityBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `value` as the entity's component of type `T`, replacing (and dropping) a value of `T` added before.
    /// Chains: `builder.add(a).add(b)`.
    pub fn add<T: Component>(&mut self, value: T) -> &mut Self {
        crate::ecs::hierarchy::refuse_kept::<T>("added to a builder");
        let slot = match self.slot_of.get(&TypeId::of::<T>()) {
            Some(&slot) => slot,
            None => {
                self.slots.push(Box::new(Typed::<T>(None)));
                self.slot_of.insert(TypeId::of::<T>(), self.slots.len() - 1);
                self.slots.len() - 1
            }
        };
        let typed = self.slots[slot].as_any_mut().downcast_mut::<Typed<T>>().expect("slots are keyed by type");
        if typed.0.replace(value).is_none() {
            self.len += 1;
        }
        self
    }

    /// Whether a value of `T` was added.
    pub fn has<T: Component>(&self) -> bool {
        self.slot_of.get(&TypeId::of::<T>()).is_some_and(|&slot| self.slots[slot].is_filled())
    }

    /// The value of `T` added, if any.
    pub fn get<T: Component>(&self) -> Option<&T> {
        let slot = *self.slot_of.get(&TypeId::of::<T>())?;
        self.slots[slot].as_any().downcast_ref::<Typed<T>>().expect("slots are keyed by type").0.as_ref()
    }

    /// How many components were added.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no component was added.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Drops every value added; the slots stay for the next entity.
    pub fn clear(&mut self) {
        for slot in &mut self.slots {
            slot.clear();
        }
        self.len = 0;
    }

    /// Registers the types of the values added and returns their set.
    pub(crate) fn register(&self, components: &mut Registry) -> super::component::ComponentSet {
        let mut set = super::component::ComponentSet::EMPTY;
        for slot in self.slots.iter().filter(|slot| slot.is_filled()) {
            set.insert(slot.register(components));
        }
        set
    }

    /// Moves the values into `storage` for the live `entity` (see [`Storage::insert_erased`]), then drops what
    /// came back (values replaced in the entity) and leaves the builder empty.
    pub(crate) fn move_into(&mut self, storage: &mut Storage, components: &Registry, entity: Entity, fresh: bool) {
        let set = {
            let mut set = super::component::ComponentSet::EMPTY;
            for slot in self.slots.iter().filter(|slot| slot.is_filled()) {
                set.insert(slot.id(components));
            }
            set
        };
        let values = self.slots.iter_mut().filter(|slot| slot.is_filled()).map(|slot| slot.as_erased());
        storage.insert_erased(components, entity, set, fresh, values);
        self.clear();
    }
}

impl std::fmt::Debug for EntityBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.slots.iter().filter(|slot| slot.is_filled()).map(|slot| slot.name())).finish()
    }
}

/// A builder's slot for one type, type-erased.
trait Slot: ErasedValue + Any {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn as_erased(&mut self) -> &mut dyn ErasedValue;
    fn is_filled(&self) -> bool;
    fn clear(&mut self);
    fn register(&self, components: &mut Registry) -> ComponentId;
    fn name(&self) -> &'static str;
}

struct Typed<T>(Option<T>);

impl<T: Component> Typed<T> {
    fn take(&mut self) -> T {
        self.0.take().expect("an empty slot was moved into a world")
    }
}

impl<T: Component> Slot for Typed<T> {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn as_erased(&mut self) -> &mut dyn ErasedValue {
        self
    }
    fn is_filled(&self) -> bool {
        self.0.is_some()
    }
    fn clear(&mut self) {
        self.0 = None;
    }
    fn register(&self, components: &mut Registry) -> ComponentId {
        components.register::<T>().0
    }
    fn name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
}

impl<T: Component> ErasedValue for Typed<T> {
    fn id(&self, components: &Registry) -> ComponentId {
        components.id::<T>().expect("the builder registered its types")
    }
    fn insert(&mut self, storage: &mut Storage, components: &Registry, entity: Entity) {
        let value = self.take();
        self.0 = storage.insert(self.id(components), components, entity, value);
    }
    fn push_onto(&mut self, archetypes: &mut Archetypes, id: ComponentId, column: u32) {
        archetypes.push_value(id, column, self.take());
    }
    fn swap_in_table(&mut self, archetypes: &mut Archetypes, id: ComponentId, index: u32) {
        let held = archetypes.get_mut::<T>(index, id).expect("the entity's table holds the type");
        std::mem::swap(held, self.0.as_mut().expect("an empty slot was moved into a world"));
    }
}

/// Entities built from an [`EntityBuilder`].
impl World {
    /// Spawns an entity with the components gathered in `builder` and leaves the builder empty, its slots kept for
    /// the next entity (see [`EntityBuilder`]). On the archetype backend the entity lands in its table at once.
    /// Fails with [`WorldFull`] if the world holds its capacity: then the builder keeps its values.
    ///
    /// ```
    /// use swarm::ecs::{EntityBuilder, World};
    /// let mut world = World::new();
    /// let mut builder = EntityBuilder::new();
    /// builder.add(1u8).add('a').add(2u8); // the second `u8` replaces the first
    /// let e = world.spawn_built(&mut builder).unwrap();
    /// assert_eq!((world.get::<u8>(e), world.get::<char>(e)), (Some(&2), Some(&'a')));
    /// assert!(builder.is_empty());
    /// ```
    pub fn spawn_built(&mut self, builder: &mut EntityBuilder) -> Result<Entity, WorldFull> {
        let set = builder.register(&mut self.components);
        let entity = self.entities.alloc()?;
        builder.move_into(&mut self.storage, &self.components, entity, true);
        self.spawned(&set, &[entity]);
        Ok(entity)
    }

    /// Moves the components gathered in `builder` into `entity` (replacing those it has, as
    /// [`World::insert_bundle`]) and leaves the builder empty. A reserved handle applies the command buffer first
    /// ([`World::reserve_entity`]). On the archetype backend the entity moves to its new table once. A stale
    /// handle is an error, and then the builder keeps its values.
    ///
    /// ```
    /// use swarm::ecs::{EntityBuilder, World};
    /// let mut world = World::new();
    /// let e = world.spawn((1u8,)).unwrap();
    /// world.insert_built(e, EntityBuilder::new().add(2u8).add('b')).unwrap();
    /// assert_eq!((world.get::<u8>(e), world.get::<char>(e)), (Some(&2), Some(&'b')));
    /// ```
    pub fn insert_built(&mut self, entity: Entity, builder: &mut EntityBuilder) -> Result<(), NoSuchEntity> {
        if !self.settle(entity) {
            return Err(NoSuchEntity(entity));
        }
        let set = builder.register(&mut self.components);
        builder.move_into(&mut self.storage, &self.components, entity, false);
        self.inserted(set.iter(), entity);
        Ok(())
    }
}
