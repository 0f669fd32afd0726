//! Bundles: the tuples of components an entity is spawned with.

use super::component::{BundleIds, ComponentId};
use super::entity::{Entities, Entity};
use super::storage::archetype::{typed_mut, Archetypes};
use super::storage::{AnyPool, ErasedPool, Layout, Pool, PutBundle, Registry, SparseSetLayout, Storage};

// The methods face the storage: a bundle's ids, and per-entity insert and remove given the storage and the
// registry; placing the values of new entities is `PutBundle`'s, which the storage's spawns take.
/// A tuple of up to 12 components, each of a distinct `'static` type.
pub trait Bundle: PutBundle + 'static {
    #[doc(hidden)]
    /// Panics if the tuple names a type twice (checked without a registry, e.g. when a command is recorded).
    fn assert_distinct();
    #[doc(hidden)]
    /// Registers the component types and returns their ids (cached in the registry per bundle type after the
    /// first call: one lookup per spawn instead of one per component).
    ///
    /// # Panics
    /// If the tuple names a type twice.
    fn ids(components: &mut Registry) -> BundleIds;
    #[doc(hidden)]
    /// Registers the component types, caches their ids for [`Bundle::ids`] and returns them.
    ///
    /// # Panics
    /// If the tuple names a type twice (then nothing is cached).
    fn register_ids(components: &mut Registry) -> BundleIds;
    #[doc(hidden)]
    /// Inserts each component into `entity` (alive) in turn, registering its type, as `World::insert` does.
    fn insert_each(self, storage: &mut Storage, components: &mut Registry, entity: Entity);
    #[doc(hidden)]
    /// The type name of the first component `entity` (alive) lacks, if any.
    fn first_missing(storage: &Storage, components: &Registry, entity: Entity) -> Option<&'static str>;
    #[doc(hidden)]
    /// Removes each component from `entity` (alive, holding them all) and returns them.
    fn remove_each(storage: &mut Storage, components: &Registry, entity: Entity) -> Self;
}

/// Whether the live `entity` has `T`.
fn has<T: 'static>(storage: &Storage, components: &Registry, entity: Entity) -> bool {
    components.id::<T>().is_some_and(|id| storage.get::<T>(id, entity.index()).is_some())
}

/// Removes `T` from the live `entity`, which has it.
fn take<T: 'static>(storage: &mut Storage, components: &Registry, entity: Entity) -> T {
    let id = components.id::<T>().expect("checked present");
    storage.remove::<T>(id, components, entity.index()).expect("checked present")
}

fn pool<T: 'static>(pools: &mut [Box<dyn ErasedPool>], id: ComponentId) -> &mut AnyPool<T> {
    typed(&mut pools[id as usize])
}

fn typed<T: 'static>(pool: &mut Box<dyn ErasedPool>) -> &mut AnyPool<T> {
    AnyPool::downcast_mut(pool.as_mut())
}

