//! The window: the only code that calls macroquad. It reads the frame time once per frame and hands the
//! simulation whole fixed steps ([`FixedStep`]), draws the world (positions interpolated between the last two
//! steps), the overlay and the panel, and applies the user's actions.

pub mod camera;
pub mod compare;
pub mod layout;
pub mod legend;
pub mod netplay;
pub mod overlay;
pub mod panel;
pub mod quick;
pub mod sprites;
pub mod stress;

use compare::CompareView;
use macroquad::prelude::*;
use overlay::{FrameTimes, Previous, Readout, Tree};
use panel::{Action, PanelState};
use quick::QuickSlot;
use sprites::{DrawCalls, DrawScratch, FieldLayer, Sheet, Sprites, StaleMarkers};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use swarm::app::profile::{Profiler, SpanStat, TraceFile};
use swarm::cli::Cli;
use swarm::ecs::{Backend, Format, World};
use swarm::sim::lifecycle::Hurt;
use swarm::sim::play::{Input, Play, Start, ALIGN_EVERY};
use swarm::sim::recording::Recorder;
use swarm::sim::rewind::{Forward, Rewind};
use swarm::sim::step::{FixedStep, Trail};
use swarm::sim::stress::{RampNext, Waves};
use swarm::sim::{census, digest, snapshot, Scenario, SimConfig, SimStats};

/// Where the textures are: `$SWARM_ASSETS` if set, else `./assets` if present, else the crate's own `assets/`.
fn assets_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SWARM_ASSETS") {
        return PathBuf::from(dir);
    }
    let local = Path::new("assets");
    if local.is_dir() {
        local.to_path_buf()
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("assets")
    }
}

/// The window configuration.
pub fn conf() -> macroquad::conf::Conf {
    let window = Conf {
        window_title: format!("Swarm: one ECS, {} storage layouts", Backend::ALL.len()),
        window_width: 1600,
        window_height: 900,
        window_resizable: true,
        ..Default::default()
    };
    // Draw calls as large as u16 indices allow (macroquad's default holds 833 quads): 100,000 sprites on the
    // atlas take 7 calls instead of 120.
    macroquad::conf::Conf {
        miniquad_conf: window,
        draw_call_vertex_capacity: sprites::CALL_VERTICES,
        draw_call_index_capacity: sprites::CALL_INDICES,
        update_on: None,
        default_filter_mode: FilterMode::Linear,
    }
}

/// The running game. Settings, seed and capacity are the running world's own (its `SimConfig`, `SimRng` and
/// allocator), so after a load they are the loaded world's, and the panel and a reset follow it.
struct Game {
    cli: Cli,
    play: Play,
    profiler: Profiler,
    recorder: Option<Recorder>,
    /// The ring a held Backspace steps back through; `None` once a checkpoint failed (said on screen), and in a
    /// GGRS game.
    rewind: Option<Rewind>,
    /// A GGRS game (`--synctest`, `--p2p`): it runs the frames.
    net: Option<netplay::NetPlay>,
    quick: QuickSlot,
    /// A message on screen, and when it was shown.
    message: Option<(String, Instant)>,
    render_id: u64,
    overlay_id: u64,
    digest_id: u64,
}

impl Game {
    fn new(cli: Cli, start: Start) -> Self {
        let profiler = Profiler::new();
        // `start` was checked before the window opened: a snapshot that fails here is a bug, not bad input.
        let mut play = Play::new(&start, profiler.clone()).unwrap_or_else(|error| {
            eprintln!("swarm: cannot start: {error}");
            std::process::exit(1);
        });
        play.app.set_threads(cli.threads());
        // Registered after the systems and the y-sort, so the overlay lists them last.
        let render_id = profiler.register("render");
        let overlay_id = profiler.register("overlay+panel");
        let digest_id = profiler.register("digest (on demand)");
        let net = netplay::NetPlay::start(&cli, &play.app).unwrap_or_else(|(error, status)| {
            eprintln!("swarm: {error}");
            std::process::exit(status.into());
        });
        let recorder = cli.record.as_ref().map(|path| {
            Recorder::create(path, &start).unwrap_or_else(|error| {
                eprintln!("swarm: --record: {error}");
                std::process::exit(1);
            })
        });
        let mut game = Self {
            cli,
            play,
            profiler,
            recorder,
            rewind: net.is_none().then(Rewind::new),
            net,
            quick: QuickSlot::new(quick::path()),
            message: None,
            render_id,
            overlay_id,
            digest_id,
        };
        game.keep_rewinding(|rewind, play| rewind.after_frame(play));
        game
    }

    /// Runs `step` on the rewind's ring; a failure turns rewinding off, and says why.
    fn keep_rewinding(&mut self, step: impl FnOnce(&mut Rewind, &Play) -> Result<(), swarm::ecs::RollbackError>) {
        if let Some(rewind) = &mut self.rewind {
            if let Err(error) = step(rewind, &self.play) {
                self.rewind = None;
                self.say(format!("rewind off: {error}"));
            }
        }
    }

    /// Runs one frame of the simulation: live, then the rewind's ring; while watching a rewind, the next frame of
    /// its replay (and a word when it reaches the live frame).
    fn advance(&mut self) {
        if let Some(net) = &mut self.net {
            let stopped = net.failed().is_some();
            net.step(&mut self.play.app);
            if let (false, Some((why, _))) = (stopped, net.failed()) {
                eprintln!("swarm: {why}");
            }
            return;
        }
        let Some(rewind) = self.rewind.as_mut().filter(|r| r.watching().is_some()) else {
            self.play.app.update();
            return self.keep_rewinding(|rewind, play| rewind.after_frame(play));
        };
        if let Forward::Caught { frame, matches } = rewind.forward(&mut self.play) {
            self.say(if matches {
                format!("replayed to the live frame {frame}: the digest is the one before the rewind")
            } else {
                format!("replayed to the live frame {frame}: the digest DIFFERS from the one before the rewind")
            });
        }
    }

