//! External iteration: `iter()` hands out what `for_each` visits, in its order, through every walk (lock-step runs,
//! runs cut by a filter, a packed driver, probing, archetype tables), on a mutable and a shared world and through a
//! prepared query (the worlds of the batches' tests: several sets of components, holes from despawns); `for` loops
//! write through `&mut` items; adapters, an early `break` and `collect` work.

use crate::batches::mixed;
use crate::{world, Blue, Pos, Red, Vel};
use swarm::ecs::{Backend, Entity, Filter, Or, QueryState, With, Without, World};

/// `(entity, pos.x, vel.x)` of each match of `(&Pos, &Vel)` filtered by `F`: by `for_each`, then by `iter()` on a
/// shared world, a mutable one and a prepared query; all four must agree, order included, and the iterator's
/// length must be exact.
fn agree<F: Filter>(w: &mut World) -> usize {
    let mut by_closure = Vec::new();
    w.query::<(&Pos, &Vel)>().filter::<F>().for_each(|e, (p, v)| by_closure.push((e, p.0, v.0)));
    let shared = w.query_ref::<(&Pos, &Vel)>().filter::<F>().iter();
    assert_eq!(shared.len(), by_closure.len(), "the iterator's length");
    let shared: Vec<_> = shared.map(|(e, (p, v))| (e, p.0, v.0)).collect();
    assert_eq!(shared, by_closure, "iter() on a shared world");
    let exclusive: Vec<_> = w.query::<(&Pos, &Vel)>().filter::<F>().iter().map(|(e, (p, v))| (e, p.0, v.0)).collect();
    assert_eq!(exclusive, by_closure, "iter() on a mutable world");
    let mut state = QueryState::<(&Pos, &Vel), F>::new(w).unwrap();
    let prepared: Vec<_> = state.iter(w).map(|(e, (p, v))| (e, p.0, v.0)).collect();
    assert_eq!(prepared, by_closure, "a prepared query's iter()");
    let prepared_mut: Vec<_> = state.iter_mut(w).map(|(e, (p, v))| (e, p.0, v.0)).collect();
    assert_eq!(prepared_mut, by_closure, "a prepared query's iter_mut()");
    by_closure.len()
}

/// Every walk hands `iter()` what it hands `for_each`: pools in the same order (lock-step), with a filter that
/// cuts the runs, a `With` pool that drives, a pool in another order (probing), and an `Or`.
fn iter_visits_what_for_each_visits(backend: Backend) {
    let (mut w, _) = mixed(backend);
    let all = agree::<()>(&mut w);
    assert_eq!(all, w.query::<(&Pos, &Vel)>().count());
    assert!(all > 100, "the world has matches: {all}");
    assert!(agree::<With<Red>>(&mut w) > 0);
    assert!(agree::<Without<Blue>>(&mut w) > 0);
    assert!(agree::<(With<Red>, Without<Blue>)>(&mut w) > 0);
    assert!(agree::<Or<With<Red>, With<Blue>>>(&mut w) > 0);
    // Pools of the same entities in the same order (the same spawns and despawns) walk in lock-step, in one run
    // or in runs a filter cuts.
    let mut w = world(backend);
    let all: Vec<Entity> = (0..300).map(|i| w.spawn((Pos(i as f32, 0.0), Vel(1.0, 0.0))).unwrap()).collect();
    for e in all.iter().step_by(7) {
        w.despawn(*e).unwrap();
    }
    for e in all.iter().skip(1).step_by(3) {
        if w.is_alive(*e) {
            w.insert(*e, Red).unwrap();
        }
    }
    assert_eq!(agree::<()>(&mut w), 300 - 43);
    assert!(agree::<Without<Red>>(&mut w) > 0);
    assert!(agree::<With<Red>>(&mut w) > 0);
}

