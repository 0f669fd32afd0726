//! Parallel query loops: the same world as the serial loops for every backend, thread count and piece size (odd
//! ones too, so a piece boundary that leaked into the result would show), shuffled pools, values folded in piece
//! order, commands equal to the serial loop's, and panics inside a piece that leave the world whole.

use std::panic::{catch_unwind, AssertUnwindSafe};
use swarm::ecs::{Backend, Changed, Entity, World};

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(i64);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Vel(i64);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Hp(i64);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tag(u32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Frozen;
#[derive(Clone, Copy, Debug, PartialEq)]
struct Spark(u64);

const THREADS: [usize; 5] = [1, 2, 3, 4, 8];
const PIECES: [usize; 4] = [1, 7, 333, 100_000];

fn world(backend: Backend) -> World {
    let mut world = World::with_capacity(20_000);
    world.set_backend(backend);
    for i in 0..3000i64 {
        let e = world.spawn((Pos(i), Vel(i % 7 - 3), Hp(i % 31))).unwrap();
        if i % 5 == 0 {
            world.insert(e, Frozen).unwrap();
        }
        if i % 3 == 0 {
            world.insert(e, Tag(i as u32)).unwrap();
        }
    }
    // Holes and a few despawned-and-reused indices, so pools differ in order.
    let all: Vec<Entity> = world.entities().iter().collect();
    for &e in all.iter().step_by(11) {
        world.despawn(e).unwrap();
    }
    for i in 0..200i64 {
        world.spawn((Pos(-i), Vel(1), Hp(5), Tag(7))).unwrap();
    }
    world
}

/// One entity as the tests compare it: handle bits, then each component (if it has it).
type Row = (u64, Option<i64>, Option<i64>, Option<i64>, Option<u32>, bool, Option<u64>);

/// Everything in the world, by handle.
fn state(world: &World) -> Vec<Row> {
    let mut out: Vec<_> = world
        .entities()
        .iter()
        .map(|e| {
            (
                e.to_bits(),
                world.get::<Pos>(e).map(|p| p.0),
                world.get::<Vel>(e).map(|v| v.0),
                world.get::<Hp>(e).map(|h| h.0),
                world.get::<Tag>(e).map(|t| t.0),
                world.get::<Frozen>(e).is_some(),
                world.get::<Spark>(e).map(|s| s.0),
            )
        })
        .collect();
    out.sort_unstable();
    out
}

/// A frame of loops of every walk: lock-step with and without a filter, a probing walk whose written term drives,
/// one that writes a probed pool, a read-only probe, commands with spawns that later commands name.
fn frame(world: &mut World, parallel: bool) {
    if parallel {
        world.query::<(&mut Pos, &Vel)>().without::<Frozen>().par_for_each(|_, (p, v)| p.0 += v.0);
        world
            .query::<(&mut Hp, Option<&Tag>)>()
            .par_for_each(|_, (hp, tag)| hp.0 += tag.map_or(1, |t| (t.0 % 3) as i64));
        world.query::<(&Tag, &mut Vel)>().par_for_each(|_, (tag, v)| v.0 = (v.0 + tag.0 as i64) % 5);
        world.query::<(&Pos, &Hp)>().par_for_each_with_commands(|e, (pos, hp), commands| act(e, pos, hp, commands));
    } else {
        world.query::<(&mut Pos, &Vel)>().without::<Frozen>().for_each(|_, (p, v)| p.0 += v.0);
        world.query::<(&mut Hp, Option<&Tag>)>().for_each(|_, (hp, tag)| hp.0 += tag.map_or(1, |t| (t.0 % 3) as i64));
        world.query::<(&Tag, &mut Vel)>().for_each(|_, (tag, v)| v.0 = (v.0 + tag.0 as i64) % 5);
        world.query::<(&Pos, &Hp)>().for_each_with_commands(|e, (pos, hp), commands| act(e, pos, hp, commands));
    }
    world.apply_commands();
}

fn act(e: Entity, pos: &Pos, hp: &Hp, commands: &mut swarm::ecs::Commands<'_>) {
    match (pos.0 + hp.0).rem_euclid(13) {
        0 => commands.despawn(e),
        1 => {
            let spark = commands.spawn((Spark(e.to_bits()), Pos(pos.0))).unwrap();
            commands.insert(spark, Hp(hp.0));
            commands.insert(e, Frozen);
        }
        2 => commands.remove::<Frozen>(e),
        3 => commands.insert(e, Tag(hp.0 as u32)),
        _ => {}
    }
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
}

#[test]
fn parallel_loops_give_the_serial_world_for_every_thread_count_and_piece_size() {
    let mut reference = world(Backend::SparseSet);
    for _ in 0..6 {
        frame(&mut reference, false);
    }
    let reference = state(&reference);
    assert!(reference.iter().any(|s| s.6.is_some()), "no spark spawned: the test would prove little");
    for backend in Backend::ALL {
        for threads in THREADS {
            for rows in PIECES {
                let mut world = world(backend);
                world.set_threads(threads);
                world.set_piece_rows(rows);
                pool(threads).install(|| {
                    for _ in 0..6 {
                        frame(&mut world, true);
                    }
                });
                assert_eq!(state(&world), reference, "{backend}, {threads} threads, {rows} rows a piece");
            }
        }
    }
}

/// Reverses every pool of a sparse-set world (each value keeps its entity), so loops visit in another order.
fn reverse_pools(world: &mut World) {
    fn reverse<T: swarm::ecs::Component>(world: &mut World) {
        let Some(pool) = world.sparse_set_mut::<T>() else { return };
        let n = pool.len();
        for i in 0..n / 2 {
            pool.swap_positions(i, n - 1 - i);
        }
    }
    reverse::<Pos>(world);
    reverse::<Vel>(world);
    reverse::<Hp>(world);
    reverse::<Tag>(world);
}

#[test]
fn shuffled_pools_and_parallel_pieces_give_the_same_world() {
    let mut reference = world(Backend::SparseSet);
    for _ in 0..4 {
        frame(&mut reference, false);
    }
    let reference = state(&reference);
    let mut world = world(Backend::SparseSet);
    world.set_piece_rows(13);
    pool(3).install(|| {
        for _ in 0..4 {
            reverse_pools(&mut world);
            frame(&mut world, true);
        }
    });
    assert_eq!(state(&world), reference);
}

#[test]
fn folded_values_come_in_piece_order() {
    for backend in Backend::ALL {
        let mut world = world(backend);
        let mut serial = Vec::new();
        world.query::<(&Pos, &Hp)>().with::<Tag>().for_each(|e, (p, h)| serial.push((e, p.0 + h.0)));
        for threads in [1, 2, 4] {
            for rows in [1, 7, 500] {
                world.set_piece_rows(rows);
                let mut pieces: Vec<Vec<(Entity, i64)>> = vec![vec![(Entity::from_bits(1 << 32).unwrap(), 0)]; 3]; // stale values
                pool(threads).install(|| {
                    world
                        .query::<(&Pos, &Hp)>()
                        .with::<Tag>()
                        .par_fold(&mut pieces, Vec::clear, |list, e, (p, h)| list.push((e, p.0 + h.0)))
                });
                assert_eq!(pieces.len(), serial.len().div_ceil(rows), "{backend}: one value per piece");
                assert!(pieces.iter().all(|piece| piece.len() <= rows));
                assert_eq!(pieces.concat(), serial, "{backend}, {threads} threads, {rows} rows");
                // By runs: the same pieces, the same values (a probed match comes as a run of one).
                let mut runs: Vec<Vec<(Entity, i64)>> = vec![Vec::new(); 1]; // stale value
                pool(threads).install(|| {
                    world.query::<(&Pos, &Hp)>().with::<Tag>().par_fold_runs(
                        &mut runs,
                        Vec::clear,
                        |list, entities, (positions, healths)| {
                            assert!(!entities.is_empty() && entities.len() <= rows);
                            assert_eq!((positions.len(), healths.len()), (entities.len(), entities.len()));
                            let rows = positions.iter().zip(healths.iter()).map(|(p, h)| p.0 + h.0);
                            list.extend(entities.iter().copied().zip(rows));
                        },
                    )
                });
                assert_eq!(runs, pieces, "{backend}, {threads} threads, {rows} rows: by runs");
            }
        }
        // A read-only fold through a shared world, on an empty query too.
        let shared = &world;
        let mut sums: Vec<i64> = Vec::new();
        pool(2).install(|| shared.query_ref::<&Hp>().par_fold(&mut sums, |s| *s = 0, |s, _, h| *s += h.0));
        let total: i64 = sums.iter().sum();
        let mut expected = 0;
        shared.query_ref::<&Hp>().for_each(|_, h| expected += h.0);
        assert_eq!(total, expected, "{backend}");
        shared.query_ref::<&Hp>().with::<Spark>().par_fold(&mut sums, |s| *s = 0, |s, _, h| *s += h.0);
        assert!(sums.is_empty(), "{backend}: no match, no piece");
    }
}

#[test]
fn the_command_buffer_equals_the_serial_loops() {
    // Applied on another world, the two buffers would differ only in deferred numbers and value slots; applied,
    // they give the same entities with the same handles.
    for backend in Backend::ALL {
        let mut serial = world(backend);
        serial.query::<(&Pos, &Hp)>().for_each_with_commands(|e, (p, h), c| act(e, p, h, c));
        let mut parallel = world(backend);
        parallel.set_piece_rows(5);
        pool(4).install(|| parallel.query::<(&Pos, &Hp)>().par_for_each_with_commands(|e, (p, h), c| act(e, p, h, c)));
        assert_eq!(parallel.commands().len(), serial.commands().len(), "{backend}");
        let (a, b) = (serial.apply_commands(), parallel.apply_commands());
        assert_eq!(a, b, "{backend}");
        assert!(a.applied > 100, "{backend}: {a:?}");
        assert_eq!(state(&parallel), state(&serial), "{backend}");
    }
}

#[test]
fn a_deferred_handle_from_before_the_loop_names_its_spawn_inside_it() {
    for backend in Backend::ALL {
        let mut world = world(backend);
        // A deferred spawn of an earlier loop in the same buffer, handed into the parallel loop.
        let mut first = None;
        world.query::<&Hp>().for_each_with_commands(|_, _, commands| {
            if first.is_none() {
                first = Some(commands.spawn((Spark(7),)).unwrap());
            }
        });
        let earlier = first.unwrap();
        world.set_piece_rows(5);
        pool(2).install(|| {
            world.query::<&Pos>().par_for_each_with_commands(|_, pos, commands| {
                if pos.0 % 100 == 0 {
                    let spark = commands.spawn((Spark(1),)).unwrap();
                    commands.insert(spark, Hp(1));
                }
                if pos.0 == 10 {
                    commands.insert(earlier, Hp(99));
                }
            })
        });
        let stats = world.apply_commands();
        assert_eq!(stats.skipped, 0, "{backend}: {stats:?}");
        let mut sparks = Vec::new();
        world.query::<(&Spark, &Hp)>().for_each(|_, (spark, hp)| sparks.push((spark.0, hp.0)));
        sparks.sort_unstable();
        assert_eq!(sparks.last(), Some(&(7, 99)), "{backend}: the earlier spawn got its value");
        assert!(sparks.len() > 20 && sparks[..sparks.len() - 1].iter().all(|&s| s == (1, 1)), "{backend}: {sparks:?}");
    }
}

#[test]
fn a_panic_in_a_piece_reaches_the_caller_and_leaves_the_world_whole() {
    for backend in Backend::ALL {
        let mut world = world(backend);
        world.set_piece_rows(64);
        let before = world.len();
        let outcome = pool(2).install(|| {
            catch_unwind(AssertUnwindSafe(|| {
                world.query::<(&Pos, &Hp)>().par_for_each_with_commands(|e, (pos, _), commands| {
                    commands.insert(e, Spark(1));
                    if pos.0 == 1500 {
                        panic!("piece trouble");
                    }
                })
            }))
        });
        let message = outcome.expect_err("the panic reaches the caller");
        assert_eq!(message.downcast_ref::<&str>(), Some(&"piece trouble"));
        // The pieces' commands joined the buffer: every one applies to a live entity.
        let recorded = world.commands().len();
        assert!(recorded > 0, "{backend}");
        let stats = world.apply_commands();
        assert_eq!((stats.applied as usize, stats.skipped), (recorded, 0), "{backend}");
        assert_eq!(world.len(), before);
        world.assert_invariants();
        // Writes through a panicking parallel loop leave every pool whole and usable.
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            pool(2).install(|| {
                world.query::<&mut Hp>().par_for_each(|_, hp| {
                    hp.0 += 1;
                    assert!(hp.0 != 20, "hp trouble");
                })
            })
        }));
        assert!(outcome.is_err());
        world.assert_invariants();
        let mut n = 0;
        world.query::<&mut Hp>().par_for_each(|_, hp| hp.0 += 0);
        world.query::<&Hp>().for_each(|_, _| n += 1);
        assert_eq!(n, before, "{backend}");
    }
}

