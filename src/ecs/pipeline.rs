//! One path for every change: spawn, insert, remove and despawn, single, bundle and batch, direct or from a
//! command buffer, all pass through the steps below, written once here. [`World`]'s methods, the command buffer's
//! apply, [`EntityWorldMut`](super::EntityWorldMut) and a [`ViewMut`](super::ViewMut) of a watched type are short
//! calls into them.
//!
//! ```text
//!   spawn / insert / remove / despawn
//!        |
//!   1 guard    a reserved handle settles (the buffer applies first); the hierarchy's types are refused
//!        |     (a bundle that puts one, before anything moves; a command, when it is recorded; `&mut`)
//!   2 before   remove, despawn: the hooks of the types leaving, handlers first (values still readable),
//!        |     then the hierarchy (links untied; a despawn takes each subtree, children first)
//!   3 storage  the values move, one backend dispatch (a despawn is whole even if a `drop` panics)
//!        |
//!   4 after    spawn, insert: the hooks of the types arriving; despawn: parents' lists pruned once
//!        |
//!   5 finish   a direct operation applies its handlers' commands, round by round
//! ```
//!
//! **The hook table** ([`HookTable`]) says, per change and per component type, which hooks watch it, one bit a
//! hook: lifecycle handlers ([`crate::ecs::events`]) and the hierarchy ([`crate::ecs::hierarchy`]). A change
//! nobody watches reads one byte of the table and goes straight to storage; a feature that needs to see changes
//! marks its types in the table ([`World::mark_hooks`]) and adds its step to the dispatch below, never a branch to
//! each operation. Hooks run in a fixed order: handlers, then the hierarchy.
//!
//! **Silent mode** is the same storage step with no hook: the hierarchy writing its own types, a snapshot being
//! loaded. It is a mode of these functions, not a second copy of each operation.

use super::bundle::Bundle;
use super::commands::ApplyStats;
use super::component::{BundleIds, ComponentId, ComponentSet};
use super::entity::{ComponentError, Entity, NoSuchEntity, WorldFull};
use super::events::EventKind;
use super::events::TooManyRounds;
use super::hierarchy::{Children, Parent};
use super::storage::Backend;
use super::world::World;
use crate::ecs::Component;

/// Which hooks watch a change: one bit per hook.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HookSet(u8);

impl HookSet {
    /// Lifecycle handlers ([`crate::ecs::events`]).
    pub(crate) const EVENTS: HookSet = HookSet(1);
    /// The hierarchy ([`crate::ecs::hierarchy`]).
    pub(crate) const TREE: HookSet = HookSet(2);
    /// Types whose values hold entity handles: their writes are noted ([`crate::ecs::holders`]).
    pub(crate) const HOLDS: HookSet = HookSet(4);
    /// Change detection of tracked types ([`crate::ecs::change`]).
    pub(crate) const TRACK: HookSet = HookSet(8);

    /// Whether any hook watches.
    #[inline(always)]
    pub(crate) fn any(self) -> bool {
        self.0 != 0
    }

    /// Whether `hook` watches.
    #[inline(always)]
    pub(crate) fn has(self, hook: HookSet) -> bool {
        self.0 & hook.0 != 0
    }

    fn set(&mut self, hook: HookSet, on: bool) {
        if on {
            self.0 |= hook.0;
        } else {
            self.0 &= !hook.0;
        }
    }
}

/// Which hooks watch each change: spawns, despawns, and the insert and removal of each component type (by id).
/// Rebuilt from the hooks themselves when the registry changes ([`World::mark_hooks`]).
#[derive(Default)]
pub(crate) struct HookTable {
    pub(crate) spawn: HookSet,
    pub(crate) despawn: HookSet,
    /// Whether any type's inserts, or removals, are watched: the one test a world with no such hook makes.
    any_insert: bool,
    any_remove: bool,
    insert: Vec<HookSet>,
    remove: Vec<HookSet>,
}

impl HookTable {
    /// The hooks watching inserts of `id`.
    #[inline(always)]
    pub(crate) fn insert(&self, id: ComponentId) -> HookSet {
        match self.any_insert {
            true => self.insert.get(id as usize).copied().unwrap_or_default(),
            false => HookSet::default(),
        }
    }

