//! The calls a hecs or bevy user reaches for: batches that follow the reserved-handle rule, spawning at a given
//! handle, reserving many handles through `&World`, one entity's view, and entities assembled at run time.

use crate::{world, Blue, Name, Pos, Red, Vel};
use std::num::NonZeroU32;
use swarm::ecs::{
    Backend, ComponentError, Entities, Entity, EntityBuilder, NoSuchEntity, SpawnAtError, World, WorldFull,
};

fn handle(index: u32, generation: u32) -> Entity {
    Entity::from_parts(index, NonZeroU32::new(generation).unwrap())
}

fn insert_many_settles_a_reserved_handle(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let r = w.reserve_entity().unwrap();
    let dead = w.spawn(()).unwrap();
    w.despawn(dead).unwrap();
    w.commands().insert(a, Vel(9.0, 9.0));
    // The items before `r`, then the buffer (which brings `r` to life and gives `a` its `Vel`), then the rest.
    let skipped = w.insert_many([(a, Vel(1.0, 0.0)), (r, Vel(2.0, 0.0)), (dead, Vel(3.0, 0.0)), (a, Vel(4.0, 0.0))]);
    assert_eq!(skipped, 1, "only the dead handle is skipped");
    assert!(w.is_alive(r) && !w.has_pending_commands());
    assert_eq!(w.get::<Vel>(r), Some(&Vel(2.0, 0.0)), "the value of a reserved handle is kept");
    assert_eq!(w.get::<Vel>(a), Some(&Vel(4.0, 0.0)), "the buffer landed between the first item and the last");
    // A reservation the buffer despawns stays dead, and its value is skipped.
    let s = w.reserve_entity().unwrap();
    w.commands().despawn(s);
    assert_eq!(w.insert_many([(s, Vel(5.0, 0.0))]), 1);
    assert!(!w.is_alive(s) && w.get::<Vel>(s).is_none());
    w.assert_invariants();
}

fn remove_many_settles_a_reserved_handle(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(0.0, 0.0), Red)).unwrap();
    let r = w.commands().spawn((Pos(1.0, 1.0), Red)).unwrap();
    let b = w.spawn((Red,)).unwrap();
    // The buffer lands between `a` and `r`: `b` gets `Blue` before the batch reaches it.
    w.commands().insert(b, Blue);
    assert_eq!(w.remove_many::<Red>(&[a, r, b]), 3, "the reserved entity's `Red` is spawned, then removed");
    assert!(w.is_alive(r) && !w.has::<Red>(r) && w.has::<Pos>(r));
    assert!(w.has::<Blue>(b) && !w.has::<Red>(b));
    // A type no entity has: the reserved handle is settled all the same.
    let s = w.reserve_entity().unwrap();
    assert_eq!(w.remove_many::<Name>(&[s]), 0);
    assert!(w.is_alive(s) && !w.has_pending_commands());
    w.assert_invariants();
}

fn spawn_at_brings_back_a_handle(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let b = w.spawn((Pos(1.0, 0.0),)).unwrap();
    let c = w.spawn((Pos(2.0, 0.0),)).unwrap();
    // Despawned, then brought back under the same handle: the free list loses `b`'s index, keeps `a`'s.
    w.despawn(a).unwrap();
    w.despawn(b).unwrap();
    let back = handle(b.index(), b.generation().get() + 1);
    assert_eq!(w.spawn_at(back, (Vel(1.0, 1.0), Red)), Ok(back));
    assert_eq!(w.get::<Vel>(back), Some(&Vel(1.0, 1.0)));
    assert!(!w.is_alive(b), "the old generation stays dead");
    w.assert_invariants();
    let next = w.spawn(()).unwrap();
    assert_eq!(next.index(), a.index(), "the free list still hands out the other index");
    // A later generation than the allocator's is accepted: the ones between never come to life.
    w.despawn(next).unwrap();
    let jump = handle(a.index(), a.generation().get() + 5);
    assert_eq!(w.spawn_at(jump, (Name("jump".into()),)), Ok(jump));
    assert!(!w.is_alive(next));
    // Refusals change nothing.
    assert_eq!(w.spawn_at(c, (Red,)), Err(SpawnAtError::Live(c)));
    assert_eq!(w.spawn_at(handle(c.index(), 9), (Red,)), Err(SpawnAtError::Live(c)), "names the live handle");
    assert!(!w.has::<Red>(c));
    w.despawn(c).unwrap();
    assert_eq!(
        w.spawn_at(c, (Red,)),
        Err(SpawnAtError::Stale { entity: c, current: NonZeroU32::new(c.generation().get() + 1).unwrap() })
    );
    let err = w.spawn_at(c, (Red,)).unwrap_err().to_string();
    assert!(err.contains("behind generation 2"), "{err}");
    assert_eq!(w.len(), 2);
    w.assert_invariants();
}

