//! Change detection: for the component types a world tracks ([`World::track`]), which entities' values were
//! added, changed or removed since a moment.
//!
//! **Ticks.** A moment is a tick, a `u64` the world counts up in its exclusive steps only: each system run takes one
//! when it is prepared (its writes are stamped with it), [`World::clear_trackers`] takes one (the moment queries on
//! the world compare against), and a change made directly on the world is stamped with the tick after the last one
//! taken. So the ticks, and every answer, are the same for every thread count: they follow the schedule's order,
//! never timing. A `u64` counting a system run at a time does not wrap in any run a user could make.
//!
//! **What counts as a change.** A value added (spawn, insert, a command's spawn or insert), a value replaced by an
//! insert, and a value handed out as `&mut T`: every row a query loop visits with a `&mut T` term (the loop may
//! write it), `get`/`get_many` of such a query, [`World::get_mut`], [`World::get_many_mut`], a view's `get_mut`.
//! Removals (remove, despawn) are listed apart ([`Tracker::removed`]).
//!
//! **Layout.** Per tracked type, two stamps per entity index (added, last changed) and a log of `(tick, index)` in
//! the order stamped: nothing lives in the storage, so every backend and every live switch gives the same answers.
//! A pass over the changed rows reads the log's tail back to the moment asked about and sorts what it finds by
//! index (handle order): it costs the changed rows, not the tracked ones. An entry is *current* if the index was
//! not stamped again or emptied since; the log is compacted to its current entries when it doubles.

use super::component::{ComponentId, ComponentSet};
use super::entity::{Entities, Entity};
use super::storage::Registry;
use super::world::World;
use super::Component;
use crate::ecs::events::EventKind;
use crate::ecs::pipeline::{HookSet, HookTable};

/// One tracked type's stamps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Track {
    /// Per entity index: the tick its value was added (0: it has none).
    added: Vec<u64>,
    /// A bit per entity index: whether it holds a value (`added` is not 0). What a despawn asks of every tracked
    /// type, for entities mostly without it: a bit stays in cache where `added` would cost a miss.
    held: Vec<u64>,
    /// Per entity index: the tick its value last changed (0: it has none).
    changed: Vec<u64>,
    /// `(tick, index)` in the order stamped; ticks never decrease.
    log: Vec<(u64, u32)>,
    /// Values removed (a removal or a despawn): `(tick, entity)`, in order.
    removed: Vec<(u64, Entity)>,
    /// Entities holding a value.
    live: usize,
    /// The exact mode's copies and waiting writes ([`World::track_exact`]); `None`: every write counts.
    exact: Option<Exact>,
}

/// A copy of each value of one type, by entity index: what the exact mode compares a written value with.
pub(crate) trait Shadow: Send + Sync {
    /// Whether the value of type `id` at `index` in `world` differs from the copy (one present, the other not).
    fn differs(&self, world: &World, id: ComponentId, index: u32) -> bool;
    /// Copies the value at `index` (or forgets the copy if there is none).
    fn refresh(&mut self, world: &World, id: ComponentId, index: u32);
    /// Appends every index holding a value that differs from its copy, in the storage's order, but those `stale`
    /// names.
    fn differing(&self, world: &World, stale: &dyn Fn(u32) -> bool, out: &mut Vec<u32>);
    /// A whole comparison: copies every value that differs from its copy, but those `stale` names, and appends
    /// their indices in ascending order. One pass over the values, in pieces on the world's threads; each value
    /// that differs is copied from the pass itself (no second lookup), and the indices are put in order through a
    /// bitmap of the index range when they are many (more than one in 256) instead of a sort.
    fn refresh_differing(&mut self, world: &World, stale: &(dyn Fn(u32) -> bool + Sync), out: &mut Vec<u32>);
    /// Forgets every copy.
    fn reset(&mut self);
    fn clone_box(&self) -> Box<dyn Shadow>;
    /// A shadow of the same type with no copies.
    fn empty_box(&self) -> Box<dyn Shadow>;
}

/// A world's tracked types and its exact ones, by type: see [`World::tracking`].
pub(crate) struct Tracking {
    tracked: Vec<std::any::TypeId>,
    exact: Vec<(std::any::TypeId, Box<dyn Shadow>)>,
}

struct Copies<T> {
    /// By entity index.
    values: Vec<Option<T>>,
    /// Per piece of a whole comparison: the values found to differ, with their indices (kept, so a steady frame
    /// allocates nothing).
    found: Vec<Vec<(u32, T)>>,
}

impl<T> Copies<T> {
    fn new() -> Self {
        Self { values: Vec::new(), found: Vec::new() }
    }
}

/// The copy at `index`, the list grown to hold it.
fn copy_at<T>(values: &mut Vec<Option<T>>, index: u32) -> &mut Option<T> {
    if values.len() <= index as usize {
        values.resize_with((index as usize + 1).next_power_of_two().max(64), || None);
    }
    &mut values[index as usize]
}

impl<T: Component + PartialEq + Clone> Shadow for Copies<T> {
    fn differs(&self, world: &World, id: ComponentId, index: u32) -> bool {
        self.values.get(index as usize).and_then(Option::as_ref) != world.storage.get::<T>(id, index)
    }
    fn refresh(&mut self, world: &World, id: ComponentId, index: u32) {
        *copy_at(&mut self.values, index) = world.storage.get::<T>(id, index).cloned();
    }
    fn differing(&self, world: &World, stale: &dyn Fn(u32) -> bool, out: &mut Vec<u32>) {
        // One pass over the values in the storage's own order (the copies are read by index).
        world.query_ref::<&T>().for_each(|entity, value| {
            let index = entity.index();
            if self.values.get(index as usize).and_then(Option::as_ref) != Some(value) && !stale(index) {
                out.push(index);
            }
        });
    }
    fn refresh_differing(&mut self, world: &World, stale: &(dyn Fn(u32) -> bool + Sync), out: &mut Vec<u32>) {
        let copies = &self.values;
        world.query_ref::<&T>().par_fold(&mut self.found, Vec::clear, |found, entity, value| {
            let index = entity.index();
            if copies.get(index as usize).and_then(Option::as_ref) != Some(value) && !stale(index) {
                found.push((index, value.clone()));
            }
        });
        let start = out.len();
        for piece in &mut self.found {
            for (index, value) in piece.drain(..) {
                *copy_at(&mut self.values, index) = Some(value);
                out.push(index);
            }
        }
        ascending(out, start, self.values.len());
    }
    fn reset(&mut self) {
        self.values.clear();
    }
    fn clone_box(&self) -> Box<dyn Shadow> {
        Box::new(Copies { values: self.values.clone(), found: Vec::new() })
    }
    fn empty_box(&self) -> Box<dyn Shadow> {
        Box::new(Copies::<T>::new())
    }
}

