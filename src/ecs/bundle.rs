//! Bundles: the components an entity is spawned with, as a tuple or as a struct that derives [`Bundle`].
//!
//! A bundle is a composition of parts. The leaf part, `One<T>`, is one component and does the work of every
//! step; `Parts<(P1, P2, ..)>` hands each step on to its parts in order. A tuple `(A, B)` is `Parts<(One<A>,
//! One<B>)>`, and a derived struct is `Parts` of `One<Field>` for each field and of the field's own bundle for a
//! field marked `#[bundle]` (flattened). Tuples and derived structs say which parts they are ([`Compose`]) and hand
//! every method to them (`__delegate_bundle!`), so a derived bundle compiles to the loops of its tuple.

use crate::ecs::Component;
use std::any::TypeId;

use super::component::{BundleIds, ComponentId, MAX_BUNDLE};
use super::entity::Entity;
use super::storage::archetype::{typed_mut, ColumnIndex, TypeColumns};
use super::storage::{AnyPool, ErasedPool, Layout, Pool, PutBundle, Registry, SparseSetLayout, Storage};

// The methods face the storage: a bundle's ids, and per-entity insert and remove given the storage and the
// registry; placing the values of new entities is `PutBundle`'s, which the storage's spawns take.
/// The components an entity is spawned with, inserted or removed together: a tuple of up to 12 components, each of
/// a distinct `'static` type, or a struct that derives `Bundle` (up to 12 components, nested bundles counted by
/// their components).
///
/// `#[derive(Bundle)]` makes a struct of components spawn like the tuple of its fields, in field order. A field
/// marked `#[bundle]` is itself a bundle (a derived struct or a tuple), flattened into the outer one. Type
/// parameters are allowed (each must be `'static`); references and lifetime parameters are not.
///
/// ```
/// use swarm::ecs::{Bundle, World};
/// #[derive(Debug, PartialEq)]
/// struct Pos(f32);
/// struct Vel(f32);
/// struct Red;
///
/// #[derive(Bundle)]
/// struct Body {
///     pos: Pos,
///     vel: Vel,
/// }
///
/// #[derive(Bundle)]
/// struct Fighter {
///     #[bundle]
///     body: Body,
///     team: Red,
/// }
///
/// let mut world = World::new();
/// let e = world.spawn(Fighter { body: Body { pos: Pos(1.0), vel: Vel(2.0) }, team: Red }).unwrap();
/// assert_eq!(world.get::<Pos>(e), Some(&Pos(1.0)));
/// assert!(world.has::<Red>(e));
/// // The same entity as `world.spawn((Pos(1.0), Vel(2.0), Red))`.
/// let body = world.remove_bundle::<Body>(e).unwrap();
/// assert_eq!(body.pos, Pos(1.0));
/// assert!(!world.has::<Vel>(e) && world.has::<Red>(e));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a bundle",
    label = "not a bundle",
    note = "a bundle is a tuple of components, `(A, B)` or `(A,)`, or a struct that derives `Bundle`"
)]
pub trait Bundle: PutBundle + Send + Sync + 'static {
    #[doc(hidden)]
    /// Appends the component types to `types`, in the order of the values.
    ///
    /// # Panics
    /// If a type is named twice.
    fn type_ids(types: &mut TypeList);
    #[doc(hidden)]
    /// Registers the component types and appends their ids to `ids`, in the order of the values.
    ///
    /// # Panics
    /// If a type is named twice.
    fn register(components: &mut Registry, ids: &mut BundleIds);
    #[doc(hidden)]
    /// Inserts each component into `entity` (alive) in turn, registering its type, as `World::insert` does.
    fn insert_each(self, storage: &mut Storage, components: &mut Registry, entity: Entity);
    #[doc(hidden)]
    /// The type name of the first component `entity` (alive) lacks, if any.
    fn first_missing(storage: &Storage, components: &Registry, entity: Entity) -> Option<&'static str>;
    #[doc(hidden)]
    /// Removes each component from `entity` (alive, holding them all) and returns them.
    fn remove_each(storage: &mut Storage, components: &Registry, entity: Entity) -> Self;

    #[doc(hidden)]
    /// Panics if the bundle names a type twice (checked without a registry, e.g. when a command is recorded).
    fn assert_distinct() {
        Self::type_ids(&mut TypeList::new(false));
    }
    #[doc(hidden)]
    /// Panics if the bundle names a type twice or names one of the hierarchy's types, which only its own
    /// operations write (checked without a registry: when a spawn or insert command is recorded).
    fn assert_puttable() {
        Self::type_ids(&mut TypeList::new(true));
    }
    #[doc(hidden)]
    /// Registers the component types and returns their ids (cached in the registry per bundle type after the
    /// first call: one lookup per spawn instead of one per component).
    ///
    /// # Panics
    /// If the bundle names a type twice.
    #[inline]
    fn ids(components: &mut Registry) -> BundleIds {
        match components.group::<Self>() {
            Some(ids) => ids,
            None => Self::register_ids(components),
        }
    }
    #[doc(hidden)]
    /// Registers the component types, caches their ids for [`Bundle::ids`] and returns them.
    ///
    /// # Panics
    /// If the bundle names a type twice (then nothing is cached).
    #[cold]
    fn register_ids(components: &mut Registry) -> BundleIds {
        const { assert!(Self::COMPONENTS <= MAX_BUNDLE, "a bundle holds at most 12 components") };
        let mut ids = BundleIds::new();
        Self::register(components, &mut ids);
        components.cache_group::<Self>(ids);
        ids
    }
}

