//! The direct-array backend: `Vec<Option<T>>` indexed by entity index (the direct array).

use super::{handle, Pool};
use crate::ecs::entity::{Entities, Entity};
use std::mem::size_of;

/// A `Vec<Option<T>>` indexed by entity index: one load per get, no indirection; but memory grows with the
/// highest index ever used, and iteration scans every slot, holes included (wasted memory and cache when indices are sparse).
pub struct DenseArray<T> {
    slots: Vec<Option<T>>,
    len: usize,
}

impl<T> Default for DenseArray<T> {
    fn default() -> Self {
        Self { slots: Vec::new(), len: 0 }
    }
}

impl<T> DenseArray<T> {
    /// The slots, by index; `None` where the entity has no value.
    pub fn slots(&self) -> &[Option<T>] {
        &self.slots
    }
}

impl<T: 'static> Pool<T> for DenseArray<T> {
    #[inline]
    fn insert(&mut self, entity: Entity, value: T) -> Option<T> {
        let index = entity.index() as usize;
        if index >= self.slots.len() {
            self.slots.resize_with(index + 1, || None);
        }
        let old = self.slots[index].replace(value);
        self.len += old.is_none() as usize;
        old
    }
    #[inline]
    fn insert_fresh(&mut self, entity: Entity, value: T) {
        let index = entity.index() as usize;
        if index >= self.slots.len() {
            self.slots.resize_with(index + 1, || None);
        }
        debug_assert!(self.slots[index].is_none(), "a fresh entity already has a value");
        // A plain store: the slot is known empty, so it is not read first (a miss the spawn would wait on).
        self.slots[index] = Some(value);
        self.len += 1;
    }
    #[inline]
    fn get(&self, index: u32) -> Option<&T> {
        self.slots.get(index as usize)?.as_ref()
    }
    #[inline]
    fn get_mut(&mut self, index: u32) -> Option<&mut T> {
        self.slots.get_mut(index as usize)?.as_mut()
    }
    #[inline]
    fn remove(&mut self, index: u32) -> Option<T> {
        let old = self.slots.get_mut(index as usize)?.take();
        self.len -= old.is_some() as usize;
        old
    }
    #[inline]
    fn contains(&self, index: u32) -> bool {
        matches!(self.slots.get(index as usize), Some(Some(_)))
    }
    fn len(&self) -> usize {
        self.len
    }
    fn collect_indices(&self, out: &mut Vec<u32>) {
        out.extend(self.slots.iter().enumerate().filter(|(_, s)| s.is_some()).map(|(i, _)| i as u32));
    }
    fn collect_entities(&self, entities: &Entities, out: &mut Vec<Entity>) {
        out.extend(self.slots.iter().enumerate().filter(|(_, s)| s.is_some()).map(|(i, _)| handle(entities, i as u32)));
    }
    fn drain(&mut self, mut f: impl FnMut(u32, T)) {
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if let Some(value) = slot.take() {
                // Counted as it goes: if `f` (a value's drop) panics, `len` still matches the slots left.
                self.len -= 1;
                f(index as u32, value);
            }
        }
    }
    fn bytes(&self) -> usize {
        self.slots.capacity() * size_of::<Option<T>>()
    }
    fn reserve(&mut self, _additional: usize) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU32;

    #[test]
    fn a_panic_while_draining_leaves_the_length_right() {
        let mut pool = DenseArray::default();
        for i in 0..5 {
            pool.insert(Entity::from_parts(i * 2, NonZeroU32::MIN), i);
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.drain(|_, value| assert_ne!(value, 2, "a value's drop panicked"));
        }));
        assert!(outcome.is_err());
        let left = pool.slots().iter().filter(|s| s.is_some()).count();
        assert_eq!((pool.len(), left), (2, 2), "values 3 and 4 are still there, and counted");
        pool.drain(|_, _| {});
        assert_eq!(pool.len(), 0);
    }
}