    /// The hooks watching removals of `id`.
    #[inline(always)]
    pub(crate) fn remove(&self, id: ComponentId) -> HookSet {
        match self.any_remove {
            true => self.remove.get(id as usize).copied().unwrap_or_default(),
            false => HookSet::default(),
        }
    }

    /// Whether a hook that must see each insert or removal of `id` watches it (handlers, the tree; not the note of
    /// writes, which a view makes once, when it is made).
    pub(crate) fn watches_type(&self, id: ComponentId) -> bool {
        let each = |set: HookSet| set.0 & !HookSet::HOLDS.0 != 0;
        each(self.insert(id)) || each(self.remove(id))
    }

    /// Marks `hook` as watching (or not) the change `kind`.
    pub(crate) fn mark(&mut self, kind: EventKind, hook: HookSet, on: bool) {
        fn at(sets: &mut Vec<HookSet>, id: ComponentId) -> &mut HookSet {
            if sets.len() <= id as usize {
                sets.resize(id as usize + 1, HookSet::default());
            }
            &mut sets[id as usize]
        }
        match kind {
            EventKind::Spawn => self.spawn.set(hook, on),
            EventKind::Despawn => self.despawn.set(hook, on),
            EventKind::Insert(id) => at(&mut self.insert, id).set(hook, on),
            EventKind::Remove(id) => at(&mut self.remove, id).set(hook, on),
        }
        self.any_insert = self.insert.iter().any(|set| set.any());
        self.any_remove = self.remove.iter().any(|set| set.any());
    }
}

/// Whether the storage step runs the hooks around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The hooks of the types involved run (every public operation).
    Hooked,
    /// No hook runs: the hierarchy writing its own types, a snapshot being loaded.
    Silent,
}

impl World {
    /// Rebuilds the hook table from the hooks themselves: after a handler is registered or taken off, after the
    /// registry was replaced (a loaded snapshot numbers its types its own way), and after a restore put a saved
    /// change state in place.
    pub(crate) fn mark_hooks(&mut self) {
        let mut table = HookTable::default();
        self.events.mark(&mut table);
        self.tree.mark(&mut table);
        self.holders.mark(&mut table, &self.components);
        self.changes.mark(&mut table);
        self.hooks = table;
    }

    // ---- 1 guard ------------------------------------------------------------------------------------------------

    /// Whether `entity` is alive, after applying the command buffer if the handle is reserved for a spawn in it.
    /// This is the one rule for reserved handles: every `&mut self` operation handed one settles it here first.
    #[inline(always)]
    pub(crate) fn settle(&mut self, entity: Entity) -> bool {
        self.entities.is_alive(entity) || self.settle_reserved(entity)
    }

    /// Whether a command buffer waits to be applied: reserved handles can be settled only then. While the buffer is
    /// being applied it is out of the world, and this is `false`.
    #[inline]
    pub(crate) fn has_buffered_commands(&self) -> bool {
        !self.commands.is_empty() || self.entities.has_unrecorded()
    }

    #[cold]
    fn settle_reserved(&mut self, entity: Entity) -> bool {
        // While the buffer is being applied it is out of the world (`self.commands` is empty): nothing to settle
        // then, and the apply's own order decides.
        if self.entities.is_reserved(entity) && self.has_buffered_commands() {
            self.apply_commands();
        }
        self.entities.is_alive(entity)
    }

    /// `NoSuchEntity` unless `entity` is alive once settled: the guard of the one-entity operations.
    #[inline(always)]
    pub(crate) fn live(&mut self, entity: Entity) -> Result<(), NoSuchEntity> {
        match self.settle(entity) {
            true => Ok(()),
            false => Err(NoSuchEntity(entity)),
        }
    }

    /// Applies the buffer if one of `targets` is reserved, splitting the batch there as one-by-one operations
    /// would settle it: `run` on the targets before it, the buffer, then `run` on the rest. Sums what `run` says.
    pub(crate) fn settle_batch(
        &mut self,
        targets: &[Entity],
        mut run: impl FnMut(&mut World, &[Entity]) -> usize,
    ) -> usize {
        let mut done = 0;
        let mut rest = targets;
        while self.has_buffered_commands() {
            let Some(k) = rest.iter().position(|&entity| self.entities.is_reserved(entity)) else { break };
            done += run(self, &rest[..k]);
            self.apply_commands();
            rest = &rest[k..];
        }
        done + run(self, rest)
    }

