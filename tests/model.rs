//! Model tests (slotmap style): seeded random operations on a world and on a plain `HashMap`, compared after every
//! step, with stale handles kept around and reused as targets. Run on every backend, and once switching backends
//! mid-run. Commands are recorded both between queries and inside query loops (applied in handle order).

mod backends;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::HashMap;
use swarm::ecs::{Backend, ComponentError, Entity, World};

#[derive(Debug, Clone, Copy, PartialEq)]
struct A(u32);
#[derive(Debug, Clone, PartialEq)]
struct B(String);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tag;

#[derive(Debug, Clone, Default, PartialEq)]
struct Row {
    a: Option<A>,
    b: Option<B>,
    tag: bool,
}

/// A command recorded in a loop, as the model applies it.
enum Cmd {
    Despawn(Entity),
    /// A spawn of `(A(v), Tag)` with `B("kid")` inserted on it.
    Kid(u32),
    Tag(Entity),
    RemoveB(Entity),
    SetA(Entity, A),
}

const STEPS: usize = 100_000;
const CAPACITY: u32 = 200;

fn check_entity(world: &World, model: &HashMap<Entity, Row>, e: Entity) {
    match model.get(&e) {
        Some(row) => {
            assert!(world.is_alive(e), "{e:?} should be alive");
            assert_eq!(world.get::<A>(e), row.a.as_ref(), "A of {e:?}");
            assert_eq!(world.get::<B>(e), row.b.as_ref(), "B of {e:?}");
            assert_eq!(world.has::<Tag>(e), row.tag, "Tag of {e:?}");
        }
        None => {
            assert!(!world.is_alive(e), "{e:?} should be dead");
            assert!(world.get::<A>(e).is_none() && world.get::<B>(e).is_none() && !world.has::<Tag>(e));
        }
    }
}

