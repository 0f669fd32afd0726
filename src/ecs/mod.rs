//! A small sparse-set ECS with five storage backends that a running world can switch between.
//!
//! - [`Entity`] handles with generations, from an allocator with a capacity ([`entity`]);
//! - [`SparseSet`], the default pool ([`sparse_set`](storage::sparse_set)), and the other layouts ([`storage`]);
//! - [`World`]: spawn, despawn, insert, remove, get, resources, live backend switch ([`world`]);
//! - queries over tuples of `&T` / `&mut T` with [`With`] / [`Without`] ([`query`]);
//! - views of one component type for many per-entity operations ([`view`]);
//! - the command buffer ([`commands`]) and the app with its stages and plugins ([`app`](crate::app)).

pub mod bundle;
pub mod commands;
pub mod component;
pub mod entity;
pub mod query;
pub mod resources;
pub mod sort;
pub mod storage;
pub mod view;
pub mod world;

pub use bundle::Bundle;
pub use commands::{ApplyStats, Commands};
pub use component::{ComponentId, ComponentSet};
pub use entity::{ComponentError, Entities, Entity, NoSuchEntity, WorldFull};
pub use query::{Query, QueryError, With, Without};
pub use sort::SortMethod;
pub use storage::sparse_set::{PackedOrder, SparseSet};
pub use storage::{Backend, UnknownBackend};
pub use view::ViewMut;
pub use world::{ComponentBytes, World};
