//! Batched queries: every match exactly once, in batches of at most the size asked, each batch on a thread of its
//! own, through every walk (lock-step runs, runs cut by a filter, a packed driver, probing, archetype tables).

use crate::{sorted, world, Blue, Pos, Red, Vel};
use std::collections::BTreeMap;
use swarm::ecs::{Backend, Entity, Filter, QueryBorrow, QueryData, With, Without, World};

/// A world whose sets of components differ, with holes from despawns: pools of different sizes and orders, and
/// several archetype tables.
pub(crate) fn mixed(backend: Backend) -> (World, Vec<Entity>) {
    let mut w = world(backend);
    let mut all = Vec::new();
    for i in 0..600 {
        let (x, v) = (i as f32, (i % 7) as f32);
        let e = match i % 5 {
            0 => w.spawn((Pos(x, 0.0), Vel(v, 1.0))).unwrap(),
            1 => w.spawn((Pos(x, 0.0), Vel(v, 1.0), Red)).unwrap(),
            2 => w.spawn((Pos(x, 0.0),)).unwrap(),
            3 => w.spawn((Vel(v, 1.0), Blue)).unwrap(),
            _ => w.spawn((Pos(x, 0.0), Vel(v, 1.0), Red, Blue)).unwrap(),
        };
        all.push(e);
    }
    for e in all.iter().step_by(11).copied().collect::<Vec<_>>() {
        w.despawn(e).unwrap();
    }
    all.retain(|&e| w.is_alive(e));
    (w, all)
}

/// What `for_each` visits, by entity.
fn visited<Q: QueryData, F: Filter>(query: QueryBorrow<&mut World, Q, F>) -> Vec<Entity> {
    let mut out = Vec::new();
    query.for_each(|e, _| out.push(e));
    sorted(out)
}

/// Runs `pos.0 += vel.0` through batches of `size`, each on its own thread; checks the batches' sizes and that
/// they cover exactly what `for_each` would have visited.
fn step_in_batches<F: Filter>(w: &mut World, size: usize) {
    let expected = visited(w.query::<(&mut Pos, &Vel)>().filter::<F>());
    let batches: Vec<_> = w.query::<(&mut Pos, &Vel)>().filter::<F>().iter_batched(size).collect();
    assert!(batches.iter().all(|batch| (1..=size).contains(&batch.len())), "a batch of 0 or more than {size}");
    let seen = std::thread::scope(|scope| {
        let workers: Vec<_> = batches
            .into_iter()
            .map(|batch| {
                scope.spawn(move || {
                    let mut seen = Vec::new();
                    for (e, (pos, vel)) in batch {
                        pos.0 += vel.0;
                        seen.push(e);
                    }
                    seen
                })
            })
            .collect();
        workers.into_iter().flat_map(|worker| worker.join().unwrap()).collect::<Vec<_>>()
    });
    assert_eq!(sorted(seen), expected, "every match once, and nothing else");
}

fn positions(w: &World) -> BTreeMap<Entity, f32> {
    let mut out = BTreeMap::new();
    w.query_ref::<&Pos>().for_each(|e, p| {
        out.insert(e, p.0);
    });
    out
}

fn batches_cover_every_match_once_on_threads(backend: Backend) {
    let (mut w, all) = mixed(backend);
    let before = positions(&w);
    for size in [1, 7, 64, 10_000] {
        step_in_batches::<()>(&mut w, size);
        step_in_batches::<Without<Red>>(&mut w, size);
        step_in_batches::<With<Blue>>(&mut w, size);
    }
    // Each entity moved by its velocity once per pass that matched it: 4 sizes, and a pass per filter it passes.
    let after = positions(&w);
    for e in all {
        let Some(&x) = before.get(&e) else { continue };
        let vel = w.get::<Vel>(e).map_or(0.0, |v| v.0);
        let passes = 1 + !w.has::<Red>(e) as u32 + w.has::<Blue>(e) as u32;
        assert_eq!(after[&e], x + 4.0 * passes as f32 * vel, "{e:?}");
    }
    w.assert_invariants();
}

fn batches_of_pools_packed_alike(backend: Backend) {
    // Pools that got the same spawns and despawns walk in lock-step on a sparse set: batches are cut from the
    // runs, and a filter cuts the runs first.
    let mut w = world(backend);
    let all: Vec<Entity> = (0..500).map(|i| w.spawn((Pos(i as f32, 0.0), Vel(1.0, 0.0))).unwrap()).collect();
    for &e in all.iter().step_by(7) {
        w.despawn(e).unwrap();
    }
    for &e in all.iter().skip(3).step_by(4) {
        if w.is_alive(e) {
            w.insert(e, Red).unwrap();
        }
    }
    let before = positions(&w);
    step_in_batches::<()>(&mut w, 50);
    step_in_batches::<Without<Red>>(&mut w, 16);
    for (e, x) in positions(&w) {
        assert_eq!(x, before[&e] + if w.has::<Red>(e) { 1.0 } else { 2.0 }, "{e:?}");
    }
    w.assert_invariants();
}

fn batches_of_optional_and_empty_queries(backend: Backend) {
    let (mut w, all) = mixed(backend);
    // Optional terms: every entity with a position, with or without a velocity.
    let mut seen = Vec::new();
    for batch in w.query::<(&Pos, Option<&mut Vel>)>().iter_batched(33) {
        for (e, (_, vel)) in batch {
            if let Some(vel) = vel {
                vel.1 = 2.0;
            }
            seen.push(e);
        }
    }
    assert_eq!(sorted(seen), visited(w.query::<&Pos>()));
    assert!(all.iter().all(|&e| w.get::<Vel>(e).is_none_or(|v| v.1 == if w.has::<Pos>(e) { 2.0 } else { 1.0 })));
    // The empty query: every live entity, or those passing its filters.
    let every: Vec<Entity> = w.query::<()>().iter_batched(100).flatten().map(|(e, ())| e).collect();
    assert_eq!(sorted(every), sorted(all.clone()));
    let blue: Vec<Entity> = w.query::<()>().with::<Blue>().iter_batched(9).flatten().map(|(e, ())| e).collect();
    assert_eq!(sorted(blue), visited(w.query::<()>().with::<Blue>()));
    // Through a shared world, reading.
    let shared = &w;
    let total: f32 = shared.query_ref::<(&Pos, &Vel)>().iter_batched(40).flatten().map(|(_, (p, v))| p.0 * v.1).sum();
    let mut expected = 0.0;
    shared.query_ref::<(&Pos, &Vel)>().for_each(|_, (p, v)| expected += p.0 * v.1);
    assert_eq!(total, expected);
    // Nothing to match: no batch.
    w.clear();
    assert_eq!(w.query::<(&mut Pos, &Vel)>().iter_batched(8).len(), 0);
}

fn a_batch_size_of_zero(backend: Backend) {
    let (mut w, _) = mixed(backend);
    let _ = w.query::<&Pos>().iter_batched(0);
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        batches_cover_every_match_once_on_threads,
        batches_of_pools_packed_alike,
        batches_of_optional_and_empty_queries,
    }

    panics_on_every_backend! {
        a_batch_size_of_zero => "batch_size is 0",
    }
}
