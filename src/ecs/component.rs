//! Component types, their small integer ids, and sets of them.
//!
//! Any `'static` type is a component. The first time a world meets a type it gives it the next
//! [`ComponentId`] and keeps a [`ComponentInfo`] (name, `TypeId`, size) and whatever per-type data the registry's
//! owner asks for ([`TypeData`]: the world keeps the monomorphized functions that create and migrate the type's
//! storage, so that code which only knows the id can still move values of that type). This module depends on
//! nothing else in the crate.

use rustc_hash::FxHashMap;
use std::any::{type_name, TypeId};
use std::fmt;

/// A world-local number for a component type: its bit in a [`ComponentSet`] and its slot in the pool table.
pub type ComponentId = u32;

/// How many component types one world can hold: the width of [`ComponentSet`].
pub const MAX_COMPONENTS: usize = 256;

/// A set of component ids as a fixed bitset: `Copy`, hashable, and a superset test is four ANDs.
/// The archetype backend keys its tables by it; queries use it for `With` / `Without`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ComponentSet([u64; MAX_COMPONENTS / 64]);

impl ComponentSet {
    /// The empty set.
    pub const EMPTY: Self = Self([0; MAX_COMPONENTS / 64]);

    /// Adds `id`; returns whether it was new.
    pub fn insert(&mut self, id: ComponentId) -> bool {
        let (word, bit) = (id as usize / 64, 1u64 << (id % 64));
        let new = self.0[word] & bit == 0;
        self.0[word] |= bit;
        new
    }

    /// Removes `id`.
    pub fn remove(&mut self, id: ComponentId) {
        self.0[id as usize / 64] &= !(1u64 << (id % 64));
    }

    /// Whether `id` is in the set.
    #[inline]
    pub fn contains(&self, id: ComponentId) -> bool {
        self.0[id as usize / 64] & (1u64 << (id % 64)) != 0
    }

    /// Whether every id of `other` is in `self`.
    #[inline]
    pub fn is_superset(&self, other: &Self) -> bool {
        self.0.iter().zip(&other.0).all(|(a, b)| a & b == *b)
    }

    /// Whether the sets share an id.
    #[inline]
    pub fn intersects(&self, other: &Self) -> bool {
        self.0.iter().zip(&other.0).any(|(a, b)| a & b != 0)
    }

    /// The ids, ascending. Visits the set bits only: per word, the lowest set bit, then clears it.
    pub fn iter(&self) -> Ids {
        Ids { words: self.0, word: 0 }
    }

    /// Number of ids.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        *self == Self::EMPTY
    }
}

/// The ids of a [`ComponentSet`], ascending (see [`ComponentSet::iter`]). Holds a copy of the set: the bits not
/// yet visited.
#[derive(Clone)]
pub struct Ids {
    words: [u64; MAX_COMPONENTS / 64],
    /// The word being visited; the words before it are spent.
    word: usize,
}

impl Iterator for Ids {
    type Item = ComponentId;

    #[inline]
    fn next(&mut self) -> Option<ComponentId> {
        while let Some(bits) = self.words.get_mut(self.word) {
            if *bits != 0 {
                let bit = bits.trailing_zeros();
                *bits &= *bits - 1;
                return Some((self.word * 64) as ComponentId + bit);
            }
            self.word += 1;
        }
        None
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.words.iter().map(|w| w.count_ones() as usize).sum();
        (left, Some(left))
    }
}

impl ExactSizeIterator for Ids {}

impl std::iter::FusedIterator for Ids {}

impl fmt::Debug for ComponentSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// What a registry knows about one component type.
#[derive(Clone, Copy)]
pub struct ComponentInfo {
    /// `std::any::type_name` of the type, for messages and reports.
    pub name: &'static str,
    /// Its `TypeId`.
    pub type_id: TypeId,
    /// `size_of` the type; zero for tags.
    pub size: usize,
}

impl ComponentInfo {
    fn of<T: Component>() -> Self {
        Self { name: type_name::<T>(), type_id: TypeId::of::<T>(), size: std::mem::size_of::<T>() }
    }
}

/// Per-type data a [`Components`] registry keeps beside each [`ComponentInfo`], made from the type itself when
/// it is registered (a monomorphized function table, say).
pub trait TypeData: Copy + 'static {
    /// The data for `T`.
    fn of<T: Component>() -> Self;
}

