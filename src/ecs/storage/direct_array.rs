//! The direct-array backend: `Vec<Option<T>>` indexed by entity index (the direct array).

use super::{handle, Pool};
use crate::ecs::entity::{Entities, Entity};
use crate::ecs::Component;
use std::mem::size_of;
use std::ops::Range;

/// A `Vec<Option<T>>` indexed by entity index: one load per get, no indirection; but memory grows with the
/// highest index ever used, and iteration scans every slot between the lowest and highest index holding a value,
/// holes included (wasted memory and cache when indices are sparse).
pub struct DirectArray<T> {
    slots: Vec<Option<T>>,
    len: usize,
    /// Every value is at an index in `occupied` (it may hold holes too): widened by each insert, emptied when the
    /// last value goes. Iteration scans only this range, so a pool of a few values among many indices (one entity
    /// with the component, say) is walked in a few steps instead of a scan of the whole array.
    occupied: Range<usize>,
}

impl<T> DirectArray<T> {
    /// A copy, each value copied by `copy`.
    pub(crate) fn clone_with(&self, copy: fn(&T) -> T) -> Self {
        let mut clone = Self::default();
        self.copy_into(&mut clone, copy);
        clone
    }

    /// Makes `into` a copy of this array, each value copied by `copy`, in `into`'s buffer (allocating only to grow).
    pub(crate) fn copy_into(&self, into: &mut Self, copy: fn(&T) -> T) {
        into.slots.clear();
        into.slots.extend(self.slots.iter().map(|slot| slot.as_ref().map(copy)));
        into.len = self.len;
        into.occupied = self.occupied.clone();
    }
}

impl<T> Default for DirectArray<T> {
    fn default() -> Self {
        Self { slots: Vec::new(), len: 0, occupied: 0..0 }
    }
}

impl<T> DirectArray<T> {
    /// The slots, by index; `None` where the entity has no value.
    pub fn slots(&self) -> &[Option<T>] {
        &self.slots
    }

    /// The slots that may hold values, with the index of the first.
    fn occupied(&self) -> impl Iterator<Item = (usize, &Option<T>)> {
        let Range { start, end } = self.occupied.clone();
        (start..).zip(&self.slots[start..end])
    }
}

impl<T: Component> Pool<T> for DirectArray<T> {
    #[inline]
    fn insert(&mut self, entity: Entity, value: T) -> Option<T> {
        let index = entity.index() as usize;
        if index >= self.slots.len() {
            self.slots.resize_with(index + 1, || None);
        }
        let old = self.slots[index].replace(value);
        if old.is_none() {
            self.occupied = match self.len {
                0 => index..index + 1,
                _ => self.occupied.start.min(index)..self.occupied.end.max(index + 1),
            };
            self.len += 1;
        }
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
        self.occupied = match self.len {
            0 => index..index + 1,
            _ => self.occupied.start.min(index)..self.occupied.end.max(index + 1),
        };
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
    fn get_each_mut(&mut self, indices: &[u32]) -> Vec<Option<&mut T>> {
        let len = self.slots.len();
        let positions = indices.iter().map(|&index| Some(index as usize).filter(|&at| at < len));
        super::disjoint_mut(&mut self.slots, positions).into_iter().map(|slot| slot.and_then(Option::as_mut)).collect()
    }
    #[inline]
    fn remove(&mut self, index: u32) -> Option<T> {
        let old = self.slots.get_mut(index as usize)?.take();
        if old.is_some() {
            self.len -= 1;
            if self.len == 0 {
                self.occupied = 0..0;
            }
        }
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
        out.extend(self.occupied().filter(|(_, s)| s.is_some()).map(|(i, _)| i as u32));
    }
    fn collect_entities(&self, entities: &Entities, out: &mut Vec<Entity>) {
        out.extend(self.occupied().filter(|(_, s)| s.is_some()).map(|(i, _)| handle(entities, i as u32)));
    }
    fn drain(&mut self, mut f: impl FnMut(u32, T)) {
        let Range { start, end } = self.occupied.clone();
        for (index, slot) in (start..).zip(&mut self.slots[start..end]) {
            if let Some(value) = slot.take() {
                // Counted as it goes: if `f` (a value's drop) panics, `len` still matches the slots left (and
                // `occupied` still covers them).
                self.len -= 1;
                f(index as u32, value);
            }
        }
        self.occupied = 0..0;
    }
    fn bytes(&self) -> usize {
        self.slots.capacity() * size_of::<Option<T>>()
    }
    /// Room for `additional` more slots past the highest index seen (where fresh indices land).
    fn reserve(&mut self, additional: usize) {
        self.slots.reserve(additional);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU32;

    #[test]
    fn iteration_covers_the_occupied_range_only() {
        let e = |i| Entity::from_parts(i, NonZeroU32::MIN);
        let mut pool = DirectArray::default();
        for i in [40, 7, 90, 12] {
            pool.insert(e(i), i);
        }
        assert_eq!(pool.occupied, 7..91);
        pool.remove(90);
        pool.remove(7);
        let mut indices = Vec::new();
        pool.collect_indices(&mut indices);
        assert_eq!(indices, [12, 40], "holes inside the range are skipped");
        pool.remove(12);
        pool.remove(40);
        assert_eq!(pool.occupied, 0..0, "the last removal empties the range");
        pool.insert(e(500), 1);
        pool.insert(e(3), 2);
        assert_eq!(pool.occupied, 3..501);
        let mut drained = Vec::new();
        pool.drain(|i, v| drained.push((i, v)));
        assert_eq!((drained, pool.len(), pool.occupied.clone()), (vec![(3, 2), (500, 1)], 0, 0..0));
    }

    #[test]
    fn fresh_inserts_widen_the_occupied_range_too() {
        let e = |i| Entity::from_parts(i, NonZeroU32::MIN);
        let mut pool = DirectArray::default();
        for i in [7, 3, 12] {
            pool.insert_fresh(e(i), i);
        }
        let mut indices = Vec::new();
        pool.collect_indices(&mut indices);
        assert_eq!(indices, [3, 7, 12]);
    }

    #[test]
    fn a_panic_while_draining_leaves_the_length_right() {
        let mut pool = DirectArray::default();
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
