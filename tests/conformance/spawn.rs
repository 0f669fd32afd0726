//! Spawning and despawning: one at a time, in batches, entities with no components, and a full world.

use crate::{sorted, world, Name, Pos, Red, Vel};
use swarm::ecs::{Backend, ComponentError, World, WorldFull};

fn spawn_get_insert_remove_despawn(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 2.0), Vel(0.5, 0.0))).unwrap();
    let b = w.spawn((Pos(3.0, 4.0), Name("b".into()))).unwrap();
    assert_eq!(w.len(), 2);
    assert_eq!(w.get::<Pos>(a), Some(&Pos(1.0, 2.0)));
    assert_eq!(w.get::<Vel>(b), None);
    w.get_mut::<Pos>(a).unwrap().0 = 9.0;
    assert_eq!(w.get::<Pos>(a), Some(&Pos(9.0, 2.0)));
    assert_eq!(w.insert(b, Vel(1.0, 1.0)), Ok(None));
    assert_eq!(w.insert(b, Vel(2.0, 2.0)), Ok(Some(Vel(1.0, 1.0))));
    assert_eq!(w.remove::<Name>(b), Ok(Name("b".into())));
    assert!(matches!(w.remove::<Name>(b), Err(ComponentError::MissingComponent { .. })));
    assert_eq!(w.get::<Pos>(b), Some(&Pos(3.0, 4.0)), "other components survive a remove");
    assert_eq!(w.despawn(a), Ok(()));
    assert_eq!(w.len(), 1);
    assert_eq!(w.get::<Vel>(b), Some(&Vel(2.0, 2.0)));
    w.assert_invariants();
}

fn despawn_batch_matches_despawning_one_by_one(backend: Backend) {
    // Two worlds built alike; one despawns the batch, the other the same targets one by one.
    let build = || {
        let mut w = world(backend);
        let mut spawned = Vec::new();
        w.spawn_batch_into((0..20).map(|i| (Pos(i as f32, 0.0), Vel(1.0, i as f32))), &mut spawned).unwrap();
        let tagged = w.spawn((Pos(-1.0, 0.0), Red)).unwrap();
        // A stale handle whose index is live again, and a reserved (not yet alive) handle.
        let stale = spawned[19];
        w.despawn(stale).unwrap();
        let occupant = w.spawn((Pos(19.0, 0.0), Vel(1.0, 19.0))).unwrap();
        assert_eq!(occupant.index(), stale.index());
        let reserved = w.commands().spawn((Pos(0.0, 0.0),)).unwrap();
        let targets = vec![spawned[3], tagged, spawned[0], spawned[3], stale, reserved, spawned[7]];
        (w, targets, occupant, reserved)
    };
    let (mut batch, targets, occupant, reserved) = build();
    let (mut single, _, _, _) = build();
    // The reserved handle is settled first (the buffer applied), as `despawn` does: five.
    assert_eq!(batch.despawn_batch(&targets), 5, "live targets only, each once");
    let despawned = targets.iter().filter(|&&e| single.despawn(e).is_ok()).count();
    assert_eq!(despawned, 5);
    for w in [&mut batch, &mut single] {
        assert_eq!(w.len(), 17);
        assert!(targets.iter().all(|&e| !w.is_alive(e)));
        assert_eq!(w.get::<Pos>(occupant), Some(&Pos(19.0, 0.0)), "the index's new owner is untouched");
        assert_eq!(w.query::<(&Pos,)>().with::<Red>().count(), 0, "the tag went with its entity");
        w.assert_invariants();
    }
    // Same survivors, same values, same iteration order, same free list.
    let rows = |w: &mut World| {
        let mut rows = Vec::new();
        w.query::<(&Pos, &Vel)>().for_each(|e, (p, v)| rows.push((e, p.0, v.1)));
        rows
    };
    assert_eq!(rows(&mut batch), rows(&mut single));
    assert_eq!(rows(&mut batch).len(), 17);
    let next = |w: &mut World| (0..5).map(|_| w.spawn((Pos(5.0, 5.0),)).unwrap()).collect::<Vec<_>>();
    assert_eq!(next(&mut batch), next(&mut single), "indices are freed in the same order");
    // The despawned reservation stays dead.
    batch.apply_commands();
    assert!(!batch.is_alive(reserved));
    assert_eq!(batch.despawn_batch(&targets[..5]), 0, "all of them are gone already");
    batch.assert_invariants();
}

fn entities_with_no_components(backend: Backend) {
    let mut w = world(backend);
    let empty = w.spawn(()).unwrap();
    let full = w.spawn((Pos(1.0, 1.0), Red)).unwrap();
    assert!(w.is_alive(empty) && w.len() == 2);
    assert_eq!(w.get::<Pos>(empty), None);
    assert_eq!(w.query::<()>().count(), 2, "a query of nothing visits every live entity");
    assert_eq!(w.query_ref::<()>().count(), 2);
    assert_eq!(w.query::<(Option<&Pos>,)>().count(), 2);
    assert_eq!(w.spawn_batch((0..3).map(|_| ())), Ok(3));
    let mut more = Vec::new();
    w.spawn_batch_into((0..2).map(|_| ()), &mut more).unwrap();
    assert_eq!(more.len(), 2);
    assert!(more.iter().all(|&e| w.is_alive(e)));
    let later = w.commands().spawn(()).unwrap();
    w.apply_commands();
    assert_eq!(w.len(), 8);
    assert_eq!(w.query::<()>().count(), 8);
    // Filled in later, and emptied again.
    w.insert(empty, Vel(2.0, 0.0)).unwrap();
    w.insert(later, Red).unwrap();
    let mut reds = Vec::new();
    w.query::<()>().with::<Red>().for_each(|e, ()| reds.push(e));
    assert_eq!(sorted(reds), sorted(vec![full, later]));
    assert_eq!(w.remove::<Vel>(empty), Ok(Vel(2.0, 0.0)));
    assert!(w.is_alive(empty));
    for backend in Backend::ALL {
        w.set_backend(backend);
        assert_eq!(w.query::<()>().count(), 8, "{backend:?} keeps entities with no components");
        assert!(w.is_alive(empty) && w.has::<Red>(later));
    }
    w.set_backend(backend);
    assert_eq!(w.despawn(empty), Ok(()));
    assert_eq!(w.query::<()>().count(), 7);
    w.assert_invariants();
}