macro_rules! impl_bundle {
    ($($T:ident $v:ident $p:ident $k:tt),+) => {
        impl<$($T: 'static),+> Bundle for ($($T,)+) {
            fn assert_distinct() {
                let types = [$((std::any::TypeId::of::<$T>(), std::any::type_name::<$T>())),+];
                for (k, (id, name)) in types.iter().enumerate() {
                    assert!(
                        types[..k].iter().all(|(other, _)| other != id),
                        "a bundle names `{name}` twice; each component type may appear once per entity"
                    );
                }
            }
            #[inline]
            fn ids(components: &mut Registry) -> BundleIds {
                match components.group::<Self>() {
                    Some(ids) => ids,
                    None => Self::register_ids(components),
                }
            }
            #[cold]
            fn register_ids(components: &mut Registry) -> BundleIds {
                let mut ids = BundleIds::new();
                $(let (id, _) = components.register::<$T>(); ids.push(components, id);)+
                components.cache_group::<Self>(ids);
                ids
            }
            fn insert_each(self, storage: &mut Storage, components: &mut Registry, entity: Entity) {
                let ($($v,)+) = self;
                $(
                    let (id, _) = components.register::<$T>();
                    storage.insert(id, components, entity, $v);
                )+
            }
            fn first_missing(storage: &Storage, components: &Registry, entity: Entity) -> Option<&'static str> {
                $(
                    if !has::<$T>(storage, components, entity) {
                        return Some(std::any::type_name::<$T>());
                    }
                )+
                None
            }
            fn remove_each(storage: &mut Storage, components: &Registry, entity: Entity) -> Self {
                ($(take::<$T>(storage, components, entity),)+)
            }
        }

        impl<$($T: 'static),+> PutBundle for ($($T,)+) {
            #[inline]
            fn put_pools<L: Layout>(self, pools: &mut [Box<dyn ErasedPool>], ids: &[ComponentId], entity: Entity) {
                let ($($v,)+) = self;
                $(L::pool_mut(pool::<$T>(pools, ids[$k])).insert_fresh(entity, $v);)+
            }
            #[inline]
            fn put_rows(
                items: impl Iterator<Item = (Entity, Self)>,
                archetypes: &mut Archetypes,
                table: u32,
                ids: &[ComponentId],
                mut spawned: impl FnMut(Entity),
            ) {
                let held = &archetypes.tables()[table as usize];
                let index = [$(held.column_index(ids[$k]).expect("a table holds a column of its own set") as usize),+];
                let (mut rows, columns) = archetypes.new_rows(table);
                let [$($p),+] = columns.get_disjoint_mut([$(ids[$k] as usize),+]).expect("bundle ids are distinct");
                $(let $p = &mut typed_mut::<$T>($p.as_deref_mut().expect("a table holds the type"))[index[$k]];)+
                // A row is whole (its entity and every value) before the caller's iterator is asked for the next.
                for (entity, ($($v,)+)) in items {
                    rows.push(entity);
                    $($p.push($v);)+
                    spawned(entity);
                }
            }
            fn put_batch<L: Layout>(
                items: impl Iterator<Item = (Entity, Self)>,
                pools: &mut [Box<dyn ErasedPool>],
                ids: &[ComponentId],
                out: &mut Vec<Entity>,
            ) {
                let [$($p),+] = pools.get_disjoint_mut([$(ids[$k] as usize),+]).expect("bundle ids are distinct");
                $(let $p = L::pool_mut(typed::<$T>($p));)+
                // Values are staged as plain pushes; each pool then takes the run of fresh entities at once.
                // The commit runs even if the caller's iterator panics, so no pool is left half-staged.
                let start = out.len();
                let staging = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    for (entity, ($($v,)+)) in items {
                        $($p.stage_fresh(entity, $v);)+
                        out.push(entity);
                    }
                }));
                $($p.commit_fresh(&out[start..]);)+
                staging.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }
            fn put_sparse_batch(
                items: impl Iterator<Item = Self>,
                pools: &mut [Box<dyn ErasedPool>],
                ids: &[ComponentId],
                entities: &mut Entities,
                out: Option<&mut Vec<Entity>>,
            ) -> usize {
                let [$($p),+] = pools.get_disjoint_mut([$(ids[$k] as usize),+]).expect("bundle ids are distinct");
                $(let $p = SparseSetLayout::pool_mut(typed::<$T>($p));)+
                // The loop only pushes values, so each array is written as a stream; the handles come after, in one
                // run. Every pool holds as many values past its entities (a push cannot unwind halfway through a
                // tuple: only the caller's iterator can panic, between bundles), and the commit runs even on a panic.
                let staging = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    for ($($v,)+) in items {
                        $($p.values.push($v);)+
                    }
                }));
                let count = [$($p.values.len() - $p.entities.len()),+][0];
                {
                    // The handles are allocated onto the first pool's packed entities and copied from there.
                    let [first, rest @ ..] = [$(&mut $p.entities),+];
                    let start = first.len();
                    entities.alloc_many(count, first);
                    for other in rest {
                        other.extend_from_slice(&first[start..]);
                    }
                    if let Some(out) = out {
                        out.extend_from_slice(&first[start..]);
                    }
                }
                $($p.index_from($p.entities.len() - count);)+
                staging.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                count
            }
        }
    };
}

