//! The sparse-set pool: O(1) insert, get and remove, and a packed array to iterate.
//!
//! Similar to a `Vec<Option<T>>` indexed by entity index (a direct array), but the values sit
//! packed in `entities` and `values` so iteration touches only live values, and the index -> position map (`sparse`)
//! is paged, so its memory grows with the pages of indices touched, not with the highest index.
//!
//! ```text
//!   sparse (pages of PAGE_SIZE u32)       entities (dense)        values (dense)
//!   page 0: [ -, 1, -, 0, ...]            [ 3v1 , 1v2 ]           [ value of 3, value of 1 ]
//!   page 1: None (never touched)             ^ position 0 holds entity index 3
//! ```
//!
//! Invariants, for every position `p < len`:
//! - `sparse[entities[p].index] == p` (through the page table) and `values[p]` is that entity's value;
//! - every other sparse entry is `EMPTY`: an index `i` is in the set iff `sparse[i] != EMPTY`. Every operation
//!   that takes an index out (remove, clear, drain, compaction) writes its entry back to `EMPTY`, so membership
//!   is one load of the sparse entry, not the textbook's second, dependent load of the dense entity to confirm a
//!   possibly stale entry (at 100,000 entities both are cache misses, and a removal or a lookup waits on each);
//! - `entities.len() == values.len()`.
//!
//! Zero-sized components (tags) store no payload: `Vec<T>` of a zero-sized `T` never allocates.

use super::Pool;
use crate::ecs::entity::{AliveTest, Entities, Entity};
use crate::ecs::Component;
use std::mem::size_of;
use std::sync::atomic::{AtomicU64, Ordering};

/// Indices per sparse page. 4096 entries of 4 bytes: one 16 KiB page per 4096 indices touched.
pub const PAGE_SIZE: usize = 4096;
const EMPTY: u32 = u32::MAX;

/// A paged sparse set: `entities` and `values` packed, `sparse` maps an entity index to its packed position.
///
/// ```
/// use swarm::ecs::{SparseSet, Entity};
/// use std::num::NonZeroU32;
/// let e = |i| Entity::from_parts(i, NonZeroU32::MIN);
/// let mut pool = SparseSet::new();
/// pool.insert(e(5), "five");
/// pool.insert(e(900_000), "far away");
/// assert_eq!(pool.get(5), Some(&"five"));
/// assert_eq!(pool.remove(5), Some("five"));
/// assert_eq!(pool.values(), &["far away"]);
/// ```
pub struct SparseSet<T> {
    pub(crate) sparse: Vec<Option<Box<[u32; PAGE_SIZE]>>>,
    pub(crate) entities: Vec<Entity>,
    pub(crate) values: Vec<T>,
    /// What is known of the packed order, in [`ORDER_SLOTS`] slots so that a pool walked in lock-step with two
    /// different partners (positions with velocities, and with teams) stays comparable with both. A slot holds a
    /// stamp (0 is "unknown"): a query that finds pools packed alike gives them all one stamp; from then on the
    /// slot's part of the journal lists every position whose entity may have changed, so two pools with an equal
    /// nonzero stamp (in any slots) are packed alike iff they have the same length and agree at those positions.
    ///
    /// One word a slot, `stamp << 1 | spent`: `spent` says a query gave the pool this stamp, so nothing has changed
    /// under it yet (its changes begin at the next change; a query only holds `&self`). Atomic, and read in one
    /// load, because queries on several threads may read one pool and stamp it at once: each reads a stamp and its
    /// flag that belong together.
    pub(crate) order: [AtomicU64; ORDER_SLOTS],
    /// Where each slot's changes begin in `journal` (set by the first change after its stamp was given).
    since: [usize; ORDER_SLOTS],
    /// The journal's length at which a slot reaches its cap: below it, with no slot spent, a change is one push.
    limit: usize,
    /// The positions changed since the oldest stamp held, each once whatever the slots: a slot's changes are
    /// `journal[since..]`. Kept only while a stamp is nonzero; a wholesale change (a sort, a compaction) resets
    /// every slot to 0 instead, and a slot whose changes reach a quarter of the set (as it was when the slot's
    /// changes began; or 64, if more) is reset.
    journal: Vec<u32>,
}

/// The entry of `index` in sparse pages `sparse`: its packed position, or [`EMPTY`] if absent (a page never touched
/// too). What [`SparseSet`] and its [`PackedOrder`] look up.
#[inline(always)]
fn slot_in(sparse: &[Option<Box<[u32; PAGE_SIZE]>>], index: u32) -> u32 {
    match sparse.get(index as usize / PAGE_SIZE) {
        Some(Some(page)) => page[index as usize % PAGE_SIZE],
        _ => EMPTY,
    }
}

/// How many order stamps a sparse set keeps (see [`SparseSet::packed_order`]): as many partners in distinct
/// lock-step walks as a pool can keep comparing by their changes alone.
pub const ORDER_SLOTS: usize = 2;

/// A sparse set's packed order as a query sees it: the entities, and what is known of how they compare with other
/// pools' (each slot's stamp and journal of changed positions; see [`SparseSet::packed_order`]).
pub struct PackedOrder<'a> {
    /// The packed entities.
    pub entities: &'a [Entity],
    marks: [Mark<'a>; ORDER_SLOTS],
    /// The set's sparse pages: where each index sits ([`PackedOrder::position`]).
    sparse: &'a [Option<Box<[u32; PAGE_SIZE]>>],
}

/// One slot of a [`PackedOrder`]: a stamp, the positions changed since (empty if spent), and the word to restamp.
#[derive(Clone, Copy)]
struct Mark<'a> {
    stamp: u64,
    changed: &'a [u32],
    word: &'a AtomicU64,
}

