//! Sorting a sparse-set pool: three ways to reorder `entities` and `values` together while keeping
//! `sparse` pointing at the right positions, plus [`SparseSet::sort_as`] to line one pool up with another.
//!
//! Similar to collecting `(entity, value)` pairs, `sort_by` on them and rebuilding the pool: O(n log n), but that
//! moves every value twice and allocates two arrays. Here the pool is sorted where it lies.
//!
//! After every method, for every position `p < len` (the invariants of `sparse_set.rs`):
//! - `sparse[entities[p].index] == p` and `values[p]` is `entities[p]`'s value;
//! - `compare(values[p], values[p + 1])` is `Less`, or `Equal` with `entities[p].index < entities[p + 1].index`.
//!
//! The second line is the tie-break: ties under `compare` go to the smaller entity index. Indices are unique in a
//! pool, so `(compare, index)` is a strict total order and the sorted order is a function of the contents alone:
//! every [`SortMethod`] gives the same result, whatever the packed order was before. (The flip side: no method is
//! stable with respect to the previous packed order; the index is the only tie-break.)

use super::entity::Entity;
use super::storage::sparse_set::{SparseSet, PAGE_SIZE};
use std::cmp::Ordering;

/// The sparse page table of a [`SparseSet`].
type Pages = [Option<Box<[u32; PAGE_SIZE]>>];

/// How [`SparseSet::sort_by`] reorders a pool. All three give the same order (see the module docs); they differ in
/// moves, comparisons, memory, and where the comparator's reads land.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortMethod {
    /// Our own comparison sort (quicksort, insertion sort for runs of at most 16, heap sort past a depth limit)
    /// whose every swap is a synchronized swap: entities, values, and the two sparse entries, in step.
    /// O(n log n) comparisons and swaps, no allocation, but each swap costs four writes, two of them to sparse
    /// pages scattered over memory. Invariants hold between any two swaps, so a panicking comparator leaves a
    /// valid (half-sorted) pool.
    InPlace,
    /// Sorts a vector of positions `perm` (`perm[new] = old`) with std's `sort_unstable_by`, then applies it by a
    /// cycle walk: each element moves once along its cycle, one temporary riding along per cycle, and its sparse
    /// entry is written once. O(n log n) comparisons on contiguous values plus O(n) moves; allocates 4 bytes per
    /// value for `perm`. The pool is untouched until `perm` is sorted.
    Permutation,
    /// EnTT's method: sorts `entities` itself with std's `sort_unstable_by`, reading each entity's value through
    /// its not-yet-updated sparse entry, then walks the cycles using `sparse` as the permutation (`sparse[e]` still
    /// holds where `e`'s value sits), moving values into place and fixing `sparse` as it goes. O(n log n)
    /// comparisons and O(n) value moves, no allocation; every comparison costs two sparse lookups, which on a
    /// shuffled pool are cache misses: the slowest of the three there (about 1.6-1.7x permutation at 10^4..10^5 on random input, in `benches/sort.rs`).
    Hybrid,
}

impl SortMethod {
    /// Every method, in declaration order.
    pub const ALL: [SortMethod; 3] = [SortMethod::InPlace, SortMethod::Permutation, SortMethod::Hybrid];

    /// A short lowercase name: "in-place", "permutation" or "hybrid".
    pub fn name(self) -> &'static str {
        match self {
            SortMethod::InPlace => "in-place",
            SortMethod::Permutation => "permutation",
            SortMethod::Hybrid => "hybrid",
        }
    }
}

impl<T> SparseSet<T> {
    /// Sorts the pool by `compare` on values, ties by entity index ascending (see the module docs), using `method`.
    ///
    /// Similar to `pairs.sort_by(|a, b| compare(&a.1, &b.1).then(a.0.index().cmp(&b.0.index())))` on the
    /// `(entity, value)` pairs: O(n log n). If `compare` is not a total order the order is unspecified (std's sort
    /// may also panic), but the pool's invariants hold, even when `compare` panics.
    ///
    /// ```
    /// use swarm::ecs::{SparseSet, SortMethod, Entity};
    /// use std::num::NonZeroU32;
    /// let e = |i| Entity::from_parts(i, NonZeroU32::MIN);
    /// let mut pool = SparseSet::new();
    /// for (i, v) in [(7, 'c'), (3, 'a'), (5, 'b'), (1, 'c')] {
    ///     pool.insert(e(i), v);
    /// }
    /// pool.sort_by(SortMethod::Hybrid, |a, b| a.cmp(b));
    /// assert_eq!(pool.values(), &['a', 'b', 'c', 'c']);
    /// assert_eq!(pool.entities(), &[e(3), e(5), e(1), e(7)]); // the tie 'c' goes to the smaller index
    /// ```
    pub fn sort_by(&mut self, method: SortMethod, mut compare: impl FnMut(&T, &T) -> Ordering) {
        if self.len() < 2 {
            return;
        }
        self.touch_order();
        match method {
            SortMethod::InPlace => {
                let len = self.len();
                quicksort(&mut Synced { set: self, compare: &mut compare }, 0, len, depth_limit(len));
            }
            SortMethod::Permutation => sort_permutation(self, &mut compare),
            SortMethod::Hybrid => sort_hybrid(self, &mut compare),
        }
    }