/// A bundle's component types, as its parts name them: refuses a type named twice.
#[doc(hidden)]
pub struct TypeList {
    types: [TypeId; MAX_BUNDLE],
    len: usize,
    /// The bundle is to be put (spawned or inserted): the hierarchy's types are refused.
    put: bool,
}

impl TypeList {
    fn new(put: bool) -> Self {
        Self { types: [TypeId::of::<()>(); MAX_BUNDLE], len: 0, put }
    }

    /// Bundle `B`'s component types, in the order of its values (found without a registry).
    pub(crate) fn of<B: Bundle>() -> Self {
        let mut types = Self::new(false);
        B::type_ids(&mut types);
        types
    }

    /// The types listed.
    pub(crate) fn types(&self) -> &[TypeId] {
        &self.types[..self.len]
    }

    fn push<T: Component>(&mut self) {
        if self.put {
            crate::ecs::hierarchy::refuse_kept::<T>("part of a bundle that is spawned or inserted");
        }
        let id = TypeId::of::<T>();
        assert!(
            !self.types[..self.len].contains(&id),
            "a bundle names `{}` twice; each component type may appear once per entity",
            std::any::type_name::<T>()
        );
        assert!(self.len < MAX_BUNDLE, "a bundle holds more than {MAX_BUNDLE} components");
        self.types[self.len] = id;
        self.len += 1;
    }
}

/// A bundle that is a composition of parts: a tuple (of `One` parts) or a derived struct. Its [`Bundle`] and
/// [`PutBundle`] methods are those of its parts (`__delegate_bundle!`), around these two moves.
#[doc(hidden)]
pub trait Compose: Sized {
    /// The parts, in the order of the values: `Parts<(..)>`.
    type Parts: Bundle;
    /// The values as parts.
    fn into_parts(self) -> Self::Parts;
    /// The values back from parts.
    fn from_parts(parts: Self::Parts) -> Self;
    /// [`PutBundle::put_pools`] of the parts. A tuple hands each value to its `One` part where it lies, without
    /// moving them all into the parts first: a single spawn measured that move.
    #[inline(always)]
    fn put_pools<L: Layout>(self, pools: &mut [Box<dyn ErasedPool>], ids: &[ComponentId], entity: Entity) {
        self.into_parts().put_pools::<L>(pools, ids, entity)
    }
}

/// One component as a part of a bundle: the leaf that every step reaches.
#[doc(hidden)]
pub struct One<T>(pub T);

/// A composition of parts, a tuple of up to 12 bundles: each step handed on to each part in order.
#[doc(hidden)]
pub struct Parts<P>(pub P);

/// Whether the live `entity` has `T`.
fn has<T: Component>(storage: &Storage, components: &Registry, entity: Entity) -> bool {
    components.id::<T>().is_some_and(|id| storage.get::<T>(id, entity.index()).is_some())
}

/// Removes `T` from the live `entity`, which has it.
fn take<T: Component>(storage: &mut Storage, components: &Registry, entity: Entity) -> T {
    let id = components.id::<T>().expect("checked present");
    storage.remove::<T>(id, components, entity.index()).expect("checked present")
}

fn typed<T: Component>(pool: &mut Box<dyn ErasedPool>) -> &mut AnyPool<T> {
    AnyPool::downcast_mut(pool.as_mut())
}

