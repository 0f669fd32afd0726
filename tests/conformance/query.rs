//! Queries: cached shapes, values paired right, single terms, runs, optional terms, shared queries and aliasing.

use crate::{sorted, world, Blue, Pos, Red, Vel};
use swarm::ecs::{Backend, Entity, QueryError, QueryOneError, With, Without, World};

fn a_query_shape_run_again_sees_what_changed_since(backend: Backend) {
    // The world caches each query shape (ids, access check, matching tables): later runs of the same
    // shape must still see new component sets, emptied and refilled tables, and backend switches.
    let mut w = world(backend);
    let sum = |w: &mut World| {
        let mut total = 0.0;
        w.query::<(&Pos, Option<&Vel>)>().without::<Red>().for_each(|_, (p, v)| {
            total += p.0 + v.map_or(0.0, |v| v.0);
        });
        total
    };
    assert_eq!(sum(&mut w), 0.0);
    let a = w.spawn((Pos(1.0, 0.0),)).unwrap();
    assert_eq!(sum(&mut w), 1.0);
    let b = w.spawn((Pos(2.0, 0.0), Vel(10.0, 0.0))).unwrap();
    w.spawn((Pos(100.0, 0.0), Red)).unwrap();
    assert_eq!(sum(&mut w), 13.0, "a new set of components is matched");
    w.despawn(a).unwrap();
    assert_eq!(sum(&mut w), 12.0);
    w.spawn((Pos(4.0, 0.0),)).unwrap();
    assert_eq!(sum(&mut w), 16.0, "an emptied and refilled set is walked again");
    w.insert(b, Red).unwrap();
    assert_eq!(sum(&mut w), 4.0, "a filter keeps applying");
    for backend in Backend::ALL {
        w.set_backend(backend);
        assert_eq!(sum(&mut w), 4.0, "after switching to {backend}");
    }
    w.set_backend(backend);
    w.clear();
    assert_eq!(sum(&mut w), 0.0);
    w.spawn((Pos(8.0, 0.0), Vel(1.0, 0.0))).unwrap();
    assert_eq!(sum(&mut w), 9.0, "after a clear");
    for _ in 0..2 {
        let refused = w.query::<(&Pos, &mut Pos)>().try_for_each(|_, _| {});
        assert!(matches!(refused, Err(QueryError::Conflict { mutable: true, .. })), "{refused:?}");
    }
    w.assert_invariants();
}

fn queries_pair_values_right_while_pools_change_between_them(backend: Backend) {
    // Pools packed alike are walked in lock-step, and a sparse set remembers that across changes
    // it can check cheaply. Every round changes the pools (alike, or apart at equal length), then a
    // query must hand each entity its own values, and exactly the entities with both.
    let mut w = world(backend);
    let mut live: Vec<Entity> = (0..300).map(|i| w.spawn((Pos(i as f32, 0.0), Vel(i as f32, 1.0))).unwrap()).collect();
    let check = |w: &mut World, live: &[Entity], round: usize| {
        let mut seen = Vec::new();
        w.query::<(&Pos, &Vel)>().for_each(|e, (p, v)| {
            assert_eq!(p.0, v.0, "round {round}: {e:?} got another entity's value");
            seen.push(e);
        });
        let both = live.iter().copied().filter(|&e| w.has::<Pos>(e) && w.has::<Vel>(e)).collect();
        assert_eq!(sorted(seen), sorted(both), "round {round}");
    };
    check(&mut w, &live, 0);
    let mut apart = None;
    for round in 1..40 {
        // Ten rounds of the same changes on both pools first (they stay alike), then also apart.
        let step = if round <= 10 { 0 } else { round % 3 };
        match (step, apart.take()) {
            // Apart at equal length: one entity loses `Pos`, another loses `Vel`.
            (1, _) => {
                let (a, b) = (live[round % live.len()], live[(round * 3 + 1) % live.len()]);
                if a != b {
                    let x = w.remove::<Pos>(a).unwrap().0;
                    let y = w.remove::<Vel>(b).unwrap().0;
                    apart = Some((a, x, b, y));
                }
            }
            // Back together (each appended at its pool's end).
            (2, Some((a, x, b, y))) => {
                w.insert(b, Vel(y, 1.0)).unwrap();
                w.insert(a, Pos(x, 0.0)).unwrap();
            }
            // The same despawns and spawns on both pools.
            (_, _) => {
                for k in 0..5 {
                    let e = live.swap_remove((round * 7 + k) % live.len());
                    w.despawn(e).unwrap();
                }
                let x = 1000.0 + round as f32;
                live.push(w.spawn((Pos(x, 0.0), Vel(x, 1.0))).unwrap());
            }
        }
        check(&mut w, &live, round);
    }
    w.assert_invariants();
}