fn run_model(seed: u64, start: Backend, switch_every: Option<usize>) {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut world = World::with_capacity(CAPACITY);
    world.set_backend(start);
    let mut model: HashMap<Entity, Row> = HashMap::new();
    let mut handles: Vec<Entity> = Vec::new(); // every handle ever seen, stale ones included
    let mut switches = 0;
    for step in 0..STEPS {
        if let Some(k) = switch_every {
            if step % k == k - 1 {
                let to = Backend::ALL[rng.gen_range(0..Backend::ALL.len())];
                world.set_backend(to);
                switches += 1;
            }
        }
        let target = if handles.is_empty() { None } else { Some(handles[rng.gen_range(0..handles.len())]) };
        match (rng.gen_range(0..12), target) {
            (0..=2, _) | (_, None) => {
                let row = Row {
                    a: rng.gen_bool(0.7).then(|| A(rng.gen())),
                    b: rng.gen_bool(0.5).then(|| B(rng.gen::<u16>().to_string())),
                    tag: rng.gen_bool(0.3),
                };
                let spawned = match (&row.a, &row.b, row.tag) {
                    (Some(a), Some(b), true) => world.spawn((*a, b.clone(), Tag)),
                    (Some(a), Some(b), false) => world.spawn((*a, b.clone())),
                    (Some(a), None, true) => world.spawn((*a, Tag)),
                    (Some(a), None, false) => world.spawn((*a,)),
                    (None, Some(b), true) => world.spawn((b.clone(), Tag)),
                    (None, Some(b), false) => world.spawn((b.clone(),)),
                    (None, None, true) => world.spawn((Tag,)),
                    (None, None, false) => world.spawn(((),)).inspect(|&e| {
                        world.remove::<()>(e).unwrap();
                    }),
                };
                match spawned {
                    Ok(e) => {
                        assert!(!model.contains_key(&e), "a live handle was handed out twice");
                        model.insert(e, row);
                        handles.push(e);
                    }
                    Err(full) => {
                        assert_eq!(model.len() as u32, full.capacity, "refused below capacity")
                    }
                }
            }
            (3, Some(e)) => {
                let expected = model.remove(&e).is_some();
                assert_eq!(world.despawn(e).is_ok(), expected, "despawn {e:?}");
            }
            (4, Some(e)) => {
                let v = A(rng.gen());
                // Half the time through a view: it must answer exactly as the world does.
                let result = if rng.gen_bool(0.5) {
                    world.insert(e, v).map_err(ComponentError::from)
                } else {
                    world.view_mut::<A>().insert(e, v)
                };
                match model.get_mut(&e) {
                    Some(row) => assert_eq!(result, Ok(row.a.replace(v))),
                    None => assert!(result.is_err()),
                }
            }
            (5, Some(e)) => {
                let result = world.insert(e, Tag);
                match model.get_mut(&e) {
                    Some(row) => assert_eq!(result.unwrap().is_some(), std::mem::replace(&mut row.tag, true)),
                    None => assert!(result.is_err()),
                }
            }
            (6, Some(e)) => {
                let result = if rng.gen_bool(0.5) { world.remove::<A>(e) } else { world.view_mut::<A>().remove(e) };
                match model.get_mut(&e) {
                    Some(row) => match row.a.take() {
                        Some(a) => assert_eq!(result, Ok(a)),
                        None => assert!(matches!(result, Err(ComponentError::MissingComponent { .. }))),
                    },
                    None => assert_eq!(result, Err(ComponentError::NoSuchEntity(e))),
                }
            }
            (7, Some(e)) => {
                let result = world.remove::<B>(e).ok();
                let expected = model.get_mut(&e).and_then(|row| row.b.take());
                assert_eq!(result, expected);
                if let Some(row) = model.get_mut(&e) {
                    if rng.gen_bool(0.5) {
                        let tagged = std::mem::replace(&mut row.tag, false);
                        assert_eq!(world.remove::<Tag>(e).is_ok(), tagged);
                    }
                }
            }
            (8, Some(e)) => {
                if let Some(a) = world.get_mut::<A>(e) {
                    a.0 = a.0.wrapping_add(1);
                    model.get_mut(&e).unwrap().a.as_mut().unwrap().0 = a.0;
                }
            }
            (9, Some(victim)) => {
                // Commands recorded while iterating: applied in handle order, whatever order the rows came in.
                let mut recorded: Vec<(Entity, Vec<Cmd>)> = Vec::new();
                world.query::<(&A,)>().for_each_with_commands(|e, (a,), c| {
                    let mut ops = Vec::new();
                    match a.0 % 6 {
                        0 => {
                            c.despawn(e);
                            let kid = c.spawn((A(a.0 ^ 0x55), Tag)).unwrap();
                            assert!(kid.is_deferred());
                            c.insert(kid, B("kid".into()));
                            ops.extend([Cmd::Despawn(e), Cmd::Kid(a.0 ^ 0x55)]);
                        }
                        1 => {
                            c.insert(e, Tag);
                            ops.push(Cmd::Tag(e));
                        }
                        2 => {
                            c.remove::<B>(e);
                            c.despawn(victim); // maybe stale, maybe visited later (then its commands skip)
                            ops.extend([Cmd::RemoveB(e), Cmd::Despawn(victim)]);
                        }
                        3 => {
                            c.insert(e, A(a.0.wrapping_add(6)));
                            ops.push(Cmd::SetA(e, A(a.0.wrapping_add(6))));
                        }
                        4 => {
                            c.despawn(e);
                            c.despawn(e);
                            ops.extend([Cmd::Despawn(e), Cmd::Despawn(e)]);
                        }
                        _ => {}
                    }
                    recorded.push((e, ops));
                });
                let mut visited: Vec<Entity> = recorded.iter().map(|(e, _)| *e).collect();
                visited.sort();
                let mut expected: Vec<Entity> = model.iter().filter(|(_, r)| r.a.is_some()).map(|(e, _)| *e).collect();
                expected.sort();
                assert_eq!(visited, expected, "rows visited at step {step}");
                // The model applies the same commands in handle order.
                recorded.sort_by_key(|(e, _)| *e);
                let (mut applied, mut skipped, mut refused) = (0, 0, 0);
                let mut kids = Vec::new();
                for cmd in recorded.into_iter().flat_map(|(_, ops)| ops) {
                    let done = match cmd {
                        Cmd::Despawn(x) => model.remove(&x).is_some(),
                        Cmd::Kid(v) => {
                            if model.len() + kids.len() < CAPACITY as usize {
                                kids.push(v);
                                applied += 1; // the spawn; then the insert of B below
                                true
                            } else {
                                refused += 1;
                                false // the insert of B on the refused spawn is skipped
                            }
                        }
                        Cmd::Tag(x) => model.get_mut(&x).map(|r| r.tag = true).is_some(),
                        Cmd::RemoveB(x) => model.get_mut(&x).is_some_and(|r| r.b.take().is_some()),
                        Cmd::SetA(x, v) => model.get_mut(&x).map(|r| r.a = Some(v)).is_some(),
                    };
                    if done {
                        applied += 1;
                    } else {
                        skipped += 1;
                    }
                }
                let stats = world.apply_commands();
                assert_eq!((stats.applied, stats.skipped, stats.refused), (applied, skipped, refused), "step {step}");
                let mut born: Vec<Entity> = world.entities().iter().filter(|e| !model.contains_key(e)).collect();
                born.sort();
                let mut values: Vec<u32> = born.iter().map(|&e| world.get::<A>(e).unwrap().0).collect();
                values.sort();
                kids.sort();
                assert_eq!(values, kids, "spawned in the loop at step {step}");
                for e in born {
                    model.insert(e, Row { a: Some(*world.get::<A>(e).unwrap()), b: Some(B("kid".into())), tag: true });
                    handles.push(e);
                }
            }
            (10, Some(e)) => {
                // Through the command buffer: set A on the target, despawn another handle (maybe stale), spawn one.
                let other = handles[rng.gen_range(0..handles.len())];
                let v = A(rng.gen());
                let mut commands = world.commands();
                commands.insert(e, v);
                commands.despawn(other);
                let spawned = commands.spawn((A(7), Tag));
                let stats = world.apply_commands();
                let mut expected_skips = 0;
                match model.get_mut(&e) {
                    Some(row) => row.a = Some(v),
                    None => expected_skips += 1,
                }
                if model.remove(&other).is_none() {
                    expected_skips += 1;
                }
                match spawned {
                    Ok(new) => {
                        model.insert(new, Row { a: Some(A(7)), b: None, tag: true });
                        handles.push(new);
                    }
                    Err(_) => assert!(model.len() as u32 >= CAPACITY - 1, "spawn refused below capacity"),
                }
                assert_eq!(stats.skipped, expected_skips, "skipped commands at step {step}");
            }
            (11, Some(_)) => {
                // A filtered query: tagged entities with A; compare the sets.
                let mut seen = Vec::new();
                world.query::<(&A,)>().with::<Tag>().for_each(|e, (a,)| seen.push((e, *a)));
                seen.sort_by_key(|(e, _)| *e);
                let mut expected: Vec<(Entity, A)> =
                    model.iter().filter(|(_, r)| r.tag).filter_map(|(e, r)| r.a.map(|a| (*e, a))).collect();
                expected.sort_by_key(|(e, _)| *e);
                assert_eq!(seen, expected, "filtered query at step {step}");
            }
            (_, Some(_)) => {
                // Query: every entity with A and B, not tagged, bumps its A; compare the sets.
                let mut seen = Vec::new();
                world.query::<(&mut A, &B)>().without::<Tag>().for_each(|e, (a, _)| {
                    a.0 = a.0.wrapping_mul(3);
                    seen.push(e);
                });
                seen.sort();
                let mut expected: Vec<Entity> =
                    model.iter().filter(|(_, r)| r.a.is_some() && r.b.is_some() && !r.tag).map(|(e, _)| *e).collect();
                expected.sort();
                assert_eq!(seen, expected, "query set at step {step}");
                for e in &expected {
                    let a = model.get_mut(e).unwrap().a.as_mut().unwrap();
                    a.0 = a.0.wrapping_mul(3);
                }
            }
        }
        // After every step: the touched handle, the size, and a sample of the others.
        if let Some(e) = target {
            check_entity(&world, &model, e);
        }
        assert_eq!(world.len() as usize, model.len(), "live count at step {step}");
        for _ in 0..4 {
            if !handles.is_empty() {
                check_entity(&world, &model, handles[rng.gen_range(0..handles.len())]);
            }
        }
        if step % 500 == 0 {
            world.assert_invariants();
            for e in &handles {
                check_entity(&world, &model, *e);
            }
        }
        if handles.len() > 4 * CAPACITY as usize {
            // Keep the stale set bounded but nonempty: forget some dead handles.
            handles.retain(|e| model.contains_key(e) || e.index() % 2 == 0);
        }
    }
    world.assert_invariants();
    for e in &handles {
        check_entity(&world, &model, *e);
    }
    if switch_every.is_some() {
        assert!(switches > 10);
    }
}

