//! The mutation pipeline: the hierarchy's types cannot be written from outside, a panic in a hook or a `drop`
//! leaves the tree whole, handlers that despawn end a chain quietly, a watched type's view runs its hooks, and a
//! despawn of many children keeps the list right.

use crate::{world, Pos, Vel};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use swarm::ecs::{Backend, Children, Entity, EntityBuilder, HierarchyError, Parent, QueryError, QueryOneError, World};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Tag(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Hp(i32);

/// A value whose `drop` panics when armed.
struct Bomb(bool);
impl Drop for Bomb {
    fn drop(&mut self) {
        if self.0 && !std::thread::panicking() {
            panic!("a bomb went off");
        }
    }
}

/// A `Parent` value, taken from a child made for it (it becomes a root).
fn parent_value(w: &mut World, p: Entity) -> Parent {
    let c = w.spawn(()).unwrap();
    w.add_child(p, c).unwrap();
    w.remove::<Parent>(c).unwrap()
}

/// `f` panics with a message naming the hierarchy's rule.
fn refused(w: &mut World, what: &str, f: impl FnOnce(&mut World)) {
    let panic = catch_unwind(AssertUnwindSafe(|| f(w))).expect_err(what);
    let message =
        panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
    assert!(message.unwrap_or_default().contains("kept by the hierarchy"), "{what}");
}

fn the_tree_types_cannot_be_put_from_outside_regression(backend: Backend) {
    let mut w = world(backend);
    let p = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let b = w.spawn((Pos(1.0, 0.0),)).unwrap();
    w.add_child(p, b).unwrap();
    let values: Vec<Parent> = (0..10).map(|_| parent_value(&mut w, p)).collect();
    let mut values = values.into_iter();
    let (live, listed) = (w.len(), w.children(p).to_vec());
    refused(&mut w, "spawn", |w| {
        let _ = w.spawn((Vel(1.0, 1.0), values.next().unwrap()));
    });
    refused(&mut w, "spawn_batch", |w| {
        let _ = w.spawn_batch(vec![(Vel(1.0, 1.0), values.next().unwrap())]);
    });
    refused(&mut w, "spawn_at", |w| {
        let _ = w.spawn_at(b, (values.next().unwrap(),));
    });
    refused(&mut w, "insert_bundle", |w| {
        let _ = w.insert_bundle(b, (Vel(1.0, 1.0), values.next().unwrap()));
    });
    refused(&mut w, "insert", |w| {
        let _ = w.insert(b, values.next().unwrap());
    });
    refused(&mut w, "a builder", |_| {
        let _ = EntityBuilder::new().add(values.next().unwrap());
    });
    refused(&mut w, "entity_mut", |w| {
        let _ = w.entity_mut(b).unwrap().insert(values.next().unwrap());
    });
    refused(&mut w, "insert_many", |w| {
        let _ = w.insert_many([(b, values.next().unwrap())]);
    });
    // Commands refuse at record time: what was recorded before stays and applies.
    w.commands().insert(b, Vel(2.0, 2.0));
    refused(&mut w, "Commands::spawn", |w| {
        let _ = w.commands().spawn((Tag(1), values.next().unwrap()));
    });
    refused(&mut w, "Commands::insert_bundle", |w| w.commands().insert_bundle(b, (Tag(1), values.next().unwrap())));
    let stats = w.apply_commands();
    assert_eq!((stats.applied, stats.skipped), (1, 0), "only the command recorded before the refusals");
    assert_eq!(w.get::<Vel>(b), Some(&Vel(2.0, 2.0)));
    assert_eq!(w.count_of::<Tag>(), 0);
    assert_eq!((w.len(), w.children(p)), (live, &listed[..]), "nothing changed");
    w.assert_invariants();
    // And the tree still works: a batch despawn of everything.
    let mut all = Vec::new();
    w.query_ref::<()>().for_each(|e, _| all.push(e));
    all.sort();
    assert_eq!(w.despawn_batch(&all), all.len() - 1, "b goes with its parent p");
    assert!(w.is_empty());
    w.assert_invariants();
}

fn the_tree_types_cannot_be_written_through_mut_regression(backend: Backend) {
    let mut w = world(backend);
    let [p, q, a, b] = [(); 4].map(|_| w.spawn(()).unwrap());
    w.add_child(p, a).unwrap();
    w.add_child(q, b).unwrap();
    // Swapping two lists would make `p` its own child.
    let swap = w.get_many_mut::<Children, 2>([p, q]).map(|_| ());
    assert_eq!(swap, Err(QueryOneError::Refused(QueryError::Kept { component: std::any::type_name::<Children>() })));
    assert!(matches!(w.query_one_mut::<&mut Parent>(a), Err(QueryOneError::Refused(QueryError::Kept { .. }))));
    assert!(w.query_access::<&mut Children, ()>().is_err());
    assert!(w.query_access::<(&Children, &Parent), ()>().is_ok(), "reading is fine");
    refused(&mut w, "get_mut", |w| {
        let _ = w.get_mut::<Children>(p);
    });
    refused(&mut w, "view_mut", |w| {
        let _ = w.view_mut::<Parent>();
    });
    refused(&mut w, "sparse_set_mut", |w| {
        let _ = w.sparse_set_mut::<Parent>();
    });
    refused(&mut w, "a handler", |w| {
        let _ = w.on_insert::<Parent>(|_, _, _, _| {});
    });
    w.assert_invariants();
    assert_eq!((w.children(p), w.children(q)), (&[a][..], &[b][..]));
    w.despawn(p).unwrap();
    assert!(!w.is_alive(a));
    w.add_child(q, p).unwrap_err(); // dead
    w.assert_invariants();
}

fn a_panicking_remove_handler_leaves_the_tree_whole_regression(backend: Backend) {
    let mut w = world(backend);
    let [p, c] = [(); 2].map(|_| w.spawn(()).unwrap());
    w.add_child(p, c).unwrap();
    w.insert(c, Tag(7)).unwrap();
    w.on_remove::<Tag>(|_, _, _, _| panic!("a handler panicked"));
    assert!(catch_unwind(AssertUnwindSafe(|| w.remove_bundle::<(Parent, Tag)>(c))).is_err());
    w.assert_invariants();
    assert_eq!((w.parent(c), w.children(p), w.get::<Tag>(c)), (Some(p), &[c][..], Some(&Tag(7))));
    assert!(catch_unwind(AssertUnwindSafe(|| w.remove_bundle::<(Tag, Parent)>(c))).is_err());
    w.assert_invariants();
    assert_eq!(w.parent(c), Some(p));
    // Without the panic the bundle comes off whole, and the link with it.
    let mut w2 = world(backend);
    let [p, c] = [(); 2].map(|_| w2.spawn(()).unwrap());
    w2.add_child(p, c).unwrap();
    w2.insert(c, Tag(1)).unwrap();
    let (parent, tag) = w2.remove_bundle::<(Parent, Tag)>(c).unwrap();
    assert_eq!((parent.get(), tag), (p, Tag(1)));
    assert!(w2.children(p).is_empty() && w2.parent(c).is_none());
    w2.assert_invariants();
}

fn a_panicking_drop_in_a_subtree_despawn_leaves_the_tree_whole_regression(backend: Backend) {
    for handler in [false, true] {
        let mut w = world(backend);
        let seen = Arc::new(AtomicUsize::new(0));
        if handler {
            let seen = seen.clone();
            w.on_despawn(move |_, _, _| {
                seen.fetch_add(1, Ordering::Relaxed);
            });
        }
        let [root, p] = [(); 2].map(|_| w.spawn(()).unwrap());
        let bomb = w.spawn((Bomb(true), Pos(1.0, 1.0))).unwrap();
        let [c2, c3] = [(); 2].map(|_| w.spawn((Pos(2.0, 2.0),)).unwrap());
        w.add_child(root, p).unwrap();
        for c in [bomb, c2, c3] {
            w.add_child(p, c).unwrap();
        }
        assert!(catch_unwind(AssertUnwindSafe(|| w.despawn(p))).is_err(), "handler: {handler}");
        w.assert_invariants();
        // The despawn of the bomb is whole: no value of it left, its handle dead.
        assert!(!w.is_alive(bomb) && w.count_of::<Bomb>() == 0, "handler: {handler}");
        for e in [p, c2, c3] {
            if let Some(parent) = w.parent(e) {
                assert!(w.is_alive(parent) && w.children(parent).contains(&e));
            }
        }
        assert!(w.is_alive(root));
        // What is left despawns cleanly.
        w.despawn(root).unwrap();
        assert!(w.is_empty(), "handler: {handler}");
        w.assert_invariants();
    }
}

fn a_handler_that_despawns_ends_a_chain_quietly_regression(backend: Backend) {
    let mut w = world(backend);
    w.on_insert::<Tag>(|_, e, _, commands| commands.despawn(e));
    let e = w.spawn(()).unwrap();
    let mut view = w.entity_mut(e).unwrap();
    view.insert(Tag(0)).insert(Hp(1)).insert_bundle((Pos(0.0, 0.0),));
    assert!(!view.is_alive());
    assert_eq!(view.replace(Hp(2)), None);
    view.despawn();
    assert!(!w.is_alive(e));
    assert_eq!((w.count_of::<Hp>(), w.count_of::<Pos>()), (0, 0));
    w.assert_invariants();
}

fn a_view_of_a_watched_type_runs_its_handlers(backend: Backend) {
    let mut w = world(backend);
    let fired = Arc::new(AtomicUsize::new(0));
    let (inserts, removes) = (fired.clone(), fired.clone());
    w.on_insert::<Hp>(move |_, _, hp, _| {
        inserts.fetch_add(hp.0 as usize, Ordering::Relaxed);
    });
    w.on_remove::<Hp>(move |_, _, hp, _| {
        removes.fetch_add(100 * hp.0 as usize, Ordering::Relaxed);
    });
    let [a, b] = [(); 2].map(|_| w.spawn(()).unwrap());
    let mut hp = w.view_mut::<Hp>();
    assert_eq!(hp.insert(a, Hp(1)), Ok(None));
    assert_eq!(hp.insert(a, Hp(2)), Ok(Some(Hp(1))));
    hp.insert(b, Hp(3)).unwrap();
    hp.get_mut(b).unwrap().0 = 4; // a write, not a change of structure
    assert_eq!(hp.remove(b), Ok(Hp(4)));
    assert!(hp.remove(b).is_err());
    assert_eq!(hp.get(a), Some(&Hp(2)));
    assert_eq!(fired.load(Ordering::Relaxed), 1 + 2 + 3 + 400);
}

fn despawning_many_children_of_one_parent_keeps_the_list_right(backend: Backend) {
    const N: usize = 2_000;
    for order in ["list", "reverse", "every other", "with the parent"] {
        let mut w = world(backend);
        let p = w.spawn(()).unwrap();
        let children: Vec<Entity> = (0..N).map(|i| w.spawn((Pos(i as f32, 0.0),)).unwrap()).collect();
        for &c in &children {
            w.add_child(p, c).unwrap();
        }
        let (targets, left): (Vec<Entity>, Vec<Entity>) = match order {
            "list" => (children.clone(), vec![]),
            "reverse" => (children.iter().rev().copied().collect(), vec![]),
            "every other" => {
                let (gone, left): (Vec<_>, Vec<_>) = children.iter().enumerate().partition(|(i, _)| i % 2 == 1);
                (gone.into_iter().map(|(_, &e)| e).collect(), left.into_iter().map(|(_, &e)| e).collect())
            }
            _ => (children.iter().copied().chain([p]).collect(), vec![]),
        };
        assert_eq!(w.despawn_batch(&targets), targets.len(), "{order}");
        assert_eq!(w.children(p), &left[..], "{order}: the children left keep their order");
        assert_eq!(w.is_alive(p), order != "with the parent");
        w.assert_invariants();
    }
    // A target inside an earlier target's subtree, or named twice, counts once.
    let mut w = world(backend);
    let [p, c, d] = [(); 3].map(|_| w.spawn(()).unwrap());
    w.add_child(p, c).unwrap();
    assert_eq!(w.despawn_batch(&[p, c, p, d, d]), 2);
    assert!(w.is_empty());
    let [p, c] = [(); 2].map(|_| w.spawn(()).unwrap());
    w.add_child(p, c).unwrap();
    assert_eq!(w.despawn_batch(&[c, p]), 2);
    w.assert_invariants();
}

fn handler_spawns_after_a_load_that_renumbers_types_regression(backend: Backend) {
    use swarm::ecs::{Format, SnapshotSchema};
    #[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
    struct B(u64);
    // The saved world numbers `B` before `Pos`; the live one `Pos` before `B`.
    let mut saved = world(backend);
    saved.spawn((B(1),)).unwrap();
    saved.spawn((Pos(2.0, 2.0),)).unwrap();
    let schema = SnapshotSchema::new().component::<B>("b").component::<Pos>("pos");
    let bytes = schema.save(&saved, Format::Binary).unwrap();
    let mut w = world(backend);
    w.on_insert::<Tag>(|_, _, _, commands| {
        commands.spawn((Pos(7.0, 7.0), B(8))).unwrap();
    });
    let e = w.spawn((Pos(0.0, 0.0), B(0))).unwrap();
    // Twice: the handlers' two buffers (a round and the next) each look the bundle's ids up.
    for k in 0..2 {
        w.insert(e, Tag(k)).unwrap();
        w.remove::<Tag>(e).unwrap();
    }
    schema.load_into(&mut w, &bytes, None).unwrap();
    let f = w.spawn(()).unwrap();
    for k in 0..2 {
        w.insert(f, Tag(k)).unwrap();
        w.remove::<Tag>(f).unwrap();
    }
    let mut rows = Vec::new();
    w.query_ref::<(&Pos, &B)>().for_each(|_, (p, b)| rows.push((*p, *b)));
    assert_eq!(rows, [(Pos(7.0, 7.0), B(8)); 2]);
    w.assert_invariants();
}

fn a_link_refuses_a_parent_its_settle_despawned_regression(backend: Backend) {
    let mut w = world(backend);
    let p = w.spawn((Pos(1.0, 1.0),)).unwrap();
    let r = w.reserve_entity().unwrap();
    w.commands().despawn(p);
    // Settling `r` applies the buffer, which despawns `p`.
    assert_eq!(w.add_child(p, r), Err(HierarchyError::NoSuchEntity(p)));
    assert!(w.is_alive(r) && w.parent(r).is_none());
    w.assert_invariants();
    let q = w.spawn(()).unwrap();
    let s = w.reserve_entity().unwrap();
    w.commands().despawn(q);
    assert_eq!(w.remove_child(q, s), Err(HierarchyError::NoSuchEntity(q)));
    w.assert_invariants();
}

fn a_panicking_drop_in_a_despawn_with_handlers_finishes_it_regression(backend: Backend) {
    #[derive(Debug)]
    struct Burst;
    let mut w = world(backend);
    w.on_despawn(|_, _, commands| {
        commands.spawn((Burst,)).unwrap();
    });
    let [a, b] = [(); 2].map(|_| w.spawn((Bomb(true), Pos(0.0, 0.0))).unwrap());
    assert!(catch_unwind(AssertUnwindSafe(|| w.despawn_batch(&[a, b]))).is_err());
    assert!(!w.is_alive(a) && !w.is_alive(b), "a drop's panic does not stop the despawn");
    // The handlers' commands answered a despawn that panicked: dropped, not applied by the next operation.
    assert!(!w.has_pending_commands());
    assert_eq!((w.apply_commands().applied, w.count_of::<Burst>()), (0, 0));
    let p = w.spawn(()).unwrap();
    let c = w.spawn((Bomb(true),)).unwrap();
    let d = w.spawn(()).unwrap();
    w.add_child(p, c).unwrap();
    w.add_child(p, d).unwrap();
    assert!(catch_unwind(AssertUnwindSafe(|| w.despawn(p))).is_err());
    assert!(w.is_empty(), "the subtree goes whole");
    assert_eq!(w.count_of::<Burst>(), 0);
    w.assert_invariants();
}

fn a_load_after_a_panicking_despawn_keeps_the_tree_hooks_regression(backend: Backend) {
    use swarm::ecs::{Format, SnapshotSchema};
    let schema = SnapshotSchema::new().component::<Pos>("pos").component::<Vel>("vel");
    let mut source = world(backend);
    let x = source.spawn((Vel(1.0, 1.0),)).unwrap();
    let y = source.spawn((Pos(1.0, 1.0),)).unwrap();
    source.add_child(x, y).unwrap();
    let bytes = schema.save(&source, Format::Binary).unwrap();
    let mut w = world(backend);
    // A bomb's despawn records another bomb, whose drop panics again when the recorded command is dropped.
    w.on_despawn(|world, e, commands| {
        if world.get::<Bomb>(e).is_some() {
            commands.spawn((Bomb(true),)).unwrap();
        }
    });
    let e = w.spawn((Bomb(true),)).unwrap();
    assert!(catch_unwind(AssertUnwindSafe(|| w.despawn(e))).is_err());
    schema.load_into(&mut w, &bytes, None).unwrap();
    w.despawn(x).unwrap();
    assert!(!w.is_alive(y), "the child goes with its parent: the hierarchy's hook is on after the load");
    w.assert_invariants();
}

fn a_view_of_an_entity_a_handler_despawned_answers_nothing_regression(backend: Backend) {
    let mut w = world(backend);
    w.on_insert::<Tag>(|_, e, _, commands| commands.despawn(e));
    let e = w.spawn((Pos(0.0, 0.0),)).unwrap();
    let mut view = w.entity_mut(e).unwrap();
    view.insert(Tag(1));
    assert!(!view.as_ref().has::<Pos>() && view.get::<Pos>().is_none());
    assert_eq!(format!("{view:?}"), format!("[{e:?}]"));
}

/// Random structural operations, direct and buffered, with handlers and `drop`s that panic now and then: every
/// operation returns (no walk loops), and after each, panicking or not, every invariant holds, the tree's included.
fn random_operations_with_panics_keep_every_invariant(backend: Backend) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x5eed ^ backend as u64);
    let mut w = world(backend);
    // A removal of `Tag(k)` with k % 7 == 0 panics in its handler; an insert of `Hp` records a follow-up.
    w.on_remove::<Tag>(|_, _, tag, _| assert!(tag.0 % 7 != 0, "a handler panicked"));
    w.on_insert::<Hp>(|world, e, hp, commands| match hp.0 % 5 {
        0 => commands.despawn(e),
        1 => {
            if let Some(&first) = world.children(e).first() {
                commands.remove_child(e, first);
            }
        }
        _ => {}
    });
    let mut handles: Vec<Entity> = Vec::new();
    let mut panics = 0;
    for step in 0..3_000 {
        let pick = |rng: &mut rand_pcg::Pcg64Mcg, handles: &[Entity]| match handles.is_empty() {
            true => Entity::from_parts(0, std::num::NonZeroU32::MAX),
            false => handles[rng.gen_range(0..handles.len())],
        };
        let (a, b) = (pick(&mut rng, &handles), pick(&mut rng, &handles));
        let k: u32 = rng.gen_range(0..100);
        let op = rng.gen_range(0..14);
        let outcome = catch_unwind(AssertUnwindSafe(|| match op {
            0 | 1 => handles.push(w.spawn((Pos(k as f32, 0.0), Tag(k))).unwrap()),
            2 => handles.push(w.spawn((Bomb(k.is_multiple_of(9)), Tag(k))).unwrap()),
            3 | 4 => drop(w.add_child(a, b)),
            5 => drop(w.insert_child(a, (k % 3) as usize, b)),
            6 => drop(w.remove_child(a, b).or_else(|_| w.detach(b).map(|_| ()).map_err(|_| ()))),
            7 => drop(w.despawn(a)),
            8 => drop(w.despawn_batch(&[a, b, a])),
            9 => drop(w.insert(a, Hp(k as i32))),
            10 => drop(w.remove_bundle::<(Parent, Tag)>(a).map(|_| ()).or_else(|_| w.remove::<Tag>(a).map(|_| ()))),
            11 => drop(w.remove::<Children>(a)),
            12 => {
                let mut commands = w.commands();
                commands.despawn(b);
                let c = commands.spawn((Tag(k), Pos(0.0, 0.0))).unwrap();
                commands.add_child(a, c);
                commands.insert(a, Hp(k as i32));
                commands.remove::<Tag>(a);
                let _ = w.try_apply_commands();
            }
            _ => drop(w.insert_many([(a, Hp(k as i32)), (b, Hp(k as i32 + 1))])),
        }));
        panics += usize::from(outcome.is_err());
        w.assert_invariants();
        if step % 500 == 499 {
            handles.retain(|&e| w.is_alive(e));
        }
    }
    assert!(panics > 10, "the run panicked {panics} times: too few to test anything");
    handles.retain(|&e| w.is_alive(e));
    let _ = catch_unwind(AssertUnwindSafe(|| w.despawn_batch(&handles)));
    w.assert_invariants();
}

mod every_backend {
    use crate::backends;
    on_every_backend!(
        the_tree_types_cannot_be_put_from_outside_regression,
        the_tree_types_cannot_be_written_through_mut_regression,
        a_panicking_remove_handler_leaves_the_tree_whole_regression,
        a_panicking_drop_in_a_subtree_despawn_leaves_the_tree_whole_regression,
        a_handler_that_despawns_ends_a_chain_quietly_regression,
        a_view_of_a_watched_type_runs_its_handlers,
        despawning_many_children_of_one_parent_keeps_the_list_right,
        random_operations_with_panics_keep_every_invariant,
        handler_spawns_after_a_load_that_renumbers_types_regression,
        a_link_refuses_a_parent_its_settle_despawned_regression,
        a_panicking_drop_in_a_despawn_with_handlers_finishes_it_regression,
        a_load_after_a_panicking_despawn_keeps_the_tree_hooks_regression,
        a_view_of_an_entity_a_handler_despawned_answers_nothing_regression,
    );
}
