//! The community's ecs_bench_suite workloads, with the two peers beside the five backends and a raw floor, in one
//! run: hecs (archetypes) and shipyard (sparse sets), each through its fastest single-threaded API. Then what a game
//! with many systems pays per small query, and a frame of heavy churn at 100,000 entities.
//!
//! Run: `cargo bench --bench peers` (or `-- frag_iter` for one group).
//!
//! The workloads, as the suite defines them:
//! - `simple_insert`: a new world, 10,000 entities with `Mat4` and three `Vec3`, dropped (inside the timing);
//! - `simple_iter`: 10,000 such entities, one pass `position += velocity`;
//! - `frag_iter`: 26 component types `A..Z(f32)`, 20 entities each, each entity also with `Data(f32)`; one pass
//!   `data *= 2` over all 520;
//! - `add_remove`: 10,000 entities with `A`; add `B` to each, then remove it from each.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use glam::{Mat4, Vec3};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use shipyard::{Component, EntitiesView, Get, IntoIter, Remove, View, ViewMut};
use std::hint::black_box;
use std::time::Duration;
use swarm::ecs::{Backend, Entity, World};

#[derive(Clone, Copy, Component)]
struct Transform(#[allow(dead_code)] Mat4);
#[derive(Clone, Copy, Component)]
struct Position(Vec3);
#[derive(Clone, Copy, Component)]
struct Rotation(#[allow(dead_code)] Vec3);
#[derive(Clone, Copy, Component)]
struct Velocity(Vec3);

const N: usize = 10_000;

fn bundle() -> (Transform, Position, Rotation, Velocity) {
    (Transform(Mat4::from_scale(Vec3::ONE)), Position(Vec3::X), Rotation(Vec3::X), Velocity(Vec3::X))
}

fn simple_insert(c: &mut Criterion) {
    let mut group = c.benchmark_group("simple_insert");
    // The floor: four `Vec`s allocated and filled, as a world must (its allocations are timed too).
    group.bench_function("raw-vec", |b| {
        b.iter(|| {
            let (mut t, mut p, mut r, mut v) =
                (Vec::with_capacity(N), Vec::with_capacity(N), Vec::with_capacity(N), Vec::with_capacity(N));
            for (a, b, c, d) in (0..N).map(|_| bundle()) {
                t.push(a);
                p.push(b);
                r.push(c);
                v.push(d);
            }
            (t, p, r, v)
        })
    });
    group.bench_function("hecs", |b| {
        b.iter(|| {
            let mut world = hecs::World::new();
            world.spawn_batch((0..N).map(|_| bundle()));
            world
        })
    });
    group.bench_function("shipyard", |b| {
        b.iter(|| {
            let mut world = shipyard::World::new();
            world.bulk_add_entity((0..N).map(|_| bundle()));
            world
        })
    });
    for backend in Backend::ALL {
        group.bench_function(backend.name(), |b| {
            b.iter(|| {
                let mut world = World::new();
                world.set_backend(backend);
                world.spawn_batch((0..N).map(|_| bundle())).unwrap();
                world
            })
        });
    }
}

fn simple_iter(c: &mut Criterion) {
    let mut group = c.benchmark_group("simple_iter");
    let mut positions: Vec<Position> = (0..N).map(|_| bundle().1).collect();
    let velocities: Vec<Velocity> = (0..N).map(|_| bundle().3).collect();
    group.bench_function("raw-vec", |b| {
        b.iter(|| {
            for (p, v) in positions.iter_mut().zip(&velocities) {
                p.0 += v.0;
            }
            black_box(&mut positions);
        })
    });
    let mut hecs_world = hecs::World::new();
    hecs_world.spawn_batch((0..N).map(|_| bundle()));
    group.bench_function("hecs", |b| {
        b.iter(|| {
            for (v, p) in hecs_world.query_mut::<(&Velocity, &mut Position)>() {
                p.0 += v.0;
            }
        })
    });
    let mut shipyard_world = shipyard::World::new();
    shipyard_world.bulk_add_entity((0..N).map(|_| bundle()));
    group.bench_function("shipyard", |b| {
        b.iter(|| {
            shipyard_world.run(|velocities: View<Velocity>, mut positions: ViewMut<Position>| {
                for (v, p) in (&velocities, &mut positions).iter() {
                    p.0 += v.0;
                }
            })
        })
    });
    for backend in Backend::ALL {
        let mut world = World::new();
        world.set_backend(backend);
        world.spawn_batch((0..N).map(|_| bundle())).unwrap();
        group.bench_function(backend.name(), |b| {
            b.iter(|| world.query::<(&Velocity, &mut Position)>().for_each(|_, (v, p)| p.0 += v.0))
        });
    }
}

#[derive(Clone, Copy, Component)]
struct Data(f32);

/// Declares the 26 fragment types and a function that gives each 20 entities with `Data` in each ECS.
macro_rules! fragments {
    ($($name:ident)*) => {
        mod fragment {
            $(#[derive(Clone, Copy, shipyard::Component)] pub struct $name(#[allow(dead_code)] pub f32);)*
        }
        fn frag_worlds(backend: Backend) -> World {
            let mut world = World::new();
            world.set_backend(backend);
            $(world.spawn_batch((0..20).map(|_| (fragment::$name(0.0), Data(1.0)))).unwrap();)*
            world
        }
        fn frag_hecs() -> hecs::World {
            let mut world = hecs::World::new();
            $(world.spawn_batch((0..20).map(|_| (fragment::$name(0.0), Data(1.0))));)*
            world
        }
        fn frag_shipyard() -> shipyard::World {
            let mut world = shipyard::World::new();
            $(world.bulk_add_entity((0..20).map(|_| (fragment::$name(0.0), Data(1.0))));)*
            world
        }
    };
}
fragments!(A B C D E F G H I J K L M N O P Q R S T U V W X Y Z);

fn frag_iter(c: &mut Criterion) {
    let mut group = c.benchmark_group("frag_iter");
    let mut data = vec![Data(1.0); 26 * 20];
    group.bench_function("raw-vec", |b| {
        b.iter(|| {
            for d in &mut data {
                d.0 *= 2.0;
            }
            black_box(&mut data);
        })
    });
    let mut hecs_world = frag_hecs();
    group.bench_function("hecs", |b| {
        b.iter(|| {
            for d in hecs_world.query_mut::<&mut Data>() {
                d.0 *= 2.0;
            }
        })
    });
    let shipyard_world = frag_shipyard();
    group.bench_function("shipyard", |b| {
        b.iter(|| {
            shipyard_world.run(|mut data: ViewMut<Data>| {
                for d in (&mut data).iter() {
                    d.0 *= 2.0;
                }
            })
        })
    });
    for backend in Backend::ALL {
        let mut world = frag_worlds(backend);
        group.bench_function(backend.name(), |b| {
            b.iter(|| world.query::<(&mut Data,)>().for_each(|_, (d,)| d.0 *= 2.0))
        });
    }
}

#[derive(Clone, Copy, Component)]
struct First(#[allow(dead_code)] f32);
#[derive(Clone, Copy, Component)]
struct Second(#[allow(dead_code)] f32);

fn add_remove(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_remove");
    // The floor: a direct array of optional values, indexed by entity.
    let mut slots: Vec<Option<Second>> = vec![None; N];
    let indices: Vec<usize> = (0..N).collect();
    group.bench_function("raw-vec", |b| {
        b.iter(|| {
            for &i in &indices {
                slots[i] = Some(Second(0.0));
            }
            for &i in &indices {
                black_box(slots[i].take());
            }
        })
    });
    let mut hecs_world = hecs::World::new();
    let hecs_handles: Vec<_> = hecs_world.spawn_batch((0..N).map(|_| (First(0.0),))).collect();
    group.bench_function("hecs", |b| {
        b.iter(|| {
            for &e in &hecs_handles {
                hecs_world.insert_one(e, Second(0.0)).unwrap();
            }
            for &e in &hecs_handles {
                black_box(hecs_world.remove_one::<Second>(e).unwrap());
            }
        })
    });
    let mut shipyard_world = shipyard::World::new();
    let shipyard_handles: Vec<_> = shipyard_world.bulk_add_entity((0..N).map(|_| (First(0.0),))).collect();
    group.bench_function("shipyard", |b| {
        b.iter(|| {
            shipyard_world.run(|entities: EntitiesView, mut second: ViewMut<Second>| {
                for &e in &shipyard_handles {
                    entities.add_component(e, &mut second, Second(0.0));
                }
            });
            shipyard_world.run(|mut second: ViewMut<Second>| {
                for &e in &shipyard_handles {
                    black_box(second.remove(e));
                }
            });
        })
    });
    for backend in Backend::ALL {
        let mut world = World::new();
        world.set_backend(backend);
        let mut handles = Vec::new();
        world.spawn_batch_into((0..N).map(|_| (First(0.0),)), &mut handles).unwrap();
        group.bench_function(backend.name(), |b| {
            b.iter(|| {
                let mut second = world.view_mut::<Second>();
                for &e in &handles {
                    second.insert(e, Second(0.0)).unwrap();
                }
                for &e in &handles {
                    black_box(second.remove(e).unwrap());
                }
            })
        });
    }
}

/// What one system's query costs when it finds nothing to do, or one entity: the per-system price of a frame of
/// dozens of systems. The world holds 40 component types, most with thousands of entities.
fn small_query(c: &mut Criterion) {
    let mut group = c.benchmark_group("small_query");
    for backend in Backend::ALL {
        let mut world = frag_worlds(backend);
        world.spawn_batch((0..N).map(|_| bundle())).unwrap();
        let one = world.spawn((First(1.0),)).unwrap();
        world.insert(one, Velocity(Vec3::Y)).unwrap();
        world.query::<(&Second,)>().for_each(|_, _| {}); // registered, never populated
        group.bench_function(BenchmarkId::new("empty", backend.name()), |b| {
            b.iter(|| world.query::<(&mut Second, &Velocity)>().for_each(|_, (s, v)| s.0 += v.0.x))
        });
        group.bench_function(BenchmarkId::new("one", backend.name()), |b| {
            b.iter(|| world.query::<(&mut First, &Velocity)>().for_each(|_, (f, v)| f.0 += v.0.x))
        });
    }
}

/// One frame of heavy churn in a world of 100,000 entities of two shapes: despawn a random 5 %, spawn as many back
/// one by one (alternating the shapes), and write one component by handle for a random 15 %.
mod churn {
    use super::*;

    #[derive(Clone, Copy, Component)]
    pub struct Health(pub f32);
    #[derive(Clone, Copy, Component)]
    pub struct Team(#[allow(dead_code)] pub u8);
    #[derive(Clone, Copy, Component)]
    pub struct Lifetime(#[allow(dead_code)] pub f32);

    pub const SIZE: usize = 100_000;
    pub const TURNOVER: usize = SIZE / 20;
    pub const WRITES: usize = SIZE * 3 / 20;

    pub type Fighter = (Position, Velocity, Health, Team);
    pub type Spark = (Position, Velocity, Health, Lifetime);

    pub fn fighter(i: usize) -> Fighter {
        (Position(Vec3::X * i as f32), Velocity(Vec3::Y), Health(100.0), Team((i % 2) as u8))
    }
    pub fn spark(i: usize) -> Spark {
        (Position(Vec3::X * i as f32), Velocity(Vec3::Y), Health(1.0), Lifetime(0.5))
    }

    /// The random choices of one frame, drawn outside the timing: which handles die (positions into the live list,
    /// applied as swap-removes), and which are written.
    pub struct Plan {
        pub deaths: Vec<usize>,
        pub writes: Vec<usize>,
    }

    pub fn plans(count: usize) -> Vec<Plan> {
        let mut rng = Pcg64Mcg::seed_from_u64(20);
        (0..count)
            .map(|_| Plan {
                deaths: (0..TURNOVER).map(|k| rng.gen_range(0..SIZE - k)).collect(),
                writes: (0..WRITES).map(|_| rng.gen_range(0..SIZE)).collect(),
            })
            .collect()
    }
}

fn churn(c: &mut Criterion) {
    use churn::*;
    let mut group = c.benchmark_group("churn_100k");
    group.sample_size(10);
    let plans = plans(16);

    {
        let mut world = hecs::World::new();
        let mut handles: Vec<hecs::Entity> =
            (0..SIZE).map(|i| if i % 2 == 0 { world.spawn(fighter(i)) } else { world.spawn(spark(i)) }).collect();
        let mut next = 0;
        group.bench_function("hecs", |b| {
            b.iter(|| {
                let plan = &plans[next % plans.len()];
                next += 1;
                for &k in &plan.deaths {
                    world.despawn(handles.swap_remove(k)).unwrap();
                }
                for i in 0..TURNOVER {
                    handles.push(if i % 2 == 0 { world.spawn(fighter(i)) } else { world.spawn(spark(i)) });
                }
                for &k in &plan.writes {
                    if let Ok(h) = world.query_one_mut::<&mut Health>(handles[k]) {
                        h.0 -= 1.0;
                    }
                }
            })
        });
    }
    {
        let mut world = shipyard::World::new();
        let mut handles: Vec<shipyard::EntityId> = (0..SIZE)
            .map(|i| if i % 2 == 0 { world.add_entity(fighter(i)) } else { world.add_entity(spark(i)) })
            .collect();
        let mut next = 0;
        group.bench_function("shipyard", |b| {
            b.iter(|| {
                let plan = &plans[next % plans.len()];
                next += 1;
                for &k in &plan.deaths {
                    world.delete_entity(handles.swap_remove(k));
                }
                for i in 0..TURNOVER {
                    handles.push(if i % 2 == 0 { world.add_entity(fighter(i)) } else { world.add_entity(spark(i)) });
                }
                world.run(|mut health: ViewMut<Health>| {
                    for &k in &plan.writes {
                        if let Ok(mut h) = (&mut health).get(handles[k]) {
                            h.0 -= 1.0;
                        }
                    }
                });
            })
        });
    }
    for backend in Backend::ALL {
        let mut world = World::new();
        world.set_backend(backend);
        let mut handles: Vec<Entity> = (0..SIZE)
            .map(|i| if i % 2 == 0 { world.spawn(fighter(i)) } else { world.spawn(spark(i)) }.unwrap())
            .collect();
        let mut next = 0;
        group.bench_function(backend.name(), |b| {
            b.iter(|| {
                let plan = &plans[next % plans.len()];
                next += 1;
                for &k in &plan.deaths {
                    world.despawn(handles.swap_remove(k)).unwrap();
                }
                for i in 0..TURNOVER {
                    handles.push(if i % 2 == 0 { world.spawn(fighter(i)) } else { world.spawn(spark(i)) }.unwrap());
                }
                let mut health = world.view_mut::<Health>();
                for &k in &plan.writes {
                    if let Some(h) = health.get_mut(handles[k]) {
                        h.0 -= 1.0;
                    }
                }
            })
        });
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = simple_insert, simple_iter, frag_iter, add_remove, small_query, churn
}
criterion_main!(benches);
