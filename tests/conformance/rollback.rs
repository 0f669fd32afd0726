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
    // A walk of two pools: lock-step where their order stamps say they are packed alike.
    let mut pairs = Vec::new();
    w.query_ref::<(&Pos, &Name)>().for_each(|e, (p, n)| pairs.push(format!("{e:?} {p:?} {n:?}")));
    pairs.sort();
    out + &format!("removed {:?}\npairs {pairs:?}", tracker.removed().collect::<Vec<_>>())
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

/// A checkpoint taken into an older one's memory ([`World::checkpoint_into`]) is the checkpoint a new one would
/// be: pools that grew, shrank or emptied since, a tree and change state that moved on, all copied over the old.
/// Into a checkpoint of another layout, or another world's, it is a new one. Refused, it leaves the old one whole.
fn a_checkpoint_taken_into_an_old_one_is_a_new_one(backend: Backend) {
    for seed in 0..3u64 {
        let mut w = rollback_world(backend);
        let mut twin = rollback_world(backend);
        operate(&mut w, &mut Pcg64Mcg::seed_from_u64(seed), 300);
        let mut recycled = w.checkpoint().unwrap();
        let old = dump(&w);
        // Another future for both, then saved into the old checkpoint.
        operate(&mut w, &mut Pcg64Mcg::seed_from_u64(seed + 100), 400);
        operate(&mut twin, &mut Pcg64Mcg::seed_from_u64(seed), 300);
        operate(&mut twin, &mut Pcg64Mcg::seed_from_u64(seed + 100), 400);
        w.checkpoint_into(&mut recycled).unwrap();
        assert_eq!(dump(&w), dump(&twin));
        operate(&mut w, &mut Pcg64Mcg::seed_from_u64(seed + 200), 200);
        w.restore(&recycled).unwrap();
        assert_ne!(dump(&w), old, "seed {seed}: the old state is gone from the checkpoint");
        assert_eq!(dump(&w), dump(&twin), "seed {seed}");
        w.assert_invariants();
        operate(&mut w, &mut Pcg64Mcg::seed_from_u64(seed + 300), 200);
        operate(&mut twin, &mut Pcg64Mcg::seed_from_u64(seed + 300), 200);
        assert_eq!(dump(&w), dump(&twin), "seed {seed}, the same future");

        // Refused: the old checkpoint stays whole.
        let before = dump(&w);
        w.checkpoint_into(&mut recycled).unwrap();
        operate(&mut w, &mut Pcg64Mcg::seed_from_u64(seed + 400), 50);
        w.commands().spawn((Red,)).unwrap();
        assert_eq!(w.checkpoint_into(&mut recycled).unwrap_err(), RollbackError::PendingCommands);
        w.apply_commands();
        #[derive(Debug)]
        struct Unclonable;
        let stray = w.spawn((Unclonable,)).unwrap();
        let error = w.checkpoint_into(&mut recycled).unwrap_err();
        assert!(matches!(error, RollbackError::NotRegistered { component } if component.ends_with("Unclonable")));
        w.despawn(stray).unwrap();
        w.restore(&recycled).unwrap();
        assert_eq!(dump(&w), before, "seed {seed}: refused, the checkpoint is the one before");

        // Into a checkpoint of another layout, and of another world: a new checkpoint of this one.
        let next = Backend::ALL[(seed as usize + 1) % Backend::ALL.len()];
        w.set_backend(next);
        operate(&mut w, &mut Pcg64Mcg::seed_from_u64(seed + 500), 100);
        let now = dump(&w);
        w.checkpoint_into(&mut recycled).unwrap();
        let mut other = rollback_world(backend);
        let mut theirs = other.checkpoint().unwrap();
        w.checkpoint_into(&mut theirs).unwrap();
        assert_eq!(other.restore(&theirs).unwrap_err(), RollbackError::OtherWorld);
        operate(&mut w, &mut Pcg64Mcg::seed_from_u64(seed + 600), 100);
        w.restore(&recycled).unwrap();
        assert_eq!(dump(&w), now);
        operate(&mut w, &mut Pcg64Mcg::seed_from_u64(seed + 700), 100);
        w.restore(&theirs).unwrap();
        assert_eq!(dump(&w), now);
        w.assert_invariants();
    }
}

