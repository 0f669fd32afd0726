//! ECS operation benchmarks, organised by question; each group compares the backends (and the raw floor).
//!
//! Worlds are "hot": spawned, a third despawned, and respawned, so holes and reused indices are what is measured.
//! Run: `cargo bench --bench ecs` (add a filter such as `-- query` for one group).

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use glam::{Mat4, Vec3};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::hint::black_box;
use std::time::Duration;
use swarm::ecs::{Backend, Entity, World};

#[derive(Clone, Copy)]
struct Transform(#[allow(dead_code)] Mat4);
#[derive(Clone, Copy)]
struct Position(Vec3);
#[derive(Clone, Copy)]
struct Rotation(#[allow(dead_code)] Vec3);
#[derive(Clone, Copy)]
struct Velocity(Vec3);
#[derive(Clone, Copy)]
struct Extra(#[allow(dead_code)] f32);

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

fn bundle(i: usize) -> (Transform, Position, Rotation, Velocity) {
    (Transform(Mat4::IDENTITY), Position(Vec3::X * i as f32), Rotation(Vec3::Z), Velocity(Vec3::new(1.0, 0.5, 0.0)))
}

/// `n` live entities with the four components, after spawning, despawning a third and respawning.
fn hot_world(backend: Backend, n: usize) -> (World, Vec<Entity>) {
    let mut world = World::with_capacity(2 * n as u32 + 16);
    world.set_backend(backend);
    let mut handles = Vec::new();
    world.spawn_batch_into((0..n).map(bundle), &mut handles).unwrap();
    let mut rng = Pcg64Mcg::seed_from_u64(n as u64);
    handles.shuffle(&mut rng);
    for e in handles.drain(..n / 3) {
        world.despawn(e).unwrap();
    }
    let mut respawned = Vec::new();
    world.spawn_batch_into((0..n / 3).map(bundle), &mut respawned).unwrap();
    handles.extend(respawned);
    (world, handles)
}

fn spawn(c: &mut Criterion) {
    let mut group = c.benchmark_group("spawn");
    for n in SIZES {
        // The floor: allocate five `Vec`s and push the same four values and a handle, as a world must (its
        // allocations happen inside the timed part too).
        group.bench_with_input(BenchmarkId::new("raw-vec", n), &n, |b, &n| {
            b.iter(|| {
                let (mut t, mut p, mut r, mut v, mut e) = (
                    Vec::with_capacity(n),
                    Vec::with_capacity(n),
                    Vec::with_capacity(n),
                    Vec::with_capacity(n),
                    Vec::with_capacity(n),
                );
                for (i, (a, b, c, d)) in (0..n).map(bundle).enumerate() {
                    t.push(a);
                    p.push(b);
                    r.push(c);
                    v.push(d);
                    e.push(i as u64);
                }
                (t, p, r, v, e)
            })
        });
        // The reference: hecs, the same workload in the same run (a fresh world per iteration, dropped inside the
        // timed loop as in the common ECS benchmark suites).
        group.bench_with_input(BenchmarkId::new("hecs", n), &n, |b, &n| {
            b.iter(|| {
                let mut world = hecs::World::new();
                world.spawn_batch((0..n).map(bundle)).for_each(drop);
                world
            })
        });
        for backend in Backend::ALL {
            group.bench_with_input(BenchmarkId::new(backend.name(), n), &n, |b, &n| {
                b.iter(|| {
                    let mut world = World::new();
                    world.set_backend(backend);
                    let mut out = Vec::with_capacity(n);
                    world.spawn_batch_into((0..n).map(bundle), &mut out).unwrap();
                    (world, out)
                })
            });
        }
    }
}

/// Spawning into a world that held as many entities before and was cleared: the pools keep their capacity, so
/// this is spawning without allocation (a level reload), beside the fresh-world numbers of `spawn`.
fn spawn_reused(c: &mut Criterion) {
    let mut group = c.benchmark_group("spawn_into_cleared");
    for n in SIZES {
        for backend in Backend::ALL {
            let mut world = World::with_capacity(n as u32);
            world.set_backend(backend);
            let mut out = Vec::with_capacity(n);
            group.bench_with_input(BenchmarkId::new(backend.name(), n), &n, |b, &n| {
                b.iter(|| {
                    world.clear();
                    out.clear();
                    world.spawn_batch_into((0..n).map(bundle), &mut out).unwrap();
                })
            });
        }
    }
}

fn despawn(c: &mut Criterion) {
    let mut group = c.benchmark_group("despawn");
    for n in SIZES {
        for backend in Backend::ALL {
            group.bench_with_input(BenchmarkId::new(backend.name(), n), &n, |b, &n| {
                b.iter_batched(
                    || hot_world(backend, n),
                    |(mut world, handles)| {
                        for e in &handles {
                            world.despawn(*e).unwrap();
                        }
                        world
                    },
                    BatchSize::PerIteration,
                )
            });
            // The same, as one batch: each pool visited once (what the command buffer does with a run of despawns).
            group.bench_with_input(BenchmarkId::new(format!("{}-batch", backend.name()), n), &n, |b, &n| {
                b.iter_batched(
                    || hot_world(backend, n),
                    |(mut world, handles)| {
                        assert_eq!(world.despawn_batch(&handles), handles.len());
                        world
                    },
                    BatchSize::PerIteration,
                )
            });
        }
    }
}

/// hecs holding `n` entities of the same four components (the reference beside the backends).
fn hecs_world(n: usize) -> (hecs::World, Vec<hecs::Entity>) {
    let mut world = hecs::World::new();
    let handles = world.spawn_batch((0..n).map(bundle)).collect();
    (world, handles)
}

/// Adding then removing a component on every entity, three ways: per call on the world (`insert_remove`, with
/// hecs beside it), per call through a view (`insert_remove_view`: the type's storage found once, the liveness
/// check per call kept), and batched (`insert_remove_batch`: `insert_many` / `remove_many`).
fn insert_remove(c: &mut Criterion) {
    for way in ["insert_remove", "insert_remove_view", "insert_remove_batch"] {
        let mut group = c.benchmark_group(way);
        for n in SIZES {
            if way == "insert_remove" {
                let (mut world, handles) = hecs_world(n);
                group.bench_function(BenchmarkId::new("hecs", n), |b| {
                    b.iter(|| {
                        for &e in &handles {
                            world.insert_one(e, Extra(1.0)).unwrap();
                        }
                        for &e in &handles {
                            black_box(world.remove_one::<Extra>(e).unwrap());
                        }
                    })
                });
            }
            for backend in Backend::ALL {
                let (mut world, mut handles) = hot_world(backend, n);
                handles.sort(); // walk in index order, as a system would
                group.bench_function(BenchmarkId::new(backend.name(), n), |b| match way {
                    "insert_remove" => b.iter(|| {
                        for &e in &handles {
                            world.insert(e, Extra(1.0)).unwrap();
                        }
                        for &e in &handles {
                            black_box(world.remove::<Extra>(e).unwrap());
                        }
                    }),
                    "insert_remove_view" => b.iter(|| {
                        let mut extra = world.view_mut::<Extra>();
                        for &e in &handles {
                            extra.insert(e, Extra(1.0)).unwrap();
                        }
                        for &e in &handles {
                            black_box(extra.remove(e).unwrap());
                        }
                    }),
                    _ => b.iter(|| {
                        world.insert_many(handles.iter().map(|&e| (e, Extra(1.0))));
                        black_box(world.remove_many::<Extra>(&handles));
                    }),
                });
            }
        }
    }
}

fn get(c: &mut Criterion) {
    let mut group = c.benchmark_group("get_random");
    for n in SIZES {
        for backend in Backend::ALL {
            let (world, mut handles) = hot_world(backend, n);
            handles.shuffle(&mut Pcg64Mcg::seed_from_u64(7));
            group.bench_function(BenchmarkId::new(backend.name(), n), |b| {
                b.iter(|| {
                    let mut sum = 0.0;
                    for &e in &handles {
                        sum += world.get::<Position>(e).map_or(0.0, |p| p.0.x);
                    }
                    black_box(sum)
                })
            });
        }
    }
}

fn query(c: &mut Criterion) {
    let mut group = c.benchmark_group("query_pos_vel");
    for n in SIZES {
        let mut positions: Vec<Position> = (0..n).map(|i| bundle(i).1).collect();
        let velocities: Vec<Velocity> = (0..n).map(|i| bundle(i).3).collect();
        group.bench_function(BenchmarkId::new("raw-vec", n), |b| {
            b.iter(|| {
                for (p, v) in positions.iter_mut().zip(&velocities) {
                    p.0 += v.0;
                }
                black_box(&mut positions);
            })
        });
        let (mut reference, _) = hecs_world(n);
        group.bench_function(BenchmarkId::new("hecs", n), |b| {
            b.iter(|| reference.query_mut::<(&mut Position, &Velocity)>().into_iter().for_each(|(p, v)| p.0 += v.0))
        });
        for backend in Backend::ALL {
            // Same order: spawned together, so the sparse-set pools are packed alike (lock-step walk).
            let mut world = World::with_capacity(n as u32);
            world.set_backend(backend);
            world.spawn_batch_into((0..n).map(bundle), &mut Vec::new()).unwrap();
            group.bench_function(BenchmarkId::new(backend.name(), n), |b| {
                b.iter(|| world.query::<(&mut Position, &Velocity)>().for_each(|_, (p, v)| p.0 += v.0))
            });
        }
        // Different orders: the hot world's holes put the pools out of step; the smallest drives, the other is probed.
        let (mut world, handles) = hot_world(Backend::SparseSet, n);
        for &e in handles.iter().step_by(2) {
            let v = world.remove::<Velocity>(e).unwrap();
            world.insert(e, v).unwrap();
        }
        group.bench_function(BenchmarkId::new("sparse-set-unaligned", n), |b| {
            b.iter(|| world.query::<(&mut Position, &Velocity)>().for_each(|_, (p, v)| p.0 += v.0))
        });
    }
}

fn switch(c: &mut Criterion) {
    let mut group = c.benchmark_group("switch_100k");
    group.sample_size(10);
    let pairs = [
        (Backend::SparseSet, Backend::HashMap),
        (Backend::SparseSet, Backend::BTree),
        (Backend::SparseSet, Backend::DirectArray),
        (Backend::SparseSet, Backend::Archetype),
        (Backend::Archetype, Backend::SparseSet),
        (Backend::HashMap, Backend::SparseSet),
        (Backend::BTree, Backend::SparseSet),
        (Backend::Archetype, Backend::BTree),
    ];
    for (from, to) in pairs {
        group.bench_function(format!("{}->{}", from.name(), to.name()), |b| {
            b.iter_batched(
                || hot_world(from, 100_000).0,
                |mut world| {
                    world.set_backend(to);
                    world
                },
                BatchSize::PerIteration,
            )
        });
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = spawn, spawn_reused, despawn, insert_remove, get, query, switch
}
criterion_main!(benches);
