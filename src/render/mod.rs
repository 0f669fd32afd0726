//! The window: the only code that calls macroquad. It reads the frame time once per frame and hands the
//! simulation whole fixed steps (macroquad's `arkanoid` pattern), draws the world, the overlay and the panel, and
//! applies the user's actions.

pub mod camera;
pub mod compare;
pub mod layout;
pub mod legend;
pub mod overlay;
pub mod panel;
pub mod quick;
pub mod sprites;

use compare::CompareView;
use macroquad::prelude::*;
use overlay::{FrameTimes, Previous, Readout, Tree};
use panel::{Action, PanelState};
use quick::QuickSlot;
use sprites::{DrawScratch, FieldLayer, Sprites, StaleMarkers};
use std::path::{Path, PathBuf};
use std::time::Instant;
use swarm::app::profile::{Profiler, SpanStat, TraceFile};
use swarm::cli::Cli;
use swarm::ecs::{Backend, Format};
use swarm::sim::play::{Input, Play, Start, ALIGN_EVERY};
use swarm::sim::recording::Recorder;
use swarm::sim::{census, digest, snapshot, SimConfig, SimStats, DT};

/// The most simulation steps one rendered frame may run, so a slow frame does not snowball.
const MAX_STEPS_PER_FRAME: u32 = 4;

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
pub fn conf() -> Conf {
    Conf {
        window_title: format!("Swarm: one ECS, {} storage layouts", Backend::ALL.len()),
        window_width: 1600,
        window_height: 900,
        window_resizable: true,
        ..Default::default()
    }
}

