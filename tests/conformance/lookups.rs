//! One entity and many entities at once, through the world and through queries.

use crate::{world, Pos, Red, Vel};
use swarm::ecs::{Backend, QueryError, QueryOneError, World};

fn lookups_reach_the_right_column_across_tables(backend: Backend) {
    let mut w = world(backend);
    // Tables made in this order: {Pos}, {Pos, Vel}, {Pos, Red}, {Pos, Vel, Red}.
    let a = w.spawn((Pos(1.0, 0.0),)).unwrap();
    let b = w.spawn((Pos(2.0, 0.0), Vel(20.0, 0.0))).unwrap();
    let c = w.spawn((Pos(3.0, 0.0), Red)).unwrap();
    let d = w.spawn((Pos(4.0, 0.0), Vel(40.0, 0.0), Red)).unwrap();
    let e = w.spawn((Pos(5.0, 0.0), Vel(50.0, 0.0))).unwrap();
    // Every table at once, out of order, two in one table, an optional term missing in some.
    {
        let items = w.query::<(&mut Pos, Option<&mut Vel>)>().get_many([d, a, e, b, c]).unwrap();
        for (p, v) in items {
            p.1 = v.map_or(-1.0, |v| {
                v.1 = p.0;
                v.0
            });
        }
    }
    let pos = |w: &World, x| w.get::<Pos>(x).map(|p| (p.0, p.1));
    assert_eq!(pos(&w, a), Some((1.0, -1.0)));
    assert_eq!(pos(&w, b), Some((2.0, 20.0)));
    assert_eq!(pos(&w, c), Some((3.0, -1.0)));
    assert_eq!(pos(&w, d), Some((4.0, 40.0)));
    assert_eq!(pos(&w, e), Some((5.0, 50.0)));
    assert_eq!(w.get::<Vel>(d), Some(&Vel(40.0, 4.0)));
    assert_eq!(w.get::<Vel>(e), Some(&Vel(50.0, 5.0)));
    // A filter that skips the tables between the ones that match.
    let red = w.query::<(Option<&Vel>, &mut Pos)>().with::<Red>().get_many([d, c]);
    assert_eq!(
        red.map(|[(v1, p1), (v2, p2)]| (v1.map(|v| v.0), p1.0, v2.is_none(), p2.0)),
        Ok((Some(40.0), 4.0, true, 3.0))
    );
    let red = w.query::<(&Pos, &mut Vel)>().with::<Red>().get_many([d, e]);
    assert_eq!(red.err(), Some(QueryOneError::Unsatisfied(e)));
    // One entity, through a mutable and a shared world.
    assert_eq!(w.query_one_mut::<(&Pos, Option<&Vel>)>(e).map(|(p, v)| (p.0, v.map(|v| v.0))), Ok((5.0, Some(50.0))));
    assert_eq!(w.query_one::<(Option<&Vel>, &Pos)>(c).map(|(v, p)| (v.is_none(), p.0)), Ok((true, 3.0)));
    assert_eq!(w.query_ref::<(&Vel,)>().without::<Red>().get(b).map(|(v,)| v.0), Ok(20.0));
    assert_eq!(w.query_ref::<&Pos>().get(d).map(|p| p.0), Ok(4.0));
    w.assert_invariants();
}

