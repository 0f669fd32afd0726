//! The hierarchy: operations against a reference tree, recursive despawn and its events, save and load.

use crate::{world, Pos};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use swarm::ecs::{Backend, Entity, Format, HierarchyError, SnapshotError, SnapshotSchema, World};

/// The tree as plain maps: what the world must agree with.
#[derive(Default, Clone)]
struct Model {
    alive: Vec<Entity>,
    parent: HashMap<Entity, Entity>,
    children: HashMap<Entity, Vec<Entity>>,
}

impl Model {
    fn is_alive(&self, e: Entity) -> bool {
        self.alive.contains(&e)
    }

    fn unlink(&mut self, child: Entity) {
        if let Some(p) = self.parent.remove(&child) {
            let list = self.children.get_mut(&p).unwrap();
            list.retain(|&c| c != child);
            if list.is_empty() {
                self.children.remove(&p);
            }
        }
    }

    fn link(&mut self, parent: Entity, child: Entity, index: Option<usize>) -> Result<(), HierarchyError> {
        for e in [parent, child] {
            if !self.is_alive(e) {
                return Err(HierarchyError::NoSuchEntity(e));
            }
        }
        let mut up = Some(parent);
        while let Some(a) = up {
            if a == child {
                return Err(HierarchyError::Cycle { parent, child });
            }
            up = self.parent.get(&a).copied();
        }
        let here = self.parent.get(&child) == Some(&parent);
        let len = self.children.get(&parent).map_or(0, Vec::len) - usize::from(here);
        let index = index.unwrap_or(len);
        if index > len {
            return Err(HierarchyError::Position { index, len });
        }
        self.unlink(child);
        self.parent.insert(child, parent);
        self.children.entry(parent).or_default().insert(index, child);
        Ok(())
    }

    fn remove_child(&mut self, parent: Entity, child: Entity) -> Result<(), HierarchyError> {
        for e in [parent, child] {
            if !self.is_alive(e) {
                return Err(HierarchyError::NoSuchEntity(e));
            }
        }
        if self.parent.get(&child) != Some(&parent) {
            return Err(HierarchyError::NotAChild { parent, child });
        }
        self.unlink(child);
        Ok(())
    }

    /// The subtree of `root`, children first in child order.
    fn post_order(&self, root: Entity, out: &mut Vec<Entity>) {
        for &c in self.children.get(&root).map_or(&[][..], |v| &v[..]) {
            self.post_order(c, out);
        }
        out.push(root);
    }

    fn despawn(&mut self, root: Entity) -> Vec<Entity> {
        let mut order = Vec::new();
        self.post_order(root, &mut order);
        self.unlink(root);
        for e in &order {
            self.alive.retain(|a| a != e);
            self.parent.remove(e);
            self.children.remove(e);
        }
        order
    }

