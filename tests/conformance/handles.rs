//! Entity handles: stale ones touch nothing, reserved ones follow one rule, exhausted generations retire their
//! index, and a clear leaves every old handle dead.

use crate::{world, Blue, Pos, Red, Vel};
use swarm::ecs::{Backend, ComponentError, Entities, NoSuchEntity, QueryOneError, World};

fn stale_handles_touch_nothing(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 1.0),)).unwrap();
    w.despawn(a).unwrap();
    let b = w.spawn((Pos(2.0, 2.0),)).unwrap();
    assert_eq!(a.index(), b.index(), "the index is recycled");
    assert!(!w.is_alive(a));
    assert_eq!(w.get::<Pos>(a), None);
    assert_eq!(w.get_mut::<Pos>(a), None);
    assert_eq!(w.despawn(a), Err(NoSuchEntity(a)));
    assert_eq!(w.insert(a, Vel(0.0, 0.0)), Err(NoSuchEntity(a)));
    assert_eq!(w.remove::<Pos>(a), Err(ComponentError::NoSuchEntity(a)));
    assert_eq!(w.get::<Pos>(b), Some(&Pos(2.0, 2.0)), "the new occupant is untouched");
    assert_eq!(w.get::<Vel>(b), None);
    w.assert_invariants();
}

fn a_released_reservation_never_comes_to_life(backend: Backend) {
    let mut w = world(backend);
    let r = w.commands().spawn((Pos(1.0, 1.0),)).unwrap();
    assert!(w.entities().is_reserved(r));
    w.discard_commands();
    assert!(!w.entities().is_reserved(r) && !w.is_alive(r));
    let n = w.spawn((Vel(0.0, 0.0),)).unwrap();
    assert_eq!(n.index(), r.index(), "the index is reused");
    assert_ne!(n.generation(), r.generation(), "under a new generation");
    assert!(w.get::<Pos>(r).is_none() && w.get::<Vel>(r).is_none());
    assert_eq!(w.despawn(r), Err(NoSuchEntity(r)));
    // A buffer naming the released handle skips it.
    let mut c = w.commands();
    c.insert(r, Red);
    c.despawn(r);
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped), (0, 2));
    assert!(w.is_alive(n) && !w.has::<Red>(n));
    w.assert_invariants();
}

fn reserved_handles_follow_one_rule(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    // Filled in later: the insert applies the buffer first, commands recorded before it first of all.
    let r = w.reserve_entity().unwrap();
    w.commands().insert(a, Red);
    assert!(!w.is_alive(r) && w.entities().is_reserved(r));
    assert_eq!(w.get::<Pos>(r), None, "a shared read sees it not alive yet");
    assert_eq!(w.query_one::<()>(r).err(), Some(QueryOneError::NoSuchEntity(r)));
    assert_eq!(w.view_mut::<Pos>().insert(r, Pos(1.0, 1.0)), Err(ComponentError::Reserved(r)));
    assert!(w.view_mut::<Pos>().remove(r).unwrap_err().to_string().contains("reserved"));
    assert_eq!(w.insert(r, Pos(1.0, 1.0)), Ok(None));
    assert!(w.is_alive(r) && w.has::<Red>(a), "the buffer was applied first");
    assert!(!w.has_pending_commands());
    // A reservation despawned through the world never comes to life.
    let s = w.commands().spawn((Pos(2.0, 2.0),)).unwrap();
    assert_eq!(w.despawn(s), Ok(()));
    assert!(!w.is_alive(s));
    w.apply_commands();
    assert!(!w.is_alive(s) && w.get::<Pos>(s).is_none());
    // Every `&mut World` operation settles the handle the same way.
    let t = w.commands().spawn((Pos(3.0, 3.0), Vel(1.0, 0.0))).unwrap();
    assert_eq!(w.get_mut::<Pos>(t).map(|p| p.0), Some(3.0));
    let u = w.commands().spawn((Pos(4.0, 4.0),)).unwrap();
    assert_eq!(w.remove::<Pos>(u), Ok(Pos(4.0, 4.0)));
    let v = w.commands().spawn((Vel(5.0, 0.0),)).unwrap();
    assert_eq!(w.query_one_mut::<(&Vel,)>(v).map(|(v,)| v.0), Ok(5.0));
    let x = w.reserve_entity().unwrap();
    assert!(w.get_many_mut::<Vel, 2>([t, x]).is_err(), "alive now, but without `Vel`");
    assert!(w.is_alive(x));
    let y = w.reserve_entity().unwrap();
    w.insert_bundle(y, (Red, Blue)).unwrap();
    assert!(w.has::<Blue>(y));
    // A discarded reservation is not revived by an operation naming it.
    let z = w.reserve_entity().unwrap();
    w.discard_commands();
    assert_eq!(w.insert(z, Red), Err(NoSuchEntity(z)));
    // A full world: no reservation to make.
    let mut small = World::with_capacity(1);
    small.set_backend(backend);
    small.spawn(()).unwrap();
    assert!(small.reserve_entity().is_err());
    w.assert_invariants();
}

fn exhausted_generations_retire_the_index(backend: Backend) {
    let mut w = World::from_entities(Entities::with_max_generation(10, 2));
    w.set_backend(backend);
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    w.despawn(a).unwrap();
    let b = w.spawn((Pos(1.0, 0.0),)).unwrap();
    assert_eq!((b.index(), b.generation().get()), (a.index(), 2));
    w.despawn(b).unwrap();
    assert_eq!(w.entities().retired(), 1);
    let c = w.spawn((Pos(2.0, 0.0),)).unwrap();
    assert_ne!(c.index(), a.index());
    assert_eq!(w.get::<Pos>(b), None);
    w.assert_invariants();
}

fn clear_keeps_handles_dead(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(0.0, 0.0),)).unwrap();
    w.clear();
    assert!(!w.is_alive(a) && w.is_empty());
    let b = w.spawn((Pos(1.0, 0.0),)).unwrap();
    assert_eq!(w.get::<Pos>(a), None);
    assert_eq!(w.query::<(&Pos,)>().count(), 1);
    assert!(w.is_alive(b));
    w.assert_invariants();
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        stale_handles_touch_nothing,
        a_released_reservation_never_comes_to_life,
        reserved_handles_follow_one_rule,
        exhausted_generations_retire_the_index,
        clear_keeps_handles_dead,
    }
}
