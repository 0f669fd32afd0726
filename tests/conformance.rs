//! One conformance suite, run on every storage backend (EnTT style: every test over every policy).

mod backends;

use swarm::ecs::Entities;
use swarm::ecs::{
    Backend, ComponentError, Entity, NoSuchEntity, Or, QueryError, QueryOneError, With, Without, World, WorldFull,
};

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct Pos(f32, f32);
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct Vel(f32, f32);
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Name(String);
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct Red;
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct Blue;
/// A component a snapshot schema leaves out.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Follows2(Entity);
/// A component holding a handle, for snapshots.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct Follows(Entity);

impl swarm::ecs::HoldsEntities for Follows {
    fn visit_entities(&self, visit: &mut dyn FnMut(Entity)) {
        visit(self.0)
    }
}

/// A component whose `drop` panics when armed.
#[derive(Debug)]
struct Bomb(bool);

impl Drop for Bomb {
    fn drop(&mut self) {
        if self.0 && !std::thread::panicking() {
            panic!("a component's drop panicked");
        }
    }
}

fn sorted(mut v: Vec<Entity>) -> Vec<Entity> {
    v.sort();
    v
}

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

fn world(backend: Backend) -> World {
    let mut world = World::with_capacity(10_000);
    world.set_backend(backend);
    world
}

fn spawn_get_insert_remove_despawn(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 2.0), Vel(0.5, 0.0))).unwrap();
    let b = w.spawn((Pos(3.0, 4.0), Name("b".into()))).unwrap();
    assert_eq!(w.len(), 2);
    assert_eq!(w.get::<Pos>(a), Some(&Pos(1.0, 2.0)));
    assert_eq!(w.get::<Vel>(b), None);
    w.get_mut::<Pos>(a).unwrap().0 = 9.0;
    assert_eq!(w.get::<Pos>(a), Some(&Pos(9.0, 2.0)));
    assert_eq!(w.insert(b, Vel(1.0, 1.0)), Ok(None));
    assert_eq!(w.insert(b, Vel(2.0, 2.0)), Ok(Some(Vel(1.0, 1.0))));
    assert_eq!(w.remove::<Name>(b), Ok(Name("b".into())));
    assert!(matches!(w.remove::<Name>(b), Err(ComponentError::MissingComponent { .. })));
    assert_eq!(w.get::<Pos>(b), Some(&Pos(3.0, 4.0)), "other components survive a remove");
    assert_eq!(w.despawn(a), Ok(()));
    assert_eq!(w.len(), 1);
    assert_eq!(w.get::<Vel>(b), Some(&Vel(2.0, 2.0)));
    w.assert_invariants();
}

fn a_query_shape_run_again_sees_what_changed_since(backend: Backend) {
    // The world caches each query shape (ids, access check, matching tables): later runs of the same
    // shape must still see new component sets, emptied and refilled tables, and backend switches.
    let mut w = world(backend);
    let sum = |w: &mut World| {
        let mut total = 0.0;
        w.query::<(&Pos, Option<&Vel>)>().without::<Red>().for_each(|_, (p, v)| {
            total += p.0 + v.map_or(0.0, |v| v.0);
        });
        total
    };
    assert_eq!(sum(&mut w), 0.0);
    let a = w.spawn((Pos(1.0, 0.0),)).unwrap();
    assert_eq!(sum(&mut w), 1.0);
    let b = w.spawn((Pos(2.0, 0.0), Vel(10.0, 0.0))).unwrap();
    w.spawn((Pos(100.0, 0.0), Red)).unwrap();
    assert_eq!(sum(&mut w), 13.0, "a new set of components is matched");
    w.despawn(a).unwrap();
    assert_eq!(sum(&mut w), 12.0);
    w.spawn((Pos(4.0, 0.0),)).unwrap();
    assert_eq!(sum(&mut w), 16.0, "an emptied and refilled set is walked again");
    w.insert(b, Red).unwrap();
    assert_eq!(sum(&mut w), 4.0, "a filter keeps applying");
    for backend in Backend::ALL {
        w.set_backend(backend);
        assert_eq!(sum(&mut w), 4.0, "after switching to {backend}");
    }
    w.set_backend(backend);
    w.clear();
    assert_eq!(sum(&mut w), 0.0);
    w.spawn((Pos(8.0, 0.0), Vel(1.0, 0.0))).unwrap();
    assert_eq!(sum(&mut w), 9.0, "after a clear");
    for _ in 0..2 {
        let refused = w.query::<(&Pos, &mut Pos)>().try_for_each(|_, _| {});
        assert!(matches!(refused, Err(QueryError::Conflict { mutable: true, .. })), "{refused:?}");
    }
    w.assert_invariants();
}

fn queries_pair_values_right_while_pools_change_between_them(backend: Backend) {
    // Pools packed alike are walked in lock-step, and a sparse set remembers that across changes
    // it can check cheaply. Every round changes the pools (alike, or apart at equal length), then a
    // query must hand each entity its own values, and exactly the entities with both.
    let mut w = world(backend);
    let mut live: Vec<Entity> = (0..300).map(|i| w.spawn((Pos(i as f32, 0.0), Vel(i as f32, 1.0))).unwrap()).collect();
    let check = |w: &mut World, live: &[Entity], round: usize| {
        let mut seen = Vec::new();
        w.query::<(&Pos, &Vel)>().for_each(|e, (p, v)| {
            assert_eq!(p.0, v.0, "round {round}: {e:?} got another entity's value");
            seen.push(e);
        });
        let both = live.iter().copied().filter(|&e| w.has::<Pos>(e) && w.has::<Vel>(e)).collect();
        assert_eq!(sorted(seen), sorted(both), "round {round}");
    };
    check(&mut w, &live, 0);
    let mut apart = None;
    for round in 1..40 {
        // Ten rounds of the same changes on both pools first (they stay alike), then also apart.
        let step = if round <= 10 { 0 } else { round % 3 };
        match (step, apart.take()) {
            // Apart at equal length: one entity loses `Pos`, another loses `Vel`.
            (1, _) => {
                let (a, b) = (live[round % live.len()], live[(round * 3 + 1) % live.len()]);
                if a != b {
                    let x = w.remove::<Pos>(a).unwrap().0;
                    let y = w.remove::<Vel>(b).unwrap().0;
                    apart = Some((a, x, b, y));
                }
            }
            // Back together (each appended at its pool's end).
            (2, Some((a, x, b, y))) => {
                w.insert(b, Vel(y, 1.0)).unwrap();
                w.insert(a, Pos(x, 0.0)).unwrap();
            }
            // The same despawns and spawns on both pools.
            (_, _) => {
                for k in 0..5 {
                    let e = live.swap_remove((round * 7 + k) % live.len());
                    w.despawn(e).unwrap();
                }
                let x = 1000.0 + round as f32;
                live.push(w.spawn((Pos(x, 0.0), Vel(x, 1.0))).unwrap());
            }
        }
        check(&mut w, &live, round);
    }
    w.assert_invariants();
}

fn stale_handles_touch_nothing(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 1.0),)).unwrap();
    w.despawn(a).unwrap();
    let b = w.spawn((Pos(2.0, 2.0),)).unwrap();
    assert_eq!(a.index(), b.index(), "the index is recycled");
    assert!(!w.is_alive(a));
    assert_eq!(w.get::<Pos>(a), None);
    assert_eq!(w.get_mut::<Pos>(a), None);
    assert_eq!(w.despawn(a), Err(NoSuchEntity(a)));
    assert_eq!(w.insert(a, Vel(0.0, 0.0)), Err(NoSuchEntity(a)));
    assert_eq!(w.remove::<Pos>(a), Err(ComponentError::NoSuchEntity(a)));
    assert_eq!(w.get::<Pos>(b), Some(&Pos(2.0, 2.0)), "the new occupant is untouched");
    assert_eq!(w.get::<Vel>(b), None);
    w.assert_invariants();
}

fn despawn_batch_matches_despawning_one_by_one(backend: Backend) {
    // Two worlds built alike; one despawns the batch, the other the same targets one by one.
    let build = || {
        let mut w = world(backend);
        let mut spawned = Vec::new();
        w.spawn_batch_into((0..20).map(|i| (Pos(i as f32, 0.0), Vel(1.0, i as f32))), &mut spawned).unwrap();
        let tagged = w.spawn((Pos(-1.0, 0.0), Red)).unwrap();
        // A stale handle whose index is live again, and a reserved (not yet alive) handle.
        let stale = spawned[19];
        w.despawn(stale).unwrap();
        let occupant = w.spawn((Pos(19.0, 0.0), Vel(1.0, 19.0))).unwrap();
        assert_eq!(occupant.index(), stale.index());
        let reserved = w.commands().spawn((Pos(0.0, 0.0),)).unwrap();
        let targets = vec![spawned[3], tagged, spawned[0], spawned[3], stale, reserved, spawned[7]];
        (w, targets, occupant, reserved)
    };
    let (mut batch, targets, occupant, reserved) = build();
    let (mut single, _, _, _) = build();
    // The reserved handle is settled first (the buffer applied), as `despawn` does: five.
    assert_eq!(batch.despawn_batch(&targets), 5, "live targets only, each once");
    let despawned = targets.iter().filter(|&&e| single.despawn(e).is_ok()).count();
    assert_eq!(despawned, 5);
    for w in [&mut batch, &mut single] {
        assert_eq!(w.len(), 17);
        assert!(targets.iter().all(|&e| !w.is_alive(e)));
        assert_eq!(w.get::<Pos>(occupant), Some(&Pos(19.0, 0.0)), "the index's new owner is untouched");
        assert_eq!(w.query::<(&Pos,)>().with::<Red>().count(), 0, "the tag went with its entity");
        w.assert_invariants();
    }
    // Same survivors, same values, same iteration order, same free list.
    let rows = |w: &mut World| {
        let mut rows = Vec::new();
        w.query::<(&Pos, &Vel)>().for_each(|e, (p, v)| rows.push((e, p.0, v.1)));
        rows
    };
    assert_eq!(rows(&mut batch), rows(&mut single));
    assert_eq!(rows(&mut batch).len(), 17);
    let next = |w: &mut World| (0..5).map(|_| w.spawn((Pos(5.0, 5.0),)).unwrap()).collect::<Vec<_>>();
    assert_eq!(next(&mut batch), next(&mut single), "indices are freed in the same order");
    // The despawned reservation stays dead.
    batch.apply_commands();
    assert!(!batch.is_alive(reserved));
    assert_eq!(batch.despawn_batch(&targets[..5]), 0, "all of them are gone already");
    batch.assert_invariants();
}

