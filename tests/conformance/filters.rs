//! Query filters: `With`, `Without` and `Or`, tags, and types the world never met.

use crate::{sorted, world, Blue, Pos, Red, Vel};
use swarm::ecs::{Backend, Or, QueryError, With, Without, World};

fn entity_only_queries_and_or_filters(backend: Backend) {
    let mut w = world(backend);
    let red = w.spawn((Pos(1.0, 0.0), Red)).unwrap();
    let blue = w.spawn((Pos(2.0, 0.0), Blue)).unwrap();
    let both = w.spawn((Pos(4.0, 0.0), Red, Blue, Vel(0.0, 0.0))).unwrap();
    let none = w.spawn((Pos(8.0, 0.0),)).unwrap();
    let bare = w.spawn(()).unwrap();
    let rows = |w: &mut World| {
        let mut v = Vec::new();
        w.query_filtered::<(), Or<With<Red>, With<Blue>>>().for_each(|e, ()| v.push(e));
        sorted(v)
    };
    assert_eq!(rows(&mut w), sorted(vec![red, blue, both]));
    let mut sum = 0.0;
    w.query_filtered::<(&Pos,), Or<With<Red>, With<Blue>>>().for_each(|_, (p,)| sum += p.0);
    assert_eq!(sum, 7.0);
    // Or of a With and a Without, and an Or beside a plain filter.
    let mut v = Vec::new();
    w.query_filtered::<(), Or<With<Vel>, Without<Pos>>>().for_each(|e, ()| v.push(e));
    assert_eq!(sorted(v), sorted(vec![both, bare]));
    let mut v = Vec::new();
    w.query_filtered::<(&Pos,), (Or<With<Red>, With<Blue>>, Without<Vel>)>().for_each(|e, _| v.push(e));
    assert_eq!(sorted(v), sorted(vec![red, blue]));
    // Shared queries agree, a type the world never met included.
    struct Never;
    let shared = &w;
    assert_eq!(shared.query_ref::<()>().count(), 5);
    assert_eq!(shared.query_ref::<(&Pos,)>().with::<Red>().without::<Blue>().count(), 1);
    let mut v = Vec::new();
    shared.query_ref::<()>().for_each(|e, ()| v.push(e));
    assert_eq!(sorted(v), sorted(vec![red, blue, both, none, bare]));
    let filtered = shared.query_ref::<(&Pos,)>();
    assert_eq!(filtered.with::<Never>().count(), 0);
    let mut v = Vec::new();
    shared.query_ref::<(&Pos,)>().for_each(|e, _| v.push(e));
    assert_eq!(v.len(), 4);
    let mut v = Vec::new();
    let q = w.query_ref::<()>();
    q.without::<Pos>().for_each(|e, ()| v.push(e));
    assert_eq!(v, vec![bare]);
    // A type the world never met inside an Or: that side passes nothing, the other still does.
    let world = &w;
    let mut v = Vec::new();
    world.query_ref::<(&Pos,)>().filter::<Or<With<Never>, With<Blue>>>().for_each(|e, _| v.push(e));
    assert_eq!(sorted(v), sorted(vec![blue, both]));
    // Filters on a fetched type are refused inside an Or too.
    let refused = w.query_filtered::<(&Pos,), Or<With<Pos>, With<Red>>>().try_for_each(|_, _| {});
    assert!(matches!(refused, Err(QueryError::Conflict { .. })));
    for backend in Backend::ALL {
        w.set_backend(backend);
        assert_eq!(rows(&mut w), sorted(vec![red, blue, both]), "{backend:?}");
    }
}

fn tags_and_filters(backend: Backend) {
    let mut w = world(backend);
    let red = w.spawn((Pos(0.0, 0.0), Vel(1.0, 0.0), Red)).unwrap();
    let blue = w.spawn((Pos(0.0, 0.0), Vel(2.0, 0.0), Blue)).unwrap();
    let still = w.spawn((Pos(5.0, 5.0), Red)).unwrap();
    w.query::<(&mut Pos, &Vel)>().for_each(|_, (p, v)| p.0 += v.0);
    assert_eq!(w.get::<Pos>(red), Some(&Pos(1.0, 0.0)));
    assert_eq!(w.get::<Pos>(blue), Some(&Pos(2.0, 0.0)));
    let mut reds = Vec::new();
    w.query::<(&Pos,)>().with::<Red>().for_each(|e, _| reds.push(e));
    assert_eq!(sorted(reds), sorted(vec![red, still]));
    let mut not_red = Vec::new();
    w.query_filtered::<(&Pos,), Without<Red>>().for_each(|e, _| not_red.push(e));
    assert_eq!(not_red, vec![blue]);
    let mut moving_reds = Vec::new();
    w.query_filtered::<(&Vel,), (With<Red>, Without<Blue>)>().for_each(|e, _| moving_reds.push(e));
    assert_eq!(moving_reds, vec![red]);
    assert_eq!(w.remove::<Red>(red), Ok(Red));
    assert!(!w.has::<Red>(red) && w.has::<Pos>(red));
    assert_eq!(w.query::<(&Pos,)>().with::<Red>().count(), 1);
    w.assert_invariants();
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        entity_only_queries_and_or_filters,
        tags_and_filters,
    }
}
