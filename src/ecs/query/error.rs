//! Why a query is refused, and why a one-entity lookup finds nothing.

use crate::ecs::entity::Entity;
use std::fmt;

/// Most component types one query may name (fetched and filters together).
pub const MAX_QUERY_TYPES: usize = 12;

/// Why a query was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// The same component type appears twice (fetched twice, or fetched and filtered).
    Conflict {
        /// The type named twice.
        component: &'static str,
        /// Whether one of the two asks for `&mut`.
        mutable: bool,
    },
    /// More than [`MAX_QUERY_TYPES`] types.
    TooManyTypes,
    /// `&mut` of a type only the hierarchy writes ([`Parent`](crate::ecs::Parent),
    /// [`Children`](crate::ecs::Children)): read it with `&T`, change it with the hierarchy's operations.
    Kept {
        /// The type.
        component: &'static str,
    },
    /// A change filter ([`Changed`](crate::ecs::Changed), [`Added`](crate::ecs::Added)) inside an
    /// [`Or`](crate::ecs::Or): change filters drive the loop, which an `Or` cannot.
    ChangesInOr,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::Conflict { component, mutable: true } => write!(
                f,
                "query conflict: `{component}` is requested twice and one request is `&mut`; \
                 a mutable reference may not alias another reference to the same value"
            ),
            QueryError::Conflict { component, mutable: false } => {
                write!(f, "query conflict: `{component}` is named twice in one query (fetch or filter it once)")
            }
            QueryError::TooManyTypes => {
                write!(f, "a query names at most {MAX_QUERY_TYPES} component types")
            }
            QueryError::Kept { component } => write!(
                f,
                "`{component}` is kept by the hierarchy and cannot be written through `&mut`: read it with `&`, \
                 change it with World::add_child, insert_child, remove_child or detach"
            ),
            QueryError::ChangesInOr => write!(
                f,
                "a change filter (Changed<T>, Added<T>) cannot be inside an Or: change filters drive the loop; \
                 run one query per filter instead"
            ),
        }
    }
}

impl std::error::Error for QueryError {}

/// Why [`QueryBorrow::get`](super::QueryBorrow::get) (and [`World::query_one_mut`](crate::ecs::World::query_one_mut) and friends) found no match for an entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryOneError {
    /// The handle is stale or was never spawned.
    NoSuchEntity(Entity),
    /// The entity is alive but lacks a fetched component or fails the filter.
    Unsatisfied(Entity),
    /// The same entity is named twice in one [`QueryBorrow::get_many`](super::QueryBorrow::get_many): it would hand out two references to one value.
    Aliased(Entity),
    /// The query itself is refused (see [`QueryError`]).
    Refused(QueryError),
}

impl fmt::Display for QueryOneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryOneError::NoSuchEntity(e) => write!(f, "no such entity: {e:?} is stale or was never spawned"),
            QueryOneError::Unsatisfied(e) => {
                write!(f, "entity {e:?} does not match the query (a component is missing or the filter fails)")
            }
            QueryOneError::Aliased(e) => write!(
                f,
                "entity {e:?} is named twice in one lookup; a mutable reference may not alias another reference \
                 to the same value"
            ),
            QueryOneError::Refused(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for QueryOneError {}