/// The exact mode of a tracked type: a write handed out as `&mut` *waits* (with its tick) until the world can
/// compare the value with its copy; it counts as a change only if they differ. A loop that hands out every value
/// marks the type whole (one pass over the values compares them all) instead of listing its rows. A value put
/// (added or replaced) is stamped at once and its copy refreshed at the next comparison.
///
/// Every write waiting has the same tick: direct writes take the world's current tick, a system's writes are
/// compared when its run ends, and the world compares before it takes a tick. So the log stays in tick order.
pub(crate) struct Exact {
    shadow: Box<dyn Shadow>,
    /// Per entity index: the tick of the latest write waiting (0: none), and whether the copy needs refreshing.
    waiting: Vec<(u64, bool)>,
    /// The indices with a waiting write or a stale copy, each once.
    queue: Vec<u32>,
    /// The tick of a loop that handed out every value (0: none).
    whole: u64,
    /// What a comparison found: indices, then `(index, tick)` to stamp (kept, so a steady frame allocates nothing).
    found: Vec<u32>,
    pub(crate) settled: Vec<(u32, u64)>,
}

impl Exact {
    /// No copies (a shadow with none), nothing waiting.
    fn empty() -> Self {
        let shadow: Box<dyn Shadow> = Box::new(Copies::<()>::new());
        Self { shadow, waiting: Vec::new(), queue: Vec::new(), whole: 0, found: Vec::new(), settled: Vec::new() }
    }

    fn note(&mut self, index: u32, tick: u64, stale: bool) {
        if self.waiting.len() <= index as usize {
            self.waiting.resize((index as usize + 1).next_power_of_two().max(64), (0, false));
        }
        let slot = &mut self.waiting[index as usize];
        if *slot == (0, false) {
            self.queue.push(index);
        }
        if stale {
            slot.1 = true;
        } else {
            slot.0 = tick;
        }
    }

    fn stale(&self, index: u32) -> bool {
        self.waiting.get(index as usize).is_some_and(|slot| slot.1)
    }

    fn waits(&self) -> bool {
        self.whole != 0 || !self.queue.is_empty()
    }

    /// The tick of a write waiting at `index` (which holds a value) whose value differs from its copy.
    fn differing_at(&self, index: u32, seen: Seen<'_>) -> Option<u64> {
        let (world, id) = seen?;
        let &(tick, stale) = self.waiting.get(index as usize).unwrap_or(&(0, false));
        let tick = tick.max(self.whole);
        (tick != 0 && !stale && self.shadow.differs(world, id, index)).then_some(tick)
    }

    /// Compares every waiting write of type `id` (whose track is `track`) in `world`: `settled` lists the indices
    /// whose value differs, each with its write's tick, in stamping order; their copies and the stale ones are
    /// refreshed. Nothing waits afterwards.
    fn settle(&mut self, track: &Track, world: &World, id: ComponentId) {
        self.settled.clear();
        if self.whole != 0 {
            let tick = std::mem::take(&mut self.whole);
            let mut found = std::mem::take(&mut self.found);
            found.clear();
            // In index order: the log (and a snapshot of it) is the same on every backend and thread count.
            // Only a queued index can be stale: with none queued (the usual case: a frame's puts were compared
            // before its loops ran) the pass skips the per-index lookup, a likely cache miss each.
            let waiting = &self.waiting;
            let stale = |index: u32| waiting.get(index as usize).is_some_and(|slot| slot.1);
            let none = |_: u32| false;
            let stale: &(dyn Fn(u32) -> bool + Sync) = if self.queue.is_empty() { &none } else { &stale };
            self.shadow.refresh_differing(world, stale, &mut found);
            self.settled.extend(found.iter().map(|&index| (index, tick)));
            self.found = found;
        }
        for k in 0..self.queue.len() {
            let index = self.queue[k];
            let (tick, stale) = std::mem::take(&mut self.waiting[index as usize]);
            if !track.has(index) {
                continue;
            }
            if stale {
                self.shadow.refresh(world, id, index);
            } else if self.shadow.differs(world, id, index) {
                self.shadow.refresh(world, id, index);
                self.settled.push((index, tick));
            }
        }
        self.queue.clear();
    }
}

impl Clone for Exact {
    fn clone(&self) -> Self {
        Self {
            shadow: self.shadow.clone_box(),
            waiting: self.waiting.clone(),
            queue: self.queue.clone(),
            whole: self.whole,
            found: Vec::new(),
            settled: Vec::new(),
        }
    }
}

/// Two exact modes are alike when the same writes wait (the copies follow the values).
impl PartialEq for Exact {
    fn eq(&self, other: &Self) -> bool {
        let mut mine: Vec<_> = self.queue.iter().map(|&i| (i, self.waiting[i as usize])).collect();
        let mut theirs: Vec<_> = other.queue.iter().map(|&i| (i, other.waiting[i as usize])).collect();
        mine.sort_unstable();
        theirs.sort_unstable();
        mine == theirs && self.whole == other.whole
    }
}

impl Eq for Exact {}

impl std::fmt::Debug for Exact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exact").field("waiting", &self.queue.len()).field("whole", &self.whole).finish_non_exhaustive()
    }
}