fn spawn_at_past_the_bound_leaves_the_skipped_indices_free(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let far = handle(a.index() + 5, 3);
    assert_eq!(w.spawn_at(far, (Pos(5.0, 5.0), Blue)), Ok(far));
    assert_eq!(w.entities().index_bound(), far.index() + 1);
    assert_eq!(w.query::<(&Pos,)>().count(), 2);
    w.assert_invariants();
    // The skipped indices are handed out lowest first, at generation 1.
    let next: Vec<Entity> = (0..4).map(|_| w.spawn((Red,)).unwrap()).collect();
    assert_eq!(next, (1..5).map(|i| handle(a.index() + i, 1)).collect::<Vec<_>>());
    assert_eq!(w.spawn(()).unwrap().index(), far.index() + 1, "then new indices");
    // An index no world of this capacity holds, a generation past the maximum, the deferred marker.
    let limit = w.capacity();
    assert_eq!(
        w.spawn_at(handle(limit, 1), ()),
        Err(SpawnAtError::IndexOutOfRange { entity: handle(limit, 1), bound: limit })
    );
    assert!(w.spawn_at(handle(u32::MAX, 1), ()).is_err());
    let mut small = World::from_entities(Entities::with_max_generation(4, 2));
    small.set_backend(backend);
    assert_eq!(
        small.spawn_at(handle(0, 3), ()),
        Err(SpawnAtError::GenerationOutOfRange { entity: handle(0, 3), max: 2 })
    );
    // A full world.
    for i in 0..4 {
        small.spawn_at(handle(i, 2), (Pos(i as f32, 0.0),)).unwrap();
    }
    assert_eq!(small.spawn_at(handle(3, 2), ()), Err(SpawnAtError::Live(handle(3, 2))));
    small.despawn(handle(3, 2)).unwrap(); // generation 2 is the last: index 3 retires
    assert_eq!(small.spawn_at(handle(3, 2), ()), Err(SpawnAtError::Retired(handle(3, 2))));
    assert!(small.spawn_at(handle(4, 1), ()).is_ok(), "a retired index widens the bound");
    assert_eq!(small.spawn_at(handle(5, 1), ()), Err(SpawnAtError::WorldFull(WorldFull { capacity: 4 })));
    small.assert_invariants();
    w.assert_invariants();
}

fn spawn_at_a_reserved_index_settles_it(backend: Backend) {
    let mut w = world(backend);
    let r = w.reserve_entity().unwrap();
    w.commands().insert(r, Red);
    // The buffer applies first: `r` is alive then, and the spawn is refused naming it.
    assert_eq!(w.spawn_at(r, (Pos(0.0, 0.0),)), Err(SpawnAtError::Live(r)));
    assert!(w.is_alive(r) && w.has::<Red>(r) && !w.has::<Pos>(r));
    // A reservation the buffer despawns leaves its index free at the next generation.
    let s = w.reserve_entity().unwrap();
    w.commands().despawn(s);
    let next = handle(s.index(), s.generation().get() + 1);
    assert!(matches!(w.spawn_at(s, ()), Err(SpawnAtError::Stale { .. })));
    assert_eq!(w.spawn_at(next, (Pos(1.0, 1.0),)), Ok(next));
    // Round trips: despawn and spawn_at again, many times, with the free list checked each time.
    let all: Vec<Entity> = (0..20).map(|i| w.spawn((Pos(i as f32, 0.0),)).unwrap()).collect();
    for (k, &e) in all.iter().enumerate().step_by(3) {
        w.despawn(e).unwrap();
        let again = handle(e.index(), e.generation().get() + 1 + k as u32 % 2);
        assert_eq!(w.spawn_at(again, (Vel(k as f32, 0.0),)), Ok(again));
        assert_eq!(w.get::<Vel>(again), Some(&Vel(k as f32, 0.0)));
        w.assert_invariants();
    }
    assert_eq!(w.len(), 22);
}

