//! Component values on live entities: bundles, views, many entities at once, types registered before any entity
//! holds them, the bytes they take, and every value dropped exactly once.

use crate::{world, Blue, Name, Pos, Red, Vel};
use swarm::ecs::{Backend, ComponentError, Entity, NoSuchEntity, World};

fn every_value_is_dropped_exactly_once(backend: Backend) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    /// Counts its drops in a counter of its own test (tests run in parallel).
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let dropped = || drops.load(Ordering::Relaxed);
    let counted = || Counted(drops.clone());
    let mut w = world(backend);
    let mut all = Vec::new();
    w.spawn_batch_into((0..12).map(|i| (Pos(i as f32, 0.0), counted())), &mut all).unwrap();
    for i in 0..6 {
        all.push(w.spawn((counted(), Vel(i as f32, 0.0))).unwrap());
    }
    let made = 18;
    // Rows move between tables (a tag added, another component added and removed): nothing drops.
    for &e in &all[..9] {
        w.insert(e, Red).unwrap();
    }
    for &e in &all[3..15] {
        w.insert(e, Name(format!("{e:?}"))).unwrap();
    }
    assert_eq!(w.remove_many::<Name>(&all[6..12]), 6);
    w.query::<(&mut Counted,)>().for_each(|_, _| {});
    assert_eq!(w.query::<(&Counted,)>().count(), 18);
    if backend == Backend::Archetype {
        let mut bytes = Vec::new();
        w.component_bytes(&mut bytes);
        let red = bytes.iter().find(|b| b.name.ends_with("Red")).expect("Red is registered");
        assert_eq!(red.bytes, 0, "a tag's columns hold no bytes");
    }
    assert_eq!(dropped(), 0, "moving rows drops nothing");
    // Replacing drops the old value once (the caller holds it).
    let old = w.insert(all[0], counted()).unwrap();
    assert_eq!(dropped(), 0);
    drop(old);
    assert_eq!(dropped(), 1);
    // Removing hands the value over; removing erased drops it in place.
    let taken = w.remove::<Counted>(all[1]).unwrap();
    assert_eq!(dropped(), 1);
    drop(taken);
    assert_eq!(dropped(), 2);
    assert_eq!(w.remove_many::<Counted>(&[all[2], all[3], all[1]]), 2);
    assert_eq!(dropped(), 4);
    // Despawning drops what the entity holds, once.
    w.despawn(all[4]).unwrap();
    assert_eq!(dropped(), 5);
    assert_eq!(w.despawn_batch(&[all[5], all[13], all[4], all[2]]), 3);
    assert_eq!(dropped(), 7, "the entity without `Counted` drops none");
    // Migrating moves values, never drops them.
    for backend in Backend::ALL {
        w.set_backend(backend);
    }
    w.set_backend(backend);
    assert_eq!(dropped(), 7);
    assert_eq!(w.query::<(&Counted,)>().count(), made + 1 - 7);
    w.assert_invariants();
    w.clear();
    assert_eq!(dropped(), made + 1, "every value made is dropped once");
    w.assert_invariants();
}

fn bundles_inserted_and_removed_whole(backend: Backend) {
    let mut w = world(backend);
    let e = w.spawn((Pos(0.0, 0.0),)).unwrap();
    w.insert_bundle(e, (Vel(1.0, 0.0), Name("e".into()), Red)).unwrap();
    assert_eq!(
        w.query_one::<(&Pos, &Vel, &Name, &Red)>(e).map(|(_, v, n, _)| (v.0, n.0.clone())),
        Ok((1.0, "e".into()))
    );
    // Replacing what it has.
    w.insert_bundle(e, (Pos(5.0, 0.0), Vel(2.0, 0.0))).unwrap();
    assert_eq!(w.get::<Pos>(e), Some(&Pos(5.0, 0.0)));
    // All or nothing.
    let missing = w.remove_bundle::<(Vel, Blue, Name)>(e);
    assert!(matches!(missing, Err(ComponentError::MissingComponent { component, .. }) if component.ends_with("Blue")));
    assert!(w.has::<Vel>(e) && w.has::<Name>(e), "nothing removed");
    assert_eq!(w.remove_bundle::<(Vel, Name)>(e), Ok((Vel(2.0, 0.0), Name("e".into()))));
    assert!(!w.has::<Vel>(e) && w.has::<Red>(e) && w.has::<Pos>(e));
    // Stale handles, and through the command buffer.
    let dead = w.spawn(()).unwrap();
    w.despawn(dead).unwrap();
    assert_eq!(w.insert_bundle(dead, (Red,)), Err(NoSuchEntity(dead)));
    assert_eq!(w.remove_bundle::<(Red,)>(dead), Err(ComponentError::NoSuchEntity(dead)));
    let mut c = w.commands();
    c.insert_bundle(e, (Vel(3.0, 0.0), Blue));
    c.remove_bundle::<(Pos, Red)>(e);
    c.remove_bundle::<(Pos,)>(e); // already gone by then: skipped
    c.insert_bundle(dead, (Red,));
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped), (2, 2));
    assert_eq!(w.query_one::<(&Vel, &Blue, Option<&Pos>, Option<&Red>)>(e), Ok((&Vel(3.0, 0.0), &Blue, None, None)));
    w.assert_invariants();
}