/// A `Clone` that panics while a checkpoint is taken into an old one leaves the world as it was, and the old
/// checkpoint either whole or refused by a restore, never a mix of two states; in a ring, the one being written is
/// dropped and the others stay.
fn a_clone_that_panics_while_saving_into_an_old_checkpoint_mixes_nothing(backend: Backend) {
    #[derive(Debug, PartialEq)]
    struct Fragile(u32);
    impl Clone for Fragile {
        fn clone(&self) -> Self {
            assert_ne!(self.0, 13, "a clone that fails");
            Fragile(self.0)
        }
    }
    let mut w = rollback_world(backend);
    w.rollback_component::<Fragile>();
    operate(&mut w, &mut Pcg64Mcg::seed_from_u64(3), 200);
    let fragile: Vec<Entity> = (0..40).map(|i| w.spawn((Pos(i as f32, 0.0), Fragile(i + 100))).unwrap()).collect();
    let mut old = w.checkpoint().unwrap();
    let saved = dump(&w);
    let (mut ring, frames) = (Checkpoints::new(2), [1, 2]);
    for frame in frames {
        ring.save(frame, &w).unwrap();
    }
    operate(&mut w, &mut Pcg64Mcg::seed_from_u64(4), 100);
    w.get_mut::<Fragile>(fragile[20]).unwrap().0 = 13;
    let now = dump(&w);
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.checkpoint_into(&mut old)));
    let in_ring = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ring.save(3, &w)));
    std::panic::set_hook(quiet);
    assert!(caught.is_err() && in_ring.is_err(), "the clone panicked");
    assert_eq!(dump(&w), now, "the world is as it was");
    assert_eq!(ring.frames().collect::<Vec<_>>(), [2], "the one being written is gone");
    match w.restore(&old) {
        Ok(()) => assert_eq!(dump(&w), saved, "whole: the old state"),
        Err(error) => assert_eq!(error, RollbackError::OtherWorld, "half-written: refused"),
    }
    w.restore(ring.get(2).unwrap()).unwrap();
    assert_eq!(dump(&w), saved);
    w.assert_invariants();
    // Taken into again, it is whole.
    w.get_mut::<Fragile>(fragile[20]).unwrap().0 = 20;
    w.checkpoint_into(&mut old).unwrap();
    let again = dump(&w);
    operate(&mut w, &mut Pcg64Mcg::seed_from_u64(5), 100);
    w.restore(&old).unwrap();
    assert_eq!(dump(&w), again);
    assert_eq!(w.get::<Fragile>(fragile[20]), Some(&Fragile(20)));
}

