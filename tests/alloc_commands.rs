//! After warm-up, recording and applying commands allocate nothing, whether recorded between queries or inside a
//! query loop (a counting global allocator shows it).

use swarm::ecs::{Backend, World};

mod common;

#[global_allocator]
static GLOBAL: common::Counting = common::Counting;

#[derive(Clone, Copy)]
struct Life(u32);
#[derive(Clone, Copy)]
struct Spark;

/// One "frame" of churn: every entity ages; the expired are despawned and replaced through the command buffer.
fn frame(world: &mut World, expired: &mut Vec<swarm::ecs::Entity>) {
    expired.clear();
    world.query::<(&mut Life,)>().for_each(|e, (life,)| {
        life.0 -= 1;
        if life.0 == 0 {
            expired.push(e);
        }
    });
    let mut commands = world.commands();
    for (k, &e) in expired.iter().enumerate() {
        commands.despawn(e);
        commands.despawn(e); // skipped: already despawned
        let child = commands.spawn((Life(1 + (k as u32 % 7)),)).unwrap();
        commands.insert(child, Spark);
        commands.remove::<Spark>(child);
    }
    world.apply_commands();
}

/// Runs `frame` on a world of 1,000 aging entities for `warm_up` frames, then counts the allocations of 100 more,
/// on every backend.
fn assert_steady_frames_allocate_nothing(warm_up: usize, mut frame: impl FnMut(&mut World)) {
    // Allocations are counted on this thread only (see `common`), so other threads cannot disturb the count.
    for backend in Backend::ALL {
        let mut world = World::with_capacity(4096);
        world.set_backend(backend);
        for i in 0..1000 {
            world.spawn((Life(1 + i % 7),)).unwrap();
        }
        for _ in 0..warm_up {
            frame(&mut world);
        }
        let before = common::allocations();
        let totals_before = world.command_totals();
        for _ in 0..100 {
            frame(&mut world);
        }
        let allocations = common::allocations() - before;
        let totals = world.command_totals();
        assert!(totals.applied - totals_before.applied > 10_000, "{backend}: the frames did little work");
        assert!(totals.skipped > totals_before.skipped, "{backend}: double despawns were not skipped");
        assert_eq!(totals.refused, 0, "{backend}: spawns refused");
        assert_eq!(world.len(), 1000, "{backend}: the population drifted");
        if backend == Backend::BTree {
            // B-tree nodes are allocated on insert by design (about 2,300 here). One allocation per command would
            // add over 70,000 (5 commands per expired entity), so this bound still catches the buffer allocating.
            assert!(allocations < 10_000, "{backend}: {allocations} allocations in 100 steady frames");
        } else {
            assert_eq!(allocations, 0, "{backend}: {allocations} allocations in 100 steady frames");
        }
    }
}

#[test]
fn steady_state_commands_allocate_nothing() {
    let mut expired = Vec::with_capacity(1000);
    assert_steady_frames_allocate_nothing(50, |world| frame(world, &mut expired));
}

/// The same churn recorded inside the query loop: keyed commands, deferred spawns and the sort at the loop's end.
fn frame_in_loop(world: &mut World) {
    world.query::<(&mut Life,)>().for_each_with_commands(|e, (life,), commands| {
        life.0 -= 1;
        if life.0 == 0 {
            commands.despawn(e);
            commands.despawn(e); // skipped: already despawned
            let child = commands.spawn((Life(1 + (e.index() % 7)),)).unwrap();
            commands.insert(child, Spark);
            commands.remove::<Spark>(child);
        }
    });
    world.apply_commands();
}

#[test]
fn steady_state_commands_recorded_in_a_loop_allocate_nothing() {
    // The loop's pattern of expirations per frame peaks later than the direct one's: a longer warm-up.
    assert_steady_frames_allocate_nothing(500, frame_in_loop);
}

/// `World::reserve` makes room up front: spawning that many entities one by one then allocates nothing but the
/// sparse set's index pages (one per 4,096 indices per component), where without it every array grows by doubling.
#[test]
fn reserve_then_spawn_one_by_one_allocates_nothing_but_index_pages() {
    const N: u32 = 5_000;
    // Every backend but the b-tree, whose nodes are allocated as it grows (no way to reserve them).
    for backend in Backend::ALL.into_iter().filter(|&b| b != Backend::BTree) {
        let spawn_all = |reserve: bool| {
            let mut world = World::with_capacity(2 * N);
            world.set_backend(backend);
            world.spawn((Life(1), Spark)).unwrap(); // pools, table and registry made before counting
            if reserve {
                world.reserve::<(Life, Spark)>(N as usize);
            }
            let before = common::allocations();
            for i in 0..N {
                world.spawn((Life(i), Spark)).unwrap();
            }
            common::allocations() - before
        };
        // `Spark` is zero-sized: its values never allocate, its index pages do.
        let pages =
            if backend == Backend::SparseSet { 2 * (N as usize).div_ceil(swarm::ecs::PAGE_SIZE) + 2 } else { 0 };
        let (with, without) = (spawn_all(true), spawn_all(false));
        assert!(with <= pages, "{backend}: {with} allocations after reserve (at most {pages} expected)");
        assert!(without > with + 4, "{backend}: {without} allocations without reserve, {with} with");
    }
}
