//! Snapshots saved on a backend and loaded on every backend.

use crate::{Blue, Name, Pos, Red, Vel};
use swarm::ecs::{Backend, Entities, Entity, World};

/// A component a snapshot schema leaves out.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Follows2(Entity);
/// A component holding a handle, for snapshots.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize, swarm::ecs::HoldsEntities)]
struct Follows(#[entities] Entity);

fn snapshots_keep_every_handle_and_value_on_every_backend(backend: Backend) {
    use swarm::ecs::{Format, SnapshotSchema};
    // Indices retire after 3 generations, so the snapshot carries retired indices too.
    let mut w = World::from_entities(Entities::with_max_generation(500, 3));
    w.set_backend(backend);
    w.insert_resource(Name("a resource".into()));
    let mut live = Vec::new();
    for round in 0..4 {
        for i in 0..60 {
            let e = match i % 3 {
                0 => w.spawn((Pos(i as f32, round as f32), Vel(1.0, 0.0), Red)).unwrap(),
                1 => w.spawn((Pos(i as f32, 0.5), Name(format!("n{i}")))).unwrap(),
                _ => w.spawn((Vel(i as f32, 0.0), Blue)).unwrap(),
            };
            live.push(e);
        }
        let dead: Vec<Entity> = live.iter().copied().skip(round).step_by(3).collect();
        for e in &dead {
            w.despawn(*e).unwrap();
        }
        live.retain(|e| !dead.contains(e));
    }
    assert!(w.entities().retired() > 0, "no index retired: the test would not cover them");
    // A stale handle: an earlier generation of an index in use now.
    let reused = live.iter().find(|e| e.generation().get() > 1).expect("an index was reused");
    let old = Entity::from_parts(reused.index(), std::num::NonZeroU32::new(reused.generation().get() - 1).unwrap());
    let follower = w.spawn((Follows(old), Follows2(live[1]))).unwrap();
    live.push(follower);
    let schema = SnapshotSchema::new()
        .component::<Pos>("pos")
        .component::<Vel>("vel")
        .component::<Name>("name")
        .component::<Red>("red")
        .component::<Blue>("blue")
        .component_with_entities::<Follows>("follows")
        .resource::<Name>("title");
    let row = |w: &World, e: Entity| {
        (
            w.get::<Pos>(e).copied(),
            w.get::<Vel>(e).copied(),
            w.get::<Name>(e).cloned(),
            w.has::<Red>(e),
            w.has::<Blue>(e),
            w.get::<Follows>(e).copied(),
        )
    };
    for format in [Format::Binary, Format::Json] {
        let bytes = schema.save(&w, format).unwrap();
        for to in Backend::ALL {
            let mut l = schema.load(&bytes, Some(to)).unwrap();
            assert_eq!(l.backend(), to);
            l.assert_invariants();
            assert_eq!(l.len(), w.len());
            for &e in &live {
                assert!(l.is_alive(e), "{format:?} {to}: {e:?} lost");
                assert_eq!(row(&l, e), row(&w, e), "{format:?} {to}: {e:?}");
            }
            // `Follows2` is not in the schema: not saved.
            assert!(!l.has::<Follows2>(follower) && w.has::<Follows2>(follower));
            assert!(!l.is_alive(old), "a stale handle came back to life");
            assert_eq!(l.resource::<Name>(), &Name("a resource".into()));
            assert_eq!(l.entities().retired(), w.entities().retired());
            assert_eq!(l.entities().state(), w.entities().state());
            // The free list's order came along: both hand out the same handles from here on.
            let mut w2 = schema.load(&bytes, Some(Backend::SparseSet)).unwrap();
            for _ in 0..40 {
                assert_eq!(l.spawn((Red,)), w2.spawn((Red,)));
            }
        }
    }
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        snapshots_keep_every_handle_and_value_on_every_backend,
    }
}
