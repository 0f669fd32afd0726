//! Change detection against a model: random spawns, inserts, removals, despawns and writes (through `get_mut`,
//! serial and parallel query loops, `get`, `get_many`, iterators and commands), frame after frame; after each frame
//! `Added<Hp>`, `Changed<Hp>` (alone and with other filters, fetching `Hp` or not) and the tracker's removals are
//! what the model says, in handle order, on every backend. The same run in the exact mode, where some writes put
//! the value back: a write counts only if the value differs, at the points the world compares (its next query, its
//! clear), from the value it last counted.

use crate::{world, Pos, Red};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::collections::{BTreeMap, BTreeSet};
use swarm::ecs::{Added, Backend, Changed, Entity, Or, QueryError, QueryState, With, Without, World};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Hp(i64);

/// What the model knows: who holds an `Hp`, and since the last clear, who got one, whose changed, who lost one;
/// in the exact mode, the value each holder last counted with and the writes not compared yet.
#[derive(Default)]
struct Model {
    exact: bool,
    holders: BTreeSet<Entity>,
    added: BTreeSet<Entity>,
    changed: BTreeSet<Entity>,
    removed: Vec<Entity>,
    copies: BTreeMap<Entity, i64>,
    waiting: BTreeSet<Entity>,
}

impl Model {
    fn put(&mut self, e: Entity, value: i64) {
        if self.holders.insert(e) {
            self.added.insert(e);
        }
        self.changed.insert(e);
        self.copies.insert(e, value);
        self.waiting.remove(&e);
    }
    fn wrote(&mut self, e: Entity) {
        assert!(self.holders.contains(&e));
        match self.exact {
            true => self.waiting.insert(e),
            false => self.changed.insert(e),
        };
    }
    /// The world compares its waiting writes (before a query on it lends its storage, and at a clear).
    fn compare(&mut self, w: &World) {
        for e in std::mem::take(&mut self.waiting) {
            let value = w.get::<Hp>(e).unwrap().0;
            if self.copies.insert(e, value) != Some(value) {
                self.changed.insert(e);
            }
        }
    }
    fn take(&mut self, e: Entity) {
        if self.holders.remove(&e) {
            self.added.remove(&e);
            self.changed.remove(&e);
            self.removed.push(e);
            self.waiting.remove(&e);
        }
    }
    fn clear(&mut self) {
        self.added.clear();
        self.changed.clear();
        self.removed.clear();
    }
}

/// Entities in handle order (ascending index: one live entity per index).
fn by_index(set: &BTreeSet<Entity>) -> Vec<Entity> {
    let mut v: Vec<Entity> = set.iter().copied().collect();
    v.sort_by_key(|e| e.index());
    v
}

fn check(w: &mut World, m: &mut Model, frame: usize) {
    // A reader through the shared world sees waiting writes as compared now.
    m.compare(w);
    let shared: Vec<Entity> = w.query_ref::<()>().filter::<Changed<Hp>>().iter().map(|(e, _)| e).collect();
    assert_eq!(shared, by_index(&m.changed), "Changed<Hp> on the shared world, frame {frame}");
    let changed: Vec<Entity> = w.query::<()>().filter::<Changed<Hp>>().iter().map(|(e, _)| e).collect();
    assert_eq!(changed, by_index(&m.changed), "Changed<Hp>, frame {frame}");
    let fetched: Vec<Entity> = w.query::<&Hp>().filter::<Changed<Hp>>().iter().map(|(e, _)| e).collect();
    assert_eq!(fetched, changed, "(&Hp, Changed<Hp>), frame {frame}");
    let added: Vec<Entity> = w.query_ref::<&Pos>().filter::<Added<Hp>>().iter().map(|(e, _)| e).collect();
    let model_added: Vec<Entity> = by_index(&m.added).into_iter().filter(|&e| w.get::<Pos>(e).is_some()).collect();
    assert_eq!(added, model_added, "(&Pos, Added<Hp>), frame {frame}");
    let red: Vec<Entity> = w.query::<&mut Hp>().filter::<(Changed<Hp>, With<Red>)>().iter().map(|(e, _)| e).collect();
    let model_red: Vec<Entity> = changed.iter().copied().filter(|&e| w.get::<Red>(e).is_some()).collect();
    assert_eq!(red, model_red, "(&mut Hp, Changed<Hp>, With<Red>), frame {frame}");
    let mut each = Vec::new();
    w.query::<&Hp>().filter::<(Changed<Hp>, Without<Red>)>().for_each(|e, _| each.push(e));
    let model_plain: Vec<Entity> = changed.iter().copied().filter(|&e| w.get::<Red>(e).is_none()).collect();
    assert_eq!(each, model_plain, "for_each with (Changed<Hp>, Without<Red>), frame {frame}");
    let tracker = w.tracker::<Hp>();
    let mut removed = m.removed.clone();
    removed.sort();
    assert_eq!(tracker.removed().collect::<Vec<_>>(), removed, "removed, frame {frame}");
    for &e in &m.holders {
        assert_eq!(tracker.is_changed(e), m.changed.contains(&e), "is_changed({e}), frame {frame}");
        assert_eq!(tracker.is_added(e), m.added.contains(&e), "is_added({e}), frame {frame}");
    }
    assert_eq!(tracker.changed_count(), m.changed.len());
}

