//! The control panel (buttons drawn with macroquad's shapes and text) and the keyboard: both produce
//! [`Action`]s for the window to apply.

use super::sprites::DrawOrder;
use macroquad::prelude::*;
use std::fmt::Write;
use std::sync::LazyLock;
use swarm::ecs::Backend;

/// Something the user asked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Switch the running world to this backend.
    Backend(Backend),
    /// Change the target population by this many fighters.
    Population(i64),
    /// Pause or resume.
    TogglePause,
    /// Advance one simulation frame (while paused).
    Step,
    /// Restart the run from its seed.
    Reset,
    /// Start the next round now (the `battle` scenario).
    NextRound,
    /// Show or hide the overlay.
    ToggleOverlay,
    /// Show or hide the legend.
    ToggleLegend,
    /// Cycle the draw order (storage order, y-sort by each method).
    CycleOrder,
    /// Align the velocity and health pools to the position pool every 30 frames, or stop.
    ToggleAlign,
    /// Run the schedule on the next thread count (1, 2, ... up to the cores, then 1 again).
    CycleThreads,
    /// Spawn a burst of fighters at this arena point.
    Burst(Vec2),
    /// Save the world to the quick slot.
    QuickSave,
    /// Load the world from the quick slot.
    QuickLoad,
    /// Open the compare view (a snapshot of now, run on every backend), or close it.
    Compare,
    /// Take the world digest now (it walks the whole world, so the overlay does it only when asked).
    Digest,
    /// Turn the named group of systems on (true) or off.
    Group(&'static str, bool),
    /// Step the world back one frame (the key is held: one per drawn frame).
    Rewind,
    /// End a rewind: back to the live frame at once.
    ToLive,
}

/// How many entries the key line has.
const KEYS_LEN: usize = 20;

/// The keys and what they do, in the key line at the bottom (and the README).
pub static KEYS: LazyLock<[(String, &'static str); KEYS_LEN]> = LazyLock::new(|| {
    [
        (format!("1-{}/Tab", Backend::ALL.len()), "backend"),
        ("Space".into(), "pause"),
        (".".into(), "step"),
        ("R".into(), "reset"),
        ("N".into(), "next round"),
        ("O".into(), "overlay"),
        ("L".into(), "legend"),
        ("Y".into(), "draw order"),
        ("A".into(), "align"),
        ("T".into(), "threads"),
        ("+/-".into(), "population"),
        ("click".into(), "burst (stress: hold, waves) / group on-off"),
        ("wheel".into(), "zoom"),
        ("drag".into(), "pan"),
        ("Home".into(), "fit"),
        ("C".into(), "compare"),
        ("D".into(), "digest"),
        ("F5/F9".into(), "save/load"),
        ("hold Backspace/End".into(), "rewind/live"),
        ("Esc".into(), "quit"),
    ]
});

/// The key line's text size and line height.
const KEY_SIZE: u16 = 18;
const KEY_LINE: f32 = 20.0;

/// The top of the key strip at the bottom of the window (nothing drawn).
pub fn keys_top() -> f32 {
    keys_layout().0
}

/// The key strip's top, each key's and text's width, and a space's width.
fn keys_layout() -> (f32, [(f32, f32); KEYS_LEN], f32) {
    let measure = |s: &str| measure_text(s, None, KEY_SIZE, 1.0).width;
    let space = measure(" ");
    let widths: [(f32, f32); KEYS_LEN] = std::array::from_fn(|i| (measure(&KEYS[i].0), measure(KEYS[i].1)));
    let items = widths.iter().map(|&(key, what)| key + space + what);
    let lines = super::layout::flow(items, screen_width() - 20.0, 2.0 * space + 4.0, |_, _, _| {});
    (screen_height() - (lines as f32 * KEY_LINE + 10.0), widths, space)
}

/// Draws the key line at the bottom of the window on a dark strip (so sprites under it do not hide letters),
/// flowing onto a second line when the window is narrow; returns the strip's top. Each text is measured once.
pub fn draw_keys() -> f32 {
    let (top, widths, space) = keys_layout();
    let items = || widths.iter().map(|&(key, what)| key + space + what);
    let (room, gap) = (screen_width() - 20.0, 2.0 * space + 4.0);
    draw_rectangle(0.0, top, screen_width(), screen_height() - top, Color::new(0.02, 0.03, 0.06, 0.92));
    super::layout::flow(items(), room, gap, |i, x, line| {
        let (key, what) = &KEYS[i];
        let y = top + 5.0 + KEY_LINE * (line as f32 + 1.0) - 5.0;
        draw_text(key, 10.0 + x, y, KEY_SIZE as f32, Color::new(1.0, 0.85, 0.5, 1.0));
        draw_text(what, 10.0 + x + widths[i].0 + space, y, KEY_SIZE as f32, Color::new(0.75, 0.8, 0.9, 1.0));
    });
    top
}