/// Each backend with a seed of its own (its place in `Backend::ALL`, from 1).
#[test]
fn model_on_every_backend() {
    backends::each(|backend| {
        let place = Backend::ALL.iter().position(|&b| b == backend).unwrap();
        run_model(place as u64 + 1, backend, None);
    });
}

#[test]
fn model_switching_backends_mid_run() {
    run_model(6, Backend::SparseSet, Some(997));
}

/// Every order of all the backends, with a model following along.
#[test]
fn switch_through_all_orders() {
    let mut world = World::with_capacity(64);
    let mut model: HashMap<Entity, Row> = HashMap::new();
    let mut stale = Vec::new();
    for i in 0..40u32 {
        let e = world.spawn((A(i), B(i.to_string()))).unwrap();
        if i % 3 == 0 {
            world.insert(e, Tag).unwrap();
        }
        model.insert(e, Row { a: Some(A(i)), b: Some(B(i.to_string())), tag: i % 3 == 0 });
    }
    for e in model.keys().copied().filter(|e| e.index() % 5 == 0).collect::<Vec<_>>() {
        world.despawn(e).unwrap();
        model.remove(&e);
        stale.push(e);
    }
    let mut order = Backend::ALL;
    let mut count = 0;
    permute(&mut order, 0, &mut |order| {
        for &b in order {
            world.set_backend(b);
            world.assert_invariants();
        }
        for (e, _) in model.iter() {
            check_entity(&world, &model, *e);
        }
        for e in &stale {
            check_entity(&world, &model, *e);
        }
        count += 1;
    });
    assert_eq!(count, (1..=Backend::ALL.len()).product::<usize>(), "every order once");
}

