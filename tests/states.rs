//! States: transitions at the frame's start, `OnExit` then `OnEnter`, their commands applied before `PreUpdate`;
//! several transitions in one frame in a defined order, bounded; `in_state`; a state saved and loaded with no
//! transition of its own; clear errors for a state never initialised and for constraints that leave a transition.

use swarm::app::state::MAX_TRANSITIONS;
use swarm::app::{
    in_state, App, Commands, NextState, OnEnter, OnExit, OrderError, OrderSystems, Query, ResMut, Stage, State,
};
use swarm::ecs::{Format, SnapshotSchema, World};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
enum Phase {
    Menu,
    Playing,
    Over,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Weather {
    Sun,
    Rain,
}

#[derive(Default)]
struct Log(Vec<String>);

fn log(world: &mut World, line: impl Into<String>) {
    world.resource_mut::<Log>().0.push(line.into());
}

struct Marker;

fn new_app() -> App {
    let mut app = App::new();
    app.set_threads(1).insert_resource(Log::default()).init_state(Phase::Menu);
    app
}

fn lines(app: &App) -> Vec<String> {
    app.world.resource::<Log>().0.clone()
}

#[test]
fn the_first_frame_enters_the_initial_state_once_and_transitions_run_exit_then_enter() {
    let mut app = new_app();
    app.add_systems(Stage::Startup, |w: &mut World| log(w, "startup"));
    app.add_systems(OnEnter(Phase::Menu), |w: &mut World| log(w, format!("enter menu {:?}", state(w))));
    app.add_systems(OnExit(Phase::Menu), |w: &mut World| log(w, format!("exit menu {:?}", state(w))));
    app.add_systems(OnEnter(Phase::Playing), |mut commands: Commands| {
        commands.spawn((Marker,)).unwrap();
    });
    // Sees the entity `OnEnter(Playing)` spawned in the same frame: its commands are applied before PreUpdate.
    app.add_systems(Stage::PreUpdate, |q: Query<&Marker>, mut log: ResMut<Log>| {
        log.0.push(format!("pre {}", q.iter().count()))
    });
    app.update();
    app.update();
    assert_eq!(lines(&app), ["startup", "enter menu Menu", "pre 0", "pre 0"]);
    app.world.resource_mut::<NextState<Phase>>().set(Phase::Playing);
    app.update();
    assert_eq!(&lines(&app)[4..], ["exit menu Menu", "pre 1"]);
    assert_eq!(state(&app.world), Phase::Playing);
    assert_eq!(app.world.resource::<NextState<Phase>>().pending(), None);
}

fn state(world: &World) -> Phase {
    world.resource::<State<Phase>>().get()
}

#[test]
fn asking_for_the_current_value_leaves_and_enters_it_again() {
    let mut app = new_app();
    app.add_systems(OnEnter(Phase::Menu), |w: &mut World| log(w, "enter"));
    app.add_systems(OnExit(Phase::Menu), |w: &mut World| log(w, "exit"));
    app.update();
    app.world.resource_mut::<NextState<Phase>>().set(Phase::Menu);
    app.update();
    assert_eq!(lines(&app), ["enter", "exit", "enter"]);
}

#[test]
fn in_state_runs_a_system_only_in_that_state() {
    #[derive(Default)]
    struct Ticks(u32);
    let mut app = new_app();
    app.insert_resource(Ticks::default());
    app.add_systems(Stage::Update, (|mut t: ResMut<Ticks>| t.0 += 1).run_if(in_state(Phase::Playing)));
    app.update();
    app.world.resource_mut::<NextState<Phase>>().set(Phase::Playing);
    app.update();
    app.update();
    app.world.resource_mut::<NextState<Phase>>().set(Phase::Over);
    app.update();
    assert_eq!(app.world.resource::<Ticks>().0, 2);
}

#[test]
fn transitions_asked_for_by_transitions_run_in_the_same_frame_round_by_round() {
    let mut app = new_app();
    app.init_state(Weather::Sun);
    // Entering Playing asks for Over and for Rain; entering Over asks for Menu. Per round, Phase (initialised
    // first) then Weather take one transition each.
    app.add_systems(OnEnter(Phase::Playing), |w: &mut World| {
        log(w, "enter playing");
        w.resource_mut::<NextState<Phase>>().set(Phase::Over);
        w.resource_mut::<NextState<Weather>>().set(Weather::Rain);
    });
    app.add_systems(OnEnter(Phase::Over), |w: &mut World| {
        log(w, "enter over");
        w.resource_mut::<NextState<Phase>>().set(Phase::Menu);
    });
    app.add_systems(OnEnter(Phase::Menu), |w: &mut World| log(w, "enter menu"));
    app.add_systems(OnEnter(Weather::Rain), |w: &mut World| log(w, "enter rain"));
    app.add_systems(OnEnter(Weather::Sun), |w: &mut World| log(w, "enter sun"));
    app.update();
    assert_eq!(lines(&app), ["enter menu", "enter sun"]);
    app.world.resource_mut::<NextState<Phase>>().set(Phase::Playing);
    app.update();
    // Round 1: Phase to Playing (which asks for Over and Rain), Weather to Rain; round 2: Over; round 3: Menu.
    assert_eq!(&lines(&app)[2..], ["enter playing", "enter rain", "enter over", "enter menu"]);
    assert_eq!(state(&app.world), Phase::Menu);
    assert_eq!(app.world.resource::<State<Weather>>().get(), Weather::Rain);
}

#[test]
fn a_frame_runs_at_most_the_bound_of_transitions_and_the_rest_waits() {
    #[derive(Default)]
    struct Entered(Vec<u64>);
    fn bounce(world: &mut World, to: Phase) {
        let frame = world.resource::<Frame>().0;
        world.resource_mut::<Entered>().0.push(frame);
        world.resource_mut::<NextState<Phase>>().set(to);
    }
    struct Frame(u64);
    let mut app = new_app();
    app.insert_resource(Entered::default()).insert_resource(Frame(0));
    app.add_systems(Stage::Last, |mut f: ResMut<Frame>| f.0 += 1);
    // Playing and Over ask for each other for ever.
    app.add_systems(OnEnter(Phase::Playing), |w: &mut World| bounce(w, Phase::Over));
    app.add_systems(OnEnter(Phase::Over), |w: &mut World| bounce(w, Phase::Playing));
    app.update();
    app.world.resource_mut::<NextState<Phase>>().set(Phase::Playing);
    app.update();
    app.update();
    let entered = &app.world.resource::<Entered>().0;
    assert_eq!(entered.len(), 2 * MAX_TRANSITIONS, "{entered:?}");
    assert!(entered[..MAX_TRANSITIONS].iter().all(|&f| f == 1) && entered[MAX_TRANSITIONS..].iter().all(|&f| f == 2));
    // The request left at the bound waits, and the frame's stages ran.
    assert!(app.world.resource::<NextState<Phase>>().pending().is_some());
    assert_eq!(app.world.resource::<Frame>().0, 3);
}

#[test]
fn a_saved_state_loads_with_its_request_and_runs_no_transition_on_load() {
    let schema = || SnapshotSchema::new().resource::<State<Phase>>("phase").resource::<NextState<Phase>>("next phase");
    let build = |world: World| {
        let mut app = App::with_world(world);
        app.set_threads(1).insert_resource(Log::default()).init_state(Phase::Menu);
        app.add_systems(OnEnter(Phase::Menu), |w: &mut World| log(w, "enter menu"));
        app.add_systems(OnEnter(Phase::Playing), |w: &mut World| log(w, "enter playing"));
        app.add_systems(OnExit(Phase::Playing), |w: &mut World| log(w, "exit playing"));
        app
    };
    let mut app = build(World::new());
    app.update();
    app.world.resource_mut::<NextState<Phase>>().set(Phase::Playing);
    app.update();
    app.world.resource_mut::<NextState<Phase>>().set(Phase::Over);
    for format in [Format::Binary, Format::Json] {
        let bytes = schema().save(&app.world, format).unwrap();
        let mut loaded = build(World::new());
        schema().load_into(&mut loaded.world, &bytes, None).unwrap();
        loaded.world.insert_resource(Log::default());
        assert_eq!(state(&loaded.world), Phase::Playing);
        loaded.update();
        // Playing was entered before the save: the load does not enter it (or Menu) again; the request goes on.
        assert_eq!(lines(&loaded), ["exit playing"], "{format:?}");
        assert_eq!(state(&loaded.world), Phase::Over);
    }
}

#[test]
fn a_panicking_on_exit_leaves_the_state_where_it_was() {
    let mut app = new_app();
    app.add_systems(OnExit(Phase::Menu), |w: &mut World| {
        if w.contains_resource::<Marker>() {
            panic!("no way out");
        }
    });
    app.add_systems(OnEnter(Phase::Playing), |w: &mut World| log(w, "enter playing"));
    app.update();
    app.insert_resource(Marker);
    app.world.resource_mut::<NextState<Phase>>().set(Phase::Playing);
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| app.update())).unwrap_err();
    assert!(panic.downcast_ref::<String>().is_some_and(|m| m.contains("no way out")));
    assert_eq!(state(&app.world), Phase::Menu);
    assert_eq!(app.world.resource::<NextState<Phase>>().pending(), None, "the request is withdrawn");
    app.world.remove_resource::<Marker>();
    app.world.resource_mut::<NextState<Phase>>().set(Phase::Playing);
    app.update();
    assert_eq!(lines(&app), ["enter playing"]);
}

#[test]
fn transition_systems_without_a_state_or_ordered_against_a_stage_are_refused() {
    fn greet(mut log: ResMut<Log>) {
        log.0.push("hi".into());
    }
    let mut app = App::new();
    app.insert_resource(Log::default()).add_systems(OnEnter(Weather::Rain), greet);
    let error = app.check_order().unwrap_err();
    assert!(matches!(error, OrderError::NoState { system: "greet", .. }), "{error:?}");
    assert!(error.to_string().contains("OnEnter(Weather::Rain)"), "{error}");

    fn steer(mut log: ResMut<Log>) {
        log.0.push("steer".into());
    }
    let mut app = new_app();
    app.add_systems(Stage::Update, steer).add_systems(OnEnter(Phase::Over), greet.after(steer));
    let error = app.check_order().unwrap_err();
    assert!(matches!(error, OrderError::WrongStage { system: "greet", label: "steer", .. }), "{error:?}");
    assert!(error.to_string().contains("OnEnter(Phase::Over)"), "{error}");
}