fn a_panicking_component_drop_leaves_the_world_consistent(backend: Backend) {
    struct Bomb(bool);
    impl Drop for Bomb {
        fn drop(&mut self) {
            if self.0 {
                panic!("a component's drop panicked");
            }
        }
    }
    let mut w = world(backend);
    let a = w.spawn((Pos(0.0, 0.0), Bomb(false))).unwrap();
    let b = w.spawn((Pos(1.0, 0.0), Bomb(true))).unwrap();
    let c = w.spawn((Pos(2.0, 0.0),)).unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.despawn_batch(&[a, b, c])));
    assert!(outcome.is_err(), "the panic reaches the caller");
    // Whoever was freed has no values left; whoever still has values is alive.
    w.assert_invariants();
    let again = w.spawn((Pos(9.0, 9.0),)).unwrap();
    assert_eq!(w.get::<Pos>(again), Some(&Pos(9.0, 9.0)));
    assert!(!w.has::<Bomb>(again), "a reused index inherits nothing");
    w.assert_invariants();
    // Removing the component alone: the entity keeps the rest, whole.
    let d = w.spawn((Pos(3.0, 0.0), Bomb(true), Vel(1.0, 1.0))).unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.remove_many::<Bomb>(&[d])));
    assert!(outcome.is_err());
    w.assert_invariants();
    assert!(w.is_alive(d) && !w.has::<Bomb>(d));
    assert_eq!((w.get::<Pos>(d), w.get::<Vel>(d)), (Some(&Pos(3.0, 0.0)), Some(&Vel(1.0, 1.0))));
}

fn lookups_reach_the_right_column_across_tables(backend: Backend) {
    let mut w = world(backend);
    // Tables made in this order: {Pos}, {Pos, Vel}, {Pos, Red}, {Pos, Vel, Red}.
    let a = w.spawn((Pos(1.0, 0.0),)).unwrap();
    let b = w.spawn((Pos(2.0, 0.0), Vel(20.0, 0.0))).unwrap();
    let c = w.spawn((Pos(3.0, 0.0), Red)).unwrap();
    let d = w.spawn((Pos(4.0, 0.0), Vel(40.0, 0.0), Red)).unwrap();
    let e = w.spawn((Pos(5.0, 0.0), Vel(50.0, 0.0))).unwrap();
    // Every table at once, out of order, two in one table, an optional term missing in some.
    {
        let items = w.query::<(&mut Pos, Option<&mut Vel>)>().get_many([d, a, e, b, c]).unwrap();
        for (p, v) in items {
            p.1 = v.map_or(-1.0, |v| {
                v.1 = p.0;
                v.0
            });
        }
    }
    let pos = |w: &World, x| w.get::<Pos>(x).map(|p| (p.0, p.1));
    assert_eq!(pos(&w, a), Some((1.0, -1.0)));
    assert_eq!(pos(&w, b), Some((2.0, 20.0)));
    assert_eq!(pos(&w, c), Some((3.0, -1.0)));
    assert_eq!(pos(&w, d), Some((4.0, 40.0)));
    assert_eq!(pos(&w, e), Some((5.0, 50.0)));
    assert_eq!(w.get::<Vel>(d), Some(&Vel(40.0, 4.0)));
    assert_eq!(w.get::<Vel>(e), Some(&Vel(50.0, 5.0)));
    // A filter that skips the tables between the ones that match.
    let red = w.query::<(Option<&Vel>, &mut Pos)>().with::<Red>().get_many([d, c]);
    assert_eq!(
        red.map(|[(v1, p1), (v2, p2)]| (v1.map(|v| v.0), p1.0, v2.is_none(), p2.0)),
        Ok((Some(40.0), 4.0, true, 3.0))
    );
    let red = w.query::<(&Pos, &mut Vel)>().with::<Red>().get_many([d, e]);
    assert_eq!(red.err(), Some(QueryOneError::Unsatisfied(e)));
    // One entity, through a mutable and a shared world.
    assert_eq!(w.query_one_mut::<(&Pos, Option<&Vel>)>(e).map(|(p, v)| (p.0, v.map(|v| v.0))), Ok((5.0, Some(50.0))));
    assert_eq!(w.query_one::<(Option<&Vel>, &Pos)>(c).map(|(v, p)| (v.is_none(), p.0)), Ok((true, 3.0)));
    assert_eq!(w.query_ref::<(&Vel,)>().without::<Red>().get(b).map(|(v,)| v.0), Ok(20.0));
    assert_eq!(w.query_ref::<&Pos>().get(d).map(|p| p.0), Ok(4.0));
    w.assert_invariants();
}

fn every_value_is_dropped_exactly_once(backend: Backend) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    /// Counts its drops in a counter of its own test (tests run in parallel).
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let dropped = || drops.load(Ordering::Relaxed);
    let counted = || Counted(drops.clone());
    let mut w = world(backend);
    let mut all = Vec::new();
    w.spawn_batch_into((0..12).map(|i| (Pos(i as f32, 0.0), counted())), &mut all).unwrap();
    for i in 0..6 {
        all.push(w.spawn((counted(), Vel(i as f32, 0.0))).unwrap());
    }
    let made = 18;
    // Rows move between tables (a tag added, another component added and removed): nothing drops.
    for &e in &all[..9] {
        w.insert(e, Red).unwrap();
    }
    for &e in &all[3..15] {
        w.insert(e, Name(format!("{e:?}"))).unwrap();
    }
    assert_eq!(w.remove_many::<Name>(&all[6..12]), 6);
    w.query::<(&mut Counted,)>().for_each(|_, _| {});
    assert_eq!(w.query::<(&Counted,)>().count(), 18);
    if backend == Backend::Archetype {
        let mut bytes = Vec::new();
        w.component_bytes(&mut bytes);
        let red = bytes.iter().find(|b| b.name.ends_with("Red")).expect("Red is registered");
        assert_eq!(red.bytes, 0, "a tag's columns hold no bytes");
    }
    assert_eq!(dropped(), 0, "moving rows drops nothing");
    // Replacing drops the old value once (the caller holds it).
    let old = w.insert(all[0], counted()).unwrap();
    assert_eq!(dropped(), 0);
    drop(old);
    assert_eq!(dropped(), 1);
    // Removing hands the value over; removing erased drops it in place.
    let taken = w.remove::<Counted>(all[1]).unwrap();
    assert_eq!(dropped(), 1);
    drop(taken);
    assert_eq!(dropped(), 2);
    assert_eq!(w.remove_many::<Counted>(&[all[2], all[3], all[1]]), 2);
    assert_eq!(dropped(), 4);
    // Despawning drops what the entity holds, once.
    w.despawn(all[4]).unwrap();
    assert_eq!(dropped(), 5);
    assert_eq!(w.despawn_batch(&[all[5], all[13], all[4], all[2]]), 3);
    assert_eq!(dropped(), 7, "the entity without `Counted` drops none");
    // Migrating moves values, never drops them.
    for backend in Backend::ALL {
        w.set_backend(backend);
    }
    w.set_backend(backend);
    assert_eq!(dropped(), 7);
    assert_eq!(w.query::<(&Counted,)>().count(), made + 1 - 7);
    w.assert_invariants();
    w.clear();
    assert_eq!(dropped(), made + 1, "every value made is dropped once");
    w.assert_invariants();
}

fn clear_with_a_panicking_drop_leaves_no_value_behind(backend: Backend) {
    let mut w = world(backend);
    let mut all = Vec::new();
    for i in 0..10 {
        // `Bomb` is registered first, so its pool is emptied before the others.
        all.push(w.spawn((Bomb(i == 3), Pos(i as f32, 0.0), Vel(0.0, i as f32))).unwrap());
    }
    w.commands().spawn((Pos(-1.0, 0.0),)).unwrap(); // a reservation, released too
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.clear()));
    assert!(outcome.is_err(), "the panic reaches the caller");
    w.assert_invariants();
    assert_eq!((w.len(), w.entities().reserved()), (0, 0));
    assert_eq!(w.query::<(&Pos,)>().count() + w.query::<(&Vel,)>().count(), 0);
    for _ in 0..11 {
        let e = w.spawn((Name("new".into()),)).unwrap();
        assert!(w.get::<Pos>(e).is_none() && w.get::<Vel>(e).is_none() && !w.has::<Bomb>(e));
    }
    assert!(all.iter().all(|&e| !w.is_alive(e)));
    w.assert_invariants();
}

