//! Lifecycle events: what fires, when, in which order, with which value, and what a handler's commands do.

use crate::{world, Blue, Name, Pos, Red, Vel};
use std::sync::{Arc, Mutex};
use swarm::ecs::{Backend, Entity, TooManyRounds, World};

#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Spawn(Entity),
    /// The entity and the `Pos` it still had.
    Despawn(Entity, Option<Pos>),
    InsertName(Entity, String),
    RemoveVel(Entity, Vel),
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// Registers a handler of every kind that writes to the returned log.
fn watch(world: &mut World) -> Log {
    let log: Log = Arc::default();
    let l = log.clone();
    world.on_spawn(move |_, e, _| l.lock().unwrap().push(Seen::Spawn(e)));
    let l = log.clone();
    world.on_despawn(move |w, e, _| l.lock().unwrap().push(Seen::Despawn(e, w.get::<Pos>(e).copied())));
    let l = log.clone();
    world.on_insert::<Name>(move |_, e, name, _| l.lock().unwrap().push(Seen::InsertName(e, name.0.clone())));
    let l = log.clone();
    world.on_remove::<Vel>(move |_, e, vel, _| l.lock().unwrap().push(Seen::RemoveVel(e, *vel)));
    log
}

fn taken(log: &Log) -> Vec<Seen> {
    std::mem::take(&mut *log.lock().unwrap())
}

/// Direct operations fire as they go, with the value readable where there is one.
fn direct_operations_fire_with_their_values(backend: Backend) {
    let mut w = world(backend);
    let log = watch(&mut w);
    let e = w.spawn((Pos(1.0, 2.0), Vel(3.0, 4.0))).unwrap();
    w.insert(e, Name("a".into())).unwrap();
    w.insert(e, Name("b".into())).unwrap(); // a replacement fires too
    assert_eq!(w.remove::<Vel>(e), Ok(Vel(3.0, 4.0)));
    assert!(w.remove::<Vel>(e).is_err()); // nothing to remove: no event
    w.despawn(e).unwrap();
    assert_eq!(
        taken(&log),
        [
            Seen::Spawn(e),
            Seen::InsertName(e, "a".into()),
            Seen::InsertName(e, "b".into()),
            Seen::RemoveVel(e, Vel(3.0, 4.0)),
            Seen::Despawn(e, Some(Pos(1.0, 2.0))),
        ]
    );
    // Bundles fire one event per component, batches one per entity.
    let f = w.spawn(()).unwrap();
    w.insert_bundle(f, (Vel(1.0, 1.0), Name("c".into()))).unwrap();
    w.remove_bundle::<(Vel, Name)>(f).unwrap();
    let batch: Vec<Entity> = {
        let mut out = Vec::new();
        w.spawn_batch_into((0..3).map(|i| (Pos(i as f32, 0.0),)), &mut out).unwrap();
        out
    };
    assert_eq!(w.insert_many(batch.iter().map(|&e| (e, Name("m".into())))), 0);
    assert_eq!(w.despawn_batch(&batch), 3);
    let mut expected = vec![Seen::Spawn(f), Seen::InsertName(f, "c".into()), Seen::RemoveVel(f, Vel(1.0, 1.0))];
    expected.extend(batch.iter().map(|&e| Seen::Spawn(e)));
    expected.extend(batch.iter().map(|&e| Seen::InsertName(e, "m".into())));
    expected.extend(batch.iter().map(|&e| Seen::Despawn(e, Some(Pos(e_pos(&batch, e), 0.0)))));
    assert_eq!(taken(&log), expected);
    w.assert_invariants();
}

fn e_pos(batch: &[Entity], e: Entity) -> f32 {
    batch.iter().position(|&b| b == e).unwrap() as f32
}

