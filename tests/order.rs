//! The order of a stage's systems: constraints decide it whatever the order added; every order they allow gives
//! the same world; cycles, unknown labels, constraints across stages the wrong way and unordered pairs whose order
//! matters are refused with messages that name the systems.

use swarm::app::{App, Commands, Local, OrderError, OrderSystems, Query, Res, ResMut, Stage};
use swarm::ecs::World;

/// Position, velocity and age (plain values); health, which the skip test tracks exactly.
struct Pos(i64);
struct Vel(i64);
struct Age(i64);
#[derive(Clone, PartialEq)]
struct Hp(i64);
#[derive(Default)]
struct Seen(Vec<i64>);

fn drift(mut q: Query<(&mut Pos, &Vel)>) {
    q.for_each(|_, (p, v)| p.0 += v.0);
}
fn heal(mut q: Query<&mut Hp>) {
    q.for_each(|_, h| h.0 = (h.0 + 3).min(40));
}
fn age(mut q: Query<&mut Age>) {
    q.for_each(|_, a| a.0 += 1);
}
/// Reads what `drift` and `heal` write: it must run after both.
fn sparks(mut q: Query<(&Pos, &Hp)>, mut seen: ResMut<Seen>) {
    let mut sum = 0;
    q.for_each(|_, (p, h)| sum += p.0 * h.0);
    seen.0.push(sum);
}
/// Reads what `age` writes and records commands.
fn cull(q: Query<&Age>, mut commands: Commands) {
    for (e, a) in q.iter() {
        if a.0 % 13 == 0 {
            commands.despawn(e);
        }
    }
}

fn world() -> World {
    let mut world = World::new();
    world.set_piece_rows(8);
    for i in 0..200i64 {
        world.spawn((Pos(i), Vel(i % 5 - 2), Hp(i % 17), Age(i % 11))).unwrap();
    }
    world.insert_resource(Seen::default());
    world
}

/// One entity's handle, position, health and age.
type Row = (u64, i64, i64, i64);

/// Every state a frame leaves: positions, health, ages and the sums seen.
fn contents(world: &World) -> (Vec<Row>, Vec<i64>) {
    let mut rows = Vec::new();
    world.query_ref::<(&Pos, &Hp, &Age)>().for_each(|e, (p, h, a)| rows.push((e.to_bits(), p.0, h.0, a.0)));
    rows.sort_unstable();
    (rows, world.resource::<Seen>().0.clone())
}

/// Adds the five systems in the order `order` names them (0 drift, 1 heal, 2 age, 3 sparks, 4 cull), each with
/// the same constraints: sparks after drift and heal, cull after age.
fn add(app: &mut App, order: &[usize]) {
    for &k in order {
        match k {
            0 => app.add_systems(Stage::Update, drift),
            1 => app.add_systems(Stage::Update, heal),
            2 => app.add_systems(Stage::Update, age),
            3 => app.add_systems(Stage::Update, sparks.after(drift).after(heal)),
            _ => app.add_systems(Stage::Update, cull.after(age)),
        };
    }
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for rest in permutations(n - 1) {
        for at in 0..=rest.len() {
            let mut p = rest.clone();
            p.insert(at, n - 1);
            out.push(p);
        }
    }
    out
}

#[test]
fn every_order_the_constraints_allow_gives_the_same_world() {
    let mut orders = std::collections::BTreeSet::new();
    let mut reference = None;
    for added in permutations(5) {
        for threads in [1, 2] {
            let mut app = App::with_world(world());
            app.set_threads(threads);
            add(&mut app, &added);
            app.check_order().unwrap();
            let names: Vec<&str> = app.system_names(Stage::Update).collect();
            // The constraints hold; otherwise the order added.
            let at = |name: &str| names.iter().position(|&n| n == name).unwrap();
            assert!(at("sparks") > at("drift") && at("sparks") > at("heal") && at("cull") > at("age"), "{names:?}");
            orders.insert(names.iter().map(|n| n.to_string()).collect::<Vec<_>>());
            for _ in 0..20 {
                app.update();
            }
            let now = contents(&app.world);
            match &reference {
                None => reference = Some(now),
                Some(reference) => assert_eq!(&now, reference, "run order {names:?}, {threads} threads"),
            }
        }
    }
    // 5! / (3 * 2) orders the two constraints allow, each one reached.
    assert_eq!(orders.len(), 20);
}