fn a_panic_while_applying_releases_every_reservation(backend: Backend) {
    let mut w = World::with_capacity(3);
    w.set_backend(backend);
    let x = w.spawn((Bomb(true), Pos(0.0, 0.0))).unwrap();
    let mut c = w.commands();
    c.insert(x, Bomb(false)); // the old value's drop panics
    let r1 = c.spawn((Pos(1.0, 0.0),)).unwrap();
    let r2 = c.spawn((Pos(2.0, 0.0),)).unwrap();
    c.insert(x, Vel(9.0, 9.0));
    assert_eq!(w.entities().reserved(), 2);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.apply_commands()));
    assert!(outcome.is_err());
    w.assert_invariants();
    assert_eq!(w.entities().reserved(), 0, "no handle stays reserved for nothing");
    assert!(!w.is_alive(r1) && !w.is_alive(r2) && w.is_alive(x));
    assert!(!w.has::<Vel>(x), "the commands after the panic were dropped");
    // The world has room again, and the next buffer applies only its own commands.
    let mut c = w.commands();
    let a = c.spawn((Red,)).unwrap();
    let b = c.spawn((Red,)).unwrap();
    c.insert(x, Name("next".into()));
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped, stats.refused), (3, 0, 0));
    assert!(w.is_alive(a) && w.is_alive(b) && w.get::<Pos>(a).is_none());
    assert_eq!(w.get::<Name>(x), Some(&Name("next".into())));
    assert_ne!(a, r1, "a released handle's generation moved on");
    w.assert_invariants();
    // The same with deferred spawns from a loop: reserved while applying, released by the panic.
    w.despawn(a).unwrap();
    w.despawn(b).unwrap();
    w.insert(x, Bomb(true)).unwrap();
    w.query::<(&Pos,)>().for_each_with_commands(|e, _, c| {
        c.spawn((Blue,)).unwrap();
        c.insert(e, Bomb(false)); // panics: x's Bomb(true) is replaced
        c.spawn((Blue,)).unwrap();
    });
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.apply_commands()));
    assert!(outcome.is_err());
    w.assert_invariants();
    assert_eq!(w.entities().reserved(), 0);
    assert_eq!(w.query::<(&Blue,)>().count(), 1, "the spawn before the panic stays, the one after is gone");
    assert_eq!(w.len(), 2);
}

fn a_panic_while_discarding_keeps_the_next_buffer_clean(backend: Backend) {
    let mut w = world(backend);
    let x = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let mut c = w.commands();
    c.insert(x, Bomb(true)); // dropped, panicking, when the buffer is discarded
    c.insert(x, Vel(1.0, 1.0));
    let r = c.spawn((Red,)).unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.discard_commands()));
    assert!(outcome.is_err());
    assert_eq!(w.entities().reserved(), 0);
    assert!(!w.is_alive(r));
    let mut c = w.commands();
    c.insert(x, Vel(2.0, 2.0));
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped), (1, 0), "only the new buffer's command");
    assert_eq!(w.get::<Vel>(x), Some(&Vel(2.0, 2.0)));
    assert!(!w.has::<Bomb>(x) && !w.has::<Red>(x));
    w.assert_invariants();
}

fn a_panicking_resource_scope_keeps_the_resource(backend: Backend) {
    let mut w = world(backend);
    w.insert_resource(Name("kept".into()));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        w.resource_scope::<Name, _>(|_, name| {
            name.0.push_str(" and changed");
            panic!("a system bug");
        })
    }));
    assert!(outcome.is_err());
    assert_eq!(w.get_resource::<Name>(), Some(&Name("kept and changed".into())));
}

fn a_released_reservation_never_comes_to_life(backend: Backend) {
    let mut w = world(backend);
    let r = w.commands().spawn((Pos(1.0, 1.0),)).unwrap();
    assert!(w.entities().is_reserved(r));
    w.discard_commands();
    assert!(!w.entities().is_reserved(r) && !w.is_alive(r));
    let n = w.spawn((Vel(0.0, 0.0),)).unwrap();
    assert_eq!(n.index(), r.index(), "the index is reused");
    assert_ne!(n.generation(), r.generation(), "under a new generation");
    assert!(w.get::<Pos>(r).is_none() && w.get::<Vel>(r).is_none());
    assert_eq!(w.despawn(r), Err(NoSuchEntity(r)));
    // A buffer naming the released handle skips it.
    let mut c = w.commands();
    c.insert(r, Red);
    c.despawn(r);
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped), (0, 2));
    assert!(w.is_alive(n) && !w.has::<Red>(n));
    w.assert_invariants();
}

fn entities_with_no_components(backend: Backend) {
    let mut w = world(backend);
    let empty = w.spawn(()).unwrap();
    let full = w.spawn((Pos(1.0, 1.0), Red)).unwrap();
    assert!(w.is_alive(empty) && w.len() == 2);
    assert_eq!(w.get::<Pos>(empty), None);
    assert_eq!(w.query::<()>().count(), 2, "a query of nothing visits every live entity");
    assert_eq!(w.query_ref::<()>().count(), 2);
    assert_eq!(w.query::<(Option<&Pos>,)>().count(), 2);
    assert_eq!(w.spawn_batch((0..3).map(|_| ())), Ok(3));
    let mut more = Vec::new();
    w.spawn_batch_into((0..2).map(|_| ()), &mut more).unwrap();
    assert_eq!(more.len(), 2);
    assert!(more.iter().all(|&e| w.is_alive(e)));
    let later = w.commands().spawn(()).unwrap();
    w.apply_commands();
    assert_eq!(w.len(), 8);
    assert_eq!(w.query::<()>().count(), 8);
    // Filled in later, and emptied again.
    w.insert(empty, Vel(2.0, 0.0)).unwrap();
    w.insert(later, Red).unwrap();
    let mut reds = Vec::new();
    w.query::<()>().with::<Red>().for_each(|e, ()| reds.push(e));
    assert_eq!(sorted(reds), sorted(vec![full, later]));
    assert_eq!(w.remove::<Vel>(empty), Ok(Vel(2.0, 0.0)));
    assert!(w.is_alive(empty));
    for backend in Backend::ALL {
        w.set_backend(backend);
        assert_eq!(w.query::<()>().count(), 8, "{backend:?} keeps entities with no components");
        assert!(w.is_alive(empty) && w.has::<Red>(later));
    }
    w.set_backend(backend);
    assert_eq!(w.despawn(empty), Ok(()));
    assert_eq!(w.query::<()>().count(), 7);
    w.assert_invariants();
}

fn entity_only_queries_and_or_filters(backend: Backend) {
    let mut w = world(backend);
    let red = w.spawn((Pos(1.0, 0.0), Red)).unwrap();
    let blue = w.spawn((Pos(2.0, 0.0), Blue)).unwrap();
    let both = w.spawn((Pos(4.0, 0.0), Red, Blue, Vel(0.0, 0.0))).unwrap();
    let none = w.spawn((Pos(8.0, 0.0),)).unwrap();
    let bare = w.spawn(()).unwrap();
    let rows = |w: &mut World| {
        let mut v = Vec::new();
        w.query_filtered::<(), Or<With<Red>, With<Blue>>>().for_each(|e, ()| v.push(e));
        sorted(v)
    };
    assert_eq!(rows(&mut w), sorted(vec![red, blue, both]));
    let mut sum = 0.0;
    w.query_filtered::<(&Pos,), Or<With<Red>, With<Blue>>>().for_each(|_, (p,)| sum += p.0);
    assert_eq!(sum, 7.0);
    // Or of a With and a Without, and an Or beside a plain filter.
    let mut v = Vec::new();
    w.query_filtered::<(), Or<With<Vel>, Without<Pos>>>().for_each(|e, ()| v.push(e));
    assert_eq!(sorted(v), sorted(vec![both, bare]));
    let mut v = Vec::new();
    w.query_filtered::<(&Pos,), (Or<With<Red>, With<Blue>>, Without<Vel>)>().for_each(|e, _| v.push(e));
    assert_eq!(sorted(v), sorted(vec![red, blue]));
    // Shared queries agree, a type the world never met included.
    struct Never;
    let shared = &w;
    assert_eq!(shared.query_ref::<()>().count(), 5);
    assert_eq!(shared.query_ref::<(&Pos,)>().with::<Red>().without::<Blue>().count(), 1);
    let mut v = Vec::new();
    shared.query_ref::<()>().for_each(|e, ()| v.push(e));
    assert_eq!(sorted(v), sorted(vec![red, blue, both, none, bare]));
    let filtered = shared.query_ref::<(&Pos,)>();
    assert_eq!(filtered.with::<Never>().count(), 0);
    let mut v = Vec::new();
    shared.query_ref::<(&Pos,)>().for_each(|e, _| v.push(e));
    assert_eq!(v.len(), 4);
    let mut v = Vec::new();
    let q = w.query_ref::<()>();
    q.without::<Pos>().for_each(|e, ()| v.push(e));
    assert_eq!(v, vec![bare]);
    // A type the world never met inside an Or: that side passes nothing, the other still does.
    let world = &w;
    let mut v = Vec::new();
    world.query_ref::<(&Pos,)>().filter::<Or<With<Never>, With<Blue>>>().for_each(|e, _| v.push(e));
    assert_eq!(sorted(v), sorted(vec![blue, both]));
    // Filters on a fetched type are refused inside an Or too.
    let refused = w.query_filtered::<(&Pos,), Or<With<Pos>, With<Red>>>().try_for_each(|_, _| {});
    assert!(matches!(refused, Err(QueryError::Conflict { .. })));
    for backend in Backend::ALL {
        w.set_backend(backend);
        assert_eq!(rows(&mut w), sorted(vec![red, blue, both]), "{backend:?}");
    }
}