fn single_terms_need_no_tuple(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 0.0), Vel(1.0, 0.0), Red)).unwrap();
    let b = w.spawn((Pos(2.0, 0.0),)).unwrap();
    w.query::<&mut Pos>().for_each(|_, p| p.1 += 1.0);
    w.query::<&mut Pos>().with::<Red>().for_each(|_, p| p.0 *= 10.0);
    assert_eq!(w.get::<Pos>(a), Some(&Pos(10.0, 1.0)));
    assert_eq!(w.get::<Pos>(b), Some(&Pos(2.0, 1.0)));
    let mut sum = 0.0;
    w.query_ref::<&Pos>().without::<Red>().for_each(|_, p| sum += p.0);
    assert_eq!(sum, 2.0);
    assert_eq!(w.query::<Option<&Vel>>().count(), 2);
    assert_eq!(w.query_ref::<Option<&Vel>>().count(), 2);
    let mut some = 0;
    w.query::<Option<&mut Vel>>().for_each(|_, v| some += v.is_some() as u32);
    assert_eq!(some, 1);
    let mut rows = 0;
    w.query::<&Pos>().for_each_run(|entities, positions| {
        assert_eq!(entities.len(), positions.len());
        rows += positions.len();
    });
    assert_eq!(rows, 2);
    // One and many entities, and the same answers as the 1-tuple.
    w.query_one_mut::<&mut Vel>(a).unwrap().0 = 5.0;
    assert_eq!(w.query_one::<&Vel>(a), Ok(&Vel(5.0, 0.0)));
    assert_eq!(w.query_one::<(&Vel,)>(a), Ok((&Vel(5.0, 0.0),)));
    assert_eq!(w.query_one::<&Vel>(b).err(), Some(QueryOneError::Unsatisfied(b)));
    let [pa, pb] = w.query::<&mut Pos>().get_many([a, b]).unwrap();
    std::mem::swap(pa, pb);
    assert_eq!(w.get::<Pos>(a), Some(&Pos(2.0, 1.0)));
    let refused = w.query::<&mut Pos>().filter::<With<Pos>>().try_for_each(|_, _| {});
    assert!(matches!(refused, Err(QueryError::Conflict { .. })));
    w.assert_invariants();
}