/// Where a reader compares the writes waiting in an exact track: the world and the type's id (`None`: nothing
/// waits, the world compared them before lending its storage).
pub(crate) type Seen<'w> = Option<(&'w World, ComponentId)>;

impl Track {
    #[inline]
    fn grow(&mut self, index: u32) {
        let need = index as usize + 1;
        if self.added.len() < need {
            let len = need.next_power_of_two().max(64);
            self.added.resize(len, 0);
            self.changed.resize(len, 0);
            self.held.resize(len / 64, 0);
        }
    }

    /// Whether `index` holds a value.
    #[inline]
    pub(crate) fn has(&self, index: u32) -> bool {
        self.held.get(index as usize / 64).is_some_and(|&word| word & (1 << (index % 64)) != 0)
    }

    /// Flips whether `index` holds a value (grown already): a value came or went.
    #[inline]
    fn flip(&mut self, index: u32) {
        if let Some(word) = self.held.get_mut(index as usize / 64) {
            *word ^= 1 << (index % 64);
        }
    }

    /// The value of `index` changed at `tick` (it holds one).
    #[inline]
    pub(crate) fn stamp(&mut self, index: u32, tick: u64) {
        self.grow(index);
        let slot = &mut self.changed[index as usize];
        if *slot != tick {
            *slot = tick;
            self.log.push((tick, index));
            if self.log.len() > 2 * self.live + 64 {
                self.compact();
            }
        }
    }

    /// The value of `index` (it holds one) was handed out as `&mut` at `tick`: stamped, or in the exact mode left
    /// waiting for a comparison ([`Track::compare`]).
    #[inline]
    pub(crate) fn write(&mut self, index: u32, tick: u64) {
        match &mut self.exact {
            None => self.stamp(index, tick),
            Some(exact) => exact.note(index, tick, false),
        }
    }

    /// A value was put at `index` at `tick`: added if it had none, else changed (replaced).
    #[inline]
    pub(crate) fn put(&mut self, index: u32, tick: u64) {
        self.grow(index);
        if self.added[index as usize] == 0 {
            self.added[index as usize] = tick;
            self.flip(index);
            self.live += 1;
        }
        self.stamp(index, tick);
        if let Some(exact) = &mut self.exact {
            exact.note(index, tick, true);
        }
    }

    /// Whether writes wait for a comparison.
    #[inline]
    pub(crate) fn waits(&self) -> bool {
        self.exact.as_ref().is_some_and(Exact::waits)
    }

    /// Compares every waiting write of type `id` with its copy, `world` holding the values (this track may be a
    /// copy of the world's): a value that differs is stamped with its write's tick and copied; one that is equal
    /// is not a change.
    pub(crate) fn compare(&mut self, world: &World, id: ComponentId) {
        let Some(mut exact) = self.exact.take() else { return };
        exact.settle(self, world, id);
        for &(index, tick) in &exact.settled {
            self.stamp(index, tick);
        }
        self.exact = Some(exact);
    }

    /// `index` holds a value (it held none) added at `added` and last changed at `changed`: a loaded stamp.
    fn hold_loaded(&mut self, index: u32, added: u64, changed: u64) {
        self.grow(index);
        (self.added[index as usize], self.changed[index as usize]) = (added, changed);
        self.flip(index);
        self.live += 1;
    }

    /// `entity`'s value went at `tick` (if it had one).
    #[inline]
    pub(crate) fn take(&mut self, entity: Entity, tick: u64) {
        let index = entity.index();
        if self.has(index) {
            self.added[index as usize] = 0;
            self.changed[index as usize] = 0;
            self.flip(index);
            self.live -= 1;
            self.removed.push((tick, entity));
        }
    }

    /// Keeps only the current entries of the log (in order).
    #[cold]
    fn compact(&mut self) {
        let changed = &self.changed;
        self.log.retain(|&(tick, index)| changed[index as usize] == tick);
    }

    /// Appends the indices whose value changed (or was added, with `added_only`) after `since`, in ascending order.
    /// A few are sorted; many (more than one index in 256) are set in a bitmap of the index range and read back in
    /// order, which costs the changed rows and a sweep of `bound / 64` words instead of a sort.
    /// Writes waiting in the exact mode count as if compared now, against `seen`.
    pub(crate) fn since(&self, since: u64, added_only: bool, seen: Seen<'_>, out: &mut Vec<u32>) {
        let start = out.len();
        self.logged_since(since, added_only, out);
        if let (Some(exact), Some((world, _))) = (self.exact.as_ref().filter(|_| !added_only), seen) {
            let before = out.len();
            if exact.whole > since {
                exact.shadow.differing(world, &|index| exact.stale(index), out);
            }
            let waiting = exact.queue.iter().copied();
            out.extend(waiting.filter(|&index| self.waiting_change(index, seen).is_some_and(|tick| tick > since)));
            if out.len() > before {
                out[start..].sort_unstable();
                dedup_from(out, start);
            }
        }
    }

    fn logged_since(&self, since: u64, added_only: bool, out: &mut Vec<u32>) {
        let entries = &self.log[self.log.partition_point(|&(tick, _)| tick <= since)..];
        let current = entries.iter().filter(|&&(tick, index)| {
            self.changed[index as usize] == tick && (!added_only || self.added[index as usize] > since)
        });
        let bound = self.changed.len();
        if entries.len() > 64 && entries.len() > bound / 256 {
            BITS.with_borrow_mut(|bits| {
                bits.clear();
                bits.resize(bound.div_ceil(64), 0);
                for &(_, index) in current {
                    bits[index as usize / 64] |= 1 << (index % 64);
                }
                for (word, &set) in bits.iter().enumerate() {
                    let mut set = set;
                    while set != 0 {
                        out.push(word as u32 * 64 + set.trailing_zeros());
                        set &= set - 1;
                    }
                }
            });
            return;
        }
        let start = out.len();
        out.extend(current.map(|&(_, index)| index));
        out[start..].sort_unstable();
        // A value taken and put back within one tick is logged twice.
        dedup_from(out, start);
    }