fn single_terms_need_no_tuple(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 0.0), Vel(1.0, 0.0), Red)).unwrap();
    let b = w.spawn((Pos(2.0, 0.0),)).unwrap();
    w.query::<&mut Pos>().for_each(|_, p| p.1 += 1.0);
    w.query::<&mut Pos>().with::<Red>().for_each(|_, p| p.0 *= 10.0);
    assert_eq!(w.get::<Pos>(a), Some(&Pos(10.0, 1.0)));
    assert_eq!(w.get::<Pos>(b), Some(&Pos(2.0, 1.0)));
    let mut sum = 0.0;
    w.query_ref::<&Pos>().without::<Red>().for_each(|_, p| sum += p.0);
    assert_eq!(sum, 2.0);
    assert_eq!(w.query::<Option<&Vel>>().count(), 2);
    assert_eq!(w.query_ref::<Option<&Vel>>().count(), 2);
    let mut some = 0;
    w.query::<Option<&mut Vel>>().for_each(|_, v| some += v.is_some() as u32);
    assert_eq!(some, 1);
    let mut rows = 0;
    w.query::<&Pos>().for_each_run(|entities, positions| {
        assert_eq!(entities.len(), positions.len());
        rows += positions.len();
    });
    assert_eq!(rows, 2);
    // One and many entities, and the same answers as the 1-tuple.
    w.query_one_mut::<&mut Vel>(a).unwrap().0 = 5.0;
    assert_eq!(w.query_one::<&Vel>(a), Ok(&Vel(5.0, 0.0)));
    assert_eq!(w.query_one::<(&Vel,)>(a), Ok((&Vel(5.0, 0.0),)));
    assert_eq!(w.query_one::<&Vel>(b).err(), Some(QueryOneError::Unsatisfied(b)));
    let [pa, pb] = w.query::<&mut Pos>().get_many([a, b]).unwrap();
    std::mem::swap(pa, pb);
    assert_eq!(w.get::<Pos>(a), Some(&Pos(2.0, 1.0)));
    let refused = w.query::<&mut Pos>().filter::<With<Pos>>().try_for_each(|_, _| {});
    assert!(matches!(refused, Err(QueryError::Conflict { .. })));
    w.assert_invariants();
}

fn one_entity_lookups(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 0.0), Vel(2.0, 0.0))).unwrap();
    let b = w.spawn((Pos(5.0, 0.0), Red)).unwrap();
    {
        let (p, v) = w.query_one_mut::<(&mut Pos, &Vel)>(a).unwrap();
        p.0 += v.0;
    }
    assert_eq!(w.get::<Pos>(a), Some(&Pos(3.0, 0.0)));
    assert_eq!(w.query_one::<(&Pos, Option<&Vel>)>(b), Ok((&Pos(5.0, 0.0), None)));
    assert_eq!(w.query_one_mut::<(&Pos, &Vel)>(b).err(), Some(QueryOneError::Unsatisfied(b)));
    assert_eq!(w.query_one::<(&Pos,)>(a).map(|(p,)| p.0), Ok(3.0));
    // Filters, through a query.
    assert!(w.query::<(&Pos,)>().with::<Red>().get(b).is_ok());
    assert_eq!(w.query::<(&Pos,)>().with::<Red>().get(a).err(), Some(QueryOneError::Unsatisfied(a)));
    assert_eq!(w.query_ref::<(&Pos,)>().without::<Red>().get(a).map(|(p,)| p.0), Ok(3.0));
    assert!(w.query::<()>().get(b).is_ok());
    // Aliasing is refused, like a query.
    let refused = w.query_one_mut::<(&mut Pos, &Pos)>(a).err();
    assert!(matches!(refused, Some(QueryOneError::Refused(QueryError::Conflict { mutable: true, .. }))));
    assert!(matches!(w.query_one::<(&Pos, &Pos)>(a), Err(QueryOneError::Refused(_))));
    // Stale handles.
    w.despawn(a).unwrap();
    assert_eq!(w.query_one_mut::<(&Pos,)>(a).err(), Some(QueryOneError::NoSuchEntity(a)));
    assert_eq!(w.query_one::<(&Pos,)>(a).err(), Some(QueryOneError::NoSuchEntity(a)));
    let c = w.spawn((Pos(7.0, 0.0),)).unwrap();
    assert_eq!(c.index(), a.index());
    assert_eq!(w.query_one::<(&Pos,)>(a).err(), Some(QueryOneError::NoSuchEntity(a)), "index reused");
    // A type the world never met.
    struct Never;
    assert_eq!(w.query_one::<(&Never,)>(c).err(), Some(QueryOneError::Unsatisfied(c)));
    assert!(matches!(w.query_one_mut::<(Option<&Never>,)>(c), Ok((None,))));
    w.assert_invariants();
}

fn many_entities_at_once(backend: Backend) {
    let mut w = world(backend);
    // Spread over tables and far apart in index, so the b-tree walks and the tables split.
    let mut all = Vec::new();
    for i in 0..40 {
        let e = match i % 3 {
            0 => w.spawn((Pos(i as f32, 0.0), Vel(1.0, 0.0))).unwrap(),
            1 => w.spawn((Pos(i as f32, 0.0), Vel(1.0, 0.0), Red)).unwrap(),
            _ => w.spawn((Pos(i as f32, 0.0),)).unwrap(),
        };
        all.push(e);
    }
    let (hunter, target) = (all[30], all[4]);
    {
        let [(hp, hv), (tp, _)] = w.query_many_mut::<(&Pos, &mut Vel), 2>([hunter, target]).unwrap();
        hv.0 = tp.0 - hp.0;
    }
    assert_eq!(w.get::<Vel>(hunter), Some(&Vel(-26.0, 0.0)));
    // Three at once, in no particular order, two in one table.
    {
        let [x, y, z] = w.get_many_mut::<Pos, 3>([all[39], all[0], all[3]]).unwrap();
        std::mem::swap(x, y);
        z.1 = 1.0;
    }
    assert_eq!(w.get::<Pos>(all[0]), Some(&Pos(39.0, 0.0)));
    assert_eq!(w.get::<Pos>(all[39]), Some(&Pos(0.0, 0.0)));
    assert_eq!(w.get::<Pos>(all[3]), Some(&Pos(3.0, 1.0)));
    // A whole run, each value written once.
    {
        let values = w.get_many_mut::<Pos, 8>(std::array::from_fn(|k| all[5 * k])).unwrap();
        for p in values {
            p.1 += 10.0;
        }
    }
    assert!((0..8).all(|k| w.get::<Pos>(all[5 * k]).unwrap().1 >= 10.0));
    assert_eq!(w.get::<Pos>(all[1]).unwrap().1, 0.0);
    // Refusals: the same entity twice, a stale handle, a missing component, a filter.
    assert_eq!(w.get_many_mut::<Pos, 2>([hunter, hunter]).err(), Some(QueryOneError::Aliased(hunter)));
    assert_eq!(
        w.query_many_mut::<(&Vel,), 3>([hunter, all[2], target]).err(),
        Some(QueryOneError::Unsatisfied(all[2]))
    );
    let with_red = w.query::<(&mut Pos,)>().with::<Red>().get_many([all[1], all[4]]);
    assert_eq!(with_red.map(|[(a,), (b,)]| (a.0, b.0)), Ok((1.0, 4.0)));
    let with_red = w.query::<(&mut Pos,)>().with::<Red>().get_many([all[1], all[3]]);
    assert_eq!(with_red.err(), Some(QueryOneError::Unsatisfied(all[3])));
    w.despawn(target).unwrap();
    assert_eq!(w.get_many_mut::<Pos, 2>([hunter, target]).err(), Some(QueryOneError::NoSuchEntity(target)));
    assert_eq!(w.get::<Vel>(hunter), Some(&Vel(-26.0, 0.0)), "a refusal writes nothing");
    let empty: [&mut Pos; 0] = w.get_many_mut::<Pos, 0>([]).unwrap();
    assert!(empty.is_empty());
    w.assert_invariants();
}

fn bundles_inserted_and_removed_whole(backend: Backend) {
    let mut w = world(backend);
    let e = w.spawn((Pos(0.0, 0.0),)).unwrap();
    w.insert_bundle(e, (Vel(1.0, 0.0), Name("e".into()), Red)).unwrap();
    assert_eq!(
        w.query_one::<(&Pos, &Vel, &Name, &Red)>(e).map(|(_, v, n, _)| (v.0, n.0.clone())),
        Ok((1.0, "e".into()))
    );
    // Replacing what it has.
    w.insert_bundle(e, (Pos(5.0, 0.0), Vel(2.0, 0.0))).unwrap();
    assert_eq!(w.get::<Pos>(e), Some(&Pos(5.0, 0.0)));
    // All or nothing.
    let missing = w.remove_bundle::<(Vel, Blue, Name)>(e);
    assert!(matches!(missing, Err(ComponentError::MissingComponent { component, .. }) if component.ends_with("Blue")));
    assert!(w.has::<Vel>(e) && w.has::<Name>(e), "nothing removed");
    assert_eq!(w.remove_bundle::<(Vel, Name)>(e), Ok((Vel(2.0, 0.0), Name("e".into()))));
    assert!(!w.has::<Vel>(e) && w.has::<Red>(e) && w.has::<Pos>(e));
    // Stale handles, and through the command buffer.
    let dead = w.spawn(()).unwrap();
    w.despawn(dead).unwrap();
    assert_eq!(w.insert_bundle(dead, (Red,)), Err(NoSuchEntity(dead)));
    assert_eq!(w.remove_bundle::<(Red,)>(dead), Err(ComponentError::NoSuchEntity(dead)));
    let mut c = w.commands();
    c.insert_bundle(e, (Vel(3.0, 0.0), Blue));
    c.remove_bundle::<(Pos, Red)>(e);
    c.remove_bundle::<(Pos,)>(e); // already gone by then: skipped
    c.insert_bundle(dead, (Red,));
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped), (2, 2));
    assert_eq!(w.query_one::<(&Vel, &Blue, Option<&Pos>, Option<&Red>)>(e), Ok((&Vel(3.0, 0.0), &Blue, None, None)));
    w.assert_invariants();
}

