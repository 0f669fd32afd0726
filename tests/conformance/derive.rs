//! `#[derive(Bundle)]` and `#[derive(QueryData)]`: a derived bundle places what its tuple places (one at a time, in
//! batches, through commands, nested and generic), and a derived query reads and writes what its tuple does.

use crate::{sorted, world, Blue, Name, Pos, Red, Vel};
use swarm::ecs::Component;
use swarm::ecs::{Backend, Bundle, Entity, QueryData, QueryOneError, World};

#[derive(Bundle)]
struct Body {
    pos: Pos,
    vel: Vel,
}

#[derive(Bundle)]
struct Fighter {
    #[bundle]
    body: Body,
    name: Name,
    team: Red,
}

/// A tuple field marked `#[bundle]` is flattened too; a tuple struct derives as well.
#[derive(Bundle)]
struct Pair(#[bundle] (Pos, Vel), Blue);

#[derive(Bundle)]
struct Tagged<T: Component> {
    value: T,
    tag: Red,
}

#[derive(QueryData)]
struct Mover<'a> {
    pos: &'a mut Pos,
    vel: &'a Vel,
    red: Option<&'a Red>,
}

#[derive(QueryData)]
struct Look<'a> {
    pos: &'a Pos,
    nested: (&'a Vel, Option<&'a Name>),
}

/// A derived query holding another.
#[derive(QueryData)]
struct Outer<'a> {
    look: Look<'a>,
    red: &'a Red,
}

fn fighter(i: usize) -> Fighter {
    Fighter { body: Body { pos: Pos(i as f32, 0.0), vel: Vel(1.0, i as f32) }, name: Name(format!("f{i}")), team: Red }
}

fn fighter_tuple(i: usize) -> (Pos, Vel, Name, Red) {
    (Pos(i as f32, 0.0), Vel(1.0, i as f32), Name(format!("f{i}")), Red)
}

/// Every entity with its values, in handle order.
fn rows(w: &mut World) -> Vec<(Entity, Pos, Vel, Option<String>, bool)> {
    let mut rows = Vec::new();
    w.query::<(&Pos, &Vel, Option<&Name>, Option<&Red>)>()
        .for_each(|e, (p, v, n, r)| rows.push((e, *p, *v, n.map(|n| n.0.clone()), r.is_some())));
    rows.sort_by_key(|row| row.0);
    rows
}

fn derived_bundle_spawns_what_its_tuple_spawns(backend: Backend) {
    let (mut derived, mut tuple) = (world(backend), world(backend));
    for i in 0..20 {
        let a = derived.spawn(fighter(i)).unwrap();
        let b = tuple.spawn(fighter_tuple(i)).unwrap();
        assert_eq!(a, b);
        if i % 3 == 0 {
            derived.despawn(a).unwrap();
            tuple.despawn(b).unwrap();
        }
    }
    assert_eq!(rows(&mut derived), rows(&mut tuple));
    assert_eq!(rows(&mut derived).len(), 13);
    // Both kinds of spawn make the same table or pools: a query over the tuple's types counts them all.
    assert_eq!(derived.query::<(&Pos, &Vel, &Name, &Red)>().count(), 13);
    derived.assert_invariants();
}

fn nested_bundles_flatten(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn(fighter(1)).unwrap();
    let b = w.spawn(Pair((Pos(2.0, 2.0), Vel(3.0, 3.0)), Blue)).unwrap();
    assert_eq!(w.get::<Pos>(a), Some(&Pos(1.0, 0.0)));
    assert_eq!(w.get::<Vel>(a), Some(&Vel(1.0, 1.0)));
    assert_eq!(w.get::<Name>(a), Some(&Name("f1".into())));
    assert!(w.has::<Red>(a) && !w.has::<Blue>(a));
    assert_eq!(w.get::<Vel>(b), Some(&Vel(3.0, 3.0)));
    assert!(w.has::<Blue>(b));
    // Inserting and removing a nested bundle type works on its flattened components.
    let body = w.remove_bundle::<Body>(a).unwrap();
    assert_eq!((body.pos, body.vel), (Pos(1.0, 0.0), Vel(1.0, 1.0)));
    assert!(!w.has::<Pos>(a) && w.has::<Name>(a));
    assert!(w.remove_bundle::<Body>(a).is_err(), "all or nothing: the body is gone");
    w.insert_bundle(a, Body { pos: Pos(5.0, 5.0), vel: Vel(0.0, 0.0) }).unwrap();
    assert_eq!(w.get::<Pos>(a), Some(&Pos(5.0, 5.0)));
    let whole = w.remove_bundle::<Fighter>(a).unwrap();
    assert_eq!((whole.body.pos, whole.name), (Pos(5.0, 5.0), Name("f1".into())));
    assert_eq!(w.query::<()>().with::<Red>().count(), 0);
    w.assert_invariants();
}

fn generic_bundle(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn(Tagged { value: Pos(1.0, 1.0), tag: Red }).unwrap();
    let b = w.spawn(Tagged { value: Name("b".into()), tag: Red }).unwrap();
    assert_eq!(w.get::<Pos>(a), Some(&Pos(1.0, 1.0)));
    assert_eq!(w.get::<Name>(b), Some(&Name("b".into())));
    let mut tagged = Vec::new();
    w.query::<()>().with::<Red>().for_each(|e, ()| tagged.push(e));
    assert_eq!(sorted(tagged), vec![a, b]);
    w.assert_invariants();
}

