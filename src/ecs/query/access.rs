//! What a query names: its component ids in order, which are borrowed mutably, which must be present or absent.
//! Worked out once per query shape (see [`super::cache`]) and checked for aliasing there.

use super::data::QueryData;
use super::error::{QueryError, MAX_QUERY_TYPES};
use super::filter::Filter;
use crate::ecs::component::{ComponentId, ComponentSet};
use crate::ecs::storage::Registry;
use crate::ecs::Component;
use std::any::{type_name, TypeId};

/// The component ids a query names, in order, with whether each is borrowed mutably.
#[derive(Default)]
pub struct Access {
    pub(super) ids: [ComponentId; MAX_QUERY_TYPES],
    types: [Option<TypeId>; MAX_QUERY_TYPES],
    mutable: [bool; MAX_QUERY_TYPES],
    pub(super) len: usize,
    /// How many of the ids are fetched terms (the filter's follow).
    pub(super) fetched: usize,
    /// Types that must be present (fetched and `With`).
    pub required: ComponentSet,
    /// Types that must be absent (`Without`).
    pub excluded: ComponentSet,
    /// Types a change filter watches ([`Changed`](super::Changed), [`Added`](super::Added)).
    pub(super) watched: ComponentSet,
    /// Inside an [`Or`](super::Or) or an `Option`: types are named (and checked for conflicts) but neither required nor excluded as such.
    pub(super) neutral: u8,
    /// A required type the world has never met (a query through `&World`, which registers nothing): no entity
    /// can match.
    pub(super) unmatchable: bool,
    pub(super) error: Option<QueryError>,
}

/// The id of a type a query through `&World` names but the world has never met.
pub(super) const ABSENT: ComponentId = ComponentId::MAX;

impl Access {
    /// Records a named type: `id` is `None` if the world has not met it (shared queries only). `required` for
    /// fetched terms and `With`; `excluded` for `Without`.
    pub(super) fn name<T: Component>(
        &mut self,
        id: Option<ComponentId>,
        mutable: bool,
        required: bool,
        excluded: bool,
    ) {
        if self.error.is_some() {
            return;
        }
        let (required, excluded) = if self.neutral > 0 { (false, false) } else { (required, excluded) };
        if let Some(k) = self.types[..self.len].iter().position(|&other| other == Some(TypeId::of::<T>())) {
            let component = type_name::<T>();
            self.error = Some(QueryError::Conflict { component, mutable: mutable || self.mutable[k] });
            return;
        }
        if self.len == MAX_QUERY_TYPES {
            self.error = Some(QueryError::TooManyTypes);
            return;
        }
        if mutable && crate::ecs::hierarchy::is_kept::<T>() {
            self.error = Some(QueryError::Kept { component: type_name::<T>() });
            return;
        }
        self.ids[self.len] = id.unwrap_or(ABSENT);
        self.types[self.len] = Some(TypeId::of::<T>());
        self.mutable[self.len] = mutable;
        self.len += 1;
        match id {
            Some(id) if required => {
                self.required.insert(id);
            }
            Some(id) if excluded => {
                self.excluded.insert(id);
            }
            None if required => self.unmatchable = true,
            _ => {}
        }
    }

    /// Records a type a change filter watches: required, named for the schedule (a system writing it cannot run
    /// beside the query), but borrowing nothing, so the query may fetch it too. `None` (a shared world that never
    /// met the type): nothing can match.
    pub(super) fn watch(&mut self, id: Option<ComponentId>) {
        match id {
            Some(id) => {
                self.required.insert(id);
                self.watched.insert(id);
            }
            None => self.unmatchable = true,
        }
    }

    /// Refuses the query.
    pub(super) fn refuse(&mut self, error: QueryError) {
        self.error.get_or_insert(error);
    }

    /// The ids, in the order the query names them.
    #[inline]
    pub fn ids(&self) -> &[ComponentId] {
        &self.ids[..self.len]
    }

    /// The ids of the terms written (`&mut T`).
    pub(crate) fn writes(&self) -> impl Iterator<Item = ComponentId> + '_ {
        self.ids().iter().zip(&self.mutable).filter(|(_, &mutable)| mutable).map(|(&id, _)| id)
    }
}