/// A parallel loop over several archetype tables takes each table's piece buffers as it comes to it: a panic in
/// the first table's pieces, after a loop that used more buffers, must join only the pieces that were numbered.
#[test]
fn a_panic_in_the_first_pieces_joins_only_the_pieces_numbered() {
    for backend in Backend::ALL {
        let mut world = world(backend);
        world.set_piece_rows(16);
        pool(2).install(|| {
            world.query::<&Pos>().par_for_each_with_commands(|e, _, commands| commands.insert(e, Spark(0)))
        });
        let first = world.apply_commands();
        assert!(first.applied > 100, "{backend}");
        let outcome = pool(2).install(|| {
            catch_unwind(AssertUnwindSafe(|| {
                world.query::<&Pos>().par_for_each_with_commands(|e, _, commands| {
                    commands.insert(e, Spark(1));
                    panic!("early trouble");
                })
            }))
        });
        let message = outcome.expect_err("the panic reaches the caller");
        assert_eq!(message.downcast_ref::<&str>(), Some(&"early trouble"), "{backend}");
        let recorded = world.commands().len();
        let stats = world.apply_commands();
        assert_eq!((stats.applied as usize, stats.skipped), (recorded, 0), "{backend}");
        world.assert_invariants();
    }
}

#[test]
fn one_thread_runs_the_pieces_here() {
    let mut world = world(Backend::SparseSet);
    world.set_threads(1);
    world.set_piece_rows(10);
    let seen = std::sync::Mutex::new(std::collections::BTreeSet::new());
    pool(4).install(|| {
        world.query::<&Pos>().par_for_each(|_, _| {
            seen.lock().unwrap().insert(format!("{:?}", std::thread::current().id()));
        })
    });
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 1, "one thread ran every piece: {seen:?}");
}

