//! What lifecycle events and the hierarchy cost: a spawn, a despawn and an insert of 10,000 entities through the
//! command buffer with no handler registered (the price every world pays), then with one handler of that kind; and
//! the despawn of a 10,000-entity tree (a fan, and squads of ten under one root); and 40,000 children of one parent
//! despawned in list order, in reverse, and with their parent.
//!
//! Run: `cargo bench --bench events`. The `none` rows measure code every world runs: BENCHMARKS.md compares them
//! with the same rows built on the commit before lifecycle events (this file's `lifecycle` group, `none` rows only).

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use std::hint::black_box;
use std::time::Duration;
use swarm::ecs::{Entity, World};

#[path = "common/lifecycle.rs"]
mod lifecycle;
use lifecycle::{world, Health, Mark, Position, N};

fn lifecycle(c: &mut Criterion) {
    let mut group = c.benchmark_group("lifecycle");
    group.sample_size(30).measurement_time(Duration::from_secs(3));
    for handlers in [0, 1] {
        let label = if handlers == 0 { "none" } else { "one handler" };
        group.bench_function(BenchmarkId::new("spawn 10k (commands)", label), |b| {
            b.iter_batched_ref(
                || world(handlers).0,
                |w| {
                    let mut commands = w.commands();
                    for i in 0..N {
                        commands.spawn((Position([i as f32, 1.0]), Health(1))).unwrap();
                    }
                    black_box(w.apply_commands());
                },
                BatchSize::LargeInput,
            )
        });
        group.bench_function(BenchmarkId::new("despawn 10k (commands)", label), |b| {
            b.iter_batched_ref(
                || world(handlers),
                |(w, handles)| {
                    let mut commands = w.commands();
                    for &e in handles.iter() {
                        commands.despawn(e);
                    }
                    black_box(w.apply_commands());
                },
                BatchSize::LargeInput,
            )
        });
        group.bench_function(BenchmarkId::new("insert 10k (commands)", label), |b| {
            b.iter_batched_ref(
                || world(handlers),
                |(w, handles)| {
                    let mut commands = w.commands();
                    for (i, &e) in handles.iter().enumerate() {
                        commands.insert(e, Mark(i as u32));
                    }
                    black_box(w.apply_commands());
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn trees(c: &mut Criterion) {
    let mut group = c.benchmark_group("tree despawn");
    group.sample_size(30).measurement_time(Duration::from_secs(3));
    // One root with 9,999 children; one root with 999 captains of 9 followers each (10,000 in all).
    let fan = || {
        let (mut w, handles) = world(0);
        for &child in &handles[1..] {
            w.add_child(handles[0], child).unwrap();
        }
        (w, handles[0])
    };
    let squads = || {
        let (mut w, handles) = world(0);
        for squad in handles[1..].chunks(10) {
            w.add_child(handles[0], squad[0]).unwrap();
            for &follower in &squad[1..] {
                w.add_child(squad[0], follower).unwrap();
            }
        }
        (w, handles[0])
    };
    for (name, make) in [("fan of 10k", &fan as &dyn Fn() -> (World, Entity)), ("squads, 10k", &squads)] {
        group.bench_function(BenchmarkId::new(name, "no handler"), |b| {
            b.iter_batched_ref(
                make,
                |(w, root)| {
                    w.commands().despawn(*root);
                    black_box(w.apply_commands());
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

/// 40,000 children of one parent despawned as one batch, in list order and in reverse, beside despawning the parent
/// (which takes them all with it): the lists are pruned once per despawn, so all three are linear.
fn children(c: &mut Criterion) {
    const CHILDREN: usize = 40_000;
    let mut group = c.benchmark_group("despawn children");
    group.sample_size(20).measurement_time(Duration::from_secs(3));
    let make = || {
        let mut w = World::with_capacity(2 * CHILDREN as u32);
        let parent = w.spawn((Health(1),)).unwrap();
        let mut handles = Vec::new();
        w.spawn_batch_into((0..CHILDREN).map(|i| (Position([i as f32, 0.0]), Health(1))), &mut handles).unwrap();
        for &child in &handles {
            w.add_child(parent, child).unwrap();
        }
        (w, parent, handles)
    };
    for order in ["list order", "reverse", "the parent"] {
        group.bench_function(BenchmarkId::new("40k of one parent", order), |b| {
            b.iter_batched_ref(
                make,
                |(w, parent, handles)| match order {
                    "list order" => black_box(w.despawn_batch(handles)),
                    "reverse" => {
                        handles.reverse();
                        black_box(w.despawn_batch(handles))
                    }
                    _ => black_box(w.despawn_batch(&[*parent])),
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, lifecycle, trees, children);
criterion_main!(benches);