/// The number keys that pick a backend, in [`Backend::ALL`]'s order.
const NUMBER_KEYS: [KeyCode; 9] = [
    KeyCode::Key1,
    KeyCode::Key2,
    KeyCode::Key3,
    KeyCode::Key4,
    KeyCode::Key5,
    KeyCode::Key6,
    KeyCode::Key7,
    KeyCode::Key8,
    KeyCode::Key9,
];
const _: () = assert!(Backend::ALL.len() <= NUMBER_KEYS.len(), "every backend needs a number key");

/// What the panel shows besides its buttons.
pub struct PanelState {
    /// Current backend.
    pub backend: Backend,
    /// Target population.
    pub population: u32,
    /// Paused?
    pub paused: bool,
    /// Overlay shown?
    pub overlay: bool,
    /// Legend shown?
    pub legend: bool,
    /// Draw order.
    pub order: DrawOrder,
    /// Pool alignment on?
    pub align: bool,
    /// Compare view open?
    pub compare: bool,
    /// CPU ms of the last overlay + panel draw.
    pub ui_ms: f32,
}

/// Width of the panel in pixels.
pub const WIDTH: f32 = 250.0;
/// The panel's height: its fixed rows plus one button row (30 px) per backend.
pub const HEIGHT: f32 = 326.0 + 30.0 * Backend::ALL.len() as f32;
const MARGIN: f32 = 8.0;

/// The panel's top left corner.
pub fn origin() -> Vec2 {
    vec2(screen_width() - WIDTH - MARGIN, MARGIN)
}

/// Whether a screen point is over the panel (clicks there belong to its buttons, not to bursts).
pub fn contains(point: Vec2) -> bool {
    Rect::new(origin().x, origin().y, WIDTH, HEIGHT).contains(point)
}

/// Button labels of the backends ("1  sparse set", ...), made once so drawing the panel formats nothing for them.
static BACKEND_LABELS: LazyLock<[String; Backend::ALL.len()]> =
    LazyLock::new(|| std::array::from_fn(|i| format!("{}  {}", i + 1, Backend::ALL[i].label())));

/// The heading over the backend buttons.
static BACKEND_HEADING: LazyLock<String> =
    LazyLock::new(|| format!("storage backend  (1-{}, Tab)", Backend::ALL.len()));

const TEXT: Color = Color::new(0.92, 0.94, 0.98, 1.0);
const DIM: Color = Color::new(0.62, 0.68, 0.78, 1.0);

/// An immediate-mode button drawn with the rest of the frame (so screenshots show it), its key at the right: returns
/// whether it was clicked this frame.
fn button(rect: Rect, label: &str, key: &str, selected: bool) -> bool {
    let hover = rect.contains(mouse_position().into());
    let fill = match (selected, hover) {
        (true, _) => Color::new(0.85, 0.55, 0.18, 0.95),
        (false, true) => Color::new(0.25, 0.30, 0.42, 0.95),
        (false, false) => Color::new(0.14, 0.17, 0.25, 0.95),
    };
    draw_rectangle(rect.x, rect.y, rect.w, rect.h, fill);
    draw_rectangle_lines(rect.x, rect.y, rect.w, rect.h, 1.0, Color::new(0.4, 0.45, 0.6, 0.8));
    let color = if selected { Color::new(0.05, 0.05, 0.08, 1.0) } else { TEXT };
    let key_w = if key.is_empty() { 0.0 } else { measure_text(key, None, 16, 1.0).width };
    if !key.is_empty() {
        let key_colour = if selected { Color::new(0.2, 0.12, 0.02, 1.0) } else { Color::new(1.0, 0.85, 0.5, 0.9) };
        draw_text(key, rect.x + rect.w - 7.0 - key_w, rect.y + rect.h / 2.0 + 5.0, 16.0, key_colour);
    }
    let room = rect.w - 16.0 - if key.is_empty() { 0.0 } else { key_w + 6.0 };
    super::overlay::fitted(label, rect.x + 8.0, rect.y + rect.h / 2.0 + 6.0, room, 20, color);
    hover && is_mouse_button_pressed(MouseButton::Left)
}