    /// A held Backspace: one frame back (a word at the oldest frame kept).
    fn rewind_back(&mut self) {
        if self.net.is_some() {
            return self.say("no rewind in a GGRS game: GGRS rolls back on its own".to_string());
        }
        let Some(rewind) = &mut self.rewind else {
            return self.say("rewind is off (a checkpoint failed)".to_string());
        };
        match rewind.back(&mut self.play) {
            Ok(true) => {}
            Ok(false) => {
                let oldest = rewind.oldest().unwrap_or_default();
                self.say(format!("frame {oldest} is as far back as the rewind keeps"));
            }
            Err(error) => {
                self.rewind = None;
                self.say(format!("rewind off: {error}"));
            }
        }
    }

    /// End: back to the live frame at once.
    fn back_to_live(&mut self) {
        let Some(live) = self.rewind.as_ref().and_then(Rewind::watching) else { return };
        let back = self.rewind.as_mut().map(|rewind| rewind.back_to_live(&mut self.play));
        match back {
            Some(Err(error)) => {
                self.rewind = None;
                self.say(format!("rewind off: {error}"));
            }
            _ => self.say(format!("back to the live frame {live}")),
        }
    }

    /// Shows `text` on screen for a moment.
    fn say(&mut self, text: String) {
        self.message = Some((text, Instant::now()));
    }

    /// Applies `input` to the running play and records it. Only a quick load or an unknown group can fail, and then
    /// nothing changed (and nothing is recorded).
    fn input(&mut self, input: Input) -> Result<(), String> {
        if let Some(net) = &mut self.net {
            // Only clicks travel to the other player; what changes no value applies here; nothing is recorded.
            return match input {
                Input::Burst(at) => {
                    net.click(at);
                    Ok(())
                }
                Input::Step if net.allows(&input) => {
                    self.play.paused = true;
                    self.advance();
                    Ok(())
                }
                _ if net.allows(&input) => self.play.apply(&input).map_err(|e| e.to_string()),
                _ => Err(format!("in a GGRS game only clicks go to GGRS: {input} is not applied")),
            };
        }
        if let Some(live) = self.rewind.as_ref().and_then(Rewind::watching) {
            // Watching a rewind: the past replays as it was, and nothing of it is recorded (the recording holds
            // the live run; what is allowed here changes no value).
            if self.rewind.as_ref().is_some_and(|r| r.refuses(&input)) {
                return Err(format!(
                    "watching frame {} again: {input} waits for the live frame {live} (End: back to it now)",
                    self.play.frame()
                ));
            }
            if input == Input::Step {
                self.play.paused = true;
                self.advance();
                return Ok(());
            }
            return self.play.apply(&input).map_err(|e| e.to_string());
        }
        let at = self.play.frame();
        self.play.apply(&input).map_err(|e| e.to_string())?;
        self.keep_rewinding(|rewind, play| rewind.note(at, &input, play));
        if let Some(recorder) = &mut self.recorder {
            if let Err(error) = recorder.record(at, &input, &self.play) {
                // The run goes on; the recording would no longer replay, so it stops here, and says so.
                eprintln!("swarm: recording stopped: {error}");
                self.say(format!("recording stopped: {error}"));
                self.recorder = None;
            }
        }
        Ok(())
    }

    fn quick_save(&mut self) {
        let world = &self.play.app.world;
        let message = match snapshot::save(world, Format::Binary) {
            Ok(bytes) => self.quick.save(bytes, world.resource::<SimStats>().frames),
            Err(error) => format!("quick save failed: {error}"),
        };
        self.say(message);
    }

    /// Loads the quick slot; returns whether the world was replaced.
    fn quick_load(&mut self) -> bool {
        let loaded = self.quick.get().and_then(|bytes| self.input(Input::QuickLoad(bytes)));
        let ok = loaded.is_ok();
        self.say(quick::load_message(loaded.map(|()| self.play.frame())));
        ok
    }

    /// Ends the run: the recording's end line, `--save`, the trace; exits with `code`, or 1 if any of them fails.
    fn close(&mut self, trace: Option<TraceFile>, mut code: i32) -> ! {
        // The recording's end and the saved world are the live run's.
        self.back_to_live();
        if let Some(net) = &self.net {
            if let Some(line) = net.summary(&self.play.app) {
                println!("{line}");
            }
            if let Some((_, status)) = net.failed() {
                code = code.max(i32::from(*status));
            }
        }
        if let Some(recorder) = self.recorder.take() {
            let path = recorder.path().to_path_buf();
            match recorder.finish(&self.play) {
                Ok(()) => eprintln!("recording written to {}", path.display()),
                Err(error) => {
                    eprintln!("swarm: --record: {error}");
                    code = 1;
                }
            }
        }
        if let Some(path) = &self.cli.save {
            match snapshot::save_file(&self.play.app.world, path) {
                Ok(bytes) => eprintln!("world saved to {} ({bytes} bytes)", path.display()),
                Err(error) => {
                    eprintln!("swarm: cannot save {}: {error}", path.display());
                    code = 1;
                }
            }
        }
        if let Some(trace) = trace {
            if let Err(error) = trace.finish() {
                eprintln!("swarm: cannot write trace: {error}");
                code = 1;
            }
        }
        std::process::exit(code);
    }
}

/// Runs the window from `start` until it is closed, or for `--frames N` (then saves `--screenshot` if asked).
pub async fn run(cli: Cli, start: Start) {
    let mut window = Window::new(cli, start);
    prevent_quit();
    loop {
        // Timing: the last frame's whole time is pushed, this frame's time read once.
        let frame = window.begin_frame();
        // Input: Esc, the camera, keys, panel and overlay clicks from the last frame's drawing.
        let (camera, quit) = window.handle_input(&frame);
        // The play's inputs are applied (and recorded) here, between frames of the simulation.
        let digest_wanted = window.apply_actions();
        window.step_simulation(frame.dt);
        window.draw_world(&camera, frame.arena);
        let apart_ms = window.take_digest(digest_wanted);
        window.draw_overlay_and_panel(frame.arena);
        window.end_frame(apart_ms);
        // After drawing: the screenshot shows this frame.
        window.screenshot_or_close(quit);
        next_frame().await;
    }
}

