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
//!   despawn event ([`crate::ecs::events`]); the root leaves its parent's list (the lists inside the subtree go
//!   with their owners: a handler there sees its siblings despawned so far still listed);
//! - removing [`Parent`] from a child takes it out of its parent's list; removing [`Children`] makes every child
//!   a root. Inserting either by hand is refused (a panic naming the operations to use); swapping two entities'
//!   values through `&mut` access would break the tree, and is the one thing left to the caller.
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
use super::world::World;
use std::any::TypeId;
use std::fmt;

/// The parent of a child in the hierarchy (see [the module](crate::ecs::hierarchy)). Made and changed by the
/// world's hierarchy operations only.
#[derive(Debug, PartialEq, Eq, serde::Serialize)]
pub struct Parent(Entity);

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

impl TreeIds {
    /// Whether `id` is one of the hierarchy's components.
    pub(crate) fn holds(&self, id: ComponentId) -> bool {
        id == self.parent || id == self.children
    }
}

/// Panics for a hierarchy component inserted or viewed by hand (see [`World::insert`], [`World::view_mut`]).
pub(crate) fn refuse_tree_type<T: 'static>() {
    let tree = TypeId::of::<T>() == TypeId::of::<Parent>() || TypeId::of::<T>() == TypeId::of::<Children>();
    assert!(!tree, "`{}` is kept by the hierarchy: change it with World::add_child and its kin", {
        std::any::type_name::<T>()
    });
}

impl World {
    /// The hierarchy's component ids, registering them the first time.
    pub(super) fn tree_ids(&mut self) -> TreeIds {
        if let Some(tree) = self.tree {
            return tree;
        }
        let tree = TreeIds { parent: self.register::<Parent>(), children: self.register::<Children>() };
        self.tree = Some(tree);
        tree
    }

    /// The parent of `entity`, if it is a live child.
    pub fn parent(&self, entity: Entity) -> Option<Entity> {
        self.get::<Parent>(entity).map(Parent::get)
    }

    /// The children of `entity`, in order (empty if it has none or is dead).
    pub fn children(&self, entity: Entity) -> &[Entity] {
        self.get::<Children>(entity).map_or(&[], |children| &children.0)
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
        for entity in [parent, child] {
            if !self.settle(entity) {
                return Err(HierarchyError::NoSuchEntity(entity));
            }
        }
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

    fn link(&mut self, parent: Entity, child: Entity, index: Option<usize>) -> Result<(), HierarchyError> {
        for entity in [parent, child] {
            if !self.settle(entity) {
                return Err(HierarchyError::NoSuchEntity(entity));
            }
        }
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
            let list = self.children_mut(parent);
            let at = list.iter().position(|&c| c == child).expect("a child is in its parent's list");
            list.remove(at);
            list.insert(index, child);
            return Ok(());
        }
        self.unlink(child);
        self.insert_quiet(tree.parent, child, Parent(parent));
        match self.get_mut_quiet::<Children>(tree.children, parent) {
            Some(list) => list.0.insert(index, child),
            None => {
                let mut list = self.tree_spare.pop().unwrap_or_default();
                list.push(child);
                self.insert_quiet(tree.children, parent, Children(list));
            }
        }
        Ok(())
    }

    fn children_mut(&mut self, parent: Entity) -> &mut Vec<Entity> {
        let tree = self.tree_ids();
        &mut self.get_mut_quiet::<Children>(tree.children, parent).expect("a parent has its list").0
    }

    /// Takes `child` out of its parent's list (the list goes when empty) and drops its [`Parent`]; the parent it
    /// had.
    fn unlink(&mut self, child: Entity) -> Option<Entity> {
        let parent = self.parent(child)?;
        self.unlist(child, parent);
        let _ = self.remove_plain::<Parent>(child);
        Some(parent)
    }

    /// Takes `child` out of `parent`'s list, dropping the list when it empties.
    fn unlist(&mut self, child: Entity, parent: Entity) {
        let list = self.children_mut(parent);
        if let Some(at) = list.iter().position(|&c| c == child) {
            list.remove(at);
        }
        if list.is_empty() {
            if let Ok(Children(list)) = self.remove_plain::<Children>(parent) {
                self.tree_spare.push(list);
            }
        }
    }

    /// Before component `id` leaves `entity` (a removal): a [`Parent`] leaves its parent's list, a [`Children`]
    /// leaves every child a root.
    pub(super) fn untie(&mut self, id: ComponentId, entity: Entity) {
        let Some(tree) = self.tree else { return };
        if id == tree.parent {
            if let Some(parent) = self.parent(entity) {
                self.unlist(entity, parent);
            }
        } else if id == tree.children {
            let children = std::mem::take(self.children_mut(entity));
            for &child in &children {
                let _ = self.remove_plain::<Parent>(child);
            }
            *self.children_mut(entity) = children;
        }
    }

    /// Despawns `root` (alive) and its subtree, children first and in child order, each right after its despawn
    /// event. If a handler panics, the lists of the entities still alive are cleared of the dead before the
    /// panic goes on.
    pub(super) fn despawn_tree(&mut self, root: Entity) {
        let mut order = std::mem::take(&mut self.tree_order);
        order.clear();
        self.subtree_post_order(root, &mut order);
        let watched = self.events.watches(EventKind::Despawn);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for &entity in &order {
                if watched {
                    self.fire(EventKind::Despawn, entity);
                }
                if entity == root {
                    self.unlink(root);
                }
                if let Some(tree) = self.tree {
                    if let Some(list) = self.get_mut_quiet::<Children>(tree.children, entity) {
                        let mut list = std::mem::take(&mut list.0);
                        list.clear();
                        self.tree_spare.push(list);
                    }
                }
                self.despawn_quiet(entity);
            }
        }));
        if let Err(panic) = outcome {
            if let Some(tree) = self.tree {
                for &entity in &order {
                    if !self.is_alive(entity) {
                        continue;
                    }
                    let Some(list) = self.get_mut_quiet::<Children>(tree.children, entity) else { continue };
                    let mut list = std::mem::take(&mut list.0);
                    list.retain(|&child| self.is_alive(child));
                    match list.is_empty() {
                        true => drop(self.remove_plain::<Children>(entity)),
                        false => self.children_mut(entity).extend(list),
                    }
                }
            }
            self.tree_order = order;
            std::panic::resume_unwind(panic);
        }
        self.tree_order = order;
    }

    /// `root` and its subtree, children before parents and in child order.
    fn subtree_post_order(&mut self, root: Entity, order: &mut Vec<Entity>) {
        if self.children(root).is_empty() {
            order.push(root);
            return;
        }
        let mut walk = std::mem::take(&mut self.tree_walk);
        walk.clear();
        walk.push((root, 0));
        while let Some(&mut (entity, ref mut next)) = walk.last_mut() {
            match self.children(entity).get(*next as usize) {
                Some(&child) => {
                    *next += 1;
                    walk.push((child, 0));
                }
                None => {
                    order.push(entity);
                    walk.pop();
                }
            }
        }
        self.tree_walk = walk;
    }

    /// Whether the hierarchy is whole: every [`Parent`] names a live entity whose list holds the child once, every
    /// listed child is alive and names that parent, no list is empty, and no entity is its own ancestor.
    pub(crate) fn check_tree(&self) -> Result<(), String> {
        if self.tree.is_none() {
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
                if self.parent(child) != Some(*parent) {
                    return Err(format!("{parent:?} lists {child:?}, whose parent is {:?}", self.parent(child)));
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
