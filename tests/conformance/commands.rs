//! The command buffer: deferred spawns, the order commands apply in, and the commands that never land.

use crate::{world, Blue, Name, Pos, Red, Vel};
use swarm::ecs::{Backend, Entity, NoSuchEntity, World};

/// A live entity and its components (`bool`: tagged `Red`).
type Row = (Entity, Option<Pos>, Option<Vel>, Option<Name>, bool);

/// Holes in the free list, then one loop that despawns, spawns (deferred, with a follow-up insert on the new
/// entity), inserts and removes per visited row, with `shuffle` > 0 putting sparse-set pools in a seeded
/// random order first. Returns every live entity with its components, in handle order.
fn keyed_scenario(backend: Backend, shuffle: u64) -> Vec<Row> {
    let mut w = World::with_capacity(1_000);
    w.set_backend(backend);
    let all: Vec<Entity> = (0..200).map(|i| w.spawn((Pos(i as f32, 0.0), Vel(0.0, i as f32))).unwrap()).collect();
    for e in all.iter().step_by(7) {
        w.despawn(*e).unwrap();
    }
    if shuffle > 0 && backend == Backend::SparseSet {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ shuffle;
        for pool in [0, 1] {
            let mut permute = |len: usize, swap: &mut dyn FnMut(usize, usize)| {
                for i in (1..len).rev() {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    swap(i, (rng % (i as u64 + 1)) as usize);
                }
            };
            if pool == 0 {
                let p = w.sparse_set_mut::<Pos>().expect("sparse-set pool");
                permute(p.len(), &mut |i, j| p.swap_positions(i, j));
            } else {
                let p = w.sparse_set_mut::<Vel>().expect("sparse-set pool");
                permute(p.len(), &mut |i, j| p.swap_positions(i, j));
            }
        }
    }
    w.query::<(&Pos, &Vel)>().for_each_with_commands(|e, (p, v), c| match p.0 as u32 % 5 {
        0 => {
            c.despawn(e);
            let child = c.spawn((Pos(p.0, 1.0),)).unwrap();
            c.insert(child, Name(format!("child of {}", p.0)));
        }
        1 => c.insert(e, Name(format!("{}", v.1))),
        2 => c.remove::<Vel>(e),
        3 => {
            c.spawn((Pos(-p.0, 2.0), Red)).unwrap();
            c.spawn((Vel(p.0, 3.0),)).unwrap();
        }
        _ => {}
    });
    let stats = w.apply_commands();
    assert_eq!(stats.skipped + stats.refused, 0);
    w.assert_invariants();
    let mut out = Vec::new();
    for e in w.entities().iter().collect::<Vec<_>>() {
        out.push((e, w.get::<Pos>(e).copied(), w.get::<Vel>(e).copied(), w.get::<Name>(e).cloned(), w.has::<Red>(e)));
    }
    out
}

fn commands_recorded_in_a_loop_apply_in_handle_order(backend: Backend) {
    // The same loop, visiting in this backend's order (and, on the sparse set, in shuffled orders),
    // must leave exactly the world the direct array leaves: it visits in index order.
    let expected = keyed_scenario(Backend::DirectArray, 0);
    for shuffle in 0..4 {
        let got = keyed_scenario(backend, shuffle);
        assert_eq!(got, expected, "{} (shuffle {shuffle})", backend);
    }
}