fn a_bundle_naming_a_type_twice_is_refused_on_insert(backend: Backend) {
    let mut w = world(backend);
    let e = w.spawn(()).unwrap();
    let _ = w.insert_bundle(e, (Red, Red));
}

fn reserved_handles_follow_one_rule(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    // Filled in later: the insert applies the buffer first, commands recorded before it first of all.
    let r = w.reserve_entity().unwrap();
    w.commands().insert(a, Red);
    assert!(!w.is_alive(r) && w.entities().is_reserved(r));
    assert_eq!(w.get::<Pos>(r), None, "a shared read sees it not alive yet");
    assert_eq!(w.query_one::<()>(r).err(), Some(QueryOneError::NoSuchEntity(r)));
    assert_eq!(w.view_mut::<Pos>().insert(r, Pos(1.0, 1.0)), Err(ComponentError::Reserved(r)));
    assert!(w.view_mut::<Pos>().remove(r).unwrap_err().to_string().contains("reserved"));
    assert_eq!(w.insert(r, Pos(1.0, 1.0)), Ok(None));
    assert!(w.is_alive(r) && w.has::<Red>(a), "the buffer was applied first");
    assert!(!w.has_pending_commands());
    // A reservation despawned through the world never comes to life.
    let s = w.commands().spawn((Pos(2.0, 2.0),)).unwrap();
    assert_eq!(w.despawn(s), Ok(()));
    assert!(!w.is_alive(s));
    w.apply_commands();
    assert!(!w.is_alive(s) && w.get::<Pos>(s).is_none());
    // Every `&mut World` operation settles the handle the same way.
    let t = w.commands().spawn((Pos(3.0, 3.0), Vel(1.0, 0.0))).unwrap();
    assert_eq!(w.get_mut::<Pos>(t).map(|p| p.0), Some(3.0));
    let u = w.commands().spawn((Pos(4.0, 4.0),)).unwrap();
    assert_eq!(w.remove::<Pos>(u), Ok(Pos(4.0, 4.0)));
    let v = w.commands().spawn((Vel(5.0, 0.0),)).unwrap();
    assert_eq!(w.query_one_mut::<(&Vel,)>(v).map(|(v,)| v.0), Ok(5.0));
    let x = w.reserve_entity().unwrap();
    assert!(w.get_many_mut::<Vel, 2>([t, x]).is_err(), "alive now, but without `Vel`");
    assert!(w.is_alive(x));
    let y = w.reserve_entity().unwrap();
    w.insert_bundle(y, (Red, Blue)).unwrap();
    assert!(w.has::<Blue>(y));
    // A discarded reservation is not revived by an operation naming it.
    let z = w.reserve_entity().unwrap();
    w.discard_commands();
    assert_eq!(w.insert(z, Red), Err(NoSuchEntity(z)));
    // A full world: no reservation to make.
    let mut small = World::with_capacity(1);
    small.set_backend(backend);
    small.spawn(()).unwrap();
    assert!(small.reserve_entity().is_err());
    w.assert_invariants();
}

fn tags_and_filters(backend: Backend) {
    let mut w = world(backend);
    let red = w.spawn((Pos(0.0, 0.0), Vel(1.0, 0.0), Red)).unwrap();
    let blue = w.spawn((Pos(0.0, 0.0), Vel(2.0, 0.0), Blue)).unwrap();
    let still = w.spawn((Pos(5.0, 5.0), Red)).unwrap();
    w.query::<(&mut Pos, &Vel)>().for_each(|_, (p, v)| p.0 += v.0);
    assert_eq!(w.get::<Pos>(red), Some(&Pos(1.0, 0.0)));
    assert_eq!(w.get::<Pos>(blue), Some(&Pos(2.0, 0.0)));
    let mut reds = Vec::new();
    w.query::<(&Pos,)>().with::<Red>().for_each(|e, _| reds.push(e));
    assert_eq!(sorted(reds), sorted(vec![red, still]));
    let mut not_red = Vec::new();
    w.query_filtered::<(&Pos,), Without<Red>>().for_each(|e, _| not_red.push(e));
    assert_eq!(not_red, vec![blue]);
    let mut moving_reds = Vec::new();
    w.query_filtered::<(&Vel,), (With<Red>, Without<Blue>)>().for_each(|e, _| moving_reds.push(e));
    assert_eq!(moving_reds, vec![red]);
    assert_eq!(w.remove::<Red>(red), Ok(Red));
    assert!(!w.has::<Red>(red) && w.has::<Pos>(red));
    assert_eq!(w.query::<(&Pos,)>().with::<Red>().count(), 1);
    w.assert_invariants();
}

fn for_each_run_yields_what_for_each_yields(backend: Backend) {
    let mut w = world(backend);
    // Pools packed alike (position, velocity), teams in blocks of 10 (so filtered runs are longer than
    // a row), holes, and later a velocity pool out of step. Entity `i` holds x = i in both values.
    let mut all = Vec::new();
    for i in 0..300 {
        let x = i as f32;
        let e = match (i / 10) % 3 {
            0 => w.spawn((Pos(x, 0.0), Vel(x, 1.0), Red)),
            1 => w.spawn((Pos(x, 0.0), Vel(x, 2.0))),
            _ => w.spawn((Pos(x, 0.0), Vel(x, 3.0), Blue)),
        };
        all.push(e.unwrap());
    }
    for &e in all.iter().step_by(7) {
        w.despawn(e).unwrap();
    }
    type Row = (Entity, Pos, Vel);
    fn each<F: swarm::ecs::Filter>(w: &mut World) -> Vec<Row> {
        let mut out = Vec::new();
        w.query_filtered::<(&mut Pos, &Vel), F>().for_each(|e, (p, v)| {
            p.1 += 1.0;
            out.push((e, *p, *v));
        });
        out.sort_by_key(|r| r.0);
        out
    }
    fn runs<F: swarm::ecs::Filter>(w: &mut World) -> Vec<Row> {
        let mut out = Vec::new();
        w.query_filtered::<(&mut Pos, &Vel), F>().for_each_run(|entities, (ps, vs)| {
            assert!(!entities.is_empty(), "an empty run");
            assert_eq!((entities.len(), ps.len()), (vs.len(), vs.len()));
            for ((&e, p), v) in entities.iter().zip(ps.iter_mut()).zip(vs.iter()) {
                p.1 += 1.0;
                out.push((e, *p, *v));
            }
        });
        out.sort_by_key(|r| r.0);
        out
    }
    // Both passes add 1 to y, so the second sees the first's writes; every row carries its owner's x.
    fn same(a: &[Row], b: &[Row], all: &[Entity], what: &str) {
        assert!(!a.is_empty(), "{what}: nothing matched");
        assert_eq!(a.len(), b.len(), "{what}");
        for (x, y) in a.iter().zip(b) {
            let i = all.iter().position(|&e| e == x.0).unwrap() as f32;
            assert_eq!((x.0, x.1 .0, x.2 .0), (y.0, i, i), "{what}: a row went to another entity");
            assert_eq!((x.1 .1 + 1.0, x.2), (y.1 .1, y.2), "{what}");
        }
    }
    for round in ["packed alike", "velocity probed"] {
        same(&each::<()>(&mut w), &runs::<()>(&mut w), &all, round);
        same(&each::<With<Red>>(&mut w), &runs::<With<Red>>(&mut w), &all, round);
        // Two `Without` filters never drive: the packed arrays are walked in runs between blues and reds.
        type Neither = (Without<Red>, Without<Blue>);
        let (by_entity, neither) = (each::<Neither>(&mut w), runs::<Neither>(&mut w));
        same(&by_entity, &neither, &all, round);
        assert!(neither.iter().all(|r| r.2 .1 == 2.0 && !w.has::<Red>(r.0) && !w.has::<Blue>(r.0)));
        let (reds, blues) = (runs::<With<Red>>(&mut w).len(), runs::<With<Blue>>(&mut w).len());
        assert_eq!(reds + blues + neither.len(), runs::<()>(&mut w).len(), "{round}");
        // Out of step: velocities re-inserted in another order, so the velocity pool is probed.
        for &e in all.iter().rev().step_by(2) {
            if let Ok(v) = w.remove::<Vel>(e) {
                w.insert(e, v).unwrap();
            }
        }
    }
    w.assert_invariants();
}

fn queries_up_to_six_terms_yield_entities(backend: Backend) {
    let mut w = world(backend);
    let e = w.spawn((1u8, 2u16, 3u32, 4u64, 5i8, 6i16)).unwrap();
    w.spawn((1u8, 2u16)).unwrap();
    let mut seen = Vec::new();
    w.query::<(&u8, &mut u16, &u32, &u64, &i8, &mut i16)>().for_each(|entity, (a, b, c, d, x, y)| {
        *b += 1;
        *y += 1;
        seen.push((entity, *a as i64 + *b as i64 + *c as i64 + *d as i64 + *x as i64 + *y as i64));
    });
    assert_eq!(seen, vec![(e, 23)]);
    assert_eq!(w.query::<(&u16,)>().count(), 2);
}

