//! A small sparse-set ECS with storage backends that a running world can switch between.
//!
//! - [`World`]: spawn, despawn, insert, remove, get, resources, live backend switch ([`World::set_backend`]);
//! - [`Entity`] handles with generations, from an allocator with a capacity ([`Entities`]);
//! - queries over tuples of `&T` / `&mut T` with [`With`] / [`Without`] ([`QueryBorrow`]);
//! - [`ViewMut`]: one component type's storage found once, for many per-entity operations;
//! - [`Commands`]: structural changes recorded now and applied together ([`World::apply_commands`]);
//! - [`Backend`] and the [`storage`] layouts, with "Choosing a backend"; [`SparseSet`], the default pool, and its
//!   sorts ([`SortMethod`]).
//!
//! The app with its stages, plugins and profiler is [`crate::app`].

mod builder;
mod bundle;
mod change;
mod commands;
mod component;
mod entity;
mod entity_ref;
pub mod events;
pub mod hierarchy;
pub mod holders;
mod pipeline;
mod query;
mod resources;
pub mod rollback;
mod snapshot;
mod sort;
pub mod storage;
mod view;
mod world;

pub use builder::EntityBuilder;
pub use bundle::Bundle;
#[doc(hidden)]
pub use change::ChangeView;
pub use change::Tracker;
#[doc(hidden)]
pub use commands::CommandQueue;
pub use commands::{ApplyStats, CommandTotals, Commands};
pub use component::{Component, ComponentId, ComponentInfo, ComponentSet, Resource, MAX_BUNDLE, MAX_COMPONENTS};
pub use entity::{
    AllocatorState, ComponentError, Entities, Entity, NoSuchEntity, ReservedHandles, SpawnAtError, WorldFull,
};
pub use entity_ref::{EntityRef, EntityWorldMut};
pub use events::{HandlerId, TooManyRounds, EVENT_ROUNDS};
pub use hierarchy::{Children, HierarchyError, Parent};
pub use holders::HoldsEntities;
pub(crate) use query::smaller_tuples_too;
pub use query::{
    count_elsewhere, halves_moved, join, Added, Batch, Batches, Changed, Elsewhere, Filter, Lease, Listed, OnLoan, Or,
    Prepared, QueryAccess, QueryBorrow, QueryData, QueryError, QueryIter, QueryOneError, QueryRef, QueryState,
    ReadOnlyQueryData, Recording, Source, With, Without, MAX_QUERY_TYPES,
};
pub(crate) use query::{Held, HeldShared, Loaned};
pub use rollback::{Checkpoint, Checkpoints, RollbackError};
pub use snapshot::{checksum, Format, LoadInfo, SnapshotError, SnapshotSchema, HEADER_LEN, MAGIC, VERSION};
pub use sort::SortMethod;
pub use storage::sparse_set::{PackedOrder, SparseSet, PAGE_SIZE};
pub use storage::{Backend, UnknownBackend};
/// Derives [`Bundle`](trait@Bundle) (the trait of the same name, with the example) for a struct of components.
pub use swarm_derive::Bundle;
/// Derives [`HoldsEntities`](trait@HoldsEntities) for a struct: the fields marked `#[entities]` (each an `Entity`
/// or a value that holds some) are visited and mapped, in order.
pub use swarm_derive::HoldsEntities;
/// Derives [`QueryData`](trait@QueryData) (the trait of the same name, with the example) for a struct of query
/// terms with one lifetime.
pub use swarm_derive::QueryData;
pub use view::ViewMut;
pub use world::{ComponentBytes, World, DEFAULT_CAPACITY, PIECE_ROWS};

/// What the derives' output names: not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use super::bundle::{Compose, One, Parts, TypeList};
    pub use super::component::BundleIds;
    pub use super::query::{
        is_query_data, Access, ComposeQuery, ComposedRows, ComposedRun, Lent, Names, TermPool, TermRun, TupleOf,
    };
    pub use super::storage::archetype::ErasedColumns;
    pub use super::storage::archetype::{ColumnIndex, TypeColumns};
    pub use super::storage::{ErasedPool, Layout, PutBundle, Registry, SparseSetLayout, Storage};
    pub use crate::__delegate_bundle as delegate_bundle;
    pub use crate::__delegate_query as delegate_query;
}
