//! The command line. One parser for the window and the headless runs; bad flags or values exit non-zero with a
//! clear message and the usage line.

use crate::ecs::Backend;
use crate::sim::limits;
use crate::sim::report::RunSettings;
use crate::sim::{Scenario, SimConfig};
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use std::path::PathBuf;

/// A backend name, or `all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// One backend.
    One(Backend),
    /// Each backend in turn (headless only).
    All,
}

fn parse_backend(s: &str) -> Result<BackendChoice, String> {
    if s == "all" {
        return Ok(BackendChoice::All);
    }
    s.parse::<Backend>().map(BackendChoice::One).map_err(|e| format!("{e}, or all"))
}

/// The value parser of a numeric flag: a number within `range` (a limit of [`limits`], which files obey too).
fn within(range: std::ops::RangeInclusive<u32>) -> impl Fn(&str) -> Result<u32, String> + Clone {
    move |text| limits::parse_within(text, &range)
}

/// The scenario of a run without `--scenario` (and without `--load` or `--replay`, whose files carry theirs).
pub const DEFAULT_SCENARIO: Scenario = Scenario::Armies;

/// Swarm: a sparse-set ECS with live-switchable storage backends, shown by a 2D swarm battle.
#[derive(Parser, Debug, Clone)]
#[command(name = "swarm", version, about)]
pub struct Cli {
    /// Run without a window and print a report per backend.
    #[arg(long)]
    pub headless: bool,
    /// Frames to run (headless default 600; the window runs until closed unless given).
    #[arg(long, allow_negative_numbers = true, value_parser = within(limits::FRAMES))]
    pub frames: Option<u32>,
    /// Target population of fighters.
    #[arg(long, allow_negative_numbers = true, default_value_t = 10_000, value_parser = within(limits::POPULATION))]
    pub entities: u32,
    /// Seed of the run (a run depends only on seed and settings).
    #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
    pub seed: u64,
    /// Storage backend (the help lists the names, from `Backend::ALL`); see [`Cli::backend`] for the default.
    #[arg(long, value_parser = parse_backend,
          help = format!("Storage backend: {} (or all, headless) [default: {}, or the one a --load file was saved on]",
                         Backend::names(), Backend::default().name()))]
    pub backend: Option<BackendChoice>,
    /// Threads the schedule may use [default: the machine's cores]; the world is the same for every count.
    #[arg(long, allow_negative_numbers = true, value_parser = within(limits::THREADS))]
    pub threads: Option<u32>,
    /// Switch to the next backend live every K frames (headless: the digest must not change; window: a demo).
    #[arg(long, allow_negative_numbers = true, value_parser = within(limits::SWITCH_EVERY))]
    pub switch_every: Option<u32>,
    /// Print the headless report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run under a GGRS sync test that rolls back K frames every frame and resimulates them, comparing each frame's
    /// digest with the first run's; exit 1 at the first mismatch. Headless, both players' bursts are scripted; in
    /// the window, clicks are red's and blue's are scripted.
    #[arg(long, value_name = "K", allow_negative_numbers = true, value_parser = within(limits::CHECK_DISTANCE))]
    pub synctest: Option<u32>,
    /// Play as one of two peers over UDP (GGRS, desync detection on): player 0 is red, 1 blue. Headless, with
    /// scripted bursts until --frames is confirmed; in the window, clicks are this player's bursts (with --frames,
    /// until that frame is confirmed). Prints the digest of that frame, the same on both peers whatever their
    /// backends and threads.
    #[arg(long, requires_all = ["local_port", "remote", "player"])]
    pub p2p: bool,
    /// The UDP port this peer listens on (--p2p).
    #[arg(long, value_name = "PORT", requires = "p2p", allow_negative_numbers = true)]
    pub local_port: Option<u16>,
    /// The other peer, as HOST:PORT (--p2p).
    #[arg(long, value_name = "HOST:PORT", requires = "p2p", value_parser = parse_remote)]
    pub remote: Option<std::net::SocketAddr>,
    /// This peer's player, 0 or 1 (--p2p).
    #[arg(long, value_name = "0|1", requires = "p2p", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u8).range(0..=1))]
    pub player: Option<u8>,
    /// Seconds to wait for the other peer (--p2p), at the start and whenever it goes quiet.
    #[arg(long, value_name = "SECONDS", requires = "p2p", default_value_t = 10, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    pub timeout: u64,
    /// Write a Chrome trace of the system spans to FILE (Perfetto opens it).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Window: run the given frames, save a PNG to FILE, and exit.
    #[arg(long, value_name = "FILE")]
    pub screenshot: Option<PathBuf>,
    /// World capacity (maximum live entities); default fits the population and its particles.
    #[arg(long, allow_negative_numbers = true, value_parser = within(limits::CAPACITY))]
    pub capacity: Option<u32>,
    /// Where fighters start and refill: see [`Cli::scenario`] for the default.
    #[arg(long, value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<Scenario>()),
          help = format!("Scenario: {} ({}), {} ({}), {} ({}; `mixed` is its old name) or {} ({}) [default: {}]",
                         Scenario::Armies, Scenario::Armies.describe(), Scenario::Battle, Scenario::Battle.describe(),
                         Scenario::Churn, Scenario::Churn.describe(), Scenario::Stress, Scenario::Stress.describe(),
                         DEFAULT_SCENARIO))]
    pub scenario: Option<Scenario>,
    /// Sort the velocity and health pools into the position pool's order every N frames (sparse set; 0 = never).
    #[arg(long, allow_negative_numbers = true, default_value_t = 0, value_parser = within(limits::ALIGN_EVERY))]
    pub align_every: u32,
    /// Save the world to FILE: headless after the last frame, the window when it closes (.json for JSON, else
    /// compact binary).
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Headless: write the backends' comparison as an SVG chart to FILE (frame time split by system, p99, bytes
    /// per entity; with --backend all, one bar per backend).
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// Start from the world saved in FILE instead of the seed (its settings, seed and capacity come with it).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["entities", "seed", "capacity", "align_every", "scenario"])]
    pub load: Option<PathBuf>,
    /// Window: record the run's inputs to FILE as it goes (JSON Lines), to replay with --headless --replay FILE.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Replay a recording made with --record: the same frames and inputs, each input's digest compared with the
    /// recorded one (needs --headless; works with --trace, --save and --json).
    #[arg(long, value_name = "FILE", conflicts_with_all = [
        "load", "entities", "seed", "capacity", "align_every", "scenario", "backend", "switch_every", "frames",
    ])]
    pub replay: Option<PathBuf>,
    /// Window: open the compare view (this moment run on every backend, key C) once --frames frames have run, or
    /// at once without --frames; with --frames the window exits when the comparison is done (after --screenshot).
    #[arg(long)]
    pub compare: bool,
    /// With --scenario stress: the benchmark. The first frame lands the --entities fighters in waves (points drawn
    /// from the seed) and is timed apart; then fixed steps to --frames; prints frame-time percentiles (headless: the
    /// simulation's frame; the window: the whole frame, one step each) and the digest, the same on every backend and
    /// thread count.
    #[arg(long)]
    pub benchmark: bool,
    /// With --scenario stress: add waves (a tenth of the fighters alive, at least 1,000, a step) until the median
    /// frame of a step passes --ramp-ms (the window: the whole frame, one step each; headless: the simulation's
    /// frame alone), then print how many fighters it held and exit.
    #[arg(long)]
    pub ramp: bool,
    /// The ramp's budget a frame, in ms [default: 16.7, 60 FPS].
    #[arg(long, value_name = "MS", requires = "ramp", value_parser = parse_budget)]
    pub ramp_ms: Option<f64>,
    /// Frames each backend runs in the window's compare view [default: 120].
    #[arg(long, value_name = "N", value_parser = within(limits::COMPARE_FRAMES))]
    pub compare_frames: Option<u32>,
}

