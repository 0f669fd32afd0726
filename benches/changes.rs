//! Change detection: a `Changed<T>` pass over 50,000 tracked entities with none, 1 % and 10 % of them changed,
//! beside the plain loop over all of them, on every backend. A pass reads the tail of the type's change log and
//! probes the changed rows, so its cost follows the changed rows, not the tracked ones.
//! Run: `cargo bench --bench changes`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::hint::black_box;
use std::time::Duration;
use swarm::ecs::{Backend, Changed, Entity, World};

#[derive(Clone, Copy)]
struct Pos(#[allow(dead_code)] [f32; 2]);
#[derive(Clone, Copy)]
struct Health(i32);

const N: usize = 50_000;

/// `N` entities with `Pos` and a tracked `Health`; after the world's last clear, `changed` of them (chosen at
/// random) had their health written.
fn world(backend: Backend, changed: usize) -> World {
    let mut world = World::with_capacity(2 * N as u32);
    world.set_backend(backend);
    world.track::<Health>();
    let mut handles: Vec<Entity> = Vec::new();
    world.spawn_batch_into((0..N).map(|i| (Pos([i as f32, 0.0]), Health(100))), &mut handles).unwrap();
    world.clear_trackers();
    handles.shuffle(&mut Pcg64Mcg::seed_from_u64(7));
    for &e in &handles[..changed] {
        world.get_mut::<Health>(e).unwrap().0 -= 1;
    }
    world
}

fn changed_pass(c: &mut Criterion) {
    let mut group = c.benchmark_group("changed_pass_50k");
    for backend in Backend::ALL {
        for (label, changed) in [("none", 0), ("1pct", N / 100), ("10pct", N / 10)] {
            let mut world = world(backend, changed);
            group.bench_function(BenchmarkId::new(label, backend), |b| {
                b.iter(|| {
                    let mut sum = 0i64;
                    world.query::<&Health>().filter::<Changed<Health>>().for_each(|_, h| sum += h.0 as i64);
                    black_box(sum)
                })
            });
        }
        let mut world = world(backend, 0);
        group.bench_function(BenchmarkId::new("plain_loop", backend), |b| {
            b.iter(|| {
                let mut sum = 0i64;
                world.query::<&Health>().for_each(|_, h| sum += h.0 as i64);
                black_box(sum)
            })
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1000))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = changed_pass
}
criterion_main!(benches);
