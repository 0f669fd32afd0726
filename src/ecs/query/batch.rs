//! A query's matches cut into batches of rows, for the caller's own threads ([`QueryBorrow::iter_batched`]).

use super::data::QueryData;
use crate::ecs::entity::Entity;

/// Up to `n` of a query's matches, from [`QueryBorrow::iter_batched`](super::QueryBorrow::iter_batched): an iterator of
/// `(entity, item)`. Batches of one query borrow disjoint rows, so each can go to a thread of its own (a batch is
/// [`Send`] when its items are, as with `&mut T` of a `Send` type and `&T` of a `Sync` one).
pub struct Batch<'w, Q: QueryData> {
    rows: Rows<'w, Q>,
    len: usize,
}

/// A batch's rows: a slice of a run (lock-step pools, an archetype table), or matches gathered one by one.
enum Rows<'w, Q: QueryData> {
    Run(Q::Run<'w>),
    Gathered(std::vec::IntoIter<(Entity, Q::Item<'w>)>),
}

impl<'w, Q: QueryData> Batch<'w, Q> {
    /// The rows of a run: `entities[k]` owns row `k` of every slice.
    pub(super) fn run(entities: &'w [Entity], slices: Q::Slices<'w>) -> Self {
        Self { rows: Rows::Run(Q::run(entities, slices)), len: entities.len() }
    }

    /// The batch's rows: a run's entities and values, or the gathered matches.
    #[allow(clippy::type_complexity)]
    pub(super) fn into_parts(self) -> Result<Q::Run<'w>, std::vec::IntoIter<(Entity, Q::Item<'w>)>> {
        match self.rows {
            Rows::Run(run) => Ok(run),
            Rows::Gathered(items) => Err(items),
        }
    }

    /// Matches gathered one by one.
    pub(super) fn gathered(items: Vec<(Entity, Q::Item<'w>)>) -> Self {
        let len = items.len();
        Self { rows: Rows::Gathered(items.into_iter()), len }
    }
}

impl<'w, Q: QueryData> Iterator for Batch<'w, Q> {
    type Item = (Entity, Q::Item<'w>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let next = match &mut self.rows {
            Rows::Run(run) => run.next(),
            Rows::Gathered(items) => items.next(),
        };
        self.len -= next.is_some() as usize;
        next
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }

    /// The rows by their own loop: a run's entities zipped with its slices' rows.
    #[inline]
    fn fold<B, G: FnMut(B, Self::Item) -> B>(self, init: B, f: G) -> B {
        match self.rows {
            Rows::Run(run) => run.fold(init, f),
            Rows::Gathered(items) => items.fold(init, f),
        }
    }
}

impl<Q: QueryData> ExactSizeIterator for Batch<'_, Q> {}

/// The batches of a query, from [`QueryBorrow::iter_batched`](super::QueryBorrow::iter_batched).
pub struct Batches<'w, Q: QueryData>(pub(super) std::vec::IntoIter<Batch<'w, Q>>);

impl<'w, Q: QueryData> Iterator for Batches<'w, Q> {
    type Item = Batch<'w, Q>;

    fn next(&mut self) -> Option<Batch<'w, Q>> {
        self.0.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<Q: QueryData> ExactSizeIterator for Batches<'_, Q> {}

/// Cuts a run into batches of at most `size` rows, appended to `out`.
pub(super) fn cut_run<'w, Q: QueryData>(
    mut entities: &'w [Entity],
    slices: Q::Slices<'w>,
    size: usize,
    out: &mut Vec<Batch<'w, Q>>,
) {
    let mut slices = Q::split_front(slices, entities.len()).0;
    while !entities.is_empty() {
        let n = size.min(entities.len());
        let (head, tail) = Q::split_front(slices, n);
        out.push(Batch::run(&entities[..n], head));
        (entities, slices) = (&entities[n..], tail);
    }
}

/// Cuts gathered matches into batches of at most `size`, appended to `out`.
pub(super) fn cut_gathered<'w, Q: QueryData>(
    items: Vec<(Entity, Q::Item<'w>)>,
    size: usize,
    out: &mut Vec<Batch<'w, Q>>,
) {
    if items.len() <= size {
        if !items.is_empty() {
            out.push(Batch::gathered(items));
        }
        return;
    }
    let mut items = items.into_iter();
    while items.len() > 0 {
        out.push(Batch::gathered(items.by_ref().take(size).collect()));
    }
}