/// Prints a clap error with the usage line and exits with its status (2 for refusals, 0 for `--help`).
fn fail(error: clap::Error) -> ! {
    // `--help` and `--version` are "errors" that print to stdout and exit 0.
    if !error.use_stderr() {
        error.exit()
    }
    // clap prints the usage line with some errors only; every refusal here shows it.
    let message = error.render().to_string();
    if message.contains("Usage:") {
        eprint!("{message}");
    } else {
        let usage = Cli::command().render_usage();
        let message = message.trim_end().trim_end_matches("For more information, try '--help'.").trim_end();
        eprintln!("{message}\n\n{usage}\n\nFor more information, try '--help'.");
    }
    std::process::exit(error.exit_code());
}

impl Cli {
    /// Parses `std::env::args`, exiting with a message and the usage line on bad input.
    pub fn parse_or_exit() -> Self {
        let parsed = Cli::try_parse().and_then(|cli| match cli.validate() {
            Ok(()) => Ok(cli),
            Err((kind, message)) => Err(Cli::command().error(kind, message)),
        });
        match parsed {
            Ok(cli) => cli,
            Err(error) => fail(error),
        }
    }

    /// Refuses input found bad after parsing (a `--load` file that does not read, say) the way bad flags are
    /// refused: the message, the usage line, exit status 2.
    pub fn refuse(message: impl std::fmt::Display) -> ! {
        fail(Cli::command().error(ErrorKind::ValueValidation, message))
    }