    fn assert_matches(&self, w: &World, when: &str) {
        w.assert_invariants();
        assert_eq!(w.len() as usize, self.alive.len(), "{when}: live count");
        for &e in &self.alive {
            assert_eq!(w.parent(e), self.parent.get(&e).copied(), "{when}: parent of {e:?}");
            assert_eq!(w.children(e), self.children.get(&e).map_or(&[][..], |v| &v[..]), "{when}: children of {e:?}");
        }
    }
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Random hierarchy operations, direct and through the command buffer, with despawns of subtrees and a save and
/// load onto the next backend now and then, checked against the model after every step.
fn operations_match_a_reference_tree(backend: Backend) {
    let mut w = world(backend);
    let mut model = Model::default();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ backend as u64);
    let mut known: Vec<Entity> = Vec::new();
    let despawned: Arc<Mutex<Vec<Entity>>> = Arc::default();
    let d = despawned.clone();
    w.on_despawn(move |_, e, _| d.lock().unwrap().push(e));
    let schema = SnapshotSchema::new().component::<Pos>("pos");
    for step in 0..1_500 {
        if known.len() < 8 || rng.below(6) == 0 {
            let e = w.spawn((Pos(step as f32, 0.0),)).unwrap();
            model.alive.push(e);
            known.push(e);
            continue;
        }
        // Mostly live entities, sometimes dead ones.
        let pick = |rng: &mut Rng| known[known.len() - 1 - rng.below(known.len().min(40))];
        let (a, b) = (pick(&mut rng), pick(&mut rng));
        let index = rng.below(5);
        let buffered = rng.below(3) == 0;
        match rng.below(10) {
            0..=3 => {
                let expected = model.clone().link(a, b, None).is_ok();
                if buffered {
                    w.commands().add_child(a, b);
                    assert_eq!(w.apply_commands().applied, u32::from(expected), "step {step}");
                    model.link(a, b, None).ok();
                } else {
                    assert_eq!(w.add_child(a, b), model.link(a, b, None), "step {step}");
                }
            }
            4..=5 => {
                if buffered {
                    let expected = model.clone().link(a, b, Some(index)).is_ok();
                    w.commands().insert_child(a, index, b);
                    assert_eq!(w.apply_commands().applied, u32::from(expected), "step {step}");
                    model.link(a, b, Some(index)).ok();
                } else {
                    assert_eq!(w.insert_child(a, index, b), model.link(a, b, Some(index)), "step {step}");
                }
            }
            6 => {
                let a = model.parent.get(&b).copied().filter(|_| rng.below(4) > 0).unwrap_or(a);
                if buffered {
                    let expected = model.clone().remove_child(a, b).is_ok();
                    w.commands().remove_child(a, b);
                    assert_eq!(w.apply_commands().applied, u32::from(expected), "step {step}");
                    model.remove_child(a, b).ok();
                } else {
                    assert_eq!(w.remove_child(a, b), model.remove_child(a, b), "step {step}");
                }
            }
            7 => {
                let expected = model.is_alive(b).then(|| model.parent.get(&b).copied());
                assert_eq!(w.detach(b).ok(), expected, "step {step}");
                if model.is_alive(b) {
                    model.unlink(b);
                }
            }
            8 => {
                if model.is_alive(a) {
                    let order = model.despawn(a);
                    despawned.lock().unwrap().clear();
                    if buffered {
                        w.commands().despawn(a);
                        w.apply_commands();
                    } else {
                        w.despawn(a).unwrap();
                    }
                    assert_eq!(*despawned.lock().unwrap(), order, "step {step}: children first, in child order");
                } else {
                    assert!(w.despawn(a).is_err());
                }
            }
            _ => {
                // Removing `Parent` unlinks; removing `Children` makes roots.
                if rng.below(2) == 0 {
                    let had = model.parent.contains_key(&b);
                    assert_eq!(w.remove::<swarm::ecs::Parent>(b).is_ok(), had, "step {step}");
                    model.unlink(b);
                } else if let Some(list) = model.children.get(&b).cloned() {
                    assert!(w.remove::<swarm::ecs::Children>(b).is_ok());
                    for c in list {
                        model.unlink(c);
                    }
                }
            }
        }
        model.assert_matches(&w, &format!("step {step}"));
        if step % 250 == 249 {
            let next = Backend::ALL[(step / 250) % Backend::ALL.len()];
            let bytes = schema.save(&w, if step % 500 == 249 { Format::Json } else { Format::Binary }).unwrap();
            let mut loaded = schema.load(&bytes, Some(next)).unwrap();
            model.assert_matches(&loaded, &format!("loaded on {next} at step {step}"));
            loaded.set_backend(w.backend());
            assert_eq!(schema.save(&loaded, Format::Binary).unwrap(), schema.save(&w, Format::Binary).unwrap());
        }
    }
    assert!(!model.children.is_empty() && model.alive.len() > 20, "the run built a tree");
}

/// A three-level tree despawned from the top: children first, in child order, each readable by its handler;
/// the parent of the root loses it from its list, and a handler's spawns follow.
fn despawning_a_parent_despawns_its_subtree_children_first(backend: Backend) {
    let mut w = world(backend);
    let [top, root, a, b, a1, a2] = [0, 1, 2, 3, 4, 5].map(|i| w.spawn((Pos(i as f32, 0.0),)).unwrap());
    w.add_child(top, root).unwrap();
    w.add_child(root, b).unwrap();
    w.insert_child(root, 0, a).unwrap();
    w.add_child(a, a2).unwrap();
    w.insert_child(a, 0, a1).unwrap();
    let seen: Arc<Mutex<Vec<(Entity, f32, usize)>>> = Arc::default();
    let s = seen.clone();
    w.on_despawn(move |w, e, c| {
        s.lock().unwrap().push((e, w.get::<Pos>(e).unwrap().0, w.children(e).len()));
        c.spawn((7u8,)).unwrap();
    });
    w.commands().despawn(root);
    w.apply_commands();
    let order: Vec<Entity> = seen.lock().unwrap().iter().map(|s| s.0).collect();
    assert_eq!(order, [a1, a2, a, b, root]);
    assert_eq!(seen.lock().unwrap()[2], (a, 2.0, 2), "a parent's handler sees its list as it was");
    assert_eq!(w.children(top), &[] as &[Entity]);
    assert_eq!(w.len(), 1 + 5, "the top and the five spawned by handlers");
    assert_eq!(w.count_of::<u8>(), 5);
    w.assert_invariants();
}