fn for_each_run_yields_what_for_each_yields(backend: Backend) {
    let mut w = world(backend);
    // Pools packed alike (position, velocity), teams in blocks of 10 (so filtered runs are longer than
    // a row), holes, and later a velocity pool out of step. Entity `i` holds x = i in both values.
    let mut all = Vec::new();
    for i in 0..300 {
        let x = i as f32;
        let e = match (i / 10) % 3 {
            0 => w.spawn((Pos(x, 0.0), Vel(x, 1.0), Red)),
            1 => w.spawn((Pos(x, 0.0), Vel(x, 2.0))),
            _ => w.spawn((Pos(x, 0.0), Vel(x, 3.0), Blue)),
        };
        all.push(e.unwrap());
    }
    for &e in all.iter().step_by(7) {
        w.despawn(e).unwrap();
    }
    type Row = (Entity, Pos, Vel);
    fn each<F: swarm::ecs::Filter>(w: &mut World) -> Vec<Row> {
        let mut out = Vec::new();
        w.query_filtered::<(&mut Pos, &Vel), F>().for_each(|e, (p, v)| {
            p.1 += 1.0;
            out.push((e, *p, *v));
        });
        out.sort_by_key(|r| r.0);
        out
    }
    fn runs<F: swarm::ecs::Filter>(w: &mut World) -> Vec<Row> {
        let mut out = Vec::new();
        w.query_filtered::<(&mut Pos, &Vel), F>().for_each_run(|entities, (ps, vs)| {
            assert!(!entities.is_empty(), "an empty run");
            assert_eq!((entities.len(), ps.len()), (vs.len(), vs.len()));
            for ((&e, p), v) in entities.iter().zip(ps.iter_mut()).zip(vs.iter()) {
                p.1 += 1.0;
                out.push((e, *p, *v));
            }
        });
        out.sort_by_key(|r| r.0);
        out
    }
    // Both passes add 1 to y, so the second sees the first's writes; every row carries its owner's x.
    fn same(a: &[Row], b: &[Row], all: &[Entity], what: &str) {
        assert!(!a.is_empty(), "{what}: nothing matched");
        assert_eq!(a.len(), b.len(), "{what}");
        for (x, y) in a.iter().zip(b) {
            let i = all.iter().position(|&e| e == x.0).unwrap() as f32;
            assert_eq!((x.0, x.1 .0, x.2 .0), (y.0, i, i), "{what}: a row went to another entity");
            assert_eq!((x.1 .1 + 1.0, x.2), (y.1 .1, y.2), "{what}");
        }
    }
    for round in ["packed alike", "velocity probed"] {
        same(&each::<()>(&mut w), &runs::<()>(&mut w), &all, round);
        same(&each::<With<Red>>(&mut w), &runs::<With<Red>>(&mut w), &all, round);
        // Two `Without` filters never drive: the packed arrays are walked in runs between blues and reds.
        type Neither = (Without<Red>, Without<Blue>);
        let (by_entity, neither) = (each::<Neither>(&mut w), runs::<Neither>(&mut w));
        same(&by_entity, &neither, &all, round);
        assert!(neither.iter().all(|r| r.2 .1 == 2.0 && !w.has::<Red>(r.0) && !w.has::<Blue>(r.0)));
        let (reds, blues) = (runs::<With<Red>>(&mut w).len(), runs::<With<Blue>>(&mut w).len());
        assert_eq!(reds + blues + neither.len(), runs::<()>(&mut w).len(), "{round}");
        // Out of step: velocities re-inserted in another order, so the velocity pool is probed.
        for &e in all.iter().rev().step_by(2) {
            if let Ok(v) = w.remove::<Vel>(e) {
                w.insert(e, v).unwrap();
            }
        }
    }
    w.assert_invariants();
}

fn queries_up_to_six_terms_yield_entities(backend: Backend) {
    let mut w = world(backend);
    let e = w.spawn((1u8, 2u16, 3u32, 4u64, 5i8, 6i16)).unwrap();
    w.spawn((1u8, 2u16)).unwrap();
    let mut seen = Vec::new();
    w.query::<(&u8, &mut u16, &u32, &u64, &i8, &mut i16)>().for_each(|entity, (a, b, c, d, x, y)| {
        *b += 1;
        *y += 1;
        seen.push((entity, *a as i64 + *b as i64 + *c as i64 + *d as i64 + *x as i64 + *y as i64));
    });
    assert_eq!(seen, vec![(e, 23)]);
    assert_eq!(w.query::<(&u16,)>().count(), 2);
}

fn optional_terms_fetch_when_present_and_never_restrict(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Pos(1.0, 0.0), Vel(10.0, 0.0))).unwrap();
    let b = w.spawn((Pos(2.0, 0.0),)).unwrap();
    let c = w.spawn((Vel(30.0, 0.0), Red)).unwrap();
    let d = w.spawn((Pos(4.0, 0.0), Vel(40.0, 0.0), Red)).unwrap();
    let mut seen = Vec::new();
    w.query::<(&Pos, Option<&Vel>)>().for_each(|e, (p, v)| seen.push((e, p.0, v.map(|v| v.0))));
    seen.sort_by_key(|row| row.0);
    assert_eq!(seen, vec![(a, 1.0, Some(10.0)), (b, 2.0, None), (d, 4.0, Some(40.0))]);
    // Mutable and optional: only the entities that have it are written.
    w.query::<(Option<&mut Vel>, &Pos)>().for_each(|_, (v, p)| {
        if let Some(v) = v {
            v.1 = p.0;
        }
    });
    assert_eq!(w.get::<Vel>(a), Some(&Vel(10.0, 1.0)));
    assert_eq!(w.get::<Vel>(c), Some(&Vel(30.0, 0.0)), "c has no Pos: not visited");
    assert_eq!(w.get::<Vel>(d), Some(&Vel(40.0, 4.0)));
    // Only optional terms: every live entity, or those the filters allow.
    let mut all = Vec::new();
    w.query::<(Option<&Pos>,)>().for_each(|e, (p,)| all.push((e, p.is_some())));
    assert_eq!(sorted(all.iter().map(|r| r.0).collect()), sorted(vec![a, b, c, d]));
    assert_eq!(all.iter().filter(|r| r.1).count(), 3);
    assert_eq!(w.query::<(Option<&Pos>,)>().without::<Red>().count(), 2);
    assert_eq!(w.query::<(Option<&Pos>, Option<&Vel>)>().with::<Red>().count(), 2);
    // Runs hand over the same rows as `for_each`, with the optional column absent where it is.
    let mut rows = Vec::new();
    w.query::<(&Vel, Option<&Pos>)>().for_each_run(|entities, (vels, poss)| {
        for (k, &e) in entities.iter().enumerate() {
            rows.push((e, vels[k].0, poss.as_ref().map(|p| p[k].0)));
        }
    });
    rows.sort_by_key(|row| row.0);
    assert_eq!(rows, vec![(a, 10.0, Some(1.0)), (c, 30.0, None), (d, 40.0, Some(4.0))]);
    // Naming a type twice is still refused, optional or not.
    let err = w.query::<(&mut Pos, Option<&Pos>)>().try_for_each(|_, _| {}).unwrap_err();
    assert!(matches!(err, QueryError::Conflict { mutable: true, .. }), "{err}");
    w.assert_invariants();
}