fn deferred_spawns_name_their_entity_only_in_their_buffer(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 0.0),)).unwrap();
    let mut deferred = Vec::new();
    w.query::<(&Pos,)>().for_each_with_commands(|e, (p,), c| {
        let child = c.spawn((Pos(p.0 + 1.0, 0.0),)).unwrap();
        assert!(child.is_deferred() && !e.is_deferred());
        c.insert(child, Name("child".into())); // names the new entity
        c.insert(e, Vel(1.0, 1.0));
        deferred.push(child);
    });
    let child = deferred[0];
    assert_eq!(format!("{child:?}"), "deferred#1");
    assert!(!w.is_alive(child) && w.get::<Pos>(child).is_none(), "a deferred handle is never alive");
    assert_eq!(w.despawn(child), Err(NoSuchEntity(child)));
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped, stats.refused), (3, 0, 0));
    assert_eq!(w.get::<Vel>(a), Some(&Vel(1.0, 1.0)));
    let mut named = Vec::new();
    w.query::<(&Name, &Pos)>().for_each(|e, (n, p)| named.push((e, n.0.clone(), *p)));
    assert_eq!(named.len(), 1);
    assert_eq!((named[0].1.as_str(), named[0].2), ("child", Pos(2.0, 0.0)));
    assert!(!named[0].0.is_deferred());
    // The deferred handle belongs to the applied buffer: in a later buffer it names nothing.
    let mut c = w.commands();
    c.insert(child, Red);
    c.remove::<Pos>(child);
    c.despawn(child);
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped), (0, 3));
    assert_eq!(w.len(), 2);
    w.assert_invariants();
}

fn deferred_spawns_beyond_capacity_are_refused_in_handle_order(backend: Backend) {
    let mut w = World::with_capacity(6);
    w.set_backend(backend);
    let parents: Vec<Entity> = (0..4).map(|i| w.spawn((Pos(i as f32, 0.0),)).unwrap()).collect();
    // Every parent asks for a child: room for two; the two lowest handles get them.
    w.query::<(&Pos,)>().for_each_with_commands(|_, (p,), c| {
        let child = c.spawn((Vel(p.0, 0.0),)).unwrap();
        c.insert(child, Red); // skipped where the spawn is refused
    });
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped, stats.refused), (4, 2, 2));
    assert_eq!(w.len(), 6);
    let mut children = Vec::new();
    w.query::<(&Vel,)>().with::<Red>().for_each(|_, (v,)| children.push(v.0 as i32));
    children.sort();
    let mut lowest: Vec<Entity> = parents.clone();
    lowest.sort();
    let lowest: Vec<i32> = lowest[..2].iter().map(|&e| w.get::<Pos>(e).unwrap().0 as i32).collect();
    assert_eq!(children, lowest);
    assert_eq!(w.command_totals().refused, 2);
    w.assert_invariants();
}

fn a_stretch_of_spawns_and_despawns_despawns_first(backend: Backend) {
    // A full world: the row visited first asks for a child, the second row despawns itself. Despawns
    // apply first within the stretch, so the child fits.
    let mut w = World::with_capacity(2);
    w.set_backend(backend);
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let b = w.spawn((Pos(1.0, 0.0), Red)).unwrap();
    assert!(a < b);
    w.query::<(&Pos,)>().for_each_with_commands(|e, _, c| {
        if e == a {
            c.spawn((Vel(1.0, 0.0),)).unwrap();
        } else {
            c.despawn(e);
        }
    });
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped, stats.refused), (2, 0, 0));
    assert_eq!(w.query::<(&Vel,)>().count(), 1);
    assert!(!w.is_alive(b) && w.is_alive(a));
    w.assert_invariants();
    // A spawn and a despawn of the same new entity: it is never despawned before it exists.
    let mut w = world(backend);
    w.spawn((Pos(0.0, 0.0),)).unwrap();
    w.query::<(&Pos,)>().for_each_with_commands(|_, _, c| {
        let d = c.spawn((Name("brief".into()),)).unwrap();
        c.despawn(d);
    });
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped, stats.refused), (2, 0, 0));
    assert_eq!(w.query::<(&Name,)>().count(), 0);
    assert_eq!(w.len(), 1);
    w.assert_invariants();
}