fn one_entity_lookups(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 0.0), Vel(2.0, 0.0))).unwrap();
    let b = w.spawn((Pos(5.0, 0.0), Red)).unwrap();
    {
        let (p, v) = w.query_one_mut::<(&mut Pos, &Vel)>(a).unwrap();
        p.0 += v.0;
    }
    assert_eq!(w.get::<Pos>(a), Some(&Pos(3.0, 0.0)));
    assert_eq!(w.query_one::<(&Pos, Option<&Vel>)>(b), Ok((&Pos(5.0, 0.0), None)));
    assert_eq!(w.query_one_mut::<(&Pos, &Vel)>(b).err(), Some(QueryOneError::Unsatisfied(b)));
    assert_eq!(w.query_one::<(&Pos,)>(a).map(|(p,)| p.0), Ok(3.0));
    // Filters, through a query.
    assert!(w.query::<(&Pos,)>().with::<Red>().get(b).is_ok());
    assert_eq!(w.query::<(&Pos,)>().with::<Red>().get(a).err(), Some(QueryOneError::Unsatisfied(a)));
    assert_eq!(w.query_ref::<(&Pos,)>().without::<Red>().get(a).map(|(p,)| p.0), Ok(3.0));
    assert!(w.query::<()>().get(b).is_ok());
    // Aliasing is refused, like a query.
    let refused = w.query_one_mut::<(&mut Pos, &Pos)>(a).err();
    assert!(matches!(refused, Some(QueryOneError::Refused(QueryError::Conflict { mutable: true, .. }))));
    assert!(matches!(w.query_one::<(&Pos, &Pos)>(a), Err(QueryOneError::Refused(_))));
    // Stale handles.
    w.despawn(a).unwrap();
    assert_eq!(w.query_one_mut::<(&Pos,)>(a).err(), Some(QueryOneError::NoSuchEntity(a)));
    assert_eq!(w.query_one::<(&Pos,)>(a).err(), Some(QueryOneError::NoSuchEntity(a)));
    let c = w.spawn((Pos(7.0, 0.0),)).unwrap();
    assert_eq!(c.index(), a.index());
    assert_eq!(w.query_one::<(&Pos,)>(a).err(), Some(QueryOneError::NoSuchEntity(a)), "index reused");
    // A type the world never met.
    struct Never;
    assert_eq!(w.query_one::<(&Never,)>(c).err(), Some(QueryOneError::Unsatisfied(c)));
    assert!(matches!(w.query_one_mut::<(Option<&Never>,)>(c), Ok((None,))));
    w.assert_invariants();
}

fn many_entities_at_once(backend: Backend) {
    let mut w = world(backend);
    // Spread over tables and far apart in index, so the b-tree walks and the tables split.
    let mut all = Vec::new();
    for i in 0..40 {
        let e = match i % 3 {
            0 => w.spawn((Pos(i as f32, 0.0), Vel(1.0, 0.0))).unwrap(),
            1 => w.spawn((Pos(i as f32, 0.0), Vel(1.0, 0.0), Red)).unwrap(),
            _ => w.spawn((Pos(i as f32, 0.0),)).unwrap(),
        };
        all.push(e);
    }
    let (hunter, target) = (all[30], all[4]);
    {
        let [(hp, hv), (tp, _)] = w.query_many_mut::<(&Pos, &mut Vel), 2>([hunter, target]).unwrap();
        hv.0 = tp.0 - hp.0;
    }
    assert_eq!(w.get::<Vel>(hunter), Some(&Vel(-26.0, 0.0)));
    // Three at once, in no particular order, two in one table.
    {
        let [x, y, z] = w.get_many_mut::<Pos, 3>([all[39], all[0], all[3]]).unwrap();
        std::mem::swap(x, y);
        z.1 = 1.0;
    }
    assert_eq!(w.get::<Pos>(all[0]), Some(&Pos(39.0, 0.0)));
    assert_eq!(w.get::<Pos>(all[39]), Some(&Pos(0.0, 0.0)));
    assert_eq!(w.get::<Pos>(all[3]), Some(&Pos(3.0, 1.0)));
    // A whole run, each value written once.
    {
        let values = w.get_many_mut::<Pos, 8>(std::array::from_fn(|k| all[5 * k])).unwrap();
        for p in values {
            p.1 += 10.0;
        }
    }
    assert!((0..8).all(|k| w.get::<Pos>(all[5 * k]).unwrap().1 >= 10.0));
    assert_eq!(w.get::<Pos>(all[1]).unwrap().1, 0.0);
    // Refusals: the same entity twice, a stale handle, a missing component, a filter.
    assert_eq!(w.get_many_mut::<Pos, 2>([hunter, hunter]).err(), Some(QueryOneError::Aliased(hunter)));
    assert_eq!(
        w.query_many_mut::<(&Vel,), 3>([hunter, all[2], target]).err(),
        Some(QueryOneError::Unsatisfied(all[2]))
    );
    let with_red = w.query::<(&mut Pos,)>().with::<Red>().get_many([all[1], all[4]]);
    assert_eq!(with_red.map(|[(a,), (b,)]| (a.0, b.0)), Ok((1.0, 4.0)));
    let with_red = w.query::<(&mut Pos,)>().with::<Red>().get_many([all[1], all[3]]);
    assert_eq!(with_red.err(), Some(QueryOneError::Unsatisfied(all[3])));
    w.despawn(target).unwrap();
    assert_eq!(w.get_many_mut::<Pos, 2>([hunter, target]).err(), Some(QueryOneError::NoSuchEntity(target)));
    assert_eq!(w.get::<Vel>(hunter), Some(&Vel(-26.0, 0.0)), "a refusal writes nothing");
    let empty: [&mut Pos; 0] = w.get_many_mut::<Pos, 0>([]).unwrap();
    assert!(empty.is_empty());
    w.assert_invariants();
}