impl<T: Component> Bundle for One<T> {
    fn type_ids(types: &mut TypeList) {
        types.push::<T>();
    }
    fn register(components: &mut Registry, ids: &mut BundleIds) {
        let (id, _) = components.register::<T>();
        ids.push(components, id);
        ids.kept |= crate::ecs::hierarchy::is_kept::<T>();
    }
    #[inline]
    fn insert_each(self, storage: &mut Storage, components: &mut Registry, entity: Entity) {
        let (id, _) = components.register::<T>();
        storage.insert(id, components, entity, self.0);
    }
    #[inline]
    fn first_missing(storage: &Storage, components: &Registry, entity: Entity) -> Option<&'static str> {
        (!has::<T>(storage, components, entity)).then(std::any::type_name::<T>)
    }
    #[inline]
    fn remove_each(storage: &mut Storage, components: &Registry, entity: Entity) -> Self {
        One(take::<T>(storage, components, entity))
    }
}

impl<T: Component> PutBundle for One<T> {
    const COMPONENTS: usize = 1;
    type Pools<'p, L: Layout> = &'p mut L::Pool<T>;
    type Columns<'p> = &'p mut Vec<T>;

    #[inline(always)]
    fn put_pools<L: Layout>(self, pools: &mut [Box<dyn ErasedPool>], ids: &[ComponentId], entity: Entity) {
        L::pool_mut(typed::<T>(&mut pools[ids[0] as usize])).insert_fresh(entity, self.0);
    }
    #[inline(always)]
    fn put_row(self, columns: &mut [TypeColumns], ids: &[ComponentId], at: &ColumnIndex) {
        let id = ids[0];
        let columns = columns[id as usize].as_deref_mut().expect("a table holds the type");
        typed_mut::<T>(columns)[at.of(id)].push(self.0);
    }
    #[inline(always)]
    fn take_pools<'p, L: Layout>(lent: &mut impl Iterator<Item = &'p mut Box<dyn ErasedPool>>) -> Self::Pools<'p, L> {
        L::pool_mut(typed::<T>(lent.next().expect("a pool per component")))
    }
    #[inline(always)]
    fn stage_fresh<L: Layout>(self, pools: &mut Self::Pools<'_, L>, entity: Entity) {
        pools.stage_fresh(entity, self.0);
    }
    #[inline(always)]
    fn commit_fresh<L: Layout>(pools: &mut Self::Pools<'_, L>, fresh: &[Entity]) {
        pools.commit_fresh(fresh);
    }
    #[inline(always)]
    fn push_values(self, pools: &mut Self::Pools<'_, SparseSetLayout>) {
        pools.values.push(self.0);
    }
    #[inline(always)]
    fn packed_entities<'a>(
        pools: &'a mut Self::Pools<'_, SparseSetLayout>,
        each: &mut impl FnMut(&'a mut Vec<Entity>, usize),
    ) {
        let set = &mut **pools;
        each(&mut set.entities, set.values.len());
    }
    #[inline(always)]
    fn index_fresh(pools: &mut Self::Pools<'_, SparseSetLayout>, count: usize) {
        let start = pools.entities.len() - count;
        pools.index_from(start);
    }
    #[inline(always)]
    fn take_columns<'p>(lent: &mut impl Iterator<Item = (&'p mut TypeColumns, u32)>) -> Self::Columns<'p> {
        let (columns, index) = lent.next().expect("a column per component");
        &mut typed_mut::<T>(columns.as_deref_mut().expect("a table holds the type"))[index as usize]
    }
    #[inline(always)]
    fn push_row(self, column: &mut Self::Columns<'_>) {
        column.push(self.0);
    }
}