/// Loops that hand deferred handles across pieces: the first spawns a spark per tenth row and keeps its handle
/// (by the row's position); the second, recording into the same buffer, gives each kept spark a velocity from
/// another row (most often another piece's) and spawns sparks of its own; after the loops the world's commands
/// give each kept spark a health. Returns the sparks with what they hold, after applying.
fn hand_over(world: &mut World, parallel: bool) -> Vec<(u64, Option<i64>, Option<i64>)> {
    let kept = std::sync::Mutex::new(std::collections::BTreeMap::new());
    let first = |_: Entity, pos: &Pos, commands: &mut swarm::ecs::Commands<'_>| {
        if pos.0 % 10 == 0 {
            let spark = commands.spawn((Spark(pos.0 as u64),)).unwrap();
            kept.lock().unwrap().insert(pos.0, spark);
        }
    };
    if parallel {
        world.query::<&Pos>().par_for_each_with_commands(first);
    } else {
        world.query::<&Pos>().for_each_with_commands(first);
    }
    let kept = kept.into_inner().unwrap();
    let second = |_: Entity, pos: &Pos, commands: &mut swarm::ecs::Commands<'_>| {
        if pos.0 % 10 == 5 {
            if let Some(&spark) = kept.get(&(pos.0 - 5)) {
                commands.insert(spark, Vel(pos.0));
            }
            commands.spawn((Spark(1_000_000 + pos.0 as u64),)).unwrap();
        }
    };
    if parallel {
        world.query::<&Pos>().par_for_each_with_commands(second);
    } else {
        world.query::<&Pos>().for_each_with_commands(second);
    }
    let mut commands = world.commands();
    for (&pos, &spark) in &kept {
        commands.insert(spark, Hp(pos));
    }
    let stats = world.apply_commands();
    assert_eq!(stats.skipped, 0, "{stats:?}");
    let mut sparks = Vec::new();
    world
        .query::<(&Spark, Option<&Vel>, Option<&Hp>)>()
        .for_each(|_, (s, v, h)| sparks.push((s.0, v.map(|v| v.0), h.map(|h| h.0))));
    sparks.sort_unstable();
    sparks
}

