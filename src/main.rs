//! The binary: the headless report, or the window. `render/` and this file are the only code that calls macroquad.

#![forbid(unsafe_code)]

mod render;

use std::process::ExitCode;
use swarm::app::profile::TraceFile;
use swarm::cli::{BackendChoice, Cli};
use swarm::ecs::Backend;
use swarm::sim::report;

fn main() -> ExitCode {
    let cli = Cli::parse_or_exit();
    if cli.headless {
        return headless(&cli);
    }
    macroquad::Window::from_config(render::conf(), render::run(cli));
    ExitCode::SUCCESS
}
fn headless(cli: &Cli) -> ExitCode {
    let backends: Vec<Backend> = match cli.backend {
        BackendChoice::All => Backend::ALL.to_vec(),
        BackendChoice::One(b) => vec![b],
    };
    let mut reports = Vec::new();
    for backend in backends {
        let settings = cli.run_settings(backend);
        let trace_path = cli.trace.as_ref().map(|path| {
            if cli.backend == BackendChoice::All {
                per_backend(path, backend)
            } else {
                path.clone()
            }
        });
        // (The path was checked with the flags, before anything ran.)
        let mut trace = None;
        let report = report::run(&settings, |app| {
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
    let digests_differ = cli.backend == BackendChoice::All && reports.iter().any(|r| r.digest != reports[0].digest);
    if cli.json {
        println!("{}", serde_json::to_string_pretty(&reports).expect("reports serialize"));
    } else if cli.backend == BackendChoice::All {
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
