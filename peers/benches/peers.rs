//! The community's ecs_bench_suite workloads, with four peers beside the five backends and a raw floor, in one
//! run: hecs (archetypes), shipyard (sparse sets), specs (`VecStorage`, joins) and bevy_ecs (tables, query states
//! built outside the timing), each through its fastest single-threaded API, and through its parallel one in the
//! parallel groups. Then what a game with many systems pays per small query, and a frame of heavy churn at 100,000
//! entities.
//!
//! Run: `cargo bench -p swarm-peers` (or `-- frag_iter` for one group). On a shared machine, whose speed moves
//! between runs, `cargo bench -p swarm-peers -- --interleaved` runs each group's contestants in alternating blocks
//! instead and prints each one's median and fastest tenth of the blocks, with the backends' ratios to the fastest
//! peer: the comparison stays fair when the machine slows down halfway through.
//!
//! The workloads, as the suite defines them:
//! - `simple_insert`: a new world, 10,000 entities with `Mat4` and three `Vec3`, dropped (inside the timing);
//! - `simple_iter`: 10,000 such entities, one pass `position += velocity` (each backend by `for_each`, and as
//!   `iter/<backend>` by a `for` loop over the query);
//! - `frag_iter`: 26 component types `A..Z(f32)`, 20 entities each, each entity also with `Data(f32)`; one pass
//!   `data *= 2` over all 520;
//! - `add_remove`: 10,000 entities with `A`; add `B` to each, then remove it from each.
//!
//! - `par_simple_iter` and `heavy_compute`: the parallel workloads (see [`par_simple_iter`]), every contestant
//!   on one rayon pool of the machine's cores (bevy_ecs on its own task pool of as many threads).
//!
//! And not of the suite: `derived_bundle`, the simple_insert bundle spawned as a tuple and as a struct deriving
//! `Bundle`, one at a time and as a batch, per backend.
//!
//! Rows named `raw-...` are floors, hand-written with none of a world's machinery: `raw-vec` one packed array,
//! `raw-tables` (frag_iter) one array per table as an archetype layout must have, `raw-sparse` (add_remove, churn)
//! the textbook sparse set, `raw-paged` (add_remove, churn) the same with its index map in pages as the sparse-set
//! backend keeps it, `raw-dense` (churn) the direct array, `raw-erased` and `raw-erased-paged` (churn) the textbook
//! sets, flat or paged, behind trait objects, as a world of run-time component types holds them without `unsafe`;
//! in the frame, `raw-sparse` one sparse index for four pools packed alike (a grouped layout) and `raw-pools` one
//! textbook sparse set per component (the sparse-set layout's own floor). A backend does at least its layout's
//! floor's work; a row below its floor is code placement (see docs/PERFORMANCE.md), not less work.

use bevy_ecs::world::World as BevyWorld;
use criterion::Criterion;
use glam::{Mat4, Vec3};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use shipyard::{EntitiesView, Get, IntoIter, Remove, View, ViewMut};
use specs::{Builder, Join, WorldExt};
use std::hint::black_box;
use std::time::{Duration, Instant};
use swarm::ecs::{Backend, Entity, World};

