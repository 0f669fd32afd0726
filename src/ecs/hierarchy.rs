//! The hierarchy: a parent for an entity, and an ordered list of children for its parent, kept in step.
//!
//! Two components hold it: [`Parent`] on each child and [`Children`] (the list, in order, never empty) on each
//! parent. They are components like any other, so queries read them (`Query<(&Parent, &mut Velocity)>`), every
//! backend stores them, and a snapshot keeps them; but only the world's hierarchy operations make or change them
//! (neither has a public constructor), so the two sides always agree:
//! - [`World::add_child`], [`World::insert_child`] (at a position; also moves a child within its list or from
//!   another parent), [`World::remove_child`], [`World::detach`]; the same on [`Commands`](super::Commands);
//! - a cycle (a child that is the parent or one of its ancestors), a dead entity or a position past the list's
//!   end is refused with a [`HierarchyError`] and changes nothing;
//! - despawning a parent despawns its subtree: children before their parent, in child order, each with its
//!   despawn event ([`crate::ecs::events`]); parents' lists lose the despawned children once, when the despawn
//!   ends, so despawning any number of one parent's children, in any order, is linear (a handler firing during
//!   a despawn may therefore see entities despawned earlier in it still listed, by a parent not despawned yet or
//!   by its own entity);
//! - removing [`Parent`] from a child takes it out of its parent's list; removing [`Children`] makes every child
//!   a root (a bundle may name them to be removed);
//! - nothing else writes them: a bundle that is spawned or inserted with one, `insert`, a builder, the same on
//!   [`Commands`](super::Commands) (when the command is recorded), `get_mut`, `view_mut`, `sparse_set_mut` and a
//!   handler of either panic with a message naming the operations to use, and `&mut` of either in a query is
//!   refused ([`QueryError::Kept`](super::QueryError::Kept)). So no caller can hand a link to another entity or
//!   swap two lists, and a panic in a handler or a `drop` during any operation leaves the tree whole.
//!
//! How others do it: bevy despawns children with their parent but rebuilds the child list on load; Friflo keeps
//! child order and saves it, but a despawned parent leaves its children floating; flecs despawns children with
//! their parent, but a reload changes the storage order. Here the list, its order and every handle survive a
//! save and load on any pair of backends, and a file whose tree is broken is refused.
//!
//! ```
//! use swarm::ecs::{HierarchyError, World};
//! let mut world = World::new();
//! let [captain, a, b] = [(); 3].map(|_| world.spawn(()).unwrap());
//! world.add_child(captain, a).unwrap();
//! world.insert_child(captain, 0, b).unwrap();
//! assert_eq!(world.children(captain), &[b, a]);
//! assert_eq!(world.parent(a), Some(captain));
//! assert_eq!(world.add_child(a, captain), Err(HierarchyError::Cycle { parent: a, child: captain }));
//! world.despawn(captain).unwrap(); // b, a, then the captain
//! assert!(world.is_empty());
//! ```

use super::component::ComponentId;
use super::entity::{Entity, NoSuchEntity};
use super::events::EventKind;
use super::pipeline::{HookSet, HookTable, Mode};
use super::world::World;
use std::any::TypeId;
use std::fmt;

/// The parent of a child in the hierarchy (see [the module](crate::ecs::hierarchy)). Made and changed by the
/// world's hierarchy operations only.
#[derive(Debug, PartialEq, Eq, serde::Serialize)]
pub struct Parent(Entity);

impl crate::ecs::rollback::Copyable for Parent {
    fn copy(&self) -> Self {
        Parent(self.0)
    }
}

impl Parent {
    /// The parent's handle.
    pub fn get(&self) -> Entity {
        self.0
    }

    pub(crate) fn new(parent: Entity) -> Self {
        Self(parent)
    }
}

/// A parent's children, in order, never empty (see [the module](crate::ecs::hierarchy)). Made and changed by the
/// world's hierarchy operations only.
#[derive(Debug, PartialEq, Eq, serde::Serialize)]
pub struct Children(Vec<Entity>);

impl crate::ecs::rollback::Copyable for Children {
    fn copy(&self) -> Self {
        Children(self.0.clone())
    }
}

impl std::ops::Deref for Children {
    type Target = [Entity];
    fn deref(&self) -> &[Entity] {
        &self.0
    }
}

impl Children {
    pub(crate) fn new(children: Vec<Entity>) -> Self {
        Self(children)
    }
}