    /// How many entries of the log are newer than `since` (current or not), and writes waiting: what a pass after
    /// `since` reads.
    pub(crate) fn newer_than(&self, since: u64) -> usize {
        let waiting = match &self.exact {
            Some(exact) if exact.whole != 0 => self.live + exact.queue.len(),
            Some(exact) => exact.queue.len(),
            None => 0,
        };
        self.log.len() - self.log.partition_point(|&(tick, _)| tick <= since) + waiting
    }

    /// Whether the value of `index` changed (or was added, with `added_only`) after `since`; a write waiting in
    /// the exact mode counts as if compared now, against `seen`.
    #[inline]
    pub(crate) fn changed_since(&self, index: u32, since: u64, added_only: bool, seen: Seen<'_>) -> bool {
        let stamps = if added_only { &self.added } else { &self.changed };
        stamps.get(index as usize).is_some_and(|&t| t > since)
            || (!added_only && seen.is_some() && self.waiting_change(index, seen).is_some_and(|t| t > since))
    }

    /// The tick of a write waiting at `index` (which holds a value) that will count when compared.
    fn waiting_change(&self, index: u32, seen: Seen<'_>) -> Option<u64> {
        self.exact.as_ref().filter(|_| self.has(index))?.differing_at(index, seen)
    }

    /// Drops the removals at or before `tick`.
    fn forget_removed(&mut self, tick: u64) {
        let keep = self.removed.partition_point(|&(t, _)| t <= tick);
        self.removed.drain(..keep);
    }
}

thread_local! {
    /// The bitmap a pass over many changed rows reads back in order, kept for the next pass on this thread (a
    /// steady frame allocates nothing).
    static BITS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The indices a change filter's pass lists before they become handles, kept likewise.
    pub(crate) static INDICES: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Puts `out[start..]` (distinct indices below `bound`) in ascending order: a few by a sort, many (more than one
/// index in 256 of the range) through a bitmap read back in order, which costs them and a sweep of `bound / 64`
/// words.
fn ascending(out: &mut Vec<u32>, start: usize, bound: usize) {
    let n = out.len() - start;
    if n <= 64 || n <= bound / 256 {
        out[start..].sort_unstable();
        return;
    }
    BITS.with_borrow_mut(|bits| {
        bits.clear();
        bits.resize(bound.div_ceil(64), 0);
        for &index in &out[start..] {
            bits[index as usize / 64] |= 1 << (index % 64);
        }
        out.truncate(start);
        for (word, &set) in bits.iter().enumerate() {
            let mut set = set;
            while set != 0 {
                out.push(word as u32 * 64 + set.trailing_zeros());
                set &= set - 1;
            }
        }
    });
}

/// Keeps the first of each run of equal values in `out[start..]` (sorted).
fn dedup_from(out: &mut Vec<u32>, start: usize) {
    let mut kept = start;
    for k in start..out.len() {
        if kept == start || out[kept - 1] != out[k] {
            out[kept] = out[k];
            kept += 1;
        }
    }
    out.truncate(kept);
}

/// A world's change state: the tick, the moment its own queries compare against, and a [`Track`] per tracked type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Changes {
    /// The tick a direct change is stamped with: one past the last tick taken.
    tick: u64,
    /// The moment queries on the world compare against ([`World::clear_trackers`]), and the one before it.
    pub(crate) last_clear: u64,
    previous_clear: u64,
    pub(crate) tracked: ComponentSet,
    /// The tracked types in the exact mode.
    exact: ComponentSet,
    /// By component id.
    tracks: Vec<Option<Track>>,
    /// The tick each function system last ran with, by the slot it took when first prepared (0: never ran).
    runs: Vec<u64>,
    /// The next slot to hand out (not saved: an app's systems take slots 0, 1, .. in the order they first run, so
    /// a snapshot loaded before an app's first frame gives each system its saved last run).
    pub(crate) next_slot: usize,
}

impl Default for Changes {
    fn default() -> Self {
        Self {
            tick: 1,
            last_clear: 0,
            previous_clear: 0,
            tracked: ComponentSet::EMPTY,
            exact: ComponentSet::EMPTY,
            tracks: Vec::new(),
            runs: Vec::new(),
            next_slot: 0,
        }
    }
}

/// A tracked type's stamps as a snapshot keeps them (by the schema's name for the type).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct SavedTrack {
    pub(crate) name: String,
    /// `(index, added, changed)` of every index holding a value.
    stamps: Vec<(u32, u64, u64)>,
    /// The log's current entries, in order.
    log: Vec<(u64, u32)>,
    removed: Vec<(u64, Entity)>,
}

/// A world's change state as a snapshot keeps it: the ticks, the systems' last runs and each tracked type's stamps
/// (types the schema names; the others are not saved).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct SavedChanges {
    tick: u64,
    last_clear: u64,
    previous_clear: u64,
    runs: Vec<u64>,
    pub(crate) tracks: Vec<SavedTrack>,
}

impl Changes {
    /// The change state to save (writes waiting in the exact mode compared against `storage`, as they would be
    /// now); `name` names a tracked type in the snapshot (`None`: not saved).
    pub(crate) fn save(&self, world: &World, name: impl Fn(ComponentId) -> Option<String>) -> SavedChanges {
        let tracks = self.tracked.iter().filter_map(|id| {
            let compared;
            let mut track = self.track(id)?;
            if track.waits() {
                let mut copy = track.clone();
                copy.compare(world, id);
                compared = copy;
                track = &compared;
            }
            let stamps = (0..track.added.len() as u32)
                .filter(|&index| track.has(index))
                .map(|index| (index, track.added[index as usize], track.changed[index as usize]))
                .collect();
            let mut log: Vec<(u64, u32)> =
                track.log.iter().copied().filter(|&(tick, index)| track.changed[index as usize] == tick).collect();
            // Within a tick, in index order (a loop stamps in the storage's order): the same bytes on every backend.
            log.sort_unstable();
            Some(SavedTrack { name: name(id)?, stamps, log, removed: track.removed.clone() })
        });
        SavedChanges {
            tick: self.tick,
            last_clear: self.last_clear,
            previous_clear: self.previous_clear,
            runs: self.runs.clone(),
            tracks: tracks.collect(),
        }
    }

