//! Resources: one value per type, owned by the world (time, config, RNG, statistics).

use crate::ecs::Resource;
use crate::ecs::World;
use rustc_hash::FxHashMap;
use std::any::{type_name, Any, TypeId};

/// Similar to `HashMap<TypeId, Box<dyn Any + Send + Sync>>`, which is what it is: one boxed value per type.
#[derive(Default)]
pub struct Resources {
    map: FxHashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl Resources {
    /// Inserts or replaces the resource of type `R`; returns the previous one.
    pub fn insert<R: Resource>(&mut self, value: R) -> Option<R> {
        self.map.insert(TypeId::of::<R>(), Box::new(value)).map(|old| *old.downcast::<R>().expect("keyed by type"))
    }

    /// The resource of type `R`, if inserted.
    pub fn get<R: Resource>(&self) -> Option<&R> {
        self.map.get(&TypeId::of::<R>()).map(|r| r.downcast_ref::<R>().expect("keyed by type"))
    }

    /// The resource of type `R`, mutably.
    pub fn get_mut<R: Resource>(&mut self) -> Option<&mut R> {
        self.map.get_mut(&TypeId::of::<R>()).map(|r| r.downcast_mut::<R>().expect("keyed by type"))
    }

    /// Removes and returns the resource of type `R`.
    pub fn remove<R: Resource>(&mut self) -> Option<R> {
        self.map.remove(&TypeId::of::<R>()).map(|r| *r.downcast::<R>().expect("keyed by type"))
    }

    /// Takes the boxed resource out (no reallocation: the box goes back with [`Resources::put_boxed`]).
    pub(crate) fn take_boxed<R: Resource>(&mut self) -> Option<Box<dyn Any + Send + Sync>> {
        self.map.remove(&TypeId::of::<R>())
    }

    /// Puts back a box taken by [`Resources::take_boxed`].
    pub(crate) fn put_boxed<R: Resource>(&mut self, value: Box<dyn Any + Send + Sync>) {
        self.map.insert(TypeId::of::<R>(), value);
    }

    /// Moves every resource of `other` in, replacing those of the same types.
    pub(crate) fn absorb(&mut self, other: Resources) {
        self.map.extend(other.map);
    }

    /// The resource of the type `type_id` names, if inserted.
    pub(crate) fn get_any(&self, type_id: TypeId) -> Option<&(dyn Any + Send + Sync)> {
        self.map.get(&type_id).map(|value| value.as_ref())
    }

    /// Inserts or replaces the resource `value` of the type `type_id` names; returns the one replaced.
    pub(crate) fn insert_any(
        &mut self,
        type_id: TypeId,
        value: Box<dyn Any + Send + Sync>,
    ) -> Option<Box<dyn Any + Send + Sync>> {
        self.map.insert(type_id, value)
    }

    /// Removes the resource of the type `type_id` names, and returns it.
    pub(crate) fn remove_any(&mut self, type_id: TypeId) -> Option<Box<dyn Any + Send + Sync>> {
        self.map.remove(&type_id)
    }

    /// Whether a resource of type `R` is present.
    pub fn contains<R: Resource>(&self) -> bool {
        self.map.contains_key(&TypeId::of::<R>())
    }
}

pub(crate) fn missing<R>() -> ! {
    panic!(
        "resource `{}` was never inserted (use insert_resource first, or get_resource for an Option)",
        type_name::<R>()
    )
}

/// A world's resources.
impl World {
    /// Inserts or replaces the resource of type `R`.
    pub fn insert_resource<R: Resource>(&mut self, value: R) -> Option<R> {
        self.resources.insert(value)
    }

    /// The resource of type `R`.
    ///
    /// # Panics
    /// If it was never inserted; [`World::get_resource`] returns an `Option`.
    pub fn resource<R: Resource>(&self) -> &R {
        self.resources.get().unwrap_or_else(|| missing::<R>())
    }

    /// The resource of type `R`, mutably. Panics like [`World::resource`].
    pub fn resource_mut<R: Resource>(&mut self) -> &mut R {
        self.resources.get_mut().unwrap_or_else(|| missing::<R>())
    }

    /// The resource of type `R`, if inserted.
    pub fn get_resource<R: Resource>(&self) -> Option<&R> {
        self.resources.get()
    }

    /// The resource of type `R`, mutably, if inserted.
    pub fn get_resource_mut<R: Resource>(&mut self) -> Option<&mut R> {
        self.resources.get_mut()
    }

    /// Whether a resource of type `R` is present.
    pub fn contains_resource<R: Resource>(&self) -> bool {
        self.resources.contains::<R>()
    }

    /// Removes and returns the resource of type `R`.
    pub fn remove_resource<R: Resource>(&mut self) -> Option<R> {
        self.resources.remove()
    }

    /// Runs `f` with the resource `R` taken out of the world, so `f` can use both. Panics like [`World::resource`].
    pub fn resource_scope<R: Resource, U>(&mut self, f: impl FnOnce(&mut World, &mut R) -> U) -> U {
        // The box itself travels out and back, so a scope allocates nothing; it goes back even if `f` panics.
        let mut boxed = self.resources.take_boxed::<R>().unwrap_or_else(|| missing::<R>());
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            f(self, boxed.downcast_mut::<R>().expect("resources are keyed by type"))
        }));
        self.resources.put_boxed::<R>(boxed);
        out.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }

    /// The resources, to move a system's written ones out for its run and back.
    pub(crate) fn resources_mut(&mut self) -> &mut Resources {
        &mut self.resources
    }
}
