//! Function systems and the parallel schedule: refused and allowed parameter shapes, the batches formed, the same
//! world for every thread count and every backend (and equal to the same logic written as exclusive systems),
//! commands joined in the schedule's order, and panics that leave the world whole.

use std::panic::{catch_unwind, AssertUnwindSafe};
use swarm::app::schedule::AccessError;
use swarm::app::{App, Commands, Local, OrderSystems, Query, Res, ResMut, Stage};
use swarm::ecs::{Backend, Entity, Format, SnapshotSchema, With, Without, World};

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Pos(i64);
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Vel(i64);
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Hp(i64);
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Frozen;
#[derive(Clone, Copy, Debug, PartialEq)]
struct Spark(u32);

/// Frame-wide settings, read by several systems at once.
struct Rules {
    wall: i64,
}

#[derive(Default)]
struct Healed(i64);
#[derive(Default)]
struct Counted(Vec<usize>);

fn world(backend: Backend) -> World {
    let mut world = World::with_capacity(4096);
    world.set_backend(backend);
    // Small pieces, so a world of 300 runs its frames on the pool (and its loops in several pieces).
    world.set_piece_rows(16);
    for i in 0..300i64 {
        let e = world.spawn((Pos(i), Vel(i % 7 - 3), Hp(i % 31))).unwrap();
        if i % 5 == 0 {
            world.insert(e, Frozen).unwrap();
        }
    }
    world.insert_resource(Rules { wall: 400 });
    world.insert_resource(Healed::default());
    world.insert_resource(Counted::default());
    world
}

// The systems, as functions of parameters.

fn drift(rules: Res<Rules>, mut q: Query<(&mut Pos, &Vel), Without<Frozen>>) {
    q.for_each(|_, (pos, vel)| pos.0 = (pos.0 + vel.0).rem_euclid(rules.wall));
}

fn heal(mut q: Query<&mut Hp>, mut healed: ResMut<Healed>) {
    q.for_each(|_, hp| {
        hp.0 -= 1;
        healed.0 += hp.0;
    });
}

fn sparks(rules: Res<Rules>, mut q: Query<(&Pos, &Hp)>, mut commands: Commands) {
    q.for_each_with_commands(&mut commands, |e, (pos, hp), commands| {
        if hp.0 < 0 {
            commands.despawn(e);
            let _ = commands.spawn((Spark(pos.0 as u32), Pos(rules.wall - pos.0)));
        }
    });
}

fn fade(mut q: Query<&mut Spark>, mut commands: Commands) {
    q.for_each_with_commands(&mut commands, |e, spark, commands| {
        spark.0 /= 2;
        if spark.0 == 0 {
            commands.despawn(e);
        }
    });
}

fn count(mut q: Query<&Pos, Without<Spark>>, mut counted: ResMut<Counted>, mut frames: Local<usize>) {
    *frames += 1;
    let n = q.count();
    counted.0.push(n * 1000 + *frames);
}

// The same logic as exclusive systems: what the serial order gives.

fn drift_x(world: &mut World) {
    let wall = world.resource::<Rules>().wall;
    world.query::<(&mut Pos, &Vel)>().without::<Frozen>().for_each(|_, (pos, vel)| {
        pos.0 = (pos.0 + vel.0).rem_euclid(wall);
    });
}

fn heal_x(world: &mut World) {
    let mut sum = 0;
    world.query::<&mut Hp>().for_each(|_, hp| {
        hp.0 -= 1;
        sum += hp.0;
    });
    world.resource_mut::<Healed>().0 += sum;
}

fn sparks_x(world: &mut World) {
    let wall = world.resource::<Rules>().wall;
    world.query::<(&Pos, &Hp)>().for_each_with_commands(|e, (pos, hp), commands| {
        if hp.0 < 0 {
            commands.despawn(e);
            let _ = commands.spawn((Spark(pos.0 as u32), Pos(wall - pos.0)));
        }
    });
}

fn fade_x(world: &mut World) {
    world.query::<&mut Spark>().for_each_with_commands(|e, spark, commands| {
        spark.0 /= 2;
        if spark.0 == 0 {
            commands.despawn(e);
        }
    });
}

fn count_x(world: &mut World) {
    let n = world.query::<&Pos>().without::<Spark>().count();
    let counted = world.resource_mut::<Counted>();
    let frames = counted.0.len() + 1;
    counted.0.push(n * 1000 + frames);
}

/// One entity: its handle's bits, position, velocity, health, spark, and whether it is frozen.
type Row = (u64, Option<i64>, Option<i64>, Option<i64>, Option<u32>, bool);

/// Everything in the world, sorted by handle.
fn contents(world: &World) -> Vec<Row> {
    let mut out = Vec::new();
    world.query_ref::<(Option<&Pos>, Option<&Vel>, Option<&Hp>, Option<&Spark>, Option<&Frozen>)>().for_each(
        |e, (p, v, h, s, f)| {
            out.push((e.to_bits(), p.map(|p| p.0), v.map(|v| v.0), h.map(|h| h.0), s.map(|s| s.0), f.is_some()))
        },
    );
    out.sort_unstable();
    out
}

fn summary(app: &App) -> (u32, i64, Vec<usize>) {
    (app.world.len(), app.world.resource::<Healed>().0, app.world.resource::<Counted>().0.clone())
}

fn param_app(backend: Backend, threads: usize) -> App {
    let mut app = App::with_world(world(backend));
    app.set_threads(threads);
    app.add_systems(Stage::Update, (drift, heal, sparks, fade, count).chain());
    app
}

#[test]
fn the_batches_keep_clashing_systems_in_order() {
    let mut app = param_app(Backend::SparseSet, 2);
    // drift writes Pos; heal writes Hp; sparks reads Pos and Hp (after both); fade writes Spark (beside drift and
    // heal); count reads Pos (after drift), excludes Spark (pool-level: after fade writes it).
    assert_eq!(app.batches(Stage::Update), vec![vec![0, 1, 3], vec![2, 4]]);
}