/// How a query learns its types' ids: a mutable world registers a type it meets for the first time ([`Registry`]);
/// a shared one only looks it up (`Lookup`), and a type it never met has no id. The one code path both kinds of
/// query take to name their types.
pub trait Names {
    /// The id of `T`, if it has one.
    fn id<T: Component>(&mut self) -> Option<ComponentId>;
}

impl Names for Registry {
    #[inline]
    fn id<T: Component>(&mut self) -> Option<ComponentId> {
        Some(self.register::<T>().0)
    }
}

/// Names types without registering them: a query through a shared `&World`.
pub struct Lookup<'a>(pub &'a Registry);

impl Names for Lookup<'_> {
    #[inline]
    fn id<T: Component>(&mut self) -> Option<ComponentId> {
        self.0.id::<T>()
    }
}

impl Access {
    /// The access of query `Q` filtered by `F`: the fetched types, then the filter's, named through `names`. A
    /// refusal is kept in it (see [`Access::refusal`]).
    pub(super) fn of<Q: QueryData, F: Filter>(names: &mut impl Names) -> Access {
        let mut access = Access::default();
        Q::access(names, &mut access);
        access.fetched = access.len;
        F::access(names, &mut access);
        access
    }

    /// Why the query is refused, if it is.
    pub(super) fn refusal(&self) -> Option<&QueryError> {
        self.error.as_ref()
    }
}

/// What a query reads and writes, by component id, and which types it requires and excludes: what a schedule
/// compares to tell whether two queries may run at once ([`World::query_access`](crate::ecs::World::query_access)).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryAccess {
    /// Types fetched as `&T` (also inside an `Option`).
    pub reads: ComponentSet,
    /// Types fetched as `&mut T` (also inside an `Option`).
    pub writes: ComponentSet,
    /// Types an entity must have to match (fetched terms and `With`).
    pub required: ComponentSet,
    /// Types an entity must lack to match (`Without`).
    pub excluded: ComponentSet,
    /// Types the filter names (`With`, `Without`, inside `Or`): it looks at their storage, so a system writing one
    /// of them cannot run beside this query's.
    pub filtered: ComponentSet,
}

impl QueryAccess {
    /// The access of query `Q` filtered by `F`, registering its types in `registry`; or why it is refused.
    pub(crate) fn of_query<Q: QueryData, F: Filter>(registry: &mut Registry) -> Result<Self, QueryError> {
        Self::of(&Access::of::<Q, F>(registry))
    }

    /// The access of `access` (a query's named types), or its refusal.
    pub(super) fn of(access: &Access) -> Result<Self, QueryError> {
        if let Some(error) = access.refusal() {
            return Err(error.clone());
        }
        let mut out = QueryAccess { required: access.required, excluded: access.excluded, ..Default::default() };
        for k in 0..access.fetched {
            let set = if access.mutable[k] { &mut out.writes } else { &mut out.reads };
            set.insert(access.ids[k]);
        }
        for &id in &access.ids[access.fetched..access.len] {
            if id != ABSENT {
                out.filtered.insert(id);
            }
        }
        for id in access.watched.iter() {
            out.filtered.insert(id);
        }
        Ok(out)
    }

    /// Whether no entity can match both queries: one requires a type the other excludes (bevy's rule for
    /// `With`/`Without` pairs).
    pub fn is_disjoint(&self, other: &QueryAccess) -> bool {
        self.required.intersects(&other.excluded) || other.required.intersects(&self.excluded)
    }

    /// A type one query writes and the other reads or writes, if the two can match the same entity: then no
    /// entity's value may be borrowed by both at once. The smallest such id.
    pub fn conflict(&self, other: &QueryAccess) -> Option<ComponentId> {
        if self.is_disjoint(other) {
            return None;
        }
        self.overlap(other)
    }

    /// A type one query writes and the other reads, writes or filters on, whatever their filters: the two need
    /// the same pool (or columns) at once, one of them exclusively. The smallest such id.
    pub fn overlap(&self, other: &QueryAccess) -> Option<ComponentId> {
        let clash = |a: &QueryAccess, b: &QueryAccess| {
            a.writes.iter().find(|&id| b.writes.contains(id) || b.reads.contains(id) || b.filtered.contains(id))
        };
        match (clash(self, other), clash(other, self)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