/// A `for` loop over a query (the query itself, and its `iter()`) writes through `&mut` items: the same world as
/// the closure loop on a twin world.
fn for_loops_write_through(backend: Backend) {
    let (mut a, mut b) = (mixed(backend).0, mixed(backend).0);
    a.query::<(&mut Pos, &Vel)>().without::<Blue>().for_each(|_, (p, v)| p.0 += v.0);
    for (_, (p, v)) in b.query::<(&mut Pos, &Vel)>().without::<Blue>() {
        p.0 += v.0;
    }
    let moved = |w: &World| -> Vec<(Entity, f32)> {
        let mut out: Vec<_> = w.query_ref::<&Pos>().iter().map(|(e, p)| (e, p.0)).collect();
        out.sort_by_key(|&(e, _)| e);
        out
    };
    assert_eq!(moved(&b), moved(&a));
    // Once more, through `iter()` and a single term.
    a.query::<&mut Pos>().for_each(|_, p| p.1 += 1.0);
    for (_, p) in b.query::<&mut Pos>().iter() {
        p.1 += 1.0;
    }
    let ys = |w: &World| w.query_ref::<&Pos>().iter().map(|(_, p)| p.1).sum::<f32>();
    assert_eq!(ys(&a), ys(&b));
    assert!(ys(&b) > 0.0);
}

/// An early `break` leaves the rows after it untouched; adapters (`filter`, `map`, `take`, `find`, `position`,
/// `collect`, `fold`) see the matches in order; a query with no match yields nothing.
fn adapters_and_early_break(backend: Backend) {
    let (mut w, _) = mixed(backend);
    let order: Vec<Entity> = w.query_ref::<&Pos>().iter().map(|(e, _)| e).collect();
    let mut touched = Vec::new();
    for (e, p) in w.query::<&mut Pos>() {
        if touched.len() == 3 {
            break;
        }
        p.1 = 7.0;
        touched.push(e);
    }
    assert_eq!(touched, order[..3]);
    let sevens: Vec<Entity> = w.query_ref::<&Pos>().iter().filter(|(_, p)| p.1 == 7.0).map(|(e, _)| e).collect();
    assert_eq!(sevens, touched);
    let third = w.query_ref::<&Pos>().iter().nth(2).map(|(e, _)| e);
    assert_eq!(third, Some(order[2]));
    let by_fold = w.query_ref::<&Pos>().iter().fold(0.0, |sum, (_, p)| sum + p.0);
    let mut by_closure = 0.0;
    w.query_ref::<&Pos>().for_each(|_, p| by_closure += p.0);
    assert_eq!(by_fold, by_closure);
    let mut iter = w.query_ref::<&Pos>().iter();
    let total = iter.len();
    iter.by_ref().take(5).for_each(drop);
    assert_eq!(iter.len(), total - 5, "the length counts down");
    assert_eq!(iter.count(), total - 5);
    assert_eq!(w.query_ref::<(&Pos, &Blue)>().without::<Vel>().iter().next().map(|(e, _)| e), None);
    struct Never;
    assert_eq!(w.query::<&Never>().iter().count(), 0);
}

/// A prepared query's `get` and `get_mut` return the item, as the world's query does.
fn prepared_get_returns_the_item(backend: Backend) {
    let (mut w, _) = mixed(backend);
    let red = w.query_ref::<()>().with::<Red>().with::<Pos>().iter().next().map(|(e, _)| e).expect("a red one");
    let blue_only = w.query_ref::<()>().with::<Blue>().without::<Pos>().iter().next().map(|(e, _)| e).expect("blue");
    let mut state = QueryState::<&mut Pos, With<Red>>::new(&mut w).unwrap();
    state.get_mut(&mut w, red).unwrap().1 = 42.0;
    assert_eq!(w.get::<Pos>(red).unwrap().1, 42.0);
    assert!(state.get_mut(&mut w, blue_only).is_err());
    let mut look = QueryState::<&Pos>::new(&mut w).unwrap();
    assert_eq!(look.get(&w, red).map(|p| p.1), Ok(42.0));
    w.despawn(red).unwrap();
    assert!(look.get(&w, red).is_err(), "a dead handle");
}