impl PackedOrder<'_> {
    /// The packed position of `index`, if the set holds it ([`SparseSet::position`]).
    #[inline(always)]
    pub fn position(&self, index: u32) -> Option<usize> {
        match slot_in(self.sparse, index) {
            EMPTY => None,
            position => Some(position as usize),
        }
    }

    /// Whether the two are packed in the same entity order. In O(1) when they share a stamp and nothing changed
    /// since; in O(changes) when they share a stamp (the positions either journal lists are compared, under the
    /// shared stamp with the fewest); else in O(n) (the whole orders are compared).
    pub fn same_as(&self, other: &PackedOrder<'_>) -> bool {
        if self.entities.len() != other.entities.len() {
            return false;
        }
        // Plain loops over the slots, not an iterator chain: this runs at the start of every lock-step walk, and a
        // chain (filter, flat_map over copied slot arrays) measures slower on a frame that starts with cold caches
        // (the peers bench's frame at 10,000).
        let mut fewest: Option<(&[u32], &[u32])> = None;
        for mine in self.marks.iter().filter(|mark| mark.stamp != 0) {
            for theirs in other.marks.iter().filter(|mark| mark.stamp == mine.stamp) {
                if fewest.is_none_or(|(a, b)| mine.changed.len() + theirs.changed.len() < a.len() + b.len()) {
                    fewest = Some((mine.changed, theirs.changed));
                }
            }
        }
        let Some((mine, theirs)) = fewest else {
            return self.entities == other.entities;
        };
        // Equal when stamped, so any difference is at a position one of them changed since.
        mine.iter().chain(theirs).all(|&p| self.entities.get(p as usize) == other.entities.get(p as usize))
    }

    /// Whether the order is known equal to `other`'s without looking at any entity.
    pub fn known_same_as(&self, other: &PackedOrder<'_>) -> bool {
        // The lengths are implied by the journals; checked anyway, since a lock-step walk trusts the answer.
        self.entities.len() == other.entities.len()
            && self.marks.iter().any(|mine| {
                mine.stamp != 0
                    && mine.changed.is_empty()
                    && other.marks.iter().any(|theirs| theirs.stamp == mine.stamp && theirs.changed.is_empty())
            })
    }

    /// Records that `orders` (found equal by [`PackedOrder::same_as`]) are packed alike: one stamp for all, and
    /// their journals under it spent. The stamp is that of a slot with nothing changed since its stamp, if there is
    /// one (that order is exactly its stamp's order, and so are the others now): the pools left with that stamp
    /// elsewhere stay comparable with these through their journals. Otherwise it is a fresh one. A pool that does
    /// not hold the stamp yet takes it in its slot that says least: an unknown one, else the one with the longer
    /// journal. Its other slot keeps its stamp and journal, so a partner it was stamped with before (in another
    /// query) is still compared by changes alone. Crate-private: a wrong call would make a query hand entities each
    /// other's values.
    pub(crate) fn mark_same<'a>(orders: impl IntoIterator<Item = &'a PackedOrder<'a>> + Clone) {
        let clean = orders
            .clone()
            .into_iter()
            .flat_map(|order| order.marks.iter())
            .find(|mark| mark.stamp != 0 && mark.changed.is_empty());
        let stamp = clean.map_or_else(fresh_stamp, |mark| mark.stamp);
        for order in orders {
            let slot = order.marks.iter().find(|mark| mark.stamp == stamp).unwrap_or_else(|| {
                let says = |mark: &&Mark<'_>| if mark.stamp == 0 { usize::MAX } else { mark.changed.len() };
                order.marks.iter().max_by_key(says).expect("ORDER_SLOTS > 0")
            });
            slot.word.store(stamp << 1 | 1, Ordering::Relaxed);
        }
    }

    /// Whether the two share a stamp: [`PackedOrder::same_as`] then looks at changed positions only.
    #[cfg(test)]
    fn share_a_stamp(&self, other: &PackedOrder<'_>) -> bool {
        self.marks.iter().any(|mine| mine.stamp != 0 && other.marks.iter().any(|theirs| theirs.stamp == mine.stamp))
    }

    /// The positions to look at under each slot's stamp (empty if spent or unknown).
    #[cfg(test)]
    fn changed(&self) -> [usize; ORDER_SLOTS] {
        self.marks.map(|mark| mark.changed.len())
    }

    /// Each slot's stamp.
    #[cfg(test)]
    fn stamps(&self) -> [u64; ORDER_SLOTS] {
        self.marks.map(|mark| mark.stamp)
    }
}

static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

/// A stamp no pool has held before.
pub(crate) fn fresh_stamp() -> u64 {
    NEXT_STAMP.fetch_add(1, Ordering::Relaxed)
}

impl<T> Default for SparseSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> SparseSet<T> {
    /// An empty set; allocates nothing.
    pub fn new() -> Self {
        Self {
            sparse: Vec::new(),
            entities: Vec::new(),
            values: Vec::new(),
            order: [const { AtomicU64::new(0) }; ORDER_SLOTS],
            since: [0; ORDER_SLOTS],
            limit: 0,
            journal: Vec::new(),
        }
    }