#[test]
fn a_cycle_is_refused_naming_its_systems() {
    let mut app = App::with_world(world());
    app.add_systems(Stage::Update, (drift.after(sparks), sparks.after(heal), heal.after(drift)));
    let error = app.check_order().unwrap_err();
    assert!(matches!(&error, OrderError::Cycle(names) if names.len() == 3), "{error:?}");
    let message = error.to_string();
    for name in ["drift", "heal", "sparks"] {
        assert!(message.contains(&format!("`{name}`")), "{message}");
    }
    // update panics with the same message.
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| app.update())).unwrap_err();
    assert_eq!(panic.downcast_ref::<String>(), Some(&message));
}

#[test]
fn an_unknown_label_and_a_constraint_against_the_stage_order_are_refused() {
    let mut app = App::with_world(world());
    app.add_systems(Stage::Update, drift.after("steering"));
    let error = app.check_order().unwrap_err();
    assert_eq!(error, OrderError::Unknown { system: "drift", label: "steering" });
    assert!(error.to_string().contains("`steering`, which no system or group is named"));

    // After a system of an earlier stage: so already. After one of a later stage: refused.
    let mut app = App::with_world(world());
    app.add_systems(Stage::PreUpdate, age).add_systems(Stage::Update, drift.after(age));
    app.check_order().unwrap();
    app.add_systems(Stage::PostUpdate, heal).add_systems(Stage::Update, sparks.after(heal).after(drift));
    let error = app.check_order().unwrap_err();
    assert!(matches!(error, OrderError::WrongStage { system: "sparks", label: "heal", .. }), "{error:?}");
    assert!(error.to_string().contains("stage Update) must run after `heal`, which is in stage PostUpdate"));
}

#[test]
fn two_systems_whose_order_matters_must_be_ordered() {
    // Written and read: refused, naming both and the type.
    let mut app = App::with_world(world());
    app.add_systems(Stage::Update, (drift, sparks, heal.before(sparks)));
    let error = app.check_order().unwrap_err();
    assert!(matches!(error, OrderError::Ambiguous { systems: ("drift", "sparks"), .. }), "{error:?}");
    assert!(error.to_string().contains("both touch `Pos`"), "{error}");
    // Both recording commands: refused too (their commands join the buffer in run order).
    fn stamp(q: Query<&Hp>, mut commands: Commands) {
        for (e, _) in q.iter().take(1) {
            commands.insert(e, Vel(0));
        }
    }
    let mut app = App::with_world(world());
    app.add_systems(Stage::Update, (cull, stamp));
    let error = app.check_order().unwrap_err();
    assert!(error.to_string().contains("both record commands"), "{error}");
    // Said to be ambiguous on purpose, or the check turned off: the order added.
    let mut app = App::with_world(world());
    app.add_systems(Stage::Update, (drift, sparks.ambiguous_with(drift), heal.before(sparks)));
    app.check_order().unwrap();
    assert_eq!(app.system_names(Stage::Update).collect::<Vec<_>>(), ["drift", "heal", "sparks"]);
    let mut app = App::with_world(world());
    app.add_systems(Stage::Update, (cull, stamp)).set_ambiguity_check(false);
    app.check_order().unwrap();
    // Systems that share nothing need no order.
    let mut app = App::with_world(world());
    app.add_systems(Stage::Update, (drift, heal, age));
    app.check_order().unwrap();
}