fn optional_terms_fetch_when_present_and_never_restrict(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 0.0), Vel(10.0, 0.0))).unwrap();
    let b = w.spawn((Pos(2.0, 0.0),)).unwrap();
    let c = w.spawn((Vel(30.0, 0.0), Red)).unwrap();
    let d = w.spawn((Pos(4.0, 0.0), Vel(40.0, 0.0), Red)).unwrap();
    let mut seen = Vec::new();
    w.query::<(&Pos, Option<&Vel>)>().for_each(|e, (p, v)| seen.push((e, p.0, v.map(|v| v.0))));
    seen.sort_by_key(|row| row.0);
    assert_eq!(seen, vec![(a, 1.0, Some(10.0)), (b, 2.0, None), (d, 4.0, Some(40.0))]);
    // Mutable and optional: only the entities that have it are written.
    w.query::<(Option<&mut Vel>, &Pos)>().for_each(|_, (v, p)| {
        if let Some(v) = v {
            v.1 = p.0;
        }
    });
    assert_eq!(w.get::<Vel>(a), Some(&Vel(10.0, 1.0)));
    assert_eq!(w.get::<Vel>(c), Some(&Vel(30.0, 0.0)), "c has no Pos: not visited");
    assert_eq!(w.get::<Vel>(d), Some(&Vel(40.0, 4.0)));
    // Only optional terms: every live entity, or those the filters allow.
    let mut all = Vec::new();
    w.query::<(Option<&Pos>,)>().for_each(|e, (p,)| all.push((e, p.is_some())));
    assert_eq!(sorted(all.iter().map(|r| r.0).collect()), sorted(vec![a, b, c, d]));
    assert_eq!(all.iter().filter(|r| r.1).count(), 3);
    assert_eq!(w.query::<(Option<&Pos>,)>().without::<Red>().count(), 2);
    assert_eq!(w.query::<(Option<&Pos>, Option<&Vel>)>().with::<Red>().count(), 2);
    // Runs hand over the same rows as `for_each`, with the optional column absent where it is.
    let mut rows = Vec::new();
    w.query::<(&Vel, Option<&Pos>)>().for_each_run(|entities, (vels, poss)| {
        for (k, &e) in entities.iter().enumerate() {
            rows.push((e, vels[k].0, poss.as_ref().map(|p| p[k].0)));
        }
    });
    rows.sort_by_key(|row| row.0);
    assert_eq!(rows, vec![(a, 10.0, Some(1.0)), (c, 30.0, None), (d, 40.0, Some(4.0))]);
    // Naming a type twice is still refused, optional or not.
    let err = w.query::<(&mut Pos, Option<&Pos>)>().try_for_each(|_, _| {}).unwrap_err();
    assert!(matches!(err, QueryError::Conflict { mutable: true, .. }), "{err}");
    w.assert_invariants();
}

fn shared_queries_read_what_mutable_ones_read(backend: Backend) {
    #[derive(Debug)]
    struct Never;
    let mut w = world(backend);
    let mut all = Vec::new();
    for i in 0..60 {
        let e = match i % 3 {
            0 => w.spawn((Pos(i as f32, 0.0), Vel(1.0, i as f32))).unwrap(),
            1 => w.spawn((Pos(i as f32, 1.0), Red)).unwrap(),
            _ => w.spawn((Vel(2.0, i as f32), Red)).unwrap(),
        };
        all.push(e);
    }
    for &e in all.iter().step_by(7) {
        w.despawn(e).unwrap();
    }
    fn rows(w: &World) -> Vec<(Entity, f32, Option<f32>)> {
        let mut out = Vec::new();
        w.query_ref::<(&Pos, Option<&Vel>)>().for_each(|e, (p, v)| out.push((e, p.0, v.map(|v| v.1))));
        out.sort_by_key(|r| r.0);
        out
    }
    let mut expected = Vec::new();
    w.query::<(&Pos, Option<&Vel>)>().for_each(|e, (p, v)| expected.push((e, p.0, v.map(|v| v.1))));
    expected.sort_by_key(|r| r.0);
    let red_vel = w.query::<(&Vel,)>().with::<Red>().count();
    let shared: &World = &w;
    assert_eq!(rows(shared), expected);
    assert_eq!(shared.query_ref::<(&Vel,)>().with::<Red>().count(), red_vel);
    assert_eq!(shared.query_ref::<(&Pos,)>().without::<Red>().count(), 17);
    // Types the world never met: nothing has them, nothing is excluded by them, they read as None.
    assert_eq!(shared.query_ref::<(&Never,)>().count(), 0);
    assert_eq!(shared.query_ref::<(&Pos,)>().with::<Never>().count(), 0);
    assert_eq!(shared.query_ref::<(&Pos,)>().without::<Never>().count(), expected.len());
    let mut nones = 0;
    shared.query_ref::<(&Pos, Option<&Never>)>().for_each(|_, (_, n)| nones += n.is_none() as usize);
    assert_eq!(nones, expected.len());
    let err = shared.query_ref::<(&Pos, Option<&Pos>)>().try_for_each(|_, _| {}).unwrap_err();
    assert!(matches!(err, QueryError::Conflict { mutable: false, .. }), "{err}");
    let err = shared.query_ref::<(&Never, &Never)>().try_for_each(|_, _| {}).unwrap_err();
    assert!(matches!(err, QueryError::Conflict { .. }), "an unknown type named twice: {err}");
}

fn aliasing_queries_are_refused(backend: Backend) {
    let mut w = world(backend);
    w.spawn((Pos(0.0, 0.0),)).unwrap();
    let err = w.query::<(&mut Pos, &Pos)>().try_for_each(|_, _| {}).unwrap_err();
    assert!(matches!(err, QueryError::Conflict { mutable: true, .. }));
    let message = err.to_string();
    assert!(message.contains("Pos") && message.contains("&mut"), "{message}");
    assert!(w.query::<(&Pos,)>().with::<Pos>().try_for_each(|_, _| {}).is_err());
    // The world is intact after a refused query.
    assert_eq!(w.query::<(&Pos,)>().count(), 1);
    w.assert_invariants();
}

fn aliasing_for_each_panics_with_a_clear_message(backend: Backend) {
    let mut w = world(backend);
    w.query::<(&Pos, &mut Pos)>().for_each(|_, _| {});
}

fn spawn_batch_counts_without_collecting_handles(backend: Backend) {
    let mut w = World::with_capacity(50);
    w.set_backend(backend);
    let first = w.spawn((Pos(-1.0, 0.0),)).unwrap();
    assert_eq!(w.spawn_batch((0..30).map(|i| (Pos(i as f32, 0.0), Vel(0.0, i as f32)))), Ok(30));
    assert_eq!(w.spawn_batch((0..40).map(|i| (Vel(i as f32, 1.0),))), Err(WorldFull { capacity: 50 }));
    assert_eq!(w.len(), 50, "the bundles that fitted stay");
    let mut sum = 0.0;
    w.query::<(&Pos, &Vel)>().for_each(|_, (p, v)| sum += p.0 + v.1);
    assert_eq!(sum, 2.0 * (0..30).sum::<i32>() as f32);
    assert_eq!(w.query::<(&Vel,)>().without::<Pos>().count(), 19);
    assert_eq!(w.get::<Pos>(first), Some(&Pos(-1.0, 0.0)));
    w.assert_invariants();
}

fn full_world_refuses_and_loses_nothing(backend: Backend) {
    let mut w = World::with_capacity(3);
    w.set_backend(backend);
    let all: Vec<_> = (0..3).map(|i| w.spawn((Pos(i as f32, 0.0),)).unwrap()).collect();
    assert_eq!(w.spawn((Pos(9.0, 9.0),)), Err(WorldFull { capacity: 3 }));
    assert_eq!(w.commands().spawn((Pos(9.0, 9.0),)), Err(WorldFull { capacity: 3 }));
    let mut out = Vec::new();
    assert!(w.spawn_batch_into((0..5).map(|_| (Pos(0.0, 0.0),)), &mut out).is_err());
    assert!(out.is_empty());
    for (i, e) in all.iter().enumerate() {
        assert_eq!(w.get::<Pos>(*e), Some(&Pos(i as f32, 0.0)));
    }
    w.despawn(all[0]).unwrap();
    assert!(w.spawn((Pos(7.0, 7.0),)).is_ok());
    w.assert_invariants();
}

fn spawn_batch_matches_spawn(backend: Backend) {
    let mut w = world(backend);
    let mut out = Vec::new();
    w.spawn_batch_into((0..100).map(|i| (Pos(i as f32, 0.0), Vel(0.0, i as f32))), &mut out).unwrap();
    assert_eq!(out.len(), 100);
    assert_eq!(w.get::<Vel>(out[42]), Some(&Vel(0.0, 42.0)));
    w.assert_invariants();
}

fn spawn_batch_reuses_freed_indices_and_stops_whole_when_full(backend: Backend) {
    let mut w = World::with_capacity(150);
    w.set_backend(backend);
    let mut first = Vec::new();
    w.spawn_batch_into((0..100).map(|i| (Pos(i as f32, 0.0), Vel(0.0, i as f32))), &mut first).unwrap();
    for e in first.iter().skip(1).step_by(2) {
        w.despawn(*e).unwrap();
    }
    // 50 live, room for 100: the first 100 of these 120 fit (the 50 freed indices first), then the
    // batch stops with an error and every entity it did spawn is whole.
    let mut second = Vec::new();
    let result = w.spawn_batch_into((0..120).map(|i| (Vel(1.0, i as f32), Pos(-(i as f32), 1.0))), &mut second);
    assert_eq!(result, Err(WorldFull { capacity: 150 }));
    assert_eq!(second.len(), 100);
    assert_eq!(w.len(), 150);
    for (i, e) in second.iter().enumerate() {
        assert_eq!(w.get::<Pos>(*e), Some(&Pos(-(i as f32), 1.0)));
        assert_eq!(w.get::<Vel>(*e), Some(&Vel(1.0, i as f32)));
    }
    for (i, e) in first.iter().enumerate().step_by(2) {
        assert_eq!(w.get::<Pos>(*e), Some(&Pos(i as f32, 0.0)));
    }
    assert_eq!(w.query::<(&Pos, &Vel)>().count(), 150);
    w.assert_invariants();
}