fn spawn_batch_of_derived_bundles(backend: Backend) {
    let (mut derived, mut tuple) = (world(backend), world(backend));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    derived.spawn_batch_into((0..50).map(fighter), &mut a).unwrap();
    tuple.spawn_batch_into((0..50).map(fighter_tuple), &mut b).unwrap();
    assert_eq!(a, b);
    assert_eq!(derived.spawn_batch((50..60).map(fighter)), Ok(10));
    assert_eq!(tuple.spawn_batch((50..60).map(fighter_tuple)), Ok(10));
    assert_eq!(rows(&mut derived), rows(&mut tuple));
    assert_eq!(derived.len(), 60);
    derived.assert_invariants();
}

fn commands_spawn_a_derived_bundle(backend: Backend) {
    let (mut derived, mut tuple) = (world(backend), world(backend));
    let first = derived.spawn(fighter(100)).unwrap();
    tuple.spawn(fighter_tuple(100)).unwrap();
    let mut commands = derived.commands();
    let spawned: Vec<Entity> = (0..10).map(|i| commands.spawn(fighter(i)).unwrap()).collect();
    commands.insert_bundle(first, Body { pos: Pos(-1.0, -1.0), vel: Vel(0.0, 0.0) });
    derived.apply_commands();
    let mut commands = tuple.commands();
    let expected: Vec<Entity> = (0..10).map(|i| commands.spawn(fighter_tuple(i)).unwrap()).collect();
    commands.insert_bundle(first, (Pos(-1.0, -1.0), Vel(0.0, 0.0)));
    tuple.apply_commands();
    assert_eq!(spawned, expected);
    assert_eq!(rows(&mut derived), rows(&mut tuple));
    // Spawned from inside a query loop (deferred handles), too.
    derived.query::<&Name>().for_each_with_commands(|_, name, commands| {
        if name.0 == "f3" {
            commands.spawn(Pair((Pos(7.0, 7.0), Vel(7.0, 7.0)), Blue)).unwrap();
        }
    });
    derived.apply_commands();
    assert_eq!(derived.query::<&Pos>().with::<Blue>().count(), 1);
    derived.assert_invariants();
}

fn derived_query_mutable_and_shared(backend: Backend) {
    let mut w = world(backend);
    for i in 0..10 {
        if i % 2 == 0 {
            w.spawn(fighter(i)).unwrap();
        } else {
            w.spawn((Pos(i as f32, 0.0), Vel(1.0, i as f32))).unwrap();
        }
    }
    w.spawn((Pos(0.0, 0.0),)).unwrap(); // no velocity: not a mover
    let mut moved = 0;
    w.query::<Mover>().for_each(|_, m| {
        m.pos.0 += m.vel.0;
        if m.red.is_some() {
            m.pos.1 = 1.0;
        }
        moved += 1;
    });
    assert_eq!(moved, 10);
    // The same query through a shared world, and the tuple it stands for, agree.
    let mut looked = Vec::new();
    w.query_ref::<Look>().for_each(|e, l| looked.push((e, *l.pos, *l.nested.0, l.nested.1.map(|n| n.0.clone()))));
    let mut expected = Vec::new();
    w.query_ref::<(&Pos, (&Vel, Option<&Name>))>()
        .for_each(|e, (p, (v, n))| expected.push((e, *p, *v, n.map(|n| n.0.clone()))));
    assert_eq!(looked, expected);
    assert_eq!(looked.len(), 10);
    for (_, pos, vel, name) in &looked {
        assert_eq!(pos.0, vel.1 + 1.0);
        assert_eq!(pos.1, if name.is_some() { 1.0 } else { 0.0 });
    }
    // A derived query nested in another, and filters beside it.
    assert_eq!(w.query::<Outer>().count(), 5);
    assert_eq!(w.query_ref::<Look>().without::<Red>().count(), 5);
    let mut reds = 0;
    w.query::<(Option<&Blue>, Outer)>().for_each(|_, (_, outer)| reds += usize::from(outer.look.nested.1.is_some()));
    assert_eq!(reds, 5);
}

fn derived_query_get_and_get_many(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn(fighter(1)).unwrap();
    let b = w.spawn((Pos(2.0, 0.0), Vel(2.0, 0.0))).unwrap();
    let c = w.spawn((Pos(3.0, 0.0),)).unwrap();
    let m = w.query::<Mover>().get(a).unwrap();
    m.pos.0 = 10.0;
    assert!(m.red.is_some());
    assert_eq!(w.query::<Mover>().get(c).err(), Some(QueryOneError::Unsatisfied(c)));
    let [ma, mb] = w.query::<Mover>().get_many([a, b]).unwrap();
    ma.pos.0 += mb.vel.0;
    mb.pos.0 = -1.0;
    assert!(mb.red.is_none());
    assert_eq!(w.get::<Pos>(a), Some(&Pos(12.0, 0.0)));
    assert_eq!(w.get::<Pos>(b), Some(&Pos(-1.0, 0.0)));
    assert_eq!(w.query_ref::<Look>().get(a).map(|l| l.nested.1.map(|n| n.0.clone())), Ok(Some("f1".into())));
    assert_eq!(w.query::<Mover>().get_many([a, a]).err(), Some(QueryOneError::Aliased(a)));
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        derived_bundle_spawns_what_its_tuple_spawns,
        nested_bundles_flatten,
        generic_bundle,
        spawn_batch_of_derived_bundles,
        commands_spawn_a_derived_bundle,
        derived_query_mutable_and_shared,
        derived_query_get_and_get_many,
    }
}