    /// The change state `saved` describes, its types' ids given by `id`; `bound` is the saved allocator's index
    /// bound. Refused (with why) if a tick or an index is impossible.
    pub(crate) fn load(
        saved: SavedChanges,
        id: impl Fn(&str) -> Option<ComponentId>,
        bound: u32,
    ) -> Result<Changes, String> {
        let mut changes = Changes {
            // A file without change state (version 1) says tick 0, which stamps nothing: the first tick is 1.
            tick: saved.tick.max(1),
            last_clear: saved.last_clear,
            previous_clear: saved.previous_clear,
            runs: saved.runs,
            ..Changes::default()
        };
        // A tick taken is before the current one; a change made directly is stamped with the current one.
        let taken_late = |tick: u64| tick >= saved.tick;
        let late = |tick: u64| tick > saved.tick;
        if saved.last_clear >= saved.tick.max(1)
            || saved.previous_clear > saved.last_clear
            || changes.runs.iter().any(|&t| taken_late(t))
        {
            return Err(format!("impossible change ticks (tick {}, last clear {})", saved.tick, saved.last_clear));
        }
        for saved_track in saved.tracks {
            let name = &saved_track.name;
            let id = id(name).ok_or_else(|| format!("change state of `{name}`, which the schema does not name"))?;
            let mut track = Track::default();
            for &(index, added, changed) in &saved_track.stamps {
                if index >= bound || added == 0 || changed < added || late(changed) || track.has(index) {
                    return Err(format!("impossible stamps of `{name}` at index {index}"));
                }
                track.hold_loaded(index, added, changed);
            }
            if saved_track.log.windows(2).any(|w| w[0].0 > w[1].0)
                || saved_track.log.iter().any(|&(tick, index)| track.changed.get(index as usize) != Some(&tick))
                || saved_track.removed.iter().any(|&(tick, _)| late(tick))
            {
                return Err(format!("an impossible change log of `{name}`"));
            }
            (track.log, track.removed) = (saved_track.log, saved_track.removed);
            if changes.tracks.len() <= id as usize {
                changes.tracks.resize_with(id as usize + 1, || None);
            }
            changes.tracks[id as usize] = Some(track);
            changes.tracked.insert(id);
        }
        Ok(changes)
    }

    /// Makes loaded stamps agree with the values there are: `live` is every live entity's index, `holds` whether an
    /// index holds a value of a type. A stamp of an index holding no value of its type is refused (with the type's
    /// name from `name`); a value without a stamp (a file written by a build that stamped a version 1 file's
    /// values with tick 0, which is none) is stamped as added at tick 1, as a version 1 file's values are now.
    pub(crate) fn agree(
        &mut self,
        live: &[u32],
        holds: impl Fn(ComponentId, u32) -> bool,
        name: impl Fn(ComponentId) -> String,
    ) -> Result<(), String> {
        for id in self.tracked.iter() {
            let Some(track) = self.tracks.get_mut(id as usize).and_then(Option::as_mut) else { continue };
            if let Some(index) = (0..track.added.len() as u32).find(|&index| track.has(index) && !holds(id, index)) {
                return Err(format!("stamps of `{}` at index {index}, which holds none", name(id)));
            }
            for &index in live {
                if !track.has(index) && holds(id, index) {
                    track.hold_loaded(index, 1, 1);
                }
            }
        }
        Ok(())
    }

    /// A slot for a function system's last run.
    pub(crate) fn new_slot(&mut self) -> usize {
        self.next_slot += 1;
        self.next_slot - 1
    }

    /// The tick the system of `slot` last ran with (0: never).
    pub(crate) fn last_run(&self, slot: usize) -> u64 {
        self.runs.get(slot).copied().unwrap_or(0)
    }

    pub(crate) fn set_last_run(&mut self, slot: usize, tick: u64) {
        if self.runs.len() <= slot {
            self.runs.resize(slot + 1, 0);
        }
        self.runs[slot] = tick;
    }

    /// Takes a tick: every stamp so far is at or before it, every later one after it.
    pub(crate) fn take_tick(&mut self) -> u64 {
        let tick = self.tick;
        self.tick += 1;
        tick
    }

    /// The tick a direct change is stamped with now.
    #[inline]
    pub(crate) fn tick(&self) -> u64 {
        self.tick
    }

    /// Whether any type is tracked.
    #[inline]
    pub(crate) fn any(&self) -> bool {
        !self.tracked.is_empty()
    }

    #[inline]
    pub(crate) fn is_tracked(&self, id: ComponentId) -> bool {
        self.tracked.contains(id)
    }

    /// Whether type `id` is tracked in the exact mode.
    #[inline]
    pub(crate) fn is_exact(&self, id: ComponentId) -> bool {
        self.exact.contains(id)
    }

    /// The track of type `id`, if tracked.
    #[inline]
    pub(crate) fn track(&self, id: ComponentId) -> Option<&Track> {
        self.tracks.get(id as usize)?.as_ref()
    }

    #[inline]
    pub(crate) fn track_mut(&mut self, id: ComponentId) -> Option<&mut Track> {
        self.tracks.get_mut(id as usize)?.as_mut()
    }

    /// Starts tracking type `id`, whose values are now at `indices`: each counts as added now.
    pub(crate) fn start(&mut self, id: ComponentId, indices: impl Iterator<Item = u32>) {
        if self.tracks.len() <= id as usize {
            self.tracks.resize_with(id as usize + 1, || None);
        }
        if self.tracks[id as usize].is_some() {
            return;
        }
        let mut track = Track::default();
        for index in indices {
            track.put(index, self.tick);
        }
        self.tracks[id as usize] = Some(track);
        self.tracked.insert(id);
    }