/// Every loop of a world's query is a prepared query's too, with the same result: `for_each`, `for_each_run`,
/// `count`, `get_many`, `iter_batched`, the parallel loops, and the loops that record (the same buffer, so the same
/// world after applying it), on twin worlds.
fn prepared_queries_offer_every_loop(backend: Backend) {
    let (mut a, _) = mixed(backend);
    let (mut b, _) = mixed(backend);
    let mut state = QueryState::<(&mut Pos, &Vel), Without<Blue>>::new(&mut b).unwrap();
    let mut seen_a = Vec::new();
    a.query::<(&mut Pos, &Vel)>().without::<Blue>().for_each(|e, (p, v)| {
        p.0 += v.0;
        seen_a.push(e)
    });
    let mut seen_b = Vec::new();
    state.query(&mut b).for_each(|e, (p, v)| {
        p.0 += v.0;
        seen_b.push(e)
    });
    assert_eq!(seen_a, seen_b, "for_each");
    let runs = |w: &mut World| {
        let mut lens = Vec::new();
        w.query::<(&mut Pos, &Vel)>().without::<Blue>().for_each_run(|e, _| lens.push(e.len()));
        lens
    };
    let mut lens = Vec::new();
    state.query(&mut b).for_each_run(|e, _| lens.push(e.len()));
    assert_eq!(lens, runs(&mut a), "for_each_run");
    assert_eq!(state.query(&mut b).count(), seen_a.len(), "count");
    let pair = [seen_a[3], seen_a[1]];
    let [(p, _), (q, _)] = state.query(&mut b).get_many(pair).unwrap();
    (p.1, q.1) = (7.0, 8.0);
    let [(p, _), (q, _)] = a.query::<(&mut Pos, &Vel)>().without::<Blue>().get_many(pair).unwrap();
    (p.1, q.1) = (7.0, 8.0);
    let sizes: Vec<usize> = state.query(&mut b).iter_batched(16).map(|batch| batch.len()).collect();
    let expected: Vec<usize> =
        a.query::<(&mut Pos, &Vel)>().without::<Blue>().iter_batched(16).map(|batch| batch.len()).collect();
    assert_eq!(sizes, expected, "iter_batched");
    a.set_piece_rows(5);
    b.set_piece_rows(5);
    a.query::<(&mut Pos, &Vel)>().without::<Blue>().par_for_each(|_, (p, v)| p.1 += v.0 * 2.0);
    state.query(&mut b).par_for_each(|_, (p, v)| p.1 += v.0 * 2.0);
    let mut sums_a = Vec::new();
    a.query::<(&mut Pos, &Vel)>().without::<Blue>().par_fold(&mut sums_a, |s| *s = 0.0, |s, _, (p, _)| *s += p.0);
    let mut sums_b = Vec::new();
    state.query(&mut b).par_fold(&mut sums_b, |s| *s = 0.0, |s, _, (p, _)| *s += p.0);
    assert_eq!(sums_a, sums_b, "par_fold");
    a.query::<(&mut Pos, &Vel)>().without::<Blue>().for_each_with_commands(|e, (p, _), commands| {
        if p.0 > 10.0 {
            commands.insert(e, Red);
        }
    });
    state.query(&mut b).for_each_with_commands(|e, (p, _), commands| {
        if p.0 > 10.0 {
            commands.insert(e, Red);
        }
    });
    a.query::<(&mut Pos, &Vel)>().without::<Blue>().par_for_each_with_commands(|e, (p, _), commands| {
        if p.1 > 3.0 {
            commands.despawn(e);
        }
    });
    state.query(&mut b).par_for_each_with_commands(|e, (p, _), commands| {
        if p.1 > 3.0 {
            commands.despawn(e);
        }
    });
    assert_eq!(a.commands().len(), b.commands().len());
    assert!(!a.commands().is_empty(), "the loops recorded");
    a.apply_commands();
    b.apply_commands();
    let everything = |w: &World| -> Vec<(Entity, f32, f32, bool)> {
        w.query_ref::<(&Pos, Option<&Red>)>().iter().map(|(e, (p, r))| (e, p.0, p.1, r.is_some())).collect()
    };
    assert_eq!(everything(&a), everything(&b), "the same world after every loop");
    let mut look = QueryState::<&Pos, With<Red>>::new(&mut b).unwrap();
    let shared = &b;
    assert_eq!(look.query_ref(shared).count(), shared.query_ref::<&Pos>().with::<Red>().count(), "query_ref");
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        iter_visits_what_for_each_visits,
        for_loops_write_through,
        adapters_and_early_break,
        prepared_get_returns_the_item,
        prepared_queries_offer_every_loop,
    }
}
