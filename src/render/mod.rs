//! The window: the only code that calls macroquad. It reads the frame time once per frame and hands the
//! simulation whole fixed steps (macroquad's `arkanoid` pattern), draws the world, the overlay and the panel, and
//! applies the user's actions.

pub mod overlay;
pub mod panel;
pub mod sprites;

use macroquad::prelude::*;
use overlay::{FrameTimes, Previous, Readout};
use panel::{Action, PanelState};
use sprites::{DrawOrder, DrawScratch, Sprites};
use std::path::{Path, PathBuf};
use std::time::Instant;
use swarm::app::profile::{Profiler, SpanStat, TraceFile};
use swarm::app::App;
use swarm::cli::{BackendChoice, Cli};
use swarm::ecs::{Backend, Entity};
use swarm::sim::{build_app_with, census, digest, SimConfig, SimStats, SpawnRequests, DT};

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

struct Game {
    cli: Cli,
    config: SimConfig,
    capacity: u32,
    app: App,
    profiler: Profiler,
    render_id: u64,
    overlay_id: u64,
    sort_id: u64,
}

impl Game {
    fn new(cli: Cli) -> Self {
        let config = cli.config();
        let backend = match cli.backend() {
            BackendChoice::One(b) => b,
            BackendChoice::All => Backend::SparseSet, // refused by the CLI; a safe default all the same
        };
        let capacity = cli.capacity.unwrap_or_else(|| config.default_capacity());
        let profiler = Profiler::new();
        let app = build_app_with(config.clone(), cli.seed, backend, capacity, profiler.clone());
        // Registered after the systems, so the overlay lists them last.
        let sort_id = profiler.register("y_sort");
        let render_id = profiler.register("render");
        let overlay_id = profiler.register("overlay+panel");
        Self { cli, config, capacity, app, profiler, render_id, overlay_id, sort_id }
    }

    fn reset(&mut self) {
        let backend = self.app.world.backend();
        let mut config = self.config.clone();
        config.target_population = self.app.world.resource::<SimConfig>().target_population;
        config.align_every = self.app.world.resource::<SimConfig>().align_every;
        self.app = build_app_with(config, self.cli.seed, backend, self.capacity, self.profiler.clone());
    }
}