    /// Every value is gone (a cleared world): the tracks empty, the types stay tracked (exactly, if they were).
    pub(crate) fn forget_values(&mut self) {
        for track in self.tracks.iter_mut().flatten() {
            let exact = track.exact.take().map(|mut exact| {
                exact.shadow.reset();
                Exact { shadow: exact.shadow, ..Exact::empty() }
            });
            *track = Track { exact, ..Track::default() };
        }
    }

    /// The types in the exact mode, each with an empty copy of its shadow: what a world keeps when its contents
    /// are replaced (by type: the new registry numbers them its own way).
    pub(crate) fn exact_types(&self, components: &Registry) -> Vec<(std::any::TypeId, Box<dyn Shadow>)> {
        let exact = self.exact.iter().filter_map(|id| Some((id, self.track(id)?.exact.as_ref()?)));
        exact.map(|(id, exact)| (components.info(id).type_id, exact.shadow.empty_box())).collect()
    }

    /// Marks the hook of change detection in `table`: spawns and despawns if anything is tracked, and the inserts
    /// and removals of each tracked type.
    pub(crate) fn mark(&self, table: &mut HookTable) {
        if self.any() {
            table.mark(EventKind::Spawn, HookSet::TRACK, true);
            table.mark(EventKind::Despawn, HookSet::TRACK, true);
        }
        for id in self.tracked.iter() {
            table.mark(EventKind::Insert(id), HookSet::TRACK, true);
            table.mark(EventKind::Remove(id), HookSet::TRACK, true);
        }
    }

    /// Keeps, of the first `n` of `ids`, the types not in the exact mode (returns how many); every value of the
    /// others was handed out as `&mut` at `tick`, to be compared in one pass.
    pub(crate) fn write_whole(&mut self, ids: &mut [ComponentId], n: usize, tick: u64) -> usize {
        let mut kept = 0;
        for k in 0..n {
            match self.track_mut(ids[k]).and_then(|track| track.exact.as_mut()) {
                Some(exact) => exact.whole = tick,
                None => {
                    ids[kept] = ids[k];
                    kept += 1;
                }
            }
        }
        kept
    }

    /// The values of `ids` at `indices` were handed out as `&mut` at `tick` (each index holds them all).
    pub(crate) fn stamp_all(&mut self, ids: &[ComponentId], indices: &[u32], tick: u64) {
        for &id in ids {
            if let Some(track) = self.track_mut(id) {
                for &index in indices {
                    track.write(index, tick);
                }
            }
        }
    }

    /// The tracked types of `set` were put at `entity` now.
    pub(crate) fn put(&mut self, set: &ComponentSet, entity: Entity) {
        let tick = self.tick;
        for id in set.iter() {
            if let Some(track) = self.track_mut(id) {
                track.put(entity.index(), tick);
            }
        }
    }

    /// Every tracked value of `entity` went now (a despawn).
    pub(crate) fn despawned(&mut self, entity: Entity) {
        let tick = self.tick;
        for track in self.tracks.iter_mut().flatten() {
            track.take(entity, tick);
        }
    }

    /// Type `id`'s value of `entity` went now (a removal).
    pub(crate) fn removed(&mut self, id: ComponentId, entity: Entity) {
        let tick = self.tick;
        if let Some(track) = self.track_mut(id) {
            track.take(entity, tick);
        }
    }

    /// Type `id`'s value was put at `entity` now (an insert).
    pub(crate) fn inserted(&mut self, id: ComponentId, entity: Entity) {
        let tick = self.tick;
        if let Some(track) = self.track_mut(id) {
            track.put(entity.index(), tick);
        }
    }

    /// A new moment for the world's queries; removals older than the one before it are forgotten.
    pub(crate) fn clear(&mut self) {
        let forget = self.previous_clear;
        self.previous_clear = self.last_clear;
        self.last_clear = self.take_tick();
        for track in self.tracks.iter_mut().flatten() {
            track.forget_removed(forget);
        }
    }
}

/// What a query's change filters read: the tracks, and the moment to compare against.
#[derive(Clone, Copy)]
#[doc(hidden)]
pub struct ChangeView<'w> {
    pub(crate) changes: &'w Changes,
    pub(crate) components: &'w Registry,
    pub(crate) since: u64,
    /// The world writes waiting in an exact track are compared in (`None`: a storage lent exclusively, compared
    /// before it was lent).
    pub(crate) world: Option<&'w World>,
}

impl<'w> ChangeView<'w> {
    /// The track of `T`, if tracked, and where its waiting writes are compared.
    #[inline]
    pub(crate) fn track_of<T: Component>(&self) -> Option<(&'w Track, Seen<'w>)> {
        let id = self.components.id::<T>()?;
        Some((self.changes.track(id)?, self.world.map(|world| (world, id))))
    }
}

/// Change detection of one tracked type `T` as of a moment: whether an entity's value was added or changed since
/// then, which were, and which entities lost their value. From [`World::tracker`] (since the last
/// [`World::clear_trackers`]) or a system's `Tracker` parameter (since the system last ran).
pub struct Tracker<'w, T> {
    track: Option<&'w Track>,
    seen: Seen<'w>,
    entities: &'w Entities,
    since: u64,
    _type: std::marker::PhantomData<fn() -> T>,
}

impl<'w, T: Component> Tracker<'w, T> {
    pub(crate) fn new(world: &'w World, id: Option<ComponentId>, since: u64) -> Self {
        let track = id.and_then(|id| world.changes.track(id));
        let seen = id.map(|id| (world, id));
        Self { track, seen, entities: &world.entities, since, _type: std::marker::PhantomData }
    }

    /// Whether `T` is tracked at all (if not, nothing is ever added, changed or removed here).
    pub fn is_tracked(&self) -> bool {
        self.track.is_some()
    }

