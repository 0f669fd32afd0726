//! The three ways to sort a sparse set (in-place, permutation + cycle walk, EnTT's hybrid), side by side; `sort_as`; and a two-pool query after `sort_as`
//! against the raw `Vec` floor. Run: `cargo bench --bench sort`.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;
use swarm::ecs::{Entity, SortMethod, SparseSet, World};

fn entity(i: u32) -> Entity {
    Entity::from_parts(i, NonZeroU32::MIN)
}

/// A pool of `n` (index, f32 key) with 16 more bytes of payload, inserted in shuffled order.
fn pool(n: usize, nearly_sorted: bool) -> SparseSet<(f32, [u32; 4])> {
    let mut rng = Pcg64Mcg::seed_from_u64(n as u64);
    let mut indices: Vec<u32> = (0..n as u32).collect();
    indices.shuffle(&mut rng);
    let mut set = SparseSet::new();
    for &i in &indices {
        set.insert(entity(i), (rng.gen::<f32>(), [i; 4]));
    }
    if nearly_sorted {
        // Sorted, then 1% of neighbours swapped: a y-sort one frame after the last.
        set.sort_by(SortMethod::Permutation, |a, b| a.0.total_cmp(&b.0));
        for _ in 0..n / 100 {
            let p = rng.gen_range(0..n.saturating_sub(1));
            set.swap_positions(p, p + 1);
        }
    }
    set
}

fn methods(c: &mut Criterion) {
    for (name, nearly) in [("sort_random", false), ("sort_nearly_sorted", true)] {
        let mut group = c.benchmark_group(name);
        for n in [1_000usize, 10_000, 100_000] {
            let base = pool(n, nearly);
            for method in SortMethod::ALL {
                group.bench_with_input(BenchmarkId::new(method.name(), n), &n, |b, _| {
                    b.iter_batched(
                        || base.clone(),
                        |mut set| {
                            set.sort_by(method, |a, b| a.0.total_cmp(&b.0));
                            set
                        },
                        BatchSize::LargeInput,
                    )
                });
            }
        }
    }
}

fn sort_as(c: &mut Criterion) {
    let mut group = c.benchmark_group("sort_as");
    let n = 100_000;
    let leader = pool(n, false);
    let follower = pool(n, false);
    group.bench_function(BenchmarkId::new("sparse-set", n), |b| {
        b.iter_batched(
            || follower.clone(),
            |mut set| {
                set.sort_as(leader.entities());
                set
            },
            BatchSize::LargeInput,
        )
    });
}

#[derive(Clone, Copy)]
struct Pos(glam::Vec3);
#[derive(Clone, Copy)]
struct Vel(glam::Vec3);

fn query_after_sort_as(c: &mut Criterion) {
    let mut group = c.benchmark_group("query_after_sort_as");
    let n = 10_000;
    let mut positions: Vec<Pos> = (0..n).map(|i| Pos(glam::Vec3::splat(i as f32))).collect();
    let velocities: Vec<Vel> = (0..n).map(|_| Vel(glam::Vec3::ONE)).collect();
    group.bench_function(BenchmarkId::new("raw-vec", n), |b| {
        b.iter(|| {
            for (p, v) in positions.iter_mut().zip(&velocities) {
                p.0 += v.0;
            }
            black_box(&mut positions);
        })
    });
    // Velocities inserted in another order: the pools disagree until `sort_as`.
    let mut world = World::new();
    let mut handles = Vec::new();
    world.spawn_batch_into((0..n).map(|i| (Pos(glam::Vec3::splat(i as f32)),)), &mut handles).unwrap();
    handles.shuffle(&mut Pcg64Mcg::seed_from_u64(3));
    for &e in &handles {
        world.insert(e, Vel(glam::Vec3::ONE)).unwrap();
    }
    group.bench_function(BenchmarkId::new("unaligned", n), |b| {
        b.iter(|| world.query::<(&mut Pos, &Vel)>().for_each(|_, (p, v)| p.0 += v.0))
    });
    let order = world.sparse_set::<Pos>().unwrap().entities().to_vec();
    world.sparse_set_mut::<Vel>().unwrap().sort_as(&order);
    group.bench_function(BenchmarkId::new("after-sort_as", n), |b| {
        b.iter(|| world.query::<(&mut Pos, &Vel)>().for_each(|_, (p, v)| p.0 += v.0))
    });
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
    targets = methods, sort_as, query_after_sort_as
}
criterion_main!(benches);