fn a_bundle_naming_a_type_twice_is_refused_on_insert(backend: Backend) {
    let mut w = world(backend);
    let e = w.spawn(()).unwrap();
    let _ = w.insert_bundle(e, (Red, Red));
}

fn view_matches_the_world_methods_and_refuses_stale_handles(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 0.0), Vel(0.0, 0.0))).unwrap();
    let b = w.spawn((Pos(2.0, 0.0),)).unwrap();
    let dead = w.spawn((Pos(3.0, 0.0), Vel(1.0, 1.0))).unwrap();
    w.despawn(dead).unwrap();
    let reused = w.spawn((Pos(4.0, 0.0),)).unwrap();
    assert_eq!(reused.index(), dead.index(), "the freed index is reused, so `dead` is a stale handle");
    {
        let mut vel = w.view_mut::<Vel>();
        assert_eq!(vel.get(a), Some(&Vel(0.0, 0.0)));
        assert!(!vel.contains(b));
        assert_eq!(vel.get(dead), None);
        vel.get_mut(a).unwrap().0 = 5.0;
        assert_eq!(vel.insert(b, Vel(2.0, 2.0)), Ok(None));
        assert_eq!(vel.insert(a, Vel(6.0, 0.0)), Ok(Some(Vel(5.0, 0.0))));
        assert_eq!(vel.insert(dead, Vel(9.0, 9.0)), Err(ComponentError::NoSuchEntity(dead)));
        assert_eq!(vel.remove(dead), Err(ComponentError::NoSuchEntity(dead)));
        assert!(matches!(vel.remove(reused), Err(ComponentError::MissingComponent { .. })));
        assert_eq!(vel.remove(b), Ok(Vel(2.0, 2.0)));
        assert!(vel.get_mut(dead).is_none());
    }
    assert_eq!(w.get::<Vel>(a), Some(&Vel(6.0, 0.0)));
    assert_eq!(w.get::<Vel>(b), None);
    assert_eq!(w.get::<Vel>(reused), None);
    assert_eq!(w.get::<Pos>(reused), Some(&Pos(4.0, 0.0)));
    // A type the world has not met yet: the view registers it.
    assert_eq!(w.view_mut::<Name>().insert(b, Name("b".into())), Ok(None));
    assert_eq!(w.get::<Name>(b), Some(&Name("b".into())));
    w.assert_invariants();
}

/// `for_each_of` visits what a loop of `get_mut` finds, in the order given, and writes the same values: live
/// entities with the component (named twice: visited twice), not stale or reserved handles, entities without it,
/// or indices the world never made. Also on a type a handler watches, whose view goes through the world.
fn view_for_each_of_visits_what_get_mut_finds(backend: Backend) {
    fn run(backend: Backend, watched: bool, by_list: bool) -> (Vec<Entity>, Vec<Option<Vel>>) {
        let mut w = world(backend);
        if watched {
            w.on_insert::<Vel>(|_, _, _, _| {});
        }
        let mut all = Vec::new();
        w.spawn_batch_into((0..40).map(|i| (Pos(i as f32, 0.0), Vel(i as f32, 1.0))), &mut all).unwrap();
        w.spawn_batch_into((0..5).map(|i| (Pos(i as f32, 9.0),)), &mut all).unwrap();
        for &e in all.iter().step_by(7) {
            w.despawn(e).unwrap();
        }
        let reused = w.spawn((Vel(-1.0, -1.0),)).unwrap();
        let reserved = w.reserve_entity().unwrap();
        let never = Entity::from_parts(5_000_000, std::num::NonZeroU32::new(1).unwrap());
        let mut list: Vec<Entity> = all.iter().rev().copied().collect();
        list.extend([all[3], all[3], reused, reserved, never, all[41]]);
        let mut visited = Vec::new();
        let mut view = w.view_mut::<Vel>();
        let mut hurt = |e: Entity, v: &mut Vel| {
            v.0 += 100.0 + visited.len() as f32;
            visited.push(e);
        };
        match by_list {
            true => view.for_each_of(&list, hurt),
            false => list.iter().for_each(|&e| {
                if let Some(v) = view.get_mut(e) {
                    hurt(e, v)
                }
            }),
        }
        w.assert_invariants();
        (visited, all.iter().chain([&reused]).map(|&e| w.get::<Vel>(e).copied()).collect())
    }
    for watched in [false, true] {
        let (visited, values) = run(backend, watched, true);
        assert_eq!((visited.clone(), values.clone()), run(backend, watched, false));
        assert_eq!(visited.len(), 40 - 6 + 2 + 1, "34 live with Vel (all[3] twice) and the reused index");
        assert!(values[3].is_some_and(|v| v.0 >= 303.0), "all[3] is written three times");
        assert_eq!(values[7], None, "despawned");
    }
}