/// Declares a component type of every ECS here (swarm's, hecs' and any `'static` type already are).
macro_rules! component {
    ($(#[$meta:meta])* $vis:vis struct $name:ident($($field:tt)*)) => {
        #[derive(Clone, Copy, shipyard::Component, bevy_ecs::component::Component)]
        $(#[$meta])* $vis struct $name($($field)*);
        impl specs::Component for $name {
            type Storage = specs::VecStorage<Self>;
        }
    };
}

component!(struct Transform(Mat4));
component!(struct Position(Vec3));
component!(struct Rotation(#[allow(dead_code)] Vec3));
component!(struct Velocity(Vec3));

/// A specs world with `T..` registered.
macro_rules! specs_world {
    ($($t:ty),*) => {{
        let mut world = specs::World::new();
        $(world.register::<$t>();)*
        world
    }};
}

/// A specs world of the suite's four-component entities.
fn specs_of(bundles: impl Iterator<Item = (Transform, Position, Rotation, Velocity)>) -> specs::World {
    let mut world = specs_world!(Transform, Position, Rotation, Velocity);
    for (t, p, r, v) in bundles {
        world.create_entity().with(t).with(p).with(r).with(v).build();
    }
    world
}

const N: usize = 10_000;

fn bundle() -> (Transform, Position, Rotation, Velocity) {
    (Transform(Mat4::from_scale(Vec3::ONE)), Position(Vec3::X), Rotation(Vec3::X), Velocity(Vec3::X))
}

/// One contestant of a workload: its name and one timed iteration (setup is done before, outside the timing).
type Case = (String, Box<dyn FnMut()>);

fn case(name: impl Into<String>, f: impl FnMut() + 'static) -> Case {
    (name.into(), Box::new(f))
}

fn simple_insert() -> Vec<Case> {
    let mut cases = vec![
        // The floor: four `Vec`s allocated and filled, as a world must (its allocations are timed too).
        case("raw-vec", || {
            let (mut t, mut p, mut r, mut v) =
                (Vec::with_capacity(N), Vec::with_capacity(N), Vec::with_capacity(N), Vec::with_capacity(N));
            for (a, b, c, d) in (0..N).map(|_| bundle()) {
                t.push(a);
                p.push(b);
                r.push(c);
                v.push(d);
            }
            black_box((t, p, r, v));
        }),
        case("hecs", || {
            let mut world = hecs::World::new();
            world.spawn_batch((0..N).map(|_| bundle()));
            black_box(world);
        }),
        case("shipyard", || {
            let mut world = shipyard::World::new();
            world.bulk_add_entity((0..N).map(|_| bundle()));
            black_box(world);
        }),
        case("specs", || {
            let mut world = specs_world!(Transform, Position, Rotation, Velocity);
            for (t, p, r, v) in (0..N).map(|_| bundle()) {
                world.create_entity().with(t).with(p).with(r).with(v).build();
            }
            black_box(world);
        }),
        case("bevy_ecs", || {
            let mut world = BevyWorld::new();
            world.spawn_batch((0..N).map(|_| bundle()));
            black_box(world);
        }),
    ];
    for backend in Backend::ALL {
        cases.push(case(backend.name(), move || {
            let mut world = World::new();
            world.set_backend(backend);
            world.spawn_batch((0..N).map(|_| bundle())).unwrap();
            black_box(world);
        }));
    }
    cases
}

/// The simple_insert bundle as a struct deriving `Bundle`: it must spawn as fast as the tuple.
#[derive(swarm::ecs::Bundle)]
struct Body {
    transform: Transform,
    position: Position,
    rotation: Rotation,
    velocity: Velocity,
}

/// Not a suite workload: 10,000 spawns one at a time, and one batch, of the tuple and of the derived `Body`, per
/// backend (the derived bundle's cost against the tuple it stands for).
fn derived_bundle() -> Vec<Case> {
    let body = || {
        let (transform, position, rotation, velocity) = bundle();
        Body { transform, position, rotation, velocity }
    };
    let mut cases = Vec::new();
    for backend in Backend::ALL {
        let fresh = move || {
            let mut world = World::with_capacity(N as u32);
            world.set_backend(backend);
            world
        };
        cases.push(case(format!("spawn/tuple/{backend}"), move || {
            let mut world = fresh();
            (0..N).for_each(|_| _ = black_box(world.spawn(bundle()).unwrap()));
            black_box(world);
        }));
        cases.push(case(format!("spawn/derived/{backend}"), move || {
            let mut world = fresh();
            (0..N).for_each(|_| _ = black_box(world.spawn(body()).unwrap()));
            black_box(world);
        }));
        cases.push(case(format!("batch/tuple/{backend}"), move || {
            let mut world = fresh();
            world.spawn_batch((0..N).map(|_| bundle())).unwrap();
            black_box(world);
        }));
        cases.push(case(format!("batch/derived/{backend}"), move || {
            let mut world = fresh();
            world.spawn_batch((0..N).map(|_| body())).unwrap();
            black_box(world);
        }));
    }
    cases
}

fn simple_iter() -> Vec<Case> {
    let mut positions: Vec<Position> = (0..N).map(|_| bundle().1).collect();
    let velocities: Vec<Velocity> = (0..N).map(|_| bundle().3).collect();
    let mut hecs_world = hecs::World::new();
    hecs_world.spawn_batch((0..N).map(|_| bundle()));
    let mut shipyard_world = shipyard::World::new();
    shipyard_world.bulk_add_entity((0..N).map(|_| bundle()));
    let specs_world = specs_of((0..N).map(|_| bundle()));
    let mut bevy_world = BevyWorld::new();
    bevy_world.spawn_batch((0..N).map(|_| bundle()));
    let mut bevy_query = bevy_world.query::<(&Velocity, &mut Position)>();
    let mut cases = vec![
        case("raw-vec", move || {
            for (p, v) in positions.iter_mut().zip(&velocities) {
                p.0 += v.0;
            }
            black_box(&mut positions);
        }),
        case("specs", move || {
            let (velocities, mut positions) =
                (specs_world.read_storage::<Velocity>(), specs_world.write_storage::<Position>());
            for (v, p) in (&velocities, &mut positions).join() {
                p.0 += v.0;
            }
        }),
        case("bevy_ecs", move || {
            for (v, mut p) in bevy_query.iter_mut(&mut bevy_world) {
                p.0 += v.0;
            }
        }),
        case("hecs", move || {
            for (v, p) in hecs_world.query_mut::<(&Velocity, &mut Position)>() {
                p.0 += v.0;
            }
        }),
        case("shipyard", move || {
            shipyard_world.run(|velocities: View<Velocity>, mut positions: ViewMut<Position>| {
                for (v, p) in (&velocities, &mut positions).iter() {
                    p.0 += v.0;
                }
            })
        }),
    ];
    for backend in Backend::ALL {
        let mut world = World::new();
        world.set_backend(backend);
        world.spawn_batch((0..N).map(|_| bundle())).unwrap();
        cases.push(case(backend.name(), move || {
            world.query::<(&Velocity, &mut Position)>().for_each(|_, (v, p)| p.0 += v.0)
        }));
    }
    // The same pass as a `for` loop over the query's iterator.
    for backend in Backend::ALL {
        let mut world = World::new();
        world.set_backend(backend);
        world.spawn_batch((0..N).map(|_| bundle())).unwrap();
        cases.push(case(format!("iter/{backend}"), move || {
            for (_, (v, p)) in world.query::<(&Velocity, &mut Position)>() {
                p.0 += v.0;
            }
        }));
    }
    cases
}

component!(struct Data(f32));

/// Declares the 26 fragment types and a function that gives each 20 entities with `Data` in each ECS.
macro_rules! fragments {
    ($($name:ident)*) => {
        mod fragment {
            $(component!(pub struct $name(#[allow(dead_code)] pub f32));)*
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
        fn frag_specs() -> specs::World {
            let mut world = specs_world!(Data $(, fragment::$name)*);
            $(for _ in 0..20 {
                world.create_entity().with(fragment::$name(0.0)).with(Data(1.0)).build();
            })*
            world
        }
        fn frag_bevy() -> BevyWorld {
            let mut world = BevyWorld::new();
            $(world.spawn_batch((0..20).map(|_| (fragment::$name(0.0), Data(1.0))));)*
            world
        }
    };
}
fragments!(A B C D E F G H I J K L M N O P Q R S T U V W X Y Z);

fn frag_iter() -> Vec<Case> {
    let mut data = vec![Data(1.0); 26 * 20];
    let mut hecs_world = frag_hecs();
    let shipyard_world = frag_shipyard();
    let specs_world = frag_specs();
    let mut bevy_world = frag_bevy();
    let mut bevy_query = bevy_world.query::<&mut Data>();
    // The floor of a layout of tables: 26 runs of 20, each its own loop.
    let mut tables = vec![vec![Data(1.0); 20]; 26];
    let mut cases = vec![
        case("raw-vec", move || {
            for d in &mut data {
                d.0 *= 2.0;
            }
            black_box(&mut data);
        }),
        case("raw-tables", move || {
            for table in &mut tables {
                for d in table.iter_mut() {
                    d.0 *= 2.0;
                }
            }
            black_box(&mut tables);
        }),
        case("hecs", move || {
            for d in hecs_world.query_mut::<&mut Data>() {
                d.0 *= 2.0;
            }
        }),
        case("shipyard", move || {
            shipyard_world.run(|mut data: ViewMut<Data>| {
                for d in (&mut data).iter() {
                    d.0 *= 2.0;
                }
            })
        }),
        case("specs", move || {
            for d in (&mut specs_world.write_storage::<Data>()).join() {
                d.0 *= 2.0;
            }
        }),
        case("bevy_ecs", move || {
            for mut d in bevy_query.iter_mut(&mut bevy_world) {
                d.0 *= 2.0;
            }
        }),
    ];
    for backend in Backend::ALL {
        let mut world = frag_worlds(backend);
        cases.push(case(backend.name(), move || world.query::<&mut Data>().for_each(|_, d| d.0 *= 2.0)));
    }
    cases
}

component!(struct First(#[allow(dead_code)] f32));
component!(struct Second(#[allow(dead_code)] f32));

fn add_remove() -> Vec<Case> {
    // The floor: a direct array of optional values, indexed by entity.
    let mut slots: Vec<Option<Second>> = vec![None; N];
    let indices: Vec<usize> = (0..N).collect();
    let mut hecs_world = hecs::World::new();
    let hecs_handles: Vec<_> = hecs_world.spawn_batch((0..N).map(|_| (First(0.0),))).collect();
    let mut shipyard_world = shipyard::World::new();
    let shipyard_handles: Vec<_> = shipyard_world.bulk_add_entity((0..N).map(|_| (First(0.0),))).collect();
    let mut specs_world = specs_world!(First, Second);
    let specs_handles: Vec<_> = (0..N).map(|_| specs_world.create_entity().with(First(0.0)).build()).collect();
    let mut bevy_world = BevyWorld::new();
    let bevy_handles: Vec<_> = bevy_world.spawn_batch((0..N).map(|_| (First(0.0),))).collect();
    let mut cases = vec![
        case("raw-vec", move || {
            for &i in &indices {
                slots[i] = Some(Second(0.0));
            }
            for &i in &indices {
                black_box(slots[i].take());
            }
        }),
        // The sparse-set layout's floors: the textbook set, flat or with its index map in pages (as the backend
        // keeps it).
        textbook_add_remove::<churn::RawSparse<Second>>("raw-sparse"),
        textbook_add_remove::<churn::RawPaged<Second>>("raw-paged"),
        case("hecs", move || {
            for &e in &hecs_handles {
                hecs_world.insert_one(e, Second(0.0)).unwrap();
            }
            for &e in &hecs_handles {
                black_box(hecs_world.remove_one::<Second>(e).unwrap());
            }
        }),
        case("shipyard", move || {
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
        }),
        case("specs", move || {
            let mut second = specs_world.write_storage::<Second>();
            for &e in &specs_handles {
                second.insert(e, Second(0.0)).unwrap();
            }
            for &e in &specs_handles {
                black_box(second.remove(e).unwrap());
            }
        }),
        case("bevy_ecs", move || {
            for &e in &bevy_handles {
                bevy_world.entity_mut(e).insert(Second(0.0));
            }
            for &e in &bevy_handles {
                black_box(bevy_world.entity_mut(e).take::<Second>().unwrap());
            }
        }),
    ];
    for backend in Backend::ALL {
        let mut world = World::new();
        world.set_backend(backend);
        let mut handles = Vec::new();
        world.spawn_batch_into((0..N).map(|_| (First(0.0),)), &mut handles).unwrap();
        cases.push(case(backend.name(), move || {
            let mut second = world.view_mut::<Second>();
            for &e in &handles {
                second.insert(e, Second(0.0)).unwrap();
            }
            for &e in &handles {
                black_box(second.remove(e).unwrap());
            }
        }));
    }
    cases
}

/// add_remove on a textbook pool `P`, each handle checked against its generation first.
fn textbook_add_remove<P: churn::Textbook<Second>>(name: &str) -> Case {
    let mut handles = churn::Handles::default();
    let keys: Vec<churn::Handle> = (0..N).map(|_| handles.alloc()).collect();
    let mut pool = P::default();
    case(name, move || {
        for &handle in &keys {
            assert!(handles.alive(handle));
            pool.put(handle.0, Second(0.0));
        }
        for &handle in &keys {
            assert!(handles.alive(handle));
            black_box(pool.take(handle.0));
        }
    })
}

/// What one system's query costs when it finds nothing to do, or one entity: the per-system price of a frame of
/// dozens of systems. The world holds 40 component types, most with thousands of entities.
fn small_query() -> Vec<Case> {
    let mut cases = Vec::new();
    for backend in Backend::ALL {
        let mut empty = frag_worlds(backend);
        let mut one = frag_worlds(backend);
        for world in [&mut empty, &mut one] {
            world.spawn_batch((0..N).map(|_| bundle())).unwrap();
            let first = world.spawn((First(1.0),)).unwrap();
            world.insert(first, Velocity(Vec3::Y)).unwrap();
            world.query::<&Second>().for_each(|_, _| {}); // registered, never populated
        }
        cases.push(case(format!("empty/{}", backend.name()), move || {
            empty.query::<(&mut Second, &Velocity)>().for_each(|_, (s, v)| s.0 += v.0.x)
        }));
        cases.push(case(format!("one/{}", backend.name()), move || {
            one.query::<(&mut First, &Velocity)>().for_each(|_, (f, v)| f.0 += v.0.x)
        }));
    }
    cases
}

/// One frame of heavy churn in a world of 100,000 entities of two shapes: despawn a random 5 %, spawn as many back
/// one by one (alternating the shapes), and write one component by handle for a random 15 %.
mod churn {
    use super::*;

    component!(pub struct Health(pub f32));
    component!(pub struct Team(#[allow(dead_code)] pub u8));
    component!(pub struct Lifetime(#[allow(dead_code)] pub f32));

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

    /// A handle of the floors: an index and the generation it was given under.
    #[derive(Clone, Copy)]
    pub struct Handle(pub u32, u32);

    /// The floors' entity allocator: a generation per index and a stack of free indices (reused last-freed
    /// first, as the world's allocator does).
    #[derive(Default)]
    pub struct Handles {
        generations: Vec<u32>,
        free: Vec<u32>,
    }

    impl Handles {
        pub fn alloc(&mut self) -> Handle {
            let index = self.free.pop().unwrap_or_else(|| {
                self.generations.push(0);
                self.generations.len() as u32 - 1
            });
            Handle(index, self.generations[index as usize])
        }
        pub fn alive(&self, Handle(index, generation): Handle) -> bool {
            self.generations.get(index as usize) == Some(&generation)
        }
        /// Frees `handle`, which must be alive.
        pub fn free(&mut self, Handle(index, _): Handle) {
            self.generations[index as usize] += 1;
            self.free.push(index);
        }
    }

    /// What a textbook sparse set packs beside its values: an index (the churn's floor), or a whole handle (the
    /// frame's, whose walks hand handles out).
    pub trait Key: Copy {
        fn index(self) -> u32;
    }

    impl Key for u32 {
        fn index(self) -> u32 {
            self
        }
    }

    impl Key for Handle {
        fn index(self) -> u32 {
            self.0
        }
    }

    /// The textbook removal from the packed arrays: the last key and value move into `position`'s place. Returns the
    /// value taken and the key that moved, if one did (its entry must then point at `position`).
    fn swap_out<T, K: Copy>(dense: &mut Vec<K>, values: &mut Vec<T>, position: usize) -> (T, Option<K>) {
        let last = *dense.last().expect("present, so not empty");
        dense.swap_remove(position);
        let value = values.swap_remove(position);
        (value, (position < dense.len()).then_some(last))
    }

    /// The floor of the sparse-set layout: the textbook set (a flat index -> position array, packed keys and
    /// packed values, swap-and-pop removal), with none of a world's machinery.
    pub struct RawSparse<T, K = u32> {
        sparse: Vec<u32>,
        pub dense: Vec<K>,
        pub values: Vec<T>,
    }

    impl<T, K> Default for RawSparse<T, K> {
        fn default() -> Self {
            Self { sparse: Vec::new(), dense: Vec::new(), values: Vec::new() }
        }
    }

    impl<T, K: Key> RawSparse<T, K> {
        pub fn insert(&mut self, key: K, value: T) {
            let index = key.index() as usize;
            if self.sparse.len() <= index {
                self.sparse.resize(index + 1, u32::MAX);
            }
            self.sparse[index] = self.dense.len() as u32;
            self.dense.push(key);
            self.values.push(value);
        }
        pub fn remove(&mut self, index: u32) {
            self.take(index);
        }
        /// Removes and returns `index`'s value (swap-and-pop).
        pub fn take(&mut self, index: u32) -> Option<T> {
            let slot = self.sparse.get_mut(index as usize)?;
            if *slot == u32::MAX {
                return None;
            }
            let position = std::mem::replace(slot, u32::MAX) as usize;
            let (value, moved) = swap_out(&mut self.dense, &mut self.values, position);
            if let Some(moved) = moved {
                self.sparse[moved.index() as usize] = position as u32;
            }
            Some(value)
        }
        pub fn get_mut(&mut self, index: u32) -> Option<&mut T> {
            match self.sparse.get(index as usize) {
                Some(&position) if position != u32::MAX => Some(&mut self.values[position as usize]),
                _ => None,
            }
        }
    }

    /// The textbook set with its index -> position map in pages of 4,096 entries made on first touch, as the
    /// sparse-set backend keeps it (so a pool's memory follows the pages its entities fall in, not the highest
    /// index): each lookup reads the page's address before the entry.
    pub struct RawPaged<T> {
        pages: Vec<Option<Box<[u32; PAGE]>>>,
        dense: Vec<u32>,
        values: Vec<T>,
    }

    const PAGE: usize = 4096;

    impl<T> Default for RawPaged<T> {
        fn default() -> Self {
            Self { pages: Vec::new(), dense: Vec::new(), values: Vec::new() }
        }
    }

    impl<T> RawPaged<T> {
        /// The entry of `index`, making its page (filled with `u32::MAX`) on first touch.
        fn entry(&mut self, index: u32) -> &mut u32 {
            let (page, offset) = (index as usize / PAGE, index as usize % PAGE);
            if !matches!(self.pages.get(page), Some(Some(_))) {
                return &mut self.make_page(page)[offset];
            }
            match self.pages.get_mut(page) {
                Some(Some(entries)) => &mut entries[offset],
                _ => unreachable!("the page was just checked"),
            }
        }
        #[cold]
        fn make_page(&mut self, page: usize) -> &mut [u32; PAGE] {
            if self.pages.len() <= page {
                self.pages.resize_with(page + 1, || None);
            }
            self.pages[page].get_or_insert_with(|| Box::new([u32::MAX; PAGE]))
        }
        pub fn insert(&mut self, index: u32, value: T) {
            *self.entry(index) = self.dense.len() as u32;
            self.dense.push(index);
            self.values.push(value);
        }
        pub fn remove(&mut self, index: u32) {
            self.take(index);
        }
        /// Removes and returns `index`'s value (swap-and-pop).
        pub fn take(&mut self, index: u32) -> Option<T> {
            let Some(Some(page)) = self.pages.get_mut(index as usize / PAGE) else { return None };
            let slot = &mut page[index as usize % PAGE];
            if *slot == u32::MAX {
                return None;
            }
            let position = std::mem::replace(slot, u32::MAX) as usize;
            let (value, moved) = swap_out(&mut self.dense, &mut self.values, position);
            if let Some(moved) = moved {
                match self.pages.get_mut(moved as usize / PAGE) {
                    Some(Some(page)) => page[moved as usize % PAGE] = position as u32,
                    _ => unreachable!("a present index has its page"),
                }
            }
            Some(value)
        }
        pub fn get_mut(&mut self, index: u32) -> Option<&mut T> {
            match self.pages.get(index as usize / PAGE).and_then(Option::as_ref).map(|page| page[index as usize % PAGE])
            {
                Some(position) if position != u32::MAX => Some(&mut self.values[position as usize]),
                _ => None,
            }
        }
    }

    /// The floor of the direct-array layout: a `Vec<Option<T>>` indexed by entity index.
    pub struct RawDense<T>(Vec<Option<T>>);

    impl<T> Default for RawDense<T> {
        fn default() -> Self {
            Self(Vec::new())
        }
    }

    impl<T> RawDense<T> {
        pub fn insert(&mut self, index: u32, value: T) {
            if self.0.len() <= index as usize {
                self.0.resize_with(index as usize + 1, || None);
            }
            self.0[index as usize] = Some(value);
        }
        pub fn remove(&mut self, index: u32) {
            if let Some(slot) = self.0.get_mut(index as usize) {
                *slot = None;
            }
        }
        pub fn get_mut(&mut self, index: u32) -> Option<&mut T> {
            self.0.get_mut(index as usize).and_then(Option::as_mut)
        }
    }

    /// The same frame on hand-written pools of one layout (`RawSparse`, `RawPaged` or `RawDense`), one per component
    /// type, with a despawn asking every pool as the world does.
    macro_rules! floor {
        ($name:literal, $pool:ident, $plans:expr) => {{
            #[derive(Default)]
            struct Floor {
                handles: Handles,
                position: $pool<Position>,
                velocity: $pool<Velocity>,
                health: $pool<Health>,
                team: $pool<Team>,
                lifetime: $pool<Lifetime>,
            }
            impl FloorWorld for Floor {
                fn spawn(&mut self, i: usize) -> Handle {
                    let handle = self.handles.alloc();
                    if i % 2 == 0 {
                        let (p, v, h, t) = fighter(i);
                        self.position.insert(handle.0, p);
                        self.velocity.insert(handle.0, v);
                        self.health.insert(handle.0, h);
                        self.team.insert(handle.0, t);
                    } else {
                        let (p, v, h, l) = spark(i);
                        self.position.insert(handle.0, p);
                        self.velocity.insert(handle.0, v);
                        self.health.insert(handle.0, h);
                        self.lifetime.insert(handle.0, l);
                    }
                    handle
                }
                fn despawn(&mut self, handle: Handle) {
                    if self.handles.alive(handle) {
                        self.position.remove(handle.0);
                        self.velocity.remove(handle.0);
                        self.health.remove(handle.0);
                        self.team.remove(handle.0);
                        self.lifetime.remove(handle.0);
                        self.handles.free(handle);
                    }
                }
                fn write(&mut self, handles: &[Handle], writes: &[usize]) {
                    for &k in writes {
                        let handle = handles[k];
                        if self.handles.alive(handle) {
                            if let Some(h) = self.health.get_mut(handle.0) {
                                h.0 -= 1.0;
                            }
                        }
                    }
                }
            }
            churn_case($name, Floor::default(), $plans)
        }};
    }
    pub(crate) use floor;

    /// What the churn frame asks of a floor.
    pub trait FloorWorld {
        fn spawn(&mut self, i: usize) -> Handle;
        /// Despawns `handle` if it is alive.
        fn despawn(&mut self, handle: Handle);
        /// `health -= 1` for each of `writes` (positions into `handles`) still alive, the pool found once.
        fn write(&mut self, handles: &[Handle], writes: &[usize]);
    }

    /// The churn frame on a floor: `SIZE` spawned first, then per iteration one plan's deaths, `TURNOVER` spawns
    /// and its writes.
    pub fn churn_case(name: &str, mut world: impl FloorWorld + 'static, plans: std::rc::Rc<Vec<Plan>>) -> Case {
        let mut handles: Vec<Handle> = (0..SIZE).map(|i| world.spawn(i)).collect();
        let mut next = 0;
        case(name, move || {
            let plan = &plans[next % plans.len()];
            next += 1;
            for &k in &plan.deaths {
                world.despawn(handles.swap_remove(k));
            }
            for i in 0..TURNOVER {
                handles.push(world.spawn(i));
            }
            world.write(&handles, &plan.writes);
        })
    }

    /// What a world of pools of types it learns at run time keeps per pool, without `unsafe`: a textbook sparse set
    /// behind a trait object, removed from by one dynamic call and reached by its type through a downcast.
    pub trait ErasedSparse {
        fn remove(&mut self, index: u32);
        fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
    }

    /// A textbook pool of `T`, as add_remove and the erased floor (once downcast) use it.
    pub trait Textbook<T>: ErasedSparse + Default + 'static {
        fn put(&mut self, index: u32, value: T);
        fn take(&mut self, index: u32) -> Option<T>;
        fn value_mut(&mut self, index: u32) -> Option<&mut T>;
    }

    /// Which textbook sets the erased floor holds: `Flat` (`RawSparse`) or `Paged` (`RawPaged`).
    pub trait Layout: 'static {
        type Pool<T: 'static>: Textbook<T>;
    }

    pub struct Flat;
    pub struct Paged;

    impl Layout for Flat {
        type Pool<T: 'static> = RawSparse<T>;
    }

    impl Layout for Paged {
        type Pool<T: 'static> = RawPaged<T>;
    }

    macro_rules! textbook {
        ($pool:ident) => {
            impl<T: 'static> ErasedSparse for $pool<T> {
                fn remove(&mut self, index: u32) {
                    $pool::remove(self, index);
                }
                fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
                    self
                }
            }

            impl<T: 'static> Textbook<T> for $pool<T> {
                fn put(&mut self, index: u32, value: T) {
                    $pool::insert(self, index, value);
                }
                fn take(&mut self, index: u32) -> Option<T> {
                    $pool::take(self, index)
                }
                fn value_mut(&mut self, index: u32) -> Option<&mut T> {
                    $pool::get_mut(self, index)
                }
            }
        };
    }
    textbook!(RawSparse);
    textbook!(RawPaged);

    /// The floor of the sparse-set layout as a world with run-time component types must hold it: the textbook
    /// sets of `L`, one per component, in a list of trait objects (ids fixed, so no type registry). A spawn
    /// downcasts the pool of each component it puts, a despawn asks every pool through one dynamic call each, and
    /// the writes downcast the health pool once.
    pub struct Erased<L: Layout> {
        handles: Handles,
        pools: Vec<Box<dyn ErasedSparse>>,
        layout: std::marker::PhantomData<L>,
    }

    impl<L: Layout> Erased<L> {
        const POSITION: usize = 0;
        const VELOCITY: usize = 1;
        const HEALTH: usize = 2;
        const TEAM: usize = 3;
        const LIFETIME: usize = 4;

        pub fn new() -> Self {
            let pools: Vec<Box<dyn ErasedSparse>> = vec![
                Box::new(L::Pool::<Position>::default()),
                Box::new(L::Pool::<Velocity>::default()),
                Box::new(L::Pool::<Health>::default()),
                Box::new(L::Pool::<Team>::default()),
                Box::new(L::Pool::<Lifetime>::default()),
            ];
            Self { handles: Handles::default(), pools, layout: std::marker::PhantomData }
        }
        fn put<T: 'static>(&mut self, id: usize, index: u32, value: T) {
            let pool: &mut L::Pool<T> = self.pools[id].as_any_mut().downcast_mut().expect("the pool of that type");
            pool.put(index, value);
        }
    }

    impl<L: Layout> FloorWorld for Erased<L> {
        fn spawn(&mut self, i: usize) -> Handle {
            let handle = self.handles.alloc();
            if i.is_multiple_of(2) {
                let (p, v, h, t) = fighter(i);
                self.put(Self::POSITION, handle.0, p);
                self.put(Self::VELOCITY, handle.0, v);
                self.put(Self::HEALTH, handle.0, h);
                self.put(Self::TEAM, handle.0, t);
            } else {
                let (p, v, h, l) = spark(i);
                self.put(Self::POSITION, handle.0, p);
                self.put(Self::VELOCITY, handle.0, v);
                self.put(Self::HEALTH, handle.0, h);
                self.put(Self::LIFETIME, handle.0, l);
            }
            handle
        }
        fn despawn(&mut self, handle: Handle) {
            if self.handles.alive(handle) {
                for pool in &mut self.pools {
                    pool.remove(handle.0);
                }
                self.handles.free(handle);
            }
        }
        fn write(&mut self, handles: &[Handle], writes: &[usize]) {
            let Self { handles: alive, pools, .. } = self;
            let health: &mut L::Pool<Health> =
                pools[Self::HEALTH].as_any_mut().downcast_mut().expect("the pool of that type");
            for &k in writes {
                let handle = handles[k];
                if alive.alive(handle) {
                    if let Some(h) = health.value_mut(handle.0) {
                        h.0 -= 1.0;
                    }
                }
            }
        }
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

fn churn() -> Vec<Case> {
    use churn::*;
    let plans = std::rc::Rc::new(plans(16));
    let mut cases = vec![
        floor!("raw-sparse", RawSparse, plans.clone()),
        floor!("raw-paged", RawPaged, plans.clone()),
        floor!("raw-dense", RawDense, plans.clone()),
        churn_case("raw-erased", Erased::<Flat>::new(), plans.clone()),
        churn_case("raw-erased-paged", Erased::<Paged>::new(), plans.clone()),
    ];
    {
        let mut world = hecs::World::new();
        let mut handles: Vec<hecs::Entity> =
            (0..SIZE).map(|i| if i % 2 == 0 { world.spawn(fighter(i)) } else { world.spawn(spark(i)) }).collect();
        let (plans, mut next) = (plans.clone(), 0);
        cases.push(case("hecs", move || {
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
        }));
    }
    {
        let mut world = shipyard::World::new();
        let mut handles: Vec<shipyard::EntityId> = (0..SIZE)
            .map(|i| if i % 2 == 0 { world.add_entity(fighter(i)) } else { world.add_entity(spark(i)) })
            .collect();
        let (plans, mut next) = (plans.clone(), 0);
        cases.push(case("shipyard", move || {
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
        }));
    }
    {
        let mut world = specs_world!(Position, Velocity, Health, Team, Lifetime);
        let spawn = |world: &mut specs::World, i: usize| {
            if i.is_multiple_of(2) {
                let (p, v, h, t) = fighter(i);
                world.create_entity().with(p).with(v).with(h).with(t).build()
            } else {
                let (p, v, h, l) = spark(i);
                world.create_entity().with(p).with(v).with(h).with(l).build()
            }
        };
        let mut handles: Vec<specs::Entity> = (0..SIZE).map(|i| spawn(&mut world, i)).collect();
        let (plans, mut next) = (plans.clone(), 0);
        cases.push(case("specs", move || {
            let plan = &plans[next % plans.len()];
            next += 1;
            for &k in &plan.deaths {
                world.delete_entity(handles.swap_remove(k)).unwrap();
            }
            // (The deleted entities' components go here: specs removes them at `maintain`.)
            world.maintain();
            for i in 0..TURNOVER {
                handles.push(spawn(&mut world, i));
            }
            let mut health = world.write_storage::<Health>();
            for &k in &plan.writes {
                if let Some(h) = health.get_mut(handles[k]) {
                    h.0 -= 1.0;
                }
            }
        }));
    }
    {
        let mut world = BevyWorld::new();
        let spawn = |world: &mut BevyWorld, i: usize| {
            if i.is_multiple_of(2) {
                world.spawn(fighter(i)).id()
            } else {
                world.spawn(spark(i)).id()
            }
        };
        let mut handles: Vec<bevy_ecs::entity::Entity> = (0..SIZE).map(|i| spawn(&mut world, i)).collect();
        let (plans, mut next) = (plans.clone(), 0);
        cases.push(case("bevy_ecs", move || {
            let plan = &plans[next % plans.len()];
            next += 1;
            for &k in &plan.deaths {
                world.despawn(handles.swap_remove(k));
            }
            for i in 0..TURNOVER {
                handles.push(spawn(&mut world, i));
            }
            for &k in &plan.writes {
                if let Some(mut h) = world.get_mut::<Health>(handles[k]) {
                    h.0 -= 1.0;
                }
            }
        }));
    }
    for backend in Backend::ALL {
        let mut world = World::new();
        world.set_backend(backend);
        let mut handles: Vec<Entity> = (0..SIZE)
            .map(|i| if i % 2 == 0 { world.spawn(fighter(i)) } else { world.spawn(spark(i)) }.unwrap())
            .collect();
        let (plans, mut next) = (plans.clone(), 0);
        cases.push(case(backend.name(), move || {
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
        }));
    }
    cases
}

/// A game's frame, the same steps in every ECS, at 10,000 and 100,000 fighters: integrate (`position +=
/// velocity`, bouncing off the arena's walls), grid every fighter with its team, find hits between enemies sharing
/// a cell (plain code on the grid, the same for all), damage both of each pair through random access by handle,
/// collect the dead, despawn them together, and spawn as many again. The hits do not depend on the order an ECS
/// visits in, so every contestant runs the same world (`-- --check` prints each one's after 30 frames). The arena
/// grows with the count, so the density, the hits and the turnover per fighter are the same at both sizes.
/// `-- --interleaved --phases frame` also prints each contestant's time per phase, over 200 frames timed apart.
mod frame {
    use super::churn::{Health, RawSparse, Team};
    use super::*;

    /// A cell's side, the hit radius, and the arena's area per fighter.
    const CELL: f32 = 16.0;
    const RADIUS: f32 = 6.0;
    const AREA_PER_FIGHTER: f32 = 60.0;

    /// What a frame needs from an ECS; `H` is its handle.
    pub trait Ecs {
        type H: Copy;
        /// `position += velocity`, turning back at the walls of `[0, side]`.
        fn integrate(&mut self, side: f32);
        /// Every fighter: handle, team, position.
        fn each(&mut self, f: impl FnMut(Self::H, u8, Vec3));
        /// `health -= 1` for each handle still alive.
        fn damage(&mut self, hits: &[Self::H]);
        /// The handles with health at 0 or below.
        fn dead(&mut self, out: &mut Vec<Self::H>);
        /// Despawns them all.
        fn despawn(&mut self, dead: &[Self::H]);
        /// Spawns a fighter.
        fn spawn(&mut self, fighter: (Position, Velocity, Health, Team));
    }

    /// The frame's buffers and its random stream (spawn places), kept across frames.
    pub struct Frame<H> {
        side: f32,
        cells: usize,
        grid: Vec<Vec<(H, u8, Vec3)>>,
        hits: Vec<H>,
        dead: Vec<H>,
        rng: Pcg64Mcg,
    }

    pub fn fighter(rng: &mut Pcg64Mcg, side: f32) -> (Position, Velocity, Health, Team) {
        let at = Vec3::new(rng.gen_range(0.0..side), rng.gen_range(0.0..side), 0.0);
        let heading = Vec3::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0), 0.0);
        (Position(at), Velocity(heading), Health(rng.gen_range(20.0..60.0)), Team(rng.gen_range(0..2)))
    }

    impl<H: Copy> Frame<H> {
        /// A world of `n` fighters, and the frame's state.
        pub fn new<E: Ecs<H = H>>(ecs: &mut E, n: usize) -> Self {
            let side = (n as f32 * AREA_PER_FIGHTER).sqrt();
            let cells = (side / CELL).ceil() as usize;
            let mut rng = Pcg64Mcg::seed_from_u64(49);
            for _ in 0..n {
                ecs.spawn(fighter(&mut rng, side));
            }
            Self { side, cells, grid: vec![Vec::new(); cells * cells], hits: Vec::new(), dead: Vec::new(), rng }
        }

        pub fn run<E: Ecs<H = H>>(&mut self, ecs: &mut E) {
            self.run_timed(ecs, None);
        }

        /// [`Frame::run`], adding each phase's time to `phases` if given (in [`PHASES`] order).
        pub fn run_timed<E: Ecs<H = H>>(&mut self, ecs: &mut E, mut phases: Option<&mut [Duration; 7]>) {
            let mut at = phases.as_ref().map(|_| Instant::now());
            let mut lap = |phase: usize| {
                if let (Some(phases), Some(at)) = (phases.as_deref_mut(), at.as_mut()) {
                    let now = Instant::now();
                    phases[phase] += now - *at;
                    *at = now;
                }
            };
            ecs.integrate(self.side);
            lap(0);
            for cell in &mut self.grid {
                cell.clear();
            }
            let (cells, grid) = (self.cells, &mut self.grid);
            ecs.each(|h, team, at| {
                let x = ((at.x / CELL) as usize).min(cells - 1);
                let y = ((at.y / CELL) as usize).min(cells - 1);
                grid[y * cells + x].push((h, team, at));
            });
            lap(1);
            self.hits.clear();
            for cell in &self.grid {
                for (k, &(one, team, at)) in cell.iter().enumerate() {
                    for &(other, their, there) in &cell[k + 1..] {
                        if their != team && at.distance_squared(there) < RADIUS * RADIUS {
                            self.hits.extend([one, other]);
                        }
                    }
                }
            }
            lap(2);
            ecs.damage(&self.hits);
            lap(3);
            self.dead.clear();
            ecs.dead(&mut self.dead);
            lap(4);
            ecs.despawn(&self.dead);
            lap(5);
            for _ in 0..self.dead.len() {
                ecs.spawn(fighter(&mut self.rng, self.side));
            }
            lap(6);
        }
    }

    /// The frame's phases, as `--phases` prints them.
    pub const PHASES: [&str; 7] = ["integrate", "each", "hits", "damage", "dead", "despawn", "spawn"];

    fn bounce(p: &mut Position, v: &mut Velocity, side: f32) {
        p.0 += v.0;
        if !(0.0..=side).contains(&p.0.x) {
            v.0.x = -v.0.x;
        }
        if !(0.0..=side).contains(&p.0.y) {
            v.0.y = -v.0.y;
        }
    }

    /// The floor: one packed array per component (a sparse set whose four pools are packed alike), a sparse
    /// index per handle, swap-and-pop removal.
    #[derive(Default)]
    pub struct Raw {
        handles: churn::Handles,
        sparse: Vec<u32>,
        index: Vec<u32>,
        live: Vec<churn::Handle>,
        position: Vec<Position>,
        velocity: Vec<Velocity>,
        health: Vec<Health>,
        team: Vec<Team>,
    }

    impl Ecs for Raw {
        type H = churn::Handle;
        fn integrate(&mut self, side: f32) {
            for (p, v) in self.position.iter_mut().zip(&mut self.velocity) {
                bounce(p, v, side);
            }
        }
        fn each(&mut self, mut f: impl FnMut(Self::H, u8, Vec3)) {
            for ((h, t), p) in self.live.iter().zip(&self.team).zip(&self.position) {
                f(*h, t.0, p.0);
            }
        }
        fn damage(&mut self, hits: &[Self::H]) {
            for &h in hits {
                if self.handles.alive(h) {
                    self.health[self.sparse[h.0 as usize] as usize].0 -= 1.0;
                }
            }
        }
        fn dead(&mut self, out: &mut Vec<Self::H>) {
            out.extend(self.live.iter().zip(&self.health).filter(|(_, h)| h.0 <= 0.0).map(|(e, _)| *e));
        }
        fn despawn(&mut self, dead: &[Self::H]) {
            for &h in dead {
                let at = self.sparse[h.0 as usize] as usize;
                self.index.swap_remove(at);
                self.live.swap_remove(at);
                self.position.swap_remove(at);
                self.velocity.swap_remove(at);
                self.health.swap_remove(at);
                self.team.swap_remove(at);
                if let Some(&moved) = self.index.get(at) {
                    self.sparse[moved as usize] = at as u32;
                }
                self.handles.free(h);
            }
        }
        fn spawn(&mut self, (p, v, h, t): (Position, Velocity, Health, Team)) {
            let handle = self.handles.alloc();
            if self.sparse.len() <= handle.0 as usize {
                self.sparse.resize(handle.0 as usize + 1, u32::MAX);
            }
            self.sparse[handle.0 as usize] = self.live.len() as u32;
            self.index.push(handle.0);
            self.live.push(handle);
            self.position.push(p);
            self.velocity.push(v);
            self.health.push(h);
            self.team.push(t);
        }
    }

    /// The sparse-set layout's own floor: one textbook sparse set per component, each with its own sparse index
    /// and packed handles, as a per-component layout keeps them (an entity may hold any set of components). Every
    /// fighter holds all four, so the pools stay packed alike, and the walks zip them without looking at the
    /// order (what a world may do only once it knows the orders agree).
    #[derive(Default)]
    pub struct Pools {
        handles: churn::Handles,
        position: RawSparse<Position, churn::Handle>,
        velocity: RawSparse<Velocity, churn::Handle>,
        health: RawSparse<Health, churn::Handle>,
        team: RawSparse<Team, churn::Handle>,
    }

    impl Ecs for Pools {
        type H = churn::Handle;
        fn integrate(&mut self, side: f32) {
            for (p, v) in self.position.values.iter_mut().zip(&mut self.velocity.values) {
                bounce(p, v, side);
            }
        }
        fn each(&mut self, mut f: impl FnMut(Self::H, u8, Vec3)) {
            for ((h, t), p) in self.team.dense.iter().zip(&self.team.values).zip(&self.position.values) {
                f(*h, t.0, p.0);
            }
        }
        fn damage(&mut self, hits: &[Self::H]) {
            for &h in hits {
                if self.handles.alive(h) {
                    if let Some(health) = self.health.get_mut(h.0) {
                        health.0 -= 1.0;
                    }
                }
            }
        }
        fn dead(&mut self, out: &mut Vec<Self::H>) {
            let RawSparse { dense, values, .. } = &self.health;
            out.extend(dense.iter().zip(values).filter(|(_, h)| h.0 <= 0.0).map(|(e, _)| *e));
        }
        fn despawn(&mut self, dead: &[Self::H]) {
            for &h in dead {
                self.position.remove(h.0);
                self.velocity.remove(h.0);
                self.health.remove(h.0);
                self.team.remove(h.0);
                self.handles.free(h);
            }
        }
        fn spawn(&mut self, (p, v, h, t): (Position, Velocity, Health, Team)) {
            let handle = self.handles.alloc();
            self.position.insert(handle, p);
            self.velocity.insert(handle, v);
            self.health.insert(handle, h);
            self.team.insert(handle, t);
        }
    }

    impl Ecs for World {
        type H = Entity;
        fn integrate(&mut self, side: f32) {
            self.query::<(&mut Position, &mut Velocity)>().for_each(|_, (p, v)| bounce(p, v, side));
        }
        fn each(&mut self, mut f: impl FnMut(Self::H, u8, Vec3)) {
            self.query::<(&Team, &Position)>().for_each(|e, (t, p)| f(e, t.0, p.0));
        }
        fn damage(&mut self, hits: &[Self::H]) {
            self.view_mut::<Health>().for_each_of(hits, |_, h| h.0 -= 1.0);
        }
        fn dead(&mut self, out: &mut Vec<Self::H>) {
            self.query::<&Health>().for_each(|e, h| {
                if h.0 <= 0.0 {
                    out.push(e)
                }
            });
        }
        fn despawn(&mut self, dead: &[Self::H]) {
            self.despawn_batch(dead);
        }
        fn spawn(&mut self, fighter: (Position, Velocity, Health, Team)) {
            World::spawn(self, fighter).unwrap();
        }
    }

    impl Ecs for hecs::World {
        type H = hecs::Entity;
        fn integrate(&mut self, side: f32) {
            for (p, v) in self.query_mut::<(&mut Position, &mut Velocity)>() {
                bounce(p, v, side);
            }
        }
        fn each(&mut self, mut f: impl FnMut(Self::H, u8, Vec3)) {
            for (e, (t, p)) in self.query_mut::<(hecs::Entity, (&Team, &Position))>() {
                f(e, t.0, p.0);
            }
        }
        fn damage(&mut self, hits: &[Self::H]) {
            let mut health = self.view_mut::<&mut Health>();
            for &e in hits {
                if let Some(h) = health.get_mut(e) {
                    h.0 -= 1.0;
                }
            }
        }
        fn dead(&mut self, out: &mut Vec<Self::H>) {
            out.extend(
                self.query_mut::<(hecs::Entity, &Health)>().into_iter().filter(|(_, h)| h.0 <= 0.0).map(|(e, _)| e),
            );
        }
        fn despawn(&mut self, dead: &[Self::H]) {
            for &e in dead {
                let _ = hecs::World::despawn(self, e);
            }
        }
        fn spawn(&mut self, fighter: (Position, Velocity, Health, Team)) {
            hecs::World::spawn(self, fighter);
        }
    }

    impl Ecs for shipyard::World {
        type H = shipyard::EntityId;
        fn integrate(&mut self, side: f32) {
            self.run(|mut positions: ViewMut<Position>, mut velocities: ViewMut<Velocity>| {
                for (p, v) in (&mut positions, &mut velocities).iter() {
                    bounce(p, v, side);
                }
            });
        }
        fn each(&mut self, mut f: impl FnMut(Self::H, u8, Vec3)) {
            self.run(|teams: View<Team>, positions: View<Position>| {
                for (e, (t, p)) in (&teams, &positions).iter().with_id() {
                    f(e, t.0, p.0);
                }
            });
        }
        fn damage(&mut self, hits: &[Self::H]) {
            self.run(|mut health: ViewMut<Health>| {
                for &e in hits {
                    if let Ok(mut h) = (&mut health).get(e) {
                        h.0 -= 1.0;
                    }
                }
            });
        }
        fn dead(&mut self, out: &mut Vec<Self::H>) {
            self.run(|health: View<Health>| {
                out.extend(health.iter().with_id().filter(|(_, h)| h.0 <= 0.0).map(|(e, _)| e));
            });
        }
        fn despawn(&mut self, dead: &[Self::H]) {
            for &e in dead {
                self.delete_entity(e);
            }
        }
        fn spawn(&mut self, fighter: (Position, Velocity, Health, Team)) {
            self.add_entity(fighter);
        }
    }

    impl Ecs for specs::World {
        type H = specs::Entity;
        fn integrate(&mut self, side: f32) {
            let (mut positions, mut velocities) = (self.write_storage::<Position>(), self.write_storage::<Velocity>());
            for (p, v) in (&mut positions, &mut velocities).join() {
                bounce(p, v, side);
            }
        }
        fn each(&mut self, mut f: impl FnMut(Self::H, u8, Vec3)) {
            let (entities, teams, positions) =
                (self.entities(), self.read_storage::<Team>(), self.read_storage::<Position>());
            for (e, t, p) in (&entities, &teams, &positions).join() {
                f(e, t.0, p.0);
            }
        }
        fn damage(&mut self, hits: &[Self::H]) {
            let mut health = self.write_storage::<Health>();
            for &e in hits {
                if let Some(h) = health.get_mut(e) {
                    h.0 -= 1.0;
                }
            }
        }
        fn dead(&mut self, out: &mut Vec<Self::H>) {
            let (entities, health) = (self.entities(), self.read_storage::<Health>());
            out.extend((&entities, &health).join().filter(|(_, h)| h.0 <= 0.0).map(|(e, _)| e));
        }
        fn despawn(&mut self, dead: &[Self::H]) {
            self.delete_entities(dead).unwrap();
            self.maintain();
        }
        fn spawn(&mut self, (p, v, h, t): (Position, Velocity, Health, Team)) {
            self.create_entity().with(p).with(v).with(h).with(t).build();
        }
    }

    /// bevy_ecs through query states made once (a system's, kept across frames), as its systems use them.
    pub struct Bevy {
        world: BevyWorld,
        moving: bevy_ecs::query::QueryState<(&'static mut Position, &'static mut Velocity)>,
        placed: bevy_ecs::query::QueryState<(bevy_ecs::entity::Entity, &'static Team, &'static Position)>,
        health: bevy_ecs::query::QueryState<(bevy_ecs::entity::Entity, &'static Health)>,
        hurt: bevy_ecs::query::QueryState<&'static mut Health>,
    }

    impl Default for Bevy {
        fn default() -> Self {
            let mut world = BevyWorld::new();
            let (moving, placed, health, hurt) = (world.query(), world.query(), world.query(), world.query());
            Self { world, moving, placed, health, hurt }
        }
    }

    impl Ecs for Bevy {
        type H = bevy_ecs::entity::Entity;
        fn integrate(&mut self, side: f32) {
            for (mut p, mut v) in self.moving.iter_mut(&mut self.world) {
                bounce(&mut p, &mut v, side);
            }
        }
        fn each(&mut self, mut f: impl FnMut(Self::H, u8, Vec3)) {
            for (e, t, p) in self.placed.iter(&self.world) {
                f(e, t.0, p.0);
            }
        }
        fn damage(&mut self, hits: &[Self::H]) {
            let mut hurt = self.hurt.iter_many_mut(&mut self.world, hits);
            while let Some(h) = hurt.fetch_next() {
                if let Ok(mut h) = h {
                    h.0 -= 1.0;
                }
            }
        }
        fn dead(&mut self, out: &mut Vec<Self::H>) {
            out.extend(self.health.iter(&self.world).filter(|(_, h)| h.0 <= 0.0).map(|(e, _)| e));
        }
        fn despawn(&mut self, dead: &[Self::H]) {
            for &e in dead {
                self.world.despawn(e);
            }
        }
        fn spawn(&mut self, fighter: (Position, Velocity, Health, Team)) {
            self.world.spawn(fighter);
        }
    }

    /// The contestants of a frame of `n` fighters.
    pub fn cases(n: usize) -> Vec<Case> {
        fn contestant<E: Ecs + 'static>(name: &str, mut ecs: E, n: usize) -> Case {
            let mut frame = Frame::new(&mut ecs, n);
            if std::env::args().any(|a| a == "--check") {
                let mut died = 0;
                for _ in 0..30 {
                    frame.run(&mut ecs);
                    died += frame.dead.len();
                }
                let (mut live, mut sum) = (0usize, 0f64);
                ecs.each(|_, team, at| {
                    live += 1;
                    sum += f64::from(at.x + at.y) * f64::from(team + 1);
                });
                println!("frame of {n}, {name}: after 30 frames {live} live, {died} died, position sum {sum:.3}");
            }
            if std::env::args().any(|a| a == "--phases") {
                // 20 frames to settle, then 200 timed phase by phase (outside the measured runs).
                (0..20).for_each(|_| frame.run(&mut ecs));
                let mut phases = [Duration::ZERO; 7];
                (0..200).for_each(|_| frame.run_timed(&mut ecs, Some(&mut phases)));
                let each = PHASES.iter().zip(phases).map(|(name, t)| format!("{name} {:.3}", t.as_secs_f64() * 5.0));
                println!("frame of {n}, {name}, ms per frame: {}", each.collect::<Vec<_>>().join(", "));
            }
            case(name, move || frame.run(&mut ecs))
        }
        let mut cases = vec![
            contestant("raw-sparse", Raw::default(), n),
            contestant("raw-pools", Pools::default(), n),
            contestant("hecs", hecs::World::new(), n),
            contestant("shipyard", shipyard::World::new(), n),
            contestant("specs", specs_world!(Position, Velocity, Health, Team), n),
            contestant("bevy_ecs", Bevy::default(), n),
        ];
        for backend in Backend::ALL {
            let mut world = World::new();
            world.set_backend(backend);
            cases.push(contestant(backend.name(), world, n));
        }
        cases
    }
}

fn frame_10k() -> Vec<Case> {
    frame::cases(10_000)
}

fn frame_100k() -> Vec<Case> {
    frame::cases(100_000)
}

/// A workload: its name, its contestants, and for the interleaved mode the iterations per block (a block of a few
/// milliseconds for the slowest contestant or less).
/// Entities of the parallel `simple_iter`.
const PAR_N: usize = 100_000;
/// Entities of `heavy_compute` (as the suite: 1,000, each inverting its matrix 100 times).
const HEAVY_N: usize = 1_000;

/// The thread pool every parallel contestant runs on: one per process, as many threads as the machine has cores.
fn pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| rayon::ThreadPoolBuilder::new().build().expect("a thread pool"))
}

/// bevy_ecs's parallel queries run on its compute task pool: made once, with as many threads as [`pool`].
fn bevy_pool() {
    bevy_tasks::ComputeTaskPool::get_or_init(|| {
        bevy_tasks::TaskPoolBuilder::new().num_threads(pool().current_num_threads()).build()
    });
}

/// The suite's parallel workloads on one rayon pool: `par_simple_iter` is simple_iter at 100,000 entities, and
/// `heavy_compute` gives each of 1,000 entities 100 matrix inversions. hecs through `iter_batched` (batches of
/// 1,024 bridged to the pool), shipyard through its rayon `par_iter`, specs through `par_join`, bevy_ecs through
/// `par_iter_mut` (batches of 1,024, on its task pool of as many threads), the backends through `par_for_each`
/// (pieces of 1,024), the floor through rayon's own slice split.
fn par_simple_iter() -> Vec<Case> {
    use rayon::prelude::*;
    use shipyard::IntoIter as _;
    let mut positions: Vec<Position> = (0..PAR_N).map(|_| bundle().1).collect();
    let velocities: Vec<Velocity> = (0..PAR_N).map(|_| bundle().3).collect();
    let mut hecs_world = hecs::World::new();
    hecs_world.spawn_batch((0..PAR_N).map(|_| bundle()));
    let mut shipyard_world = shipyard::World::new();
    shipyard_world.bulk_add_entity((0..PAR_N).map(|_| bundle()));
    let specs_world = specs_of((0..PAR_N).map(|_| bundle()));
    bevy_pool();
    let mut bevy_world = BevyWorld::new();
    bevy_world.spawn_batch((0..PAR_N).map(|_| bundle()));
    let mut bevy_query = bevy_world.query::<(&Velocity, &mut Position)>();
    let mut cases = vec![
        case("raw-vec", move || {
            pool()
                .install(|| positions.par_iter_mut().zip(&velocities).with_min_len(1024).for_each(|(p, v)| p.0 += v.0));
            black_box(&mut positions);
        }),
        case("hecs", move || {
            pool().install(|| {
                let mut query = hecs_world.query::<(&Velocity, &mut Position)>();
                query.iter_batched(1024).par_bridge().for_each(|batch| {
                    for (v, p) in batch {
                        p.0 += v.0;
                    }
                });
            })
        }),
        case("shipyard", move || {
            pool().install(|| {
                shipyard_world.run(|velocities: View<Velocity>, mut positions: ViewMut<Position>| {
                    (&velocities, &mut positions).par_iter().for_each(|(v, p)| p.0 += v.0);
                })
            })
        }),
        case("specs", move || {
            use specs::ParJoin;
            pool().install(|| {
                let (velocities, mut positions) =
                    (specs_world.read_storage::<Velocity>(), specs_world.write_storage::<Position>());
                (&velocities, &mut positions).par_join().for_each(|(v, p)| p.0 += v.0);
            })
        }),
        case("bevy_ecs", move || {
            bevy_query
                .par_iter_mut(&mut bevy_world)
                .batching_strategy(bevy_ecs::batching::BatchingStrategy::fixed(1024))
                .for_each(|(v, mut p)| p.0 += v.0);
        }),
    ];
    for backend in Backend::ALL {
        let mut world = World::with_capacity(PAR_N as u32 * 2);
        world.set_backend(backend);
        world.set_piece_rows(1024);
        world.spawn_batch((0..PAR_N).map(|_| bundle())).unwrap();
        cases.push(case(backend.name(), move || {
            pool().install(|| world.query::<(&Velocity, &mut Position)>().par_for_each(|_, (v, p)| p.0 += v.0))
        }));
    }
    cases
}

/// 100 inversions of an entity's matrix, its position moved by the result (the suite's heavy_compute).
#[inline]
fn heavy(transform: &mut Transform, position: &mut Position) {
    for _ in 0..100 {
        transform.0 = transform.0.inverse();
    }
    position.0 = transform.0.transform_vector3(position.0);
}

fn heavy_compute() -> Vec<Case> {
    use rayon::prelude::*;
    use shipyard::IntoIter as _;
    let start =
        || (Transform(Mat4::from_axis_angle(Vec3::X, 1.2)), Position(Vec3::X), Rotation(Vec3::X), Velocity(Vec3::X));
    let mut raw: Vec<(Transform, Position)> = (0..HEAVY_N).map(|_| (start().0, start().1)).collect();
    let mut hecs_world = hecs::World::new();
    hecs_world.spawn_batch((0..HEAVY_N).map(|_| start()));
    let mut shipyard_world = shipyard::World::new();
    shipyard_world.bulk_add_entity((0..HEAVY_N).map(|_| start()));
    let specs_world = specs_of((0..HEAVY_N).map(|_| start()));
    bevy_pool();
    let mut bevy_world = BevyWorld::new();
    bevy_world.spawn_batch((0..HEAVY_N).map(|_| start()));
    let mut bevy_query = bevy_world.query::<(&mut Transform, &mut Position)>();
    let mut cases = vec![
        case("raw-vec", move || {
            pool().install(|| raw.par_iter_mut().with_min_len(64).for_each(|(t, p)| heavy(t, p)));
            black_box(&mut raw);
        }),
        case("hecs", move || {
            pool().install(|| {
                let mut query = hecs_world.query::<(&mut Transform, &mut Position)>();
                query.iter_batched(64).par_bridge().for_each(|batch| {
                    for (t, p) in batch {
                        heavy(t, p);
                    }
                });
            })
        }),
        case("shipyard", move || {
            pool().install(|| {
                shipyard_world.run(|mut transforms: ViewMut<Transform>, mut positions: ViewMut<Position>| {
                    (&mut transforms, &mut positions).par_iter().for_each(|(t, p)| heavy(t, p));
                })
            })
        }),
        case("specs", move || {
            use specs::ParJoin;
            pool().install(|| {
                let (mut transforms, mut positions) =
                    (specs_world.write_storage::<Transform>(), specs_world.write_storage::<Position>());
                (&mut transforms, &mut positions).par_join().for_each(|(t, p)| heavy(t, p));
            })
        }),
        case("bevy_ecs", move || {
            bevy_query
                .par_iter_mut(&mut bevy_world)
                .batching_strategy(bevy_ecs::batching::BatchingStrategy::fixed(64))
                .for_each(|(mut t, mut p)| heavy(&mut t, &mut p));
        }),
    ];
    for backend in Backend::ALL {
        let mut world = World::new();
        world.set_backend(backend);
        world.set_piece_rows(64);
        world.spawn_batch((0..HEAVY_N).map(|_| start())).unwrap();
        cases.push(case(backend.name(), move || {
            pool().install(|| world.query::<(&mut Transform, &mut Position)>().par_for_each(|_, (t, p)| heavy(t, p)))
        }));
    }
    cases
}

type Group = (&'static str, fn() -> Vec<Case>, usize);

fn groups() -> Vec<Group> {
    vec![
        ("simple_insert", simple_insert, 2),
        ("simple_iter", simple_iter, 20),
        ("frag_iter", frag_iter, 500),
        ("add_remove", add_remove, 3),
        ("small_query", small_query, 5_000),
        ("churn_100k", churn, 1),
        ("frame_10k", frame_10k, 5),
        ("frame_100k", frame_100k, 1),
        ("derived_bundle", derived_bundle, 2),
        ("par_simple_iter", par_simple_iter, 10),
        ("heavy_compute", heavy_compute, 2),
    ]
}

/// Each group through criterion, one contestant after another.
fn run_criterion(filter: &[String]) {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(30)
        .configure_from_args();
    for (name, cases, _) in groups() {
        let mut group = c.benchmark_group(name);
        if name == "churn_100k" {
            group.sample_size(10);
        }
        for (case, mut f) in cases() {
            // Building a group's worlds is cheap next to measuring them, so a filtered run builds them anyway.
            if filter.is_empty() || filter.iter().any(|f| format!("{name}/{case}").contains(f.as_str())) {
                group.bench_function(case, |b| b.iter(&mut f));
            }
        }
        group.finish();
    }
    c.final_summary();
}

/// Each group's contestants in alternating blocks: `rounds` times, every contestant runs one block of `per`
/// iterations in turn, so a slow spell of the machine hits them all alike. Prints each contestant's median and
/// fastest tenth (p10) per iteration, and the backends' ratio to the fastest peer.
fn run_interleaved(filter: &[String]) {
    const ROUNDS: usize = 40;
    println!("{:<28} {:>12} {:>12} {:>15}", "workload/contestant", "median", "p10", "vs faster peer");
    for (name, cases, per) in groups() {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let mut cases = cases();
        for (_, f) in &mut cases {
            for _ in 0..per.max(2) {
                f();
            }
        }
        let mut samples = vec![Vec::with_capacity(ROUNDS); cases.len()];
        for _ in 0..ROUNDS {
            for ((_, f), samples) in cases.iter_mut().zip(&mut samples) {
                let start = Instant::now();
                for _ in 0..per {
                    f();
                }
                samples.push(start.elapsed().as_secs_f64() * 1e9 / per as f64);
            }
        }
        let stats: Vec<(f64, f64)> = samples
            .iter_mut()
            .map(|s| {
                s.sort_by(f64::total_cmp);
                (s[s.len() / 2], s[s.len() / 10])
            })
            .collect();
        // The faster peer of the same sub-row (`one/...` rows have no peers: no ratio).
        let peer = |k: usize| {
            let prefix = cases[k].0.rsplit_once('/').map(|(p, _)| p);
            let peers = cases.iter().zip(&stats).filter(|((n, _), _)| {
                n.rsplit_once('/').map(|(p, _)| p) == prefix && n.rsplit('/').next().is_some_and(|n| PEERS.contains(&n))
            });
            peers.map(|(_, &(median, p10))| (median, p10)).reduce(|a, b| (a.0.min(b.0), a.1.min(b.1)))
        };
        for (k, ((case, _), &(median, p10))) in cases.iter().zip(&stats).enumerate() {
            let backend = !(case.starts_with("raw-") || PEERS.contains(&case.as_str()));
            let ratio = match peer(k) {
                Some((pm, pp)) if backend => format!("{:.2}x / {:.2}x", median / pm, p10 / pp),
                _ => String::new(),
            };
            println!("{:<28} {:>12} {:>12} {:>15}", format!("{name}/{case}"), ns(median), ns(p10), ratio);
        }
    }
    println!("(ratios: median / p10, each against the fastest of {})", PEERS.join(", "));
}

/// The peers, by the names their rows carry.
const PEERS: [&str; 4] = ["hecs", "shipyard", "specs", "bevy_ecs"];

fn ns(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} ms", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} µs", v / 1e3)
    } else {
        format!("{v:.1} ns")
    }
}

fn main() {
    // cargo passes `--bench`; the rest are criterion's flags or name filters.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filter: Vec<String> = args.iter().filter(|a| !a.starts_with('-')).cloned().collect();
    if args.iter().any(|a| a == "--interleaved") {
        run_interleaved(&filter);
    } else {
        run_criterion(&filter);
    }
}