    /// Whether `entity`'s `T` was added since the moment (`false` for a dead handle).
    pub fn is_added(&self, entity: Entity) -> bool {
        let alive = self.entities.is_alive(entity);
        alive && self.track.is_some_and(|track| track.changed_since(entity.index(), self.since, true, None))
    }

    /// Whether `entity`'s `T` was added or changed since the moment (`false` for a dead handle).
    pub fn is_changed(&self, entity: Entity) -> bool {
        let alive = self.entities.is_alive(entity);
        alive && self.track.is_some_and(|track| track.changed_since(entity.index(), self.since, false, self.seen))
    }

    /// The entity indices whose `T` changed (or was added) since the moment, ascending (handle order).
    pub fn changed_indices(&self) -> Vec<u32> {
        let mut out = Vec::new();
        if let Some(track) = self.track {
            track.since(self.since, false, self.seen, &mut out);
        }
        out
    }

    /// How many entities' `T` changed (or was added) since the moment.
    pub fn changed_count(&self) -> usize {
        self.changed_indices().len()
    }

    /// How many entities lost their `T` since the moment (as [`Tracker::removed`] counts them).
    pub fn removed_count(&self) -> usize {
        self.removals().len()
    }

    /// The removals since the moment, in the order made.
    fn removals(&self) -> &'w [(u64, Entity)] {
        let Some(track) = self.track else { return &[] };
        &track.removed[track.removed.partition_point(|&(tick, _)| tick <= self.since)..]
    }

    /// The entities that lost their `T` (a removal or a despawn) since the moment, in handle order (the same on
    /// every backend, whatever order the removals were applied in; an entity that lost it twice is listed twice).
    /// Kept until the second [`World::clear_trackers`] after the removal (a frame of an app, and the next).
    pub fn removed(&self) -> impl Iterator<Item = Entity> + 'w {
        let mut removed: Vec<Entity> = self.removals().iter().map(|&(_, entity)| entity).collect();
        removed.sort_unstable();
        removed.into_iter()
    }
}

/// Change detection.
impl World {
    /// Tracks changes of component type `T` from now on (registering it if new): filters [`Added<T>`] and
    /// [`Changed<T>`](super::Changed) and [`World::tracker`] answer for it. Entities that hold a `T` already count
    /// as added now. Tracking again does nothing. An untracked type costs nothing.
    ///
    /// ```
    /// use swarm::ecs::{Changed, World};
    /// struct Health(i32);
    /// let mut world = World::new();
    /// world.track::<Health>();
    /// let a = world.spawn((Health(10),)).unwrap();
    /// let b = world.spawn((Health(10),)).unwrap();
    /// world.clear_trackers();
    /// world.get_mut::<Health>(b).unwrap().0 -= 3;
    /// let changed: Vec<_> = world.query::<&Health>().filter::<Changed<Health>>().iter().map(|(e, _)| e).collect();
    /// assert_eq!(changed, [b]);
    /// assert!(!world.tracker::<Health>().is_changed(a));
    /// ```
    ///
    /// [`Added<T>`]: super::Added
    pub fn track<T: Component>(&mut self) {
        let id = self.register::<T>();
        self.track_id(id);
        self.mark_hooks();
    }

    /// Tracks changes of `T` in the exact mode: a value handed out as `&mut` counts as changed only if it differs
    /// (by `PartialEq`) from the value it had, so a system that writes every row but changes few reports the few.
    /// The world keeps a copy of each value (`Clone`) and compares the rows a loop or a `get_mut` handed out: a
    /// system's at the end of its run, the world's own before its next query, tick or read. A write that puts the
    /// same value back is no change, whatever it wrote in between. Tracks `T` first if it is not yet; already
    /// exact: nothing.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// #[derive(Clone, PartialEq)]
    /// struct Health(i32);
    /// let mut world = World::new();
    /// world.track_exact::<Health>();
    /// let a = world.spawn((Health(10),)).unwrap();
    /// let b = world.spawn((Health(10),)).unwrap();
    /// world.clear_trackers();
    /// world.query::<&mut Health>().for_each(|_, h| h.0 = h.0.min(8));
    /// world.get_mut::<Health>(a).unwrap().0 = 10;
    /// let tracker = world.tracker::<Health>();
    /// assert!(tracker.is_changed(b) && !tracker.is_changed(a));
    /// ```
    pub fn track_exact<T: Component + PartialEq + Clone>(&mut self) {
        self.track::<T>();
        let id = self.register::<T>();
        self.make_exact(id, Box::new(Copies::<T>::new()));
    }

    /// Puts type `id` (tracked) in the exact mode with `shadow` (empty), copying its values.
    fn make_exact(&mut self, id: ComponentId, mut shadow: Box<dyn Shadow>) {
        if self.changes.track(id).is_none_or(|track| track.exact.is_some()) {
            return;
        }
        let mut held = Vec::new();
        shadow.differing(self, &|_| false, &mut held);
        for index in held {
            shadow.refresh(self, id, index);
        }
        let exact = Exact { shadow, ..Exact::empty() };
        self.changes.track_mut(id).expect("tracked").exact = Some(exact);
        self.changes.exact.insert(id);
    }

    /// What this world keeps of its tracking when a saved change state replaces its own (a restore, a loaded
    /// snapshot): its tracked types and those in the exact mode, by type (a loaded registry numbers them its own
    /// way). Handed back to [`World::keep_tracking`] once the saved state is in place.
    pub(crate) fn tracking(&self) -> Tracking {
        Tracking {
            tracked: self.changes.tracked.iter().map(|id| self.components.info(id).type_id).collect(),
            exact: self.changes.exact_types(&self.components),
        }
    }

    /// Tracking is a setting, as the handlers are: the types of `tracking` (from [`World::tracking`]) stay tracked,
    /// one the state now in place does not track starting over on the values there are (as [`World::track`] starts
    /// it), the exact ones in the exact mode; then the hook table is rebuilt.
    pub(crate) fn keep_tracking(&mut self, tracking: Tracking) {
        for type_id in tracking.tracked {
            if let Some(id) = self.components.id_of(type_id) {
                self.track_id(id);
            }
        }
        self.keep_exact(tracking.exact);
        self.mark_hooks();
    }