fn agrees_with_the_model(backend: Backend) {
    run_model(backend, false);
}

fn the_exact_mode_agrees_with_the_model(backend: Backend) {
    run_model(backend, true);
}

fn run_model(backend: Backend, exact: bool) {
    let mut w = world(backend);
    w.set_piece_rows(7);
    match exact {
        true => w.track_exact::<Hp>(),
        false => w.track::<Hp>(),
    }
    let mut m = Model { exact, ..Model::default() };
    let mut rng = Pcg64::seed_from_u64(backend as u64 + 11);
    let mut live: Vec<Entity> = Vec::new();
    for frame in 0..60 {
        for _ in 0..rng.gen_range(5..40) {
            let pick = |rng: &mut Pcg64, live: &[Entity]| live[rng.gen_range(0..live.len())];
            match rng.gen_range(0..12) {
                0..=2 => {
                    let e = if rng.gen_bool(0.7) {
                        let e = w.spawn((Pos(0.0, 0.0), Hp(1))).unwrap();
                        m.put(e, 1);
                        e
                    } else {
                        w.spawn((Pos(1.0, 0.0),)).unwrap()
                    };
                    if rng.gen_bool(0.3) {
                        w.insert(e, Red).unwrap();
                    }
                    live.push(e);
                }
                3 if !live.is_empty() => {
                    let e = pick(&mut rng, &live);
                    w.insert(e, Hp(5)).unwrap();
                    m.put(e, 5);
                }
                4 if !live.is_empty() => {
                    let e = pick(&mut rng, &live);
                    if w.remove::<Hp>(e).is_ok() {
                        m.take(e);
                    }
                }
                5 if !live.is_empty() => {
                    let k = rng.gen_range(0..live.len());
                    let e = live.swap_remove(k);
                    w.despawn(e).unwrap();
                    m.take(e);
                }
                6 if !live.is_empty() => {
                    let e = pick(&mut rng, &live);
                    // Half the writes put the same value back.
                    let step = rng.gen_range(0..2);
                    let other = pick(&mut rng, &live);
                    if rng.gen_bool(0.3) {
                        // A query's list visit: each live listed entity that matches (the filter too), as often
                        // as it is listed.
                        let mut seen = Vec::new();
                        m.compare(&w);
                        w.query::<&mut Hp>().with::<Red>().for_each_of(
                            &[(e, step), (other, 1), (e, 0)],
                            |entry, hp| {
                                hp.0 += entry.1;
                                seen.push(entry.0);
                            },
                        );
                        seen.into_iter().for_each(|e| m.wrote(e));
                    } else if rng.gen_bool(0.5) {
                        if let Some(hp) = w.get_mut::<Hp>(e) {
                            hp.0 += step;
                            m.wrote(e);
                        }
                    } else {
                        // A view's list visit: each visited value is handed out as `&mut`.
                        let mut seen = Vec::new();
                        w.view_mut::<Hp>().for_each_of(&[e, e], |e, hp| {
                            hp.0 += step;
                            seen.push(e);
                        });
                        seen.into_iter().for_each(|e| m.wrote(e));
                    }
                }
                7 => {
                    // A serial loop writing the red ones' Hp; a loop reading Hp and writing Pos changes no Hp.
                    let mut seen = Vec::new();
                    m.compare(&w);
                    w.query::<&mut Hp>().with::<Red>().for_each(|e, hp| {
                        hp.0 += (e.index() % 2) as i64;
                        seen.push(e)
                    });
                    seen.into_iter().for_each(|e| m.wrote(e));
                    m.compare(&w);
                    w.query::<(&Hp, &mut Pos)>().for_each(|_, (hp, pos)| pos.0 = hp.0 as f32);
                }
                8 => {
                    let seen = std::sync::Mutex::new(Vec::new());
                    m.compare(&w);
                    w.query::<(&mut Hp, &Pos)>().without::<Red>().par_for_each(|e, (hp, _)| {
                        hp.0 = (hp.0 - 1).max(0);
                        seen.lock().unwrap().push(e)
                    });
                    seen.into_inner().unwrap().into_iter().for_each(|e| m.wrote(e));
                }
                9 if live.len() >= 2 => {
                    let (a, b) = (pick(&mut rng, &live), pick(&mut rng, &live));
                    if a != b {
                        m.compare(&w);
                        if let Ok([x, y]) = w.query::<&mut Hp>().get_many([a, b]) {
                            std::mem::swap(&mut x.0, &mut y.0);
                            m.wrote(a);
                            m.wrote(b);
                        }
                    }
                    m.compare(&w);
                    if w.query::<&mut Hp>().get(a).is_ok() {
                        m.wrote(a);
                    }
                }
                10 => {
                    // An iterator hands out every match as `&mut`, read or not; a prepared query likewise.
                    let mut state = QueryState::<&mut Hp, With<Red>>::new(&mut w).unwrap();
                    m.compare(&w);
                    for (e, hp) in state.query(&mut w).iter().take(3) {
                        hp.0 += 2;
                        let _ = e;
                    }
                    let all: Vec<Entity> =
                        w.query_ref::<()>().with::<Hp>().with::<Red>().iter().map(|(e, _)| e).collect();
                    all.into_iter().for_each(|e| m.wrote(e));
                }
                _ if !live.is_empty() => {
                    // Commands: an insert (added or replaced) and a despawn, applied together.
                    let (a, b) = (pick(&mut rng, &live), pick(&mut rng, &live));
                    w.commands().insert(a, Hp(9));
                    if a != b {
                        w.commands().despawn(b);
                    }
                    w.apply_commands();
                    m.put(a, 9);
                    if a != b {
                        live.retain(|&e| e != b);
                        m.take(b);
                    }
                }
                _ => {}
            }
        }
        check(&mut w, &mut m, frame);
        if frame % 7 == 3 {
            // A live switch changes nothing the tracks say.
            let next = Backend::ALL[(Backend::ALL.iter().position(|&b| b == w.backend()).unwrap() + 1) % 5];
            w.set_backend(next);
            check(&mut w, &mut m, frame);
            w.set_backend(backend);
        }
        if exact && frame % 5 == 1 {
            // A write left waiting across the clear counts in the frame it was made (the clear compares first).
            if let Some(&e) = m.holders.iter().next() {
                w.get_mut::<Hp>(e).unwrap().0 += 3;
                m.wrote(e);
                m.compare(&w);
            }
        }
        w.clear_trackers();
        m.clear();
    }
}