/// `Parts` of zero to twelve parts. The type parameters double as the names of the parts' types, `$v` of their
/// values and `$p` of their borrows.
macro_rules! impl_parts {
    ($($P:ident $v:ident $p:ident),*) => {
        #[allow(unused_variables, unused_mut, unused_assignments, clippy::unused_unit)]
        impl<$($P: Bundle),*> Bundle for Parts<($($P,)*)> {
            fn type_ids(types: &mut TypeList) {
                $($P::type_ids(types);)*
            }
            fn register(components: &mut Registry, ids: &mut BundleIds) {
                $($P::register(components, ids);)*
            }
            #[inline]
            fn insert_each(self, storage: &mut Storage, components: &mut Registry, entity: Entity) {
                let ($($v,)*) = self.0;
                $($v.insert_each(storage, components, entity);)*
            }
            #[inline]
            fn first_missing(storage: &Storage, components: &Registry, entity: Entity) -> Option<&'static str> {
                None$(.or_else(|| $P::first_missing(storage, components, entity)))*
            }
            #[inline]
            fn remove_each(storage: &mut Storage, components: &Registry, entity: Entity) -> Self {
                Parts(($($P::remove_each(storage, components, entity),)*))
            }
        }

        #[allow(unused_variables, unused_mut, unused_assignments, clippy::unused_unit)]
        impl<$($P: PutBundle),*> PutBundle for Parts<($($P,)*)> {
            const COMPONENTS: usize = 0 $(+ $P::COMPONENTS)*;
            type Pools<'p, L: Layout> = ($($P::Pools<'p, L>,)*);
            type Columns<'p> = ($($P::Columns<'p>,)*);

            #[inline(always)]
            fn put_pools<L: Layout>(self, pools: &mut [Box<dyn ErasedPool>], ids: &[ComponentId], entity: Entity) {
                let ($($v,)*) = self.0;
                let mut at = 0;
                $(
                    $v.put_pools::<L>(pools, &ids[at..], entity);
                    at += $P::COMPONENTS;
                )*
            }
            #[inline(always)]
            fn put_row(self, columns: &mut [TypeColumns], ids: &[ComponentId], index: &ColumnIndex) {
                let ($($v,)*) = self.0;
                let mut at = 0;
                $(
                    $v.put_row(columns, &ids[at..], index);
                    at += $P::COMPONENTS;
                )*
            }
            #[inline(always)]
            fn take_pools<'p, L: Layout>(
                lent: &mut impl Iterator<Item = &'p mut Box<dyn ErasedPool>>,
            ) -> Self::Pools<'p, L> {
                ($($P::take_pools::<L>(lent),)*)
            }
            #[inline(always)]
            fn stage_fresh<L: Layout>(self, pools: &mut Self::Pools<'_, L>, entity: Entity) {
                let ($($v,)*) = self.0;
                let ($($p,)*) = pools;
                $($v.stage_fresh::<L>($p, entity);)*
            }
            #[inline(always)]
            fn commit_fresh<L: Layout>(pools: &mut Self::Pools<'_, L>, fresh: &[Entity]) {
                let ($($p,)*) = pools;
                $($P::commit_fresh::<L>($p, fresh);)*
            }
            #[inline(always)]
            fn push_values(self, pools: &mut Self::Pools<'_, SparseSetLayout>) {
                let ($($v,)*) = self.0;
                let ($($p,)*) = pools;
                $($v.push_values($p);)*
            }
            #[inline(always)]
            fn packed_entities<'a>(
                pools: &'a mut Self::Pools<'_, SparseSetLayout>,
                each: &mut impl FnMut(&'a mut Vec<Entity>, usize),
            ) {
                let ($($p,)*) = pools;
                $($P::packed_entities($p, each);)*
            }
            #[inline(always)]
            fn index_fresh(pools: &mut Self::Pools<'_, SparseSetLayout>, count: usize) {
                let ($($p,)*) = pools;
                $($P::index_fresh($p, count);)*
            }
            #[inline(always)]
            fn take_columns<'p>(lent: &mut impl Iterator<Item = (&'p mut TypeColumns, u32)>) -> Self::Columns<'p> {
                ($($P::take_columns(lent),)*)
            }
            #[inline(always)]
            fn push_row(self, columns: &mut Self::Columns<'_>) {
                let ($($v,)*) = self.0;
                let ($($p,)*) = columns;
                $($v.push_row($p);)*
            }
        }
    };
}