/// The window between frames: the game, what the arena shows, the overlay, legend and panel, the frame times, and
/// the buffers every frame reuses (a steady frame allocates nothing here).
struct Window {
    game: Game,
    trace: Option<TraceFile>,
    clock: Clock,
    scene: Scene,
    hud: Hud,
    /// The actions of this frame: keys and the panel, and the clicks the overlay and the panel saw while drawing
    /// the last frame.
    actions: Vec<Action>,
    /// The compare view, when open; `--compare` opens it once `--frames` frames have run (at once without).
    compare: Option<CompareView>,
    compare_due: bool,
    /// While the compare view runs: when its last step started and how long it took (what it leaves of a frame
    /// sets the next step's budget).
    compare_clock: Option<(Instant, Duration)>,
    /// Frames rendered.
    frame: u32,
    /// Whether this frame stepped the world back (a held Backspace): then it runs no step forward.
    rewound: bool,
    /// The stress scenario's meter (readout, `--benchmark`, `--ramp`), and the wave inputs waiting for this
    /// frame: the held point's change, a ramp's step.
    stress: stress::Meter,
    hold: Option<Option<Vec2>>,
    ramp_waves: Option<u32>,
}

/// What a frame reads once at its start, for all its steps.
struct FrameStart {
    /// The frame time, handed to the simulation as whole fixed steps.
    dt: f32,
    /// The arena, as the world had it when the frame began.
    arena: Vec2,
    /// A fighter's size in arena units (for the camera's zoom limits).
    fighter: f32,
    /// The screen size.
    screen: Vec2,
}

/// The frame times and the simulation's clock.
struct Clock {
    /// The whole frame, one frame's start to the next (presenting included), and the simulation's CPU time in it.
    whole: FrameTimes,
    sim: FrameTimes,
    /// The previous frame's start, and what of that frame is left out of the whole frame's time (the digest taken
    /// apart; a frame of the compare view, which is not a frame of the game).
    last_start: Option<Instant>,
    left_out: Option<f32>,
    /// Frame time not yet run as whole steps of `DT`.
    step: FixedStep,
    /// The overlay and panel's time in the last frame (the panel shows it).
    ui_ms: f32,
    /// Spawns, deaths and lifecycle events per second.
    rate_clock: RateClock,
}

/// Counters per second: since when, the counts then (spawned, deaths, events fired), and the last rates.
struct RateClock {
    since: Instant,
    then: [u64; 3],
    rates: [f32; 3],
}

impl RateClock {
    fn new() -> Self {
        Self { since: Instant::now(), then: [0; 3], rates: [0.0; 3] }
    }

    /// The rates, renewed once a second from the counters `now`.
    fn update(&mut self, now: [u64; 3]) -> [f32; 3] {
        let elapsed = self.since.elapsed().as_secs_f32();
        if elapsed >= 1.0 {
            for ((rate, now), then) in self.rates.iter_mut().zip(now).zip(self.then) {
                *rate = now.saturating_sub(then) as f32 / elapsed;
            }
            (self.since, self.then) = (Instant::now(), now);
        }
        self.rates
    }
}

/// What the arena shows: the camera and what is drawn through it.
struct Scene {
    sprites: Sprites,
    view: camera::View,
    field: FieldLayer,
    scratch: DrawScratch,
    markers: StaleMarkers,
    /// The last world pass's draw calls and quads.
    calls: DrawCalls,
    /// Positions before the last step, and how far the frame is past it: fighters are drawn in between.
    trail: Trail,
    alpha: f32,
}

/// What is drawn over the arena: the overlay, the legend and the panel, and the buffers they reuse.
struct Hud {
    overlay_on: bool,
    /// Where the overlay and the legend were last drawn: a click there is theirs, not a burst.
    overlay_area: Rect,
    /// How the overlay's text fitted last frame: its height, and lines cut.
    overlay_fit: overlay::Fit,
    legend_on: bool,
    legend: legend::Legend,
    legend_area: Rect,
    graph_top: layout::GraphTop,
    /// The outgoing backend's last figures, shown beside the new ones after a switch.
    previous: Option<Previous>,
    readout: Readout,
    tree: Tree,
    spans: Vec<SpanStat>,
    text: String,
    panel_text: String,
    /// The stress readout's bottom, as last drawn (banners go under it).
    stress_bottom: f32,
}

impl Window {
    fn new(cli: Cli, start: Start) -> Self {
        let trace_path = cli.trace.clone();
        let game = Game::new(cli, start);
        let trace = match &trace_path {
            Some(path) => match TraceFile::create(&game.profiler, path.clone()) {
                Ok(file) => Some(file),
                Err(error) => {
                    eprintln!("swarm: cannot write trace {}: {error}", path.display());
                    std::process::exit(1);
                }
            },
            None => None,
        };
        let sprites = Sprites::load(&assets_dir());
        // Every texture so far (the sprites, the rings, the font's glyphs) into one atlas: the world's sprites and
        // the text then share a texture, so they batch into the same draw calls.
        build_textures_atlas();
        let arena = game.play.app.world.resource::<SimConfig>().arena;
        let view = camera::View::fit(arena, vec2(screen_width(), screen_height()));
        let tree = Tree::new(&game.play.app, &game.profiler);
        let compare_due = game.cli.compare;
        let ramp_ms = game.cli.ramp.then(|| game.cli.ramp_ms());
        Self {
            stress: stress::Meter::new(ramp_ms),
            hold: None,
            ramp_waves: None,
            clock: Clock {
                whole: FrameTimes::default(),
                sim: FrameTimes::default(),
                last_start: None,
                left_out: Some(0.0),
                step: FixedStep::default(),
                ui_ms: 0.0,
                rate_clock: RateClock::new(),
            },
            scene: Scene {
                sprites,
                view,
                field: FieldLayer::default(),
                scratch: DrawScratch::default(),
                calls: DrawCalls::default(),
                markers: StaleMarkers::default(),
                trail: Trail::default(),
                alpha: 1.0,
            },
            hud: Hud {
                overlay_on: true,
                overlay_area: Rect::default(),
                overlay_fit: overlay::Fit::default(),
                legend_on: true,
                legend: legend::Legend::default(),
                legend_area: Rect::default(),
                graph_top: layout::GraphTop::default(),
                previous: None,
                readout: Readout::default(),
                tree,
                spans: Vec::new(),
                text: String::with_capacity(256),
                panel_text: String::with_capacity(64),
                stress_bottom: 0.0,
            },
            actions: Vec::with_capacity(16),
            compare: None,
            compare_due,
            compare_clock: None,
            frame: 0,
            rewound: false,
            game,
            trace,
        }
    }

