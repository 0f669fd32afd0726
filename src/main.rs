//! The binary: the headless report, or the window. `render/` and this file are the only code that calls macroquad.

#![forbid(unsafe_code)]

mod render;

use std::process::ExitCode;
use swarm::app::profile::Profiler;
use swarm::app::profile::TraceFile;
use swarm::cli::{BackendChoice, Cli};
use swarm::ecs::Backend;
use swarm::sim::{report, snapshot};

fn main() -> ExitCode {
    let cli = Cli::parse_or_exit();
    if cli.headless {
        return headless(&cli);
    }
    macroquad::Window::from_config(render::conf(), render::run(cli));
    ExitCode::SUCCESS
}
fn headless(cli: &Cli) -> ExitCode {
    // A --load file is read and checked once, before anything runs: a bad one is refused like a bad flag.
    let loaded = cli.load.as_ref().map(|path| {
        let bytes = std::fs::read(path).unwrap_or_else(|e| Cli::refuse(format!("--load {}: {e}", path.display())));
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
    for backend in backends {
        let app = match &loaded {
            Some(bytes) => snapshot::load_app(bytes, backend, Profiler::new()).expect("checked above").0,
            None => {
                let s = cli.run_settings(backend.unwrap_or_default());
                swarm::sim::build_app(s.config, s.seed, s.backend, s.capacity)
            }
        };
        let backend = app.world.backend();
        let settings = cli.run_settings(backend);
        let trace_path = cli.trace.as_ref().map(|path| {
            if cli.backend() == BackendChoice::All {
                per_backend(path, backend)
            } else {
                path.clone()
            }
        });
        // (The path was checked with the flags, before anything ran.)
        let mut trace = None;
        let (report, app) = report::run_app(app, settings.frames, settings.switch_every, |app| {
            if let Some(path) = &trace_path {
                match TraceFile::create(app.profiler(), path.clone()) {
                    Ok(file) => trace = Some((file, path.clone())),
                    Err(error) => eprintln!("swarm: cannot write trace {}: {error}", path.display()),
                }
            }
        });
        if let Some((file, path)) = trace {
            if let Err(error) = file.finish() {
                eprintln!("swarm: cannot write trace {}: {error}", path.display());
                return ExitCode::FAILURE;
            }
            if !cli.json {
                eprintln!("trace written to {}", path.display());
            }
        }
        if !cli.json {
            println!("{report}");
        }
        if let Some(path) = &cli.save {
            match snapshot::save_file(&app.world, path) {
                Ok(bytes) if !cli.json => eprintln!("world saved to {} ({bytes} bytes)", path.display()),
                Ok(_) => {}
                Err(error) => {
                    eprintln!("swarm: cannot save {}: {error}", path.display());
                    return ExitCode::FAILURE;
                }
            }
        }
        if cli.align_every > 0 && backend == Backend::SparseSet {
            // The same run without alignment, to show what `sort_as` buys movement and collision.
            let mut plain = settings.clone();
            plain.config.align_every = 0;
            let without = report::run(&plain, |_| {});
            if !cli.json {
                print_alignment(&report, &without, cli.align_every);
            }
            reports.push(report);
            reports.push(without);
            continue;
        }
        reports.push(report);
    }
    let digests_differ = cli.backend() == BackendChoice::All && reports.iter().any(|r| r.digest != reports[0].digest);
    if cli.json {
        println!("{}", serde_json::to_string_pretty(&reports).expect("reports serialize"));
    } else if cli.backend() == BackendChoice::All {
        println!("digests {} across backends", if digests_differ { "DIFFER" } else { "equal" });
    }
    if digests_differ {
        eprintln!("swarm: the backends ended in different worlds (digests differ)");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
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
