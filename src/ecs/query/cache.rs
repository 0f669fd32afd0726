//! The query cache: what a mutable world works out once per query shape (ids, access check, borrow order,
//! matching archetype tables), keyed by the shape's type.

use super::access::{Access, Names};
use super::data::QueryData;
use super::error::MAX_QUERY_TYPES;
use super::filter::Filter;
use super::term::NO_INDEX;
use crate::ecs::component::ComponentSet;
use crate::ecs::storage::archetype::{Archetypes, Table};
use crate::ecs::storage::Registry;
use rustc_hash::FxHashMap;
use std::any::TypeId;
use std::collections::hash_map::{Entry, VacantEntry};

/// A query shape's cached facts in one world (see [`QueryCache`]).
pub(crate) struct Shape {
    /// The ids, the required and excluded sets, or the refusal.
    pub(super) access: Access,
    /// The positions of `access.ids()` by ascending id (the order the pools, or the types' columns, are borrowed in).
    pub(super) order: [u8; MAX_QUERY_TYPES],
    /// The archetype tables that match.
    pub(super) tables: TableMatches,
}

impl Shape {
    /// The shape of query `(Q, F)`, its types named through `names`; no table matched yet.
    pub(super) fn new<Q: QueryData, F: Filter>(names: &mut impl Names) -> Self {
        let access = Access::of::<Q, F>(names);
        let mut order: [u8; MAX_QUERY_TYPES] = std::array::from_fn(|k| k as u8);
        order[..access.len].sort_unstable_by_key(|&k| access.ids[k as usize]);
        Self { access, order, tables: TableMatches::default() }
    }
}

/// The archetype tables a shape matches, with the index of each fetched term's column among its type's columns.
#[derive(Default)]
pub(super) struct TableMatches {
    /// [`Archetypes::stamp`] of the tables these were found in; another stamp means other tables.
    archetypes: u64,
    /// How many tables (in creation order) have been looked at; tables are only ever appended.
    seen: usize,
    /// Each matching table, and per term the index of its column (`NO_INDEX` past the fetched terms, or for an
    /// optional term whose type the table lacks).
    pub(super) found: Vec<(u32, [u32; MAX_QUERY_TYPES])>,
}

impl TableMatches {
    /// Looks at the tables made since the last call (all of them if the archetypes were replaced).
    #[inline]
    pub(super) fn update<F: Filter>(&mut self, archetypes: &Archetypes, access: &Access) {
        if self.archetypes != archetypes.stamp() {
            *self = Self { archetypes: archetypes.stamp(), seen: 0, found: Vec::new() };
        }
        let tables = archetypes.tables();
        if self.seen < tables.len() {
            self.add::<F>(&tables[self.seen..], access);
            self.seen = tables.len();
        }
    }

    #[cold]
    fn add<F: Filter>(&mut self, new: &[Table], access: &Access) {
        for (k, table) in new.iter().enumerate() {
            if set_matches::<F>(table.set(), access) {
                self.found.push(((self.seen + k) as u32, column_indices(table, access)));
            }
        }
    }
}

/// What a mutable world's queries work out once per query shape (the fetched tuple and the filter, as types):
/// the component ids (registering the types), the access check, the borrow order and the matching archetype
/// tables. Keyed by `TypeId`, so a query pays one hash lookup for all of it. Ids never change while the registry
/// lives; a world that replaces its registry replaces its cache with it.
#[derive(Default)]
pub(crate) struct QueryCache {
    shapes: FxHashMap<TypeId, Box<Shape>>,
}

impl QueryCache {
    /// The shape of `(Q, F)`, worked out now if new.
    #[inline]
    pub(super) fn shape<Q: QueryData, F: Filter>(&mut self, components: &mut Registry) -> &mut Shape {
        match self.shapes.entry(TypeId::of::<(Q::Key, F)>()) {
            Entry::Occupied(shape) => shape.into_mut(),
            Entry::Vacant(slot) => Self::first_run::<Q, F>(slot, components),
        }
    }

    /// The shape of a query's first run in this world, kept: out of line, so the lookup above stays small enough
    /// to inline into every query.
    #[cold]
    #[inline(never)]
    fn first_run<'c, Q: QueryData, F: Filter>(
        slot: VacantEntry<'c, TypeId, Box<Shape>>,
        components: &mut Registry,
    ) -> &'c mut Shape {
        slot.insert(Box::new(Shape::new::<Q, F>(components)))
    }
}

/// Whether a table of component set `set` matches: it holds the fetched and `With` types and none of the
/// `Without` types, and passes the filter's [`Or`]s.
pub(super) fn set_matches<F: Filter>(set: &ComponentSet, access: &Access) -> bool {
    !access.unmatchable
        && set.is_superset(&access.required)
        && !set.intersects(&access.excluded)
        && (F::ALWAYS || F::table_passes(set, &mut access.ids()[access.fetched..].iter().copied()))
}

/// Per fetched term, the index of `table`'s column among its type's columns (`NO_INDEX` where the table has none,
/// and past the fetched terms). A type the world never met (`ABSENT`) has no column in any table.
pub(super) fn column_indices(table: &Table, access: &Access) -> [u32; MAX_QUERY_TYPES] {
    let mut indices = [NO_INDEX; MAX_QUERY_TYPES];
    for (index, &id) in indices.iter_mut().zip(&access.ids()[..access.fetched]) {
        *index = table.column_index(id).unwrap_or(NO_INDEX);
    }
    indices
}
