//! One headless frame of the whole game per backend, at 10k and 100k fighters (plus their particles), after a
//! warm-up so the population is steady: spawns, fights, deaths and particles all in flight.
//! Run: `cargo bench --bench frame`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::time::Duration;
use swarm::ecs::Backend;
use swarm::sim::{build_app, SimConfig};

fn frame(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame");
    for n in [10_000u32, 100_000] {
        for backend in Backend::ALL {
            if backend == Backend::BTree && n == 100_000 {
                continue; // ~0.2 s a frame: measured by the headless report instead
            }
            let config = SimConfig::with_population(n);
            let mut app = build_app(config.clone(), 1, backend, config.default_capacity());
            app.set_threads(1);
            let warm_up = if n > 50_000 { 120 } else { 300 };
            for _ in 0..warm_up {
                app.update();
            }
            group.bench_function(BenchmarkId::new(backend.name(), n), |b| b.iter(|| app.update()));
        }
    }
    group.finish();
    // The schedule on one thread and on a pool of two (the sparse-set backend).
    let mut group = c.benchmark_group("frame_threads");
    for n in [10_000u32, 100_000] {
        for threads in [1, 2] {
            let config = SimConfig::with_population(n);
            let mut app = build_app(config.clone(), 1, Backend::SparseSet, config.default_capacity());
            app.set_threads(threads);
            for _ in 0..if n > 50_000 { 120 } else { 300 } {
                app.update();
            }
            group.bench_function(BenchmarkId::new(format!("{threads}_threads"), n), |b| b.iter(|| app.update()));
        }
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = frame
}
criterion_main!(benches);