    /// Sorts the pool by `key` of each value, ties by entity index ascending. `key` runs twice per comparison
    /// (nothing is cached), so keep it cheap.
    pub fn sort_by_key<K: Ord>(&mut self, method: SortMethod, mut key: impl FnMut(&T) -> K) {
        self.sort_by(method, |a, b| key(a).cmp(&key(b)));
    }

    /// Reorders this pool after `order` (typically another pool's [`SparseSet::entities`]), so a walk over both
    /// can go in lock-step: the entities in both come first, in `order`'s order; the rest follow in their previous
    /// relative order. An entity counts as "in both" only if the handle is equal, generation included; a repeat in
    /// `order` counts once.
    ///
    /// Similar to sorting by "position in `order`, else previous position": O(n log n) and a map from entity to
    /// position in `order`. Here O(n + order.len()): one walk of `order` gives each shared entity its new position,
    /// one walk of the pool gives the rest theirs, and the permutation is applied by cycles: one swap per misplaced
    /// value, each putting one value in its final place and writing that value's sparse entry once. EnTT's
    /// `respect` also swaps once per placed entity, but writes both swapped entities' sparse entries, and leaves
    /// the extras in whatever order the swaps made. Allocates 4 bytes per value; [`SparseSet::sort_as_with`] keeps
    /// that buffer.
    pub fn sort_as(&mut self, order: &[Entity]) {
        self.sort_as_with(order, &mut Vec::new());
    }

    /// [`SparseSet::sort_as`] with a caller-kept scratch buffer (4 bytes per value), so a sort repeated every few
    /// frames allocates nothing once the buffer has grown.
    pub fn sort_as_with(&mut self, order: &[Entity], scratch: &mut Vec<u32>) {
        const UNPLACED: u32 = u32::MAX;
        self.touch_order();
        let len = self.len();
        // dest[p]: where the value now at position p goes. Shared entities first, in `order`'s order...
        let dest = scratch;
        dest.clear();
        dest.resize(len, UNPLACED);
        let mut next = 0u32;
        for &entity in order {
            if let Some(p) = self.position(entity.index()) {
                if self.entities[p] == entity && dest[p] == UNPLACED {
                    dest[p] = next;
                    next += 1;
                }
            }
        }
        // ... then the extras, in their previous relative order.
        for d in dest.iter_mut().filter(|d| **d == UNPLACED) {
            *d = next;
            next += 1;
        }
        let SparseSet { sparse, entities, values, .. } = self;
        apply_destinations(sparse, entities, values, dest);
    }

    /// Whether this pool's packed entities are exactly `order`: then position p of both pools is the same entity,
    /// and a two-pool walk may zip the packed arrays without probing. O(n).
    pub fn is_aligned_with(&self, order: &[Entity]) -> bool {
        self.entities == order
    }
}

/// Quicksort's recursion budget before heap sort takes over: 2 * floor(log2 n) + 2, as introsort.
fn depth_limit(len: usize) -> u32 {
    2 * (usize::BITS - len.leading_zeros())
}

/// Runs at most this long are insertion sorted.
const INSERTION_MAX: usize = 16;

/// A pool and its comparator, seen as one sequence with a strict order and a synchronized swap.
struct Synced<'a, T, F> {
    set: &'a mut SparseSet<T>,
    compare: &'a mut F,
}