fn types_first_named_by_a_query_regression(backend: Backend) {
    let mut w = world(backend);
    let e = w.spawn((Pos(0.0, 0.0),)).unwrap();
    // `Red` and `Vel` are registered by the query before any entity holds them.
    assert_eq!(w.query::<(&Pos,)>().without::<Red>().count(), 1);
    assert_eq!(w.query::<(&Vel,)>().count(), 0);
    w.insert(e, Red).unwrap();
    w.insert(e, Vel(1.0, 1.0)).unwrap();
    assert_eq!(w.query::<(&Pos, &Vel)>().with::<Red>().count(), 1);
    w.assert_invariants();
}

fn insert_many_and_remove_many(backend: Backend) {
    let mut w = world(backend);
    let mut live = Vec::new();
    w.spawn_batch_into((0..50).map(|i| (Pos(i as f32, 0.0),)), &mut live).unwrap();
    let dead = live.pop().unwrap();
    w.despawn(dead).unwrap();
    let skipped = w.insert_many(live.iter().chain([&dead]).map(|&e| (e, Vel(1.0, 2.0))));
    assert_eq!(skipped, 1, "the dead handle is skipped");
    assert!(live.iter().all(|&e| w.get::<Vel>(e) == Some(&Vel(1.0, 2.0))));
    assert_eq!(w.remove_many::<Vel>(&live[..10]), 10);
    assert_eq!(w.remove_many::<Vel>(&live[..10]), 0, "already removed");
    assert_eq!(w.remove_many::<Vel>(&[dead]), 0);
    assert_eq!(w.query::<(&Vel,)>().count(), live.len() - 10);
    assert!(live[..10].iter().all(|&e| !w.has::<Vel>(e)));
    assert!(live[10..].iter().all(|&e| w.get::<Vel>(e) == Some(&Vel(1.0, 2.0))));
    assert!(live.iter().all(|&e| w.has::<Pos>(e)));
    w.assert_invariants();
}

fn types_registered_by_refusals_regression(backend: Backend) {
    // A refused query and a refused spawn both register types that then have no pool.
    let mut w = World::with_capacity(1);
    w.set_backend(backend);
    let e = w.spawn((Pos(0.0, 0.0),)).unwrap();
    assert!(w.query::<(&Vel, &mut Vel)>().try_for_each(|_, _| {}).is_err());
    assert!(w.spawn((Name("late".into()),)).is_err());
    assert_eq!(w.get::<Vel>(e), None);
    assert_eq!(w.get_mut::<Name>(e), None);
    assert!(matches!(w.remove::<Vel>(e), Err(ComponentError::MissingComponent { .. })));
    let mut bytes = Vec::new();
    w.component_bytes(&mut bytes);
    assert!(bytes.iter().any(|b| b.name.ends_with("Name") && b.bytes == 0));
    assert!(w.storage_bytes() > 0);
    w.insert(e, Vel(1.0, 1.0)).unwrap();
    assert_eq!(w.get::<Vel>(e), Some(&Vel(1.0, 1.0)));
    w.assert_invariants();
}

fn memory_is_reported_and_grows(backend: Backend) {
    let mut w = world(backend);
    w.spawn((Pos(0.0, 0.0),)).unwrap();
    let small = w.storage_bytes();
    let mut out = Vec::new();
    w.spawn_batch_into((0..5000).map(|i| (Pos(i as f32, 0.0), Vel(0.0, 0.0), Red)), &mut out).unwrap();
    let big = w.storage_bytes();
    assert!(big > small, "{big} <= {small}");
    let mut per = Vec::new();
    w.component_bytes(&mut per);
    let pos = per.iter().find(|c| c.name.ends_with("Pos")).unwrap().bytes;
    assert!(pos >= 5000 * std::mem::size_of::<Pos>(), "Pos reports {pos} bytes for 5001 values");
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        every_value_is_dropped_exactly_once,
        bundles_inserted_and_removed_whole,
        view_matches_the_world_methods_and_refuses_stale_handles,
        view_for_each_of_visits_what_get_mut_finds,
        types_first_named_by_a_query_regression,
        insert_many_and_remove_many,
        types_registered_by_refusals_regression,
        memory_is_reported_and_grows,
    }

    panics_on_every_backend! {
        a_bundle_naming_a_type_twice_is_refused_on_insert => "twice",
    }
}