/// Draws the panel at the top right; pushes the actions of clicked buttons. `text` is a reused buffer.
pub fn draw(state: &PanelState, actions: &mut Vec<Action>, text: &mut String) {
    let Vec2 { x, y: top } = origin();
    draw_rectangle(x, top, WIDTH, HEIGHT, Color::new(0.02, 0.03, 0.06, 0.82));
    let (x, w) = (x + 10.0, WIDTH - 20.0);
    let mut y = top + 22.0;
    draw_text(BACKEND_HEADING.as_str(), x, y, 20.0, DIM);
    y += 8.0;
    for (backend, label) in Backend::ALL.into_iter().zip(BACKEND_LABELS.iter()) {
        if button(Rect::new(x, y, w, 26.0), label, "", backend == state.backend) {
            actions.push(Action::Backend(backend));
        }
        y += 30.0;
    }
    y += 18.0;
    text.clear();
    let _ = write!(text, "population {}  (+/-)", state.population);
    draw_text(text.as_str(), x, y, 20.0, DIM);
    y += 8.0;
    let quarter = (w - 12.0) / 4.0;
    for (k, (label, delta)) in [("-1k", -1000), ("-100", -100), ("+100", 100), ("+1k", 1000)].into_iter().enumerate() {
        if button(Rect::new(x + k as f32 * (quarter + 4.0), y, quarter, 26.0), label, "", false) {
            actions.push(Action::Population(delta));
        }
    }
    y += 36.0;
    let half = (w - 6.0) / 2.0;
    let row = [
        (if state.paused { "resume" } else { "pause" }, "Space", state.paused, Action::TogglePause),
        ("step", ".", false, Action::Step),
        ("reset", "R", false, Action::Reset),
        ("digest", "D", false, Action::Digest),
        ("overlay", "O", state.overlay, Action::ToggleOverlay),
        ("legend", "L", state.legend, Action::ToggleLegend),
    ];
    for (i, (label, key, selected, action)) in row.into_iter().enumerate() {
        let bx = if i % 2 == 0 { x } else { x + half + 6.0 };
        if button(Rect::new(bx, y, half, 26.0), label, key, selected) {
            actions.push(action);
        }
        if i % 2 == 1 {
            y += 30.0;
        }
    }
    y += 20.0;
    draw_text("draw order (sparse set)", x, y, 20.0, DIM);
    y += 8.0;
    if button(Rect::new(x, y, w, 26.0), state.order.label(), "Y", state.order != DrawOrder::Storage) {
        actions.push(Action::CycleOrder);
    }
    y += 30.0;
    let align = if state.align { "align pools: every 30" } else { "align pools: off" };
    if button(Rect::new(x, y, w, 26.0), align, "A", state.align) {
        actions.push(Action::ToggleAlign);
    }
    y += 30.0;
    if button(Rect::new(x, y, w, 26.0), "compare backends", "C", state.compare) {
        actions.push(Action::Compare);
    }
    y += 44.0;
    text.clear();
    let _ = write!(text, "overlay+panel {:.3} ms CPU", state.ui_ms);
    draw_text(text.as_str(), x, y, 20.0, if state.ui_ms < 1.0 { DIM } else { Color::new(1.0, 0.5, 0.4, 1.0) });
}

/// Reads the keyboard and the mouse. `current` is the backend in use (Tab picks the next); `to_arena` maps a
/// screen point to the arena; `over_ui` says whether the pointer is over the panel (clicks there are the panel's, not bursts).
pub fn read_input(current: Backend, to_arena: impl Fn(Vec2) -> Vec2, over_ui: bool, actions: &mut Vec<Action>) {
    for (key, backend) in NUMBER_KEYS.into_iter().zip(Backend::ALL) {
        if is_key_pressed(key) {
            actions.push(Action::Backend(backend));
        }
    }
    let pressed = [
        (KeyCode::Space, Action::TogglePause),
        (KeyCode::Period, Action::Step),
        (KeyCode::R, Action::Reset),
        (KeyCode::N, Action::NextRound),
        (KeyCode::O, Action::ToggleOverlay),
        (KeyCode::L, Action::ToggleLegend),
        (KeyCode::Y, Action::CycleOrder),
        (KeyCode::A, Action::ToggleAlign),
        (KeyCode::T, Action::CycleThreads),
        (KeyCode::Equal, Action::Population(1000)),
        (KeyCode::KpAdd, Action::Population(1000)),
        (KeyCode::Minus, Action::Population(-1000)),
        (KeyCode::KpSubtract, Action::Population(-1000)),
        (KeyCode::F5, Action::QuickSave),
        (KeyCode::F9, Action::QuickLoad),
        (KeyCode::C, Action::Compare),
        (KeyCode::D, Action::Digest),
    ];
    for (key, action) in pressed {
        if is_key_pressed(key) {
            actions.push(action);
        }
    }
    if is_key_pressed(KeyCode::Tab) {
        actions.push(Action::Backend(current.next()));
    }
    if is_key_down(KeyCode::Backspace) {
        actions.push(Action::Rewind);
    }
    if is_key_pressed(KeyCode::End) {
        actions.push(Action::ToLive);
    }
    if is_mouse_button_pressed(MouseButton::Left) && !over_ui {
        actions.push(Action::Burst(to_arena(mouse_position().into())));
    }
}
