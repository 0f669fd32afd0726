//! Rollback: a checkpoint restored after random operations gives the world a twin built by the same operations
//! up to the checkpoint has: the same handles, values, tree, change state and resources, and the same future (the
//! allocator came back too), also restored onto another backend, restored twice, and from a copy of the
//! checkpoint. Bad uses are refused and change nothing.

use crate::{world, Name, Pos, Red};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use swarm::ecs::{Backend, Checkpoint, Checkpoints, Entity, RollbackError, World};

#[derive(Clone, Debug, PartialEq)]
struct Score(u64);

fn rollback_world(backend: Backend) -> World {
    let mut w = world(backend);
    w.rollback_component::<Pos>().rollback_component::<Name>().rollback_component::<Red>();
    w.rollback_resource::<Score>();
    w.track::<Pos>();
    w.insert_resource(Score(0));
    w
}

/// `steps` random operations: spawns, inserts, removals, writes, despawns, tree changes, the resource, and commands
/// applied (all through the public API, so every backend does the same).
fn operate(w: &mut World, rng: &mut Pcg64Mcg, steps: usize) {
    for _ in 0..steps {
        let live: Vec<Entity> = w.entities().iter().collect();
        let pick = |rng: &mut Pcg64Mcg| (!live.is_empty()).then(|| live[rng.gen_range(0..live.len())]);
        match rng.gen_range(0..10) {
            0 | 1 => {
                let e = w.spawn((Pos(rng.gen_range(0.0..9.0), 0.0),)).unwrap();
                if rng.gen_bool(0.5) {
                    w.insert(e, Name(format!("n{}", e.index()))).unwrap();
                }
            }
            2 => {
                if let Some(e) = pick(rng) {
                    w.insert(e, Red).unwrap();
                }
            }
            3 => {
                if let Some(e) = pick(rng) {
                    let _ = w.remove::<Name>(e);
                }
            }
            4 => {
                if let Some(e) = pick(rng) {
                    if let Some(p) = w.get_mut::<Pos>(e) {
                        p.1 += 1.0;
                    }
                }
            }
            5 => {
                if let Some(e) = pick(rng) {
                    w.despawn(e).unwrap();
                }
            }
            6 => {
                if let (Some(p), Some(c)) = (pick(rng), pick(rng)) {
                    let _ = w.add_child(p, c);
                }
            }
            7 => w.resource_mut::<Score>().0 += 1,
            8 => {
                if let Some(e) = pick(rng) {
                    let mut commands = w.commands();
                    commands.insert(e, Name("cmd".into()));
                    commands.spawn((Pos(1.0, 1.0), Red)).unwrap();
                    w.apply_commands();
                }
            }
            _ => w.clear_trackers(),
        }
    }
}

/// Everything a test can ask of a world, in handle order.
fn dump(w: &World) -> String {
    let mut out = format!("{:?} {:?}\n", w.entities().state(), w.resource::<Score>());
    let tracker = w.tracker::<Pos>();
    for e in w.entities().iter() {
        out += &format!(
            "{e:?} {:?} {:?} {} parent {:?} children {:?} changed {} added {}\n",
            w.get::<Pos>(e),
            w.get::<Name>(e),
            w.has::<Red>(e),
            w.parent(e),
            w.children(e),
            tracker.is_changed(e),
            tracker.is_added(e),
        );
    }
    out + &format!("removed {:?}", tracker.removed().collect::<Vec<_>>())
}