fn reserve_entities_through_a_shared_world(backend: Backend) {
    let mut w = World::with_capacity(6);
    w.set_backend(backend);
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let b = w.spawn((Pos(1.0, 0.0),)).unwrap();
    w.despawn(a).unwrap();
    let shared: &World = &w;
    let first: Vec<Entity> = shared.reserve_entities(2).collect();
    let more = shared.reserve_entities(10);
    assert_eq!(more.len(), 3, "a full world hands out fewer");
    let more: Vec<Entity> = more.collect();
    assert_eq!(shared.reserve_entities(1).len(), 0);
    // The handles `reserve` would hand out: the freed index first (next generation), then new ones.
    assert_eq!(first[0], handle(a.index(), 2));
    let all: Vec<Entity> = first.iter().chain(&more).copied().collect();
    let mut indices: Vec<u32> = all.iter().map(|e| e.index()).collect();
    indices.sort();
    indices.dedup();
    assert_eq!(indices.len(), 5, "distinct handles");
    assert!(all.iter().all(|&e| w.entities().is_reserved(e) && !w.is_alive(e)));
    assert!(w.has_pending_commands() && w.entities().state().is_none());
    assert!(w.spawn(()).is_err(), "reservations count against the capacity");
    w.assert_invariants();
    // A `&mut World` call handed one applies the buffer: all come alive, with no components.
    w.commands().insert(b, Red);
    assert_eq!(w.insert(more[1], Blue), Ok(None));
    assert!(all.iter().all(|&e| w.is_alive(e)) && w.has::<Red>(b));
    assert_eq!(w.entity(first[0]).unwrap().component_types().count(), 0);
    assert_eq!(w.len(), 6);
    w.assert_invariants();
    // Applied, discarded, or despawned.
    w.clear();
    let r: Vec<Entity> = w.reserve_entities(3).collect();
    assert_eq!(w.apply_commands().applied, 3);
    assert!(r.iter().all(|&e| w.is_alive(e)));
    let d: Vec<Entity> = w.reserve_entities(2).collect();
    w.discard_commands();
    assert!(d.iter().all(|&e| !w.is_alive(e) && !w.entities().is_reserved(e)));
    assert_eq!(w.insert(d[0], Red), Err(NoSuchEntity(d[0])));
    let x: Vec<Entity> = w.reserve_entities(1).collect();
    assert_eq!(w.despawn_batch(&[r[0], x[0]]), 2, "comes alive, then is despawned");
    w.apply_commands();
    assert!(!w.is_alive(x[0]));
    w.assert_invariants();
}

fn entity_views_read_and_change_one_entity(backend: Backend) {
    let mut w = world(backend);
    let e = w.spawn((Pos(1.0, 2.0), Red)).unwrap();
    let view = w.entity(e).unwrap();
    assert_eq!(view.id(), e);
    assert_eq!(view.get::<Pos>(), Some(&Pos(1.0, 2.0)));
    assert!(view.has::<Red>() && !view.has::<Vel>() && view.get::<Vel>().is_none());
    let mut names: Vec<&str> = view.component_types().map(|info| info.name).collect();
    names.sort();
    assert_eq!(names, [std::any::type_name::<Pos>(), std::any::type_name::<Red>()]);
    let mut view = w.entity_mut(e).unwrap();
    view.get_mut::<Pos>().unwrap().0 = 5.0;
    view.insert(Vel(1.0, 0.0)).insert_bundle((Blue, Name("e".into())));
    assert_eq!(view.replace(Vel(2.0, 0.0)), Some(Vel(1.0, 0.0)));
    assert_eq!(view.remove::<Red>(), Ok(Red));
    assert_eq!(
        view.remove::<Red>(),
        Err(ComponentError::MissingComponent { entity: e, component: std::any::type_name::<Red>() })
    );
    assert!(view.remove_bundle::<(Blue, Red)>().is_err(), "all or nothing");
    assert!(view.as_ref().has::<Blue>());
    assert_eq!(view.get::<Pos>(), Some(&Pos(5.0, 2.0)));
    w.assert_invariants();
    w.entity_mut(e).unwrap().despawn();
    assert_eq!(w.entity(e).err(), Some(NoSuchEntity(e)));
    assert_eq!(w.entity_mut(e).err(), Some(NoSuchEntity(e)));
    // Reserved: not alive to a shared world; settled by `entity_mut`.
    let r = w.reserve_entity().unwrap();
    assert_eq!(w.entity(r).err(), Some(NoSuchEntity(r)));
    w.entity_mut(r).unwrap().insert(Red);
    assert!(w.has::<Red>(r));
    w.assert_invariants();
}