fn values_of_commands_that_never_land_are_dropped_at_once(backend: Backend) {
    use std::sync::Arc;
    let token = Arc::new(());
    let mut w = World::with_capacity(2);
    w.set_backend(backend);
    let x = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let dead = w.spawn((Pos(1.0, 0.0),)).unwrap();
    w.despawn(dead).unwrap();
    // Discarded: a spawn's bundle and an insert's value.
    let mut c = w.commands();
    assert!(c.is_empty());
    c.spawn((Arc::clone(&token),)).unwrap();
    c.insert(x, Arc::clone(&token));
    assert_eq!((c.len(), c.is_empty()), (2, false));
    w.discard_commands();
    assert_eq!(Arc::strong_count(&token), 1, "discarded values were dropped");
    // Skipped (a dead target) and refused (a full world): dropped by the apply.
    w.commands().insert(dead, Arc::clone(&token));
    w.spawn((Red,)).unwrap(); // the world is full now
    w.query::<(&Pos,)>().for_each_with_commands(|_, _, c| {
        c.spawn((Arc::clone(&token),)).unwrap();
    });
    let stats = w.apply_commands();
    assert_eq!((stats.skipped, stats.refused), (1, 1));
    assert_eq!(Arc::strong_count(&token), 1, "skipped and refused values were dropped");
    // A loop's commands count with the others.
    let mut c = w.commands();
    c.insert(x, Vel(0.0, 0.0));
    let mut counted = Vec::new();
    w.query::<(&Pos,)>().for_each_with_commands(|e, _, c| {
        c.insert(e, Blue);
        c.remove::<Red>(e);
        counted.push((c.len(), c.is_empty()));
    });
    assert_eq!(counted, [(3, false)]);
    assert_eq!(w.commands().len(), 3);
    w.apply_commands();
    assert!(w.commands().is_empty());
}

fn each_loop_is_sorted_on_its_own_and_loops_apply_in_turn(backend: Backend) {
    let mut w = world(backend);
    let low = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let high = w.spawn((Vel(0.0, 0.0),)).unwrap();
    let target = w.spawn((Red,)).unwrap();
    assert!(low < high);
    // The first loop visits the higher handle, the second the lower: the second loop's insert lands last.
    w.query::<(&Vel,)>().for_each_with_commands(|_, _, c| c.insert(target, Name("first".into())));
    w.query::<(&Pos,)>().for_each_with_commands(|_, _, c| c.insert(target, Name("second".into())));
    w.apply_commands();
    assert_eq!(w.get::<Name>(target), Some(&Name("second".into())));
    // Deferred handles are numbered per buffer.
    w.query::<(&Pos,)>().for_each_with_commands(|_, _, c| {
        assert_eq!(format!("{:?}", c.spawn((Blue,)).unwrap()), "deferred#1");
    });
    w.apply_commands();
    assert_eq!(w.query::<(&Blue,)>().count(), 1);
}

