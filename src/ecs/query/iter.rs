//! External iteration: a query's matches as an [`Iterator`] ([`QueryIter`]), for `for` loops, adapters, an early
//! `break` and `collect`.
//!
//! The iterator is made by the same walk as the batches of [`QueryBorrow::iter_batched`](super::QueryBorrow::iter_batched),
//! uncut: a lock-step walk or an archetype table hands over its runs as slices, walked row by row as the iterator
//! advances; a probing walk (pools in different orders, a filter that drives) gathers its matches into a list
//! first, since a pool borrowed for the whole iteration can hand out each value only through one call that
//! borrows them all. `for_each` and `for_each_run` gather nothing and compile the loop body inside the walk: they
//! stay the fast path (the figures per backend are in BENCHMARKS.md).

use super::batch::Batch;
use super::data::QueryData;
use crate::ecs::entity::Entity;

/// A query's matches, `(entity, item)`, in the order [`QueryBorrow::for_each`](super::QueryBorrow::for_each) visits them.
/// From [`QueryBorrow::iter`](super::QueryBorrow::iter), [`QueryState::iter`](super::QueryState::iter), or a system's
/// [`Query`](crate::app::Query) parameter (`iter`, `iter_mut`, or `for .. in &query`).
///
/// ```
/// use swarm::ecs::World;
/// struct Pos(f32); struct Vel(f32);
/// let mut world = World::new();
/// for k in 0..4 {
///     world.spawn((Pos(0.0), Vel(k as f32))).unwrap();
/// }
/// for (_, (pos, vel)) in world.query::<(&mut Pos, &Vel)>() {
///     pos.0 += vel.0;
/// }
/// let fast: Vec<f32> = world.query_ref::<&Pos>().iter().map(|(_, p)| p.0).filter(|&x| x >= 2.0).collect();
/// assert_eq!(fast, [2.0, 3.0]);
/// ```
pub struct QueryIter<'w, Q: QueryData> {
    /// The run being walked: its entities and values, row by row.
    run: Option<Q::Run<'w>>,
    /// The runs after it, then the gathered matches.
    rest: std::vec::IntoIter<Batch<'w, Q>>,
    /// The gathered matches being handed out.
    gathered: std::vec::IntoIter<(Entity, Q::Item<'w>)>,
    /// Matches in `rest`.
    later: usize,
}

impl<'w, Q: QueryData> QueryIter<'w, Q> {
    /// The matches of `batches`, in their order.
    pub(super) fn new(batches: Vec<Batch<'w, Q>>) -> Self {
        let later = batches.iter().map(ExactSizeIterator::len).sum();
        let mut iter = Self { run: None, rest: batches.into_iter(), gathered: Vec::new().into_iter(), later };
        iter.advance();
        iter
    }

    /// Moves to the next batch, if any; whether there was one. (Inlined: called out of line, it would make the
    /// iterator's address escape the caller's loop, which then keeps the run's position in memory, not in a
    /// register.)
    #[inline(always)]
    fn advance(&mut self) -> bool {
        let Some(batch) = self.rest.next() else { return false };
        self.later -= batch.len();
        match batch.into_parts() {
            Ok(run) => self.run = Some(run),
            Err(gathered) => self.gathered = gathered,
        }
        true
    }
}

impl<'w, Q: QueryData> Iterator for QueryIter<'w, Q> {
    type Item = (Entity, Q::Item<'w>);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(next) = self.run.as_mut().and_then(Iterator::next) {
                return Some(next);
            }
            if let Some(next) = self.gathered.next() {
                return Some(next);
            }
            if !self.advance() {
                return None;
            }
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.run.as_ref().map_or(0, |run| run.size_hint().0);
        let len = left + self.gathered.len() + self.later;
        (len, Some(len))
    }

    /// Runs `f` on each match, a run's rows by the run's own loop (what `for_each` on the iterator, `sum`, `fold`
    /// and most adapters' consumers come down to).
    #[inline]
    fn fold<B, G: FnMut(B, Self::Item) -> B>(self, init: B, mut f: G) -> B {
        let mut acc = init;
        if let Some(run) = self.run {
            acc = run.fold(acc, &mut f);
        }
        acc = self.gathered.fold(acc, &mut f);
        for batch in self.rest {
            acc = batch.fold(acc, &mut f);
        }
        acc
    }
}

impl<Q: QueryData> ExactSizeIterator for QueryIter<'_, Q> {}

impl<Q: QueryData> std::iter::FusedIterator for QueryIter<'_, Q> {}