/// A change filter on a type that is not tracked is a mistake: it says so.
fn untracked_types_are_refused(backend: Backend) {
    let mut w = world(backend);
    w.spawn((Hp(1),)).unwrap();
    w.query::<&Hp>().filter::<Changed<Hp>>().for_each(|_, _| {});
}

fn changes_inside_or_are_refused(backend: Backend) {
    let mut w = world(backend);
    w.track::<Hp>();
    let refused = w.query::<&Pos>().filter::<Or<Changed<Hp>, With<Red>>>().try_for_each(|_, _| {});
    assert_eq!(refused, Err(QueryError::ChangesInOr));
}

/// Tracking a type that entities hold already counts them as added; tracking twice changes nothing; a world that
/// tracks nothing answers "nothing changed" and loops as before.
fn tracking_starts_with_what_is_there(backend: Backend) {
    let mut w = world(backend);
    let a = w.spawn((Hp(1), Pos(0.0, 0.0))).unwrap();
    let b = w.spawn((Pos(0.0, 0.0),)).unwrap();
    assert!(!w.tracker::<Hp>().is_tracked());
    w.track::<Hp>();
    w.track::<Hp>();
    assert!(w.is_tracked::<Hp>());
    let added: Vec<Entity> = w.query::<()>().filter::<Added<Hp>>().iter().map(|(e, _)| e).collect();
    assert_eq!(added, [a]);
    w.clear_trackers();
    assert_eq!(w.query::<()>().filter::<Changed<Hp>>().count(), 0);
    w.insert(b, Hp(2)).unwrap();
    let added: Vec<Entity> = w.query::<()>().filter::<Added<Hp>>().iter().map(|(e, _)| e).collect();
    assert_eq!(added, [b]);
    // Reading through `&` is no change.
    w.clear_trackers();
    w.query::<&Hp>().for_each(|_, _| {});
    let _ = w.get::<Hp>(a);
    assert_eq!(w.query::<()>().filter::<Changed<Hp>>().count(), 0);
}