impl TypeData for () {
    fn of<T: Component>() -> Self {}
}

/// The registry: `TypeId -> ComponentId`, and one [`ComponentInfo`] and one `D` per id; and a cache of `G`
/// values keyed by the `TypeId` of a group of component types (the world keeps each bundle type's ids there, so
/// a spawn looks its bundle up once instead of each component type).
pub struct Components<D: TypeData = (), G: Copy = ()> {
    ids: FxHashMap<TypeId, ComponentId>,
    infos: Vec<ComponentInfo>,
    data: Vec<D>,
    groups: FxHashMap<TypeId, G>,
}

impl<D: TypeData, G: Copy> Default for Components<D, G> {
    fn default() -> Self {
        Self { ids: FxHashMap::default(), infos: Vec::new(), data: Vec::new(), groups: FxHashMap::default() }
    }
}

impl<D: TypeData, G: Copy> Components<D, G> {
    /// The value cached for group type `K` by [`Components::cache_group`], if any.
    #[inline]
    pub fn group<K: 'static>(&self) -> Option<G> {
        self.groups.get(&TypeId::of::<K>()).copied()
    }

    /// Caches `value` for group type `K`. Ids are never taken back or renumbered, so a value made of ids stays
    /// true for as long as the registry lives.
    pub fn cache_group<K: 'static>(&mut self, value: G) {
        self.groups.insert(TypeId::of::<K>(), value);
    }

    /// The id of `T`, if the registry has met it.
    #[inline]
    pub fn id<T: Component>(&self) -> Option<ComponentId> {
        self.ids.get(&TypeId::of::<T>()).copied()
    }

    /// The id of the type `type_id`, if the registry has met it.
    pub fn id_of(&self, type_id: TypeId) -> Option<ComponentId> {
        self.ids.get(&type_id).copied()
    }

    /// The id of `T`, registering it if new. The second value says whether it was new.
    ///
    /// # Panics
    /// When a registry would hold more than [`MAX_COMPONENTS`] component types.
    #[inline]
    pub fn register<T: Component>(&mut self) -> (ComponentId, bool) {
        if let Some(&id) = self.ids.get(&TypeId::of::<T>()) {
            return (id, false);
        }
        assert!(
            self.infos.len() < MAX_COMPONENTS,
            "a world holds at most {MAX_COMPONENTS} component types; registering {} would exceed it",
            type_name::<T>()
        );
        let id = self.infos.len() as ComponentId;
        self.ids.insert(TypeId::of::<T>(), id);
        self.infos.push(ComponentInfo::of::<T>());
        self.data.push(D::of::<T>());
        (id, true)
    }

    /// The info of `id`.
    pub fn info(&self, id: ComponentId) -> &ComponentInfo {
        &self.infos[id as usize]
    }

    /// The per-type data of `id`.
    pub fn data(&self, id: ComponentId) -> &D {
        &self.data[id as usize]
    }

    /// Every registered type, by id.
    pub fn infos(&self) -> &[ComponentInfo] {
        &self.infos
    }

    /// Number of registered types.
    pub fn len(&self) -> usize {
        self.infos.len()
    }

    /// Whether no type is registered.
    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }
}

/// Room for the ids of one bundle: a bundle (a tuple, or a derived struct with its nested bundles flattened) holds
/// at most 12 components.
pub const MAX_BUNDLE: usize = 12;

/// The component ids of a bundle, in the order of its values: what a world's registry caches per bundle type, and
/// what the storage is told when a bundle is placed.
#[derive(Clone, Copy)]
pub struct BundleIds {
    ids: [ComponentId; MAX_BUNDLE],
    /// Positions into `ids[..len]` by ascending id: `ids[ascending[k]] < ids[ascending[k + 1]]`, the order in which
    /// a batch splits the bundle's pools or columns off one slice.
    ascending: [u8; MAX_BUNDLE],
    len: usize,
    /// The same ids as a set.
    pub set: ComponentSet,
    /// Whether one of the types is the hierarchy's, which bundles may take (remove) but not put.
    pub kept: bool,
}

