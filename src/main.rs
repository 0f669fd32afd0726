//! The binary: the headless report, or the window. `render/` and this file are the only code that calls macroquad.

#![forbid(unsafe_code)]

mod render;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use swarm::app::profile::Profiler;
use swarm::app::profile::TraceFile;
use swarm::app::App;
use swarm::cli::{BackendChoice, Cli};
use swarm::ecs::Backend;
use swarm::sim::play::Start;
use swarm::sim::recording::Recording;
use swarm::sim::replay;
use swarm::sim::{chart, compare, report, snapshot};

fn main() -> ExitCode {
    let cli = Cli::parse_or_exit();
    for warning in cli.warnings() {
        eprintln!("swarm: warning: {warning}");
    }
    if cli.headless {
        return headless(&cli);
    }
    let start = window_start(&cli);
    macroquad::Window::from_config(render::conf(), render::run(cli, start));
    ExitCode::SUCCESS
}

/// `--synctest K`: the run's frames under a GGRS sync test on each backend asked for; a line per backend, exit 1
/// at the first desync.
fn synctest(cli: &Cli, distance: usize) -> ExitCode {
    use swarm::sim::rollback::{scripted_input, sync_test};
    let backends = match cli.backend() {
        BackendChoice::All => Backend::ALL.to_vec(),
        BackendChoice::One(backend) => vec![backend],
    };
    for backend in backends {
        let mut app = match &cli.load {
            Some(path) => {
                snapshot::load_app(&read_load(path), Some(backend), Profiler::new())
                    .unwrap_or_else(|error| Cli::refuse(format!("--load {}: {error}", path.display())))
                    .0
            }
            None => {
                let s = cli.run_settings(backend);
                swarm::sim::build_app(s.config, s.seed, s.backend, s.capacity)
            }
        };
        let settings = cli.run_settings(backend);
        app.set_threads(settings.threads);
        let arena = app.world.resource::<swarm::sim::SimConfig>().arena;
        let started = std::time::Instant::now();
        match sync_test(&mut app, settings.frames, distance, |frame, player| scripted_input(arena, frame, player)) {
            Ok(tested) => println!(
                "{}",
                tested.summary(
                    backend,
                    settings.threads,
                    distance,
                    swarm::sim::digest(&app.world),
                    Some(started.elapsed())
                )
            ),
            Err(error) => {
                eprintln!("swarm: synctest {backend}: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// `--p2p`: one of two peers over UDP until `--frames` is confirmed; exit 1 on a desync, 2 on a setup problem.
fn p2p(cli: &Cli) -> ExitCode {
    use swarm::sim::net::{run_peer, PeerSettings};
    use swarm::sim::rollback::scripted_input;
    let (backend, s, mut app) = one_app(cli);
    let player = cli.player.unwrap_or(0) as usize;
    let peer = PeerSettings {
        local_port: cli.local_port.unwrap_or_default(),
        remote: cli.remote.expect("--p2p requires --remote"),
        player,
        frames: Some(s.frames),
        timeout: std::time::Duration::from_secs(cli.timeout),
    };
    let arena = app.world.resource::<swarm::sim::SimConfig>().arena;
    match run_peer(&mut app, &peer, |frame| scripted_input(arena, frame, player)) {
        Ok(run) => {
            println!("{}", run.summary(player, backend, s.threads, s.frames));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("swarm: p2p: {error}");
            ExitCode::from(error.status())
        }
    }
}

/// Reads a --load file, refusing it (exit 2) if it does not read.
fn read_load(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| Cli::refuse(format!("--load {}: {e}", path.display())))
}

/// The run's one backend (`all` is refused with the flags that come here), its settings, and a new app on them.
fn one_app(cli: &Cli) -> (Backend, swarm::sim::report::RunSettings, App) {
    let backend = match cli.backend() {
        BackendChoice::One(backend) => backend,
        BackendChoice::All => Backend::default(),
    };
    let (s, app) = new_app(cli, backend);
    (backend, s, app)
}

/// The run's settings on `backend`, and a new app on them.
fn new_app(cli: &Cli, backend: Backend) -> (swarm::sim::report::RunSettings, App) {
    let s = cli.run_settings(backend);
    let mut app = swarm::sim::build_app(s.config.clone(), s.seed, s.backend, s.capacity);
    app.set_threads(s.threads);
    (s, app)
}

/// Where the window starts: the seed and settings of the flags, or the --load file, checked before the window
/// opens (a bad one is refused like a bad flag).
fn window_start(cli: &Cli) -> Start {
    let backend = match cli.backend() {
        BackendChoice::One(b) => b,
        BackendChoice::All => Backend::default(), // refused with the flags; a safe default all the same
    };
    match &cli.load {
        Some(path) => Start::snapshot(read_load(path), cli.backend.map(|_| backend))
            .unwrap_or_else(|error| Cli::refuse(format!("--load {}: {error}", path.display()))),
        None => {
            let config = cli.config();
            let capacity = cli.capacity.unwrap_or_else(|| config.default_capacity());
            Start::New { config, seed: cli.seed, capacity, backend }
        }
    }
}

fn headless(cli: &Cli) -> ExitCode {
    if let Some(path) = &cli.replay {
        return replay(cli, path);
    }
    if let Some(distance) = cli.synctest {
        return synctest(cli, distance as usize);
    }
    if cli.p2p {
        return p2p(cli);
    }
    if cli.benchmark {
        return benchmark(cli);
    }
    if cli.ramp {
        return ramp(cli);
    }
    // A --load file is read and checked once, before anything runs: a bad one is refused like a bad flag.
    let loaded = cli.load.as_ref().map(|path| {
        let bytes = read_load(path);
        if let Err(error) = snapshot::load_app(&bytes, None, Profiler::new()) {
            Cli::refuse(format!("--load {}: {error}", path.display()));
        }
        bytes
    });
    // `None`: the backend the --load file was saved on.
    let backends: Vec<Option<Backend>> = match (cli.backend, &loaded) {
        (Some(BackendChoice::All), _) => Backend::ALL.map(Some).to_vec(),
        (Some(BackendChoice::One(b)), _) => vec![Some(b)],
        (None, Some(_)) => vec![None],
        (None, None) => vec![Some(Backend::default())],
    };
    let mut reports = Vec::new();
    // The runs' own reports (the table and the chart), without the alignment comparison's extra runs.
    let mut compared = Vec::new();
    let frames = cli.run_settings(Backend::default()).frames;
    let progress = progress_bar(frames as u64 * backends.len() as u64, cli.json);
    for backend in backends {
        let mut app = match &loaded {
            Some(bytes) => snapshot::load_app(bytes, backend, Profiler::new()).expect("checked above").0,
            None => {
                let s = cli.run_settings(backend.unwrap_or_default());
                swarm::sim::build_app(s.config, s.seed, s.backend, s.capacity)
            }
        };
        let backend = app.world.backend();
        let settings = cli.run_settings(backend);
        app.set_threads(settings.threads);
        let trace_path = cli.trace.as_ref().map(|path| per_backend_if(cli, path, backend));
        // (The path was checked with the flags, before anything ran.)
        let trace = start_trace(&app, trace_path.as_deref());
        let mut run = report::Run::new(app, settings.frames, settings.switch_every);
        progress.set_message(backend.name());
        while !run.is_done() {
            run.step();
            progress.inc(1);
        }
        let (report, app) = run.finish();
        if !finish_trace(trace, cli.json) {
            return ExitCode::FAILURE;
        }
        compared.push(report.clone());
        if !cli.json && cli.backend() != BackendChoice::All {
            progress.suspend(|| println!("{report}"));
        }
        if !save(cli, &app) {
            return ExitCode::FAILURE;
        }
        if cli.align_every > 0 && backend == Backend::SparseSet {
            // The same run without alignment, to show what `sort_as` buys movement and collision.
            let mut plain = settings.clone();
            plain.config.align_every = 0;
            let without = report::run(&plain, |_| {});
            if !cli.json {
                progress.suspend(|| print_alignment(&report, &without, cli.align_every));
            }
            reports.push(report);
            reports.push(without);
            continue;
        }
        reports.push(report);
    }
    progress.finish_and_clear();
    let digests_differ = cli.backend() == BackendChoice::All && reports.iter().any(|r| r.digest != reports[0].digest);
    if cli.json {
        println!("{}", serde_json::to_string_pretty(&reports).expect("reports serialize"));
    } else if cli.backend() == BackendChoice::All {
        // One side-by-side table (its last line says whether the digests agree).
        print!("{}", compare::table(&compared));
    }
    if let Some(path) = &cli.chart {
        let start = match &cli.load {
            Some(file) => format!("from {}", file.display()),
            None => format!("seed {}, {} fighters wanted", cli.seed, cli.entities),
        };
        if !write_chart(path, &compared, &start, cli.json) {
            return ExitCode::FAILURE;
        }
    }
    if digests_differ {
        eprintln!("swarm: the backends ended in different worlds (digests differ)");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// `--benchmark`, headless: the stress run on each backend asked for, timed; its percentiles and digest. Exit 1
/// if the backends end in different worlds.
fn benchmark(cli: &Cli) -> ExitCode {
    let backends = match cli.backend() {
        BackendChoice::All => Backend::ALL.to_vec(),
        BackendChoice::One(backend) => vec![backend],
    };
    let mut digests = Vec::new();
    for backend in backends {
        let (s, mut app) = new_app(cli, backend);
        let trace = start_trace(&app, cli.trace.as_ref().map(|p| per_backend_if(cli, p, backend)).as_deref());
        let measured = swarm::sim::stress::benchmark(&mut app, s.frames);
        if !finish_trace(trace, false) {
            return ExitCode::FAILURE;
        }
        println!("{measured}");
        digests.push(measured.digest);
    }
    if digests.len() > 1 {
        if digests.iter().any(|d| *d != digests[0]) {
            eprintln!("swarm: the backends ended in different worlds (digests differ)");
            return ExitCode::FAILURE;
        }
        println!("digests equal across backends: {}", digests[0]);
    }
    ExitCode::SUCCESS
}

/// `--ramp`, headless: waves added until the simulation's median frame passes the budget; a line per step, then
/// the fighters held.
fn ramp(cli: &Cli) -> ExitCode {
    let (backend, s, mut app) = one_app(cli);
    println!(
        "ramp: stress on {backend}, threads {}, from {} fighters; each step adds a tenth of those alive (at least {}) \
         in waves of {}, settles {} frames and takes the median of {}",
        s.threads,
        cli.entities,
        swarm::sim::stress::STEP_LEAST,
        swarm::sim::stress::WAVE,
        swarm::sim::stress::SETTLE,
        swarm::sim::stress::MEASURE
    );
    let end = swarm::sim::stress::ramp_headless(&mut app, cli.ramp_ms(), cli.frames, |line| println!("  {line}"));
    println!("{}", end.line("the simulation's frame alone, headless"));
    ExitCode::SUCCESS
}

/// The trace path for `backend`: one file per backend with `--backend all`.
fn per_backend_if(cli: &Cli, path: &Path, backend: Backend) -> PathBuf {
    if cli.backend() == BackendChoice::All {
        per_backend(path, backend)
    } else {
        path.to_path_buf()
    }
}

/// Starts the Chrome trace of `app`'s profiler to `path`, if asked (the path was checked with the flags).
fn start_trace(app: &App, path: Option<&Path>) -> Option<(TraceFile, PathBuf)> {
    let path = path?;
    match TraceFile::create(app.profiler(), path.to_path_buf()) {
        Ok(file) => Some((file, path.to_path_buf())),
        Err(error) => {
            eprintln!("swarm: cannot write trace {}: {error}", path.display());
            None
        }
    }
}

/// Writes the trace; false if that failed (said on stderr).
fn finish_trace(trace: Option<(TraceFile, PathBuf)>, quiet: bool) -> bool {
    let Some((file, path)) = trace else { return true };
    if let Err(error) = file.finish() {
        eprintln!("swarm: cannot write trace {}: {error}", path.display());
        return false;
    }
    if !quiet {
        eprintln!("trace written to {}", path.display());
    }
    true
}

/// Saves the world to `--save`, if asked; false if that failed (said on stderr).
fn save(cli: &Cli, app: &App) -> bool {
    let Some(path) = &cli.save else { return true };
    match snapshot::save_file(&app.world, path) {
        Ok(bytes) => {
            if !cli.json {
                eprintln!("world saved to {} ({bytes} bytes)", path.display());
            }
            true
        }
        Err(error) => {
            eprintln!("swarm: cannot save {}: {error}", path.display());
            false
        }
    }
}

/// `--replay FILE`: the recording is read and checked whole before anything runs (a bad one is refused like a
/// bad flag), then replayed with a line per recorded input; the report follows. Exit 1 if any digest differs.
/// With `--json` the lines go to stderr, so stdout is the JSON report alone.
fn replay(cli: &Cli, path: &Path) -> ExitCode {
    let recording = Recording::read(path).unwrap_or_else(|why| Cli::refuse(format!("--replay {why}")));
    let say = |line: &dyn std::fmt::Display| {
        if cli.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    let mut trace = None;
    let replayed = replay::replay(
        &recording,
        Profiler::new(),
        cli.threads(),
        |app| trace = start_trace(app, cli.trace.as_deref()),
        |check| say(check),
    );
    let replayed = match replayed {
        Ok(replayed) => replayed,
        Err(error) => {
            eprintln!("swarm: --replay {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    };
    if !finish_trace(trace, cli.json) {
        return ExitCode::FAILURE;
    }
    if cli.json {
        println!("{}", serde_json::to_string_pretty(&[&replayed.report]).expect("reports serialize"));
    } else {
        println!("{}", replayed.report);
    }
    if !save(cli, &replayed.app) {
        return ExitCode::FAILURE;
    }
    if let Some(chart) = &cli.chart {
        if !write_chart(
            chart,
            std::slice::from_ref(&replayed.report),
            &format!("replay of {}", path.display()),
            cli.json,
        ) {
            return ExitCode::FAILURE;
        }
    }
    if replayed.differs > 0 {
        eprintln!(
            "swarm: the replay DIFFERS from the recording: {} of {} digests differ",
            replayed.differs, replayed.checks
        );
        return ExitCode::FAILURE;
    }
    if !replayed.complete {
        // A replay vouches only for what it saw: the run went on past the file's last line.
        let reached = match recording.inputs.last() {
            Some(last) => format!(
                "replayed up to its last input, frame {}, where all {} digests match",
                last.frame, replayed.checks
            ),
            None => "it has no inputs either, so nothing was compared".to_string(),
        };
        eprintln!(
            "swarm: the recording {} is cut short: it has no end line (the window did not close normally); \
             {reached}; what came after is not vouched for",
            path.display()
        );
        return ExitCode::FAILURE;
    }
    if !cli.json {
        println!("replay matches the recording ({} digests the same)", replayed.checks);
    }
    ExitCode::SUCCESS
}

/// Writes the chart of `reports` to `path` (checked with the flags); false if that failed (said on stderr).
fn write_chart(path: &Path, reports: &[report::Report], start: &str, quiet: bool) -> bool {
    let Some(first) = reports.first() else { return true };
    let title = format!("Swarm: {} frames, {start}, {} live at the end", first.frames, first.live);
    let svg = chart::svg(reports, &title);
    match swarm::files::write_whole(path, |temp| std::fs::write(temp, svg).map_err(|e| e.to_string())) {
        Ok(()) => {
            if !quiet {
                eprintln!("chart written to {}", path.display());
            }
            true
        }
        Err(error) => {
            eprintln!("swarm: cannot write chart {}: {error}", path.display());
            false
        }
    }
}

/// A progress bar on stderr for the headless runs: drawn only on a terminal and never with `--json`, so piped
/// output and JSON stay clean.
fn progress_bar(total: u64, json: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if json || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} frames, {eta} left") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

fn per_backend(path: &std::path::Path, backend: Backend) -> std::path::PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("trace");
    let ext = path.extension().and_then(|s| s.to_str()).unwrap_or("json");
    path.with_file_name(format!("{stem}-{}.{ext}", backend.name()))
}

fn print_alignment(with: &report::Report, without: &report::Report, every: u32) {
    println!("== pool alignment (sort_as every {every} frames) vs none, sparse-set, same seed:");
    for name in ["align_pools", "integrate_velocity", "build_grid", "resolve_collisions"] {
        let ms = |r: &report::Report| r.systems.iter().find(|s| s.name == name).map_or(0.0, |s| s.mean_ms);
        println!("  {:<20} {:>8.3} ms with   {:>8.3} ms without", name, ms(with), ms(without));
    }
    println!("  {:<20} {:>8.3} ms with   {:>8.3} ms without", "frame (mean)", with.mean_ms, without.mean_ms);
    let same = with.digest == without.digest;
    println!("  digest {} (sorting changes no value)\n", if same { "equal" } else { "DIFFERS" });
}