    /// The packed order as a query sees it (see [`PackedOrder`]).
    pub fn packed_order(&self) -> PackedOrder<'_> {
        let marks = std::array::from_fn(|k| {
            let word = self.order[k].load(Ordering::Relaxed);
            Mark {
                stamp: word >> 1,
                changed: if word & 1 == 1 || word == 0 { &[] } else { &self.journal[self.since[k]..] },
                word: &self.order[k],
            }
        });
        PackedOrder { entities: &self.entities, marks, sparse: &self.sparse }
    }

    /// Marks the packed order as changed wholesale: unknown until a query compares it again.
    #[inline]
    pub(crate) fn touch_order(&mut self) {
        self.order.iter_mut().for_each(|word| *word.get_mut() = 0);
        self.since = [0; ORDER_SLOTS];
        self.limit = 0;
        self.journal.clear();
    }

    /// The slots' words or-ed together: 0 if no stamp is known, odd if a slot was stamped since the last change.
    #[inline(always)]
    fn order_words(&mut self) -> u64 {
        self.order.iter_mut().fold(0, |any, word| any | *word.get_mut())
    }

    /// Records that the entity at `position` may have changed (nothing to record while no stamp is known).
    #[inline(always)]
    pub(crate) fn note_position(&mut self, position: usize) {
        let words = self.order_words();
        if words == 0 {
            return;
        }
        // Every stamp a query gives is marked spent, so with none spent the slots are as the last restart left them.
        let end = self.journal.len();
        if words & 1 == 0 && end < self.limit && end < self.journal.capacity() {
            self.journal.push(position as u32);
        } else {
            self.journal_position(position, words & 1 == 1);
        }
    }

    /// [`SparseSet::note_position`] when a slot was stamped since the last change (`spent`), or the journal is at
    /// `limit` or full; out of line, to keep the fast paths that call it small.
    #[inline(never)]
    fn journal_position(&mut self, position: usize, spent: bool) {
        if (spent || self.journal.len() >= self.limit) && !self.restart_slots() {
            return;
        }
        self.journal.push(position as u32);
    }

    /// Starts the changes of the slots stamped since the last change, resets a slot at its cap (checking more
    /// positions than a quarter of the set would cost about as much as comparing the orders whole), drops the
    /// journal's positions no slot needs, and sets `limit`. Whether any slot is still known.
    fn restart_slots(&mut self) -> bool {
        let most = (self.entities.len() / 4).max(64);
        let end = self.journal.len();
        let (mut first, mut limit, mut restarted) = (usize::MAX, usize::MAX, false);
        for (word, since) in self.order.iter_mut().zip(&mut self.since) {
            let word = word.get_mut();
            if *word & 1 == 1 {
                // Spent: the slot's changes begin here.
                *word &= !1;
                *since = end;
                restarted = true;
            }
            if *word != 0 && end - *since >= most {
                *word = 0;
            }
            if *word != 0 {
                first = first.min(*since);
                limit = limit.min(*since + most);
            }
        }
        if first == usize::MAX {
            self.journal.clear();
            self.limit = 0;
            return false;
        }
        if restarted && first > 0 {
            // The journal stays under twice `most`.
            self.journal.drain(..first);
            self.since.iter_mut().for_each(|since| *since = since.saturating_sub(first));
            limit -= first;
        }
        self.limit = limit;
        true
    }

    #[inline]
    fn split(index: u32) -> (usize, usize) {
        (index as usize / PAGE_SIZE, index as usize % PAGE_SIZE)
    }

    /// The sparse entry of `index`: its packed position, or [`EMPTY`] if absent (a page never touched too).
    #[inline(always)]
    fn slot(&self, index: u32) -> u32 {
        slot_in(&self.sparse, index)
    }

    /// The packed position of `index`, if present.
    #[inline(always)]
    pub fn position(&self, index: u32) -> Option<usize> {
        // Entries are exact (see the module's invariants): the dense entity need not confirm it.
        match self.slot(index) {
            EMPTY => None,
            position => {
                debug_assert_eq!(self.entities[position as usize].index(), index, "a sparse entry is stale");
                Some(position as usize)
            }
        }
    }

    #[inline(always)]
    fn set_position(&mut self, index: u32, position: u32) {
        *Self::slot_mut(&mut self.sparse, index) = position;
    }

    /// The sparse entry of `index`, making its page if needed (a function of the field alone, so the packed
    /// arrays stay borrowable beside it).
    #[inline(always)]
    fn slot_mut(sparse: &mut Vec<Option<Box<[u32; PAGE_SIZE]>>>, index: u32) -> &mut u32 {
        let (page, offset) = Self::split(index);
        if !matches!(sparse.get(page), Some(Some(_))) {
            // Apart, so that the lookup below follows only the test above and the compiler merges the two.
            return &mut Self::make_page(sparse, page)[offset];
        }
        Self::made_slot_mut(sparse, index)
    }

    /// The sparse entry of `index`, whose page exists: an index in the set (a packed entity's) has its page.
    #[inline(always)]
    fn made_slot_mut(sparse: &mut [Option<Box<[u32; PAGE_SIZE]>>], index: u32) -> &mut u32 {
        let (page, offset) = Self::split(index);
        // A message without arguments: formatting the page number would keep it on the stack on the hot path.
        match sparse.get_mut(page) {
            Some(Some(slots)) => &mut slots[offset],
            _ => unreachable!("a present index's page exists"),
        }
    }

    #[cold]
    fn make_page(sparse: &mut Vec<Option<Box<[u32; PAGE_SIZE]>>>, page: usize) -> &mut [u32; PAGE_SIZE] {
        if page >= sparse.len() {
            sparse.resize_with(page + 1, || None);
        }
        sparse[page]
            .get_or_insert_with(|| vec![EMPTY; PAGE_SIZE].into_boxed_slice().try_into().expect("PAGE_SIZE entries"))
    }

    /// Inserts or replaces `entity`'s value; returns the previous value. The entity handle is stored as given.
    #[inline(always)]
    pub fn insert(&mut self, entity: Entity, value: T) -> Option<T> {
        let len = self.entities.len();
        // One walk to the sparse entry serves both the membership test and the write.
        let slot = Self::slot_mut(&mut self.sparse, entity.index());
        let position = *slot as usize;
        if *slot != EMPTY {
            debug_assert_eq!(self.entities[position].index(), entity.index(), "a sparse entry is stale");
            if self.entities[position] != entity {
                self.entities[position] = entity;
                self.note_position(position);
            }
            return Some(std::mem::replace(&mut self.values[position], value));
        }
        *slot = len as u32;
        self.entities.push(entity);
        self.values.push(value);
        self.note_position(len);
        None
    }

    /// Adds the value of `entity`, which must hold none here (see [`Pool::insert_fresh`]). Writes the sparse
    /// entry without reading it.
    #[inline(always)]
    pub(crate) fn insert_fresh(&mut self, entity: Entity, value: T) {
        let len = self.entities.len();
        let slot = Self::slot_mut(&mut self.sparse, entity.index());
        debug_assert_eq!(*slot, EMPTY, "a fresh entity already has a value");
        *slot = len as u32;
        self.entities.push(entity);
        self.values.push(value);
        // Last, as in `take_at` (docs/PERFORMANCE.md, rule 9).
        self.note_position(len);
    }

    /// Gives the values pushed past the end of `entities` (by batch spawning) their entities: `fresh[i]` owns the
    /// `i`-th of them. The entities must hold no value here yet.
    pub(crate) fn append_fresh(&mut self, fresh: &[Entity]) {
        let start = self.entities.len();
        assert_eq!(start + fresh.len(), self.values.len(), "one staged value per fresh entity");
        debug_assert!(fresh.iter().all(|e| !self.contains(e.index())), "a fresh entity already has a value");
        self.entities.extend_from_slice(fresh);
        self.index_from(start);
    }

    /// Points the sparse entries of the entities packed at `start..` at their positions (they were pushed onto
    /// `entities` and `values` directly, by batch spawning).
    pub(crate) fn index_from(&mut self, start: usize) {
        assert_eq!(self.entities.len(), self.values.len(), "one value per packed entity");
        let mut position = start;
        while position < self.entities.len() {
            let (page, offset) = Self::split(self.entities[position].index());
            if matches!(self.sparse.get(page), Some(Some(_))) {
                *Self::slot_mut(&mut self.sparse, self.entities[position].index()) = position as u32;
                position += 1;
                continue;
            }
            // A page not yet made, for a run of consecutive indices (what a fresh world's batch brings): the page is
            // built with the run's positions in place, so each entry is written once, not filled and then set.
            let run = self.entities[position..]
                .iter()
                .take(PAGE_SIZE - offset)
                .enumerate()
                .take_while(|(k, e)| e.index() as usize == page * PAGE_SIZE + offset + k)
                .count();
            let mut entries = Vec::with_capacity(PAGE_SIZE);
            entries.resize(offset, EMPTY);
            entries.extend(position as u32..(position + run) as u32);
            entries.resize(PAGE_SIZE, EMPTY);
            let entries: Box<[u32; PAGE_SIZE]> = entries.into_boxed_slice().try_into().expect("PAGE_SIZE entries");
            if page >= self.sparse.len() {
                self.sparse.resize_with(page + 1, || None);
            }
            self.sparse[page] = Some(entries);
            position += run;
        }
        if self.order_words() != 0 {
            for position in start..self.entities.len() {
                self.note_position(position);
            }
        }
    }

    /// Whether `index` has a value.
    #[inline]
    pub fn contains(&self, index: u32) -> bool {
        self.position(index).is_some()
    }

    /// The value at `index`.
    #[inline]
    pub fn get(&self, index: u32) -> Option<&T> {
        self.position(index).map(|p| &self.values[p])
    }

    /// The value at `index`, mutably.
    #[inline]
    pub fn get_mut(&mut self, index: u32) -> Option<&mut T> {
        self.position(index).map(|p| &mut self.values[p])
    }

    /// Calls `f` with each entity of `entities` that `alive` accepts and the set holds, and its value, in order.
    /// The arrays are bound once, outside the loop, so each handle costs its lookups alone.
    #[inline]
    pub(crate) fn each_of_mut(&mut self, entities: &[Entity], alive: AliveTest<'_>, mut f: impl FnMut(Entity, &mut T)) {
        let (sparse, values) = (&self.sparse[..], &mut self.values[..]);
        for &entity in entities {
            if !alive.test(entity) {
                continue;
            }
            let (page, offset) = Self::split(entity.index());
            if let Some(Some(page)) = sparse.get(page) {
                if let Some(value) = values.get_mut(page[offset] as usize) {
                    f(entity, value);
                }
            }
        }
    }

    #[inline(always)]
    /// Removes `index`'s value by moving the last packed value into its place (swap-and-pop): O(1), but the
    /// order of the packed arrays changes.
    pub fn remove(&mut self, index: u32) -> Option<T> {
        let (page, offset) = Self::split(index);
        let Some(Some(slots)) = self.sparse.get_mut(page) else { return None };
        let slot = &mut slots[offset];
        if *slot == EMPTY {
            return None;
        }
        // Entries are exact: `index` is absent from here on. (The entry is cleared through the page already in
        // hand; the moved entity's, if any, is written after.)
        let position = std::mem::replace(slot, EMPTY) as usize;
        debug_assert_eq!(self.entities[position].index(), index, "a sparse entry is stale");
        Some(self.take_at(position))
    }

    /// Removes the value packed at `position`, whose sparse entry is already `EMPTY`: the last value moves into
    /// its place, and the moved entity's entry follows it.
    #[inline(always)]
    fn take_at(&mut self, position: usize) -> T {
        // The moved entity's entry first: the last entity is read before the swap, not from `position` after it (a
        // load from a line the swap just stored to, which at scale is not in cache, could wait for that store),
        // and the sparse pages are done with before the packed arrays are touched, so fewer values are held at
        // once and fewer registers are saved to the stack (docs/PERFORMANCE.md, rule 9).
        let last = self.entities.len() - 1;
        if position < last {
            let moved = self.entities[last].index();
            *Self::made_slot_mut(&mut self.sparse, moved) = position as u32;
        }
        let value = self.values.swap_remove(position);
        self.entities.swap_remove(position);
        // Last, so that nothing is needed after its out-of-line path: the removal then keeps its values in
        // scratch registers instead of saving others to the stack (docs/PERFORMANCE.md, rule 9).
        self.note_position(position);
        value
    }

    /// Removes the value of `entity` if the set holds it under exactly this handle (same index and generation);
    /// `None` otherwise, changing nothing (absent, or held under another generation's handle).
    #[inline(always)]
    pub fn remove_exact(&mut self, entity: Entity) -> Option<T> {
        let (page, offset) = Self::split(entity.index());
        let Some(Some(slots)) = self.sparse.get_mut(page) else { return None };
        let slot = &mut slots[offset];
        // An EMPTY entry finds no packed entity (the set never holds `u32::MAX` values).
        if self.entities.get(*slot as usize) != Some(&entity) {
            return None;
        }
        let position = std::mem::replace(slot, EMPTY) as usize;
        Some(self.take_at(position))
    }

    /// Removes the values of `entities` (by index) one by one, in order, as [`SparseSet::remove`] on each would;
    /// returns how many were present.
    ///
    /// Each removal touches four places at random: the removed index's sparse entry (read, then cleared), its
    /// packed entity's slot and its value's slot (overwritten by the last ones), and the sparse entry of the last
    /// entity, which moves into the hole. One at a time those misses wait on each other, so the batch goes in
    /// chunks, and each chunk first loads the sparse entries, the packed entities and the moving entities' sparse
    /// entries with plain independent loads, whose misses overlap.
    pub fn remove_each(&mut self, entities: &[Entity]) -> usize {
        const CHUNK: usize = 64;
        let mut removed = 0;
        for chunk in entities.chunks(CHUNK) {
            // A chunk with nothing here changes nothing (a pool of particles seeing fighters die, say).
            if self.warm(chunk) == 0 {
                continue;
            }
            for entity in chunk {
                removed += self.remove(entity.index()).is_some() as usize;
            }
        }
        removed
    }

    /// Reads the sparse entry and the packed entity of each index of `chunk`, and the sparse entries of as many
    /// entities from the end as will move: lines removing `chunk` will touch, loaded with plain loads independent
    /// of one another (so their misses overlap) before the removals need them. Returns how many of `chunk` are
    /// present (an index listed twice counts twice). (Values are not warmed: a value of an unknown type cannot be
    /// loaded without moving it.)
    fn warm(&self, chunk: &[Entity]) -> usize {
        let (mut sink, mut present) = (0u32, 0usize);
        for entity in chunk {
            if let Some(packed) = self.entities.get(self.slot(entity.index()) as usize) {
                sink ^= packed.index();
                present += 1;
            }
        }
        for last in self.entities.iter().rev().take(present) {
            sink ^= self.slot(last.index());
        }
        // The loads are the point; the value is not.
        std::hint::black_box(sink);
        present
    }

    /// Removes the values of many indices; returns how many were present (an index listed twice counts once).
    ///
    /// For a batch of at least an eighth of the set (by the iterator's upper size bound), each index is first
    /// unlinked from `sparse`; then the packed values and the packed entities are each compacted by one
    /// sequential `retain`, and the sparse entries of the survivors that moved are rewritten. The survivors keep
    /// their packed order (unlike swap-and-pop), and removing every value is a clear. Smaller batches, and types
    /// with drop glue (so a panicking `drop` cannot leave the two packed arrays unequal), take a swap-and-pop per
    /// index.
    pub fn remove_many(&mut self, indices: impl IntoIterator<Item = u32>) -> usize {
        let indices = indices.into_iter();
        let many = indices.size_hint().1.is_none_or(|most| most >= self.len() / 8);
        if !many || std::mem::needs_drop::<T>() {
            return indices.filter(|&index| self.remove(index).is_some()).count();
        }
        let (mut removed, mut first) = (0, usize::MAX);
        for index in indices {
            let (page, offset) = Self::split(index);
            let Some(Some(page)) = self.sparse.get_mut(page) else { continue };
            let position = page[offset] as usize;
            if page[offset] != EMPTY {
                page[offset] = EMPTY;
                removed += 1;
                first = first.min(position);
            }
        }
        if removed == 0 {
            return 0;
        }
        self.touch_order();
        if removed == self.len() {
            // Every slot is unlinked already.
            self.entities.clear();
            self.values.clear();
            return removed;
        }
        // A packed entry stays iff its sparse slot still points at it.
        let (sparse, entities, values) = (&self.sparse, &self.entities, &mut self.values);
        let kept = |entity: &Entity, position: usize| {
            let (page, offset) = Self::split(entity.index());
            sparse[page].as_ref().is_some_and(|page| page[offset] as usize == position)
        };
        let mut position = 0;
        values.retain(|_| {
            position += 1;
            kept(&entities[position - 1], position - 1)
        });
        let mut position = 0;
        self.entities.retain(|entity| {
            position += 1;
            kept(entity, position - 1)
        });
        for (position, entity) in self.entities.iter().enumerate().skip(first) {
            *Self::slot_mut(&mut self.sparse, entity.index()) = position as u32;
        }
        removed
    }

    /// Number of values.
    #[inline]
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// The packed entities, in iteration order.
    #[inline]
    pub fn entities(&self) -> &[Entity] {
        &self.entities
    }

    /// The packed values, in the same order as [`SparseSet::entities`].
    #[inline]
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// The packed values, mutably.
    #[inline]
    pub fn values_mut(&mut self) -> &mut [T] {
        &mut self.values
    }

    /// Packed entities and values at once, values mutable.
    #[inline]
    pub fn parts_mut(&mut self) -> (&[Entity], &mut [T]) {
        (&self.entities, &mut self.values)
    }

    /// Iterates `(entity, &value)` in packed order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (Entity, &T)> {
        self.entities.iter().copied().zip(self.values.iter())
    }

    /// Iterates `(entity, &mut value)` in packed order.
    pub fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = (Entity, &mut T)> {
        self.entities.iter().copied().zip(self.values.iter_mut())
    }

    /// Removes everything; keeps the allocations.
    pub fn clear(&mut self) {
        self.touch_order();
        self.unlink_all();
        self.entities.clear();
        self.values.clear();
    }

    /// Writes `EMPTY` to the sparse entry of every packed entity (first, so a panicking `drop` afterwards cannot
    /// leave an entry pointing past the end).
    fn unlink_all(&mut self) {
        for entity in &self.entities {
            let (page, offset) = Self::split(entity.index());
            if let Some(Some(page)) = self.sparse.get_mut(page) {
                page[offset] = EMPTY;
            }
        }
    }

    /// Removes everything, handing each `(entity, value)` to `f` in packed order; keeps the allocations.
    pub fn drain(&mut self, mut f: impl FnMut(Entity, T)) {
        self.touch_order();
        self.unlink_all();
        for (entity, value) in self.entities.drain(..).zip(self.values.drain(..)) {
            f(entity, value);
        }
    }

    /// Reserves room for `additional` more values in the packed arrays.
    pub fn reserve(&mut self, additional: usize) {
        self.entities.reserve(additional);
        self.values.reserve(additional);
    }

    /// Swaps two packed positions, keeping `sparse` in step. The building block of in-place sorting.
    #[inline]
    pub fn swap_positions(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        self.entities.swap(a, b);
        self.values.swap(a, b);
        self.note_position(a);
        self.note_position(b);
        self.set_position(self.entities[a].index(), a as u32);
        self.set_position(self.entities[b].index(), b as u32);
    }

    /// Bytes held: sparse pages touched, the page table, the packed arrays' capacities and the order journal's.
    pub fn bytes(&self) -> usize {
        let pages = self.sparse.iter().filter(|page| page.is_some()).count();
        pages * PAGE_SIZE * size_of::<u32>()
            + self.sparse.capacity() * size_of::<Option<Box<[u32; PAGE_SIZE]>>>()
            + self.entities.capacity() * size_of::<Entity>()
            + self.values.capacity() * size_of::<T>()
            + self.journal.capacity() * size_of::<u32>()
    }

    /// Panics with a message naming the broken invariant.
    #[doc(hidden)]
    pub fn assert_invariants(&self) {
        assert_eq!(self.entities.len(), self.values.len(), "packed entities and values differ in length");
        for (position, entity) in self.entities.iter().enumerate() {
            let (page, offset) = Self::split(entity.index());
            let stored = self.sparse.get(page).and_then(|p| p.as_ref()).map(|p| p[offset]);
            assert_eq!(stored, Some(position as u32), "sparse entry of {entity:?} does not point at its position");
        }
        let linked = self.sparse.iter().flatten().flat_map(|page| page.iter()).filter(|&&p| p != EMPTY).count();
        assert_eq!(linked, self.entities.len(), "a sparse entry of an absent index is not EMPTY");
    }
}