/// The events of one command buffer with query-loop commands; the same on every backend, and with the pools
/// shuffled first (a storage order that is not the spawn order).
fn buffered_log(backend: Backend, shuffle: bool, threads: usize) -> Vec<Seen> {
    let mut w = world(backend);
    let all: Vec<Entity> = (0..300).map(|i| w.spawn((Pos(i as f32, 0.0), Vel(i as f32, 1.0))).unwrap()).collect();
    for e in all.iter().step_by(5) {
        w.despawn(*e).unwrap();
    }
    if shuffle && backend == Backend::SparseSet {
        let pool = w.sparse_set_mut::<Pos>().unwrap();
        for i in 0..pool.len() / 2 {
            let j = pool.len() - 1 - i;
            pool.swap_positions(i, j * 7 % pool.len());
        }
    }
    let log = watch(&mut w);
    w.set_threads(threads);
    w.set_piece_rows(16);
    w.query::<(&Pos, &Vel)>().par_for_each_with_commands(|e, (p, _), c| match p.0 as u32 % 4 {
        0 => c.despawn(e),
        1 => c.insert(e, Name(format!("{}", p.0))),
        2 => c.remove::<Vel>(e),
        _ => {
            let child = c.spawn((Pos(p.0, 1.0),)).unwrap();
            c.insert(child, Name("child".into()));
        }
    });
    w.apply_commands();
    w.assert_invariants();
    taken(&log)
}

fn buffered_events_fire_in_the_keyed_order_everywhere(backend: Backend) {
    let reference = buffered_log(Backend::SparseSet, false, 1);
    assert!(reference.len() > 200, "the scenario fires events of every kind");
    assert!(reference.iter().any(|s| matches!(s, Seen::Despawn(..))));
    assert!(reference.iter().any(|s| matches!(s, Seen::RemoveVel(..))));
    for threads in [1, 2, 3, 8] {
        assert_eq!(buffered_log(backend, false, threads), reference, "{threads} threads");
        assert_eq!(buffered_log(backend, true, threads), reference, "shuffled, {threads} threads");
    }
}

/// Handlers' commands apply after the changes that caused them, in the same apply, and round after round.
fn follow_ups_apply_in_the_same_pass_round_after_round(backend: Backend) {
    let mut w = world(backend);
    // A despawned `Pos` leaves a `Red` marker with its x; a `Red` marker spawned with x > 0 asks for the next one.
    w.on_despawn(|w, e, c| {
        if let Some(p) = w.get::<Pos>(e) {
            c.spawn((Red, Vel(p.0, 0.0))).unwrap();
        }
    });
    w.on_spawn(|w, e, c| {
        if let (Some(_), Some(v)) = (w.get::<Red>(e), w.get::<Vel>(e)) {
            if v.0 > 0.0 {
                c.spawn((Red, Vel(v.0 - 1.0, 0.0))).unwrap();
            }
        }
    });
    let e = w.spawn((Pos(3.0, 0.0),)).unwrap();
    w.commands().despawn(e);
    let stats = w.apply_commands();
    // The despawn, then four spawns in four rounds: x = 3, 2, 1, 0.
    assert_eq!(stats.applied, 5);
    let mut xs: Vec<f32> = Vec::new();
    w.query_ref::<(&Red, &Vel)>().for_each(|_, (_, v)| xs.push(v.0));
    xs.sort_by(f32::total_cmp);
    assert_eq!(xs, [0.0, 1.0, 2.0, 3.0]);
    // A direct operation applies them before it returns.
    let f = w.spawn((Pos(1.0, 0.0),)).unwrap();
    w.despawn(f).unwrap();
    assert_eq!(w.count_of::<Red>(), 6);
    assert!(!w.has_pending_commands());
    w.assert_invariants();
}

/// Handlers that keep answering each other stop at the round limit with a clear error; what applied stays.
fn endless_handlers_stop_at_the_round_limit(backend: Backend) {
    let mut w = world(backend);
    w.set_event_rounds(10);
    w.on_spawn(|_, _, c| {
        c.spawn((Red,)).unwrap();
    });
    w.commands().spawn((Red,)).unwrap();
    let error = w.try_apply_commands().unwrap_err();
    assert_eq!(error, TooManyRounds { rounds: 10, dropped: 1 });
    assert!(error.to_string().contains("10 rounds"), "{error}");
    assert_eq!(w.count_of::<Red>(), 11); // the buffer's spawn and ten rounds'
    assert!(!w.has_pending_commands());
    w.assert_invariants();
}

/// A direct operation past the round limit panics with the error (after dropping what is left).
fn a_direct_operation_past_the_round_limit_panics(backend: Backend) {
    let mut w = world(backend);
    w.set_event_rounds(3);
    w.on_spawn(|_, _, c| {
        c.spawn((Red,)).unwrap();
    });
    w.spawn((Red,)).unwrap();
}