    /// Starts a frame: pushes the last frame's whole time (less what is left out of it), reads the frame time once,
    /// and queues the compare view when `--compare` is due.
    fn begin_frame(&mut self) -> FrameStart {
        let frame_start = Instant::now();
        let clock = &mut self.clock;
        if let (Some(last), Some(apart)) = (clock.last_start, clock.left_out) {
            let ms = (frame_start - last).as_secs_f32() * 1e3 - apart;
            clock.whole.push(ms);
            let app = &self.game.play.app;
            if app.world.resource::<SimConfig>().scenario == Scenario::Stress {
                let fighters = swarm::sim::stress::fighters(app);
                match self.stress.frame(ms, self.frame, fighters, self.game.cli.benchmark) {
                    RampNext::Run => {}
                    RampNext::Add(waves) => self.ramp_waves = Some(waves),
                    RampNext::Done(end) => {
                        println!("{}", stress::ramp_line(&end));
                        self.game.close(self.trace.take(), 0);
                    }
                }
            }
        }
        clock.last_start = Some(frame_start);
        let dt = get_frame_time(); // read once, handed to the simulation as whole fixed steps
        let config = self.game.play.app.world.resource::<SimConfig>();
        let (arena, fighter) = (config.arena, sprites::fighter_size(config));
        let screen = vec2(screen_width(), screen_height());

        if self.compare_due && self.game.cli.frames.is_none_or(|limit| self.frame >= limit) {
            self.compare_due = false;
            self.actions.push(Action::Compare);
        }
        FrameStart { dt, arena, fighter, screen }
    }

    /// Reads the input: the camera (view state only: never recorded), keys, panel and overlay clicks from the last
    /// frame's drawing, bursts at the arena point under the cursor as this frame's camera shows it, and
    /// `--switch-every`; all but the camera are queued as actions. Returns the frame's camera, and whether Esc quits.
    fn handle_input(&mut self, frame: &FrameStart) -> (Camera2D, bool) {
        // Esc closes the compare view; only without one does it quit.
        let mut quit = false;
        if is_key_pressed(KeyCode::Escape) {
            quit = self.compare.take().is_none();
        }

        let pointer = mouse_position().into();
        let hud = &self.hud;
        let over_ui = panel::contains(pointer)
            || (self.compare.is_none()
                && ((hud.overlay_on && hud.overlay_area.contains(pointer))
                    || (hud.legend_on && hud.legend_area.contains(pointer))));
        let (view, screen) = (&mut self.scene.view, frame.screen);
        view.follow(frame.arena, screen, frame.fighter);
        if self.compare.is_none() {
            view.read_input(over_ui, frame.fighter);
        }
        let camera = view.camera(screen);
        let world = &self.game.play.app.world;
        let backend = world.backend();
        panel::read_input(backend, |p| view.world_at(p, screen), over_ui, &mut self.actions);
        // The stress scenario: a held left button lands waves (a GGRS game keeps clicks as its bursts).
        if world.resource::<SimConfig>().scenario == Scenario::Stress
            && self.game.net.is_none()
            && self.compare.is_none()
        {
            let point = view.world_at(pointer, screen);
            self.hold = stress::hold_input(point, over_ui, world.resource::<Waves>().held);
        }
        if let Some(k) = self.game.cli.switch_every {
            if self.frame > 0 && self.frame.is_multiple_of(k) {
                self.actions.push(Action::Backend(backend.next()));
            }
        }
        (camera, quit)
    }

    /// Carries out the queued actions, in order: the compare view, the digest and the legend here, the rest through
    /// [`Window::apply`] (which applies and records the play's inputs). Returns whether the digest was asked for.
    fn apply_actions(&mut self) -> bool {
        // Taken out while applying, and put back: the buffer keeps its capacity.
        let mut actions = std::mem::take(&mut self.actions);
        let mut digest_wanted = false;
        for action in actions.drain(..) {
            match action {
                Action::Compare if self.compare.is_some() => self.compare = None,
                Action::Compare if self.game.net.is_some() => {
                    self.game.say("no compare view in a GGRS game: it would stop the frames".to_string())
                }
                Action::Compare => {
                    let app = &self.game.play.app;
                    let frames = self.game.cli.compare_frames();
                    self.compare_clock = None;
                    self.compare = Some(CompareView::open(&app.world, frames, app.threads()))
                }
                // The game is frozen while the compare view is open: it shows that moment.
                _ if self.compare.is_some() => {}
                Action::Digest => digest_wanted = true,
                Action::ToggleLegend => self.hud.legend_on = !self.hud.legend_on,
                _ => self.apply(action),
            }
        }
        self.actions = actions;
        // The stress scenario's waves: the held point's change, a ramp's step.
        let waves = [self.hold.take().map(Input::Wave), self.ramp_waves.take().map(Input::AddWaves)];
        for input in waves.into_iter().flatten() {
            if self.compare.is_none() {
                if let Err(error) = self.game.input(input) {
                    self.game.say(error);
                }
            }
        }
        self.scene.markers.take(&self.game.play.app.world); // a step ran a frame
        digest_wanted
    }

