//! Saving and loading the 100,000-fighter world (plus its particles and hunters' targets), binary and JSON, and
//! loading onto each backend. Prints the file sizes first. Run: `cargo bench --bench snapshot`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::time::Duration;
use swarm::app::profile::Profiler;
use swarm::ecs::{Backend, Format};
use swarm::sim::snapshot::{load_app, save};
use swarm::sim::{build_app, SimConfig};

fn snapshot(c: &mut Criterion) {
    let n = 100_000;
    let config = SimConfig::with_population(n);
    let mut app = build_app(config.clone(), 1, Backend::SparseSet, config.default_capacity());
    for _ in 0..120 {
        app.update();
    }
    let binary = save(&app.world, Format::Binary).unwrap();
    let json = save(&app.world, Format::Json).unwrap();
    println!(
        "world of {} entities ({n} fighters wanted): binary {} bytes ({:.1} per entity), JSON {} bytes",
        app.world.len(),
        binary.len(),
        binary.len() as f64 / app.world.len() as f64,
        json.len()
    );

    let mut group = c.benchmark_group("snapshot");
    group.bench_function(BenchmarkId::new("save/binary", n), |b| b.iter(|| save(&app.world, Format::Binary).unwrap()));
    group.bench_function(BenchmarkId::new("load/binary", n), |b| {
        b.iter(|| load_app(&binary, Some(Backend::SparseSet), Profiler::new()).unwrap())
    });
    group.bench_function(BenchmarkId::new("save/json", n), |b| b.iter(|| save(&app.world, Format::Json).unwrap()));
    group.bench_function(BenchmarkId::new("load/json", n), |b| {
        b.iter(|| load_app(&json, Some(Backend::SparseSet), Profiler::new()).unwrap())
    });
    for backend in Backend::ALL.into_iter().filter(|&b| b != Backend::SparseSet) {
        let mut on = build_app(config.clone(), 1, backend, config.default_capacity());
        for _ in 0..120 {
            on.update();
        }
        group.bench_function(BenchmarkId::new(format!("save/binary/{}", backend.name()), n), |b| {
            b.iter(|| save(&on.world, Format::Binary).unwrap())
        });
        group.bench_function(BenchmarkId::new(format!("load/binary/{}", backend.name()), n), |b| {
            b.iter(|| load_app(&binary, Some(backend), Profiler::new()).unwrap())
        });
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(10)
}

criterion_group! {
    name = benches;
    config = config();
    targets = snapshot
}
criterion_main!(benches);