    /// Puts the types of `exact` (from [`Changes::exact_types`]) that this world tracks in the exact mode.
    pub(crate) fn keep_exact(&mut self, exact: Vec<(std::any::TypeId, Box<dyn Shadow>)>) {
        for (type_id, shadow) in exact {
            if let Some(id) = self.components.id_of(type_id) {
                self.make_exact(id, shadow);
            }
        }
    }

    /// Compares the writes waiting in exact tracks (see [`World::track_exact`]): before a tick is taken, the
    /// storage is lent to a query on the world, or a system's run ends.
    #[inline]
    pub(crate) fn compare_changes(&mut self) {
        if !self.changes.exact.is_empty() {
            self.compare_waiting();
        }
    }

    #[cold]
    fn compare_waiting(&mut self) {
        for id in self.changes.exact.iter() {
            let track = self.changes.track_mut(id).filter(|track| track.waits());
            let Some(mut exact) = track.and_then(|track| track.exact.take()) else { continue };
            // The copies leave the track while the values are read through the world. A `PartialEq` that panics
            // puts them back before the panic goes on, so the type stays exact; the writes still waiting then are
            // not counted.
            let settle = || exact.settle(self.changes.track(id).expect("tracked"), self, id);
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(settle));
            let track = self.changes.track_mut(id).expect("tracked");
            if outcome.is_ok() {
                for &(index, tick) in &exact.settled {
                    track.stamp(index, tick);
                }
            } else {
                for index in std::mem::take(&mut exact.queue) {
                    exact.waiting[index as usize] = (0, false);
                }
                (exact.whole, exact.settled) = (0, Vec::new());
            }
            track.exact = Some(exact);
            if let Err(panic) = outcome {
                std::panic::resume_unwind(panic);
            }
        }
    }

    /// Tracks type `id` (registered), if it is not yet; the caller rebuilds the hook table.
    pub(crate) fn track_id(&mut self, id: ComponentId) {
        if self.changes.is_tracked(id) {
            return;
        }
        let storage = &self.storage;
        let holders = self.entities.iter().map(|e| e.index()).filter(|&index| storage.contains(id, index));
        let holders: Vec<u32> = holders.collect();
        self.changes.start(id, holders.into_iter());
    }

    /// Whether changes of `T` are tracked.
    pub fn is_tracked<T: Component>(&self) -> bool {
        self.components.id::<T>().is_some_and(|id| self.changes.is_tracked(id))
    }

    /// A new moment for the world's own queries: from now on their [`Added`](super::Added) and
    /// [`Changed`](super::Changed) filters and [`World::tracker`] answer "since this call". An [`App`](crate::app::App)
    /// calls it at the end of each frame; systems have their own moment (their last run) and do not need it.
    pub fn clear_trackers(&mut self) {
        self.compare_changes();
        self.changes.clear();
    }

    /// Change detection of `T` since the last [`World::clear_trackers`].
    pub fn tracker<T: Component>(&self) -> Tracker<'_, T> {
        let id = self.components.id::<T>();
        Tracker::new(self, id, self.changes.last_clear)
    }

    /// What the world's own queries' change filters compare against: the last [`World::clear_trackers`], or
    /// `since`.
    pub(crate) fn change_view(&self, since: Option<u64>) -> ChangeView<'_> {
        ChangeView {
            changes: &self.changes,
            components: &self.components,
            since: since.unwrap_or(self.changes.last_clear),
            world: Some(self),
        }
    }

    /// Whether any component type is tracked.
    #[inline(always)]
    pub(crate) fn tracks_any(&self) -> bool {
        self.changes.any()
    }

    pub(crate) fn changes(&self) -> &Changes {
        &self.changes
    }

    /// Stamps the values of `ids` at `indices` with `tick` (a system's run, over; exact types compared now).
    pub(crate) fn stamp_all(&mut self, ids: &[ComponentId], indices: &[u32], tick: u64) {
        self.changes.stamp_all(ids, indices, tick);
        self.compare_changes();
    }

    /// Every value of the exact types `ids` was handed out at `tick` (a system's loop; `ids` is emptied): compared
    /// in one pass at the next comparison.
    pub(crate) fn stamp_whole(&mut self, ids: &mut Vec<ComponentId>, tick: u64) {
        let n = ids.len();
        self.changes.write_whole(ids, n, tick);
        ids.clear();
    }

    /// A system's run starts: a tick for its writes, and the tick its last run had (by its `slot`, taken from
    /// [`World::change_slot`] when it was first added).
    pub(crate) fn start_run(&mut self, slot: usize) -> (u64, u64) {
        self.compare_changes();
        (self.changes.last_run(slot), self.changes.take_tick())
    }

    /// A system's run (with `tick`) is over.
    pub(crate) fn end_run(&mut self, slot: usize, tick: u64) {
        self.changes.set_last_run(slot, tick);
    }

    /// Puts a loaded change state in place (its tracked types get their hooks; what this world tracked stays
    /// tracked, as in [`World::keep_tracking`]).
    pub(crate) fn set_changes(&mut self, changes: Changes) {
        let tracking = self.tracking();
        self.changes = changes;
        self.keep_tracking(tracking);
    }

    /// A slot for a function system's last run, kept in the world (and its snapshots).
    pub(crate) fn change_slot(&mut self) -> usize {
        self.changes.new_slot()
    }

    /// The current change tick (what a change made now is stamped with).
    pub fn change_tick(&self) -> u64 {
        self.changes.tick()
    }

    /// The value of type `id` at `index` is handed out as `&mut`: stamped if the type is tracked.
    #[inline]
    pub(crate) fn note_write(&mut self, id: ComponentId, index: u32) {
        if self.changes.is_tracked(id) {
            let tick = self.changes.tick();
            if let Some(track) = self.changes.track_mut(id).filter(|track| track.has(index)) {
                track.write(index, tick);
            }
        }
    }
}