    /// Runs the simulation: fixed steps of DT. A screenshot run steps exactly once per frame, so it is reproducible.
    /// The compare view freezes it (without a pause input: nothing changes the simulation). Each frame's stale
    /// catches are taken as it ends: the next frame clears them. The markers age with the simulation's steps, not
    /// the clock: paused, they stay where they are for a look.
    fn step_simulation(&mut self, dt: f32) {
        let (game, clock) = (&mut self.game, &mut self.clock);
        let Scene { markers, trail, alpha, .. } = &mut self.scene;
        let sim_start = Instant::now();
        // Drawn where the last step left them, unless the frame falls between two steps.
        *alpha = 1.0;
        if let Some(compared) = &mut self.compare {
            // The rest of the last frame: from its start to now, less the comparison's own work in it.
            let now = Instant::now();
            let rest = self.compare_clock.map_or(Duration::ZERO, |(start, spent)| (now - start).saturating_sub(spent));
            compared.step(compare::budget(rest));
            self.compare_clock = Some((now, now.elapsed()));
        } else if std::mem::take(&mut self.rewound) {
            // A held Backspace moved the world back a frame: no step forward in the same frame.
            markers.take(&game.play.app.world);
        } else if game.cli.screenshot.is_some() || game.cli.benchmark || game.cli.ramp {
            // One step a frame: the frame's cost is one step's, and the run is reproducible.
            game.advance();
            markers.take(&game.play.app.world);
        } else if !game.play.paused {
            clock.step.advance(dt, |last| {
                if last {
                    trail.record(&game.play.app.world);
                }
                game.advance();
                markers.take(&game.play.app.world);
            });
            *alpha = clock.step.alpha();
        }
        if self.compare.is_none() {
            clock.sim.push(sim_start.elapsed().as_secs_f32() * 1e3);
        }
    }

    /// Sorts the pools into the draw order, then draws the world through the frame's camera, timed as `render`.
    fn draw_world(&mut self, camera: &Camera2D, arena: Vec2) {
        self.game.play.sort();
        clear_background(Color::new(0.035, 0.04, 0.07, 1.0));
        set_camera(camera);
        let (game, scene) = (&self.game, &mut self.scene);
        let world = &game.play.app.world;
        game.profiler.time("render", game.render_id, || scene.draw(world, arena));
        self.stress.drawn = scene.calls.sprites;
        set_default_camera();
    }

    /// The digest on demand (D, a click on its line), and once per frame shown while paused: timed apart, and left
    /// out of the frame times, so asking for it does not show up as a slow frame. Returns its time in ms (0 when not
    /// taken).
    fn take_digest(&mut self, wanted: bool) -> f32 {
        let (game, readout) = (&self.game, &mut self.hud.readout);
        let sim_frame = game.play.frame();
        let mut apart_ms = 0.0;
        if wanted || (game.play.paused && readout.digest.is_none_or(|(_, at)| at != sim_frame)) {
            let start = Instant::now();
            let world = &game.play.app.world;
            readout.digest =
                Some(game.profiler.time("digest (on demand)", game.digest_id, || (digest(world), sim_frame)));
            apart_ms = start.elapsed().as_secs_f32() * 1e3;
            readout.digest_ms = apart_ms;
        }
        apart_ms
    }

    /// Draws the readout's overlay (or the compare view), the legend, the panel and the notes, timed as
    /// `overlay+panel`; clicks on them are queued for the next frame.
    fn draw_overlay_and_panel(&mut self, arena: Vec2) {
        let ui_start = Instant::now();
        let Self { game, clock, scene, hud, actions, compare, stress, .. } = self;
        game.profiler.time("overlay+panel", game.overlay_id, || {
            gather(game, &mut hud.readout, (&mut clock.whole, &mut clock.sim), &mut clock.rate_clock);
            hud.readout.draw_calls = (scene.calls.calls, scene.calls.quads);
            hud.tree.refresh(&game.play.app);
            let config = game.play.app.world.resource::<SimConfig>();
            if let Some(view) = compare {
                view.draw(screen_width() - panel::WIDTH - 8.0, &mut hud.text);
            } else if hud.overlay_on {
                hud.draw_overlay(&game.profiler, clock, actions);
            }
            if hud.legend_on && compare.is_none() {
                hud.draw_legend(config, &scene.sprites);
            }
            hud.draw_panel(game, config, compare.is_some(), clock.ui_ms, actions);
            if compare.is_none() {
                hud.draw_empty_hint(&scene.view, arena, config);
                hud.draw_round(&game.play.app.world);
                hud.draw_rewind(game);
                hud.draw_net(game);
            }
            draw_notes(game, &scene.sprites);
            let world = &game.play.app.world;
            if config.scenario == Scenario::Stress && compare.is_none() {
                let census = hud.readout.census;
                let waves = world.resource::<Waves>();
                let figures = stress::Figures {
                    entities: world.len(),
                    fighters: census.red + census.blue,
                    waves: waves.next,
                    whole: hud.readout.whole,
                    holding: waves.held.is_some(),
                };
                let right = panel::origin().x - 12.0;
                let max_width = right - hud.left_edge() - 20.0;
                hud.stress_bottom = stress::draw_readout(stress, &figures, (right, 10.0), max_width, &mut hud.text);
            }
        });
        self.clock.ui_ms = ui_start.elapsed().as_secs_f32() * 1e3;
    }

    /// Counts the frame, and sets what of it the next frame's whole time leaves out.
    fn end_frame(&mut self, apart_ms: f32) {
        self.frame += 1;
        // A frame of the compare view's work is not a frame of the game: kept out of the statistics.
        self.clock.left_out = self.compare.is_none().then_some(apart_ms);
    }