impl<T, F: FnMut(&T, &T) -> Ordering> Synced<'_, T, F> {
    /// Whether position `a` sorts before position `b`: `compare`, then entity index.
    #[inline]
    fn less(&mut self, a: usize, b: usize) -> bool {
        let set = &*self.set;
        (self.compare)(&set.values[a], &set.values[b])
            .then_with(|| set.entities[a].index().cmp(&set.entities[b].index()))
            == Ordering::Less
    }

    /// Swaps entities, values and the two sparse entries: the invariants hold before and after.
    #[inline]
    fn swap(&mut self, a: usize, b: usize) {
        self.set.swap_positions(a, b);
    }
}

/// Sorts positions `[lo, hi)`. Recurses into the smaller side and loops on the larger, so the stack stays
/// O(log n); past `limit` levels, heap sort finishes the range, so the worst case stays O(n log n).
fn quicksort<T, F: FnMut(&T, &T) -> Ordering>(s: &mut Synced<T, F>, mut lo: usize, mut hi: usize, mut limit: u32) {
    loop {
        let len = hi - lo;
        if len <= INSERTION_MAX {
            insertion_sort(s, lo, hi);
            return;
        }
        if limit == 0 {
            heap_sort(s, lo, hi);
            return;
        }
        limit -= 1;
        let pivot = partition(s, lo, hi);
        if pivot - lo < hi - pivot {
            quicksort(s, lo, pivot, limit);
            lo = pivot + 1;
        } else {
            quicksort(s, pivot + 1, hi, limit);
            hi = pivot;
        }
    }
}

/// Hoare partition of `[lo, hi)` (len >= 3) around the median of first, middle and last; returns the pivot's final
/// position p: `[lo, p)` sorts before it, `(p, hi)` after. Hoare rather than Lomuto: about a third of the swaps,
/// and swaps are what cost here. Indices stay in bounds even if `compare` is inconsistent.
fn partition<T, F: FnMut(&T, &T) -> Ordering>(s: &mut Synced<T, F>, lo: usize, hi: usize) -> usize {
    let (a, b, c) = (lo, lo + (hi - lo) / 2, hi - 1);
    let median = if s.less(a, b) {
        if s.less(b, c) {
            b
        } else if s.less(a, c) {
            c
        } else {
            a
        }
    } else if s.less(a, c) {
        a
    } else if s.less(b, c) {
        c
    } else {
        b
    };
    s.swap(lo, median);
    // The pivot waits at lo. Invariant: [lo + 1, i) sorts before it, (j, hi) after; lo <= j.
    let (mut i, mut j) = (lo + 1, hi - 1);
    loop {
        while i <= j && s.less(i, lo) {
            i += 1;
        }
        while i <= j && s.less(lo, j) {
            j -= 1;
        }
        if i >= j {
            break;
        }
        s.swap(i, j);
        i += 1;
        j -= 1;
    }
    s.swap(lo, j);
    j
}