/// Why a hierarchy operation was refused; nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HierarchyError {
    /// The entity is dead, stale or was never spawned.
    NoSuchEntity(Entity),
    /// The child is the parent or one of its ancestors.
    Cycle {
        /// The parent asked for.
        parent: Entity,
        /// The child.
        child: Entity,
    },
    /// The entity is not a child of that parent.
    NotAChild {
        /// The parent named.
        parent: Entity,
        /// The entity.
        child: Entity,
    },
    /// A position past the end of the list.
    Position {
        /// The position asked for.
        index: usize,
        /// The list's length (without the child, if it was in it).
        len: usize,
    },
}

impl fmt::Display for HierarchyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HierarchyError::NoSuchEntity(e) => NoSuchEntity(e).fmt(f),
            HierarchyError::Cycle { parent, child } => {
                write!(f, "{child:?} cannot be a child of {parent:?}: it is that entity or one of its ancestors")
            }
            HierarchyError::NotAChild { parent, child } => write!(f, "{child:?} is not a child of {parent:?}"),
            HierarchyError::Position { index, len } => {
                write!(f, "position {index} is past the end of a list of {len} children")
            }
        }
    }
}

impl std::error::Error for HierarchyError {}

/// The hierarchy's component ids in one world.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TreeIds {
    pub(crate) parent: ComponentId,
    pub(crate) children: ComponentId,
}

/// Whether `T` is one of the hierarchy's types, which only its own operations write: refused in bundles, inserts,
/// commands and `&mut` access.
#[inline(always)]
pub(crate) fn is_kept<T: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<Parent>() || TypeId::of::<T>() == TypeId::of::<Children>()
}

/// Whether the type with `TypeId` `id` is one of the hierarchy's ([`is_kept`]).
pub(crate) fn is_kept_id(id: TypeId) -> bool {
    id == TypeId::of::<Parent>() || id == TypeId::of::<Children>()
}

/// Panics for a hierarchy component named where only the hierarchy may write it (`what`: the operation).
#[inline(always)]
pub(crate) fn refuse_kept<T: 'static>(what: &str) {
    if is_kept::<T>() {
        refused(std::any::type_name::<T>(), what);
    }
}

#[cold]
#[track_caller]
fn refused(name: &str, what: &str) -> ! {
    panic!(
        "`{name}` is kept by the hierarchy and cannot be {what}: change it with World::add_child, insert_child, \
         remove_child or detach (or the same on Commands)"
    )
}

/// The hierarchy's state in a world: its ids once it has met them, and reused buffers (a steady frame allocates
/// nothing).
#[derive(Default)]
pub(crate) struct Tree {
    pub(crate) ids: Option<TreeIds>,
    /// A subtree walk: each entity with the position of its next child to visit.
    walk: Vec<(Entity, u32)>,
    /// Child lists of parents gone or emptied, kept for the next new parent.
    spare: Vec<Vec<Entity>>,
    /// Parents whose children left in the despawn under way: their lists are pruned once, at its end.
    touched: Vec<Entity>,
    /// A bit per entity index: taken by the despawn under way, so each entity is taken once. All clear between
    /// despawns (a bit is cleared after its walk), and small enough to stay in cache: a batch of thousands of
    /// leaves (particles) pays no miss for it.
    marks: Vec<u64>,
}

impl Tree {
    /// Marks the hierarchy's hooks in `table`: despawns (subtrees, lists pruned) and the removal of either type.
    pub(crate) fn mark(&self, table: &mut HookTable) {
        if let Some(ids) = self.ids {
            table.mark(EventKind::Despawn, HookSet::TREE, true);
            table.mark(EventKind::Remove(ids.parent), HookSet::TREE, true);
            table.mark(EventKind::Remove(ids.children), HookSet::TREE, true);
        }
    }
}

impl World {
    /// The hierarchy's component ids, registering them (and its hooks) the first time.
    pub(crate) fn tree_ids(&mut self) -> TreeIds {
        if let Some(tree) = self.tree.ids {
            return tree;
        }
        let tree = TreeIds { parent: self.register::<Parent>(), children: self.register::<Children>() };
        self.tree.ids = Some(tree);
        self.tree.mark(&mut self.hooks);
        tree
    }

    /// The parent of `entity`, if it is a live child.
    #[inline]
    pub fn parent(&self, entity: Entity) -> Option<Entity> {
        // By the hierarchy's own ids: no registry lookup (a world that never met the hierarchy has no links).
        let tree = self.tree.ids?;
        if !self.entities.is_alive(entity) {
            return None;
        }
        self.storage.get::<Parent>(tree.parent, entity.index()).map(Parent::get)
    }