    /// Ends the run once it is done (`--frames`, saving `--screenshot` of the frame just drawn), or when the window
    /// is closed or Esc quits.
    fn screenshot_or_close(&mut self, quit: bool) {
        let cli = &self.game.cli;
        // A peer's --frames is a frame both players confirmed: its run ends when that is (or when it stopped).
        let reached = match &self.game.net {
            Some(net) if cli.p2p => cli.frames.is_some() && (net.finished() || net.failed().is_some()),
            _ => cli.frames.is_some_and(|limit| self.frame >= limit),
        };
        // With --compare, --frames ends the run once the comparison is done (and drawn).
        let done = reached && !self.compare_due && self.compare.as_ref().is_none_or(CompareView::is_finished);
        if done && cli.benchmark {
            self.print_benchmark();
        }
        let cli = &self.game.cli;
        if let (true, Some(path)) = (done, &cli.screenshot) {
            let cut = self.hud.overlay_fit.cut;
            if self.hud.overlay_on && cut > 0 {
                eprintln!("swarm: warning: the overlay cut {cut} lines short to fit the window");
            }
            if self.hud.legend_on && self.hud.legend_area.bottom() > panel::keys_top() {
                eprintln!("swarm: warning: the legend runs under the key strip");
            }
            let code = match save_screenshot(path) {
                Ok(()) => {
                    println!("screenshot saved to {}", path.display());
                    0
                }
                Err(error) => {
                    eprintln!("swarm: cannot save screenshot {}: {error}", path.display());
                    1
                }
            };
            self.game.close(self.trace.take(), code);
        }
        if done || is_quit_requested() || quit {
            self.game.close(self.trace.take(), 0);
        }
    }

    /// `--benchmark` in the window: the whole frames' percentiles (the first, the pre-spawn, left out; the last
    /// has no end yet) and the digest.
    fn print_benchmark(&self) {
        let app = &self.game.play.app;
        let measured = self.stress.frames.len();
        println!(
            "== benchmark (window): stress on {}, {} threads, one fixed step a frame",
            app.world.backend(),
            app.threads()
        );
        println!("frame 1 lands the starting fighters in waves (timed apart)");
        println!(
            "whole frames 2-{} (present included, {measured} frames): {}",
            measured + 1,
            self.stress.percentiles()
        );
        println!("digest: {:016x}", digest(&app.world));
    }

    /// Turns a panel or key action into an input of the play (recorded), or does it here when it only concerns the
    /// window.
    fn apply(&mut self, action: Action) {
        let Self { game, clock, hud, .. } = self;
        let (whole, sim) = (&mut clock.whole, &mut clock.sim);
        let world = &game.play.app.world;
        let input = match action {
            Action::Backend(backend) if backend != world.backend() => {
                // Keep the outgoing backend's last figures beside the new ones.
                game.profiler.snapshot(&mut hud.spans);
                hud.previous = Some(Previous {
                    backend: world.backend(),
                    sim: sim.summary(),
                    bytes: hud.readout.bytes,
                    systems: hud.spans.iter().map(|s| s.last_ms).collect(),
                });
                whole.clear();
                sim.clear();
                Input::Backend(backend)
            }
            Action::Backend(_) => return,
            Action::Rewind => {
                game.rewind_back();
                self.rewound = true;
                return;
            }
            Action::ToLive => return game.back_to_live(),
            Action::Population(delta) => Input::Population(delta),
            Action::TogglePause => Input::Pause(!game.play.paused),
            Action::Step => Input::Step,
            Action::NextRound => Input::NextRound,
            Action::Reset => {
                whole.clear();
                sim.clear();
                hud.previous = None;
                // The digest named a frame of the run being replaced.
                hud.readout.digest = None;
                Input::Reset
            }
            Action::ToggleOverlay => {
                hud.overlay_on = !hud.overlay_on;
                return;
            }
            Action::CycleOrder => Input::DrawOrder(game.play.order.next()),
            Action::ToggleAlign => {
                let on = world.resource::<SimConfig>().align_every > 0;
                Input::AlignEvery(if on { 0 } else { ALIGN_EVERY })
            }
            Action::CycleThreads => {
                let most = swarm::app::default_threads().max(2);
                let now = game.play.app.threads();
                Input::Threads(if now >= most { 1 } else { now as u32 + 1 })
            }
            // In the stress scenario the held button lands waves instead ([`stress::hold_input`]).
            Action::Burst(_) if world.resource::<SimConfig>().scenario == Scenario::Stress && game.net.is_none() => {
                return
            }
            Action::Burst(at) => Input::Burst(at),
            Action::Group(name, enabled) => Input::Group { name: name.to_string(), enabled },
            Action::QuickSave => return game.quick_save(),
            // Handled by the loop.
            Action::Compare | Action::Digest | Action::ToggleLegend => return,
            Action::QuickLoad => {
                if game.quick_load() {
                    whole.clear();
                    sim.clear();
                    hud.previous = None;
                    hud.readout.digest = None;
                }
                return;
            }
        };
        // (A quick load's failure is handled above; an unknown group cannot come from the overlay's rows.)
        if let Err(error) = game.input(input) {
            game.say(error);
        }
    }
}

impl Scene {
    /// The arena's floor and border, the field, the sprites and the stale markers, in arena units.
    fn draw(&mut self, world: &World, arena: Vec2) {
        let px = 1.0 / self.view.scale();
        let mut calls = DrawCalls::default();
        draw_rectangle(0.0, 0.0, arena.x, arena.y, Color::new(0.07, 0.08, 0.12, 1.0));
        calls.quads(Sheet::Plain, 1);
        draw_rectangle_lines(0.0, 0.0, arena.x, arena.y, 2.0 * px, Color::new(0.3, 0.35, 0.48, 1.0));
        calls.shape(Sheet::Plain, 8, 24);
        if self.field.draw(world, px) {
            calls.quads(Sheet::Field, 1);
        }
        let between = self.trail.follows(world).then_some((&self.trail, self.alpha));
        sprites::draw_world(world, &self.sprites, &mut self.scratch, px, between, &mut calls);
        self.markers.draw(&self.sprites, px, &mut calls);
        self.calls = calls;
    }
}

impl Hud {
    /// The overlay at the top left, clear of the panel.
    fn draw_overlay(&mut self, profiler: &Profiler, clock: &Clock, actions: &mut Vec<Action>) {
        let max_width = screen_width() - panel::WIDTH - 30.0;
        self.overlay_area = overlay::draw(
            &self.readout,
            (&clock.whole, &clock.sim),
            &mut self.graph_top,
            self.previous.as_ref(),
            profiler,
            &self.tree,
            (max_width, panel::keys_top() - 4.0),
            &mut self.text,
            actions,
            &mut self.overlay_fit,
        );
    }