/// Insertion sort of `[lo, hi)` by adjacent swaps: O(len^2), the fastest for short runs and sorted input.
fn insertion_sort<T, F: FnMut(&T, &T) -> Ordering>(s: &mut Synced<T, F>, lo: usize, hi: usize) {
    for i in lo + 1..hi {
        let mut j = i;
        while j > lo && s.less(j, j - 1) {
            s.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// Heap sort of `[lo, hi)`: O(len log len) always; the fallback when quicksort keeps picking bad pivots.
fn heap_sort<T, F: FnMut(&T, &T) -> Ordering>(s: &mut Synced<T, F>, lo: usize, hi: usize) {
    let len = hi - lo;
    for root in (0..len / 2).rev() {
        sift_down(s, lo, root, len);
    }
    for end in (1..len).rev() {
        s.swap(lo, lo + end);
        sift_down(s, lo, 0, end);
    }
}

/// Max-heap sift-down of `root` within heap `[lo, lo + end)` (heap positions are relative to `lo`).
fn sift_down<T, F: FnMut(&T, &T) -> Ordering>(s: &mut Synced<T, F>, lo: usize, mut root: usize, end: usize) {
    loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && s.less(lo + child, lo + child + 1) {
            child += 1;
        }
        if !s.less(lo + root, lo + child) {
            return;
        }
        s.swap(lo + root, lo + child);
        root = child;
    }
}

/// The sparse entry of `index`, read raw: the packed position it records, even if `entities` no longer agrees
/// (which is what the hybrid method relies on while the entities are sorted and the values are not).
#[inline]
fn sparse_at(sparse: &Pages, index: u32) -> usize {
    let page = sparse[index as usize / PAGE_SIZE].as_ref().expect("a packed entity's sparse page exists");
    page[index as usize % PAGE_SIZE] as usize
}

/// The sparse entry of `index`, to write. Its page exists: the entity is in the pool.
#[inline]
fn sparse_mut(sparse: &mut Pages, index: u32) -> &mut u32 {
    let page = sparse[index as usize / PAGE_SIZE].as_mut().expect("a packed entity's sparse page exists");
    &mut page[index as usize % PAGE_SIZE]
}

fn sort_permutation<T, F: FnMut(&T, &T) -> Ordering>(set: &mut SparseSet<T>, compare: &mut F) {
    let SparseSet { sparse, entities, values, .. } = set;
    let len = entities.len();
    // Scratch: 4 bytes per value, allocated per call (the pool has no field to keep it between sorts).
    // Positions fit in u32: sparse stores them as u32.
    let mut perm: Vec<u32> = (0..len as u32).collect();
    perm.sort_unstable_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        compare(&values[a], &values[b]).then_with(|| entities[a].index().cmp(&entities[b].index()))
    });
    // Apply perm (new position <- old position) cycle by cycle. Walking pos = c0, c1 = perm[c0], c2 = perm[c1],
    // ... back to pos, swap(c_i, c_i+1) fills c_i and hands the old element of pos on to c_i+1: it is the one
    // temporary, and it lands at the cycle's last position, which is where it belongs. The loop stops *before*
    // the step that would return to pos (see `textbook_cycle_walk_regression`). perm[c] = c marks c done.
    for pos in 0..len {
        let mut curr = pos;
        let mut next = perm[curr] as usize;
        if next == pos {
            continue;
        }
        while next != pos {
            entities.swap(curr, next);
            values.swap(curr, next);
            *sparse_mut(sparse, entities[curr].index()) = curr as u32;
            perm[curr] = curr as u32;
            curr = next;
            next = perm[curr] as usize;
        }
        *sparse_mut(sparse, entities[curr].index()) = curr as u32;
        perm[curr] = curr as u32;
    }
}

/// Moves the value at each position p to `dest[p]` (a permutation: old position -> new), cycle by cycle: every
/// swap puts one element where it belongs, so each moves once (plus the one riding along) and each sparse entry
/// is written once. Leaves `dest[p] == p` everywhere. The scatter form of the walk; `sort_permutation` walks the
/// gather form (`perm[new] = old`) and `sort_hybrid` the same with `sparse` as the permutation.
fn apply_destinations<T>(sparse: &mut Pages, entities: &mut [Entity], values: &mut [T], dest: &mut [u32]) {
    for pos in 0..entities.len() {
        if dest[pos] as usize == pos {
            continue;
        }
        while dest[pos] as usize != pos {
            let to = dest[pos] as usize;
            entities.swap(pos, to);
            values.swap(pos, to);
            dest.swap(pos, to);
            *sparse_mut(sparse, entities[to].index()) = to as u32;
        }
        *sparse_mut(sparse, entities[pos].index()) = pos as u32;
    }
}

fn sort_hybrid<T, F: FnMut(&T, &T) -> Ordering>(set: &mut SparseSet<T>, compare: &mut F) {
    let SparseSet { sparse, entities, values, .. } = set;
    let len = entities.len();
    // Sort the entities alone. `sparse` and `values` are untouched meanwhile, so entity e's value is still at
    // values[sparse[e]]: that is the key. Should `compare` (or std's sort) panic, the guard puts the entities
    // back where `sparse` says they were, and the pool is as before.
    {
        let mut guard = RestoreEntities { entities: &mut *entities, sparse: &sparse[..], armed: true };
        guard.entities.sort_unstable_by(|a, b| {
            let (va, vb) = (&values[sparse_at(sparse, a.index())], &values[sparse_at(sparse, b.index())]);
            compare(va, vb).then_with(|| a.index().cmp(&b.index()))
        });
        guard.armed = false;
    }
    // Now sparse[entities[p]] = where entities[p]'s value sits, a permutation (new <- old) that the values must
    // follow: apply it as the permutation method does, with sparse as `perm`, fixing sparse[e] = p as entity e's
    // value reaches position p (which also marks p done). EnTT writes the same walk as swap(next, sparse[next])
    // with the rider starting one step later; the moves are the same. No scratch.
    for pos in 0..len {
        let mut curr = pos;
        let mut next = sparse_at(sparse, entities[curr].index());
        while next != pos {
            values.swap(curr, next);
            *sparse_mut(sparse, entities[curr].index()) = curr as u32;
            curr = next;
            next = sparse_at(sparse, entities[curr].index());
        }
        *sparse_mut(sparse, entities[curr].index()) = curr as u32;
    }
}