fn spawn_batch_survives_a_panicking_iterator(backend: Backend) {
    let mut w = world(backend);
    let mut out = Vec::new();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let bundles = (0..10).map(|i| if i == 7 { panic!("bundle 7") } else { (Pos(i as f32, 0.0), Red) });
        let _ = w.spawn_batch_into(bundles, &mut out);
    }));
    assert!(outcome.is_err());
    assert_eq!(out.len(), 7);
    w.assert_invariants();
    for (i, e) in out.iter().enumerate() {
        assert_eq!(w.get::<Pos>(*e), Some(&Pos(i as f32, 0.0)));
        assert!(w.has::<Red>(*e));
    }
    assert!(w.spawn((Pos(1.0, 1.0),)).is_ok());
    w.assert_invariants();
}

fn view_matches_the_world_methods_and_refuses_stale_handles(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 0.0), Vel(0.0, 0.0))).unwrap();
    let b = w.spawn((Pos(2.0, 0.0),)).unwrap();
    let dead = w.spawn((Pos(3.0, 0.0), Vel(1.0, 1.0))).unwrap();
    w.despawn(dead).unwrap();
    let reused = w.spawn((Pos(4.0, 0.0),)).unwrap();
    assert_eq!(reused.index(), dead.index(), "the freed index is reused, so `dead` is a stale handle");
    {
        let mut vel = w.view_mut::<Vel>();
        assert_eq!(vel.get(a), Some(&Vel(0.0, 0.0)));
        assert!(!vel.contains(b));
        assert_eq!(vel.get(dead), None);
        vel.get_mut(a).unwrap().0 = 5.0;
        assert_eq!(vel.insert(b, Vel(2.0, 2.0)), Ok(None));
        assert_eq!(vel.insert(a, Vel(6.0, 0.0)), Ok(Some(Vel(5.0, 0.0))));
        assert_eq!(vel.insert(dead, Vel(9.0, 9.0)), Err(ComponentError::NoSuchEntity(dead)));
        assert_eq!(vel.remove(dead), Err(ComponentError::NoSuchEntity(dead)));
        assert!(matches!(vel.remove(reused), Err(ComponentError::MissingComponent { .. })));
        assert_eq!(vel.remove(b), Ok(Vel(2.0, 2.0)));
        assert!(vel.get_mut(dead).is_none());
    }
    assert_eq!(w.get::<Vel>(a), Some(&Vel(6.0, 0.0)));
    assert_eq!(w.get::<Vel>(b), None);
    assert_eq!(w.get::<Vel>(reused), None);
    assert_eq!(w.get::<Pos>(reused), Some(&Pos(4.0, 0.0)));
    // A type the world has not met yet: the view registers it.
    assert_eq!(w.view_mut::<Name>().insert(b, Name("b".into())), Ok(None));
    assert_eq!(w.get::<Name>(b), Some(&Name("b".into())));
    w.assert_invariants();
}

fn exhausted_generations_retire_the_index(backend: Backend) {
    let mut w = World::from_entities(Entities::with_max_generation(10, 2));
    w.set_backend(backend);
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    w.despawn(a).unwrap();
    let b = w.spawn((Pos(1.0, 0.0),)).unwrap();
    assert_eq!((b.index(), b.generation().get()), (a.index(), 2));
    w.despawn(b).unwrap();
    assert_eq!(w.entities().retired(), 1);
    let c = w.spawn((Pos(2.0, 0.0),)).unwrap();
    assert_ne!(c.index(), a.index());
    assert_eq!(w.get::<Pos>(b), None);
    w.assert_invariants();
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
    use std::rc::Rc;
    let token = Rc::new(());
    let mut w = World::with_capacity(2);
    w.set_backend(backend);
    let x = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let dead = w.spawn((Pos(1.0, 0.0),)).unwrap();
    w.despawn(dead).unwrap();
    // Discarded: a spawn's bundle and an insert's value.
    let mut c = w.commands();
    assert!(c.is_empty());
    c.spawn((Rc::clone(&token),)).unwrap();
    c.insert(x, Rc::clone(&token));
    assert_eq!((c.len(), c.is_empty()), (2, false));
    w.discard_commands();
    assert_eq!(Rc::strong_count(&token), 1, "discarded values were dropped");
    // Skipped (a dead target) and refused (a full world): dropped by the apply.
    w.commands().insert(dead, Rc::clone(&token));
    w.spawn((Red,)).unwrap(); // the world is full now
    w.query::<(&Pos,)>().for_each_with_commands(|_, _, c| {
        c.spawn((Rc::clone(&token),)).unwrap();
    });
    let stats = w.apply_commands();
    assert_eq!((stats.skipped, stats.refused), (1, 1));
    assert_eq!(Rc::strong_count(&token), 1, "skipped and refused values were dropped");
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

fn a_panicking_loop_keeps_what_it_recorded(backend: Backend) {
    let mut w = world(backend);
    let all: Vec<Entity> = (0..10).map(|i| w.spawn((Pos(i as f32, 0.0),)).unwrap()).collect();
    let mut visited = 0;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        w.query::<(&Pos,)>().for_each_with_commands(|e, _, c| {
            visited += 1;
            if visited == 6 {
                panic!("a system bug");
            }
            c.insert(e, Red);
        })
    }));
    assert!(result.is_err());
    assert_eq!(w.commands().len(), 5, "the five commands recorded before the panic are kept");
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped), (5, 0));
    assert_eq!(w.query::<(&Red,)>().count(), 5);
    assert_eq!(w.query::<(&Pos,)>().count(), all.len(), "the pools came back after the panic");
    w.assert_invariants();
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

fn types_first_named_by_a_query_regression(backend: Backend) {
    let mut w = world(backend);
    let e = w.spawn((Pos(0.0, 0.0),)).unwrap();
    // `Red` and `Vel` are registered by the query before any entity holds them.
    assert_eq!(w.query::<(&Pos,)>().without::<Red>().count(), 1);
    assert_eq!(w.query::<(&Vel,)>().count(), 0);
    w.insert(e, Red).unwrap();
    w.insert(e, Vel(1.0, 1.0)).unwrap();
    assert_eq!(w.query::<(&Pos, &Vel)>().with::<Red>().count(), 1);
    w.assert_invariants();
}

fn insert_many_and_remove_many(backend: Backend) {
    let mut w = world(backend);
    let mut live = Vec::new();
    w.spawn_batch_into((0..50).map(|i| (Pos(i as f32, 0.0),)), &mut live).unwrap();
    let dead = live.pop().unwrap();
    w.despawn(dead).unwrap();
    let skipped = w.insert_many(live.iter().chain([&dead]).map(|&e| (e, Vel(1.0, 2.0))));
    assert_eq!(skipped, 1, "the dead handle is skipped");
    assert!(live.iter().all(|&e| w.get::<Vel>(e) == Some(&Vel(1.0, 2.0))));
    assert_eq!(w.remove_many::<Vel>(&live[..10]), 10);
    assert_eq!(w.remove_many::<Vel>(&live[..10]), 0, "already removed");
    assert_eq!(w.remove_many::<Vel>(&[dead]), 0);
    assert_eq!(w.query::<(&Vel,)>().count(), live.len() - 10);
    assert!(live[..10].iter().all(|&e| !w.has::<Vel>(e)));
    assert!(live[10..].iter().all(|&e| w.get::<Vel>(e) == Some(&Vel(1.0, 2.0))));
    assert!(live.iter().all(|&e| w.has::<Pos>(e)));
    w.assert_invariants();
}

fn types_registered_by_refusals_regression(backend: Backend) {
    // A refused query and a refused spawn both register types that then have no pool.
    let mut w = World::with_capacity(1);
    w.set_backend(backend);
    let e = w.spawn((Pos(0.0, 0.0),)).unwrap();
    assert!(w.query::<(&Vel, &mut Vel)>().try_for_each(|_, _| {}).is_err());
    assert!(w.spawn((Name("late".into()),)).is_err());
    assert_eq!(w.get::<Vel>(e), None);
    assert_eq!(w.get_mut::<Name>(e), None);
    assert!(matches!(w.remove::<Vel>(e), Err(ComponentError::MissingComponent { .. })));
    let mut bytes = Vec::new();
    w.component_bytes(&mut bytes);
    assert!(bytes.iter().any(|b| b.name.ends_with("Name") && b.bytes == 0));
    assert!(w.storage_bytes() > 0);
    w.insert(e, Vel(1.0, 1.0)).unwrap();
    assert_eq!(w.get::<Vel>(e), Some(&Vel(1.0, 1.0)));
    w.assert_invariants();
}

fn duplicate_types_in_a_recorded_spawn_panic_at_once(backend: Backend) {
    let mut w = world(backend);
    w.commands().spawn((Pos(0.0, 0.0), Pos(1.0, 1.0))).ok();
}

fn resources(backend: Backend) {
    let mut w = world(backend);
    assert_eq!(w.insert_resource(5u32), None);
    *w.resource_mut::<u32>() += 1;
    assert_eq!(*w.resource::<u32>(), 6);
    assert_eq!(w.get_resource::<u64>(), None);
    let doubled = w.resource_scope::<u32, _>(|world, r| {
        world.spawn((Pos(0.0, 0.0),)).unwrap();
        *r * 2
    });
    assert_eq!(doubled, 12);
    assert_eq!(w.remove_resource::<u32>(), Some(6));
}