fn shared_queries_read_what_mutable_ones_read(backend: Backend) {
    #[derive(Debug)]
    struct Never;
    let mut w = world(backend);
    let mut all = Vec::new();
    for i in 0..60 {
        let e = match i % 3 {
            0 => w.spawn((Pos(i as f32, 0.0), Vel(1.0, i as f32))).unwrap(),
            1 => w.spawn((Pos(i as f32, 1.0), Red)).unwrap(),
            _ => w.spawn((Vel(2.0, i as f32), Red)).unwrap(),
        };
        all.push(e);
    }
    for &e in all.iter().step_by(7) {
        w.despawn(e).unwrap();
    }
    fn rows(w: &World) -> Vec<(Entity, f32, Option<f32>)> {
        let mut out = Vec::new();
        w.query_ref::<(&Pos, Option<&Vel>)>().for_each(|e, (p, v)| out.push((e, p.0, v.map(|v| v.1))));
        out.sort_by_key(|r| r.0);
        out
    }
    let mut expected = Vec::new();
    w.query::<(&Pos, Option<&Vel>)>().for_each(|e, (p, v)| expected.push((e, p.0, v.map(|v| v.1))));
    expected.sort_by_key(|r| r.0);
    let red_vel = w.query::<(&Vel,)>().with::<Red>().count();
    let shared: &World = &w;
    assert_eq!(rows(shared), expected);
    assert_eq!(shared.query_ref::<(&Vel,)>().with::<Red>().count(), red_vel);
    assert_eq!(shared.query_ref::<(&Pos,)>().without::<Red>().count(), 17);
    // Types the world never met: nothing has them, nothing is excluded by them, they read as None.
    assert_eq!(shared.query_ref::<(&Never,)>().count(), 0);
    assert_eq!(shared.query_ref::<(&Pos,)>().with::<Never>().count(), 0);
    assert_eq!(shared.query_ref::<(&Pos,)>().without::<Never>().count(), expected.len());
    let mut nones = 0;
    shared.query_ref::<(&Pos, Option<&Never>)>().for_each(|_, (_, n)| nones += n.is_none() as usize);
    assert_eq!(nones, expected.len());
    let err = shared.query_ref::<(&Pos, Option<&Pos>)>().try_for_each(|_, _| {}).unwrap_err();
    assert!(matches!(err, QueryError::Conflict { mutable: false, .. }), "{err}");
    let err = shared.query_ref::<(&Never, &Never)>().try_for_each(|_, _| {}).unwrap_err();
    assert!(matches!(err, QueryError::Conflict { .. }), "an unknown type named twice: {err}");
}

fn aliasing_queries_are_refused(backend: Backend) {
    let mut w = world(backend);
    w.spawn((Pos(0.0, 0.0),)).unwrap();
    let err = w.query::<(&mut Pos, &Pos)>().try_for_each(|_, _| {}).unwrap_err();
    assert!(matches!(err, QueryError::Conflict { mutable: true, .. }));
    let message = err.to_string();
    assert!(message.contains("Pos") && message.contains("&mut"), "{message}");
    assert!(w.query::<(&Pos,)>().with::<Pos>().try_for_each(|_, _| {}).is_err());
    // The world is intact after a refused query.
    assert_eq!(w.query::<(&Pos,)>().count(), 1);
    w.assert_invariants();
}