#[test]
fn the_world_is_the_same_for_every_thread_count_and_backend_and_equals_the_serial_one() {
    let mut serial = App::with_world(world(Backend::SparseSet));
    serial.set_threads(1);
    serial.add_systems(Stage::Update, (drift_x, heal_x, sparks_x, fade_x, count_x).chain());
    for _ in 0..20 {
        serial.update();
    }
    let expected = (contents(&serial.world), summary(&serial));
    assert!(expected.0.iter().any(|row| row.4.is_some()), "sparks were spawned: the test exercises commands");
    for backend in Backend::ALL {
        for threads in [1, 2, 3, 8] {
            let mut app = param_app(backend, threads);
            for _ in 0..20 {
                app.update();
            }
            assert_eq!((contents(&app.world), summary(&app)), expected, "{backend}, {threads} threads");
        }
    }
}

#[test]
fn live_backend_switches_between_frames_keep_the_result() {
    let mut reference = param_app(Backend::SparseSet, 1);
    let mut switching = param_app(Backend::Archetype, 3);
    for frame in 0..20 {
        reference.update();
        switching.world.set_backend(Backend::ALL[frame % Backend::ALL.len()]);
        switching.update();
    }
    assert_eq!(contents(&switching.world), contents(&reference.world));
}

fn noted() {}

#[test]
fn a_system_that_touches_nothing_keeps_its_place_around_an_exclusive_one() {
    let mut app = App::new();
    app.add_systems(Stage::Update, (noted, set_3, noted).chain());
    assert_eq!(app.batches(Stage::Update), vec![vec![0], vec![1], vec![2]]);
}

fn tag_a(mut commands: Commands) {
    let _ = commands.spawn((Spark(1),));
}
fn tag_b(mut commands: Commands) {
    let _ = commands.spawn((Spark(2),));
}
fn set_1(target: Res<Target>, mut commands: Commands) {
    commands.insert(target.0, Hp(1));
}
fn set_2(target: Res<Target>, mut commands: Commands) {
    commands.insert(target.0, Hp(2));
}
fn set_3(world: &mut World) {
    let target = world.resource::<Target>().0;
    world.commands().insert(target, Hp(3));
}
struct Target(Entity);

#[test]
fn commands_of_systems_run_at_once_join_in_schedule_order() {
    for threads in [1, 2, 8] {
        // Deferred spawns take their handles in the order the systems stand in the schedule.
        let mut app = App::new();
        app.set_threads(threads);
        app.add_systems(Stage::Update, (tag_a, tag_b, tag_b, tag_a).chain());
        assert_eq!(app.batches(Stage::Update), vec![vec![0, 1, 2, 3]]);
        app.update();
        let mut spawned: Vec<(Entity, u32)> = Vec::new();
        app.world.query::<&Spark>().for_each(|e, s| spawned.push((e, s.0)));
        spawned.sort_by_key(|(e, _)| e.index());
        let order: Vec<u32> = spawned.iter().map(|(_, s)| *s).collect();
        assert_eq!(order, [1, 2, 2, 1], "{threads} threads");
        // The last insert recorded in schedule order wins, whichever system finished first; an exclusive system's
        // direct commands fall in between.
        for (systems, expected) in [((0, 1), 2), ((1, 0), 1)] {
            let mut app = App::new();
            app.set_threads(threads);
            let target = app.world.spawn((Hp(0),)).unwrap();
            app.insert_resource(Target(target));
            match systems {
                (0, 1) => app.add_systems(Stage::Update, (set_1, set_2).chain()),
                _ => app.add_systems(Stage::Update, (set_2, set_1).chain()),
            };
            app.update();
            assert_eq!(app.world.get::<Hp>(target), Some(&Hp(expected)), "{threads} threads");
            // Added after the first two, unordered against them: the order added, with the check turned off.
            app.add_systems(Stage::Update, (set_3, set_2, set_1).chain()).set_ambiguity_check(false);
            assert_eq!(app.batches(Stage::Update), vec![vec![0, 1], vec![2], vec![3, 4]]);
            app.update();
            assert_eq!(app.world.get::<Hp>(target), Some(&Hp(1)), "{threads} threads");
        }
    }
}

fn aliased(_: Query<&mut Pos>, _: Query<&Pos>) {}
fn twice(_: ResMut<Healed>, _: ResMut<Healed>) {}
fn read_beside_write(_: Res<Healed>, _: ResMut<Healed>) {}
fn apart(mut frozen: Query<&mut Pos, With<Frozen>>, mut moving: Query<&mut Pos, Without<Frozen>>) {
    frozen.for_each(|_, pos| pos.0 = -1);
    moving.for_each(|_, pos| pos.0 += 1000);
}
fn nested(mut frozen: Query<&mut Pos, With<Frozen>>, mut moving: Query<&Pos, Without<Frozen>>) {
    frozen.for_each(|_, _| moving.for_each(|_, _| {}));
}

#[test]
fn a_system_whose_parameters_conflict_is_refused_when_added() {
    let mut app = App::with_world(world(Backend::SparseSet));
    let error = app.try_add_systems(Stage::Update, aliased).err().expect("refused");
    assert_eq!(
        error.to_string(),
        "system `aliased`: parameters `Query<&mut Pos>` and `Query<&Pos>` both touch `Pos` and one of them writes it \
         (make the queries disjoint with With/Without, or merge them into one)"
    );
    assert!(matches!(app.try_add_systems(Stage::Update, twice), Err(AccessError::Conflict { .. })));
    assert!(matches!(app.try_add_systems(Stage::Update, read_beside_write), Err(AccessError::Conflict { .. })));
    // A refused tuple adds none of its systems.
    assert!(app.try_add_systems(Stage::Update, (heal, twice)).is_err());
    assert_eq!(app.system_names(Stage::Update).count(), 0);
    let panic = catch_unwind(AssertUnwindSafe(|| {
        app.add_systems(Stage::Update, twice);
    }))
    .unwrap_err();
    assert!(panic.downcast_ref::<String>().unwrap().contains("`ResMut<Healed>` and `ResMut<Healed>`"));
}

