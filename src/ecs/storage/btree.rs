//! The B-tree backend: an ordered map from index to value (the role a red-black tree or C#'s `SortedDictionary` plays).

use super::Pool;
use crate::ecs::Component;
use std::collections::BTreeMap;
use std::mem::size_of;

/// A `BTreeMap<u32, T>`: O(log n) insert / get / remove; iterates in index order, always (nothing to sort).
pub struct BTreePool<T> {
    map: BTreeMap<u32, T>,
}

impl<T> BTreePool<T> {
    /// A copy, each value copied by `copy`.
    pub(crate) fn clone_with(&self, copy: fn(&T) -> T) -> Self {
        Self { map: self.map.iter().map(|(&index, value)| (index, copy(value))).collect() }
    }

    /// A pool holding `pairs`, which must be sorted by index with no repeats (checked in debug builds).
    pub fn from_sorted(pairs: Vec<(u32, T)>) -> Self {
        debug_assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0), "pairs are not sorted by index");
        Self { map: pairs.into_iter().collect() }
    }
}

impl<T> Default for BTreePool<T> {
    fn default() -> Self {
        Self { map: BTreeMap::new() }
    }
}

/// std's B-tree node holds up to `2B - 1 = 11` keys and values.
const NODE_CAPACITY: usize = 11;

impl<T: Component> Pool<T> for BTreePool<T> {
    map_pool_methods!();
    /// One range over the smallest to the largest index: its two ends are found in O(log n) each (a pair costs
    /// no walk); the indices between are found by walking the keys between, merged with the indices sorted.
    fn get_each_mut(&mut self, indices: &[u32]) -> Vec<Option<&mut T>> {
        let mut out: Vec<Option<&mut T>> = Vec::new();
        out.resize_with(indices.len(), || None);
        let mut wanted: Vec<(u32, usize)> = indices.iter().enumerate().map(|(k, &index)| (index, k)).collect();
        wanted.sort_unstable();
        assert!(wanted.windows(2).all(|w| w[0].0 != w[1].0), "get_each_mut: an index named twice");
        let (Some(&(lo, _)), Some(&(hi, _))) = (wanted.first(), wanted.last()) else { return out };
        let mut range = self.map.range_mut(lo..=hi);
        // The largest key first, then forward through the indices below it not found yet.
        let Some((&last, value)) = range.next_back() else { return out };
        let mut below = &wanted[..wanted.partition_point(|&(index, _)| index < last)];
        if let Some(&(_, k)) = wanted.get(below.len()).filter(|&&(index, _)| index == last) {
            out[k] = Some(value);
        }
        for (&key, value) in range {
            while below.first().is_some_and(|&(index, _)| index < key) {
                below = &below[1..];
            }
            let Some(&(index, k)) = below.first() else { break };
            if index == key {
                out[k] = Some(value);
                below = &below[1..];
            }
        }
        out
    }
    fn drain(&mut self, mut f: impl FnMut(u32, T)) {
        for (index, value) in std::mem::take(&mut self.map) {
            f(index, value);
        }
    }
    /// An estimate from std's node layout (the map does not report its nodes): a leaf holds up to 11 keys and
    /// values plus a parent pointer and two `u16`s; internal nodes add 12 child pointers. We assume nodes two-thirds
    /// full on average (B-trees fed in random order settle near that), and one internal node per 8 leaves.
    fn bytes(&self) -> usize {
        let len = self.map.len();
        if len == 0 {
            return 0;
        }
        let leaf = 8 + 4 + NODE_CAPACITY * (size_of::<u32>() + size_of::<T>());
        let leaves = (len * 3).div_ceil(2 * NODE_CAPACITY);
        let internal = leaves.div_ceil(8);
        leaves * leaf + internal * (leaf + (NODE_CAPACITY + 1) * 8)
    }
    fn reserve(&mut self, _additional: usize) {}
}