    // ---- spawn --------------------------------------------------------------------------------------------------

    /// Panics if bundle `ids` names one of the hierarchy's types, which only its own operations write (before
    /// anything changes; a bundle may name them to be removed).
    #[inline(always)]
    pub(crate) fn guard_put(&self, ids: &BundleIds) {
        if ids.kept {
            self.refuse_put(ids);
        }
    }

    #[cold]
    #[track_caller]
    fn refuse_put(&self, ids: &BundleIds) -> ! {
        let infos = ids.ids().iter().map(|&id| self.components.info(id));
        let kept = infos.filter(|info| super::hierarchy::is_kept_id(info.type_id)).map(|info| info.name).next();
        panic!(
            "`{}` is kept by the hierarchy and cannot be part of a bundle that is spawned or inserted: change it \
             with World::add_child, insert_child, remove_child or detach (or the same on Commands)",
            kept.unwrap_or("Parent or Children")
        )
    }

    /// Spawns under an allocated handle or says why not: the front of [`World::spawn`] and its kin.
    #[inline]
    pub(crate) fn spawn_bundle<B: Bundle>(&mut self, bundle: B) -> Result<Entity, WorldFull> {
        let ids = B::ids(&mut self.components);
        self.guard_put(&ids);
        let entity = self.entities.alloc()?;
        Ok(self.spawn_as(entity, &ids, bundle))
    }

    /// Spawns `bundle` (component ids `ids`) under `entity`, just allocated: storage, then the spawn hooks.
    #[inline]
    pub(crate) fn spawn_as<B: Bundle>(&mut self, entity: Entity, ids: &BundleIds, bundle: B) -> Entity {
        self.storage.spawn(&self.components, ids, entity, bundle);
        self.spawned(&ids.set, &[entity]);
        entity
    }

    /// The spawn hooks for `entities`, newly alive, in order.
    pub(crate) fn after_spawn(&mut self, set: &ComponentSet, entities: &[Entity]) {
        if self.hooks.spawn.has(HookSet::HOLDS) {
            self.holders.wrote_any(set);
        }
        if self.hooks.spawn.has(HookSet::TRACK) && set.intersects(&self.changes.tracked) {
            for &entity in entities {
                self.changes.put(set, entity);
            }
        }
        if self.hooks.spawn.has(HookSet::EVENTS) {
            for &entity in entities {
                self.fire(EventKind::Spawn, entity);
            }
        }
    }

    /// Step 4 and the finish of a direct spawn of `entities` made by the caller's own storage step.
    #[inline]
    pub(crate) fn spawned(&mut self, set: &ComponentSet, entities: &[Entity]) {
        if self.hooks.spawn.any() {
            self.after_spawn(set, entities);
            self.finish();
        }
    }

    /// Spawns one entity per bundle (a batch): allocation stops at the first refusal, before the next bundle is
    /// taken. `out` receives the handles, in order; the spawn hooks run for all of them at the end.
    pub(crate) fn spawn_many<B: Bundle>(
        &mut self,
        bundles: impl IntoIterator<Item = B>,
        out: &mut Vec<Entity>,
    ) -> Result<(), WorldFull> {
        let start = out.len();
        let result = if self.backend() == Backend::SparseSet {
            self.spawn_sparse_batch(bundles.into_iter(), Some(out)).map(|_| ())
        } else {
            let ids = B::ids(&mut self.components);
            self.guard_put(&ids);
            let bundles = bundles.into_iter();
            let hint = bundles.size_hint().0.min((self.capacity() - self.len()) as usize);
            out.reserve(hint);
            self.entities.reserve_indices(hint);
            let mut full = Ok(());
            let entities = &mut self.entities;
            let items = bundles.map_while(|bundle| match entities.alloc() {
                Ok(entity) => Some((entity, bundle)),
                Err(error) => {
                    full = Err(error);
                    None
                }
            });
            self.storage.spawn_batch(&self.components, &ids, hint, hint, items, out);
            full
        };
        let set = B::ids(&mut self.components).set;
        self.spawned(&set, &out[start..]);
        result
    }