    /// The children of `entity`, in order (empty if it has none or is dead).
    #[inline]
    pub fn children(&self, entity: Entity) -> &[Entity] {
        let Some(tree) = self.tree.ids.filter(|_| self.entities.is_alive(entity)) else { return &[] };
        self.storage.get::<Children>(tree.children, entity.index()).map_or(&[], |children| &children.0)
    }

    /// Makes `child` the last child of `parent` (moving it from the parent it had, or to the end of this one's
    /// list). Refused if either is dead or `child` is `parent` or one of its ancestors.
    pub fn add_child(&mut self, parent: Entity, child: Entity) -> Result<(), HierarchyError> {
        self.link(parent, child, None)
    }

    /// Makes `child` the child of `parent` at `index` in its list (0 first): from another parent, or moved within
    /// this one's list (then `index` counts the list without it). Refused as [`World::add_child`], or past the
    /// list's end.
    ///
    /// ```
    /// use swarm::ecs::World;
    /// let mut world = World::new();
    /// let [p, a, b, c] = [(); 4].map(|_| world.spawn(()).unwrap());
    /// for child in [a, b, c] {
    ///     world.add_child(p, child).unwrap();
    /// }
    /// world.insert_child(p, 0, c).unwrap(); // reorder
    /// assert_eq!(world.children(p), &[c, a, b]);
    /// assert!(world.insert_child(p, 3, a).is_err()); // two others: positions 0..=2
    /// ```
    pub fn insert_child(&mut self, parent: Entity, index: usize, child: Entity) -> Result<(), HierarchyError> {
        self.link(parent, child, Some(index))
    }

    /// Takes `child` out of `parent`'s list: it becomes a root (it and its subtree stay alive).
    pub fn remove_child(&mut self, parent: Entity, child: Entity) -> Result<(), HierarchyError> {
        self.settle_pair(parent, child)?;
        if self.parent(child) != Some(parent) {
            return Err(HierarchyError::NotAChild { parent, child });
        }
        self.unlink(child);
        Ok(())
    }

    /// Makes `entity` a root; returns the parent it had.
    pub fn detach(&mut self, entity: Entity) -> Result<Option<Entity>, NoSuchEntity> {
        if !self.settle(entity) {
            return Err(NoSuchEntity(entity));
        }
        Ok(self.unlink(entity))
    }

    /// Settles both handles, then checks both are alive: settling the second applies the command buffer, which
    /// may despawn the first.
    fn settle_pair(&mut self, parent: Entity, child: Entity) -> Result<(), HierarchyError> {
        for entity in [parent, child] {
            self.settle(entity);
        }
        match [parent, child].into_iter().find(|&entity| !self.entities.is_alive(entity)) {
            Some(dead) => Err(HierarchyError::NoSuchEntity(dead)),
            None => Ok(()),
        }
    }

    fn link(&mut self, parent: Entity, child: Entity, index: Option<usize>) -> Result<(), HierarchyError> {
        self.settle_pair(parent, child)?;
        // Up from the parent: meeting the child would close a loop. A child without children is no one's
        // ancestor, so only a parent (a short walk in most trees) needs the walk.
        if parent == child {
            return Err(HierarchyError::Cycle { parent, child });
        }
        if !self.children(child).is_empty() {
            let mut up = self.parent(parent);
            while let Some(ancestor) = up {
                if ancestor == child {
                    return Err(HierarchyError::Cycle { parent, child });
                }
                up = self.parent(ancestor);
            }
        }
        let here = self.parent(child) == Some(parent);
        let len = self.children(parent).len() - usize::from(here);
        let index = index.unwrap_or(len);
        if index > len {
            return Err(HierarchyError::Position { index, len });
        }
        let tree = self.tree_ids();
        if here {
            let list = self.list_mut(parent).expect("a parent has its list");
            let at = list.iter().position(|&c| c == child).expect("a child is in its parent's list");
            list.remove(at);
            list.insert(index, child);
            return Ok(());
        }
        // A child moving between parents keeps its `Parent` value, rewritten in place (no removal and insert:
        // on the archetype layout those would move its row twice).
        match self.parent(child) {
            Some(old) => {
                self.unlist(child, old);
                let parents = self.storage.values::<Parent>(tree.parent, &self.components);
                let value = parents.and_then(|values| values.into_mut(child.index()));
                *value.expect("a child has its parent") = Parent(parent);
            }
            None => drop(self.insert_value(tree.parent, child, Parent(parent), Mode::Silent)),
        }
        match self.list_mut(parent) {
            Some(list) => list.insert(index, child),
            None => {
                // A new list has room for 8 children (bevy's `Children` keeps 8 inline): a small family never
                // grows its list, so a spare one serves any small family without reallocating.
                let mut list = self.tree.spare.pop().unwrap_or_else(|| Vec::with_capacity(8));
                list.push(child);
                self.insert_value(tree.children, parent, Children(list), Mode::Silent);
            }
        }
        Ok(())
    }