    /// The legend, under the panel.
    fn draw_legend(&mut self, config: &SimConfig, sprites: &Sprites) {
        let at = panel::origin() + vec2(0.0, panel::HEIGHT + 8.0);
        self.legend_area = self.legend.draw(at.x, at.y, panel::WIDTH, config.scenario, sprites);
    }

    /// The panel: the running world's settings, and its buttons.
    fn draw_panel(&mut self, game: &Game, config: &SimConfig, comparing: bool, ui_ms: f32, actions: &mut Vec<Action>) {
        let state = PanelState {
            backend: game.play.app.world.backend(),
            population: config.target_population,
            paused: game.play.paused,
            overlay: self.overlay_on,
            legend: self.legend_on,
            order: game.play.order,
            align: config.align_every > 0,
            compare: comparing,
            ui_ms,
        };
        panel::draw(&state, actions, &mut self.panel_text);
    }

    /// The round, in the `battle` scenario: a box at the top, between the overlay and the panel.
    fn draw_round(&mut self, world: &World) {
        let left = self.left_edge();
        let Some(lines) = round_lines(world, self.readout.census, &mut self.text) else { return };
        banner(left, lines, 12.0, Color::new(1.0, 0.85, 0.45, 1.0));
    }

    /// While watching a rewind: how far back, and the keys; under the round box in the `battle` scenario.
    fn draw_rewind(&mut self, game: &Game) {
        use std::fmt::Write;
        let Some(live) = game.rewind.as_ref().and_then(Rewind::watching) else { return };
        let frame = game.play.frame();
        let top = self.banner_top(game);
        self.text.clear();
        let back = live.saturating_sub(frame);
        let _ = write!(self.text, "REWOUND {:.1} s: frame {frame} of {live}", back as f32 / 60.0);
        let first = self.text.len();
        let _ = write!(self.text, "hold Backspace: back   release: replays to live   End: live now");
        let (one, two) = self.text.split_at(first);
        banner(self.left_edge(), [one, two], top, Color::new(0.55, 0.85, 1.0, 1.0));
    }

    /// In a GGRS game: what runs and its rollback figures (or why it stopped); under the round box in `battle`.
    fn draw_net(&mut self, game: &Game) {
        let Some(net) = &game.net else { return };
        let top = self.banner_top(game);
        let first = net.lines(&mut self.text);
        let (one, two) = self.text.split_at(first);
        let colour =
            if net.failed().is_some() { Color::new(1.0, 0.45, 0.4, 1.0) } else { Color::new(0.6, 1.0, 0.7, 1.0) };
        banner(self.left_edge(), [one, two], top, colour);
    }

    /// Where a banner's top goes: under the round box in `battle`, under the readout in `stress`.
    fn banner_top(&self, game: &Game) -> f32 {
        match game.play.app.world.resource::<SimConfig>().scenario {
            Scenario::Battle => 90.0,
            Scenario::Stress => self.stress_bottom + 10.0,
            _ => 12.0,
        }
    }

    /// Where the arena's free width starts: right of the overlay when it is shown.
    fn left_edge(&self) -> f32 {
        if self.overlay_on {
            self.overlay_area.right()
        } else {
            0.0
        }
    }

    /// How to add fighters, when the arena has none.
    fn draw_empty_hint(&mut self, view: &camera::View, arena: Vec2, config: &SimConfig) {
        if self.readout.census.red + self.readout.census.blue == 0 {
            empty_hint(view, arena, self.left_edge(), config.burst, config.target_population, &mut self.text);
        }
    }
}

/// A box at `top`, centred between `left` (the overlay's edge) and the panel: a title line in `colour`, and a
/// line under it wrapped at spaces onto as many lines as it needs.
fn banner(left: f32, [title, text]: [&str; 2], top: f32, colour: Color) {
    let (left, right) = (left + 20.0, panel::origin().x - 20.0);
    let sizes = [26u16, 20];
    let measure = |size: u16| move |s: &str| measure_text(s, None, size, 1.0).width;
    let width = measure(sizes[0])(title).max(measure(sizes[1])(text)).min(right - left).max(100.0);
    let x = ((left + right) / 2.0 - width / 2.0).max(left);
    fn pieces(mut rest: &str, width: f32, size: u16) -> impl Iterator<Item = &str> {
        std::iter::from_fn(move || {
            let (line, after) = layout::wrap(rest, width, |s| measure_text(s, None, size, 1.0).width);
            rest = after;
            (!line.is_empty()).then_some(line)
        })
    }
    let lines = pieces(text, width, sizes[1]).count() as f32;
    draw_rectangle(x - 12.0, top, width + 24.0, 38.0 + 28.0 * lines, Color::new(0.02, 0.03, 0.06, 0.88));
    overlay::fitted(title, x, top + 28.0, width, sizes[0], colour);
    for (i, line) in pieces(text, width, sizes[1]).enumerate() {
        overlay::fitted(line, x, top + 56.0 + 28.0 * i as f32, width, sizes[1], Color::new(0.85, 0.88, 0.95, 1.0));
    }
}

/// The key line at the bottom, above it the sprites' folder when they are not the crate's own, and a recent message.
fn draw_notes(game: &Game, sprites: &Sprites) {
    let key_top = panel::draw_keys();
    if !sprites.source.ends_with("assets") {
        let colour = Color::new(1.0, 0.6, 0.4, 0.9);
        overlay::fitted(&sprites.source, 10.0, key_top - 8.0, screen_width() - 20.0, 16, colour);
    }
    if let Some((message, shown)) = &game.message {
        if shown.elapsed().as_secs_f32() < quick::MESSAGE_SECONDS {
            draw_message(message, key_top - 30.0);
        }
    }
}

/// A message in a dark box at the bottom left with its baseline at `y`, above the key line (clear of the overlay
/// and the panel).
fn draw_message(message: &str, y: f32) {
    let size = 24;
    let dims = measure_text(message, None, size, 1.0);
    let x = 10.0;
    draw_rectangle(
        x - 6.0,
        y - dims.offset_y - 6.0,
        dims.width + 12.0,
        dims.height + 12.0,
        Color::new(0.02, 0.03, 0.06, 0.85),
    );
    draw_text(message, x, y, size as f32, Color::new(1.0, 0.85, 0.45, 1.0));
}

