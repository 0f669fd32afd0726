//! What the schedule costs on its own: 100 systems that do nothing, run through `App::update`, as function
//! systems on one thread and on a pool of two (all 100 in one batch: they touch nothing), and as exclusive
//! systems (each alone). Run: `cargo bench --bench schedule`.

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;
use swarm::app::{App, Query, Stage};
use swarm::ecs::World;

struct Pos;

fn nothing() {}

fn read_nothing(mut q: Query<&Pos>) {
    q.for_each(|_, _| {});
}

fn exclusive_nothing(_: &mut World) {}

fn app(threads: usize, add: impl Fn(&mut App)) -> App {
    let mut app = App::new();
    app.set_threads(threads);
    for _ in 0..100 {
        add(&mut app);
    }
    app.update(); // the plan and the pool are made on the first frame
    app
}

fn schedule(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule_100_empty_systems");
    for threads in [1, 2] {
        let mut function = app(threads, |app| {
            app.add_systems(Stage::Update, nothing);
        });
        group.bench_function(format!("function/{threads}_threads"), |b| b.iter(|| function.update()));
        let mut query = app(threads, |app| {
            app.add_systems(Stage::Update, read_nothing);
        });
        group.bench_function(format!("empty_query/{threads}_threads"), |b| b.iter(|| query.update()));
    }
    // A hundred exclusive systems clash pairwise: run in the order added, the ambiguity check off.
    let mut exclusive = app(1, |app| {
        app.add_systems(Stage::Update, exclusive_nothing).set_ambiguity_check(false);
    });
    group.bench_function("exclusive/1_thread", |b| b.iter(|| exclusive.update()));
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = schedule
}
criterion_main!(benches);