fn builders_spawn_and_insert_and_are_reused(backend: Backend) {
    let mut w = world(backend);
    let mut builder = EntityBuilder::new();
    builder.add(Pos(1.0, 1.0)).add(Red).add(Pos(2.0, 2.0));
    assert_eq!(builder.len(), 2, "a type added twice keeps the last value");
    assert_eq!(builder.get::<Pos>(), Some(&Pos(2.0, 2.0)));
    let e = w.spawn_built(&mut builder).unwrap();
    assert!(builder.is_empty() && !builder.has::<Red>());
    assert_eq!((w.get::<Pos>(e), w.has::<Red>(e)), (Some(&Pos(2.0, 2.0)), true));
    // Reused with other types; an empty builder spawns an entity with nothing.
    let f = w.spawn_built(builder.add(Vel(1.0, 0.0)).add(Name("f".into()))).unwrap();
    assert_eq!(w.entity(f).unwrap().component_types().count(), 2);
    let g = w.spawn_built(&mut builder).unwrap();
    assert!(w.is_alive(g) && w.entity(g).unwrap().component_types().count() == 0);
    w.assert_invariants();
    // Insert: new types join, held ones are replaced, the rest stay.
    builder.add(Pos(3.0, 3.0)).add(Blue);
    w.insert_built(e, &mut builder).unwrap();
    assert_eq!(w.get::<Pos>(e), Some(&Pos(3.0, 3.0)));
    assert!(w.has::<Blue>(e) && w.has::<Red>(e) && builder.is_empty());
    builder.add(Red);
    w.insert_built(e, &mut builder).unwrap(); // held already: replaced in place
    assert_eq!(w.query::<(&Pos, &Red, &Blue)>().count(), 1);
    w.assert_invariants();
    // Bad input loses nothing: the builder keeps its values.
    w.despawn(g).unwrap();
    builder.add(Name("kept".into()));
    assert_eq!(w.insert_built(g, &mut builder), Err(NoSuchEntity(g)));
    assert_eq!(builder.get::<Name>(), Some(&Name("kept".into())));
    let mut full = World::with_capacity(1);
    full.set_backend(backend);
    full.spawn(()).unwrap();
    assert_eq!(full.spawn_built(&mut builder), Err(WorldFull { capacity: 1 }));
    assert_eq!(builder.len(), 1);
    // A reserved handle is settled first.
    let r = w.reserve_entity().unwrap();
    w.insert_built(r, &mut builder).unwrap();
    assert_eq!(w.get::<Name>(r), Some(&Name("kept".into())));
    // The same world built by bundles.
    let mut same = world(backend);
    let e2 = same.spawn((Pos(3.0, 3.0), Red, Blue)).unwrap();
    assert_eq!(same.get::<Pos>(e2), w.get::<Pos>(e));
    w.assert_invariants();
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        insert_many_settles_a_reserved_handle,
        remove_many_settles_a_reserved_handle,
        spawn_at_brings_back_a_handle,
        spawn_at_past_the_bound_leaves_the_skipped_indices_free,
        spawn_at_a_reserved_index_settles_it,
        reserve_entities_through_a_shared_world,
        entity_views_read_and_change_one_entity,
        builders_spawn_and_insert_and_are_reused,
    }
}