#[test]
fn deferred_handles_carried_across_pieces_name_the_serial_loops_spawns() {
    for backend in Backend::ALL {
        let mut serial = world(backend);
        let expected = hand_over(&mut serial, false);
        // Every kept spark got the velocity of the row five past it and the health of its own.
        let kept: Vec<_> = expected.iter().filter(|s| s.0 < 1_000_000).collect();
        assert!(kept.len() > 100, "{backend}");
        for &&(spark, vel, hp) in &kept {
            assert_eq!(hp, Some(spark as i64), "{backend}");
            assert!(vel.is_none() || vel == Some(spark as i64 + 5), "{backend}: {spark} {vel:?}");
        }
        assert!(kept.iter().filter(|s| s.1.is_some()).count() > 100, "{backend}");
        for threads in [1, 2, 3, 8] {
            for rows in [1, 2, 3, 64] {
                let mut world = world(backend);
                world.set_piece_rows(rows);
                let sparks = pool(threads).install(|| hand_over(&mut world, true));
                assert_eq!(sparks, expected, "{backend}, {threads} threads, {rows} rows a piece");
                assert_eq!(state(&world), state(&serial), "{backend}, {threads} threads, {rows} rows a piece");
                world.assert_invariants();
            }
        }
    }
}

#[test]
fn a_handle_kept_by_one_row_reaches_its_spark_from_a_later_piece() {
    // One thread: the pieces run in order, so the later row finds the handle the earlier one kept.
    for backend in Backend::ALL {
        for rows in [1, 2, 3, 64] {
            let mut world = World::new();
            world.set_backend(backend);
            for i in 0..200 {
                world.spawn((Pos(i),)).unwrap();
            }
            world.set_piece_rows(rows);
            world.set_threads(1);
            let kept = std::sync::Mutex::new(None);
            let visited = std::sync::atomic::AtomicUsize::new(0);
            world.query::<&Pos>().par_for_each_with_commands(|_, _, commands| {
                let k = visited.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if k == 3 {
                    *kept.lock().unwrap() = Some(commands.spawn((Spark(1),)).unwrap());
                }
                if k == 150 {
                    commands.spawn((Spark(2),)).unwrap();
                    let stored = kept.lock().unwrap().expect("the fourth row ran first");
                    commands.insert(stored, Vel(42));
                }
            });
            let stored = kept.into_inner().unwrap().unwrap();
            world.commands().insert(stored, Hp(7));
            world.apply_commands();
            let mut sparks = Vec::new();
            world
                .query::<(&Spark, Option<&Vel>, Option<&Hp>)>()
                .for_each(|_, (s, v, h)| sparks.push((s.0, v.copied(), h.copied())));
            sparks.sort_unstable_by_key(|s| s.0);
            assert_eq!(
                sparks,
                vec![(1, Some(Vel(42)), Some(Hp(7))), (2, None, None)],
                "{backend}, {rows} rows a piece"
            );
        }
    }
}