/// A panicking handler: the panic reaches the caller, the world is consistent, and the next apply starts clean.
fn a_panicking_handler_leaves_the_world_consistent(backend: Backend) {
    let mut w = world(backend);
    let all: Vec<Entity> = (0..20).map(|i| w.spawn((Pos(i as f32, 0.0),)).unwrap()).collect();
    let bad = all[7];
    w.on_despawn(move |_, e, c| {
        c.spawn((Red,)).unwrap();
        assert_ne!(e, bad, "the handler refuses this one");
    });
    for &e in &all {
        w.commands().despawn(e);
    }
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.apply_commands()));
    assert!(panic.is_err());
    w.assert_invariants();
    assert!(!w.has_pending_commands(), "the buffer and the handlers' commands were dropped");
    assert!(w.is_alive(bad));
    assert_eq!(w.count_of::<Red>(), 0, "no follow-up of an unfinished buffer applied");
    // Later changes work and fire.
    w.despawn(all[19]).unwrap();
    assert_eq!(w.count_of::<Red>(), 1);
    w.assert_invariants();
}

/// A handler that panics inside a direct operation: what the operation's handlers recorded is dropped, not left
/// for the next operation, and later handlers' commands still apply (direct and buffered).
fn a_panic_in_a_direct_operation_leaves_nothing_behind(backend: Backend) {
    let mut w = world(backend);
    w.on_despawn(|_, _, c| {
        c.spawn((Red,)).unwrap();
    });
    w.on_spawn(|w, e, _| assert!(w.get::<Name>(e).is_none_or(|n| n.0 != "boom"), "refused"));
    w.on_insert::<Vel>(|_, e, _, c| c.insert(e, Name("marked".into())));
    let e = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let boom = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.spawn((Name("boom".into()),))));
    assert!(boom.is_err());
    w.despawn(e).unwrap();
    assert_eq!(w.count_of::<Red>(), 1, "the despawn's handler ran and its spawn applied");
    let f = w.spawn(()).unwrap();
    w.commands().insert(f, Vel(1.0, 1.0));
    w.apply_commands();
    assert_eq!(w.get::<Name>(f), Some(&Name("marked".into())), "rounds still run after the panic");
    // A panic in a handler of a batch drops what the batch's handlers recorded.
    let g = w.spawn(()).unwrap();
    let batch = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        w.spawn_batch([(Name("ok".into()),), (Name("boom".into()),)]).unwrap();
    }));
    assert!(batch.is_err());
    w.insert(g, Vel(0.0, 0.0)).unwrap();
    assert_eq!(w.get::<Name>(g), Some(&Name("marked".into())));
    assert!(!w.has_pending_commands());
    w.assert_invariants();
}

/// A batch's handlers' commands apply once the whole batch is in: an insert handler that despawns the next item's
/// entity does not make that item skip, as through the command buffer.
fn a_batch_applies_its_handlers_commands_at_its_end(backend: Backend) {
    let mut w = world(backend);
    let [a, b] = [(); 2].map(|_| w.spawn(()).unwrap());
    w.on_insert::<Vel>(move |_, e, _, c| {
        if e == a {
            c.despawn(b);
        }
    });
    assert_eq!(w.insert_many([(a, Vel(0.0, 0.0)), (b, Vel(1.0, 1.0))]), 0);
    assert!(w.is_alive(a) && !w.is_alive(b));
}

/// A handler taken off no longer fires; the others keep their order.
fn handlers_run_in_registration_order_and_come_off(backend: Backend) {
    let mut w = world(backend);
    let order: Arc<Mutex<Vec<u8>>> = Arc::default();
    let ids: Vec<_> = (0..3u8)
        .map(|k| {
            let o = order.clone();
            w.on_spawn(move |_, _, _| o.lock().unwrap().push(k))
        })
        .collect();
    w.spawn(()).unwrap();
    assert!(w.remove_handler(ids[1]));
    assert!(!w.remove_handler(ids[1]));
    w.spawn(()).unwrap();
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 0, 2]);
    assert_eq!(w.events_fired(), 2);
}

