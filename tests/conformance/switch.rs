//! Switching a live world to every backend.

use crate::{world, Blue, Name, Pos, Red, Vel};
use swarm::ecs::Backend;

fn switch_to_every_backend_keeps_everything(backend: Backend) {
    let mut w = world(backend);
    let mut live = Vec::new();
    for i in 0..300 {
        let e = match i % 3 {
            0 => w.spawn((Pos(i as f32, 0.0), Vel(1.0, 0.0), Red)).unwrap(),
            1 => w.spawn((Pos(i as f32, 0.0), Name(i.to_string()))).unwrap(),
            _ => w.spawn((Vel(i as f32, 0.0), Blue)).unwrap(),
        };
        live.push(e);
    }
    let mut stale = Vec::new();
    for e in live.iter().step_by(7) {
        w.despawn(*e).unwrap();
        stale.push(*e);
    }
    live.retain(|e| !stale.contains(e));
    let snapshot: Vec<_> = live
        .iter()
        .map(|&e| {
            (
                e,
                w.get::<Pos>(e).copied(),
                w.get::<Vel>(e).copied(),
                w.get::<Name>(e).cloned(),
                w.has::<Red>(e),
                w.has::<Blue>(e),
            )
        })
        .collect();
    for to in Backend::ALL {
        w.set_backend(to);
        assert_eq!(w.backend(), to);
        w.assert_invariants();
        for (e, pos, vel, name, red, blue) in &snapshot {
            assert!(w.is_alive(*e));
            assert_eq!(w.get::<Pos>(*e).copied(), *pos, "{to}");
            assert_eq!(w.get::<Vel>(*e).copied(), *vel, "{to}");
            assert_eq!(w.get::<Name>(*e).cloned(), *name, "{to}");
            assert_eq!((w.has::<Red>(*e), w.has::<Blue>(*e)), (*red, *blue), "{to}");
        }
        for e in &stale {
            assert!(!w.is_alive(*e) && w.get::<Pos>(*e).is_none(), "{to}: stale handle came back");
        }
        assert_eq!(w.len() as usize, live.len());
        assert_eq!(w.query::<(&Pos, &Vel)>().with::<Red>().count(), snapshot.iter().filter(|s| s.4).count());
    }
    // The free list carried over: the next spawn reuses the last freed index.
    let e = w.spawn((Pos(0.0, 0.0),)).unwrap();
    assert!(stale.iter().any(|s| s.index() == e.index()), "free list lost in the switch");
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        switch_to_every_backend_keeps_everything,
    }
}