/// Undoes a half-done sort of the entities on unwind: while armed, drop moves each entity back to the position
/// `sparse` records for it. O(n): every swap puts one entity in its final place.
struct RestoreEntities<'a> {
    entities: &'a mut Vec<Entity>,
    sparse: &'a Pages,
    armed: bool,
}

impl Drop for RestoreEntities<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        for p in 0..self.entities.len() {
            loop {
                let home = sparse_at(self.sparse, self.entities[p].index());
                // The second test only guards against a sort that lost the permutation (it does not).
                if home == p || self.entities[home] == self.entities[p] {
                    break;
                }
                self.entities.swap(p, home);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU32;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    fn e(index: u32) -> Entity {
        Entity::from_parts(index, NonZeroU32::MIN)
    }

    /// xorshift64: enough randomness for shuffles, no crates.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[derive(Clone, Copy, Debug)]
    enum Shape {
        Random,
        Sorted,
        Reversed,
        NearlySorted,
        FewKeys,
    }
    const SHAPES: [Shape; 5] = [Shape::Random, Shape::Sorted, Shape::Reversed, Shape::NearlySorted, Shape::FewKeys];

    /// `len` values shaped as asked, on scattered indices (several sparse pages) inserted in shuffled order, with
    /// holes: a fifth of extra entities are inserted and removed again, so swap-and-pop has reshuffled the pool.
    fn pool(len: usize, shape: Shape, rng: &mut Rng) -> SparseSet<u64> {
        let mut keys: Vec<u64> = match shape {
            Shape::Random => (0..len).map(|_| rng.next() % 1_000_000).collect(),
            Shape::Sorted => (0..len as u64).collect(),
            Shape::Reversed => (0..len as u64).rev().collect(),
            Shape::NearlySorted => {
                let mut k: Vec<u64> = (0..len as u64).collect();
                for _ in 0..len / 20 + 1 {
                    if len > 1 {
                        let (a, b) = (rng.below(len), rng.below(len));
                        k.swap(a, b);
                    }
                }
                k
            }
            Shape::FewKeys => (0..len).map(|_| rng.next() % 4).collect(),
        };
        let extra = len / 5;
        let mut indices: Vec<u32> = (0..(len + extra) as u32).map(|i| i * 7 + (i % 3) * 5000).collect();
        for i in (1..indices.len()).rev() {
            indices.swap(i, rng.below(i + 1));
        }
        let mut set = SparseSet::new();
        let (kept, removed) = indices.split_at(len);
        // Interleave inserts so removals punch holes in the middle of the packed order.
        for (n, &i) in kept.iter().enumerate() {
            set.insert(e(i), keys[n]);
            if let Some(&r) = removed.get(n) {
                set.insert(e(r), u64::MAX);
            }
        }
        for &r in removed {
            assert_eq!(set.remove(r), Some(u64::MAX));
        }
        // Sorted shapes should reach the sort sorted: rewrite the keys in packed order.
        if matches!(shape, Shape::Sorted | Shape::Reversed | Shape::NearlySorted) {
            keys.truncate(set.len());
            set.values_mut().copy_from_slice(&keys);
        }
        set.assert_invariants();
        set
    }

    /// The reference: a plain sort of the `(entity, value)` pairs by value, then index.
    fn reference<T: Clone + Ord>(set: &SparseSet<T>) -> Vec<(Entity, T)> {
        let mut pairs: Vec<(Entity, T)> = set.iter().map(|(e, v)| (e, v.clone())).collect();
        pairs.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.index().cmp(&b.0.index())));
        pairs
    }

    fn pairs<T: Clone>(set: &SparseSet<T>) -> Vec<(Entity, T)> {
        set.iter().map(|(e, v)| (e, v.clone())).collect()
    }

    const SIZES: [usize; 14] = [0, 1, 2, 3, 4, 5, 15, 16, 17, 33, 100, 257, 1000, 3000];

    #[test]
    fn every_method_matches_a_plain_sort_of_pairs() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for len in SIZES {
            for shape in SHAPES {
                let original = pool(len, shape, &mut rng);
                let expected = reference(&original);
                for method in SortMethod::ALL {
                    let mut set = original.clone();
                    set.sort_by(method, |a, b| a.cmp(b));
                    set.assert_invariants();
                    assert_eq!(pairs(&set), expected, "{} on {len} {shape:?} values", method.name());
                    for (entity, value) in &expected {
                        assert_eq!(set.get(entity.index()), Some(value));
                    }
                }
            }
        }
    }

    #[test]
    fn methods_agree_with_each_other_on_descending_keys_and_sort_by_key() {
        let mut rng = Rng(12345);
        for len in [2, 17, 500, 2048] {
            for shape in SHAPES {
                let original = pool(len, shape, &mut rng);
                let results: Vec<_> = SortMethod::ALL
                    .iter()
                    .map(|&method| {
                        let mut set = original.clone();
                        set.sort_by_key(method, |v| std::cmp::Reverse(v % 10));
                        set.assert_invariants();
                        pairs(&set)
                    })
                    .collect();
                assert_eq!(results[0], results[1], "in-place vs permutation, {len} {shape:?}");
                assert_eq!(results[0], results[2], "in-place vs hybrid, {len} {shape:?}");
                assert!(results[0]
                    .windows(2)
                    .all(|w| w[0].1 % 10 > w[1].1 % 10
                        || (w[0].1 % 10 == w[1].1 % 10 && w[0].0.index() < w[1].0.index())));
            }
        }
    }

    #[test]
    fn sorting_twice_changes_nothing() {
        let mut rng = Rng(7);
        for method in SortMethod::ALL {
            let mut set = pool(1000, Shape::Random, &mut rng);
            set.sort_by(method, |a, b| a.cmp(b));
            let once = pairs(&set);
            set.sort_by(method, |a, b| a.cmp(b));
            assert_eq!(pairs(&set), once);
            set.assert_invariants();
        }
    }

    #[test]
    fn tags_sort_by_index() {
        // With T = () every value is equal, so the tie-break alone decides: index ascending.
        let mut rng = Rng(99);
        for len in [0, 1, 2, 50, 3000] {
            for method in SortMethod::ALL {
                let mut set = SparseSet::new();
                let mut indices: Vec<u32> = (0..len as u32 * 2).step_by(2).collect();
                for i in (1..indices.len()).rev() {
                    indices.swap(i, rng.below(i + 1));
                }
                for &i in &indices {
                    set.insert(e(i), ());
                }
                for &i in indices.iter().step_by(3) {
                    set.remove(i);
                }
                set.sort_by(method, |a, b| a.cmp(b));
                set.assert_invariants();
                assert!(set.entities().windows(2).all(|w| w[0].index() < w[1].index()), "{}", method.name());
            }
        }
    }

    #[test]
    fn owned_values_move_with_their_entities() {
        // Strings catch a value left behind or duplicated by a cycle walk: each must still match its entity.
        let mut rng = Rng(4242);
        for method in SortMethod::ALL {
            let mut set = SparseSet::new();
            for i in 0..1500u32 {
                set.insert(e(i), format!("{:08}-{i}", rng.next() % 300));
            }
            for i in (0..1500).step_by(7) {
                set.remove(i);
            }
            set.sort_by(method, |a, b| a[..8].cmp(&b[..8]));
            set.assert_invariants();
            for (entity, value) in set.iter() {
                assert!(value.ends_with(&format!("-{}", entity.index())), "{value} is not {entity:?}'s");
            }
            assert!(set.values().windows(2).all(|w| w[0][..8] <= w[1][..8]));
        }
    }

    #[test]
    fn heap_sort_and_insertion_sort_alone() {
        // Quicksort rarely hits its depth limit; drive the fallbacks directly over a whole pool.
        let mut rng = Rng(31337);
        for len in [2, 3, 10, 200, 1000] {
            for shape in SHAPES {
                let original = pool(len, shape, &mut rng);
                let expected = reference(&original);
                let mut compare = |a: &u64, b: &u64| a.cmp(b);
                let mut set = original.clone();
                heap_sort(&mut Synced { set: &mut set, compare: &mut compare }, 0, len);
                set.assert_invariants();
                assert_eq!(pairs(&set), expected, "heap sort, {len} {shape:?}");
                let mut set = original.clone();
                quicksort(&mut Synced { set: &mut set, compare: &mut compare }, 0, len, 0);
                assert_eq!(pairs(&set), expected, "depth limit 0, {len} {shape:?}");
                if len <= 200 {
                    let mut set = original.clone();
                    insertion_sort(&mut Synced { set: &mut set, compare: &mut compare }, 0, len);
                    set.assert_invariants();
                    assert_eq!(pairs(&set), expected, "insertion sort, {len} {shape:?}");
                }
            }
        }
    }

    #[test]
    fn inconsistent_comparator_keeps_the_invariants() {
        // A comparator that answers at random: any order is fine, but no out-of-bounds, no hang, no broken pool.
        // std's sort may detect the lie and panic; that must leave a valid pool too.
        for method in SortMethod::ALL {
            let mut rng = Rng(5);
            let mut set = pool(2000, Shape::Random, &mut Rng(6));
            let before = reference(&set);
            let _ = catch_unwind(AssertUnwindSafe(|| {
                set.sort_by(method, |_, _| [Ordering::Less, Ordering::Equal, Ordering::Greater][rng.below(3)]);
            }));
            set.assert_invariants();
            assert_eq!(reference(&set), before, "{}: the contents changed", method.name());
        }
    }

    #[test]
    fn panicking_comparator_leaves_a_valid_pool() {
        for method in SortMethod::ALL {
            let mut set = pool(1000, Shape::Random, &mut Rng(8));
            let before = reference(&set);
            let mut calls = 0;
            let result = catch_unwind(AssertUnwindSafe(|| {
                set.sort_by(method, |a, b| {
                    calls += 1;
                    assert!(calls < 3000, "comparator gives up");
                    a.cmp(b)
                });
            }));
            assert!(result.is_err(), "{}: 1000 values sorted in under 3000 comparisons?", method.name());
            set.assert_invariants();
            assert_eq!(reference(&set), before, "{}: the contents changed", method.name());
        }
    }

    #[test]
    fn hybrid_panic_restores_the_previous_order() {
        let mut set = pool(500, Shape::Random, &mut Rng(9));
        let before = pairs(&set);
        let mut calls = 0;
        let _ = catch_unwind(AssertUnwindSafe(|| {
            set.sort_by(SortMethod::Hybrid, |a, b| {
                calls += 1;
                assert!(calls < 1000);
                a.cmp(b)
            })
        }));
        assert_eq!(pairs(&set), before);
        set.assert_invariants();
    }

    /// The textbook cycle walk, `while curr != next { swap(curr, next); mark curr; curr = next; next = perm[curr] }`,
    /// swaps once more when the cycle closes (curr = last, next = pos), undoing the first placement: for
    /// [A, B, C, D] with perm [3, 1, 0, 2] it yields [A, B, D, C], not [D, B, A, C]; a 2-cycle is swapped twice
    /// and stays put. These are the smallest cases that catch that; both walks here stop at `next == pos`.
    #[test]
    fn textbook_cycle_walk_regression() {
        for method in SortMethod::ALL {
            let mut set = SparseSet::new();
            for (i, key) in [(0, 'c'), (1, 'b'), (2, 'd'), (3, 'a')] {
                set.insert(e(i), key);
            }
            set.sort_by(method, |a, b| a.cmp(b));
            assert_eq!(set.entities(), &[e(3), e(1), e(0), e(2)], "{}", method.name());
            assert_eq!(set.values(), &['a', 'b', 'c', 'd']);
            set.assert_invariants();

            let mut two = SparseSet::new();
            two.insert(e(0), 2);
            two.insert(e(1), 1);
            two.sort_by(method, |a, b| a.cmp(b));
            assert_eq!(two.entities(), &[e(1), e(0)], "{}", method.name());
            assert_eq!(two.values(), &[1, 2]);
            two.assert_invariants();
        }
    }

    #[test]
    fn sort_as_partial_overlap() {
        let mut rng = Rng(2024);
        for (len_a, len_b) in [(0, 10), (10, 0), (1, 1), (50, 80), (300, 200), (2000, 3000)] {
            // A holds indices from one range, B from an overlapping one; both shuffled, with holes.
            let mut a = SparseSet::new();
            let mut b = SparseSet::new();
            let mut ia: Vec<u32> = (0..len_a as u32).map(|i| i * 3).collect();
            let mut ib: Vec<u32> = (0..len_b as u32).map(|i| i * 2 + 1000).collect();
            for v in [&mut ia, &mut ib] {
                for i in (1..v.len()).rev() {
                    v.swap(i, rng.below(i + 1));
                }
            }
            for &i in &ia {
                a.insert(e(i), i as u64);
            }
            for &i in &ib {
                b.insert(e(i), (i as u64, 'b'));
            }
            for &i in ib.iter().step_by(5) {
                b.remove(i);
            }
            a.sort_by(SortMethod::Hybrid, |x, y| y.cmp(x));
            let before: Vec<Entity> = b.entities().to_vec();
            b.sort_as(a.entities());
            b.assert_invariants();

            let shared: Vec<Entity> = a.entities().iter().copied().filter(|x| b.contains(x.index())).collect();
            let extras: Vec<Entity> = before.iter().copied().filter(|x| !a.contains(x.index())).collect();
            assert_eq!(&b.entities()[..shared.len()], &shared[..], "{len_a} {len_b}: shared part");
            assert_eq!(&b.entities()[shared.len()..], &extras[..], "{len_a} {len_b}: extras, stable");
            for (entity, value) in b.iter() {
                assert_eq!(value.0, entity.index() as u64);
            }
            assert_eq!(b.is_aligned_with(a.entities()), a.len() == b.len() && shared.len() == a.len());
        }
    }

    #[test]
    fn sort_as_same_members_aligns() {
        let mut rng = Rng(77);
        let mut a = pool(1000, Shape::Random, &mut rng);
        let mut tags = SparseSet::new();
        for &entity in a.entities().iter().rev() {
            tags.insert(entity, ());
        }
        assert!(!tags.is_aligned_with(a.entities()));
        a.sort_by(SortMethod::Permutation, |x, y| x.cmp(y));
        tags.sort_as(a.entities());
        tags.assert_invariants();
        assert!(tags.is_aligned_with(a.entities()));
        // Already aligned: nothing moves.
        tags.sort_as(a.entities());
        assert!(tags.is_aligned_with(a.entities()));
    }

    #[test]
    fn sort_as_ignores_duplicates_strangers_and_stale_handles() {
        let mut set = SparseSet::new();
        for i in [4, 1, 3, 2, 0] {
            set.insert(e(i), i);
        }
        let stale = Entity::from_parts(2, NonZeroU32::new(2).unwrap());
        // 9 is not in the pool, 3 repeats, 2 comes with a generation the pool does not hold.
        set.sort_as(&[e(9), e(3), e(0), e(3), stale, e(1)]);
        set.assert_invariants();
        assert_eq!(set.entities(), &[e(3), e(0), e(1), e(4), e(2)]);
        assert_eq!(set.values(), &[3, 0, 1, 4, 2]);
        assert!(set.is_aligned_with(&[e(3), e(0), e(1), e(4), e(2)]));
        assert!(!set.is_aligned_with(&[e(3), e(0), e(1), e(4)]));
    }

    #[test]
    fn sort_as_with_a_dirty_buffer_matches_a_model() {
        let mut rng = Rng(5);
        let mut scratch = vec![7u32; 2000]; // longer than the pools, and full of junk
        for len in [0, 1, 300, 800] {
            let mut set = pool(len, Shape::Random, &mut rng);
            // `order`: some members (a few twice), strangers, and members under a generation the pool lacks.
            let mut order: Vec<Entity> = Vec::new();
            for (k, &entity) in set.entities().iter().enumerate().rev() {
                match k % 7 {
                    0 => {}
                    1 => order.push(Entity::from_parts(entity.index(), NonZeroU32::new(9).unwrap())),
                    2 => order.extend([entity, entity]),
                    _ => order.push(entity),
                }
            }
            order.push(e(1_000_000));
            // The model: members of `order` first, by their first appearance; then the rest as they were.
            let mut expected: Vec<Entity> = Vec::new();
            for &entity in &order {
                if set.entities().contains(&entity) && !expected.contains(&entity) {
                    expected.push(entity);
                }
            }
            let rest: Vec<Entity> = set.entities().iter().copied().filter(|x| !expected.contains(x)).collect();
            expected.extend(rest);
            let values: Vec<_> = expected.iter().map(|x| *set.get(x.index()).unwrap()).collect();

            set.sort_as_with(&order, &mut scratch);
            set.assert_invariants();
            assert_eq!(set.entities(), &expected[..], "{len}");
            assert_eq!(set.values(), &values[..], "{len}");
        }
    }

    #[test]
    fn names_are_distinct() {
        let names: Vec<_> = SortMethod::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names, ["in-place", "permutation", "hybrid"]);
    }
}