/// A list to visit: entries out of index order, entities named twice (apart and side by side), a stale handle whose
/// index lives again, an entity with `Hp` alone, entities with `Frozen`, each with an amount. `Pos`, `Vel` and `Hp`
/// stay packed alike (every entity with one of them but the last has all three), so a visit of them splits.
fn visit_list(world: &mut World) -> Vec<(Entity, i64)> {
    let all: Vec<Entity> = world.entities().iter().collect();
    let stale = all[40];
    world.despawn(stale).unwrap();
    let reborn = world.spawn((Pos(7), Vel(2), Hp(1))).unwrap();
    assert_eq!(reborn.index(), stale.index());
    let alone = world.spawn((Hp(3),)).unwrap();
    let mut list = vec![(alone, 4), (reborn, 5)];
    let mut x = 12345u64;
    for k in 0..2500i64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let e = all[(x >> 33) as usize % all.len()];
        list.push((e, k % 17 - 8));
        if k % 97 == 0 {
            list.push((e, 3));
        }
    }
    list.push((stale, 100));
    list.push((all[5], 9));
    list
}

/// The list visit's body: order matters (a value visited twice ends as the list's order makes it).
fn visit(&(_, amount): &(Entity, i64), (pos, vel): (&mut Pos, &Vel)) {
    pos.0 = pos.0.wrapping_mul(3).wrapping_add(amount * vel.0);
}