#[test]
fn queries_kept_apart_by_filters_share_a_written_type_in_turn() {
    for backend in Backend::ALL {
        let mut app = App::with_world(world(backend));
        app.set_threads(2);
        app.add_systems(Stage::Update, apart);
        app.update();
        let (mut frozen, mut moved) = (0, 0);
        app.world.query::<(&Pos, Option<&Frozen>)>().for_each(|_, (pos, f)| match f {
            Some(_) => frozen += (pos.0 == -1) as usize,
            None => moved += (pos.0 >= 1000) as usize,
        });
        assert_eq!((frozen, moved), (60, 240), "{backend}");
        // One inside the other's loop cannot both hold the pool: a clear panic, and the world stays whole.
        let mut app = App::with_world(world(backend));
        app.add_systems(Stage::Update, nested);
        let panic = catch_unwind(AssertUnwindSafe(|| app.update())).unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.starts_with("system `nested` panicked: ") && message.contains("inside that query's loop"),
            "{message}"
        );
        assert_eq!(app.world.query::<&Pos>().count(), 300, "{backend}: the lent pool is back");
    }
}

// The same systems with `for` loops over their queries.

fn drift_for(rules: Res<Rules>, mut q: Query<(&mut Pos, &Vel), Without<Frozen>>) {
    for (_, (pos, vel)) in &mut q {
        pos.0 = (pos.0 + vel.0).rem_euclid(rules.wall);
    }
}

fn heal_for(mut q: Query<&mut Hp>, mut healed: ResMut<Healed>) {
    for (_, hp) in q.iter_mut() {
        hp.0 -= 1;
        healed.0 += hp.0;
    }
}

/// Reads through `&self`: no `mut` on the query.
fn count_for(q: Query<&Pos, Without<Spark>>, mut counted: ResMut<Counted>, mut frames: Local<usize>) {
    *frames += 1;
    let n = (&q).into_iter().count();
    assert_eq!(q.iter().len(), n);
    counted.0.push(n * 1000 + *frames);
}

#[test]
fn for_loops_over_system_queries_give_the_closure_loops_world() {
    for backend in Backend::ALL {
        for threads in [1, 2] {
            let mut closures = param_app(backend, threads);
            let mut loops = App::with_world(world(backend));
            loops.set_threads(threads);
            loops.add_systems(Stage::Update, (drift_for, heal_for, sparks, fade, count_for).chain());
            for _ in 0..12 {
                closures.update();
                loops.update();
            }
            assert_eq!(contents(&loops.world), contents(&closures.world), "{backend}, {threads} threads");
            assert_eq!(summary(&loops), summary(&closures), "{backend}, {threads} threads");
        }
    }
}

/// Two queries kept apart by filters, one iterated (holding the shared pool), then the other by closure.
fn apart_iter_then_closure(mut frozen: Query<&mut Pos, With<Frozen>>, mut moving: Query<&mut Pos, Without<Frozen>>) {
    for (_, pos) in frozen.iter_mut() {
        pos.0 = -1;
    }
    moving.for_each(|_, pos| pos.0 += 1000);
}

/// The same in the other order, and a read-only iterator over the written type, then the first query again once
/// the second is dropped: allowed.
fn apart_closure_then_iter(
    mut frozen: Query<&mut Pos, With<Frozen>>,
    moving: Query<&Pos, Without<Frozen>>,
    mut n: ResMut<Healed>,
) {
    frozen.for_each(|_, pos| pos.0 = -1);
    n.0 = moving.iter().filter(|(_, pos)| pos.0 >= 0).count() as i64;
    n.0 += moving.iter().count() as i64;
    // The read-only iterators keep the shared loan of `Pos` until `moving` goes.
    drop(moving);
    frozen.for_each(|_, pos| pos.0 -= 1);
    for (_, pos) in &mut frozen {
        pos.0 -= 1;
    }
    let first = frozen.iter_mut().next().map(|(e, _)| e).expect("a frozen one");
    let got = frozen.get(first).map(|p| p.0);
    assert_eq!(got, Ok(-3));
}

#[test]
fn an_iterator_keeps_a_shared_loan_until_its_query_runs_again() {
    for backend in Backend::ALL {
        let mut app = App::with_world(world(backend));
        app.add_systems(Stage::Update, apart_closure_then_iter);
        app.update();
        assert_eq!(app.world.resource::<Healed>().0, 480, "{backend}: 240 unfrozen, twice");
        let mut frozen = 0;
        app.world.query::<&Pos>().with::<Frozen>().for_each(|_, pos| frozen += (pos.0 == -3) as usize);
        assert_eq!(frozen, 60, "{backend}");
        // The closure loop of the other query while the first query's loan is kept: a clear panic; the world whole.
        let mut app = App::with_world(world(backend));
        app.add_systems(Stage::Update, apart_iter_then_closure);
        let panic = catch_unwind(AssertUnwindSafe(|| app.update())).unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(message.contains("while an iterator or item it handed out is still in use"), "{message}");
        assert_eq!(app.world.query::<&Pos>().count(), 300, "{backend}: the lent pool is back");
    }
}