/// Implements [`Bundle`] and [`PutBundle`] for a type that implements [`Compose`], handing every method to its
/// parts: what tuples use and what `#[derive(Bundle)]` emits.
#[doc(hidden)]
#[macro_export]
macro_rules! __delegate_bundle {
    (impl [$($generics:tt)*] $ty:ty where [$($bounds:tt)*]) => {
        impl $($generics)* $crate::ecs::Bundle for $ty where $($bounds)* {
            fn type_ids(types: &mut $crate::ecs::__private::TypeList) {
                <<Self as $crate::ecs::__private::Compose>::Parts as $crate::ecs::Bundle>::type_ids(types)
            }
            fn register(
                components: &mut $crate::ecs::__private::Registry,
                ids: &mut $crate::ecs::__private::BundleIds,
            ) {
                <<Self as $crate::ecs::__private::Compose>::Parts as $crate::ecs::Bundle>::register(components, ids)
            }
            #[inline]
            fn insert_each(
                self,
                storage: &mut $crate::ecs::__private::Storage,
                components: &mut $crate::ecs::__private::Registry,
                entity: $crate::ecs::Entity,
            ) {
                $crate::ecs::Bundle::insert_each(
                    $crate::ecs::__private::Compose::into_parts(self),
                    storage,
                    components,
                    entity,
                )
            }
            #[inline]
            fn first_missing(
                storage: &$crate::ecs::__private::Storage,
                components: &$crate::ecs::__private::Registry,
                entity: $crate::ecs::Entity,
            ) -> ::core::option::Option<&'static str> {
                <<Self as $crate::ecs::__private::Compose>::Parts as $crate::ecs::Bundle>::first_missing(
                    storage,
                    components,
                    entity,
                )
            }
            #[inline]
            fn remove_each(
                storage: &mut $crate::ecs::__private::Storage,
                components: &$crate::ecs::__private::Registry,
                entity: $crate::ecs::Entity,
            ) -> Self {
                $crate::ecs::__private::Compose::from_parts(<<Self as $crate::ecs::__private::Compose>::Parts as
                    $crate::ecs::Bundle>::remove_each(storage, components, entity))
            }
        }

        impl $($generics)* $crate::ecs::__private::PutBundle for $ty where $($bounds)* {
            const COMPONENTS: usize =
                <<Self as $crate::ecs::__private::Compose>::Parts as $crate::ecs::__private::PutBundle>::COMPONENTS;
            type Pools<'__p, __L: $crate::ecs::__private::Layout> =
                <<Self as $crate::ecs::__private::Compose>::Parts as $crate::ecs::__private::PutBundle>::Pools<'__p, __L>;
            type Columns<'__p> =
                <<Self as $crate::ecs::__private::Compose>::Parts as $crate::ecs::__private::PutBundle>::Columns<'__p>;

            #[inline(always)]
            fn put_pools<__L: $crate::ecs::__private::Layout>(
                self,
                pools: &mut [::std::boxed::Box<dyn $crate::ecs::__private::ErasedPool>],
                ids: &[$crate::ecs::ComponentId],
                entity: $crate::ecs::Entity,
            ) {
                $crate::ecs::__private::Compose::put_pools::<__L>(self, pools, ids, entity)
            }
            #[inline(always)]
            fn take_pools<'__p, __L: $crate::ecs::__private::Layout>(
                lent: &mut impl ::core::iter::Iterator<
                    Item = &'__p mut ::std::boxed::Box<dyn $crate::ecs::__private::ErasedPool>,
                >,
            ) -> Self::Pools<'__p, __L> {
                <<Self as $crate::ecs::__private::Compose>::Parts as $crate::ecs::__private::PutBundle>::take_pools::<
                    __L,
                >(lent)
            }
            #[inline(always)]
            fn stage_fresh<__L: $crate::ecs::__private::Layout>(
                self,
                pools: &mut Self::Pools<'_, __L>,
                entity: $crate::ecs::Entity,
            ) {
                $crate::ecs::__private::PutBundle::stage_fresh::<__L>(
                    $crate::ecs::__private::Compose::into_parts(self),
                    pools,
                    entity,
                )
            }
            #[inline(always)]
            fn commit_fresh<__L: $crate::ecs::__private::Layout>(
                pools: &mut Self::Pools<'_, __L>,
                fresh: &[$crate::ecs::Entity],
            ) {
                <<Self as $crate::ecs::__private::Compose>::Parts as $crate::ecs::__private::PutBundle>::commit_fresh::<
                    __L,
                >(pools, fresh)
            }
            #[inline(always)]
            fn push_values(self, pools: &mut Self::Pools<'_, $crate::ecs::__private::SparseSetLayout>) {
                $crate::ecs::__private::PutBundle::push_values($crate::ecs::__private::Compose::into_parts(self), pools)
            }
            #[inline(always)]
            fn packed_entities<'__a>(
                pools: &'__a mut Self::Pools<'_, $crate::ecs::__private::SparseSetLayout>,
                each: &mut impl ::core::ops::FnMut(&'__a mut ::std::vec::Vec<$crate::ecs::Entity>, usize),
            ) {
                <<Self as $crate::ecs::__private::Compose>::Parts as $crate::ecs::__private::PutBundle>::packed_entities(
                    pools, each,
                )
            }
            #[inline(always)]
            fn index_fresh(pools: &mut Self::Pools<'_, $crate::ecs::__private::SparseSetLayout>, count: usize) {
                <<Self as $crate::ecs::__private::Compose>::Parts as $crate::ecs::__private::PutBundle>::index_fresh(
                    pools, count,
                )
            }
            #[inline(always)]
            fn put_row(
                self,
                columns: &mut [$crate::ecs::__private::TypeColumns],
                ids: &[$crate::ecs::ComponentId],
                index: &$crate::ecs::__private::ColumnIndex,
            ) {
                $crate::ecs::__private::PutBundle::put_row(
                    $crate::ecs::__private::Compose::into_parts(self),
                    columns,
                    ids,
                    index,
                )
            }
            #[inline(always)]
            fn take_columns<'__p>(
                lent: &mut impl ::core::iter::Iterator<Item = (&'__p mut $crate::ecs::__private::TypeColumns, u32)>,
            ) -> Self::Columns<'__p> {
                <<Self as $crate::ecs::__private::Compose>::Parts as $crate::ecs::__private::PutBundle>::take_columns(
                    lent,
                )
            }
            #[inline(always)]
            fn push_row(self, columns: &mut Self::Columns<'_>) {
                $crate::ecs::__private::PutBundle::push_row($crate::ecs::__private::Compose::into_parts(self), columns)
            }
        }
    };
}

