//! States: a value of a type of the game's choosing (playing, paused, a round that is over) that decides which
//! systems run, with systems that run on entering and leaving each value.
//!
//! [`App::init_state`](super::App::init_state) puts two resources in the world: [`State<S>`], the current value (read-only: systems ask it,
//! [`in_state`] tests it), and [`NextState<S>`], where anyone (a system, a handler, the code between frames) asks
//! for a transition. Transitions happen at one point of the frame: at its start, after `Startup` on the first
//! frame and before `PreUpdate`. There, for each state type in the order initialised, a pending request runs the
//! systems added to [`OnExit`] of the old value, makes the new value current, then runs those of [`OnEnter`] of the
//! new one; the commands each of them records are applied right after it. Those systems may ask for another
//! transition (of any state type): the app goes round the state types again, one transition per type per round,
//! until nothing is pending or [`MAX_TRANSITIONS`] have run in the frame; a request left then waits for the next
//! frame's start. Asking for the current value leaves it and enters it again (a restart).
//!
//! The initial value is entered at the first frame's transition point ([`OnEnter`] of it runs, no [`OnExit`]).
//! Both resources are plain data: a snapshot that saves them (the app's schema names them) brings a world back in
//! the same state with the same pending request, and loading one runs no transition of its own.
//!
//! ```
//! use swarm::app::{in_state, App, NextState, OnEnter, OrderSystems, ResMut, Stage, State};
//! #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
//! enum Phase { Playing, Over }
//! #[derive(Default)]
//! struct Score { ticks: u32, rounds: u32 }
//! fn tick(mut score: ResMut<Score>, mut next: ResMut<NextState<Phase>>) {
//!     score.ticks += 1;
//!     if score.ticks % 3 == 0 { next.set(Phase::Over) }
//! }
//! fn new_round(mut score: ResMut<Score>, mut next: ResMut<NextState<Phase>>) {
//!     score.rounds += 1;
//!     next.set(Phase::Playing);
//! }
//! let mut app = App::new();
//! app.insert_resource(Score::default()).init_state(Phase::Playing);
//! app.add_systems(Stage::Update, tick.run_if(in_state(Phase::Playing)));
//! app.add_systems(OnEnter(Phase::Over), new_round);
//! for _ in 0..6 {
//!     app.update();
//! }
//! // Frame 3 asked for `Over`: frame 4's start entered it, and then `Playing` again, as `new_round` asked.
//! // Frame 6 asked again: the next frame's start will act on it.
//! assert_eq!(app.world.resource::<State<Phase>>().get(), Phase::Playing);
//! assert_eq!(app.world.resource::<NextState<Phase>>().pending(), Some(Phase::Over));
//! assert_eq!((app.world.resource::<Score>().ticks, app.world.resource::<Score>().rounds), (6, 1));
//! ```

use super::order::{Condition, ScheduleName};
use crate::ecs::World;
use serde::{Deserialize, Serialize};
use std::any::Any;
use std::fmt::Debug;
use std::hash::Hash;

/// The most state transitions (of every type together) one frame's transition point runs; a request past them
/// waits for the next frame.
pub const MAX_TRANSITIONS: usize = 8;

/// What a state can be: a small plain value (usually a field-less enum).
pub trait States: Copy + Eq + Hash + Debug + Send + Sync + 'static {}

impl<T: Copy + Eq + Hash + Debug + Send + Sync + 'static> States for T {}

/// The current value of state `S` (a resource; see the [module](self)). Systems read it; a transition is asked
/// for through [`NextState<S>`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct State<S> {
    current: S,
    /// Whether `current` was entered (its `OnEnter` ran): false from [`App::init_state`] until the first frame.
    ///
    /// [`App::init_state`]: super::App::init_state
    entered: bool,
}

impl<S: States> State<S> {
    /// A state at `value`, entered already if `entered` (for a world built as if it had been running: a snapshot
    /// written before the state existed, say).
    pub fn new(value: S, entered: bool) -> Self {
        Self { current: value, entered }
    }

    /// The current value.
    pub fn get(&self) -> S {
        self.current
    }

    /// Whether the current value was entered (the first frame enters the initial one).
    pub fn entered(&self) -> bool {
        self.entered
    }
}

/// A transition of state `S` asked for (a resource): the next transition point leaves the current value and
/// enters this one. The last request before that point wins.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextState<S>(Option<S>);