/// Pairs of rows trade velocities through `get_many`, then every unfrozen row moves by batches on scoped threads.
fn trade_and_move(mut q: Query<(&mut Pos, &mut Vel), Without<Frozen>>, mut moved: ResMut<Healed>) {
    let rows: Vec<Entity> = q.iter_mut().map(|(e, _)| e).collect();
    for pair in rows.chunks_exact(2) {
        let [(_, a), (_, b)] = q.get_many([pair[0], pair[1]]).expect("two distinct live rows");
        std::mem::swap(&mut a.0, &mut b.0);
    }
    assert!(q.get_many([rows[0], rows[0]]).is_err(), "one row named twice");
    let batches: Vec<_> = q.iter_batched(7).collect();
    assert!(batches.iter().all(|batch| (1..=7).contains(&batch.len())));
    let n: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = batches
            .into_iter()
            .map(|batch| scope.spawn(move || batch.map(|(_, (pos, vel))| pos.0 += vel.0).count()))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    moved.0 = n as i64;
}

#[test]
fn a_system_query_offers_get_many_and_batches_as_the_worlds_does() {
    for backend in Backend::ALL {
        let mut app = App::with_world(world(backend));
        app.add_systems(Stage::Update, trade_and_move);
        app.update();
        // The same by hand on the world's query.
        let mut w = world(backend);
        let rows: Vec<Entity> = w.query::<()>().with::<Pos>().without::<Frozen>().iter().map(|(e, _)| e).collect();
        for pair in rows.chunks_exact(2) {
            let [(_, a), (_, b)] = w.query::<(&mut Pos, &mut Vel)>().get_many([pair[0], pair[1]]).unwrap();
            std::mem::swap(&mut a.0, &mut b.0);
        }
        w.query::<(&mut Pos, &Vel)>().without::<Frozen>().for_each(|_, (pos, vel)| pos.0 += vel.0);
        assert_eq!(app.world.resource::<Healed>().0, 240, "{backend}: every unfrozen row moved once");
        assert_eq!(contents(&app.world), contents(&w), "{backend}");
    }
}

/// The entities to heal, with how much: some frozen, one stale, one listed twice.
struct HealList(Vec<(Entity, i64)>);

fn heal_listed(mut q: Query<&mut Hp, Without<Frozen>>, list: Res<HealList>) {
    q.for_each_of(&list.0, |&(_, amount), hp| hp.0 += amount);
}

/// [`heal_listed`] on the app's pool.
fn heal_listed_par(mut q: Query<&mut Hp, Without<Frozen>>, list: Res<HealList>) {
    q.par_for_each_of(&list.0, |&(_, amount), hp| hp.0 += amount);
}

fn changed_hp(changed: Query<(), swarm::ecs::Changed<Hp>>, mut seen: ResMut<Counted>) {
    seen.0 = changed.iter().map(|(e, _)| e.index() as usize).collect();
}

#[test]
fn a_system_query_visits_a_list_and_stamps_what_it_visited() {
    for (backend, par) in Backend::ALL.into_iter().flat_map(|backend| [(backend, false), (backend, true)]) {
        for threads in [1, 2] {
            let mut w = world(backend);
            w.track::<Hp>();
            let mut rows: Vec<Entity> = w.query_ref::<()>().with::<Hp>().iter().map(|(e, _)| e).collect();
            rows.sort_unstable_by_key(|e| e.index()); // rows[i] is the i-th spawned
            let stale = rows[7];
            w.despawn(stale).unwrap();
            // rows[10] is frozen; rows[33] is listed twice.
            let mut list = vec![(rows[33], 100), (rows[10], 100), (stale, 100), (rows[2], 1000), (rows[33], 10)];
            // Frozen entries to skip, so the list is longer than a piece and the visit on the pool splits.
            list.extend((20..300).step_by(5).map(|i| (rows[i], 1)));
            w.insert_resource(HealList(Vec::new()));
            let mut app = App::with_world(w);
            app.set_threads(threads);
            match par {
                true => app.add_systems(Stage::Update, heal_listed_par),
                false => app.add_systems(Stage::Update, heal_listed),
            };
            app.add_systems(Stage::Last, changed_hp);
            // The first frame sees every spawn as a change; the second only the visit's writes.
            app.update();
            app.world.insert_resource(HealList(list));
            app.update();
            let hp = |e: Entity| app.world.get::<Hp>(e).unwrap().0;
            assert_eq!(
                (hp(rows[33]), hp(rows[2]), hp(rows[10])),
                (33 % 31 + 110, 2 + 1000, 10),
                "{backend}, {threads}, par {par}"
            );
            let mut expected = vec![rows[2].index() as usize, rows[33].index() as usize];
            expected.sort_unstable();
            let message = format!("{backend}, {threads}, par {par}: only the visited changed");
            assert_eq!(app.world.resource::<Counted>().0, expected, "{message}");
        }
    }
}

/// [`heal_listed_par`], whose body panics at an amount of 666.
fn heal_or_fail_par(mut q: Query<&mut Hp, Without<Frozen>>, list: Res<HealList>) {
    q.par_for_each_of(&list.0, |&(_, amount), hp| {
        assert!(amount != 666, "a bad heal");
        hp.0 += amount;
    });
}