fn aliasing_for_each_panics_with_a_clear_message(backend: Backend) {
    let mut w = world(backend);
    w.query::<(&Pos, &mut Pos)>().for_each(|_, _| {});
}

fn nested_and_optional_groups_match_like_their_flat_forms(backend: Backend) {
    // `(&A, (&B, &C))` is the flat `(&A, &B, &C)` with its item nested; `Option<(&B, &C)>` is `Some` exactly where
    // both are present, and restricts nothing. Through a mutable and a shared world, by loop, run and lookup.
    let mut w = world(backend);
    let mut expect = Vec::new();
    for i in 0..60 {
        let e = w.spawn((Pos(i as f32, 0.0),)).unwrap();
        if i % 2 == 0 {
            w.insert(e, Vel(1.0, i as f32)).unwrap();
        }
        if i % 3 == 0 {
            w.insert(e, Red).unwrap();
        }
        // Some values churn, so pools differ in order and tables in membership.
        if i % 7 == 0 {
            w.remove::<Pos>(e).unwrap();
            w.insert(e, Pos(i as f32, 0.0)).unwrap();
        }
        expect.push((e, i, i % 6 == 0));
    }
    let both = |world: &World| {
        let mut seen = Vec::new();
        world.query_ref::<(&Pos, Option<(&Vel, &Red)>)>().for_each(|e, (p, group)| {
            if let Some((v, _)) = group {
                assert_eq!(v.1, p.0, "the group's values are the entity's own");
            }
            seen.push((e, p.0 as i32, group.is_some()));
        });
        seen.sort_by_key(|&(e, ..)| e);
        seen
    };
    let mut want: Vec<_> = expect.iter().map(|&(e, i, some)| (e, i, some)).collect();
    want.sort_by_key(|&(e, ..)| e);
    assert_eq!(both(&w), want, "shared, optional group");

    // Mutable, nested tuple: only entities with all three, written through the inner tuple.
    let mut n = 0;
    w.query::<(&Pos, (&mut Vel, &Red))>().for_each(|_, (p, (v, _))| {
        v.0 += p.0;
        n += 1;
    });
    assert_eq!(n, 10, "0, 6, 12, ... 54");
    let mut runs = 0;
    w.query::<(&Pos, (&Vel, &Red))>().for_each_run(|entities, (positions, (velocities, reds))| {
        assert_eq!((positions.len(), velocities.len(), reds.len()), (entities.len(), entities.len(), entities.len()));
        runs += entities.len();
    });
    assert_eq!(runs, 10);
    for &(e, i, some) in &expect {
        let got = w.query::<(&Pos, Option<(&mut Vel, &Red)>)>().get(e).map(|(_, g)| g.map(|(v, _)| v.0));
        let want = if some { Some(1.0 + i as f32) } else { None };
        assert_eq!(got, Ok(want), "entity {i}");
        assert_eq!(w.query_ref::<Option<(&Vel, &Red)>>().get(e).map(|g| g.is_some()), Ok(some));
    }
    let [a, b] = [expect[0].0, expect[1].0];
    let [(_, ga), (_, gb)] = w.query::<(&Pos, Option<(&mut Vel, &Red)>)>().get_many([a, b]).unwrap();
    assert!(ga.is_some() && gb.is_none());
    // A group of a type the world never met reads `None` through a shared world, and restricts nothing.
    struct Never;
    assert_eq!(w.query_ref::<(&Pos, Option<(&Vel, &Never)>)>().count(), 60);
    assert_eq!(w.query::<(&Pos, Option<(&Vel, &Never)>)>().count(), 60);
    w.assert_invariants();
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        a_query_shape_run_again_sees_what_changed_since,
        queries_pair_values_right_while_pools_change_between_them,
        single_terms_need_no_tuple,
        for_each_run_yields_what_for_each_yields,
        queries_up_to_six_terms_yield_entities,
        optional_terms_fetch_when_present_and_never_restrict,
        shared_queries_read_what_mutable_ones_read,
        aliasing_queries_are_refused,
        nested_and_optional_groups_match_like_their_flat_forms,
    }

    panics_on_every_backend! {
        aliasing_for_each_panics_with_a_clear_message => "may not alias",
    }
}