/// Fills the readout from counters the frame kept anyway (no query, no walk of the world): see the overlay.
fn gather(
    game: &Game,
    readout: &mut Readout,
    (whole, sim): (&mut FrameTimes, &mut FrameTimes),
    rate_clock: &mut RateClock,
) {
    let paused = game.play.paused;
    let world = &game.play.app.world;
    let stats = world.resource::<SimStats>().clone();
    let [spawns, deaths, events] = rate_clock.update([stats.spawned, stats.deaths, world.events_fired()]);
    let totals = world.command_totals();
    readout.backend = world.backend();
    readout.threads = game.play.app.threads();
    readout.whole = whole.summary();
    readout.sim = sim.summary();
    readout.scenario = world.resource::<SimConfig>().scenario;
    readout.census = census(world);
    readout.spawns_per_s = spawns;
    readout.deaths_per_s = deaths;
    readout.events_per_s = events;
    readout.commands = (totals.applied, totals.skipped);
    readout.stale = stats.stale_caught;
    let hurt = world.resource::<Hurt>();
    readout.health_changes = (hurt.hurt.len(), hurt.added, hurt.removed);
    readout.bytes = world.storage_bytes();
    readout.sim_frame = stats.frames;
    readout.refused = stats.spawn_refused + totals.refused;
    readout.short = world.get_resource::<swarm::sim::Shortfall>().map_or(0, |s| s.0);
    readout.paused = paused;
    readout.modified = game.play.app.is_modified();
}

/// What an empty arena shows: how to add fighters, in a box at the arena's centre height, centred between `left`
/// (the overlay's edge) and the panel.
fn empty_hint(view: &camera::View, arena: Vec2, left: f32, burst: u32, target: u32, text: &mut String) {
    use std::fmt::Write;
    let screen = vec2(screen_width(), screen_height());
    let centre_y = (arena.y / 2.0 - view.world_at(Vec2::ZERO, screen).y) * view.scale();
    let (left, right) = (left + 20.0, panel::origin().x - 20.0);
    let size = 24;
    text.clear();
    let _ =
        write!(text, "Click to drop a burst of {burst} fighters,\nor press + to raise the population (now {target})");
    let (second, third) = text.split_once('\n').unwrap_or((text.as_str(), ""));
    let lines = ["No fighters in the arena.", second, third];
    let width = lines.iter().map(|l| measure_text(l, None, size, 1.0).width).fold(0.0, f32::max);
    let width = width.min(right - left).max(100.0);
    let (x, y) = (((left + right) / 2.0 - width / 2.0).max(left), centre_y - 30.0);
    draw_rectangle(x - 14.0, y - 30.0, width + 28.0, 106.0, Color::new(0.02, 0.03, 0.06, 0.9));
    for (i, line) in lines.into_iter().enumerate() {
        let colour = if i == 0 { Color::new(1.0, 0.85, 0.45, 1.0) } else { Color::new(0.92, 0.94, 0.98, 1.0) };
        overlay::fitted(line, x, y + 30.0 * i as f32, width, size, colour);
    }
}

/// The round box's two lines ([`Hud::draw_round`]), written into `text`; `None` outside the `battle` scenario.
fn round_lines<'a>(world: &World, census: swarm::sim::Census, text: &'a mut String) -> Option<[&'a str; 2]> {
    use std::fmt::Write;
    use swarm::sim::rounds::{Phase, Round, BREAK, ROUND_FRAMES};
    if world.resource::<SimConfig>().scenario != swarm::sim::Scenario::Battle {
        return None;
    }
    let (round, frames) = (world.resource::<Round>(), world.resource::<SimStats>().frames);
    let phase = world.get_resource::<swarm::app::State<Phase>>().map_or(Phase::Fighting, |s| s.get());
    let seconds = |frames: u64| frames.div_ceil(60);
    text.clear();
    match (phase, round.winner) {
        (Phase::Fighting, _) => {
            let left = seconds(ROUND_FRAMES.saturating_sub(frames - round.started_at));
            let _ = write!(text, "Round {}   {}:{:02} left", round.number, left / 60, left % 60);
        }
        (Phase::Over, Some(winner)) => {
            let team = format!("{:?}", winner.team).to_uppercase();
            let how =
                if round.ended_at - round.started_at >= ROUND_FRAMES { "on time" } else { "the other side wiped out" };
            let _ = write!(text, "Round {}: {team} WINS, {how}", round.number);
        }
        (Phase::Over, None) => {
            let _ = write!(text, "Round {}: a draw", round.number);
        }
    }
    let first = text.len();
    let _ = write!(
        text,
        "red {}  blue {}   rounds won: red {} blue {}",
        census.red, census.blue, round.wins[0], round.wins[1]
    );
    if phase == Phase::Over {
        let _ = write!(text, "   next in {} s (N: now)", seconds(BREAK.saturating_sub(frames - round.ended_at)));
    }
    let (one, two) = text.split_at(first);
    Some([one, two])
}

/// Reads the frame buffer and writes it as a PNG (rows flipped: GL's origin is bottom left).
fn save_screenshot(path: &Path) -> Result<(), String> {
    let image = get_screen_data();
    let (w, h) = (image.width as usize, image.height as usize);
    let mut rows = vec![0u8; w * h * 4];
    for y in 0..h {
        rows[y * w * 4..(y + 1) * w * 4].copy_from_slice(&image.bytes[(h - 1 - y) * w * 4..(h - y) * w * 4]);
    }
    // Opaque, as the window shows it: the frame buffer's alpha is what the boxes were blended with, and a viewer
    // would blend the picture with its page again.
    for pixel in rows.chunks_exact_mut(4) {
        pixel[3] = 255;
    }
    swarm::files::write_whole(path, |temp| {
        image::save_buffer(temp, &rows, w as u32, h as u32, image::ColorType::Rgba8).map_err(|e| e.to_string())
    })
}