/// A tuple of components as `Parts` of `One` each (the empty tuple is the empty bundle: `world.spawn(())` makes
/// an entity with no components, which matches queries of optional terms and filters alone, and takes components
/// later with [`World::insert`](super::World::insert)).
macro_rules! impl_tuple {
    ($($T:ident $v:ident),*) => {
        #[allow(clippy::unused_unit)]
        impl<$($T: Component),*> Compose for ($($T,)*) {
            type Parts = Parts<($(One<$T>,)*)>;
            #[inline(always)]
            fn into_parts(self) -> Self::Parts {
                let ($($v,)*) = self;
                Parts(($(One($v),)*))
            }
            #[inline(always)]
            fn from_parts(parts: Self::Parts) -> Self {
                let Parts(($(One($v),)*)) = parts;
                ($($v,)*)
            }
            #[inline(always)]
            #[allow(unused_variables, unused_mut, unused_assignments)]
            fn put_pools<L: Layout>(self, pools: &mut [Box<dyn ErasedPool>], ids: &[ComponentId], entity: Entity) {
                let ($($v,)*) = self;
                let mut at = 0;
                $(
                    One($v).put_pools::<L>(pools, &ids[at..], entity);
                    at += 1;
                )*
            }
        }
        __delegate_bundle!(impl [<$($T: Component),*>] ($($T,)*) where []);
    };
}

/// Both macros for every arity from 0 to 12.
macro_rules! for_arities {
    ($m:ident) => {
        $m!();
        $m!(A a pa);
        $m!(A a pa, B b pb);
        $m!(A a pa, B b pb, C c pc);
        $m!(A a pa, B b pb, C c pc, D d pd);
        $m!(A a pa, B b pb, C c pc, D d pd, E e pe);
        $m!(A a pa, B b pb, C c pc, D d pd, E e pe, F f pf);
        $m!(A a pa, B b pb, C c pc, D d pd, E e pe, F f pf, G g pg);
        $m!(A a pa, B b pb, C c pc, D d pd, E e pe, F f pf, G g pg, H h ph);
        $m!(A a pa, B b pb, C c pc, D d pd, E e pe, F f pf, G g pg, H h ph, I i pi);
        $m!(A a pa, B b pb, C c pc, D d pd, E e pe, F f pf, G g pg, H h ph, I i pi, J j pj);
        $m!(A a pa, B b pb, C c pc, D d pd, E e pe, F f pf, G g pg, H h ph, I i pi, J j pj, K k pk);
        $m!(A a pa, B b pb, C c pc, D d pd, E e pe, F f pf, G g pg, H h ph, I i pi, J j pj, K k pk, M m pm);
    };
}

/// The tuple arms take two names per element; the third is dropped.
macro_rules! impl_tuple3 {
    ($($T:ident $v:ident $p:ident),*) => {
        impl_tuple!($($T $v),*);
    };
}

for_arities!(impl_parts);
for_arities!(impl_tuple3);