/// A cleared world keeps its types tracked with no value anywhere: a spawn at a freed index is added, and the old
/// handle answers nothing.
fn clear_forgets_every_value(backend: Backend) {
    let mut w = world(backend);
    w.track::<Hp>();
    let old = w.spawn((Hp(1),)).unwrap();
    w.clear_trackers();
    w.get_mut::<Hp>(old).unwrap().0 = 2;
    w.clear();
    let new = w.spawn((Hp(3),)).unwrap();
    assert_eq!(new.index(), old.index(), "the index is reused");
    let added: Vec<Entity> = w.query::<()>().filter::<Added<Hp>>().iter().map(|(e, _)| e).collect();
    assert_eq!(added, [new]);
    let tracker = w.tracker::<Hp>();
    assert!(tracker.is_added(new) && !tracker.is_changed(old) && !tracker.is_added(old));
    assert_eq!(tracker.removed().count(), 0, "a clear lists no removal");
}

/// A loop that hands out every value is compared in one pass, in pieces on the world's threads: the rows whose
/// value it changed count, in handle order, whether many changed or few, whatever order the storage holds them in,
/// and a value put before the loop counts too.
fn a_whole_loop_counts_the_rows_it_changed_in_handle_order(backend: Backend) {
    for threads in [1, 2] {
        let mut w = world(backend);
        w.set_threads(threads);
        w.set_piece_rows(64);
        w.track_exact::<Hp>();
        let mut live: Vec<Entity> = (0..3000).map(|i| w.spawn((Hp(i), Pos(0.0, 0.0))).unwrap()).collect();
        // Storage order apart from handle order: every seventh goes, and as many come back at the freed indices.
        for e in live.iter().step_by(7).copied().collect::<Vec<_>>() {
            w.despawn(e).unwrap();
        }
        live.retain(|&e| w.is_alive(e));
        live.extend((0..429).map(|i| w.spawn((Hp(-i), Pos(0.0, 0.0))).unwrap()));
        for (step, put) in [(3, 1), (1000, 2)] {
            w.clear_trackers();
            let replaced = live[put];
            w.insert(replaced, Hp(77)).unwrap();
            w.query::<&mut Hp>().for_each(|e, hp| hp.0 += (e.index() % step == 0) as i64);
            let changed: Vec<Entity> = w.query::<()>().filter::<Changed<Hp>>().iter().map(|(e, _)| e).collect();
            let expected: BTreeSet<Entity> =
                live.iter().copied().filter(|e| e.index() % step == 0 || *e == replaced).collect();
            assert!(expected.len() > 2, "step {step}");
            assert_eq!(changed, by_index(&expected), "step {step}, {threads} threads");
        }
    }
}

/// A value whose comparison panics on -1.
#[derive(Clone, Debug)]
struct Touchy(i64);

impl PartialEq for Touchy {
    fn eq(&self, other: &Self) -> bool {
        assert!(self.0 != -1 && other.0 != -1, "touchy");
        self.0 == other.0
    }
}

/// A `PartialEq` that panics while the world compares leaves the type tracked exactly: later equal writes are no
/// change, later different ones are.
fn a_panicking_comparison_leaves_the_type_exact(backend: Backend) {
    let mut w = world(backend);
    w.track_exact::<Touchy>();
    let (a, b) = (w.spawn((Touchy(1),)).unwrap(), w.spawn((Touchy(2),)).unwrap());
    w.clear_trackers();
    w.get_mut::<Touchy>(a).unwrap().0 = -1;
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.clear_trackers()));
    assert!(panic.is_err(), "the comparison panics");
    w.get_mut::<Touchy>(a).unwrap().0 = 1;
    w.clear_trackers();
    w.query::<&mut Touchy>().for_each(|_, t| t.0 = t.0.max(2));
    let changed: Vec<Entity> = w.query::<()>().filter::<Changed<Touchy>>().iter().map(|(e, _)| e).collect();
    assert_eq!(changed, [a], "b was written its own value");
    assert!(!w.tracker::<Touchy>().is_changed(b));
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        agrees_with_the_model,
        the_exact_mode_agrees_with_the_model,
        a_panicking_comparison_leaves_the_type_exact,
        a_whole_loop_counts_the_rows_it_changed_in_handle_order,
        changes_inside_or_are_refused,
        tracking_starts_with_what_is_there,
        clear_forgets_every_value,
    }

    panics_on_every_backend! {
        untracked_types_are_refused => "Hp is not tracked; call world.track::<",
    }
}
