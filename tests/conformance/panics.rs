//! Panic safety: a panic in a component's drop, while applying or discarding commands, in a resource scope, in a
//! query loop or in a spawned iterator leaves the world consistent.

use crate::{world, Blue, Name, Pos, Red, Vel};
use swarm::ecs::{Backend, Entity, World};

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

/// One entity despawned (no handlers, so the storage's own path) whose value's `drop` panics partway through its
/// pools: the pools after it still lose their values, and the handle is freed.
fn a_panicking_drop_in_a_single_despawn_finishes_it(backend: Backend) {
    let mut w = world(backend);
    // Pools in this order: positions, the bomb, velocities; so the panic comes between two removals.
    let before = w.spawn((Pos(0.0, 0.0), Bomb(false), Vel(0.0, 0.0))).unwrap();
    let e = w.spawn((Pos(1.0, 0.0), Bomb(true), Vel(1.0, 1.0))).unwrap();
    let after = w.spawn((Pos(2.0, 0.0), Vel(2.0, 2.0))).unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.despawn(e)));
    assert!(outcome.is_err(), "the panic reaches the caller");
    w.assert_invariants();
    assert!(!w.is_alive(e), "the handle is freed");
    assert_eq!(w.len(), 2);
    assert_eq!((w.get::<Pos>(after), w.get::<Vel>(after)), (Some(&Pos(2.0, 0.0)), Some(&Vel(2.0, 2.0))));
    assert_eq!((w.get::<Pos>(before), w.has::<Bomb>(before)), (Some(&Pos(0.0, 0.0)), true));
    // The index comes back empty: no value of the old entity is left in any pool.
    let again = w.spawn((Name("again".into()),)).unwrap();
    assert_eq!(again.index(), e.index(), "the freed index is reused");
    assert!(!w.has::<Pos>(again) && !w.has::<Bomb>(again) && !w.has::<Vel>(again));
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

/// A batch despawn large enough to empty its pools on several threads (on a world set to two; a big batch splits
/// down to a pool each, a small one in two halves) leaves the world one thread leaves, also when a component's
/// `drop` panics: every target gone, every handle freed, the rest whole and in the same order, and the panic
/// reaches the caller.
fn a_big_batch_despawn_on_threads_is_whole(backend: Backend) {
    type Row = (Entity, Option<Pos>, Option<Vel>, bool, bool, Option<Name>);
    let run = |threads: usize, bomb: bool, count: usize| -> (Vec<Row>, Vec<Entity>) {
        let mut w = world(backend);
        w.set_threads(threads);
        let armed = count / 2 + 3;
        assert!(armed.is_multiple_of(3) && !armed.is_multiple_of(5) && armed < count, "the bomb is on a target");
        let all: Vec<Entity> = (0..count)
            .map(|k| match k % 3 {
                0 => w.spawn((Pos(k as f32, 0.0), Vel(0.0, 1.0), Bomb(bomb && k == armed))),
                1 => w.spawn((Pos(k as f32, 0.0), Red)),
                _ => w.spawn((Vel(k as f32, 0.0), Blue, Name(format!("{k}")))),
            })
            .map(Result::unwrap)
            .collect();
        let targets: Vec<Entity> = all.iter().enumerate().filter(|(k, _)| k % 5 != 0).map(|(_, &e)| e).collect();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let outcome =
            pool.install(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.despawn_batch(&targets))));
        assert_eq!(outcome.is_err(), bomb, "{threads} threads: the panic reaches the caller");
        if let Ok(despawned) = outcome {
            assert_eq!(despawned, targets.len());
        }
        w.assert_invariants();
        assert!(targets.iter().all(|&e| !w.is_alive(e)), "{threads} threads: every target is gone");
        assert!(!w.query::<(&Bomb,)>().iter().any(|(_, (b,))| b.0), "the armed bomb went with its entity");
        let mut rows: Vec<Row> = all
            .iter()
            .filter(|&&e| w.is_alive(e))
            .map(|&e| {
                let (pos, vel, name) = (w.get::<Pos>(e).copied(), w.get::<Vel>(e).copied(), w.get::<Name>(e).cloned());
                (e, pos, vel, w.has::<Red>(e), w.has::<Blue>(e), name)
            })
            .collect();
        rows.sort_by_key(|row| row.0);
        assert_eq!(rows.len(), all.len() - targets.len());
        // The order a pool or table walk sees is the one-thread removals' too.
        let order = w.query::<(&Vel,)>().iter().map(|(e, _)| e).collect();
        (rows, order)
    };
    for count in [3000, 18] {
        for bomb in [false, true] {
            assert_eq!(run(2, bomb, count), run(1, bomb, count), "{count} entities, bomb {bomb}");
        }
    }
}

/// A buffer whose despawns hold back the removals from the pools it does not put (`Red`, `Blue`, `Vel`; not
/// `Bomb`, which has drop glue), stopped by a `drop` that panics in a pool that is not held: the held pools still
/// lose every despawned entity's value, on one thread and on two.
fn a_panic_while_removals_are_held_releases_them(backend: Backend) {
    for threads in [1, 2] {
        let mut w = world(backend);
        w.set_threads(threads);
        let a = w.spawn((Pos(0.0, 0.0), Red, Vel(0.0, 1.0))).unwrap();
        let keep = w.spawn((Pos(1.0, 0.0), Blue, Red)).unwrap();
        let b = w.spawn((Blue, Bomb(true))).unwrap();
        let c = w.spawn((Red, Vel(0.0, 0.0))).unwrap();
        let mut commands = w.commands();
        commands.despawn(a);
        let s = commands.spawn((Pos(5.0, 5.0),)).unwrap();
        commands.insert(keep, Pos(2.0, 0.0));
        commands.despawn(b);
        commands.despawn(c);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let outcome = pool.install(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.apply_commands())));
        assert!(outcome.is_err(), "the panic reaches the caller");
        w.assert_invariants();
        assert!(w.is_alive(s) && !w.has::<Red>(s) && !w.has::<Vel>(s), "{threads} threads: s inherits nothing");
        assert_eq!(w.get::<Pos>(s), Some(&Pos(5.0, 5.0)));
        assert!(![a, b, c].iter().any(|&e| w.is_alive(e)), "the batch freed every target before the panic went on");
        assert_eq!((w.get::<Pos>(keep), w.has::<Blue>(keep), w.has::<Red>(keep)), (Some(&Pos(2.0, 0.0)), true, true));
        assert_eq!([w.count_of::<Red>(), w.count_of::<Blue>(), w.count_of::<Vel>()], [1, 1, 0]);
    }
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        a_panicking_component_drop_leaves_the_world_consistent,
        a_panicking_drop_in_a_single_despawn_finishes_it,
        clear_with_a_panicking_drop_leaves_no_value_behind,
        a_panic_while_applying_releases_every_reservation,
        a_panic_while_discarding_keeps_the_next_buffer_clean,
        a_panicking_resource_scope_keeps_the_resource,
        spawn_batch_survives_a_panicking_iterator,
        a_panicking_loop_keeps_what_it_recorded,
        a_big_batch_despawn_on_threads_is_whole,
        a_panic_while_removals_are_held_releases_them,
    }
}