fn a_list_visit_goes_in_list_order_and_skips_what_does_not_match(backend: Backend) {
    let mut w = world(backend);
    // Spread over tables and far apart in index, as in `many_entities_at_once`.
    let mut all = Vec::new();
    for i in 0..30 {
        let e = match i % 3 {
            0 => w.spawn((Pos(i as f32, 0.0), Vel(1.0, 0.0))).unwrap(),
            1 => w.spawn((Pos(i as f32, 0.0), Vel(2.0, 0.0), Red)).unwrap(),
            _ => w.spawn((Pos(i as f32, 0.0),)).unwrap(),
        };
        all.push(e);
    }
    // A stale handle whose index is live again, an entity without `Vel`, one named twice, out of index order.
    let stale = all[12];
    w.despawn(stale).unwrap();
    let reborn = w.spawn((Pos(100.0, 0.0), Vel(9.0, 0.0))).unwrap();
    assert_eq!(reborn.index(), stale.index());
    let list = [(all[27], 1.0), (stale, 2.0), (all[2], 3.0), (all[4], 4.0), (all[27], 5.0), (reborn, 6.0)];
    let mut visited = Vec::new();
    w.query::<(&mut Pos, &Vel)>().for_each_of(&list, |&(e, add), (pos, vel)| {
        pos.1 += add * vel.0;
        visited.push(e);
    });
    assert_eq!(visited, [all[27], all[4], all[27], reborn], "stale and without-Vel entries skipped, order kept");
    assert_eq!(w.get::<Pos>(all[27]), Some(&Pos(27.0, 6.0)), "visited twice, one after the other");
    assert_eq!(w.get::<Pos>(all[4]), Some(&Pos(4.0, 8.0)));
    assert_eq!(w.get::<Pos>(reborn), Some(&Pos(100.0, 54.0)), "only the live handle's entry wrote");
    assert_eq!(w.get::<Pos>(all[2]), Some(&Pos(2.0, 0.0)));
    // A filter, handles alone, and a shared world.
    let mut red = Vec::new();
    w.query::<&mut Vel>().with::<Red>().for_each_of(&[all[3], all[1], all[10], all[0]], |&e, vel| {
        vel.1 = 1.0;
        red.push(e);
    });
    assert_eq!(red, [all[1], all[10]]);
    let mut read = Vec::new();
    w.query_ref::<(&Pos, Option<&Vel>)>().without::<Red>().for_each_of(&all, |&e, (pos, vel)| {
        read.push((e, pos.0, vel.map(|v| v.0)));
    });
    let expected: Vec<_> = all
        .iter()
        .filter(|&&e| e != stale && !w.has::<Red>(e))
        .map(|&e| (e, w.get::<Pos>(e).unwrap().0, w.get::<Vel>(e).map(|v| v.0)))
        .collect();
    assert_eq!(read, expected);
    assert_eq!(expected.len(), 19);
    // A handle the command buffer reserved: a mutable world applies the buffer first, as `get` does.
    let reserved = w.commands().spawn((Pos(-1.0, 0.0), Vel(0.5, 0.0))).unwrap();
    let mut seen = Vec::new();
    w.query::<&Vel>().for_each_of(&[reserved], |&e, vel| seen.push((e, vel.0)));
    assert_eq!(seen, [(reserved, 0.5)]);
    // A refused query panics, like `for_each`.
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        w.query::<(&mut Pos, &Pos)>().for_each_of(&[reserved], |_, _| {});
    }));
    assert!(refused.is_err());
    w.assert_invariants();
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        lookups_reach_the_right_column_across_tables,
        one_entity_lookups,
        many_entities_at_once,
        a_list_visit_goes_in_list_order_and_skips_what_does_not_match,
    }
}