/// Handlers stay with the world when a snapshot replaces its contents (and its registry, which numbers the types
/// its own way): a typed handler still fires for its type.
fn handlers_survive_a_loaded_snapshot(backend: Backend) {
    use swarm::ecs::{Format, SnapshotSchema};
    let mut saved = world(backend);
    let e = saved.spawn((Vel(1.0, 1.0), Pos(2.0, 2.0))).unwrap();
    let schema = SnapshotSchema::new().component::<Vel>("vel").component::<Pos>("pos");
    let bytes = schema.save(&saved, Format::Binary).unwrap();
    // Registered before the load, in another order than the file's.
    let mut w = world(backend);
    let log = watch(&mut w);
    schema.load_into(&mut w, &bytes, None).unwrap();
    w.insert(e, Name("after".into())).unwrap();
    assert_eq!(w.remove::<Vel>(e), Ok(Vel(1.0, 1.0)));
    assert_eq!(taken(&log), [Seen::InsertName(e, "after".into()), Seen::RemoveVel(e, Vel(1.0, 1.0))]);
}

/// What [`parallel_run`] returns: the spawns' log, each entity's children, the deferred handles the calls got (by
/// the entity's x), and the first run's order.
type RunSeen = (Vec<(f32, f32)>, Vec<Vec<Entity>>, Vec<(u32, u64)>, Vec<Entity>);

/// Applies, on a pool of `threads`, a buffer of two runs of `Red` inserts (300 in a shuffled order, a despawn,
/// then 90) whose parallel handler spawns a child of the entity, with what it saw: the `Red` count and the
/// entity's x. Returns the spawns' events in the order they applied (the child's `Vel`), each entity's children
/// and the handles the calls were handed.
fn parallel_run(backend: Backend, threads: usize) -> RunSeen {
    let mut w = world(backend);
    let all: Vec<Entity> = (0..400).map(|i| w.spawn((Pos(i as f32, 0.0),)).unwrap()).collect();
    let log: Arc<Mutex<Vec<(f32, f32)>>> = Arc::default();
    let handed: Arc<Mutex<Vec<(u32, u64)>>> = Arc::default();
    let h = handed.clone();
    let l = log.clone();
    w.on_spawn(move |w, e, _| {
        if let Some(v) = w.get::<Vel>(e) {
            l.lock().unwrap().push((v.0, v.1));
        }
    });
    w.on_insert_parallel::<Red>(move |w, e, _, c| {
        let x = w.get::<Pos>(e).expect("a fighter of the run").0;
        // A deferred handle, named again by the next command of the same call.
        let child = c.spawn((Vel(w.count_of::<Red>() as f32, x),)).unwrap();
        c.add_child(e, child);
        h.lock().unwrap().push((x as u32, child.to_bits()));
    });
    let mut order = all[..300].to_vec();
    for i in 0..order.len() {
        order.swap(i, (i * 7919 + 13) % 300);
    }
    let mut c = w.commands();
    order.iter().for_each(|&e| c.insert(e, Red));
    c.despawn(all[399]);
    all[300..390].iter().for_each(|&e| c.insert(e, Red));
    w.set_threads(threads);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let stats = pool.install(|| w.apply_commands());
    assert_eq!(stats.skipped, 0);
    w.assert_invariants();
    let log = std::mem::take(&mut *log.lock().unwrap());
    let children = all[..390].iter().map(|&e| w.children(e).to_vec()).collect();
    let mut handed = std::mem::take(&mut *handed.lock().unwrap());
    handed.sort_unstable();
    (log, children, handed, order)
}

/// Parallel insert handlers fire once their run is in (each call sees all of it), record in the run's order, and
/// give the same world on every thread count; a deferred handle a call made names its spawn.
fn parallel_insert_handlers_fire_after_their_run_in_its_order(backend: Backend) {
    let (log, children, handed, order) = parallel_run(backend, 1);
    let x = |e: &Entity| e.index() as f32; // spawned first, in order: index i has x = i
    let mut expected: Vec<(f32, f32)> = order.iter().map(|e| (300.0, x(e))).collect();
    expected.extend((300..390).map(|i| (390.0, i as f32)));
    assert_eq!(log, expected, "the first run's calls saw 300 inserts, the second's 390; in the runs' orders");
    assert!(children.iter().all(|kids| kids.len() == 1), "each call's child was linked to its entity");
    assert_eq!(handed.len(), 390);
    for threads in [2, 3, 8] {
        let (other_log, other_children, other_handed, _) = parallel_run(backend, threads);
        assert_eq!(other_log, log, "{threads} threads");
        assert_eq!(other_children, children, "{threads} threads: the same entities");
        assert_eq!(other_handed, handed, "{threads} threads: the calls were handed the same deferred handles");
    }
}

