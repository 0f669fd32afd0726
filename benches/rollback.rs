//! Rollback's costs on the game's world: a checkpoint (save, and saved into a full ring), a restore, the two
//! together, and the per-frame checksum (the digest), at 10,000 and 100,000 fighters on every backend; the frame
//! itself beside them for scale.
//! Run: `cargo bench --bench rollback`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::time::Duration;
use swarm::ecs::Backend;
use swarm::sim::{build_app, digest, SimConfig};

fn rollback(c: &mut Criterion) {
    let mut group = c.benchmark_group("rollback");
    for n in [10_000, 100_000] {
        let config = SimConfig::with_population(n);
        for backend in Backend::ALL {
            let mut app = build_app(config.clone(), 1, backend, config.default_capacity());
            app.set_threads(1);
            for _ in 0..120 {
                app.update();
            }
            let name = |what: &str| BenchmarkId::new(format!("{what}/{}", backend.name()), n);
            group.bench_function(name("save"), |b| b.iter(|| app.world.checkpoint().unwrap()));
            // A rewind's ring, full: each save goes into the memory of the checkpoint it forgets.
            let mut ring = swarm::ecs::Checkpoints::new(4);
            let mut frame = 0;
            group.bench_function(name("save into a full ring"), |b| {
                b.iter(|| {
                    frame += 1;
                    ring.save(frame, &app.world).unwrap();
                })
            });
            let saved = app.world.checkpoint().unwrap();
            group.bench_function(name("restore"), |b| b.iter(|| app.world.restore(&saved).unwrap()));
            group.bench_function(name("save+restore"), |b| {
                b.iter(|| {
                    let saved = app.world.checkpoint().unwrap();
                    app.world.restore(&saved).unwrap();
                })
            });
            group.bench_function(name("checksum"), |b| b.iter(|| digest(&app.world)));
            // The frame for scale: restored before each, so every sample runs the same frame.
            group.bench_function(name("frame"), |b| {
                b.iter(|| {
                    app.world.restore(&saved).unwrap();
                    app.update();
                })
            });
        }
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(10)
}

criterion_group! {
    name = benches;
    config = config();
    targets = rollback
}
criterion_main!(benches);