impl<S> Default for NextState<S> {
    fn default() -> Self {
        Self(None)
    }
}

impl<S: States> NextState<S> {
    /// Asks for `value` (the current value too: it is left and entered again).
    pub fn set(&mut self, value: S) {
        self.0 = Some(value);
    }

    /// The value asked for, if any.
    pub fn pending(&self) -> Option<S> {
        self.0
    }

    /// Withdraws the request.
    pub fn clear(&mut self) {
        self.0 = None;
    }
}

/// The systems run on entering state value `S` (give it to [`App::add_systems`]).
///
/// [`App::add_systems`]: super::App::add_systems
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OnEnter<S>(pub S);

/// The systems run on leaving state value `S` (give it to [`App::add_systems`]).
///
/// [`App::add_systems`]: super::App::add_systems
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OnExit<S>(pub S);

/// Holds while state `S` is at `value` (false while the world has no `State<S>`).
pub fn in_state<S: States>(value: S) -> Condition {
    Condition::new(move |world| world.get_resource::<State<S>>().is_some_and(|state| state.current == value))
}

/// `S` as errors and the profile name it: the type's last path segment and the value, as `Phase::Over`.
pub(crate) fn describe<S: States>(value: S) -> String {
    let name = std::any::type_name::<S>();
    let short = name.split('<').next().unwrap_or(name).rsplit("::").next().unwrap_or(name);
    format!("{short}::{value:?}")
}

/// What the app keeps per state type: the schedules (as the app's slots) of its values, and the transition in
/// progress.
pub(crate) trait Driver: Send + Sync {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Its schedules (as the app's slots).
    fn slots(&self) -> Box<dyn Iterator<Item = usize> + '_>;
    /// Whether [`App::init_state`](super::App::init_state) was called for it.
    fn initialised(&self) -> bool;
    /// Takes the pending transition, if any: the slots to run on leaving (none for the first entering) and on
    /// entering. The new value becomes current at [`Driver::commit`].
    fn begin(&mut self, world: &mut World) -> Option<(Option<usize>, Option<usize>)>;
    /// Makes the value [`Driver::begin`] took current, entered.
    fn commit(&mut self, world: &mut World);
    /// Forgets the value [`Driver::begin`] took.
    fn abandon(&mut self);
}

/// The [`Driver`] of state type `S`.
pub(crate) struct Slots<S> {
    pub(crate) enter: Vec<(S, usize)>,
    pub(crate) exit: Vec<(S, usize)>,
    pub(crate) initialised: bool,
    going_to: Option<S>,
}

impl<S> Default for Slots<S> {
    fn default() -> Self {
        Self { enter: Vec::new(), exit: Vec::new(), initialised: false, going_to: None }
    }
}

impl<S: States> Slots<S> {
    fn find(list: &[(S, usize)], value: S) -> Option<usize> {
        list.iter().find(|(v, _)| *v == value).map(|&(_, slot)| slot)
    }
}

impl<S: States> Driver for Slots<S> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn slots(&self) -> Box<dyn Iterator<Item = usize> + '_> {
        Box::new(self.enter.iter().chain(&self.exit).map(|&(_, slot)| slot))
    }

    fn initialised(&self) -> bool {
        self.initialised
    }

    fn begin(&mut self, world: &mut World) -> Option<(Option<usize>, Option<usize>)> {
        let state = world.get_resource::<State<S>>()?;
        let (current, entered) = (state.current, state.entered);
        if !entered {
            self.going_to = Some(current);
            return Some((None, Self::find(&self.enter, current)));
        }
        let next = world.get_resource_mut::<NextState<S>>()?.0.take()?;
        self.going_to = Some(next);
        Some((Self::find(&self.exit, current), Self::find(&self.enter, next)))
    }

    fn abandon(&mut self) {
        self.going_to = None;
    }

    fn commit(&mut self, world: &mut World) {
        let value = self.going_to.take().expect("commit follows begin");
        if let Some(state) = world.get_resource_mut::<State<S>>() {
            *state = State { current: value, entered: true };
        }
    }
}

/// The name of a transition schedule.
pub(crate) fn schedule_name<S: States>(value: S, entering: bool) -> ScheduleName {
    match entering {
        true => ScheduleName::Enter(describe(value)),
        false => ScheduleName::Exit(describe(value)),
    }
}