impl BundleIds {
    /// No ids yet.
    pub(crate) fn new() -> Self {
        Self { ids: [0; MAX_BUNDLE], ascending: [0; MAX_BUNDLE], len: 0, set: ComponentSet::EMPTY, kept: false }
    }

    /// Appends `id`, refusing a type named twice (by its name in `components`) and a thirteenth component.
    pub(crate) fn push<D: TypeData, G: Copy>(&mut self, components: &Components<D, G>, id: ComponentId) {
        assert!(
            self.set.insert(id),
            "a bundle names `{}` twice; each component type may appear once per entity",
            components.info(id).name
        );
        assert!(self.len < MAX_BUNDLE, "a bundle holds more than {MAX_BUNDLE} components");
        // Insertion into the ascending order: registration is cold, and a bundle is short.
        let at = self.ascending[..self.len].partition_point(|&k| self.ids[k as usize] < id);
        self.ascending.copy_within(at..self.len, at + 1);
        self.ascending[at] = self.len as u8;
        self.ids[self.len] = id;
        self.len += 1;
    }

    /// The ids in the order of the bundle's values.
    #[inline]
    pub fn ids(&self) -> &[ComponentId] {
        &self.ids[..self.len]
    }

    /// The positions of [`BundleIds::ids`] by ascending id.
    #[inline]
    pub fn ascending(&self) -> &[u8] {
        &self.ascending[..self.len]
    }
}

/// What a component type must be: owned data that threads may share (`&T` on several threads at once) and move
/// (a parallel schedule lends a type's pool to the thread of the system that writes it). Every `Send + Sync +
/// 'static` type is one; nothing to implement.
pub trait Component: Send + Sync + 'static {}

impl<T: Send + Sync + 'static> Component for T {}

/// What a resource type must be: the same bounds as a [`Component`], for the same reasons.
pub trait Resource: Send + Sync + 'static {}

impl<T: Send + Sync + 'static> Resource for T {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations() {
        let mut a = ComponentSet::EMPTY;
        assert!(a.insert(3) && a.insert(200) && !a.insert(3));
        let mut b = ComponentSet::EMPTY;
        b.insert(200);
        assert!(a.is_superset(&b) && !b.is_superset(&a) && a.intersects(&b));
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![3, 200]);
        a.remove(200);
        assert!(!a.intersects(&b) && a.len() == 1);
    }

    #[test]
    fn iter_yields_the_set_bits_ascending() {
        let naive =
            |set: &ComponentSet| (0..MAX_COMPONENTS as ComponentId).filter(|&id| set.contains(id)).collect::<Vec<_>>();
        assert_eq!(ComponentSet::EMPTY.iter().next(), None);
        let mut set = ComponentSet::EMPTY;
        // Word edges, a full word, a lone top bit and scattered bits.
        for id in [0, 1, 62, 63, 64, 65, 127, 191, 255].into_iter().chain(128..192).chain((5..250).step_by(37)) {
            set.insert(id);
            let ids: Vec<ComponentId> = set.iter().collect();
            assert_eq!(ids, naive(&set));
            assert_eq!(set.iter().len(), set.len());
        }
        let mut ids = set.iter();
        ids.next();
        assert_eq!(ids.len(), set.len() - 1, "the size hint counts what is left");
        assert_eq!(ids.last(), Some(255));
        let mut top = ComponentSet::EMPTY;
        top.insert(255);
        let mut ids = top.iter();
        assert_eq!((ids.next(), ids.next(), ids.next()), (Some(255), None, None));
    }

    #[test]
    fn registry_gives_stable_ids() {
        let mut c = Components::<()>::default();
        assert_eq!(c.register::<u8>(), (0, true));
        assert_eq!(c.register::<u16>(), (1, true));
        assert_eq!(c.register::<u8>(), (0, false));
        assert_eq!(c.id::<u16>(), Some(1));
        assert_eq!(c.id::<u32>(), None);
        assert_eq!(c.info(1).size, 2);
    }

    #[test]
    fn groups_are_cached_by_type() {
        let mut c = Components::<(), u32>::default();
        assert_eq!(c.group::<(u8, u16)>(), None);
        c.cache_group::<(u8, u16)>(7);
        assert_eq!((c.group::<(u8, u16)>(), c.group::<(u16, u8)>()), (Some(7), None));
    }
}