fn command_buffer_edge_cases(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let stale = w.spawn((Pos(0.0, 0.0),)).unwrap();
    w.despawn(stale).unwrap();
    let mut c = w.commands();
    let s = c.spawn((Pos(1.0, 1.0), Red)).unwrap();
    c.insert(s, Vel(3.0, 3.0)); // targets the reserved entity
    c.despawn(a);
    c.despawn(a); // double despawn: once
    c.insert(a, Vel(0.0, 0.0)); // dead by then: skipped
    c.insert(stale, Vel(0.0, 0.0)); // stale: skipped
    c.remove::<Pos>(stale);
    c.despawn(stale);
    c.remove::<Red>(s);
    assert_eq!(c.len(), 9);
    assert!(!w.is_alive(s), "reserved, not alive before apply");
    assert_eq!(w.get::<Pos>(s), None);
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped), (4, 5));
    assert_eq!(w.get::<Vel>(s), Some(&Vel(3.0, 3.0)));
    assert!(!w.has::<Red>(s) && w.has::<Pos>(s));
    assert!(!w.is_alive(a));
    assert_eq!(w.len(), 1);
    assert_eq!(w.command_totals().skipped, 5);
    // A run of despawns (live, stale, repeated) broken by an insert: the insert sees the run applied.
    let (x, y) = (w.spawn((Pos(0.0, 0.0),)).unwrap(), w.spawn((Pos(0.0, 0.0),)).unwrap());
    let mut c = w.commands();
    c.despawn(x);
    c.despawn(stale);
    c.despawn(x);
    c.insert(x, Vel(0.0, 0.0)); // x is dead by now: skipped
    c.despawn(y);
    c.insert(s, Vel(4.0, 4.0));
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped), (3, 3));
    assert!(!w.is_alive(x) && !w.is_alive(y));
    assert_eq!(w.get::<Vel>(s), Some(&Vel(4.0, 4.0)));
    // Applying in order: a spawn despawned later in the same buffer ends dead.
    let mut c = w.commands();
    let t = c.spawn((Pos(2.0, 2.0),)).unwrap();
    c.despawn(t);
    w.apply_commands();
    assert!(!w.is_alive(t));
    // Runs of spawns, broken by a change of bundle type, an insert and a despawn: each bundle lands
    // on its own handle, in order.
    let mut c = w.commands();
    let mut made = Vec::new();
    for i in 0..20 {
        let x = i as f32;
        let spawned = if i % 7 < 4 { c.spawn((Pos(x, 0.0),)) } else { c.spawn((Pos(x, 1.0), Vel(x, 0.0))) };
        made.push(spawned.unwrap());
        if i == 10 {
            c.insert(made[3], Red);
            c.despawn(made[5]);
        }
    }
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped), (22, 0));
    for (i, &h) in made.iter().enumerate() {
        let (x, two) = (i as f32, i % 7 >= 4);
        if i == 5 {
            assert!(!w.is_alive(h));
            continue;
        }
        assert_eq!(w.get::<Pos>(h), Some(&Pos(x, if two { 1.0 } else { 0.0 })), "spawn {i}");
        assert_eq!(w.get::<Vel>(h), two.then_some(&Vel(x, 0.0)), "spawn {i}");
    }
    assert!(w.has::<Red>(made[3]));
    w.assert_invariants();
    // Discarding releases reservations.
    let before = w.entities().reserved();
    let u = w.commands().spawn((Pos(0.0, 0.0),)).unwrap();
    w.discard_commands();
    assert_eq!(w.entities().reserved(), before);
    assert!(!w.is_alive(u));
    assert_eq!(w.apply_commands(), Default::default());
    w.assert_invariants();
}

fn duplicate_types_in_a_recorded_spawn_panic_at_once(backend: Backend) {
    let mut w = world(backend);
    w.commands().spawn((Pos(0.0, 0.0), Pos(1.0, 1.0))).ok();
}

/// A value that holds no entity, and whose type no buffer below ever puts: its pool's removals are held back
/// while a buffer applies.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Mark(u32);
/// A type never spawned: removing it from a dead entity (a command that is skipped) keeps a buffer from holding
/// removals back, as a remove of an unknown type does.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Unused;

/// Every live entity's components (`Red`, `Blue`, `Mark`, `Pos`, `Name`, the tree's), each pool in its iteration
/// order.
fn pools_in_order(w: &mut World) -> Vec<String> {
    let mut out = Vec::new();
    w.query::<&Red>().for_each(|e, _| out.push(format!("red {e:?}")));
    w.query::<&Blue>().for_each(|e, _| out.push(format!("blue {e:?}")));
    w.query::<&Mark>().for_each(|e, m| out.push(format!("mark {e:?} {m:?}")));
    w.query::<&Pos>().for_each(|e, p| out.push(format!("pos {e:?} {p:?}")));
    w.query::<&Name>().for_each(|e, n| out.push(format!("name {e:?} {n:?}")));
    w.query::<&swarm::ecs::Parent>().for_each(|e, p| out.push(format!("parent {e:?} {p:?}")));
    w.query::<&swarm::ecs::Children>().for_each(|e, c| out.push(format!("children {e:?} {c:?}")));
    out
}