/// A deep chain and a wide fan both go in one despawn.
fn deep_and_wide_trees_despawn_whole(backend: Backend) {
    let mut w = world(backend);
    let root = w.spawn(()).unwrap();
    let mut at = root;
    for _ in 0..2_000 {
        let next = w.spawn(()).unwrap();
        w.add_child(at, next).unwrap();
        at = next;
    }
    let fan = w.spawn(()).unwrap();
    for _ in 0..2_000 {
        let c = w.spawn(()).unwrap();
        w.add_child(fan, c).unwrap();
    }
    w.add_child(at, fan).unwrap();
    assert_eq!(w.add_child(fan, root), Err(HierarchyError::Cycle { parent: fan, child: root }));
    w.despawn(root).unwrap();
    assert!(w.is_empty());
    w.assert_invariants();
}

/// Refusals change nothing and name the problem.
fn refusals_change_nothing(backend: Backend) {
    let mut w = world(backend);
    let [p, c, d] = [(); 3].map(|_| w.spawn(()).unwrap());
    w.add_child(p, c).unwrap();
    assert_eq!(w.add_child(c, c), Err(HierarchyError::Cycle { parent: c, child: c }));
    assert_eq!(w.insert_child(p, 2, d), Err(HierarchyError::Position { index: 2, len: 1 }));
    assert_eq!(w.remove_child(d, c), Err(HierarchyError::NotAChild { parent: d, child: c }));
    w.despawn(d).unwrap();
    assert_eq!(w.add_child(d, c), Err(HierarchyError::NoSuchEntity(d)));
    let error = w.add_child(c, p).unwrap_err();
    assert!(error.to_string().contains("ancestors"), "{error}");
    assert_eq!((w.children(p), w.parent(c)), (&[c][..], Some(p)));
    w.assert_invariants();
}

/// A damaged file is refused with the reason, and the world it was to load into is untouched.
fn a_damaged_tree_in_a_file_is_refused(backend: Backend) {
    use serde_json::{json, Value};
    let mut w = world(backend);
    let [p, a, b, gone] = [(); 4].map(|_| w.spawn((Pos(0.0, 0.0),)).unwrap());
    w.despawn(gone).unwrap();
    w.add_child(p, a).unwrap();
    w.add_child(p, b).unwrap();
    let schema = SnapshotSchema::new().component::<Pos>("pos");
    let file: Value = serde_json::from_slice(&schema.save(&w, Format::Json).unwrap()).unwrap();
    let h = |e: Entity| json!(format!("{e:?}"));
    // Sets a hierarchy column's entity indices and values.
    let edit = |name: &str, entities: Value, values: Value| {
        let mut file = file.clone();
        let columns = file["snapshot"]["components"].as_array_mut().unwrap();
        let column = columns.iter_mut().find(|c| c["name"] == name).unwrap();
        column["entities"] = entities;
        column["values"] = values;
        serde_json::to_vec(&file).unwrap()
    };
    let (ip, ia, ib) = (p.index(), a.index(), b.index());
    let damaged = [
        ("listed twice", edit("@children", json!([ip]), json!([[h(a), h(b), h(a)]])), "listed twice"),
        ("dangling parent", edit("@parent", json!([ia, ib]), json!([h(p), h(gone)])), "not alive"),
        ("disagreeing sides", edit("@parent", json!([ia, ib]), json!([h(p), h(a)])), "whose parent is "),
        (
            "cycle",
            {
                let mut cyclic: Value =
                    serde_json::from_slice(&edit("@parent", json!([ip, ia, ib]), json!([h(a), h(p), h(p)]))).unwrap();
                let columns = cyclic["snapshot"]["components"].as_array_mut().unwrap();
                let children = columns.iter_mut().find(|c| c["name"] == "@children").unwrap();
                children["entities"] = json!([ip, ia]);
                children["values"] = json!([[h(a), h(b)], [h(p)]]);
                serde_json::to_vec(&cyclic).unwrap()
            },
            "cycle",
        ),
    ];
    let mut target = world(backend);
    let kept = target.spawn((Pos(5.0, 5.0),)).unwrap();
    for (what, bad, says) in &damaged {
        let error = schema.load_into(&mut target, bad, None).unwrap_err();
        assert!(matches!(error, SnapshotError::Hierarchy(_)), "{what}: {error}");
        assert!(error.to_string().contains(says), "{what}: {error}");
        assert!(!error.to_string().contains("Some("), "{what}: words, not Rust syntax: {error}");
        assert_eq!(target.get::<Pos>(kept), Some(&Pos(5.0, 5.0)), "{what}: the world untouched");
    }
    // The intact file loads with the tree.
    schema.load_into(&mut target, &serde_json::to_vec(&file).unwrap(), None).unwrap();
    assert_eq!(target.children(p), &[a, b]);
}

mod every_backend {
    use crate::backends;
    on_every_backend!(
        operations_match_a_reference_tree,
        despawning_a_parent_despawns_its_subtree_children_first,
        deep_and_wide_trees_despawn_whole,
        refusals_change_nothing,
        a_damaged_tree_in_a_file_is_refused,
    );
}