/// A second body, through a change filter.
fn bump(&(_, amount): &(Entity, i64), (vel, pos): (&mut Vel, &Pos)) {
    vel.0 = vel.0.wrapping_mul(5).wrapping_add(amount + pos.0 % 7);
}

/// What change detection says of `Hp`: the entities whose value changed.
fn changed_hp(world: &World) -> Vec<u64> {
    let tracker = world.tracker::<Hp>();
    world.entities().iter().filter(|&e| tracker.is_changed(e)).map(Entity::to_bits).collect()
}

#[test]
fn a_parallel_list_visit_gives_the_serial_world_for_every_thread_count() {
    let run = |backend: Backend, threads: usize, rows: usize, parallel: bool, shuffle: bool| {
        let mut world = world(backend);
        world.track::<Hp>();
        let list = visit_list(&mut world);
        world.clear_trackers();
        world.set_threads(threads);
        world.set_piece_rows(rows);
        if shuffle {
            // Positions and velocities packed in different orders: not a lock-step pair.
            let n = world.sparse_set_mut::<Vel>().unwrap().len();
            for i in 0..n / 2 {
                world.sparse_set_mut::<Vel>().unwrap().swap_positions(i, n - 1 - i);
            }
        }
        pool(threads).install(|| {
            if parallel {
                world.query::<(&mut Pos, &Vel)>().without::<Frozen>().par_for_each_of(&list, visit);
                world.query::<&mut Hp>().par_for_each_of(&list, |&(_, amount), hp| hp.0 = hp.0 * 2 - amount);
                // A change filter: the entries whose `Hp` the visit above changed (stamped before it, so all).
                world.query::<(&mut Vel, &Pos)>().filter::<Changed<Hp>>().par_for_each_of(&list, bump);
            } else {
                world.query::<(&mut Pos, &Vel)>().without::<Frozen>().for_each_of(&list, visit);
                world.query::<&mut Hp>().for_each_of(&list, |&(_, amount), hp| hp.0 = hp.0 * 2 - amount);
                world.query::<(&mut Vel, &Pos)>().filter::<Changed<Hp>>().for_each_of(&list, bump);
            }
        });
        world.assert_invariants();
        (state(&world), changed_hp(&world))
    };
    let reference = run(Backend::SparseSet, 1, 2048, false, false);
    assert!(reference.1.len() > 1000, "the list should reach most entities: {}", reference.1.len());
    for backend in Backend::ALL {
        for threads in THREADS {
            for rows in [1, 7, 100_000] {
                let got = run(backend, threads, rows, true, false);
                assert!(got == reference, "{backend}, {threads} threads, {rows} rows a piece");
            }
        }
    }
    for threads in [2, 3] {
        assert!(run(Backend::SparseSet, threads, 7, true, true) == reference, "{threads} threads, shuffled");
    }
}

/// The stamps a list visit makes after itself (no change filter) are the serial visit's: through a prepared
/// query state too, and with exact tracking, where a value written back unchanged is no change.
#[test]
fn a_parallel_list_visit_stamps_what_the_serial_one_stamps() {
    // Odd amounts change the value; even ones write it back as it was.
    let heal = |&(_, amount): &(Entity, i64), hp: &mut Hp| hp.0 += amount % 2;
    let run = |backend: Backend, threads: usize, rows: usize, exact: bool, via_state: bool, parallel: bool| {
        let mut world = world(backend);
        match exact {
            true => world.track_exact::<Hp>(),
            false => world.track::<Hp>(),
        }
        let list = visit_list(&mut world);
        world.clear_trackers();
        world.set_threads(threads);
        world.set_piece_rows(rows);
        pool(threads).install(|| match (via_state, parallel) {
            (true, true) => {
                let mut state = swarm::ecs::QueryState::<&mut Hp>::new(&mut world).unwrap();
                state.query(&mut world).par_for_each_of(&list, heal);
            }
            (false, true) => world.query::<&mut Hp>().par_for_each_of(&list, heal),
            (_, false) => world.query::<&mut Hp>().for_each_of(&list, heal),
        });
        world.assert_invariants();
        (state(&world), changed_hp(&world), world.tracker::<Hp>().changed_indices())
    };
    for exact in [false, true] {
        let reference = run(Backend::SparseSet, 1, 2048, exact, false, false);
        let changed = reference.1.len();
        match exact {
            // Every live listed entry's value was handed out; about half of them really changed.
            false => assert!(changed > 1000, "{changed}"),
            true => assert!(changed > 300 && changed < run(Backend::SparseSet, 1, 2048, false, false, false).1.len()),
        }
        for backend in Backend::ALL {
            for threads in [1, 2, 4] {
                for rows in [1, 2048] {
                    for via_state in [false, true] {
                        let got = run(backend, threads, rows, exact, via_state, true);
                        let case = format!("{backend}, {threads} threads, {rows} rows, exact {exact}, {via_state}");
                        assert!(got == reference, "{case}");
                    }
                }
            }
        }
    }
}