/// [`Checkpoints::save`] keeps what [`Checkpoints::keep`] of a new checkpoint keeps, each restoring to its frame's
/// world, while it takes each into the memory of the one it forgets; refused, the ring is as it was.
fn the_ring_saves_into_the_checkpoints_it_forgets(backend: Backend) {
    let mut w = rollback_world(backend);
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    let (mut ring, mut kept) = (Checkpoints::new(3), Checkpoints::new(3));
    let mut dumps = std::collections::HashMap::new();
    let frames = (0..8).chain([5, 6, 3, 4, 5]);
    for frame in frames {
        operate(&mut w, &mut rng, 60);
        ring.save(frame, &w).unwrap();
        kept.keep(frame, w.checkpoint().unwrap());
        dumps.insert(frame, dump(&w));
        assert_eq!(ring.frames().collect::<Vec<_>>(), kept.frames().collect::<Vec<_>>(), "frame {frame}");
    }
    assert_eq!(ring.frames().collect::<Vec<_>>(), [3, 4, 5]);
    w.commands().spawn((Red,)).unwrap();
    assert_eq!(ring.save(9, &w).unwrap_err(), RollbackError::PendingCommands);
    w.apply_commands();
    assert_eq!(ring.frames().collect::<Vec<_>>(), [3, 4, 5], "refused: the ring as it was");
    for frame in [3, 4, 5] {
        w.restore(ring.get(frame).unwrap()).unwrap();
        assert_eq!(dump(&w), dumps[&frame], "frame {frame}");
        w.assert_invariants();
    }
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

/// Tracking is the world's setting, not its state: a type tracked (and put in the exact mode) after a checkpoint
/// stays tracked through the restore, its restored values counted as added, their removals noted, exact compares
/// kept.
fn a_type_tracked_since_the_checkpoint_stays_tracked(backend: Backend) {
    let mut w = rollback_world(backend);
    let a = w.spawn((Pos(1.0, 1.0), Name("a".into()))).unwrap();
    let saved = w.checkpoint().unwrap();
    w.track_exact::<Name>();
    w.restore(&saved).unwrap();
    assert!(w.is_tracked::<Name>(), "the restore forgot that `Name` is tracked");
    assert!(w.tracker::<Name>().is_added(a), "a value held when tracking starts counts as added");
    w.clear_trackers();
    let b = w.spawn((Pos(2.0, 2.0), Name("b".into()))).unwrap();
    // The exact mode: the same value written back is no change.
    w.get_mut::<Name>(a).unwrap().0 = "a".into();
    let tracker = w.tracker::<Name>();
    assert!(tracker.is_added(b) && !tracker.is_changed(a));
    w.get_mut::<Name>(a).unwrap().0 = "a2".into();
    assert!(w.tracker::<Name>().is_changed(a));
    let changed: Vec<Entity> =
        w.query::<&Name>().filter::<swarm::ecs::Changed<Name>>().iter().map(|(e, _)| e).collect();
    assert_eq!(changed, [a, b]);
    w.despawn(a).unwrap();
    w.remove::<Name>(b).unwrap();
    assert_eq!(w.tracker::<Name>().removed_count(), 2, "both removals noted");
    w.assert_invariants();
}

thread_local! {
    /// Clones of [`Fragile`] left before one panics (`None`: never).
    static CLONES_LEFT: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// A component whose `Clone` panics once [`CLONES_LEFT`] runs out.
#[derive(Debug, PartialEq)]
struct Fragile(u32);

impl Clone for Fragile {
    fn clone(&self) -> Self {
        CLONES_LEFT.with(|left| match left.get() {
            Some(0) => panic!("clone refused"),
            Some(n) => left.set(Some(n - 1)),
            None => {}
        });
        Fragile(self.0)
    }
}

/// Every copy a restore makes (values, then the exact mode's copies in the change state) is made before anything is
/// swapped in: a `Clone` that panics in the last of them leaves the world as it was, and the checkpoint restores
/// afterwards.
fn a_clone_that_panics_while_restoring_changes_nothing(backend: Backend) {
    let mut w = world(backend);
    w.rollback_component::<Fragile>();
    let a = w.spawn((Fragile(1),)).unwrap();
    let b = w.spawn((Fragile(2),)).unwrap();
    // Tracked exactly now, so the change state holds a copy of each value too.
    w.track_exact::<Fragile>();
    let saved = w.checkpoint().unwrap();
    w.get_mut::<Fragile>(a).unwrap().0 = 10;
    w.despawn(b).unwrap();
    let c = w.spawn((Fragile(3),)).unwrap();
    let state = |w: &World| {
        let mut values: Vec<(Entity, u32)> = w.query_ref::<&Fragile>().iter().map(|(e, f)| (e, f.0)).collect();
        values.sort();
        let tracker = w.tracker::<Fragile>();
        (values, tracker.is_changed(a), tracker.is_added(c), tracker.removed_count())
    };
    let before = state(&w);
    // The two values copy; the change state's first copy panics.
    CLONES_LEFT.with(|left| left.set(Some(2)));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.restore(&saved)));
    CLONES_LEFT.with(|left| left.set(None));
    assert!(outcome.is_err(), "the clone was to panic");
    assert_eq!(state(&w), before, "a restore that panicked changed the world");
    w.assert_invariants();
    w.restore(&saved).unwrap();
    assert_eq!(state(&w).0, [(a, 1), (b, 2)]);
    w.assert_invariants();
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        restore_gives_the_world_its_twin,
        bad_checkpoints_and_restores_are_refused_and_change_nothing,
        a_checkpoint_taken_into_an_old_one_is_a_new_one,
        the_ring_saves_into_the_checkpoints_it_forgets,
        a_clone_that_panics_while_saving_into_an_old_checkpoint_mixes_nothing,
        a_type_tracked_since_the_checkpoint_stays_tracked,
        a_clone_that_panics_while_restoring_changes_nothing,
    }
}