#[test]
fn a_system_list_visit_that_panics_stamps_what_it_handed_out_once() {
    for threads in [1, 2] {
        let mut w = world(Backend::SparseSet);
        w.track::<Hp>();
        let unfrozen: Vec<Entity> =
            w.query_ref::<()>().with::<Hp>().without::<Frozen>().iter().map(|(e, _)| e).collect();
        // The first entry panics; the list is longer than a piece, so on two threads the visit splits.
        let mut list = vec![(unfrozen[0], 666)];
        list.extend(unfrozen[1..].iter().map(|&e| (e, 1)));
        w.insert_resource(HealList(Vec::new()));
        let mut app = App::with_world(w);
        app.set_threads(threads);
        app.add_systems(Stage::Update, heal_or_fail_par);
        app.add_systems(Stage::Last, changed_hp);
        app.update();
        let before: Vec<i64> = unfrozen.iter().map(|&e| app.world.get::<Hp>(e).unwrap().0).collect();
        app.world.insert_resource(HealList(list));
        assert!(catch_unwind(AssertUnwindSafe(|| app.update())).is_err(), "{threads} threads");
        app.world.assert_invariants();
        let tracker = app.world.tracker::<Hp>();
        let written: Vec<bool> =
            unfrozen.iter().zip(&before).map(|(&e, &hp)| app.world.get::<Hp>(e).unwrap().0 != hp).collect();
        assert!(tracker.is_changed(unfrozen[0]), "{threads} threads: the entry that panicked was handed out");
        for (k, &e) in unfrozen.iter().enumerate() {
            assert!(!written[k] || tracker.is_changed(e), "{threads} threads: written but not stamped: {k}");
        }
        match threads {
            1 => assert!(written.iter().all(|&w| !w), "one thread stops at the panic"),
            _ => assert!(written.iter().filter(|&&w| w).count() > unfrozen.len() / 3, "the other parts ran"),
        }
        let mut stamped: Vec<usize> =
            unfrozen.iter().filter(|&&e| tracker.is_changed(e)).map(|e| e.index() as usize).collect();
        stamped.sort_unstable();
        // The next frames write nothing: the change filter (which missed the panicked frame) sees those stamps
        // once, then nothing of that frame is stamped again.
        app.world.insert_resource(HealList(Vec::new()));
        app.update();
        assert_eq!(app.world.resource::<Counted>().0, stamped, "{threads} threads");
        app.update();
        assert_eq!(app.world.resource::<Counted>().0, Vec::<usize>::new(), "{threads} threads");
    }
}

fn missing(_: Res<Spark>) {}
fn optional(spark: Option<Res<Spark>>, healed: Option<ResMut<Healed>>, mut seen: ResMut<Counted>) {
    seen.0.push(spark.is_some() as usize * 10 + healed.is_some() as usize);
}

#[test]
fn missing_resources_are_named_and_optional_ones_are_none() {
    for threads in [1, 2] {
        let mut app = App::with_world(world(Backend::SparseSet));
        app.set_threads(threads);
        app.add_systems(Stage::Update, (optional, missing).chain());
        assert_eq!(app.batches(Stage::Update), vec![vec![0, 1]]);
        let panic = catch_unwind(AssertUnwindSafe(|| app.update())).unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert_eq!(
            message,
            "system `missing`: parameter `Res<Spark>`: the resource was never inserted (insert it first, or take an \
             Option)"
        );
        // A batch is prepared whole before any of it runs: none ran, and what `optional` took is back.
        assert!(app.world.resource::<Counted>().0.is_empty(), "{threads} threads");
        assert!(app.world.contains_resource::<Healed>() && app.world.contains_resource::<Counted>());
        app.world.insert_resource(Spark(0));
        app.update();
        assert_eq!(app.world.resource::<Counted>().0, [11], "{threads} threads");
    }
}

fn boom(mut q: Query<&mut Hp>) {
    q.for_each(|_, hp| {
        if hp.0 == 7 {
            panic!("hit seven");
        }
        hp.0 += 100;
    });
}

#[test]
fn a_panic_on_a_worker_thread_reaches_update_with_the_name_and_the_world_stays_whole() {
    for backend in Backend::ALL {
        for threads in [1, 2] {
            let mut app = App::with_world(world(backend));
            app.set_threads(threads);
            app.add_systems(Stage::Update, (drift, boom, fade).chain());
            assert_eq!(app.batches(Stage::Update), vec![vec![0, 1, 2]]);
            let panic = catch_unwind(AssertUnwindSafe(|| app.update())).unwrap_err();
            let message = panic.downcast_ref::<String>().unwrap();
            assert_eq!(message, "system `boom` panicked: hit seven", "{backend}, {threads}");
            // Every pool is back: every entity still has its values, and the world takes queries and changes.
            assert_eq!(app.world.query::<(&Pos, &Vel, &Hp)>().count(), 300, "{backend}, {threads}");
            app.world.spawn((Pos(1), Vel(1), Hp(1))).unwrap();
            assert_eq!(app.world.len(), 301);
        }
    }
}

fn thaw(mut q: Query<&mut Frozen>) {
    q.for_each(|_, _| {});
}
fn fall(mut q: Query<&mut Vel, Without<Frozen>>) {
    q.for_each(|_, vel| vel.0 -= 1);
}

#[test]
fn a_system_filtering_on_a_type_runs_after_one_that_writes_it() {
    for backend in Backend::ALL {
        let mut app = App::with_world(world(backend));
        app.set_threads(2);
        app.add_systems(Stage::Update, (thaw, fall).chain());
        // `fall` reads the frozen pool to skip frozen entities: it cannot run while `thaw` holds that pool.
        assert_eq!(app.batches(Stage::Update), vec![vec![0], vec![1]], "{backend}");
        app.update();
        let mut fell = 0;
        app.world.query::<(&Vel, Option<&Frozen>)>().for_each(|_, (vel, frozen)| {
            fell += usize::from(frozen.is_none());
            assert!(frozen.is_some() || vel.0 < 4);
        });
        assert_eq!(fell, 240, "{backend}");
    }
}

fn crossing() -> SnapshotSchema {
    SnapshotSchema::new().component::<Vel>("vel").component::<Pos>("pos")
}

/// Loads the saved world (once) in the middle of the frame: the world's registry is replaced.
fn load_saved(world: &mut World) {
    if let Some(bytes) = world.resource_mut::<Saved>().0.take() {
        crossing().load_into(world, &bytes, None).unwrap();
    }
}
struct Saved(Option<Vec<u8>>);