    /// The sparse-set batch spawn, which stages values before it needs their handles (so it needs no list of
    /// them unless the caller wants one): at most `room` bundles are taken, then one more is pulled to tell
    /// whether the world was too small (it is dropped, as on the other backends). No hooks: the caller's.
    pub(crate) fn spawn_sparse_batch<B: Bundle>(
        &mut self,
        mut bundles: impl Iterator<Item = B>,
        mut out: Option<&mut Vec<Entity>>,
    ) -> Result<usize, WorldFull> {
        let ids = B::ids(&mut self.components);
        self.guard_put(&ids);
        let hint = bundles.size_hint().0.min((self.capacity() - self.len()) as usize);
        if let Some(out) = &mut out {
            out.reserve(hint);
        }
        self.entities.reserve_indices(hint);
        let room = self.entities.room();
        let bundles_that_fit = bundles.by_ref().take(room);
        let spawned =
            self.storage.spawn_sparse_batch(&self.components, &ids, hint, bundles_that_fit, &mut self.entities, out);
        match bundles.next() {
            Some(_) => Err(WorldFull { capacity: self.capacity() }),
            None => Ok(spawned),
        }
    }

    /// Makes the handles of `reserved` (from [`Commands::spawn`](super::Commands::spawn)) alive with `bundles`, in
    /// order, resolving pools once for the run; a handle that is no longer reserved is skipped and its bundle
    /// dropped. `out` receives the handles made alive; their spawn hooks run (the apply finishes the rounds).
    pub(crate) fn spawn_reserved_batch<B: Bundle>(
        &mut self,
        reserved: &[Entity],
        bundles: impl Iterator<Item = B>,
        ids: &BundleIds,
        out: &mut Vec<Entity>,
    ) {
        let entities = &mut self.entities;
        let items = reserved.iter().zip(bundles).filter(|(entity, _)| entities.activate(**entity));
        let items = items.map(|(&entity, bundle)| (entity, bundle));
        let start = out.len();
        // Rows for every reservation in the table; the pools grow as the values come.
        self.storage.spawn_batch(&self.components, ids, reserved.len(), 0, items, out);
        if self.hooks.spawn.any() {
            self.after_spawn(&ids.set, &out[start..]);
        }
    }

    // ---- insert -------------------------------------------------------------------------------------------------

    /// Sets component `id` (of type `T`) of the live `entity`: storage, then its insert hooks (`mode`).
    #[inline]
    pub(crate) fn insert_value<T: Component>(
        &mut self,
        id: ComponentId,
        entity: Entity,
        value: T,
        mode: Mode,
    ) -> Option<T> {
        let old = self.storage.insert(id, &self.components, entity, value);
        if mode == Mode::Hooked {
            self.inserted([id], entity);
        }
        old
    }