/// The running game. Settings, seed and capacity are the running world's own (its `SimConfig`, `SimRng` and
/// allocator), so after a load they are the loaded world's, and the panel and a reset follow it.
struct Game {
    cli: Cli,
    play: Play,
    profiler: Profiler,
    recorder: Option<Recorder>,
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
        let play = Play::new(&start, profiler.clone()).unwrap_or_else(|error| {
            eprintln!("swarm: cannot start: {error}");
            std::process::exit(1);
        });
        // Registered after the systems and the y-sort, so the overlay lists them last.
        let render_id = profiler.register("render");
        let overlay_id = profiler.register("overlay+panel");
        let digest_id = profiler.register("digest (on demand)");
        let recorder = cli.record.as_ref().map(|path| {
            Recorder::create(path, &start).unwrap_or_else(|error| {
                eprintln!("swarm: --record: {error}");
                std::process::exit(1);
            })
        });
        Self {
            cli,
            play,
            profiler,
            recorder,
            quick: QuickSlot::new(quick::path()),
            message: None,
            render_id,
            overlay_id,
            digest_id,
        }
    }

    /// Shows `text` on screen for a moment.
    fn say(&mut self, text: String) {
        self.message = Some((text, Instant::now()));
    }

    /// Applies `input` to the running play and records it. Only a quick load or an unknown group can fail, and then
    /// nothing changed (and nothing is recorded).
    fn input(&mut self, input: Input) -> Result<(), String> {
        let at = self.play.frame();
        self.play.apply(&input).map_err(|e| e.to_string())?;
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
    let frames_limit = cli.frames;
    let screenshot = cli.screenshot.clone();
    let trace_path = cli.trace.clone();
    let mut game = Game::new(cli, start);
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
    prevent_quit();

    // The whole frame, one frame's start to the next (presenting included), and the simulation's CPU time in it.
    let mut whole = FrameTimes::default();
    let mut sim = FrameTimes::default();
    let mut graph_top = layout::GraphTop::default();
    // The previous frame's start, and what of that frame is left out of the whole frame's time (the digest taken
    // apart; a frame of the compare view, which is not a frame of the game).
    let mut last_start: Option<Instant> = None;
    let mut left_out: Option<f32> = Some(0.0);
    let mut field = FieldLayer::default();
    let mut legend_on = true;
    let mut legend = legend::Legend::default();
    let mut legend_area = Rect::default();
    let mut previous: Option<Previous> = None;
    let mut readout = Readout::default();
    let mut scratch = DrawScratch::default();
    let mut markers = StaleMarkers::default();
    let mut view =
        camera::View::fit(game.play.app.world.resource::<SimConfig>().arena, vec2(screen_width(), screen_height()));
    let mut text = String::with_capacity(256);
    let mut panel_text = String::with_capacity(64);
    let mut actions: Vec<Action> = Vec::with_capacity(16);
    let mut spans: Vec<SpanStat> = Vec::new();
    let mut overlay_on = true;
    let mut overlay_area = Rect::default();
    let mut tree = Tree::new(&game.play.app, &game.profiler);
    // The compare view, when open; `--compare` opens it once `--frames` frames have run (at once without).
    let mut compare: Option<CompareView> = None;
    let mut compare_due = game.cli.compare;
    let compare_frames = game.cli.compare_frames;
    let mut accumulator = 0.0f32;
    let mut ui_ms = 0.0f32;
    let mut rate_clock = (Instant::now(), 0u64, 0u64, 0.0f32, 0.0f32);
    let mut frame = 0u32;

    loop {
        let frame_start = Instant::now();
        if let (Some(last), Some(apart)) = (last_start, left_out) {
            whole.push((frame_start - last).as_secs_f32() * 1e3 - apart);
        }
        last_start = Some(frame_start);
        let dt = get_frame_time(); // read once, handed to the simulation as whole fixed steps
        let config = game.play.app.world.resource::<SimConfig>();
        let (arena, fighter) = (config.arena, sprites::fighter_size(config));
        let screen = vec2(screen_width(), screen_height());

        if compare_due && frames_limit.is_none_or(|limit| frame >= limit) {
            compare_due = false;
            actions.push(Action::Compare);
        }
        // Esc closes the compare view; only without one does it quit.
        let mut quit = false;
        if is_key_pressed(KeyCode::Escape) {
            quit = compare.take().is_none();
        }

        // Input: the camera (view state only: never recorded), keys, panel and overlay clicks from the last frame's
        // drawing, bursts at the arena point under the cursor as this frame's camera shows it.
        let pointer = mouse_position().into();
        let over_ui = panel::contains(pointer)
            || (compare.is_none()
                && ((overlay_on && overlay_area.contains(pointer)) || (legend_on && legend_area.contains(pointer))));
        view.follow(arena, screen, fighter);
        if compare.is_none() {
            view.read_input(over_ui, fighter);
        }
        let camera = view.camera(screen);
        panel::read_input(game.play.app.world.backend(), |p| view.world_at(p, screen), over_ui, &mut actions);
        if let Some(k) = game.cli.switch_every {
            if frame > 0 && frame.is_multiple_of(k) {
                actions.push(Action::Backend(game.play.app.world.backend().next()));
            }
        }
        let mut digest_wanted = false;
        for action in actions.drain(..) {
            match action {
                Action::Compare if compare.is_some() => compare = None,
                Action::Compare => compare = Some(CompareView::open(&game.play.app.world, compare_frames)),
                // The game is frozen while the compare view is open: it shows that moment.
                _ if compare.is_some() => {}
                Action::Digest => digest_wanted = true,
                Action::ToggleLegend => legend_on = !legend_on,
                _ => {
                    let times = (&mut whole, &mut sim);
                    apply(action, &mut game, &mut overlay_on, times, &mut previous, &mut spans, &mut readout)
                }
            }
        }
        markers.take(&game.play.app.world); // a step ran a frame

        // Simulation: fixed steps of DT. A screenshot run steps exactly once per frame, so it is reproducible. The
        // compare view freezes it (without a pause input: nothing changes the simulation). Each frame's stale
        // catches are taken as it ends: the next frame clears them.
        let sim_start = Instant::now();
        if let Some(compared) = &mut compare {
            compared.step(compare::BUDGET);
        } else if screenshot.is_some() {
            game.play.app.update();
            markers.take(&game.play.app.world);
        } else if !game.play.paused {
            accumulator = (accumulator + dt).min(DT * MAX_STEPS_PER_FRAME as f32);
            while accumulator >= DT {
                game.play.app.update();
                markers.take(&game.play.app.world);
                accumulator -= DT;
            }
        }
        if compare.is_none() {
            sim.push(sim_start.elapsed().as_secs_f32() * 1e3);
        }
        markers.age(dt);

        // World.
        game.play.sort();
        clear_background(Color::new(0.035, 0.04, 0.07, 1.0));
        set_camera(&camera);
        {
            let world = &mut game.play.app.world;
            game.profiler.time("render", game.render_id, || {
                let px = 1.0 / view.scale();
                draw_rectangle(0.0, 0.0, arena.x, arena.y, Color::new(0.07, 0.08, 0.12, 1.0));
                draw_rectangle_lines(0.0, 0.0, arena.x, arena.y, 2.0 * px, Color::new(0.3, 0.35, 0.48, 1.0));
                field.draw(world, px);
                sprites::draw_world(world, &sprites, &mut scratch, px);
                markers.draw(&sprites, px);
            });
        }
        set_default_camera();

        // The digest on demand (D, a click on its line), and once per frame shown while paused: timed apart, and
        // left out of the frame times, so asking for it does not show up as a slow frame.
        let sim_frame = game.play.frame();
        let mut apart_ms = 0.0;
        if digest_wanted || (game.play.paused && readout.digest.is_none_or(|(_, at)| at != sim_frame)) {
            let start = Instant::now();
            let world = &game.play.app.world;
            readout.digest =
                Some(game.profiler.time("digest (on demand)", game.digest_id, || (digest(world), sim_frame)));
            apart_ms = start.elapsed().as_secs_f32() * 1e3;
            readout.digest_ms = apart_ms;
        }

        // Readout, overlay, panel and message.
        let ui_start = Instant::now();
        game.profiler.time("overlay+panel", game.overlay_id, || {
            gather(&game, &mut readout, (&mut whole, &mut sim), &mut rate_clock);
            tree.refresh(&game.play.app);
            let config = game.play.app.world.resource::<SimConfig>();
            let key_top = screen_height() - panel::key_height();
            if let Some(view) = &compare {
                view.draw(screen_width() - panel::WIDTH - 8.0, &mut text);
            } else if overlay_on {
                let max_width = screen_width() - panel::WIDTH - 30.0;
                overlay_area = overlay::draw(
                    &readout,
                    (&whole, &sim),
                    &mut graph_top,
                    previous.as_ref(),
                    &game.profiler,
                    &tree,
                    max_width,
                    &mut text,
                    &mut actions,
                );
            }
            if legend_on && compare.is_none() {
                let at = panel::origin() + vec2(0.0, panel::HEIGHT + 8.0);
                legend_area = legend.draw(at.x, at.y, panel::WIDTH, config.scenario, &sprites);
            }
            let state = PanelState {
                backend: game.play.app.world.backend(),
                population: config.target_population,
                paused: game.play.paused,
                overlay: overlay_on,
                legend: legend_on,
                order: game.play.order,
                align: config.align_every > 0,
                compare: compare.is_some(),
                ui_ms,
            };
            panel::draw(&state, &mut actions, &mut panel_text);
            if compare.is_none() && readout.census.red + readout.census.blue == 0 {
                let left = if overlay_on { overlay_area.right() } else { 0.0 };
                empty_hint(&view, arena, left, config.burst, config.target_population, &mut text);
            }
            panel::draw_keys();
            if !sprites.source.ends_with("assets") {
                let colour = Color::new(1.0, 0.6, 0.4, 0.9);
                overlay::fitted(&sprites.source, 10.0, key_top - 8.0, screen_width() - 20.0, 16, colour);
            }
            if let Some((message, shown)) = &game.message {
                if shown.elapsed().as_secs_f32() < quick::MESSAGE_SECONDS {
                    draw_message(message, key_top - 30.0);
                }
            }
        });
        ui_ms = ui_start.elapsed().as_secs_f32() * 1e3;

        frame += 1;
        // A frame of the compare view's work is not a frame of the game: kept out of the statistics.
        left_out = compare.is_none().then_some(apart_ms);

        // With --compare, --frames ends the run once the comparison is done (and drawn).
        let done = frames_limit.is_some_and(|limit| frame >= limit)
            && !compare_due
            && compare.as_ref().is_none_or(CompareView::is_finished);
        if let (true, Some(path)) = (done, &screenshot) {
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
            game.close(trace, code);
        }
        if done || is_quit_requested() || quit {
            game.close(trace, 0);
        }
        next_frame().await;
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

/// Turns a panel or key action into an input of the play (recorded), or does it here when it only concerns the window.
fn apply(
    action: Action,
    game: &mut Game,
    overlay_on: &mut bool,
    (whole, sim): (&mut FrameTimes, &mut FrameTimes),
    previous: &mut Option<Previous>,
    spans: &mut Vec<SpanStat>,
    readout: &mut Readout,
) {
    let world = &game.play.app.world;
    let input = match action {
        Action::Backend(backend) if backend != world.backend() => {
            // Keep the outgoing backend's last figures beside the new ones.
            game.profiler.snapshot(spans);
            *previous = Some(Previous {
                backend: world.backend(),
                sim: sim.summary(),
                bytes: readout.bytes,
                systems: spans.iter().map(|s| s.last_ms).collect(),
            });
            whole.clear();
            sim.clear();
            Input::Backend(backend)
        }
        Action::Backend(_) => return,
        Action::Population(delta) => Input::Population(delta),
        Action::TogglePause => Input::Pause(!game.play.paused),
        Action::Step => Input::Step,
        Action::Reset => {
            whole.clear();
            sim.clear();
            *previous = None;
            // The digest named a frame of the run being replaced.
            readout.digest = None;
            Input::Reset
        }
        Action::ToggleOverlay => {
            *overlay_on = !*overlay_on;
            return;
        }
        Action::CycleOrder => Input::DrawOrder(game.play.order.next()),
        Action::ToggleAlign => {
            let on = world.resource::<SimConfig>().align_every > 0;
            Input::AlignEvery(if on { 0 } else { ALIGN_EVERY })
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
                *previous = None;
                readout.digest = None;
            }
            return;
        }
    };
    // (A quick load's failure is handled above; an unknown group cannot come from the overlay's rows.)
    if let Err(error) = game.input(input) {
        game.say(error);
    }
}

/// Fills the readout from counters the frame kept anyway (no query, no walk of the world): see the overlay.
fn gather(
    game: &Game,
    readout: &mut Readout,
    (whole, sim): (&mut FrameTimes, &mut FrameTimes),
    rate_clock: &mut (Instant, u64, u64, f32, f32),
) {
    let paused = game.play.paused;
    let world = &game.play.app.world;
    let stats = world.resource::<SimStats>().clone();
    let elapsed = rate_clock.0.elapsed().as_secs_f32();
    if elapsed >= 1.0 {
        rate_clock.3 = (stats.spawned - rate_clock.1) as f32 / elapsed;
        rate_clock.4 = (stats.deaths - rate_clock.2) as f32 / elapsed;
        *rate_clock = (Instant::now(), stats.spawned, stats.deaths, rate_clock.3, rate_clock.4);
    }
    let totals = world.command_totals();
    readout.backend = world.backend();
    readout.whole = whole.summary();
    readout.sim = sim.summary();
    readout.scenario = world.resource::<SimConfig>().scenario;
    readout.census = census(world);
    readout.spawns_per_s = rate_clock.3;
    readout.deaths_per_s = rate_clock.4;
    readout.commands = (totals.applied, totals.skipped);
    readout.stale = stats.stale_caught;
    readout.bytes = world.storage_bytes();
    readout.sim_frame = stats.frames;
    readout.refused = stats.spawn_refused + totals.refused;
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

/// Reads the frame buffer and writes it as a PNG (rows flipped: GL's origin is bottom left).
fn save_screenshot(path: &Path) -> Result<(), String> {
    let image = get_screen_data();
    let (w, h) = (image.width as usize, image.height as usize);
    let mut rows = vec![0u8; w * h * 4];
    for y in 0..h {
        rows[y * w * 4..(y + 1) * w * 4].copy_from_slice(&image.bytes[(h - 1 - y) * w * 4..(h - y) * w * 4]);
    }
    swarm::files::write_whole(path, |temp| {
        image::save_buffer(temp, &rows, w as u32, h as u32, image::ColorType::Rgba8).map_err(|e| e.to_string())
    })
}