fn restore_gives_the_world_its_twin(backend: Backend) {
    for seed in 0..4u64 {
        let mut w = rollback_world(backend);
        let mut twin = rollback_world(backend);
        operate(&mut w, &mut Pcg64Mcg::seed_from_u64(seed), 300);
        operate(&mut twin, &mut Pcg64Mcg::seed_from_u64(seed), 300);
        let saved = w.checkpoint().unwrap();
        assert_eq!(dump(&w), dump(&twin));
        // Another future, a backend switch in it, and commands left waiting: all undone.
        operate(&mut w, &mut Pcg64Mcg::seed_from_u64(seed + 100), 200);
        w.set_backend(Backend::ALL[(seed as usize + 1) % Backend::ALL.len()]);
        w.commands().spawn((Red,)).unwrap();
        w.restore(&saved).unwrap();
        assert_eq!(w.backend(), Backend::ALL[(seed as usize + 1) % Backend::ALL.len()], "the backend in use stays");
        w.set_backend(backend);
        assert_eq!(dump(&w), dump(&twin), "seed {seed}");
        w.assert_invariants();
        // The same future from here: the handles spawned match too.
        operate(&mut w, &mut Pcg64Mcg::seed_from_u64(seed + 200), 200);
        operate(&mut twin, &mut Pcg64Mcg::seed_from_u64(seed + 200), 200);
        assert_eq!(dump(&w), dump(&twin), "seed {seed}, after");
        // The checkpoint restores again, and so does a copy of it.
        let copy: Checkpoint = saved.clone();
        w.restore(&saved).unwrap();
        let once = dump(&w);
        operate(&mut w, &mut Pcg64Mcg::seed_from_u64(seed + 300), 50);
        w.restore(&copy).unwrap();
        assert_eq!(dump(&w), once);
        w.assert_invariants();
    }
}

fn bad_checkpoints_and_restores_are_refused_and_change_nothing(backend: Backend) {
    #[derive(Debug)]
    struct Unclonable;
    let mut w = rollback_world(backend);
    let e = w.spawn((Pos(1.0, 2.0),)).unwrap();
    w.commands().despawn(e);
    assert_eq!(w.checkpoint().unwrap_err(), RollbackError::PendingCommands);
    w.apply_commands();
    w.spawn((Unclonable,)).unwrap();
    let error = w.checkpoint().unwrap_err();
    assert!(matches!(error, RollbackError::NotRegistered { component } if component.ends_with("Unclonable")));
    assert!(error.to_string().contains("rollback_component"), "{error}");
    // A type registered but empty is fine.
    w.clear();
    let saved = w.checkpoint().unwrap();
    let other = rollback_world(backend);
    let before = dump(&other);
    let mut other = other;
    assert_eq!(other.restore(&saved).unwrap_err(), RollbackError::OtherWorld);
    assert_eq!(dump(&other), before);
}

/// The ring keeps frames in order, forgets a future it overwrites and the oldest beyond its capacity, and finds
/// where a rewind starts from.
#[test]
fn the_ring_keeps_the_last_frames_in_order() {
    let mut w = rollback_world(Backend::SparseSet);
    let mut ring = Checkpoints::new(3);
    for frame in [0, 10, 20, 30] {
        w.spawn((Pos(frame as f32, 0.0),)).unwrap();
        ring.keep(frame, w.checkpoint().unwrap());
    }
    assert_eq!(ring.frames().collect::<Vec<_>>(), [10, 20, 30], "the oldest is forgotten past the capacity");
    assert_eq!(ring.oldest(), Some(10));
    assert_eq!(ring.at_or_before(25).map(|(f, c)| (f, c.len())), Some((20, 3)));
    assert_eq!(ring.at_or_before(30).map(|(f, _)| f), Some(30));
    assert!(ring.at_or_before(9).is_none(), "nothing kept that early");
    ring.keep(20, w.checkpoint().unwrap());
    assert_eq!(ring.frames().collect::<Vec<_>>(), [10, 20], "keeping frame 20 again forgets 20 and 30");
    ring.set_capacity(1);
    assert_eq!((ring.capacity(), ring.frames().collect::<Vec<_>>()), (1, vec![20]));
    ring.clear();
    assert!(ring.is_empty() && ring.oldest().is_none());
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        restore_gives_the_world_its_twin,
        bad_checkpoints_and_restores_are_refused_and_change_nothing,
    }
}