    /// Checks the combinations clap cannot, and the output paths (before anything runs: a bad path is refused at
    /// once, not after the frames).
    pub fn validate(&self) -> Result<(), (ErrorKind, String)> {
        let conflict = |m: &str| Err((ErrorKind::ArgumentConflict, m.to_string()));
        let output = |flag: &str, path: &Option<PathBuf>, extensions: &[&str]| match path {
            Some(path) => crate::files::check_writable(path, extensions)
                .map_err(|why| (ErrorKind::ValueValidation, format!("{flag}: {why}"))),
            None => Ok(()),
        };
        output("--trace", &self.trace, &["json"])?;
        output("--screenshot", &self.screenshot, &["png"])?;
        output("--save", &self.save, &[])?;
        output("--chart", &self.chart, &["svg"])?;
        if self.chart.is_some() && !self.headless {
            return conflict(
                "--chart writes the headless comparison; add --headless (the window has its compare view)",
            );
        }
        output("--record", &self.record, &[])?;
        for (flag, path) in [("--load", &self.load), ("--replay", &self.replay)] {
            if let Some(path) = path {
                if !path.is_file() {
                    let why = if path.exists() { "is not a file" } else { "does not exist" };
                    return Err((ErrorKind::ValueValidation, format!("{flag}: {} {why}", path.display())));
                }
            }
        }
        if self.save.is_some() && self.backend() == BackendChoice::All {
            return conflict("--save keeps one world; choose one --backend");
        }
        if self.headless {
            if self.screenshot.is_some() {
                return conflict("--screenshot needs the window; drop --headless");
            }
            if self.record.is_some() {
                return conflict(
                    "--record records the window's inputs; drop --headless (replay a recording with --headless \
                     --replay FILE)",
                );
            }
            if self.compare || self.compare_frames.is_some() {
                return conflict(
                    "--compare and --compare-frames are the window's compare view; headless, use --backend all",
                );
            }
        }
        if self.benchmark || self.ramp {
            let flag = if self.benchmark { "--benchmark" } else { "--ramp" };
            if self.benchmark && self.ramp {
                return conflict("--benchmark and --ramp are two runs: choose one");
            }
            if self.load.is_some() || self.replay.is_some() || self.scenario != Some(Scenario::Stress) {
                return conflict(&format!("{flag} runs a new world of the stress scenario: add --scenario stress"));
            }
            let others = [
                (self.synctest.is_some(), "--synctest"),
                (self.p2p, "--p2p"),
                (self.switch_every.is_some(), "--switch-every"),
                (self.json, "--json"),
                (self.chart.is_some(), "--chart"),
                (self.save.is_some(), "--save"),
                (self.record.is_some(), "--record"),
                (self.compare, "--compare"),
                (self.ramp && self.screenshot.is_some(), "--screenshot"),
                (self.ramp && self.backend() == BackendChoice::All, "--backend all"),
            ];
            if let Some((_, other)) = others.iter().find(|(given, _)| *given) {
                return conflict(&format!("{flag} is a measurement of its own: drop {other}"));
            }
            if self.benchmark && !self.headless && self.frames.is_none() {
                return conflict("--benchmark in the window needs --frames N (the frames to time)");
            }
        }
        if self.p2p && (self.synctest.is_some() || self.backend() == BackendChoice::All || self.load.is_some()) {
            return conflict("--p2p plays one new world: drop --synctest, --backend all and --load");
        }
        if (self.synctest.is_some() || self.p2p) && (self.record.is_some() || self.compare) {
            return conflict("--synctest and --p2p are played through GGRS: drop --record and --compare");
        }
        if self.headless {
            if (self.synctest.is_some() || self.p2p)
                && (self.replay.is_some() || self.switch_every.is_some() || self.chart.is_some())
            {
                return conflict(
                    "--synctest and --p2p run their own scripted frames; drop --replay, --switch-every and --chart",
                );
            }
        } else {
            if self.replay.is_some() {
                return conflict("--replay runs without a window; add --headless");
            }
            if self.backend() == BackendChoice::All {
                return conflict(&format!(
                    "--backend all runs every backend in turn and needs --headless; the window switches live (keys 1-{})",
                    Backend::ALL.len()
                ));
            }
            if self.json {
                return conflict("--json prints the headless report; add --headless");
            }
            if self.screenshot.is_some() && self.frames.is_none() {
                return conflict("--screenshot needs --frames N (the frame to capture)");
            }
        }
        Ok(())
    }

