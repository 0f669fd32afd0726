//! A small sparse-set ECS with storage backends that a running world can switch between.
//!
//! - [`World`]: spawn, despawn, insert, remove, get, resources, live backend switch ([`World::set_backend`]);
//! - [`Entity`] handles with generations, from an allocator with a capacity ([`Entities`]);
//! - queries over tuples of `&T` / `&mut T` with [`With`] / [`Without`] ([`Query`]);
//! - [`ViewMut`]: one component type's storage found once, for many per-entity operations;
//! - [`Commands`]: structural changes recorded now and applied together ([`World::apply_commands`]);
//! - [`Backend`] and the [`storage`] layouts, with "Choosing a backend"; [`SparseSet`], the default pool, and its
//!   sorts ([`SortMethod`]).
//!
//! The app with its stages, plugins and profiler is [`crate::app`].

mod builder;
mod bundle;
mod commands;
mod component;
mod entity;
mod entity_ref;
mod query;
mod resources;
mod snapshot;
mod sort;
pub mod storage;
mod view;
mod world;

pub use builder::EntityBuilder;
pub use bundle::Bundle;
pub use commands::{ApplyStats, CommandTotals, Commands};
pub use component::{ComponentId, ComponentInfo, ComponentSet, MAX_BUNDLE, MAX_COMPONENTS};
pub use entity::{
    AllocatorState, ComponentError, Entities, Entity, NoSuchEntity, ReservedHandles, SpawnAtError, WorldFull,
};
pub use entity_ref::{EntityRef, EntityWorldMut};
pub use query::{
    Filter, Or, Query, QueryData, QueryError, QueryOneError, QueryRef, ReadOnlyQueryData, With, Without,
    MAX_QUERY_TYPES,
};
pub use snapshot::{
    checksum, Format, HoldsEntities, LoadInfo, SnapshotError, SnapshotSchema, HEADER_LEN, MAGIC, VERSION,
};
pub use sort::SortMethod;
pub use storage::sparse_set::{PackedOrder, SparseSet, PAGE_SIZE};
pub use storage::{Backend, UnknownBackend};
pub use view::ViewMut;
pub use world::{ComponentBytes, World, DEFAULT_CAPACITY};
