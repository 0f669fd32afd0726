//! The hash-map backend: `index -> value` in a hash map (the role C#'s `Dictionary` plays).

use super::Pool;
use crate::ecs::Component;
use rustc_hash::FxHashMap;
use std::mem::size_of;

/// A `HashMap<u32, T>` with FxHash, the fast non-cryptographic hasher game code reaches for.
///
/// O(1) expected insert / get / remove, each paying a hash and a probe; iteration walks the bucket array in
/// hash order, holes included. No order to sort.
pub struct HashPool<T> {
    map: FxHashMap<u32, T>,
}

impl<T> HashPool<T> {
    /// A copy, each value copied by `copy`.
    pub(crate) fn clone_with(&self, copy: fn(&T) -> T) -> Self {
        Self { map: self.map.iter().map(|(&index, value)| (index, copy(value))).collect() }
    }
}

impl<T> Default for HashPool<T> {
    fn default() -> Self {
        Self { map: FxHashMap::default() }
    }
}

impl<T: Component> Pool<T> for HashPool<T> {
    map_pool_methods!();
    fn get_each_mut(&mut self, indices: &[u32]) -> Vec<Option<&mut T>> {
        // A few by lookup (hashbrown proves them disjoint; a repeat panics), more in one walk of the values.
        match *indices {
            [] => Vec::new(),
            [a] => vec![self.map.get_mut(&a)],
            [a, b] => self.map.get_disjoint_mut([&a, &b]).into(),
            [a, b, c] => self.map.get_disjoint_mut([&a, &b, &c]).into(),
            [a, b, c, d] => self.map.get_disjoint_mut([&a, &b, &c, &d]).into(),
            _ => {
                let slots: FxHashMap<u32, usize> = indices.iter().enumerate().map(|(k, &index)| (index, k)).collect();
                assert_eq!(slots.len(), indices.len(), "get_each_mut: an index named twice");
                let mut out: Vec<Option<&mut T>> = Vec::new();
                out.resize_with(indices.len(), || None);
                for (index, value) in self.map.iter_mut() {
                    if let Some(&k) = slots.get(index) {
                        out[k] = Some(value);
                    }
                }
                out
            }
        }
    }
    fn drain(&mut self, mut f: impl FnMut(u32, T)) {
        for (index, value) in self.map.drain() {
            f(index, value);
        }
    }
    /// Estimated from hashbrown's layout: a power-of-two bucket count holding `capacity` at 7/8 load, each bucket
    /// one `(u32, T)` slot plus one control byte, plus one 16-byte control group.
    fn bytes(&self) -> usize {
        let capacity = self.map.capacity();
        if capacity == 0 {
            return 0;
        }
        let buckets =
            if capacity < 8 { (capacity + 1).next_power_of_two() } else { (capacity * 8 / 7).next_power_of_two() };
        buckets * (size_of::<(u32, T)>() + 1) + 16
    }
    fn reserve(&mut self, additional: usize) {
        self.map.reserve(additional);
    }
}