fn permute(items: &mut [Backend], k: usize, f: &mut impl FnMut(&[Backend])) {
    if k == items.len() {
        f(items);
        return;
    }
    for i in k..items.len() {
        items.swap(k, i);
        permute(items, k + 1, f);
        items.swap(k, i);
    }
}

/// Components that carry their own entity, so a query can tell when it hands an entity another's value.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OwnA(Entity);
#[derive(Debug, Clone, Copy, PartialEq)]
struct OwnB(Entity);
#[derive(Debug, Clone, Copy, PartialEq)]
struct OwnC(Entity);
/// A placeholder, replaced right after the spawn.
const NOBODY: Entity = Entity::from_parts(u32::MAX, std::num::NonZeroU32::MIN);

/// Sparse-set pools found packed alike are walked in lock-step, and their order journals keep that verdict
/// across changes. Seeded random spawns (one and batched), despawns (one and batched), removes (one and many),
/// inserts, `sort_as`, swaps and backend round trips; after every step, queries over several pool combinations
/// must hand each entity its own values, and exactly the entities that have them all.
#[test]
fn lock_step_queries_never_hand_an_entity_anothers_value() {
    for seed in 0..100u64 {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut w = World::with_capacity(5_000);
        let mut live: Vec<Entity> = Vec::new();
        let mut spawned = Vec::new();
        for step in 0..500 {
            let pick =
                |rng: &mut Pcg64Mcg, live: &[Entity]| (!live.is_empty()).then(|| live[rng.gen_range(0..live.len())]);
            match rng.gen_range(0..14) {
                0 | 1 => {
                    let e = w.spawn((OwnA(NOBODY), OwnB(NOBODY))).unwrap();
                    w.insert(e, OwnA(e)).unwrap();
                    w.insert(e, OwnB(e)).unwrap();
                    if rng.gen_bool(0.5) {
                        w.insert(e, OwnC(e)).unwrap();
                    }
                    live.push(e);
                }
                2 => {
                    let n = rng.gen_range(0..30);
                    let bundle = (OwnA(NOBODY), OwnB(NOBODY), OwnC(NOBODY));
                    spawned.clear();
                    w.spawn_batch_into((0..n).map(|_| bundle), &mut spawned).unwrap();
                    for &e in &spawned {
                        w.insert(e, OwnA(e)).unwrap();
                        w.insert(e, OwnB(e)).unwrap();
                        w.insert(e, OwnC(e)).unwrap();
                        live.push(e);
                    }
                }
                3 | 4 => {
                    if !live.is_empty() {
                        let e = live.swap_remove(rng.gen_range(0..live.len()));
                        w.despawn(e).unwrap();
                    }
                }
                5 => {
                    let n = rng.gen_range(0..20).min(live.len());
                    let dead: Vec<Entity> = (0..n).map(|_| live.swap_remove(rng.gen_range(0..live.len()))).collect();
                    w.despawn_batch(&dead);
                }
                6 => {
                    if let Some(e) = pick(&mut rng, &live) {
                        let _ = w.remove::<OwnA>(e);
                    }
                }
                7 => {
                    if let Some(e) = pick(&mut rng, &live) {
                        let _ = w.remove::<OwnB>(e);
                    }
                }
                8 => {
                    if let Some(e) = pick(&mut rng, &live) {
                        w.insert(e, OwnA(e)).unwrap();
                        w.insert(e, OwnB(e)).unwrap();
                    }
                }
                9 => {
                    let n = rng.gen_range(0..60).min(live.len());
                    let targets: Vec<Entity> = (0..n).map(|_| live[rng.gen_range(0..live.len())]).collect();
                    if rng.gen_bool(0.5) {
                        w.remove_many::<OwnA>(&targets);
                    } else {
                        w.remove_many::<OwnB>(&targets);
                    }
                }
                10 => {
                    if let Some(order) = w.sparse_set::<OwnA>().map(|s| s.entities().to_vec()) {
                        if let Some(pool) = w.sparse_set_mut::<OwnB>() {
                            pool.sort_as(&order);
                        }
                    }
                }
                11 => {
                    if let Some(pool) = w.sparse_set_mut::<OwnB>() {
                        if pool.len() > 1 {
                            let (a, b) = (rng.gen_range(0..pool.len()), rng.gen_range(0..pool.len()));
                            pool.swap_positions(a, b);
                        }
                    }
                }
                12 => {
                    if rng.gen_range(0..10) == 0 {
                        w.set_backend(Backend::ALL[rng.gen_range(1..Backend::ALL.len())]);
                        w.set_backend(Backend::SparseSet);
                    }
                }
                _ => {
                    if let Some(e) = pick(&mut rng, &live) {
                        w.insert(e, OwnC(e)).unwrap();
                    }
                }
            }
            let mut seen = 0;
            w.query::<(&OwnA, &OwnB)>().for_each(|e, (a, b)| {
                assert_eq!((a.0, b.0), (e, e), "seed {seed} step {step}");
                seen += 1;
            });
            let expected = live.iter().filter(|&&e| w.has::<OwnA>(e) && w.has::<OwnB>(e)).count();
            assert_eq!(seen, expected, "seed {seed} step {step}");
            w.query::<(&OwnB, &mut OwnA)>()
                .for_each(|e, (b, a)| assert_eq!((a.0, b.0), (e, e), "seed {seed} step {step}"));
            w.query::<(&OwnA, &OwnB, &OwnC)>()
                .for_each(|e, (a, b, c)| assert_eq!((a.0, b.0, c.0), (e, e, e), "seed {seed} step {step}"));
            w.query::<(&OwnC, &OwnB)>().for_each(|e, (c, b)| assert_eq!((c.0, b.0), (e, e), "seed {seed} step {step}"));
        }
        w.assert_invariants();
    }
}