/// The empty bundle: `world.spawn(())` makes an entity with no components (it matches queries of optional terms
/// and filters alone, and takes components later with [`World::insert`](super::World::insert)).
impl Bundle for () {
    fn assert_distinct() {}
    #[inline]
    fn ids(_: &mut Registry) -> BundleIds {
        BundleIds::new()
    }
    fn register_ids(components: &mut Registry) -> BundleIds {
        Self::ids(components)
    }
    fn insert_each(self, _: &mut Storage, _: &mut Registry, _: Entity) {}
    fn first_missing(_: &Storage, _: &Registry, _: Entity) -> Option<&'static str> {
        None
    }
    fn remove_each(_: &mut Storage, _: &Registry, _: Entity) {}
}

impl PutBundle for () {
    #[inline]
    fn put_pools<L: Layout>(self, _: &mut [Box<dyn ErasedPool>], _: &[ComponentId], _: Entity) {}
    fn put_rows(
        items: impl Iterator<Item = (Entity, Self)>,
        archetypes: &mut Archetypes,
        table: u32,
        _: &[ComponentId],
        mut spawned: impl FnMut(Entity),
    ) {
        let (mut rows, _) = archetypes.new_rows(table);
        for (entity, ()) in items {
            rows.push(entity);
            spawned(entity);
        }
    }
    fn put_batch<L: Layout>(
        items: impl Iterator<Item = (Entity, Self)>,
        _: &mut [Box<dyn ErasedPool>],
        _: &[ComponentId],
        out: &mut Vec<Entity>,
    ) {
        out.extend(items.map(|(entity, ())| entity));
    }
    fn put_sparse_batch(
        items: impl Iterator<Item = Self>,
        _: &mut [Box<dyn ErasedPool>],
        _: &[ComponentId],
        entities: &mut Entities,
        out: Option<&mut Vec<Entity>>,
    ) -> usize {
        // Counted first (the iterator may panic: then nothing was allocated), then allocated in one run.
        let count = items.count();
        let mut handles = Vec::new();
        entities.alloc_many(count, out.unwrap_or(&mut handles));
        count
    }
}

impl_bundle!(A a pa 0);
impl_bundle!(A a pa 0, B b pb 1);
impl_bundle!(A a pa 0, B b pb 1, C c pc 2);
impl_bundle!(A a pa 0, B b pb 1, C c pc 2, D d pd 3);
impl_bundle!(A a pa 0, B b pb 1, C c pc 2, D d pd 3, E e pe 4);
impl_bundle!(A a pa 0, B b pb 1, C c pc 2, D d pd 3, E e pe 4, F f pf 5);
impl_bundle!(A a pa 0, B b pb 1, C c pc 2, D d pd 3, E e pe 4, F f pf 5, G g pg 6);
impl_bundle!(A a pa 0, B b pb 1, C c pc 2, D d pd 3, E e pe 4, F f pf 5, G g pg 6, H h ph 7);
impl_bundle!(A a pa 0, B b pb 1, C c pc 2, D d pd 3, E e pe 4, F f pf 5, G g pg 6, H h ph 7, I i pi 8);
impl_bundle!(A a pa 0, B b pb 1, C c pc 2, D d pd 3, E e pe 4, F f pf 5, G g pg 6, H h ph 7, I i pi 8, J j pj 9);
impl_bundle!(A a pa 0, B b pb 1, C c pc 2, D d pd 3, E e pe 4, F f pf 5, G g pg 6, H h ph 7, I i pi 8, J j pj 9, K k pk 10);
impl_bundle!(A a pa 0, B b pb 1, C c pc 2, D d pd 3, E e pe 4, F f pf 5, G g pg 6, H h ph 7, I i pi 8, J j pj 9, K k pk 10, M m pm 11);