fn step_all(mut q: Query<(&mut Pos, &Vel)>, mut healed: ResMut<Healed>) {
    q.for_each(|_, (pos, vel)| pos.0 += vel.0);
    healed.0 += 1;
}

#[test]
fn a_registry_replaced_mid_frame_is_met_by_the_systems_after_it() {
    for backend in Backend::ALL {
        // A world whose registry numbers the types the other way round.
        let mut source = World::new();
        source.spawn((Vel(1),)).unwrap();
        let moving = source.spawn((Pos(5), Vel(2))).unwrap();
        let bytes = crossing().save(&source, Format::Binary).unwrap();
        let mut app = App::with_world(world(backend));
        app.insert_resource(Saved(Some(bytes)));
        app.add_systems(Stage::PreUpdate, load_saved).add_systems(Stage::Update, step_all);
        app.update();
        assert_eq!(app.world.len(), 2, "{backend}");
        assert_eq!(app.world.get::<Pos>(moving), Some(&Pos(7)), "{backend}: moved once, in the loaded world");
        assert_eq!(app.world.resource::<Healed>().0, 1);
        app.update();
        assert_eq!(app.world.get::<Pos>(moving), Some(&Pos(9)), "{backend}");
    }
}

struct Mark(Option<Entity>);

fn spawner(mut mark: ResMut<Mark>, mut commands: Commands) {
    let _ = commands.spawn((Pos(300),));
    mark.0 = commands.spawn((Pos(100),)).ok();
}
fn tagger(mark: Res<Mark>, mut commands: Commands) {
    let _ = commands.spawn((Pos(200),));
    if let Some(e) = mark.0 {
        commands.insert(e, Vel(7));
    }
}

#[test]
fn a_deferred_handle_handed_to_a_later_system_names_its_own_spawn() {
    for threads in [1, 2] {
        let mut app = App::new();
        app.set_threads(threads);
        app.insert_resource(Mark(None));
        app.add_systems(Stage::Update, (spawner, tagger).chain());
        app.update();
        let mut rows: Vec<(i64, Option<i64>)> = Vec::new();
        app.world.query::<(&Pos, Option<&Vel>)>().for_each(|_, (p, v)| rows.push((p.0, v.map(|v| v.0))));
        rows.sort_unstable();
        assert_eq!(rows, [(100, Some(7)), (200, None), (300, None)], "{threads} threads");
    }
}

#[test]
fn the_profiler_marks_systems_that_ran_on_several_threads() {
    // `drift` and `heal` touch nothing in common: one batch, which a pool runs at once.
    for (threads, expected) in [(1, false), (2, true), (3, true)] {
        let mut app = App::with_world(world(Backend::SparseSet));
        app.set_threads(threads);
        app.add_systems(Stage::Update, (drift, heal).chain());
        assert_eq!(app.batches(Stage::Update), vec![vec![0, 1]]);
        app.update();
        app.profiler().with_timings(|timings| {
            for name in ["drift", "heal"] {
                let stat = timings.get(name).expect("a row per system");
                assert_eq!(stat.runs, 1);
                assert_eq!(stat.parallel, expected, "{name} at {threads} threads");
            }
        });
    }
}

/// Splits its work in two halves that wait for each other, so on a pool of two they run on both threads; then
/// each sleeps [`MEET_MS`].
fn meet(_: &mut World) {
    let barrier = std::sync::Barrier::new(2);
    let half = || {
        barrier.wait();
        std::thread::sleep(std::time::Duration::from_millis(MEET_MS));
    };
    swarm::ecs::join(half, half);
}
const MEET_MS: u64 = 5;

#[test]
fn the_profiler_counts_the_work_other_threads_did() {
    // One thread: the loops run in place, and nothing is done elsewhere.
    let mut app = App::with_world(world(Backend::SparseSet));
    app.set_threads(1);
    app.insert_resource(Frame(0));
    app.add_systems(Stage::Update, poke);
    app.update();
    app.profiler().with_timings(|timings| {
        let stat = timings.get("poke").expect("a row");
        assert_eq!((stat.elsewhere_ms, stat.parallel), (0.0, false));
    });
    // Two threads: the second half runs on the other thread, and its time is counted.
    let mut app = App::with_world(world(Backend::SparseSet));
    app.set_threads(2);
    app.add_systems(Stage::Update, meet);
    app.update();
    app.profiler().with_timings(|timings| {
        let stat = timings.get("meet").expect("a row");
        assert!(stat.elsewhere_ms >= MEET_MS as f64, "{stat:?}");
        assert_eq!(stat.parallel, swarm::app::profile::paid(stat.last_ms, stat.elsewhere_ms), "{stat:?}");
        assert_eq!(stat.elsewhere_total_ms, stat.elsewhere_ms);
    });
}