/// A serial insert handler of the type makes every insert fire at once again (the parallel one sees each insert
/// alone); taken off, runs are held again. A direct insert fires at once.
fn a_serial_insert_handler_keeps_inserts_unheld(backend: Backend) {
    let mut w = world(backend);
    let seen: Arc<Mutex<Vec<usize>>> = Arc::default();
    let s = seen.clone();
    w.on_insert_parallel::<Red>(move |w, _, _, _| s.lock().unwrap().push(w.count_of::<Red>()));
    let serial = w.on_insert::<Red>(|_, _, _, _| {});
    let all: Vec<Entity> = (0..200).map(|_| w.spawn(()).unwrap()).collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    w.set_threads(2);
    let mut c = w.commands();
    all[..100].iter().for_each(|&e| c.insert(e, Red));
    pool.install(|| w.apply_commands());
    assert_eq!(std::mem::take(&mut *seen.lock().unwrap()), (1..=100).collect::<Vec<_>>());
    assert!(w.remove_handler(serial));
    let mut c = w.commands();
    all[100..].iter().for_each(|&e| c.insert(e, Red));
    pool.install(|| w.apply_commands());
    assert_eq!(std::mem::take(&mut *seen.lock().unwrap()), vec![200; 100], "each call saw the whole run");
    let e = w.spawn(()).unwrap();
    w.insert(e, Red).unwrap();
    assert_eq!(*seen.lock().unwrap(), [201], "a direct insert fires at once");
    assert_eq!(w.events_fired(), 201);
}

/// A parallel handler that panics in a piece on another thread: the panic reaches the caller once every piece
/// has joined, the run's inserts stay, nothing the handlers recorded applies, and the world works on.
fn a_panicking_parallel_handler_leaves_the_world_consistent(backend: Backend) {
    let mut w = world(backend);
    let all: Vec<Entity> = (0..300).map(|_| w.spawn(()).unwrap()).collect();
    let (first, bad) = (all[0], all[250]);
    // The first piece's first call (on the applying thread) waits for the call that panics, in the fourth piece:
    // that one can only run on the pool's other thread, and both pieces run at once.
    let meet = Arc::new(std::sync::Barrier::new(2));
    let id = w.on_insert_parallel::<Red>(move |_, e, _, c| {
        c.spawn((Blue,)).unwrap();
        if e == first || e == bad {
            meet.wait();
        }
        assert_ne!(e, bad, "the handler refuses this one");
    });
    let mut c = w.commands();
    all.iter().for_each(|&e| c.insert(e, Red));
    w.set_threads(2);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.install(|| w.apply_commands())));
    assert!(panic.is_err());
    w.assert_invariants();
    assert!(!w.has_pending_commands(), "the handlers' commands were dropped");
    assert_eq!((w.count_of::<Red>(), w.count_of::<Blue>()), (300, 0));
    assert!(w.remove_handler(id));
    w.on_insert_parallel::<Name>(|_, _, _, c| {
        c.spawn((Blue,)).unwrap();
    });
    let mut c = w.commands();
    all.iter().for_each(|&e| c.insert(e, Name("ok".into())));
    pool.install(|| w.apply_commands());
    assert_eq!(w.count_of::<Blue>(), 300);
    w.assert_invariants();
}

mod every_backend {
    use crate::backends;
    on_every_backend!(
        direct_operations_fire_with_their_values,
        buffered_events_fire_in_the_keyed_order_everywhere,
        follow_ups_apply_in_the_same_pass_round_after_round,
        endless_handlers_stop_at_the_round_limit,
        a_panicking_handler_leaves_the_world_consistent,
        handlers_run_in_registration_order_and_come_off,
        handlers_survive_a_loaded_snapshot,
        a_panic_in_a_direct_operation_leaves_nothing_behind,
        a_batch_applies_its_handlers_commands_at_its_end,
        parallel_insert_handlers_fire_after_their_run_in_its_order,
        a_serial_insert_handler_keeps_inserts_unheld,
        a_panicking_parallel_handler_leaves_the_world_consistent,
    );
    panics_on_every_backend!(a_direct_operation_past_the_round_limit_panics => "kept recording commands for 3 rounds");
}
