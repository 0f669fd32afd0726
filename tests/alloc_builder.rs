//! An entity builder reused for entities of the same types allocates nothing after the first: its per-type slots
//! keep their boxes (a counting global allocator shows it).

use swarm::ecs::{Backend, EntityBuilder, World};

mod common;

#[global_allocator]
static GLOBAL: common::Counting = common::Counting;

struct Pos(f32);
struct Vel(f32);
struct Tag;

#[test]
fn a_reused_builder_allocates_nothing() {
    for backend in Backend::ALL {
        let mut world = World::with_capacity(1024);
        world.set_backend(backend);
        let mut builder = EntityBuilder::new();
        // Warm-up: the builder's slots, the types' registration, and room in the world for what follows.
        let first = world.spawn_built(builder.add(Pos(0.0)).add(Vel(0.0)).add(Tag)).unwrap();
        world.reserve::<(Pos, Vel, Tag)>(16);
        let before = common::allocations();
        let second = world.spawn_built(builder.add(Pos(1.0)).add(Vel(1.0)).add(Tag)).unwrap();
        let third = world.spawn_built(builder.add(Pos(2.0)).add(Vel(2.0)).add(Tag)).unwrap();
        let allocations = common::allocations() - before;
        if backend == Backend::BTree {
            // The b-tree has no room to reserve; the builder's part is checked on the other backends.
            assert!(allocations <= 6, "{backend}: {allocations} allocations for two spawns");
        } else {
            assert_eq!(allocations, 0, "{backend}: a reused builder allocated {allocations} times");
        }
        assert!(builder.is_empty());
        for (e, x) in [(first, 0.0), (second, 1.0), (third, 2.0)] {
            assert_eq!(world.get::<Pos>(e).map(|p| p.0), Some(x), "{backend}");
            assert_eq!(world.get::<Vel>(e).map(|v| v.0), Some(x), "{backend}");
            assert!(world.has::<Tag>(e), "{backend}");
        }
        world.assert_invariants();
    }
}

/// On the archetype backend the built entity lands in its final table at once: no intermediate tables are made,
/// as one insert per component would make (one per prefix of the set).
#[test]
fn a_built_entity_lands_in_its_table_at_once() {
    let mut world = World::new();
    world.set_backend(Backend::Archetype);
    let mut builder = EntityBuilder::new();
    let e = world.spawn_built(builder.add(Pos(0.0)).add(Vel(0.0)).add(Tag)).unwrap();
    let overhead = world.overhead_bytes();
    let mut stepwise = World::new();
    stepwise.set_backend(Backend::Archetype);
    let s = stepwise.spawn(()).unwrap();
    stepwise.insert(s, Pos(0.0)).unwrap();
    stepwise.insert(s, Vel(0.0)).unwrap();
    stepwise.insert(s, Tag).unwrap();
    assert!(overhead < stepwise.overhead_bytes(), "the builder made intermediate tables");
    assert!(world.has::<Tag>(e));
}