impl<T: Clone> Clone for SparseSet<T> {
    fn clone(&self) -> Self {
        self.clone_with(T::clone)
    }
}

impl<T> SparseSet<T> {
    /// A copy, each value copied by `copy`.
    pub(crate) fn clone_with(&self, copy: fn(&T) -> T) -> Self {
        let mut clone = Self::new();
        self.copy_into(&mut clone, copy);
        clone
    }
}

impl<T> SparseSet<T> {
    /// Makes `into` a copy of this set, each value copied by `copy`, in `into`'s buffers: its sparse pages and
    /// arrays are overwritten in place, and allocate only to grow. Packed alike, so the stamps and the journal hold
    /// for the copy too.
    pub(crate) fn copy_into(&self, into: &mut Self, copy: fn(&T) -> T) {
        into.sparse.clone_from(&self.sparse);
        into.entities.clone_from(&self.entities);
        into.values.clear();
        into.values.extend(self.values.iter().map(copy));
        for (to, from) in into.order.iter_mut().zip(&self.order) {
            *to.get_mut() = from.load(Ordering::Relaxed);
        }
        into.since = self.since;
        into.limit = self.limit;
        into.journal.clone_from(&self.journal);
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SparseSet<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<T: Component> Pool<T> for SparseSet<T> {
    #[inline]
    fn insert(&mut self, entity: Entity, value: T) -> Option<T> {
        SparseSet::insert(self, entity, value)
    }
    // Always: called once per component of a spawned bundle, its registers saved and restored each time would be
    // most of its stores (docs/PERFORMANCE.md, rule 9).
    #[inline(always)]
    fn insert_fresh(&mut self, entity: Entity, value: T) {
        SparseSet::insert_fresh(self, entity, value)
    }
    #[inline]
    fn stage_fresh(&mut self, _entity: Entity, value: T) {
        self.values.push(value);
    }
    #[inline]
    fn commit_fresh(&mut self, fresh: &[Entity]) {
        self.append_fresh(fresh);
    }
    #[inline]
    fn get(&self, index: u32) -> Option<&T> {
        SparseSet::get(self, index)
    }
    #[inline]
    fn get_mut(&mut self, index: u32) -> Option<&mut T> {
        SparseSet::get_mut(self, index)
    }
    fn get_each_mut(&mut self, indices: &[u32]) -> Vec<Option<&mut T>> {
        let positions: Vec<Option<usize>> = indices.iter().map(|&index| self.position(index)).collect();
        super::disjoint_mut(&mut self.values, positions.into_iter())
    }
    #[inline]
    fn remove(&mut self, index: u32) -> Option<T> {
        SparseSet::remove(self, index)
    }
    fn remove_many(&mut self, indices: impl Iterator<Item = u32>) -> usize {
        SparseSet::remove_many(self, indices)
    }
    fn remove_each(&mut self, entities: &[Entity]) -> usize {
        SparseSet::remove_each(self, entities)
    }
    #[inline]
    fn contains(&self, index: u32) -> bool {
        SparseSet::contains(self, index)
    }

    #[inline]
    fn len(&self) -> usize {
        SparseSet::len(self)
    }
    fn collect_indices(&self, out: &mut Vec<u32>) {
        out.extend(self.entities().iter().map(|e| e.index()));
    }
    fn collect_entities(&self, _: &Entities, out: &mut Vec<Entity>) {
        out.extend_from_slice(self.entities());
    }
    fn drain(&mut self, mut f: impl FnMut(u32, T)) {
        SparseSet::drain(self, |entity, value| f(entity.index(), value))
    }
    fn bytes(&self) -> usize {
        SparseSet::bytes(self)
    }
    fn reserve(&mut self, additional: usize) {
        SparseSet::reserve(self, additional)
    }
    #[inline]
    fn packed(&self) -> Option<(&[Entity], &[T])> {
        Some((self.entities(), self.values()))
    }
    #[inline]
    fn order(&self) -> Option<PackedOrder<'_>> {
        Some(self.packed_order())
    }
    #[inline]
    fn packed_mut(&mut self) -> Option<(&[Entity], &mut [T])> {
        Some(self.parts_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU32;

    fn e(index: u32) -> Entity {
        Entity::from_parts(index, NonZeroU32::MIN)
    }

    #[test]
    fn insert_get_remove_keep_invariants() {
        let mut set = SparseSet::new();
        for i in [3, 1, 4, 15, 9, 2, 6] {
            assert_eq!(set.insert(e(i), i * 10), None);
        }
        assert_eq!(set.insert(e(4), 41), Some(40));
        assert_eq!(set.remove(3), Some(30));
        assert_eq!(set.remove(3), None);
        assert_eq!(set.get(4), Some(&41));
        assert!(!set.contains(3) && set.contains(6));
        assert_eq!(set.len(), 6);
        set.assert_invariants();
    }

    /// The most positions any slot of `set` would have a comparison look at.
    fn journaled<T>(set: &SparseSet<T>) -> usize {
        set.packed_order().changed().into_iter().max().unwrap_or(0)
    }

    /// Two pools with the same members, packed alike, stamped together as a query would.
    fn stamped_pair(n: u32) -> (SparseSet<u32>, SparseSet<u32>) {
        let (mut a, mut b) = (SparseSet::new(), SparseSet::new());
        for i in 0..n {
            a.insert(e(i), i);
            b.insert(e(i), i + 1000);
        }
        assert!(a.packed_order().same_as(&b.packed_order()));
        PackedOrder::mark_same([&a.packed_order(), &b.packed_order()]);
        assert!(a.packed_order().known_same_as(&b.packed_order()));
        (a, b)
    }

    #[test]
    fn is_empty_and_reserve() {
        let mut set: SparseSet<u64> = SparseSet::new();
        assert!(set.is_empty());
        set.reserve(100);
        assert!(set.entities.capacity() >= 100 && set.values.capacity() >= 100, "reserve made room");
        set.insert(e(3), 3);
        assert!(!set.is_empty());
    }

    #[test]
    fn clear_and_drain_leave_no_stale_entry() {
        // `clear` keeps the sparse pages but empties their entries: index 1's must not say position 0, which
        // index 5 holds next.
        let mut set = SparseSet::new();
        set.insert(e(1), 10);
        set.insert(e(2), 20);
        set.clear();
        set.insert(e(5), 50);
        assert_eq!(set.position(5), Some(0));
        assert_eq!((set.position(1), set.get(1), set.contains(2)), (None, None, false));
        set.assert_invariants();
        let mut seen = Vec::new();
        set.drain(|entity, value| seen.push((entity, value)));
        assert_eq!(seen, [(e(5), 50)]);
        assert!(!set.contains(5));
        set.insert(e(7), 70);
        assert_eq!((set.position(7), set.get(5)), (Some(0), None));
        set.assert_invariants();
    }

    #[test]
    fn the_journal_holds_up_to_a_quarter_of_the_set() {
        // 1,000 values: up to 250 changed positions are journaled (not just the 64 floor); past that the stamp goes.
        let (mut a, mut b) = stamped_pair(1000);
        for set in [&mut a, &mut b] {
            for i in 0..100 {
                set.insert(e(i), 7);
            }
            for i in 0..100 {
                set.remove(i * 3);
            }
        }
        assert_eq!(journaled(&a), 100, "each removal journals the position it refilled");
        assert!(a.packed_order().same_as(&b.packed_order()));
        for i in 100..200 {
            a.remove(i * 3);
        }
        assert!(journaled(&a) <= 250);
        for i in 200..300 {
            a.remove(i * 3);
        }
        assert_eq!(journaled(&a), 0, "a journal past a quarter of the set drops the stamp");
        assert_eq!(a.packed_order().stamps(), [0; ORDER_SLOTS]);
        a.assert_invariants();
    }

    #[test]
    fn pools_under_different_stamps_are_compared_whole() {
        // Two stamped pairs with the same members in opposite orders, neither changed since its stamp: the stamps
        // differ, so the orders must be compared entity by entity (the empty journals prove nothing).
        let (a, _) = stamped_pair(10);
        let (mut c, mut d) = (SparseSet::new(), SparseSet::new());
        for i in (0..10).rev() {
            c.insert(e(i), i);
            d.insert(e(i), i);
        }
        PackedOrder::mark_same([&c.packed_order(), &d.packed_order()]);
        assert!(journaled(&a) == 0 && journaled(&c) == 0);
        assert!(!a.packed_order().share_a_stamp(&c.packed_order()));
        assert!(!a.packed_order().same_as(&c.packed_order()));
        assert!(c.packed_order().same_as(&d.packed_order()));
    }

    #[test]
    fn the_journal_keeps_pools_with_the_same_changes_known_alike() {
        let (mut a, mut b) = stamped_pair(100);
        // The same removals and pushes on both: still alike, found by looking only at the changed positions.
        for set in [&mut a, &mut b] {
            set.remove(7);
            set.remove(50);
            set.insert(e(200), 0);
        }
        assert!(!a.packed_order().known_same_as(&b.packed_order()), "changes since the stamp must be looked at");
        assert!(a.packed_order().same_as(&b.packed_order()));
        assert_eq!(journaled(&a), 3);
        PackedOrder::mark_same([&a.packed_order(), &b.packed_order()]);
        assert!(a.packed_order().known_same_as(&b.packed_order()));
        // The next change drops the spent entries.
        a.remove(3);
        assert!(a.packed_order().changed().contains(&1), "{:?}", a.packed_order().changed());
    }

    #[test]
    fn the_journal_catches_pools_that_drifted_apart_at_equal_length() {
        // Different removals: same length, different orders.
        let (mut a, mut b) = stamped_pair(100);
        a.remove(7);
        b.remove(8);
        assert!(!a.packed_order().same_as(&b.packed_order()));
        // The same members in another order (a swap on one side only).
        let (mut a, b) = stamped_pair(100);
        a.swap_positions(10, 20);
        assert!(!a.packed_order().same_as(&b.packed_order()));
        // A push on each side, different entities.
        let (mut a, mut b) = stamped_pair(100);
        a.insert(e(300), 0);
        b.insert(e(301), 0);
        assert!(!a.packed_order().same_as(&b.packed_order()));
        // A batch append on each side (the batch-spawn path), different entities.
        let (mut a, mut b) = stamped_pair(100);
        a.values.push(0);
        a.append_fresh(&[e(300)]);
        b.values.push(0);
        b.append_fresh(&[e(301)]);
        assert!(!a.packed_order().same_as(&b.packed_order()));
        // A wholesale change forgets the stamp: compared whole (and found different).
        let (mut a, b) = stamped_pair(100);
        a.sort_by(crate::ecs::SortMethod::InPlace, |x, y| y.cmp(x));
        assert_eq!(a.packed_order().stamps(), [0; ORDER_SLOTS]);
        assert!(!a.packed_order().same_as(&b.packed_order()));
    }

    #[test]
    fn index_from_builds_pages_for_runs_and_sets_entries_on_pages_already_made() {
        // Runs that start mid-page, cross a page boundary, skip indices, and land on a page made before.
        let mut set = SparseSet::new();
        set.insert(e(5), 5u32);
        let fresh: Vec<Entity> = (4090..4100).chain([9000, 9001, 7, 6]).chain(12_000..12_005).map(e).collect();
        for entity in &fresh {
            set.values.push(entity.index());
        }
        set.append_fresh(&fresh);
        for entity in fresh.iter().chain([&e(5)]) {
            assert_eq!(set.get(entity.index()), Some(&entity.index()), "index {}", entity.index());
        }
        for absent in [0, 4, 8, 4089, 4100, 8999, 9002, 11_999, 12_005, 20_000] {
            assert!(!set.contains(absent), "index {absent}");
        }
        assert_eq!(set.len(), fresh.len() + 1);
    }

    #[test]
    fn a_pool_restamped_with_one_partner_keeps_its_stamp_with_another() {
        // Three pools stamped together; `a` and `b` get the same change and a new stamp; `c` got another change.
        let (mut a, mut b) = stamped_pair(50);
        let mut c = a.clone();
        a.remove(5);
        b.remove(5);
        c.remove(6);
        assert!(a.packed_order().same_as(&b.packed_order()));
        PackedOrder::mark_same([&a.packed_order(), &b.packed_order()]);
        assert!(a.packed_order().known_same_as(&b.packed_order()));
        // `a` keeps the old stamp, with its journal, in its other slot: `c` is compared with it by the changed
        // positions alone, and found different.
        assert!(a.packed_order().share_a_stamp(&c.packed_order()));
        assert!(!a.packed_order().same_as(&c.packed_order()));
        assert!(!c.packed_order().same_as(&b.packed_order()));
    }

    /// Three pools of 50 alike, `a` and `b` stamped together and `c` a copy of `a`, then the same removal in all.
    fn changed_trio() -> (SparseSet<u32>, SparseSet<u32>, SparseSet<u32>) {
        let (mut a, mut b) = stamped_pair(50);
        let mut c = a.clone();
        for set in [&mut a, &mut b, &mut c] {
            set.remove(5);
        }
        (a, b, c)
    }

    #[test]
    fn a_pool_found_alike_with_an_unchanged_one_takes_its_stamp() {
        // Three pools alike; `a` and `b` are compared (through their journals) and restamped, `c` is left behind.
        let (a, mut b, c) = changed_trio();
        assert!(a.packed_order().same_as(&b.packed_order()));
        PackedOrder::mark_same([&a.packed_order(), &b.packed_order()]);
        let fresh = *a.packed_order().stamps().iter().max().unwrap();
        assert!(!c.packed_order().stamps().contains(&fresh), "neither had an empty journal: a fresh stamp");
        assert!(b.packed_order().stamps().contains(&fresh));
        // `c` found alike with `a` (through the old stamp's journals): it takes `a`'s clean stamp, so `b` and `c`
        // are now known alike too.
        assert!(c.packed_order().same_as(&a.packed_order()));
        PackedOrder::mark_same([&c.packed_order(), &a.packed_order()]);
        assert!(c.packed_order().stamps().contains(&fresh));
        assert!(b.packed_order().known_same_as(&c.packed_order()));
        // And a later change on `b` alone is caught through the journals.
        b.swap_positions(1, 2);
        assert!(!b.packed_order().same_as(&c.packed_order()));
    }

    #[test]
    fn a_pool_walked_with_two_partners_is_compared_by_changes_with_both() {
        // Positions walked with velocities, then with teams, every frame, all three getting the same spawns and
        // despawns: after the first frame no comparison looks at more than the frames' changed positions.
        let (mut position, mut velocity, mut team) = (SparseSet::new(), SparseSet::new(), SparseSet::new());
        for i in 0..1000 {
            for set in [&mut position, &mut velocity, &mut team] {
                set.insert(e(i), i);
            }
        }
        let mut next = 1000;
        for frame in 0..20u32 {
            for k in 0..10 {
                let gone = position.entities()[(frame as usize * 37 + k * 101) % position.len()].index();
                for set in [&mut position, &mut velocity, &mut team] {
                    set.remove(gone);
                    set.insert(e(next), next);
                }
                next += 1;
            }
            for (one, other) in [(&position, &velocity), (&team, &position)] {
                let (one, other) = (one.packed_order(), other.packed_order());
                if frame > 0 {
                    assert!(one.share_a_stamp(&other), "frame {frame}: compared whole");
                    assert!(one.changed().iter().chain(&other.changed()).all(|&n| n <= 40), "frame {frame}");
                }
                assert!(one.same_as(&other));
                PackedOrder::mark_same([&one, &other]);
            }
        }
    }

    impl SparseSet<u32> {
        /// The slots' words and where their changes begin.
        fn order_words_of(&self) -> ([u64; ORDER_SLOTS], [usize; ORDER_SLOTS], usize) {
            (self.order.each_ref().map(|w| w.load(Ordering::Relaxed)), self.since, self.limit)
        }
    }

    /// Gives the entity packed at `position` a newer generation: the order changes there only.
    fn renew(set: &mut SparseSet<u32>, position: usize) {
        let old = set.entities()[position];
        let newer = Entity::from_parts(old.index(), old.generation().checked_add(1).unwrap());
        set.insert(newer, old.index());
    }

    #[test]
    fn a_copy_into_an_old_set_is_the_set_with_what_it_knows_of_its_order() {
        // `a` stamped with `b`, then changed; copied into a set that held other entities on more pages. The copy
        // has `a`'s entries, values and order knowledge: it compares with `b` by the same changes, and a further
        // change to both keeps them comparable.
        let (mut a, mut b) = stamped_pair(300);
        renew(&mut a, 7);
        a.remove(40);
        b.remove(40);
        let mut old = SparseSet::new();
        for i in (0..9000).step_by(3) {
            old.insert(e(i), i);
        }
        PackedOrder::mark_same([&old.packed_order(), &old.clone().packed_order()]);
        a.copy_into(&mut old, |v| *v);
        assert_eq!((old.entities(), old.values()), (a.entities(), a.values()));
        assert!((0..9000).all(|i| old.slot(i) == a.slot(i)), "the sparse entries are a's");
        assert_eq!(old.order_words_of(), a.order_words_of());
        assert_eq!(old.packed_order().changed(), a.packed_order().changed());
        assert!(old.packed_order().share_a_stamp(&b.packed_order()));
        assert!(!old.packed_order().same_as(&b.packed_order()), "position 7 differs");
        renew(&mut b, 7);
        assert!(old.packed_order().same_as(&b.packed_order()));
    }

    #[test]
    fn a_slot_keeps_its_changes_when_the_other_restarts() {
        // `a` is stamped with `c` in one slot and with `b` in the other; a change to `a` and `b` alone, then one to
        // `a` and `c` alone. When `a`'s slot with `b` restarts, the positions before it are dropped from the
        // journal, but not the ones `a`'s slot with `c` still needs.
        let (mut a, mut b, mut c) = changed_trio();
        PackedOrder::mark_same([&a.packed_order(), &c.packed_order()]);
        renew(&mut a, 10);
        renew(&mut b, 10);
        assert!(a.packed_order().same_as(&b.packed_order()));
        PackedOrder::mark_same([&a.packed_order(), &b.packed_order()]);
        renew(&mut a, 20);
        renew(&mut c, 20);
        assert!(a.packed_order().share_a_stamp(&c.packed_order()));
        assert!(!a.packed_order().same_as(&c.packed_order()), "position 10 differs");
        assert!(a.packed_order().changed().iter().all(|&n| n <= 2), "{:?}", a.packed_order().changed());
    }

    #[test]
    fn order_verdicts_match_the_entities_under_random_changes() {
        // Four pools, random changes to random subsets of them, random comparisons of two or three: `same_as` and
        // `known_same_as` must agree with the entity arrays every time, whatever the slots hold.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let mut pools: Vec<SparseSet<u32>> = (0..4).map(|_| SparseSet::new()).collect();
        for i in 0..200 {
            pools.iter_mut().for_each(|pool| _ = pool.insert(e(i), i));
        }
        let (mut next, mut alike_seen, mut by_changes) = (200, 0, 0);
        for _ in 0..6000 {
            // Mostly the same change to all four (pools that stay alike), sometimes to some of them.
            let all = rng.gen_bool(0.85);
            let subset: Vec<usize> = (0..4).filter(|_| all || rng.gen_bool(0.5)).collect();
            match rng.gen_range(0..23) {
                0..=7 => {
                    let gone = rng.gen_range(0..next);
                    subset.iter().for_each(|&k| _ = pools[k].remove(gone));
                }
                8..=15 => {
                    subset.iter().for_each(|&k| _ = pools[k].insert(e(next), next));
                    next += 1;
                }
                16 if !pools[0].is_empty() => {
                    // One entity traded for a new one: the length stays, the order changes at one or two positions.
                    let gone = pools[0].entities()[rng.gen_range(0..pools[0].len())].index();
                    for &k in &subset {
                        if pools[k].remove(gone).is_some() {
                            pools[k].insert(e(next), next);
                        }
                    }
                    next += 1;
                }
                16 => {}
                19 | 20 if !pools[0].is_empty() => {
                    // The same index under a newer generation: the order changes at one position only.
                    let old = pools[0].entities()[rng.gen_range(0..pools[0].len())];
                    for &k in &subset {
                        if let Some(position) = pools[k].position(old.index()) {
                            renew(&mut pools[k], position);
                        }
                    }
                }
                17 => {
                    let (a, b) = (rng.gen_range(0..pools[0].len().max(1)), rng.gen_range(0..pools[0].len().max(1)));
                    for &k in &subset {
                        if a.max(b) < pools[k].len() {
                            pools[k].swap_positions(a, b);
                        }
                    }
                }
                18 => {
                    // A copy is packed alike (stamps and journals included).
                    let (from, to) = (rng.gen_range(0..4), rng.gen_range(0..4));
                    pools[to] = pools[from].clone();
                }
                _ => {
                    // A sort puts pools with the same members back in one order (stamps forgotten).
                    for &k in &subset {
                        pools[k].sort_by(crate::ecs::SortMethod::InPlace, |x, y| x.cmp(y));
                    }
                }
            }
            // A game's queries: each pool walked with several partners, in pairs and in threes.
            const QUERIES: [&[usize]; 5] = [&[0, 1], &[2, 0], &[3, 1], &[0, 1, 2], &[2, 3]];
            let picked = QUERIES[rng.gen_range(0..QUERIES.len())];
            let orders: Vec<PackedOrder<'_>> = picked.iter().map(|&k| pools[k].packed_order()).collect();
            let first = &orders[0];
            let mut alike = true;
            for order in &orders[1..] {
                let equal = order.entities == first.entities;
                if order.known_same_as(first) {
                    assert!(equal, "known alike but not");
                }
                by_changes += usize::from(order.share_a_stamp(first));
                assert_eq!(order.same_as(first), equal);
                alike &= equal;
            }
            if alike {
                alike_seen += 1;
                PackedOrder::mark_same(orders.iter());
            }
        }
        assert!(alike_seen > 100 && by_changes > 100, "the walk exercised both ({alike_seen}, {by_changes})");
    }

    #[test]
    fn a_long_journal_gives_up_the_stamp() {
        let (mut a, _) = stamped_pair(400);
        for i in 0..150 {
            a.remove(i);
        }
        assert_eq!(a.packed_order().stamps(), [0; ORDER_SLOTS], "past a quarter of the set (100 here), compare whole");
        assert_eq!(journaled(&a), 0);
    }

    #[test]
    fn removal_empties_the_sparse_entry() {
        let mut set = SparseSet::new();
        set.insert(e(1), 'a');
        set.insert(e(2), 'b');
        set.remove(1);
        // Index 2 moved to position 0, which index 1's entry would still name had removal left it.
        assert_eq!(set.slot(1), EMPTY);
        assert!(!set.contains(1));
        assert_eq!(set.get(2), Some(&'b'));
        set.assert_invariants();
    }

    #[test]
    fn remove_exact_takes_only_the_handle_it_holds() {
        let mut set = SparseSet::new();
        for i in 0..5 {
            set.insert(e(i), i);
        }
        let other_generation = Entity::from_parts(1, NonZeroU32::new(2).unwrap());
        assert_eq!(set.remove_exact(other_generation), None, "index 1 is held under generation 1");
        assert_eq!(set.remove_exact(e(9)), None, "absent");
        assert_eq!(set.remove_exact(e(5_000_000)), None, "never paged");
        assert_eq!(set.get(1), Some(&1));
        assert_eq!(set.remove_exact(e(1)), Some(1));
        assert_eq!(set.entities()[1], e(4), "the last value moved into the hole");
        assert_eq!((set.get(4), set.contains(1)), (Some(&4), false));
        set.assert_invariants();
        // The last one: nothing moves.
        assert_eq!(set.remove_exact(e(3)), Some(3));
        assert_eq!(set.remove_exact(e(3)), None);
        set.assert_invariants();
    }

    #[test]
    fn swap_and_pop_moves_the_last_value() {
        let mut set = SparseSet::new();
        for i in 0..4 {
            set.insert(e(i), i);
        }
        set.remove(0);
        assert_eq!(set.entities()[0], e(3));
        set.assert_invariants();
    }

    #[test]
    fn remove_each_leaves_what_removing_one_by_one_leaves() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg32::seed_from_u64(5);
        for round in 0..50 {
            let (mut batched, mut single) = (SparseSet::new(), SparseSet::new());
            let n = rng.gen_range(0..300u32);
            for i in 0..n {
                let index = rng.gen_range(0..10_000);
                batched.insert(e(index), i);
                single.insert(e(index), i);
            }
            // Present and absent indices, repeats, never-paged pages, and chunks of every length around 64.
            let targets: Vec<Entity> = (0..rng.gen_range(0..200))
                .map(|_| match rng.gen_range(0..3) {
                    0 if !batched.is_empty() => batched.entities()[rng.gen_range(0..batched.len())],
                    1 => e(rng.gen_range(0..10_000)),
                    _ => e(rng.gen_range(0..1_000_000)),
                })
                .collect();
            let expected = targets.iter().filter(|t| single.remove(t.index()).is_some()).count();
            assert_eq!(batched.remove_each(&targets), expected, "round {round}");
            assert_eq!(batched.entities(), single.entities(), "round {round}");
            assert_eq!(batched.values(), single.values(), "round {round}");
            batched.assert_invariants();
        }
    }

    #[test]
    fn remove_many_compacts_in_order_and_counts_each_once() {
        let mut set = SparseSet::new();
        for i in 0..40 {
            set.insert(e(i * 3), i);
        }
        // Present, duplicated, absent and never-paged indices together (7 of 40: the compacting path).
        let targets = [0, 30, 30, 31, 117, 60, 1_000_000];
        assert_eq!(set.remove_many(targets), 4);
        set.assert_invariants();
        let left: Vec<u32> = set.values().to_vec();
        let expected: Vec<u32> = (0..40).filter(|i| ![0, 10, 39, 20].contains(i)).collect();
        assert_eq!(left, expected, "the survivors keep their packed order");
        for i in [0, 30, 117, 60] {
            assert!(!set.contains(i));
        }
        assert_eq!(set.get(3), Some(&1));
        // Re-inserting after a compaction lands at the end and is found.
        set.insert(e(30), 7);
        assert_eq!(set.get(30), Some(&7));
        set.assert_invariants();
        // Everything at once empties the set; a few at once take the swap-and-pop path.
        let all: Vec<u32> = set.entities().iter().map(|e| e.index()).collect();
        assert_eq!(set.remove_many(all.iter().copied()), all.len());
        assert!(set.is_empty() && !set.contains(3));
        for i in 0..64 {
            set.insert(e(i), i);
        }
        assert_eq!(set.remove_many([5]), 1);
        assert_eq!(set.len(), 63);
        assert_eq!(set.entities()[5], e(63), "a small batch is a swap-and-pop");
        set.assert_invariants();
        // An iterator without an upper bound compacts; gaps start mid-way and the last value survives.
        let mut wanted = [20u32, 21, 40, 41, 42, 43, 44, 45].into_iter();
        let unbounded = std::iter::from_fn(move || wanted.next());
        assert_eq!(unbounded.size_hint().1, None);
        assert_eq!(set.remove_many(unbounded), 8);
        let left: Vec<u32> = set.values().to_vec();
        let mut expected: Vec<u32> = (0..64).filter(|i| *i != 5 && *i != 63).collect();
        expected.insert(5, 63);
        expected.retain(|i| ![20, 21, 40, 41, 42, 43, 44, 45].contains(i));
        assert_eq!(left, expected);
        set.assert_invariants();
    }

    #[test]
    fn remove_many_drops_values_with_drop_glue() {
        let mut set = SparseSet::new();
        let counter = std::rc::Rc::new(());
        for i in 0..32 {
            set.insert(e(i), counter.clone());
        }
        assert_eq!(set.remove_many(0..16), 16);
        assert_eq!(std::rc::Rc::strong_count(&counter), 17);
        set.assert_invariants();
    }

    #[test]
    fn memory_grows_with_pages_touched_not_highest_index() {
        let mut set = SparseSet::new();
        // 64 indices spread over a million: 64 pages at most, far from a million-entry array.
        for k in 0..64u32 {
            set.insert(e(k * 15_625), k as u64);
        }
        let page_bytes = PAGE_SIZE * 4;
        let bytes = set.bytes();
        assert!(bytes >= 64 * page_bytes, "{bytes} bytes cannot hold 64 pages");
        assert!(bytes < 64 * page_bytes + 16 * 1024, "{bytes} bytes: more than the pages touched");
        assert!(bytes < 1_000_000 * 4 / 2, "paging saved nothing against a flat sparse array");
        // Dense indices in one page cost one page.
        let mut dense = SparseSet::new();
        for i in 0..4096 {
            dense.insert(e(i), ());
        }
        assert_eq!(dense.sparse.iter().flatten().count(), 1);
    }

    #[test]
    fn tags_store_no_payload() {
        let mut set = SparseSet::new();
        for i in 0..1000 {
            set.insert(e(i), ());
        }
        let untagged = set.sparse.iter().flatten().count() * PAGE_SIZE * 4
            + set.sparse.capacity() * 8
            + set.entities.capacity() * 8;
        assert_eq!(set.bytes(), untagged, "a tag pool should hold entities only");
    }
}
