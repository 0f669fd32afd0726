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
    /// Per entity index: the tick its value last changed (0: it has none).
    changed: Vec<u64>,
    /// `(tick, index)` in the order stamped; ticks never decrease.
    log: Vec<(u64, u32)>,
    /// Values removed (a removal or a despawn): `(tick, entity)`, in order.
    removed: Vec<(u64, Entity)>,
    /// Entities holding a value.
    live: usize,
}

impl Track {
    #[inline]
    fn grow(&mut self, index: u32) {
        let need = index as usize + 1;
        if self.added.len() < need {
            let len = need.next_power_of_two().max(64);
            self.added.resize(len, 0);
            self.changed.resize(len, 0);
        }
    }

    /// Whether `index` holds a value.
    #[inline]
    pub(crate) fn has(&self, index: u32) -> bool {
        self.added.get(index as usize).is_some_and(|&t| t != 0)
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

    /// A value was put at `index` at `tick`: added if it had none, else changed (replaced).
    pub(crate) fn put(&mut self, index: u32, tick: u64) {
        self.grow(index);
        if self.added[index as usize] == 0 {
            self.added[index as usize] = tick;
            self.live += 1;
        }
        self.stamp(index, tick);
    }

    /// `entity`'s value went at `tick` (if it had one).
    pub(crate) fn take(&mut self, entity: Entity, tick: u64) {
        let index = entity.index();
        if self.has(index) {
            self.added[index as usize] = 0;
            self.changed[index as usize] = 0;
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
    pub(crate) fn since(&self, since: u64, added_only: bool, out: &mut Vec<u32>) {
        let entries = &self.log[self.log.len() - self.newer_than(since)..];
        let current = entries.iter().filter(|&&(tick, index)| {
            self.changed[index as usize] == tick && (!added_only || self.added[index as usize] > since)
        });
        let bound = self.changed.len();
        if entries.len() > 64 && entries.len() > bound / 256 {
            let mut bits = vec![0u64; bound.div_ceil(64)];
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
            return;
        }
        let start = out.len();
        out.extend(current.map(|&(_, index)| index));
        out[start..].sort_unstable();
        // A value taken and put back within one tick is logged twice.
        let mut kept = start;
        for k in start..out.len() {
            if kept == start || out[kept - 1] != out[k] {
                out[kept] = out[k];
                kept += 1;
            }
        }
        out.truncate(kept);
    }

    /// How many entries of the log are newer than `since` (current or not): what a pass after `since` reads.
    pub(crate) fn newer_than(&self, since: u64) -> usize {
        self.log.len() - self.log.partition_point(|&(tick, _)| tick <= since)
    }

    /// Whether the value of `index` changed (or was added, with `added_only`) after `since`.
    #[inline]
    pub(crate) fn changed_since(&self, index: u32, since: u64, added_only: bool) -> bool {
        let stamps = if added_only { &self.added } else { &self.changed };
        stamps.get(index as usize).is_some_and(|&t| t > since)
    }

    /// Drops the removals at or before `tick`.
    fn forget_removed(&mut self, tick: u64) {
        let keep = self.removed.partition_point(|&(t, _)| t <= tick);
        self.removed.drain(..keep);
    }
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
    /// The change state to save; `name` names a tracked type in the snapshot (`None`: not saved).
    pub(crate) fn save(&self, name: impl Fn(ComponentId) -> Option<String>) -> SavedChanges {
        let tracks = self.tracked.iter().filter_map(|id| {
            let track = self.track(id)?;
            let stamps = (0..track.added.len() as u32)
                .filter(|&index| track.has(index))
                .map(|index| (index, track.added[index as usize], track.changed[index as usize]))
                .collect();
            let log =
                track.log.iter().copied().filter(|&(tick, index)| track.changed[index as usize] == tick).collect();
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
            tick: saved.tick,
            last_clear: saved.last_clear,
            previous_clear: saved.previous_clear,
            runs: saved.runs,
            ..Changes::default()
        };
        let late = |tick: u64| tick >= saved.tick;
        if saved.last_clear >= saved.tick.max(1)
            || saved.previous_clear > saved.last_clear
            || changes.runs.iter().any(|&t| late(t))
        {
            return Err(format!("impossible change ticks (tick {}, last clear {})", saved.tick, saved.last_clear));
        }
        for saved_track in saved.tracks {
            let name = &saved_track.name;
            let id = id(name).ok_or_else(|| format!("change state of `{name}`, which the schema does not name"))?;
            let mut track = Track::default();
            for &(index, added, changed) in &saved_track.stamps {
                if index >= bound || added == 0 || changed < added || late(changed) {
                    return Err(format!("impossible stamps of `{name}` at index {index}"));
                }
                track.grow(index);
                (track.added[index as usize], track.changed[index as usize]) = (added, changed);
                track.live += 1;
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

    /// Every value is gone (a cleared world): the tracks empty, the types stay tracked.
    pub(crate) fn forget_values(&mut self) {
        for track in self.tracks.iter_mut().flatten() {
            *track = Track::default();
        }
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

    /// The values of `ids` at `indices` changed at `tick` (each index holds them all).
    pub(crate) fn stamp_all(&mut self, ids: &[ComponentId], indices: &[u32], tick: u64) {
        for &id in ids {
            if let Some(track) = self.track_mut(id) {
                for &index in indices {
                    track.stamp(index, tick);
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
}

impl<'w> ChangeView<'w> {
    /// The track of `T`, if tracked.
    #[inline]
    pub(crate) fn track_of<T: Component>(&self) -> Option<&'w Track> {
        self.changes.track(self.components.id::<T>()?)
    }
}

/// Change detection of one tracked type `T` as of a moment: whether an entity's value was added or changed since
/// then, which were, and which entities lost their value. From [`World::tracker`] (since the last
/// [`World::clear_trackers`]) or a system's `Tracker` parameter (since the system last ran).
pub struct Tracker<'w, T> {
    track: Option<&'w Track>,
    entities: &'w Entities,
    since: u64,
    _type: std::marker::PhantomData<fn() -> T>,
}

impl<'w, T: Component> Tracker<'w, T> {
    pub(crate) fn new(world: &'w World, id: Option<ComponentId>, since: u64) -> Self {
        let track = id.and_then(|id| world.changes.track(id));
        Self { track, entities: &world.entities, since, _type: std::marker::PhantomData }
    }

    /// Whether `T` is tracked at all (if not, nothing is ever added, changed or removed here).
    pub fn is_tracked(&self) -> bool {
        self.track.is_some()
    }

    /// Whether `entity`'s `T` was added since the moment (`false` for a dead handle).
    pub fn is_added(&self, entity: Entity) -> bool {
        let alive = self.entities.is_alive(entity);
        alive && self.track.is_some_and(|track| track.changed_since(entity.index(), self.since, true))
    }

    /// Whether `entity`'s `T` was added or changed since the moment (`false` for a dead handle).
    pub fn is_changed(&self, entity: Entity) -> bool {
        let alive = self.entities.is_alive(entity);
        alive && self.track.is_some_and(|track| track.changed_since(entity.index(), self.since, false))
    }

    /// The entity indices whose `T` changed (or was added) since the moment, ascending (handle order).
    pub fn changed_indices(&self) -> Vec<u32> {
        let mut out = Vec::new();
        if let Some(track) = self.track {
            track.since(self.since, false, &mut out);
        }
        out
    }

    /// How many entities' `T` changed (or was added) since the moment.
    pub fn changed_count(&self) -> usize {
        self.changed_indices().len()
    }

    /// The entities that lost their `T` (a removal or a despawn) since the moment, in handle order (the same on
    /// every backend, whatever order the removals were applied in; an entity that lost it twice is listed twice).
    /// Kept until the second [`World::clear_trackers`] after the removal (a frame of an app, and the next).
    pub fn removed(&self) -> impl Iterator<Item = Entity> + 'w {
        let mut removed: Vec<Entity> = match self.track {
            Some(track) => {
                let start = track.removed.partition_point(|&(tick, _)| tick <= self.since);
                track.removed[start..].iter().map(|&(_, entity)| entity).collect()
            }
            None => Vec::new(),
        };
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

    /// Stamps the values of `ids` at `indices` with `tick` (a system's run, over).
    pub(crate) fn stamp_all(&mut self, ids: &[ComponentId], indices: &[u32], tick: u64) {
        self.changes.stamp_all(ids, indices, tick);
    }

    /// A system's run starts: a tick for its writes, and the tick its last run had (by its `slot`, taken from
    /// [`World::change_slot`] when it was first added).
    pub(crate) fn start_run(&mut self, slot: usize) -> (u64, u64) {
        (self.changes.last_run(slot), self.changes.take_tick())
    }

    /// A system's run (with `tick`) is over.
    pub(crate) fn end_run(&mut self, slot: usize, tick: u64) {
        self.changes.set_last_run(slot, tick);
    }

    /// Puts a loaded change state in place (its tracked types get their hooks).
    pub(crate) fn set_changes(&mut self, changes: Changes) {
        self.changes = changes;
        self.mark_hooks();
    }

    /// A slot for a function system's last run, kept in the world (and its snapshots).
    pub(crate) fn change_slot(&mut self) -> usize {
        self.changes.new_slot()
    }

    /// The current change tick (what a change made now is stamped with).
    pub fn change_tick(&self) -> u64 {
        self.changes.tick()
    }

    /// Gives a world query's stamps to the tracks.
    /// The value of type `id` at `index` is handed out as `&mut`: stamped if the type is tracked.
    #[inline]
    pub(crate) fn note_write(&mut self, id: ComponentId, index: u32) {
        if self.changes.is_tracked(id) {
            let tick = self.changes.tick();
            if let Some(track) = self.changes.track_mut(id).filter(|track| track.has(index)) {
                track.stamp(index, tick);
            }
        }
    }
}