#[test]
fn groups_stay_together_and_are_ordered_as_wholes() {
    fn total(mut q: Query<&Pos>, mut seen: ResMut<Seen>, vel: Res<Speed>) {
        let mut sum = 0;
        q.for_each(|_, p| sum += p.0 * vel.0);
        seen.0.push(sum);
    }
    struct Speed(i64);
    let mut app = App::with_world(world());
    app.insert_resource(Speed(2));
    // "report" is added first but runs after the group "moving", whose systems were added around it.
    app.add_group(Stage::Update, "report", (sparks, total).chain().after("moving"))
        .add_group(Stage::Update, "moving", drift)
        .add_systems(Stage::Update, age)
        .add_group(Stage::Update, "moving", heal.before(drift));
    app.check_order().unwrap();
    assert_eq!(app.system_names(Stage::Update).collect::<Vec<_>>(), ["heal", "drift", "sparks", "total", "age"]);
    let moving = app.groups().find(|g| g.name == "moving").unwrap();
    assert_eq!(moving.systems, ["heal", "drift"]);
}

#[test]
fn run_conditions_are_read_once_at_the_start_of_the_stage_and_combine() {
    use swarm::app::{any_with, resource_exists, resource_matches, Condition};
    #[derive(Default)]
    struct Gate(bool);
    #[derive(Default)]
    struct Runs(Vec<&'static str>);
    fn open(mut gate: ResMut<Gate>, mut runs: ResMut<Runs>) {
        gate.0 = true;
        runs.0.push("open");
    }
    fn gated(mut runs: ResMut<Runs>) {
        runs.0.push("gated");
    }
    fn never(mut runs: ResMut<Runs>) {
        runs.0.push("never");
    }
    fn either(mut runs: ResMut<Runs>) {
        runs.0.push("either");
    }
    let mut app = App::with_world(world());
    app.insert_resource(Gate::default()).insert_resource(Runs::default());
    let is_open = || resource_matches(|g: &Gate| g.0);
    app.add_systems(
        Stage::Update,
        (
            open,
            // `open` runs first in the frame, but the condition was read before it: not this frame, the next.
            gated.run_if(is_open()),
            never.run_if(is_open().and(!any_with::<Pos>())),
            either.run_if(is_open().or(resource_exists::<Seen>())),
        )
            .chain(),
    );
    app.update();
    assert_eq!(app.world.resource::<Runs>().0, ["open", "either"]);
    app.update();
    assert_eq!(app.world.resource::<Runs>().0, ["open", "either", "open", "gated", "either"]);
    let closed = Condition::new(|w: &World| w.is_empty());
    assert!(!closed.holds(&app.world));
}

#[test]
fn a_system_skipped_by_its_condition_sees_every_change_since_it_last_ran() {
    use swarm::app::resource_matches;
    use swarm::ecs::Changed;
    struct On(bool);
    #[derive(Default)]
    struct Counts(Vec<usize>);
    fn poke(mut q: Query<&mut Hp>, mut frame: Local<u32>) {
        q.for_each(|e, h| {
            if e.index() % 10 == *frame % 10 {
                h.0 += 1;
            }
        });
        *frame += 1;
    }
    fn watch(mut q: Query<&Hp, Changed<Hp>>, mut counts: ResMut<Counts>) {
        let mut n = 0;
        q.for_each(|_, _| n += 1);
        counts.0.push(n);
    }
    let mut app = App::with_world(world());
    app.world.track_exact::<Hp>();
    app.insert_resource(On(true)).insert_resource(Counts::default());
    app.add_systems(Stage::Update, (poke, watch.run_if(resource_matches(|on: &On| on.0))).chain());
    app.update();
    app.world.resource_mut::<On>().0 = false;
    app.update();
    app.update();
    app.world.resource_mut::<On>().0 = true;
    app.update();
    // The first run sees every value added; after two skipped frames, the pokes of three frames (20 entities
    // each) count.
    assert_eq!(app.world.resource::<Counts>().0, [200, 60]);
}