/// Whom a row follows: a component holding a handle, registered as such.
#[derive(Clone, Debug, PartialEq, swarm::ecs::HoldsEntities)]
struct Follows(#[entities] Entity, #[entities] Vec<Entity>);

/// Handles a system kept, in a resource.
#[derive(Default, swarm::ecs::HoldsEntities)]
struct Beacons(#[entities] Vec<Entity>);

/// A beacon's number.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Beacon(i64);

/// Frame 1: for every tenth row, spawns a beacon and keeps its deferred handle in the row (by `&mut`), in a
/// resource and in its own `Local`s (a list, and the last one alone). Later frames: every handle it kept in its
/// `Local`s names its beacon; the count goes to `Counted`.
fn light(
    mut rows: Query<(&Pos, &mut Follows)>,
    mut beacon_of: Query<&Beacon>,
    mut beacons: ResMut<Beacons>,
    mut checked: ResMut<Counted>,
    mut commands: Commands,
    mut mine: Local<Vec<Entity>>,
    mut last: Local<Option<Entity>>,
) {
    if mine.is_empty() {
        rows.for_each(|_, (pos, follows)| {
            if pos.0 % 10 == 0 {
                let beacon = commands.spawn((Beacon(pos.0),)).unwrap();
                follows.0 = beacon;
                follows.1.extend([beacon, beacon]);
                beacons.0.push(beacon);
                mine.push(beacon);
                *last = Some(beacon);
            }
        });
        return;
    }
    let numbers: Vec<i64> =
        mine.iter().map(|&e| beacon_of.get(e).map(|b| b.0).expect("a kept handle names a beacon")).collect();
    assert!(numbers.windows(2).all(|w| w[0] != w[1]), "each handle its own beacon");
    assert!(beacon_of.get(last.expect("kept")).is_ok());
    checked.0.push(numbers.len());
}

/// Every frame after the first: each row's and the resource's handle names its beacon.
fn check(mut rows: Query<(&Pos, &Follows)>, mut beacon_of: Query<&Beacon>, beacons: Res<Beacons>) {
    let mut found = Vec::new();
    rows.for_each(|_, (pos, follows)| {
        // (In the frame of the spawns the handles are still deferred.)
        if pos.0 % 10 == 0 && follows.0 != Entity::DEAD && !follows.0.is_deferred() {
            found.push((pos.0, follows.0));
            found.extend(follows.1.iter().map(|&e| (pos.0, e)));
        }
    });
    for (pos, follows) in found {
        assert_eq!(beacon_of.get(follows).ok().copied(), Some(Beacon(pos)), "the row's handle (and its list's)");
    }
    for &beacon in beacons.0.iter().filter(|e| !e.is_deferred()) {
        assert!(beacon_of.get(beacon).is_ok(), "the resource's handle");
    }
}

#[test]
fn handles_kept_by_systems_before_the_apply_name_their_spawns_after_it() {
    for backend in Backend::ALL {
        for threads in [1, 2] {
            let mut w = world(backend);
            w.register_entity_holder::<Follows>();
            w.register_entity_holder::<Beacons>();
            w.insert_resource(Beacons::default());
            let mut rows = Vec::new();
            w.query::<&Pos>().for_each(|e, _| rows.push(e));
            for e in rows {
                w.insert(e, Follows(Entity::DEAD, Vec::new())).unwrap();
            }
            let mut app = App::with_world(w);
            app.set_threads(threads);
            app.add_systems(Stage::Update, (light, check).chain());
            for _ in 0..3 {
                app.update();
            }
            let world = &app.world;
            assert_eq!(world.resource::<Beacons>().0.len(), 30, "{backend}");
            assert!(world.resource::<Beacons>().0.iter().all(|&e| world.get::<Beacon>(e).is_some()), "{backend}");
            assert_eq!(world.resource::<Counted>().0, vec![30, 30], "{backend}, {threads} threads: the Locals");
            let mut rows = 0;
            world.query_ref::<(&Pos, &Follows)>().for_each(|_, (pos, follows)| {
                if pos.0 % 10 == 0 {
                    rows += 1;
                    assert_eq!(world.get::<Beacon>(follows.0), Some(&Beacon(pos.0)), "{backend}");
                    assert_eq!(follows.1, vec![follows.0; 2], "{backend}: the list in the component");
                }
            });
            assert_eq!(rows, 30, "{backend}");
        }
    }
}

/// Change detection through systems: a writer changes some `Hp`s each frame (by row, in a parallel loop), a clamp
/// writes the changed rows it sees, and a watcher records what changed since it last ran, with the tracker's
/// removals. Each system sees the changes made since its own last run and never its own writes (the clamp's do not
/// feed back into itself); what they see is the same on every backend and thread count.
#[derive(Default)]
struct Seen(Vec<(u64, Vec<Entity>, Vec<Entity>, usize)>);

/// The frame number, saved with the world.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Frame(i64);

fn next_frame(mut frame: ResMut<Frame>) {
    frame.0 += 1;
}

fn poke(mut q: Query<(&mut Hp, &Pos), Without<Frozen>>, frame: Res<Frame>) {
    let frame = frame.0;
    q.par_for_each(|_, (hp, pos)| {
        if (pos.0 + frame) % 9 == 0 {
            hp.0 += 40;
        }
    });
}

fn clamp(mut q: Query<&mut Hp, swarm::ecs::Changed<Hp>>, mut clamped: Local<Vec<usize>>) {
    let mut n = 0;
    q.for_each(|_, hp| {
        hp.0 = hp.0.min(50);
        n += 1;
    });
    clamped.push(n);
}

fn cull(q: Query<(&Hp, &Pos)>, mut commands: Commands) {
    for (e, (hp, pos)) in q.iter() {
        if hp.0 >= 50 && pos.0 % 4 == 0 {
            commands.despawn(e);
        }
    }
}

fn watch(
    changed: Query<&Hp, swarm::ecs::Changed<Hp>>,
    added: Query<(), swarm::ecs::Added<Hp>>,
    tracker: swarm::ecs::Tracker<Hp>,
    mut seen: ResMut<Seen>,
    mut frame: Local<u64>,
) {
    *frame += 1;
    let changed: Vec<Entity> = changed.iter().map(|(e, _)| e).collect();
    let removed: Vec<Entity> = tracker.removed().collect();
    assert!(changed.iter().all(|&e| tracker.is_changed(e)));
    seen.0.push((*frame, changed, removed, added.iter().count()));
}

/// Hands out every `Hp` as `&mut` and writes it back unchanged.
fn touch(mut q: Query<&mut Hp>) {
    q.for_each(|_, hp| hp.0 = hp.0.clamp(i32::MIN as _, i32::MAX as _));
}

fn change_app(backend: Backend, threads: usize) -> App {
    change_app_with(backend, threads, false, false)
}

/// The change app, `Hp` tracked in the exact mode or not, with `touch` after the clamp or not.
fn change_app_with(backend: Backend, threads: usize, exact: bool, touching: bool) -> App {
    let mut world = world(backend);
    match exact {
        true => world.track_exact::<Hp>(),
        false => world.track::<Hp>(),
    }
    world.insert_resource(Seen::default());
    world.insert_resource(Frame::default());
    let mut app = App::with_world(world);
    app.set_threads(threads);
    app.add_systems(Stage::PreUpdate, next_frame);
    app.add_systems(Stage::Update, (poke, clamp).chain())
        .add_systems(Stage::PostUpdate, cull)
        .add_systems(Stage::Last, watch);
    if touching {
        app.add_systems(Stage::PostUpdate, touch.after(cull));
    }
    app
}

#[test]
fn the_exact_mode_ignores_writes_of_an_equal_value_on_every_backend_and_thread_count() {
    let frames = |mut app: App| {
        for _ in 0..12 {
            app.update();
        }
        (seen(&app), contents(&app.world))
    };
    let untouched = frames(change_app_with(Backend::SparseSet, 1, true, false));
    assert!(untouched.0[1..].iter().all(|(changed, _, _)| !changed.is_empty() && changed.len() < 100));
    for backend in Backend::ALL {
        for threads in [1, 2, 4] {
            let touched = frames(change_app_with(backend, threads, true, true));
            assert_eq!(touched, untouched, "{backend}, {threads} threads: a system writing equal values");
        }
    }
    // Without the exact mode every touched row counts.
    let plain = frames(change_app_with(Backend::SparseSet, 1, false, true));
    assert!(plain.0[1..].iter().all(|(changed, _, _)| changed.len() > 200));
}

#[test]
fn systems_see_the_changes_since_their_last_run_on_every_backend_and_thread_count() {
    let mut reference = None;
    for backend in Backend::ALL {
        for threads in [1, 2, 4] {
            let mut app = change_app(backend, threads);
            for _ in 0..12 {
                app.update();
            }
            let seen = &app.world.resource::<Seen>().0;
            // The first run sees every value as added (and so changed); later runs only what changed.
            assert_eq!(seen[0].3, 300, "{backend}, {threads} threads");
            assert!(seen[1..].iter().all(|(_, changed, _, added)| !changed.is_empty() && *added == 0));
            assert!(seen.iter().any(|(_, _, removed, _)| !removed.is_empty()), "the cull's despawns are seen");
            // Handle order.
            for (_, changed, _, _) in seen {
                assert!(changed.windows(2).all(|w| w[0].index() < w[1].index()));
            }
            let now = (seen.clone(), contents(&app.world));
            match &reference {
                None => reference = Some(now),
                Some(reference) => assert_eq!(&now, reference, "{backend}, {threads} threads"),
            }
        }
    }
}

#[test]
fn a_system_does_not_see_its_own_writes() {
    let mut app = App::new();
    app.world.track::<Hp>();
    let e = app.world.spawn((Hp(70),)).unwrap();
    app.add_systems(Stage::Update, clamp);
    for _ in 0..4 {
        app.update();
    }
    // First run: the spawn is a change (clamped to 50); after it, nothing changes but the clamp's own writes.
    assert_eq!(app.world.get::<Hp>(e), Some(&Hp(50)));
    app.world.get_mut::<Hp>(e).unwrap().0 = 99;
    app.update();
    assert_eq!(app.world.get::<Hp>(e), Some(&Hp(50)), "a change made between frames is seen");
}

/// What the watcher saw, without its own frame count.
fn seen(app: &App) -> Vec<(Vec<Entity>, Vec<Entity>, usize)> {
    app.world
        .resource::<Seen>()
        .0
        .iter()
        .map(|(_, changed, removed, added)| (changed.clone(), removed.clone(), *added))
        .collect()
}

#[test]
fn change_state_survives_a_snapshot_on_every_backend_pair() {
    let schema = SnapshotSchema::new()
        .component::<Pos>("pos")
        .component::<Vel>("vel")
        .component::<Hp>("hp")
        .component::<Frozen>("frozen")
        .resource::<Frame>("frame");
    for (from, exact) in Backend::ALL.into_iter().flat_map(|b| [(b, false), (b, true)]) {
        let mut uninterrupted = change_app_with(from, 1, exact, exact);
        for _ in 0..5 {
            uninterrupted.update();
        }
        if exact {
            // A write waiting in the exact mode is saved as compared.
            let first = uninterrupted.world.query::<&Hp>().iter().next().map(|(e, _)| e).unwrap();
            uninterrupted.world.get_mut::<Hp>(first).unwrap().0 += 1;
        }
        let changed_at_save = uninterrupted.world.query::<()>().filter::<swarm::ecs::Changed<Hp>>().count();
        assert_eq!(changed_at_save, exact as usize);
        let bytes = schema.save(&uninterrupted.world, Format::Binary).unwrap();
        let json = schema.save(&uninterrupted.world, Format::Json).unwrap();
        for _ in 0..8 {
            uninterrupted.update();
        }
        let expected = seen(&uninterrupted)[5..].to_vec();
        assert!(expected.iter().all(|(changed, _, _)| !changed.is_empty()));
        for to in Backend::ALL {
            for file in [&bytes, &json] {
                let mut loaded = change_app_with(to, 2, exact, exact);
                schema.load_into(&mut loaded.world, file, Some(to)).unwrap();
                // Loading is no change: the world's own queries see what the saved world's saw.
                let changed = loaded.world.query::<()>().filter::<swarm::ecs::Changed<Hp>>().count();
                assert_eq!(changed, changed_at_save);
                for _ in 0..8 {
                    loaded.update();
                }
                assert_eq!(seen(&loaded), expected, "saved on {from}, loaded on {to}, exact: {exact}");
                assert_eq!(contents(&loaded.world), contents(&uninterrupted.world));
            }
        }
    }
}