fn memory_is_reported_and_grows(backend: Backend) {
    let mut w = world(backend);
    w.spawn((Pos(0.0, 0.0),)).unwrap();
    let small = w.storage_bytes();
    let mut out = Vec::new();
    w.spawn_batch_into((0..5000).map(|i| (Pos(i as f32, 0.0), Vel(0.0, 0.0), Red)), &mut out).unwrap();
    let big = w.storage_bytes();
    assert!(big > small, "{big} <= {small}");
    let mut per = Vec::new();
    w.component_bytes(&mut per);
    let pos = per.iter().find(|c| c.name.ends_with("Pos")).unwrap().bytes;
    assert!(pos >= 5000 * std::mem::size_of::<Pos>(), "Pos reports {pos} bytes for 5001 values");
}

fn clear_keeps_handles_dead(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    w.clear();
    assert!(!w.is_alive(a) && w.is_empty());
    let b = w.spawn((Pos(1.0, 0.0),)).unwrap();
    assert_eq!(w.get::<Pos>(a), None);
    assert_eq!(w.query::<(&Pos,)>().count(), 1);
    assert!(w.is_alive(b));
    w.assert_invariants();
}

fn switch_to_every_backend_keeps_everything(backend: Backend) {
    let mut w = world(backend);
    let mut live = Vec::new();
    for i in 0..300 {
        let e = match i % 3 {
            0 => w.spawn((Pos(i as f32, 0.0), Vel(1.0, 0.0), Red)).unwrap(),
            1 => w.spawn((Pos(i as f32, 0.0), Name(i.to_string()))).unwrap(),
            _ => w.spawn((Vel(i as f32, 0.0), Blue)).unwrap(),
        };
        live.push(e);
    }
    let mut stale = Vec::new();
    for e in live.iter().step_by(7) {
        w.despawn(*e).unwrap();
        stale.push(*e);
    }
    live.retain(|e| !stale.contains(e));
    let snapshot: Vec<_> = live
        .iter()
        .map(|&e| {
            (
                e,
                w.get::<Pos>(e).copied(),
                w.get::<Vel>(e).copied(),
                w.get::<Name>(e).cloned(),
                w.has::<Red>(e),
                w.has::<Blue>(e),
            )
        })
        .collect();
    for to in Backend::ALL {
        w.set_backend(to);
        assert_eq!(w.backend(), to);
        w.assert_invariants();
        for (e, pos, vel, name, red, blue) in &snapshot {
            assert!(w.is_alive(*e));
            assert_eq!(w.get::<Pos>(*e).copied(), *pos, "{to}");
            assert_eq!(w.get::<Vel>(*e).copied(), *vel, "{to}");
            assert_eq!(w.get::<Name>(*e).cloned(), *name, "{to}");
            assert_eq!((w.has::<Red>(*e), w.has::<Blue>(*e)), (*red, *blue), "{to}");
        }
        for e in &stale {
            assert!(!w.is_alive(*e) && w.get::<Pos>(*e).is_none(), "{to}: stale handle came back");
        }
        assert_eq!(w.len() as usize, live.len());
        assert_eq!(w.query::<(&Pos, &Vel)>().with::<Red>().count(), snapshot.iter().filter(|s| s.4).count());
    }
    // The free list carried over: the next spawn reuses the last freed index.
    let e = w.spawn((Pos(0.0, 0.0),)).unwrap();
    assert!(stale.iter().any(|s| s.index() == e.index()), "free list lost in the switch");
}

fn snapshots_keep_every_handle_and_value_on_every_backend(backend: Backend) {
    use swarm::ecs::{Format, SnapshotSchema};
    // Indices retire after 3 generations, so the snapshot carries retired indices too.
    let mut w = World::from_entities(Entities::with_max_generation(500, 3));
    w.set_backend(backend);
    w.insert_resource(Name("a resource".into()));
    let mut live = Vec::new();
    for round in 0..4 {
        for i in 0..60 {
            let e = match i % 3 {
                0 => w.spawn((Pos(i as f32, round as f32), Vel(1.0, 0.0), Red)).unwrap(),
                1 => w.spawn((Pos(i as f32, 0.5), Name(format!("n{i}")))).unwrap(),
                _ => w.spawn((Vel(i as f32, 0.0), Blue)).unwrap(),
            };
            live.push(e);
        }
        let dead: Vec<Entity> = live.iter().copied().skip(round).step_by(3).collect();
        for e in &dead {
            w.despawn(*e).unwrap();
        }
        live.retain(|e| !dead.contains(e));
    }
    assert!(w.entities().retired() > 0, "no index retired: the test would not cover them");
    // A stale handle: an earlier generation of an index in use now.
    let reused = live.iter().find(|e| e.generation().get() > 1).expect("an index was reused");
    let old = Entity::from_parts(reused.index(), std::num::NonZeroU32::new(reused.generation().get() - 1).unwrap());
    let follower = w.spawn((Follows(old), Follows2(live[1]))).unwrap();
    live.push(follower);
    let schema = SnapshotSchema::new()
        .component::<Pos>("pos")
        .component::<Vel>("vel")
        .component::<Name>("name")
        .component::<Red>("red")
        .component::<Blue>("blue")
        .component_with_entities::<Follows>("follows")
        .resource::<Name>("title");
    let row = |w: &World, e: Entity| {
        (
            w.get::<Pos>(e).copied(),
            w.get::<Vel>(e).copied(),
            w.get::<Name>(e).cloned(),
            w.has::<Red>(e),
            w.has::<Blue>(e),
            w.get::<Follows>(e).copied(),
        )
    };
    for format in [Format::Binary, Format::Json] {
        let bytes = schema.save(&w, format).unwrap();
        for to in Backend::ALL {
            let mut l = schema.load(&bytes, Some(to)).unwrap();
            assert_eq!(l.backend(), to);
            l.assert_invariants();
            assert_eq!(l.len(), w.len());
            for &e in &live {
                assert!(l.is_alive(e), "{format:?} {to}: {e:?} lost");
                assert_eq!(row(&l, e), row(&w, e), "{format:?} {to}: {e:?}");
            }
            // `Follows2` is not in the schema: not saved.
            assert!(!l.has::<Follows2>(follower) && w.has::<Follows2>(follower));
            assert!(!l.is_alive(old), "a stale handle came back to life");
            assert_eq!(l.resource::<Name>(), &Name("a resource".into()));
            assert_eq!(l.entities().retired(), w.entities().retired());
            assert_eq!(l.entities().state(), w.entities().state());
            // The free list's order came along: both hand out the same handles from here on.
            let mut w2 = schema.load(&bytes, Some(Backend::SparseSet)).unwrap();
            for _ in 0..40 {
                assert_eq!(l.spawn((Red,)), w2.spawn((Red,)));
            }
        }
    }
}

/// Each test above on every backend of `Backend::ALL`, as its own `#[test]` (named after the function): a backend
/// added to the table is covered with no edit here.
macro_rules! on_every_backend {
    ($($test:ident),* $(,)?) => {$(
        #[test]
        fn $test() {
            backends::each(super::$test);
        }
    )*};
}

/// The tests that must panic, on every backend, each with the message its panic must hold.
macro_rules! panics_on_every_backend {
    ($($test:ident => $expected:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            backends::each_panics(super::$test, $expected);
        }
    )*};
}

mod every_backend {
    use super::backends;

    on_every_backend! {
        spawn_get_insert_remove_despawn,
        a_query_shape_run_again_sees_what_changed_since,
        queries_pair_values_right_while_pools_change_between_them,
        stale_handles_touch_nothing,
        despawn_batch_matches_despawning_one_by_one,
        a_panicking_component_drop_leaves_the_world_consistent,
        lookups_reach_the_right_column_across_tables,
        every_value_is_dropped_exactly_once,
        clear_with_a_panicking_drop_leaves_no_value_behind,
        a_panic_while_applying_releases_every_reservation,
        a_panic_while_discarding_keeps_the_next_buffer_clean,
        a_panicking_resource_scope_keeps_the_resource,
        a_released_reservation_never_comes_to_life,
        entities_with_no_components,
        entity_only_queries_and_or_filters,
        single_terms_need_no_tuple,
        one_entity_lookups,
        many_entities_at_once,
        bundles_inserted_and_removed_whole,
        reserved_handles_follow_one_rule,
        tags_and_filters,
        for_each_run_yields_what_for_each_yields,
        queries_up_to_six_terms_yield_entities,
        optional_terms_fetch_when_present_and_never_restrict,
        shared_queries_read_what_mutable_ones_read,
        aliasing_queries_are_refused,
        spawn_batch_counts_without_collecting_handles,
        full_world_refuses_and_loses_nothing,
        spawn_batch_matches_spawn,
        spawn_batch_reuses_freed_indices_and_stops_whole_when_full,
        spawn_batch_survives_a_panicking_iterator,
        view_matches_the_world_methods_and_refuses_stale_handles,
        exhausted_generations_retire_the_index,
        commands_recorded_in_a_loop_apply_in_handle_order,
        deferred_spawns_name_their_entity_only_in_their_buffer,
        deferred_spawns_beyond_capacity_are_refused_in_handle_order,
        a_stretch_of_spawns_and_despawns_despawns_first,
        values_of_commands_that_never_land_are_dropped_at_once,
        each_loop_is_sorted_on_its_own_and_loops_apply_in_turn,
        a_panicking_loop_keeps_what_it_recorded,
        command_buffer_edge_cases,
        types_first_named_by_a_query_regression,
        insert_many_and_remove_many,
        types_registered_by_refusals_regression,
        resources,
        memory_is_reported_and_grows,
        clear_keeps_handles_dead,
        switch_to_every_backend_keeps_everything,
        snapshots_keep_every_handle_and_value_on_every_backend,
    }

    panics_on_every_backend! {
        a_bundle_naming_a_type_twice_is_refused_on_insert => "twice",
        aliasing_for_each_panics_with_a_clear_message => "may not alias",
        duplicate_types_in_a_recorded_spawn_panic_at_once => "names `",
    }
}