/// A refused list visit says why and stamps nothing.
#[test]
fn a_refused_parallel_list_visit_panics_and_stamps_nothing() {
    let mut world = world(Backend::SparseSet);
    world.track::<Hp>();
    let list = visit_list(&mut world);
    world.clear_trackers();
    world.set_threads(2);
    world.set_piece_rows(1);
    let panic = pool(2)
        .install(|| {
            catch_unwind(AssertUnwindSafe(|| {
                world.query::<(&mut Hp, &Hp)>().par_for_each_of(&list, |_, (hp, _)| hp.0 += 1)
            }))
        })
        .unwrap_err();
    let message = panic.downcast_ref::<String>().expect("a message");
    assert!(message.contains("Hp"), "{message}");
    assert!(changed_hp(&world).is_empty());
    world.assert_invariants();
}

/// The parallel list visit really splits: a panic in one part of the packed rows leaves the others' entries
/// visited whole (on one thread, and where the visit does not split, it stops at the panic), and the world whole.
#[test]
fn a_panic_in_a_parallel_list_visit_stops_only_its_own_part() {
    for (backend, threads, parts) in Backend::ALL
        .into_iter()
        .flat_map(|backend| [(1, 1), (2, 2), (3, 4), (4, 4)].map(|(threads, parts)| (backend, threads, parts)))
    {
        // Only sparse sets packed alike split; elsewhere the visit runs on this thread.
        let parts = if backend == Backend::SparseSet { parts } else { 1 };
        let mut world = World::new();
        world.set_backend(backend);
        world.set_threads(threads);
        world.set_piece_rows(16);
        // Fresh spawns: packed in index order (two pools alike), so the parts are runs of the list below.
        let all: Vec<Entity> = (0..1000i64).map(|i| world.spawn((Hp(i), Pos(i))).unwrap()).collect();
        world.track::<Hp>();
        world.clear_trackers();
        let outcome = pool(threads).install(|| {
            catch_unwind(AssertUnwindSafe(|| {
                world.query::<(&mut Hp, &Pos)>().without::<Frozen>().par_for_each_of(&all, |_, (hp, pos)| {
                    assert!(pos.0 != 0, "list trouble");
                    hp.0 = -1;
                })
            }))
        });
        assert!(outcome.is_err(), "{backend}, {threads} threads");
        world.assert_invariants();
        let written: Vec<bool> = all.iter().map(|&e| world.get::<Hp>(e).unwrap().0 == -1).collect();
        // The first part stopped at its first entry; every other part ran to its end.
        let part = all.len() / parts;
        let expected: Vec<bool> = (0..all.len()).map(|k| k >= part).collect();
        assert_eq!(written, expected, "{backend}, {threads} threads");
        // Stamped after the visit, panic or not: where it splits, every entry the first pass found (it runs whole
        // before any part visits); on this thread, the entries handed out, up to the one that panicked.
        let changed: Vec<bool> = all.iter().map(|&e| world.tracker::<Hp>().is_changed(e)).collect();
        let stamped: Vec<bool> = (0..all.len()).map(|k| parts > 1 || k == 0).collect();
        assert_eq!(changed, stamped, "{backend}, {threads} threads");
    }
}