    /// Flags that are accepted but do nothing in this run, in words (the binary prints each on stderr before it
    /// runs). Not refusals: the window can switch to a backend on which they act.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if let BackendChoice::One(backend) = self.backend() {
            if self.align_every > 0 && backend != Backend::SparseSet && self.switch_every.is_none() {
                let how = if self.headless {
                    "this run stays on it, so nothing is aligned"
                } else {
                    "it takes effect after a switch to sparse-set (key 1)"
                };
                warnings.push(format!(
                    "--align-every sorts the sparse set's pools and the {backend} backend has no order to align: {how}"
                ));
            }
        }
        warnings
    }

    /// The ramp's budget a frame in ms: `--ramp-ms`, else 16.7 (60 FPS).
    pub fn ramp_ms(&self) -> f64 {
        self.ramp_ms.unwrap_or(crate::sim::stress::BUDGET_60_FPS)
    }

    /// Frames each backend runs in the window's compare view: `--compare-frames`, else 120.
    pub fn compare_frames(&self) -> u32 {
        self.compare_frames.unwrap_or(120)
    }

    /// The backend asked for: `--backend`, else the default (a `--load` run uses the file's backend instead, when
    /// `--backend` is not given: see [`Cli::backend`]'s field).
    pub fn backend(&self) -> BackendChoice {
        self.backend.unwrap_or(BackendChoice::One(Backend::default()))
    }

    /// The scenario asked for: `--scenario`, else [`DEFAULT_SCENARIO`].
    pub fn scenario(&self) -> Scenario {
        self.scenario.unwrap_or(DEFAULT_SCENARIO)
    }

    /// The simulation settings these flags ask for.
    pub fn config(&self) -> SimConfig {
        let mut config = SimConfig::with_scenario(self.entities, self.scenario());
        config.align_every = self.align_every;
        config
    }

    /// The headless run for `backend`.
    pub fn run_settings(&self, backend: Backend) -> RunSettings {
        let config = self.config();
        RunSettings {
            capacity: self.capacity.unwrap_or_else(|| config.default_capacity()),
            config,
            seed: self.seed,
            frames: self.frames.unwrap_or(600),
            backend,
            switch_every: self.switch_every,
            threads: self.threads(),
        }
    }

    /// The thread count: `--threads`, or the machine's cores.
    pub fn threads(&self) -> usize {
        self.threads.map_or_else(crate::app::default_threads, |n| n as usize)
    }
}

/// `--ramp-ms`: a frame budget in milliseconds, more than 0 and at most a second.
fn parse_budget(text: &str) -> Result<f64, String> {
    let ms: f64 = text.trim().parse().map_err(|_| format!("`{text}` is not a number of milliseconds"))?;
    if ms > 0.0 && ms <= 1000.0 {
        Ok(ms)
    } else {
        Err(format!("{ms} is outside the limit of more than 0 to 1000 ms"))
    }
}

/// `--remote HOST:PORT`, resolved (a name such as `localhost` too); the first address it names.
fn parse_remote(text: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let malformed = |why: String| format!("`{text}` is not HOST:PORT ({why})");
    let mut addresses = text.to_socket_addrs().map_err(|e| malformed(e.to_string()))?;
    addresses.next().ok_or_else(|| malformed("it names no address".into()))
}