    /// Inserts bundle `B` into the settled, live `entity`: storage, then the insert hooks of each type in order.
    pub(crate) fn insert_bundle_values<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        let ids = B::ids(&mut self.components);
        self.guard_put(&ids);
        bundle.insert_each(&mut self.storage, &mut self.components, entity);
        self.inserted(ids.ids().iter().copied(), entity);
    }

    /// The insert hooks of `ids` for `entity`, in order (each only while the entity lives: a handler's commands
    /// wait for the finish, but a hook may despawn).
    pub(crate) fn after_insert(&mut self, ids: impl IntoIterator<Item = ComponentId>, entity: Entity) {
        for id in ids {
            if self.hooks.insert(id).has(HookSet::HOLDS) {
                self.holders.written.insert(id);
            }
            if self.hooks.insert(id).has(HookSet::TRACK) && self.entities.is_alive(entity) {
                self.changes.inserted(id, entity);
            }
            if self.hooks.insert(id).has(HookSet::EVENTS) && self.entities.is_alive(entity) {
                self.fire(EventKind::Insert(id), entity);
            }
        }
    }

    /// Step 4 and the finish of a direct insert of `ids` into `entity` made by the caller's own storage step (a
    /// builder's values).
    #[inline]
    pub(crate) fn inserted(&mut self, ids: impl IntoIterator<Item = ComponentId> + Clone, entity: Entity) {
        if ids.clone().into_iter().any(|id| self.hooks.insert(id).any()) {
            self.after_insert(ids, entity);
            self.finish();
        }
    }

    // ---- remove -------------------------------------------------------------------------------------------------

    /// The remove hooks of `ids` for the live `entity`, which holds them all: every handler first (each value still
    /// readable, the tree whole), then the hierarchy's. A handler that panics leaves everything as it was.
    pub(crate) fn before_remove(&mut self, ids: &[ComponentId], entity: Entity) {
        for &id in ids {
            if self.hooks.remove(id).has(HookSet::EVENTS) {
                self.fire(EventKind::Remove(id), entity);
            }
        }
        for &id in ids {
            if self.hooks.remove(id).has(HookSet::TREE) {
                self.untie(id, entity);
            }
        }
        for &id in ids {
            if self.hooks.remove(id).has(HookSet::TRACK) {
                self.changes.removed(id, entity);
            }
        }
    }

    /// Whether any of `ids` has remove hooks.
    pub(crate) fn remove_hooked(&self, ids: &[ComponentId]) -> bool {
        ids.iter().any(|&id| self.hooks.remove(id).any())
    }

    /// Removes component `T` (id `id`, if registered) from `entity`: the value, or why not. Hooks per `mode`.
    pub(crate) fn remove_value<T: Component>(
        &mut self,
        id: Option<ComponentId>,
        entity: Entity,
        mode: Mode,
    ) -> Result<T, ComponentError> {
        let Some(id) = id else { return self.remove_unheld::<T>(entity) };
        if mode == Mode::Hooked && self.hooks.remove(id).any() {
            return self.remove_hooked_value(id, entity);
        }
        let result = match self.storage.values::<T>(id, &self.components) {
            Some(mut store) => store.remove_entity(&self.entities, entity),
            None => Err(ComponentError::Reserved(entity)), // no pool: the same path as a reserved handle
        };
        match result {
            Err(ComponentError::Reserved(_)) => self.remove_unheld::<T>(entity),
            result => result,
        }
    }

    #[cold]
    fn remove_hooked_value<T: Component>(&mut self, id: ComponentId, entity: Entity) -> Result<T, ComponentError> {
        if !self.settle(entity) {
            return Err(ComponentError::NoSuchEntity(entity));
        }
        if !self.storage.contains(id, entity.index()) {
            return self.remove_unheld::<T>(entity);
        }
        self.before_remove(&[id], entity);
        let removed = self.remove_value::<T>(Some(id), entity, Mode::Silent);
        self.finish();
        removed
    }

    /// A removal that found no value: a reserved handle is settled (see
    /// [`World::reserve_entity`]) and the removal tried again; otherwise the error.
    #[cold]
    fn remove_unheld<T: Component>(&mut self, entity: Entity) -> Result<T, ComponentError> {
        if self.entities.is_reserved(entity) && self.settle(entity) {
            return self.remove::<T>(entity);
        }
        if !self.entities.is_alive(entity) {
            return Err(ComponentError::NoSuchEntity(entity));
        }
        Err(ComponentError::MissingComponent { entity, component: std::any::type_name::<T>() })
    }

    /// Removes bundle `B` from the live `entity`, all or nothing: the hooks of every type first, then the values.
    pub(crate) fn remove_bundle_values<B: Bundle>(&mut self, entity: Entity) -> Result<B, ComponentError> {
        if let Some(component) = B::first_missing(&self.storage, &self.components, entity) {
            return Err(ComponentError::MissingComponent { entity, component });
        }
        let ids = B::ids(&mut self.components);
        let hooked = self.remove_hooked(ids.ids());
        if hooked {
            self.before_remove(ids.ids(), entity);
        }
        let removed = B::remove_each(&mut self.storage, &self.components, entity);
        if hooked {
            self.finish();
        }
        Ok(removed)
    }

    // ---- despawn ------------------------------------------------------------------------------------------------

    /// Whether a batch despawn (of a few targets or more) may empty its pools on several threads: only on a world
    /// set to more than one thread ([`World::set_threads`], as an [`App`](crate::app::App) with several threads
    /// does), inside a pool that has them. (A world left at the default runs its parallel loops on the current
    /// pool, but its other operations stay on the calling thread.)
    fn splits_removals(&self) -> bool {
        self.threads > 1 && self.parallel()
    }

    /// Despawns every live entity of `targets` (settled: no reserved handle among them), with their subtrees;
    /// returns how many targets were alive when their turn came (a target inside an earlier one's subtree, or
    /// named twice, is not counted again). Each despawn hook runs right before its entity's values go; the
    /// hierarchy prunes the parents' lists once, at the end, also when a hook or a `drop` panics.
    pub(crate) fn despawn_run(&mut self, targets: &[Entity]) -> usize {
        let hooks = self.hooks.despawn;
        if !hooks.any() {
            let parallel = self.splits_removals();
            let (scratch, held) = (&mut self.handle_scratch, &mut self.held_removals);
            return self.storage.despawn_batch(&mut self.entities, targets, scratch, parallel, held);
        }
        let mut order = std::mem::take(&mut self.despawn_order);
        order.clear();
        // The tree's order: each live target's subtree, children first and in child order, each entity once.
        let mut despawned = match hooks.has(HookSet::TREE) {
            true => self.subtrees(targets, &mut order),
            false => {
                order.extend_from_slice(targets);
                0
            }
        };
        // A handler's panic stops the run; a `drop`'s does not (each despawn is whole, then the next one goes, as
        // without handlers): the first such panic goes on at the end.
        let mut dropped = None;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if hooks.has(HookSet::EVENTS) {
                debug_assert!(!self.held_removals.is_on(), "removals are not held with despawn handlers");
                // One at a time: each event right before its entity goes.
                for &entity in &order {
                    if self.entities.is_alive(entity) {
                        self.fire(EventKind::Despawn, entity);
                        if hooks.has(HookSet::TREE) {
                            self.leaving(std::slice::from_ref(&entity));
                        } else {
                            despawned += 1;
                        }
                        if hooks.has(HookSet::TRACK) {
                            self.changes.despawned(entity);
                        }
                        let (storage, entities) = (&mut self.storage, &mut self.entities);
                        let gone = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            storage.despawn(entities, entity);
                        }));
                        if let Err(panic) = gone {
                            dropped.get_or_insert(panic);
                        }
                    }
                }
            } else {
                self.leaving(&order);
                if hooks.has(HookSet::TRACK) {
                    for &entity in order.iter().filter(|&&entity| self.entities.is_alive(entity)) {
                        self.changes.despawned(entity);
                    }
                }
                let parallel = self.splits_removals();
                let (scratch, held) = (&mut self.handle_scratch, &mut self.held_removals);
                self.storage.despawn_batch(&mut self.entities, &order, scratch, parallel, held);
            }
        }));
        if hooks.has(HookSet::TREE) {
            self.prune();
        }
        self.despawn_order = order;
        if let Some(panic) = outcome.err().or(dropped) {
            // The handlers' commands answer a despawn that did not finish cleanly: dropped, not left for the next
            // operation (inside an apply, the apply drops its own).
            if !self.events.applying {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.discard_events()));
            }
            std::panic::resume_unwind(panic);
        }
        despawned
    }

    /// Despawns the live, settled `entity` (and its subtree), then finishes.
    #[inline]
    pub(crate) fn despawn_one(&mut self, entity: Entity) {
        if !self.hooks.despawn.any() {
            self.storage.despawn(&mut self.entities, entity);
            return;
        }
        self.despawn_run(&[entity]);
        self.finish();
    }

    /// Holds back, until [`World::release_removals`], despawns' removals from the pools of the types a command
    /// buffer's apply does not put (`puts`: its spawns' and inserts' types; `inserted`: the inserts' alone;
    /// `spawns`: whether it spawns), when nothing it runs can read them: no despawn handler, no spawn handler if it
    /// spawns, no insert handler of a type it inserts. Not the hierarchy's types (a despawn reads them) nor those
    /// tracked exactly (a comparison reads the values). See [`HeldRemovals`].
    pub(crate) fn hold_removals(&mut self, puts: &ComponentSet, inserted: &ComponentSet, spawns: bool) {
        let events = |hooks: HookSet| hooks.has(HookSet::EVENTS);
        if events(self.hooks.despawn)
            || (spawns && events(self.hooks.spawn))
            || inserted.iter().any(|id| events(self.hooks.insert(id)))
        {
            return;
        }
        let mut types = self.storage.holdable();
        for id in puts.iter() {
            types.remove(id);
        }
        // The tree's types by the registry: a query may have made their pools before the first link.
        for id in [self.components.id::<Parent>(), self.components.id::<Children>()].into_iter().flatten() {
            types.remove(id);
        }
        let holdable = types;
        for id in holdable.iter().filter(|&id| self.changes.is_exact(id)) {
            types.remove(id);
        }
        self.held_removals.hold(types);
    }

    /// Drops the values [`World::hold_removals`] held back, and holds nothing back from now on.
    #[inline]
    pub(crate) fn release_removals(&mut self) {
        if self.held_removals.is_on() {
            let parallel = self.splits_removals();
            self.storage.release_held(&mut self.held_removals, parallel);
        }
    }

    // ---- 5 finish -----------------------------------------------------------------------------------------------

    /// The end of a direct operation: the commands its handlers recorded apply now, round after round (nothing
    /// inside an apply, which runs the rounds after its buffer).
    #[inline]
    pub(crate) fn finish(&mut self) {
        if self.events.has_recorded() {
            self.settle_events();
        }
    }

    // ---- the command buffer -------------------------------------------------------------------------------------

    /// Applies the world's buffer, then the handlers' rounds: the body of [`World::try_apply_commands`] (which
    /// adds the counts to the totals).
    pub(crate) fn apply_buffer(&mut self) -> Result<ApplyStats, TooManyRounds> {
        // An outer apply's held removals go first: the spawns of reserved handles may run handlers.
        self.release_removals();
        let outer = std::mem::replace(&mut self.events.applying, true);
        // Handles reserved through `&World` come alive first: no command recorded before them can name them.
        let reserved = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.spawn_unrecorded())) {
            Ok(reserved) => reserved,
            Err(panic) => {
                // A spawn handler panicked: its round's commands go, the buffer stays for the next apply.
                self.discard_events();
                self.events.applying = outer;
                std::panic::resume_unwind(panic);
            }
        };
        let mut queue = std::mem::take(&mut self.commands);
        let stats = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| queue.apply(self))) {
            Ok(stats) => stats,
            Err(panic) => {
                let discarded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    self.release_removals();
                    queue.discard(&mut self.entities);
                    // The handlers' commands so far answered changes of a buffer that did not finish: dropped too.
                    self.discard_events();
                }));
                self.commands = queue;
                self.events.applying = outer;
                drop(discarded); // a second panic (another value's drop) is dropped: the first one goes on
                std::panic::resume_unwind(panic);
            }
        };
        // Commands recorded while applying (none today) would be in `self.commands`; keep both.
        let recorded = std::mem::replace(&mut self.commands, queue);
        debug_assert!(recorded.is_empty(), "a command recorded another while applying");
        let mut stats = ApplyStats { applied: stats.applied + reserved, ..stats };
        // The handlers' rounds (an apply inside another leaves them to the outer one).
        let rounds = if outer { Ok(ApplyStats::default()) } else { self.run_rounds_caught() };
        self.events.applying = outer;
        let rounds = rounds.map(|more| {
            stats.applied += more.applied;
            stats.skipped += more.skipped;
            stats.refused += more.refused;
        });
        self.totals.add(stats);
        rounds.map(|()| stats)
    }

    /// [`World::run_rounds`], putting `applying` back if a round panics.
    fn run_rounds_caught(&mut self) -> Result<ApplyStats, TooManyRounds> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_rounds())) {
            Ok(result) => result,
            Err(panic) => {
                self.events.applying = false;
                std::panic::resume_unwind(panic);
            }
        }
    }

    /// Makes alive, with no components, the handles reserved through `&World` ([`World::reserve_entities`]);
    /// returns how many.
    pub(crate) fn spawn_unrecorded(&mut self) -> u32 {
        if !self.entities.has_unrecorded() {
            return 0;
        }
        let mut handles = std::mem::take(&mut self.handle_scratch);
        handles.clear();
        self.entities.take_unrecorded(&mut handles);
        let ids = self.bundle_ids::<()>();
        let mut spawned = Vec::with_capacity(handles.len());
        self.spawn_reserved_batch(&handles, std::iter::repeat(()), &ids, &mut spawned);
        self.handle_scratch = handles;
        spawned.len() as u32
    }
}