    /// The child list of the live `parent`, mutably, if it has one.
    fn list_mut(&mut self, parent: Entity) -> Option<&mut Vec<Entity>> {
        let id = self.tree.ids?.children;
        let values = self.storage.values::<Children>(id, &self.components)?;
        values.into_mut(parent.index()).map(|children| &mut children.0)
    }

    /// Takes `child` out of its parent's list (the list goes when empty) and drops its [`Parent`]; the parent it
    /// had.
    fn unlink(&mut self, child: Entity) -> Option<Entity> {
        let parent = self.parent(child)?;
        self.unlist(child, parent);
        let id = self.tree.ids.map(|tree| tree.parent);
        let _ = self.remove_value::<Parent>(id, child, Mode::Silent);
        Some(parent)
    }

    /// Takes `child` out of `parent`'s list, dropping the list when it empties.
    fn unlist(&mut self, child: Entity, parent: Entity) {
        let Some(list) = self.list_mut(parent) else { return };
        if let Some(at) = list.iter().position(|&c| c == child) {
            list.remove(at);
        }
        if list.is_empty() {
            self.drop_list(parent);
        }
    }

    /// Removes the (empty) child list of `parent`, keeping its allocation for the next parent.
    fn drop_list(&mut self, parent: Entity) {
        let id = self.tree.ids.map(|tree| tree.children);
        if let Ok(Children(list)) = self.remove_value::<Children>(id, parent, Mode::Silent) {
            self.tree.spare.push(list);
        }
    }

    /// The hierarchy's remove hook: before component `id` leaves `entity`, a [`Parent`] leaves its parent's list,
    /// a [`Children`] leaves every child a root.
    pub(crate) fn untie(&mut self, id: ComponentId, entity: Entity) {
        let Some(tree) = self.tree.ids else { return };
        if id == tree.parent {
            if let Some(parent) = self.parent(entity) {
                self.unlist(entity, parent);
            }
        } else if id == tree.children {
            let children = std::mem::take(self.list_mut(entity).expect("a parent has its list"));
            for &child in &children {
                let _ = self.remove_value::<Parent>(Some(tree.parent), child, Mode::Silent);
            }
            *self.list_mut(entity).expect("a parent has its list") = children;
        }
    }

    /// The hierarchy's despawn order: for each live target not taken already, its subtree, children before
    /// parents and in child order (each entity once, so even a broken tree cannot make the walk loop). Returns
    /// how many targets were taken.
    pub(crate) fn subtrees(&mut self, targets: &[Entity], order: &mut Vec<Entity>) -> usize {
        let mut marks = std::mem::take(&mut self.tree.marks);
        let words = (self.entities.index_bound() as usize).div_ceil(64);
        if marks.len() < words {
            marks.resize(words, 0);
        }
        // Sets `index`'s bit; whether it was clear.
        let take = |marks: &mut [u64], index: u32| {
            let (word, bit) = (&mut marks[index as usize / 64], 1u64 << (index % 64));
            let clear = *word & bit == 0;
            *word |= bit;
            clear
        };
        let start = order.len();
        let mut walk = std::mem::take(&mut self.tree.walk);
        let mut taken = 0;
        for &target in targets {
            if !self.entities.is_alive(target) || !take(&mut marks, target.index()) {
                continue;
            }
            taken += 1;
            if self.children(target).is_empty() {
                order.push(target);
                continue;
            }
            walk.clear();
            walk.push((target, 0));
            while let Some(&mut (entity, ref mut next)) = walk.last_mut() {
                match self.children(entity).get(*next as usize) {
                    Some(&child) => {
                        *next += 1;
                        if take(&mut marks, child.index()) {
                            walk.push((child, 0));
                        }
                    }
                    None => {
                        order.push(entity);
                        walk.pop();
                    }
                }
            }
        }
        // Every entity marked is in the order once: clear their bits for the next despawn.
        for entity in &order[start..] {
            marks[entity.index() as usize / 64] &= !(1u64 << (entity.index() % 64));
        }
        self.tree.walk = walk;
        self.tree.marks = marks;
        taken
    }