/// Buffers that despawn between spawns (deferred, taking the indices freed before them), inserts and links (to
/// those spawns too), on one thread and on two: a world whose despawns hold their removals back from the pools no
/// command puts (here `Red`, `Blue`, `Mark`: no handler, no drop glue) until the buffer ends, and a world where a
/// skipped remove keeps them in their turn, end every round with the same entities, the same values and every pool
/// in the same order. The tree's pool is made by a query before the first link.
fn held_removals_leave_every_pool_as_in_their_turn(backend: Backend) {
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x401d ^ backend as u64 ^ threads as u64);
        let [mut held, mut turn] = [(); 2].map(|()| {
            let mut w = World::with_capacity(4_000);
            w.set_backend(backend);
            w.set_threads(threads);
            for k in 0..60 {
                match k % 3 {
                    0 => w.spawn((Pos(k as f32, 0.0), Red, Mark(k))),
                    1 => w.spawn((Blue, Name(format!("b{k}")))),
                    _ => w.spawn((Pos(0.0, k as f32), Red, Blue)),
                }
                .unwrap();
            }
            assert_eq!(w.query::<&Pos>().without::<swarm::ecs::Parent>().count(), 40);
            w
        });
        let mut live: Vec<Entity> = held.query::<()>().iter().map(|(e, ())| e).collect();
        for round in 0..40 {
            let mut plan: HashMap<Entity, Vec<(u32, usize, usize)>> = HashMap::new();
            for &e in &live {
                let ops = (0..rng.gen_range(0..3)).map(|_| (rng.gen_range(0..10), rng.gen(), rng.gen())).collect();
                plan.insert(e, ops);
            }
            for (k, w) in [&mut held, &mut turn].into_iter().enumerate() {
                if k == 1 {
                    w.commands().remove::<Unused>(Entity::from_parts(0, std::num::NonZeroU32::MAX));
                }
                w.query::<()>().for_each_with_commands(|e, (), c| {
                    for &(op, a, b) in &plan[&e] {
                        let other = live[b % live.len()];
                        match op {
                            // Every fourth round spawns the held types (so no removal of theirs is held back then).
                            0..=3 => {
                                let s = match (round % 4, a % 3) {
                                    (0, 0) => c.spawn((Pos(a as f32, 0.0), Red, Mark(a as u32))),
                                    (0, 1) => c.spawn((Pos(b as f32, 1.0), Blue)),
                                    (0, _) => c.spawn((Pos(0.0, 0.0), Name(format!("n{a}")), Red)),
                                    (_, 0) => c.spawn((Pos(a as f32, 3.0),)),
                                    _ => c.spawn((Name(format!("m{a}")), Pos(0.0, 4.0))),
                                }
                                .unwrap();
                                if op == 0 {
                                    c.add_child(e, s);
                                }
                            }
                            4 | 5 => c.despawn(e),
                            6 => c.insert(e, Pos(b as f32, 2.0)),
                            7 => c.insert(e, Name(format!("i{b}"))),
                            8 if other != e => c.add_child(e, other),
                            9 => c.remove_child(e, other),
                            _ => {}
                        }
                    }
                });
            }
            let stats = [&mut held, &mut turn].map(|w| pool.install(|| w.apply_commands()));
            assert_eq!((stats[0].applied, stats[0].refused), (stats[1].applied, stats[1].refused), "round {round}");
            assert_eq!(stats[0].skipped + 1, stats[1].skipped, "round {round}: the remove is skipped");
            assert_eq!(pools_in_order(&mut held), pools_in_order(&mut turn), "round {round}, {threads} threads");
            for w in [&held, &turn] {
                w.assert_invariants();
            }
            live = held.query::<()>().iter().map(|(e, ())| e).collect();
            assert!(live.len() > 20, "round {round} kept {} entities: too few to test anything", live.len());
        }
        let reused = live.iter().filter(|e| e.generation().get() > 1).count();
        assert!(reused > 20, "{reused} live entities took a freed index: too few to test anything");
    }
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        held_removals_leave_every_pool_as_in_their_turn,
        commands_recorded_in_a_loop_apply_in_handle_order,
        deferred_spawns_name_their_entity_only_in_their_buffer,
        deferred_spawns_beyond_capacity_are_refused_in_handle_order,
        a_stretch_of_spawns_and_despawns_despawns_first,
        values_of_commands_that_never_land_are_dropped_at_once,
        each_loop_is_sorted_on_its_own_and_loops_apply_in_turn,
        command_buffer_edge_cases,
    }

    panics_on_every_backend! {
        duplicate_types_in_a_recorded_spawn_panic_at_once => "names `",
    }
}