fn spawn_batch_counts_without_collecting_handles(backend: Backend) {
    let mut w = World::with_capacity(50);
    w.set_backend(backend);
    let first = w.spawn((Pos(-1.0, 0.0),)).unwrap();
    assert_eq!(w.spawn_batch((0..30).map(|i| (Pos(i as f32, 0.0), Vel(0.0, i as f32)))), Ok(30));
    assert_eq!(w.spawn_batch((0..40).map(|i| (Vel(i as f32, 1.0),))), Err(WorldFull { capacity: 50 }));
    assert_eq!(w.len(), 50, "the bundles that fitted stay");
    let mut sum = 0.0;
    w.query::<(&Pos, &Vel)>().for_each(|_, (p, v)| sum += p.0 + v.1);
    assert_eq!(sum, 2.0 * (0..30).sum::<i32>() as f32);
    assert_eq!(w.query::<(&Vel,)>().without::<Pos>().count(), 19);
    assert_eq!(w.get::<Pos>(first), Some(&Pos(-1.0, 0.0)));
    w.assert_invariants();
}

fn full_world_refuses_and_loses_nothing(backend: Backend) {
    let mut w = World::with_capacity(3);
    w.set_backend(backend);
    let all: Vec<_> = (0..3).map(|i| w.spawn((Pos(i as f32, 0.0),)).unwrap()).collect();
    assert_eq!(w.spawn((Pos(9.0, 9.0),)), Err(WorldFull { capacity: 3 }));
    assert_eq!(w.commands().spawn((Pos(9.0, 9.0),)), Err(WorldFull { capacity: 3 }));
    let mut out = Vec::new();
    assert!(w.spawn_batch_into((0..5).map(|_| (Pos(0.0, 0.0),)), &mut out).is_err());
    assert!(out.is_empty());
    for (i, e) in all.iter().enumerate() {
        assert_eq!(w.get::<Pos>(*e), Some(&Pos(i as f32, 0.0)));
    }
    w.despawn(all[0]).unwrap();
    assert!(w.spawn((Pos(7.0, 7.0),)).is_ok());
    w.assert_invariants();
}

fn spawn_batch_matches_spawn(backend: Backend) {
    let mut w = world(backend);
    let mut out = Vec::new();
    w.spawn_batch_into((0..100).map(|i| (Pos(i as f32, 0.0), Vel(0.0, i as f32))), &mut out).unwrap();
    assert_eq!(out.len(), 100);
    assert_eq!(w.get::<Vel>(out[42]), Some(&Vel(0.0, 42.0)));
    w.assert_invariants();
}

fn spawn_batch_reuses_freed_indices_and_stops_whole_when_full(backend: Backend) {
    let mut w = World::with_capacity(150);
    w.set_backend(backend);
    let mut first = Vec::new();
    w.spawn_batch_into((0..100).map(|i| (Pos(i as f32, 0.0), Vel(0.0, i as f32))), &mut first).unwrap();
    for e in first.iter().skip(1).step_by(2) {
        w.despawn(*e).unwrap();
    }
    // 50 live, room for 100: the first 100 of these 120 fit (the 50 freed indices first), then the
    // batch stops with an error and every entity it did spawn is whole.
    let mut second = Vec::new();
    let result = w.spawn_batch_into((0..120).map(|i| (Vel(1.0, i as f32), Pos(-(i as f32), 1.0))), &mut second);
    assert_eq!(result, Err(WorldFull { capacity: 150 }));
    assert_eq!(second.len(), 100);
    assert_eq!(w.len(), 150);
    for (i, e) in second.iter().enumerate() {
        assert_eq!(w.get::<Pos>(*e), Some(&Pos(-(i as f32), 1.0)));
        assert_eq!(w.get::<Vel>(*e), Some(&Vel(1.0, i as f32)));
    }
    for (i, e) in first.iter().enumerate().step_by(2) {
        assert_eq!(w.get::<Pos>(*e), Some(&Pos(i as f32, 0.0)));
    }
    assert_eq!(w.query::<(&Pos, &Vel)>().count(), 150);
    w.assert_invariants();
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        spawn_get_insert_remove_despawn,
        despawn_batch_matches_despawning_one_by_one,
        entities_with_no_components,
        spawn_batch_counts_without_collecting_handles,
        full_world_refuses_and_loses_nothing,
        spawn_batch_matches_spawn,
        spawn_batch_reuses_freed_indices_and_stops_whole_when_full,
    }
}
