//! What a query names: its component ids in order, which are borrowed mutably, which must be present or absent.
//! Worked out once per query shape (see [`super::cache`]) and checked for aliasing there.

use super::error::{QueryError, MAX_QUERY_TYPES};
use crate::ecs::component::{ComponentId, ComponentSet};
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
    /// Inside an [`Or`]: types are named (and checked for conflicts) but neither required nor excluded as such.
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
    pub(super) fn name<T: 'static>(&mut self, id: Option<ComponentId>, mutable: bool, required: bool, excluded: bool) {
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

    /// The ids, in the order the query names them.
    #[inline]
    pub fn ids(&self) -> &[ComponentId] {
        &self.ids[..self.len]
    }
}