/// Runs the window until it is closed, or for `--frames N` (then saves `--screenshot` if asked).
pub async fn run(cli: Cli) {
    let frames_limit = cli.frames;
    let screenshot = cli.screenshot.clone();
    let trace_path = cli.trace.clone();
    let mut game = Game::new(cli);
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

    let mut times = FrameTimes::default();
    let mut previous: Option<Previous> = None;
    let mut readout = Readout::default();
    let mut scratch = DrawScratch::default();
    let (mut order_buffer, mut sort_scratch): (Vec<Entity>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut text = String::with_capacity(256);
    let mut panel_text = String::with_capacity(64);
    let mut actions: Vec<Action> = Vec::with_capacity(16);
    let mut spans: Vec<SpanStat> = Vec::new();
    let (mut paused, mut overlay_on, mut order) = (false, true, DrawOrder::Storage);
    let mut accumulator = 0.0f32;
    let mut ui_ms = 0.0f32;
    let mut rate_clock = (Instant::now(), 0u64, 0u64, 0.0f32, 0.0f32);
    let mut frame = 0u32;

    loop {
        let frame_start = Instant::now();
        let dt = get_frame_time(); // read once, handed to the simulation as whole fixed steps
        let camera = sprites::arena_camera(game.config.arena);

        // Input: keys, panel clicks from the last frame's panel, bursts.
        let over_ui = panel::contains(mouse_position().into());
        panel::read_input(game.app.world.backend(), |p| camera.screen_to_world(p), over_ui, &mut actions);
        if let Some(k) = game.cli.switch_every {
            if frame > 0 && frame.is_multiple_of(k) {
                actions.push(Action::Backend(game.app.world.backend().next()));
            }
        }
        for action in actions.drain(..) {
            apply(
                action,
                &mut game,
                &mut paused,
                &mut overlay_on,
                &mut order,
                &mut times,
                &mut previous,
                &mut spans,
                &readout,
            );
        }

        // Simulation: fixed steps of DT. A screenshot run steps exactly once per frame, so it is reproducible.
        if screenshot.is_some() {
            game.app.update();
        } else if !paused {
            accumulator = (accumulator + dt).min(DT * MAX_STEPS_PER_FRAME as f32);
            while accumulator >= DT {
                game.app.update();
                accumulator -= DT;
            }
        }

        // World.
        if let DrawOrder::YSorted(method) = order {
            let world = &mut game.app.world;
            game.profiler.time("y_sort", game.sort_id, || {
                swarm::sim::painter::sort_by_y(world, method, &mut order_buffer, &mut sort_scratch)
            });
        }
        clear_background(Color::new(0.035, 0.04, 0.07, 1.0));
        set_camera(&camera);
        {
            let world = &mut game.app.world;
            game.profiler.time("render", game.render_id, || {
                draw_rectangle(0.0, 0.0, game.config.arena.x, game.config.arena.y, Color::new(0.07, 0.08, 0.12, 1.0));
                sprites::draw_world(world, &sprites, &mut scratch);
            });
        }
        set_default_camera();

        // Readout, overlay and panel.
        gather(&mut game, &mut readout, &mut times, &mut rate_clock, paused, frame);
        let ui_start = Instant::now();
        game.profiler.time("overlay+panel", game.overlay_id, || {
            if overlay_on {
                overlay::draw(&readout, &times, previous.as_ref(), &game.profiler, &mut text);
            }
            let state = PanelState {
                backend: game.app.world.backend(),
                population: game.app.world.resource::<SimConfig>().target_population,
                paused,
                overlay: overlay_on,
                order,
                align: game.app.world.resource::<SimConfig>().align_every > 0,
                ui_ms,
            };
            panel::draw(&state, &mut actions, &mut panel_text);
            draw_text(panel::HELP.as_str(), 10.0, screen_height() - 10.0, 18.0, Color::new(0.75, 0.8, 0.9, 0.9));
            if !sprites.source.ends_with("assets") {
                draw_text(&sprites.source, 10.0, screen_height() - 30.0, 16.0, Color::new(1.0, 0.6, 0.4, 0.9));
            }
        });
        ui_ms = ui_start.elapsed().as_secs_f32() * 1e3;

        frame += 1;
        times.push(frame_start.elapsed().as_secs_f32() * 1e3);

        if let (Some(limit), Some(path)) = (frames_limit, &screenshot) {
            if frame >= limit {
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
                finish(trace);
                std::process::exit(code);
            }
        }
        if frames_limit.is_some_and(|limit| frame >= limit) || is_quit_requested() || is_key_pressed(KeyCode::Escape) {
            finish(trace);
            std::process::exit(0);
        }
        next_frame().await;
    }
}

fn finish(trace: Option<TraceFile>) {
    if let Some(trace) = trace {
        if let Err(error) = trace.finish() {
            eprintln!("swarm: cannot write trace: {error}");
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn apply(
    action: Action,
    game: &mut Game,
    paused: &mut bool,
    overlay_on: &mut bool,
    order: &mut DrawOrder,
    times: &mut FrameTimes,
    previous: &mut Option<Previous>,
    spans: &mut Vec<SpanStat>,
    readout: &Readout,
) {
    match action {
        Action::Backend(backend) if backend != game.app.world.backend() => {
            // Keep the outgoing backend's last figures beside the new ones.
            game.profiler.snapshot(spans);
            *previous = Some(Previous {
                backend: game.app.world.backend(),
                frames: times.summary(),
                bytes: readout.bytes,
                systems: spans.iter().map(|s| s.last_ms).collect(),
            });
            game.app.world.set_backend(backend);
            times.clear();
        }
        Action::Backend(_) => {}
        Action::Population(delta) => {
            let config = game.app.world.resource_mut::<SimConfig>();
            config.target_population = (config.target_population as i64 + delta).clamp(0, game.capacity as i64) as u32;
        }
        Action::TogglePause => *paused = !*paused,
        Action::Step => {
            *paused = true;
            game.app.update();
        }
        Action::Reset => {
            game.reset();
            times.clear();
            *previous = None;
        }
        Action::ToggleOverlay => *overlay_on = !*overlay_on,
        Action::CycleOrder => *order = order.next(),
        Action::ToggleAlign => {
            let config = game.app.world.resource_mut::<SimConfig>();
            config.align_every = if config.align_every == 0 { 30 } else { 0 };
        }
        Action::Burst(at) => game.app.world.resource_mut::<SpawnRequests>().0.push(at),
    }
}

fn gather(
    game: &mut Game,
    readout: &mut Readout,
    times: &mut FrameTimes,
    rate_clock: &mut (Instant, u64, u64, f32, f32),
    paused: bool,
    frame: u32,
) {
    let world = &mut game.app.world;
    let stats = world.resource::<SimStats>().clone();
    let elapsed = rate_clock.0.elapsed().as_secs_f32();
    if elapsed >= 1.0 {
        rate_clock.3 = (stats.spawned - rate_clock.1) as f32 / elapsed;
        rate_clock.4 = (stats.deaths - rate_clock.2) as f32 / elapsed;
        *rate_clock = (Instant::now(), stats.spawned, stats.deaths, rate_clock.3, rate_clock.4);
    }
    if frame.is_multiple_of(60) {
        readout.digest = (digest(world), stats.frames);
    }
    let totals = world.command_totals();
    readout.backend = world.backend();
    readout.fps = get_fps();
    readout.frames = times.summary();
    readout.census = census(world);
    readout.spawns_per_s = rate_clock.3;
    readout.deaths_per_s = rate_clock.4;
    readout.commands = (totals.applied, totals.skipped);
    readout.stale = stats.stale_caught;
    readout.bytes = world.storage_bytes();
    readout.sim_frame = stats.frames;
    readout.refused = stats.spawn_refused + totals.refused;
    readout.paused = paused;
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