    /// The hierarchy's despawn hook, right before `rows` (alive, in the despawn's order) lose their values: their
    /// parents are noted for [`World::prune`], and their own lists are kept for the next parent.
    pub(crate) fn leaving(&mut self, rows: &[Entity]) {
        let Some(tree) = self.tree.ids else { return };
        if let Some(parents) = self.storage.values::<Parent>(tree.parent, &self.components) {
            let touched = &mut self.tree.touched;
            touched.extend(rows.iter().filter_map(|row| parents.get(row.index()).map(Parent::get)));
        }
        if let Some(mut lists) = self.storage.values::<Children>(tree.children, &self.components) {
            for row in rows {
                if let Some(Children(list)) = lists.get_mut(row.index()) {
                    if list.capacity() > 0 {
                        let mut list = std::mem::take(list);
                        list.clear();
                        self.tree.spare.push(list);
                    }
                }
            }
        }
    }

    /// The end of a despawn: each live parent noted by [`World::leaving`] keeps only its live children, in order,
    /// and loses an emptied list. One pass per parent, so despawning many children of one parent is linear.
    pub(crate) fn prune(&mut self) {
        let mut touched = std::mem::take(&mut self.tree.touched);
        touched.sort_unstable();
        touched.dedup();
        for &parent in &touched {
            if !self.entities.is_alive(parent) {
                continue;
            }
            let entities = &self.entities;
            let Some(id) = self.tree.ids.map(|tree| tree.children) else { break };
            let Some(values) = self.storage.values::<Children>(id, &self.components) else { break };
            let Some(Children(list)) = values.into_mut(parent.index()) else { continue };
            list.retain(|&child| entities.is_alive(child));
            if list.is_empty() {
                self.drop_list(parent);
            }
        }
        touched.clear();
        self.tree.touched = touched;
    }

    /// Whether the hierarchy is whole: every [`Parent`] names a live entity whose list holds the child once, every
    /// listed child is alive and names that parent, no list is empty, and no entity is its own ancestor.
    pub(crate) fn check_tree(&self) -> Result<(), String> {
        if self.tree.ids.is_none() {
            return Ok(());
        }
        let mut children_of = Vec::new();
        self.query_ref::<(&Parent,)>().for_each(|child, (parent,)| children_of.push((child, parent.0)));
        for &(child, parent) in &children_of {
            if !self.is_alive(parent) {
                return Err(format!("{child:?} names the parent {parent:?}, which is not alive"));
            }
        }
        let mut listed = rustc_hash::FxHashMap::default();
        let mut parents = Vec::new();
        self.query_ref::<(&Children,)>().for_each(|parent, (children,)| parents.push((parent, children.0.clone())));
        for (parent, children) in &parents {
            if children.is_empty() {
                return Err(format!("{parent:?} has an empty child list"));
            }
            for &child in children {
                if !self.is_alive(child) {
                    return Err(format!("{parent:?} lists {child:?}, which is not alive"));
                }
                if let Some(other) = listed.insert(child, *parent) {
                    return Err(format!("{child:?} is listed twice (by {other:?} and {parent:?})"));
                }
                match self.parent(child) {
                    Some(own) if own == *parent => {}
                    Some(own) => return Err(format!("{parent} lists {child}, whose parent is {own}")),
                    None => return Err(format!("{parent} lists {child}, which has no parent")),
                }
            }
        }
        for &(child, parent) in &children_of {
            if listed.get(&child) != Some(&parent) {
                return Err(format!("{child:?} names the parent {parent:?}, whose list does not hold it"));
            }
        }
        // Up from each child until a root or an entity already cleared: meeting the walk itself is a cycle.
        // Each entity is cleared once, so the whole check is linear.
        let mut cleared = rustc_hash::FxHashSet::default();
        let mut path = rustc_hash::FxHashSet::default();
        for &(child, _) in &children_of {
            let mut at = child;
            path.clear();
            while !cleared.contains(&at) {
                if !path.insert(at) {
                    return Err(format!("{at:?} is its own ancestor (a cycle)"));
                }
                match self.parent(at) {
                    Some(parent) => at = parent,
                    None => break,
                }
            }
            cleared.extend(path.drain());
        }
        Ok(())
    }
}
