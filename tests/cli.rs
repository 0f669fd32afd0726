//! The command line: bad flags and values exit non-zero with a clear message and the usage line; good ones work.

use std::process::Command;
use swarm::ecs::Backend;

fn swarm(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_swarm")).args(args).output().expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn refused(args: &[&str], needle: &str) {
    let (code, _, err) = swarm(args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: message lacks {needle:?}:\n{err}");
    assert!(err.contains("Usage:"), "{args:?}: no usage line:\n{err}");
}

#[test]
fn bad_input_is_refused_clearly() {
    refused(&["--backend", "sparse"], "unknown backend `sparse`");
    refused(&["--headless", "--frames", "0"], "--frames");
    refused(&["--headless", "--frames", "ten"], "invalid value 'ten'");
    refused(&["--headless", "--entities=-5"], "--entities");
    refused(&["--headless", "--entities", "99999999"], "outside the limit of 0 to 2000000");
    refused(&["--headless", "--frames", "10000001"], "outside the limit of 1 to 10000000");
    refused(&["--headless", "--capacity", "0"], "outside the limit of 1 to");
    refused(&["--headless", "--align-every", "99999999"], "--align-every");
    refused(&["--compare-frames", "0"], "--compare-frames");
    refused(&["--headless", "--compare-frames", "10"], "--compare-frames are the window's compare view");
    refused(&["--headless", "--switch-every", "0"], "--switch-every");
    refused(&["--headless", "--seed", "18446744073709551616"], "--seed");
    refused(&["--nonsense"], "--nonsense");
    refused(&["--headless", "--synctest", "9"], "outside the limit of 1 to 8");
    refused(&["--synctest", "2", "--record", "r.jsonl"], "played through GGRS: drop --record and --compare");
    refused(&["--headless", "--synctest", "2", "--switch-every", "5"], "drop --replay, --switch-every");
    refused(&["--backend", "all"], "needs --headless");
    refused(&["--json"], "add --headless");
    refused(&["--headless", "--screenshot", "x.png"], "drop --headless");
    refused(&["--screenshot", "x.png"], "--frames");
    refused(&["--headless", "--scenario", "siege"], "unknown scenario `siege` (known: churn, armies, battle, stress)");
    refused(&["--headless", "--scenario", "armies", "--load", "x.snap"], "--scenario");
    refused(&["--headless", "--scenario", "mixed", "--replay", "x.jsonl"], "--scenario");
}

#[test]
fn scenarios_run_and_differ() {
    let run = |scenario: &str| {
        let (code, out, err) = swarm(&["--headless", "--frames", "40", "--entities", "300", "--scenario", scenario]);
        assert_eq!(code, 0, "--scenario {scenario}: {err}");
        digest_line(&out).to_string()
    };
    let (churn, armies) = (run("churn"), run("armies"));
    assert_ne!(churn, armies, "the scenario changes where fighters start");
    assert_eq!(run("mixed"), churn, "`mixed` is the churn scenario's old name");
    let (code, out, err) = swarm(&["--headless", "--frames", "40", "--entities", "300"]);
    assert_eq!(code, 0, "{err}");
    let default = swarm::cli::DEFAULT_SCENARIO.name();
    assert_eq!(digest_line(&out), if default == "churn" { churn } else { armies }, "the default is {default}");
}

#[test]
fn headless_compares_every_backend_in_one_table_and_a_chart() {
    let dir = std::env::temp_dir().join(format!("swarm-chart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let chart = dir.join("compare.svg");
    let args = ["--headless", "--frames", "40", "--entities", "300", "--backend", "all", "--chart"];
    let (code, out, err) = swarm(&[&args[..], &[chart.to_str().unwrap()]].concat());
    assert_eq!(code, 0, "{err}");
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    let names: Vec<&str> = Backend::ALL.iter().map(|b| b.name()).collect();
    assert_eq!(header, [&["backend"][..], &names].concat(), "{out}");
    let digests: Vec<&str> = out.lines().find_map(|l| l.strip_prefix("digest ")).unwrap().split_whitespace().collect();
    assert_eq!(digests.len(), Backend::ALL.len());
    assert!(digests.iter().all(|d| *d == digests[0] && d.len() == 16), "{digests:?}");
    assert!(out.contains("digests equal across backends"));
    for row in ["frame ms, p99", "  combat", "    resolve_collisions", "bytes per entity"] {
        assert!(out.contains(row), "no row {row:?}:\n{out}");
    }
    // Piped: no progress bar (no carriage returns or escape codes) on stderr.
    assert!(!err.contains('\r') && !err.contains('\u{1b}'), "progress drawn to a pipe: {err:?}");
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(svg.starts_with("<svg") && svg.matches(r#"class="bytes""#).count() == Backend::ALL.len(), "{svg}");
    let all = format!("all {} backends ended on digest {}", Backend::ALL.len(), digests[0]);
    assert!(svg.contains(&all), "{svg}");
    refused(&["--chart", "c.svg"], "add --headless");
    refused(&["--headless", "--chart", dir.join("c.png").to_str().unwrap()], "must end in .svg");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn json_report_and_trace_file() {
    let dir = std::env::temp_dir().join(format!("swarm-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace.json");
    let (code, out, err) = swarm(&[
        "--headless",
        "--frames",
        "20",
        "--entities",
        "200",
        "--json",
        "--switch-every",
        "5",
        "--seed",
        "18446744073709551615",
        "--threads",
        "3",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let reports: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON");
    assert_eq!(reports[0]["frames"], 20);
    assert_eq!(reports[0]["threads"], 3, "the flag, not the machine's cores");
    assert_eq!(reports[0]["switches"], 3);
    assert_eq!(reports[0]["digest"].as_str().unwrap().len(), 16);
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["name"] == "integrate_velocity"));
    assert!(events.len() >= 20 * 9, "{} trace events for 20 frames", events.len());
    // One lane per thread that ran a system (how many threads took work is up to the pool), each named.
    let mut lanes: Vec<u64> = events.iter().filter(|e| e["ph"] == "X").map(|e| e["tid"].as_u64().unwrap()).collect();
    lanes.sort_unstable();
    lanes.dedup();
    assert!(!lanes.is_empty(), "lanes {lanes:?}");
    for lane in &lanes {
        assert!(events.iter().any(|e| e["ph"] == "M" && e["tid"] == *lane), "lane {lane} is named");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn unwritable_trace_is_an_error_not_a_panic() {
    let (code, _, err) =
        swarm(&["--headless", "--frames", "5", "--entities", "10", "--trace", "/nonexistent-dir/t.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--trace") && err.contains("/nonexistent-dir") && !err.contains("panicked"), "{err}");
}

#[test]
fn output_paths_are_checked_before_the_run_and_leave_nothing() {
    let dir = std::env::temp_dir().join(format!("swarm-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    // A million frames: a refusal that came after the run would time the test out.
    let long = ["--frames", "1000000", "--entities", "10"];
    let cases: [(&[&str], &str); 7] = [
        (&["--screenshot", &path("out.jpg")], "must end in .png"),
        (&["--screenshot", &path("out.bmp")], "must end in .png"),
        (&["--screenshot", dir.to_str().unwrap()], "must end in .png"),
        (&["--screenshot", &path("shots.png/")], "is a directory"),
        (&["--screenshot", &path("missing/out.png")], "does not exist"),
        (&["--headless", "--trace", &path("t.txt")], "must end in .json"),
        (&["--headless", "--trace", &path("missing/t.json")], "does not exist"),
    ];
    std::fs::create_dir_all(dir.join("shots.png")).unwrap();
    for (args, needle) in cases {
        let all: Vec<&str> = long.iter().copied().chain(args.iter().copied()).collect();
        let (code, _, err) = swarm(&all);
        assert_eq!(code, 2, "{all:?}: {err}");
        let flag = if args.contains(&"--trace") { "--trace" } else { "--screenshot" };
        assert!(err.contains(flag) && err.contains(needle), "{all:?}: {err}");
        assert!(err.contains("Usage:"), "{all:?}: no usage line:\n{err}");
    }
    let mut left: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["shots.png"], "a refused run left files behind");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn negative_numbers_name_their_flag() {
    for flag in ["--entities", "--frames", "--seed", "--switch-every", "--capacity", "--align-every"] {
        let (code, _, err) = swarm(&["--headless", flag, "-1"]);
        assert_eq!(code, 2, "{flag} -1: {err}");
        assert!(err.contains(flag) && err.contains("'-1'"), "{flag} -1 does not name the flag:\n{err}");
    }
}

fn digest_line(out: &str) -> &str {
    out.lines().find_map(|l| l.strip_prefix("digest: ")).expect("a digest line")
}

#[test]
fn a_saved_world_loads_on_another_backend_and_continues_to_the_same_digest() {
    let dir = std::env::temp_dir().join(format!("swarm-snap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let snap = dir.join("a.snap");
    let snap = snap.to_str().unwrap();
    let small = ["--headless", "--entities", "800"];
    let (code, _, err) = swarm(&[&small[..], &["--frames", "120", "--save", snap]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("world saved to"), "{err}");
    let (code, whole, err) = swarm(&[&small[..], &["--frames", "180"]].concat());
    assert_eq!(code, 0, "{err}");
    for backend in ["archetype", "btree"] {
        let (code, out, err) = swarm(&["--headless", "--load", snap, "--frames", "60", "--backend", backend]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(&format!("== backend: {backend}")), "{out}");
        assert_eq!(digest_line(&out), digest_line(&whole), "loaded on {backend}");
    }
    // JSON by the file name, and it loads the same.
    let json = dir.join("a.json");
    let json = json.to_str().unwrap();
    let (code, _, err) = swarm(&["--headless", "--load", snap, "--frames", "1", "--save", json]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(json).unwrap().contains("\"format\": \"swarm snapshot\""));

    // Bad files: exit 2, the reason, and the usage line.
    let bytes = std::fs::read(snap).unwrap();
    let bad = dir.join("bad.snap");
    let bad_s = bad.to_str().unwrap();
    let cases: [(Vec<u8>, &str); 3] = [
        (bytes[..bytes.len() / 2].to_vec(), "truncated snapshot"),
        ([b"PNG!".as_slice(), &bytes[4..]].concat(), "not a swarm snapshot"),
        (b"{\"format\": \"swarm snapshot\", \"version\": 99}".to_vec(), "version 99 is newer"),
    ];
    for (content, needle) in cases {
        std::fs::write(&bad, content).unwrap();
        refused(&["--headless", "--load", bad_s], needle);
    }
    // A broken hierarchy: the first squad's first follower listed under its captain twice.
    let mut file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let columns = file["snapshot"]["components"].as_array_mut().unwrap();
    let children = columns.iter_mut().find(|c| c["name"] == "@children").expect("the world has squads");
    let list = children["values"][0].as_array_mut().unwrap();
    list.push(list[0].clone());
    let broken = dir.join("broken.json");
    std::fs::write(&broken, serde_json::to_vec(&file).unwrap()).unwrap();
    refused(&["--headless", "--load", broken.to_str().unwrap()], "broken hierarchy in the snapshot");
    refused(&["--headless", "--load", &format!("{snap}.missing")], "does not exist");
    refused(&["--headless", "--load", snap, "--seed", "3"], "cannot be used with '--seed");
    refused(&["--headless", "--backend", "all", "--save", snap], "choose one --backend");
    std::fs::remove_dir_all(dir).ok();
}

/// A short recording made through the library, as the window makes one.
fn record(path: &std::path::Path) {
    use swarm::app::profile::Profiler;
    use swarm::ecs::Backend;
    use swarm::sim::play::{Input, Play, Start};
    use swarm::sim::recording::Recorder;
    let config = swarm::sim::SimConfig::with_population(500);
    let start = Start::New { capacity: config.default_capacity(), config, seed: 11, backend: Backend::SparseSet };
    let mut play = Play::new(&start, Profiler::new()).unwrap();
    let mut recorder = Recorder::create(path, &start).unwrap();
    for (frames, input) in [
        (20, Input::Burst(glam::Vec2::new(300.0, 200.0))),
        (15, Input::Backend(Backend::Archetype)),
        (10, Input::Population(-200)),
    ] {
        for _ in 0..frames {
            play.app.update();
        }
        let at = play.frame();
        play.apply(&input).unwrap();
        recorder.record(at, &input, &play).unwrap();
    }
    for _ in 0..10 {
        play.app.update();
    }
    recorder.finish(&play).unwrap();
}

#[test]
fn a_recording_replays_with_trace_save_and_json_and_a_wrong_digest_fails() {
    let dir = std::env::temp_dir().join(format!("swarm-replay-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let recording = path("run.jsonl");
    record(std::path::Path::new(&recording));

    let (code, out, err) = swarm(&["--headless", "--replay", &recording]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("frame 20  burst (300.0, 200.0)  digest "), "{out}");
    assert_eq!(out.matches(": same)").count(), 4, "three inputs and the end:\n{out}");
    assert!(out.contains("frame 55  end  digest "), "{out}");
    assert!(out.contains("switched live 1 times") && out.contains("frames: 55 "), "{out}");

    let (code, json, err) = swarm(&[
        "--headless",
        "--replay",
        &recording,
        "--json",
        "--trace",
        &path("t.json"),
        "--save",
        &path("end.snap"),
    ]);
    assert_eq!(code, 0, "{err}");
    let reports: serde_json::Value = serde_json::from_str(&json).expect("stdout is the JSON report alone");
    assert_eq!(reports[0]["digest"].as_str(), Some(digest_line(&out)));
    assert!(err.contains(": same)"), "with --json the replay lines go to stderr:\n{err}");
    let trace = std::fs::read_to_string(path("t.json")).unwrap();
    assert!(trace.contains("resolve_collisions"), "no spans in the trace");
    let (code, loaded, err) = swarm(&["--headless", "--load", &path("end.snap"), "--frames", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(loaded.contains("== backend: archetype"), "the saved world is the replay's, on its last backend");

    // One recorded digest changed: DIFFERS, exit 1.
    let text = std::fs::read_to_string(&recording).unwrap();
    let line = text.lines().nth(2).unwrap();
    let at = line.find("\"digest\":\"").unwrap() + 10;
    let changed = format!("{}{}{}", &line[..at], if &line[at..at + 1] == "f" { "0" } else { "f" }, &line[at + 1..]);
    std::fs::write(path("bad.jsonl"), text.replace(line, &changed)).unwrap();
    let (code, out, err) = swarm(&["--headless", "--replay", &path("bad.jsonl")]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert_eq!(out.matches(": DIFFERS)").count(), 1, "{out}");
    assert!(err.contains("DIFFERS") && err.contains("1 of 4"), "{err}");

    // Without its end line: replayed to the last input, the digests there compared, and exit 1 with the reason: a
    // replay vouches only for what it saw.
    let cut: Vec<&str> = text.lines().take(4).collect();
    std::fs::write(path("cut.jsonl"), cut.join("\n")).unwrap();
    let (code, out, err) = swarm(&["--headless", "--replay", &path("cut.jsonl")]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert_eq!(out.matches(": same)").count(), 3, "the three inputs are still compared:\n{out}");
    assert!(err.contains("cut short") && err.contains("no end line") && err.contains("frame 45"), "{err}");
    assert!(!out.contains("replay matches"), "{out}");
    // A header alone: nothing to compare, cut short all the same.
    std::fs::write(path("header.jsonl"), text.lines().next().unwrap()).unwrap();
    let (code, out, err) = swarm(&["--headless", "--replay", &path("header.jsonl")]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("cut short") && err.contains("no inputs"), "{err}");
    std::fs::remove_dir_all(dir).ok();
}

/// The capacity in a recording's header.
fn capacity(text: &str) -> u32 {
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    header["capacity"].as_u64().unwrap() as u32
}

#[test]
fn bad_replays_and_recordings_are_refused() {
    let dir = std::env::temp_dir().join(format!("swarm-replay-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let recording = path("run.jsonl");
    record(std::path::Path::new(&recording));
    refused(&["--replay", &recording], "add --headless");
    refused(&["--record", &path("r.jsonl"), "--headless"], "drop --headless");
    refused(&["--record", &path("missing/r.jsonl")], "does not exist");
    refused(&["--headless", "--replay", &path("none.jsonl")], "does not exist");
    // The window checks a --load file before it opens (so this needs no display).
    std::fs::write(path("half.snap"), b"SWARMSNP\x01\x00").unwrap();
    refused(&["--load", &path("half.snap")], "truncated snapshot");
    for flag in [
        &["--load", recording.as_str()][..],
        &["--entities", "10"],
        &["--seed", "2"],
        &["--capacity", "100"],
        &["--align-every", "5"],
        &["--backend", "btree"],
        &["--switch-every", "5"],
        &["--frames", "5"],
    ] {
        let args: Vec<&str> =
            ["--headless", "--replay", recording.as_str()].into_iter().chain(flag.iter().copied()).collect();
        refused(&args, &format!("cannot be used with '{}", flag[0]));
    }
    let text = std::fs::read_to_string(&recording).unwrap();
    let bad = path("bad.jsonl");
    let cases = [
        (text[..text.len() - 20].to_string(), "line 5: not a complete JSON line"),
        (text.replace("swarm recording", "swarm replay"), "line 1: not a swarm recording"),
        (text.replace("\"version\":2", "\"version\":3"), "line 1: recording version 3 is newer"),
        (text.replace("\"population\"", "\"populace\""), "line 4: bad input: unknown variant `populace`"),
        // Settings past the flags' limits, refused before anything runs (tests/replay.rs covers every field).
        (text.replace("\"capacity\":", "\"capacity\":0,\"x\":"), "line 1: bad header: unknown field `x`"),
        (text.replacen(&format!("\"capacity\":{}", capacity(&text)), "\"capacity\":0", 1), "line 1: capacity is 0"),
        (text.replacen("\"frame\":20,", "\"frame\":4000000000,", 1), "line 2: frame 4000000000 is past the limit"),
    ];
    for (content, needle) in cases {
        std::fs::write(&bad, content).unwrap();
        refused(&["--headless", "--replay", &bad], needle);
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn make_assets_takes_help_and_a_folder_and_refuses_bad_flags() {
    let dir = std::env::temp_dir().join(format!("swarm-make-assets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_make_assets")).args(args).current_dir(&dir).output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).to_string(), out.stderr)
    };
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Usage:") && out.contains("[DIR]"), "{out}");
    // Its own description, not the crate's.
    assert!(out.contains("sprite textures") && !out.contains("storage backends"), "{out}");
    assert!(!dir.join("--help").exists() && !dir.join("assets").exists(), "--help wrote files");
    let (code, _, err) = run(&["--nonsense"]);
    assert_eq!(code, 2, "{}", String::from_utf8_lossy(&err));
    assert!(!dir.join("--nonsense").exists());
    let (code, out, _) = run(&["sprites"]);
    assert_eq!(code, 0);
    for name in ["fighter.png", "hunter.png", "particle.png"] {
        let png = std::fs::read(dir.join("sprites").join(name)).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{name} is not a PNG");
        assert!(out.contains(name), "{out}");
    }
    std::fs::write(dir.join("file"), b"x").unwrap();
    let (code, _, err) = run(&["file"]);
    assert_eq!(code, 2);
    assert!(String::from_utf8_lossy(&err).contains("not a folder"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_flag_that_does_nothing_on_the_chosen_backend_is_warned_about() {
    let (code, out, err) =
        swarm(&["--headless", "--frames", "5", "--entities", "100", "--backend", "btree", "--align-every", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning: --align-every") && err.contains("btree"), "{err}");
    assert!(out.contains("digest:"), "the run still runs");
    let (code, _, err) = swarm(&["--headless", "--frames", "5", "--entities", "100", "--align-every", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "the sparse set aligns: {err}");
}

#[test]
fn the_report_names_the_backend_it_ended_on_and_a_peak_no_lower_than_the_end() {
    let (code, out, err) = swarm(&["--headless", "--frames", "30", "--entities", "300", "--switch-every", "7"]);
    assert_eq!(code, 0, "{err}");
    // 30 frames, a switch before frames 7, 14, 21 and 28: four switches from sparse-set.
    assert!(out.contains("== backend: sparse-set at the start, archetype at the end"), "{out}");
    assert!(out.contains("storage bytes (archetype)"), "{out}");
    let line = out.lines().find(|l| l.starts_with("entities: peak")).unwrap();
    let numbers: Vec<u64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert!(numbers[0] >= numbers[1], "{line}");

    // A world too small: the first frame spawns 100, then it is full. The refill asks again every frame, so what
    // is reported is how far below the target it is held (not the attempts summed over frames: 3 frames here),
    // and no burst was refused.
    let (code, out, err) = swarm(&["--headless", "--frames", "3", "--entities", "10000", "--capacity", "100"]);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.contains("refused (world full)")).unwrap();
    assert!(line.starts_with("spawned 100 ") && line.contains("refused (world full): 0 burst fighters"), "{line}");
    assert!(out.contains("world full at the end: 9900 fighters short of the target population"), "{out}");
}

#[test]
fn a_synctest_rolls_back_every_frame_on_every_backend_to_one_digest() {
    let (code, out, err) =
        swarm(&["--headless", "--synctest", "4", "--frames", "40", "--entities", "400", "--backend", "all"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("synctest ")).collect();
    assert_eq!(lines.len(), Backend::ALL.len(), "{out}");
    let digests: Vec<&str> = lines.iter().map(|l| l.rsplit("digest ").next().unwrap()).collect();
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "{out}");
    assert!(lines.iter().all(|l| l.contains("40 frames, each rolled back 4") && l.contains("no desync")), "{out}");
}

/// The peers' tests take turns: each picks ports that are free when it looks, and a port one test frees may be the
/// next one another binds.
static PEERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Two UDP ports free now (bound and released: nothing else on this machine picks ports from the ephemeral range
/// and binds them in between, as far as this test knows).
fn free_ports() -> (u16, u16) {
    let a = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    (a.local_addr().unwrap().port(), b.local_addr().unwrap().port())
}

/// Starts a peer (headless, 1,500 fighters, 240 frames) with extra flags.
fn peer(local: u16, remote: u16, player: u8, extra: &[&str]) -> std::process::Child {
    let (local, remote, player) = (local.to_string(), format!("127.0.0.1:{remote}"), player.to_string());
    let mut args = vec!["--headless", "--p2p", "--local-port", &local, "--remote", &remote, "--player", &player];
    args.extend(["--frames", "240", "--entities", "1500"]);
    args.extend(extra);
    Command::new(env!("CARGO_BIN_EXE_swarm"))
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs")
}

fn finish(child: std::process::Child) -> (i32, String, String) {
    let out = child.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn two_peers_on_different_backends_and_thread_counts_end_with_one_digest() {
    let _turn = PEERS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (a, b) = free_ports();
    let zero = peer(a, b, 0, &["--backend", "sparse-set", "--threads", "1"]);
    let one = peer(b, a, 1, &["--backend", "archetype", "--threads", "2"]);
    let (zero, one) = (finish(zero), finish(one));
    assert_eq!((zero.0, one.0), (0, 0), "{zero:?}\n{one:?}");
    let digest = |out: &str| out.rsplit("digest ").next().unwrap().trim().to_string();
    assert_eq!(digest(&zero.1), digest(&one.1), "{zero:?}\n{one:?}");
    assert!(zero.1.contains("frame 240 confirmed"), "{zero:?}");
}

#[test]
fn bad_peers_get_a_clear_message_and_status_2() {
    let _turn = PEERS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    refused(&["--headless", "--p2p", "--local-port", "7000", "--remote", "nowhere", "--player", "0"], "not HOST:PORT");
    refused(
        &["--headless", "--p2p", "--local-port", "7000", "--remote", "127.0.0.1:7001", "--player", "2"],
        "--player",
    );
    refused(
        &["--p2p", "--local-port", "7000", "--remote", "127.0.0.1:7001", "--player", "0", "--compare"],
        "--compare",
    );
    refused(&["--headless", "--p2p", "--remote", "127.0.0.1:7001", "--player", "0"], "--local-port");
    // A port in use.
    let taken = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let (code, _, err) = finish(peer(port, port.wrapping_add(1), 0, &[]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("cannot listen on UDP port {port}")), "{err}");
    drop(taken);
    // Nobody on the other end.
    let (a, b) = free_ports();
    let (code, _, err) = finish(peer(a, b, 0, &["--timeout", "1"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("no answer from 127.0.0.1:{b} after 1 s")), "{err}");
    // A peer with another seed: caught at its first confirmed input, by one side at least; both stop with 2.
    let (a, b) = free_ports();
    let zero = peer(a, b, 0, &["--timeout", "3"]);
    let one = peer(b, a, 1, &["--seed", "2", "--timeout", "3"]);
    let (zero, one) = (finish(zero), finish(one));
    assert_eq!((zero.0, one.0), (2, 2), "{zero:?}\n{one:?}");
    assert!(zero.2.contains("other settings") || one.2.contains("other settings"), "{zero:?}\n{one:?}");
}

/// `--benchmark` and `--ramp` need the stress scenario and refuse what would not measure it.
#[test]
fn benchmark_and_ramp_refuse_bad_combinations() {
    let stress = ["--headless", "--scenario", "stress"];
    fn with<'a>(stress: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [stress, extra].concat()
    }
    refused(&["--headless", "--benchmark"], "add --scenario stress");
    refused(&["--headless", "--ramp", "--scenario", "armies"], "add --scenario stress");
    refused(&["--headless", "--benchmark", "--load", "x.snap"], "--load");
    refused(&with(&stress, &["--benchmark", "--ramp"]), "choose one");
    refused(&with(&stress, &["--benchmark", "--json"]), "drop --json");
    refused(&with(&stress, &["--benchmark", "--switch-every", "5"]), "drop --switch-every");
    refused(&with(&stress, &["--benchmark", "--synctest", "2"]), "drop --synctest");
    refused(&with(&stress, &["--ramp", "--backend", "all"]), "drop --backend all");
    refused(&with(&stress, &["--ramp-ms", "5"]), "--ramp");
    refused(&with(&stress, &["--ramp", "--ramp-ms", "0"]), "outside the limit");
    refused(&with(&stress, &["--ramp", "--ramp-ms", "fast"]), "not a number");
    refused(&["--scenario", "stress", "--benchmark"], "needs --frames N");
    refused(&["--scenario", "stress", "--ramp", "--screenshot", "x.png", "--frames", "9"], "drop --screenshot");
}

/// The benchmark prints percentiles and one digest for every backend and thread count, the plain headless run's.
#[test]
fn the_stress_benchmark_is_one_world_everywhere() {
    let args = ["--headless", "--scenario", "stress", "--entities", "2000", "--frames", "90"];
    let (code, plain, err) = swarm(&args);
    assert_eq!(code, 0, "{err}");
    let digest = digest_line(&plain).to_string();
    for threads in ["1", "2", "3"] {
        let (code, out, err) = swarm(&[&args[..], &["--benchmark", "--backend", "all", "--threads", threads]].concat());
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("frame 1 lands 2000 fighters in waves of 50"), "{out}");
        assert_eq!(out.matches("frames 2-90 (89 fixed steps): p50 ").count(), Backend::ALL.len(), "{out}");
        assert!(out.contains(" p90 ") && out.contains(" p99 ") && out.contains(" max "), "{out}");
        assert!(out.contains(&format!("digests equal across backends: {digest}")), "{threads} threads:\n{out}");
    }
}

/// A ramp against a budget no frame meets ends at its first step, and says how many it held (none).
#[test]
fn a_ramp_with_a_tiny_budget_ends_at_once_and_a_frame_limit_ends_it_too() {
    let args = ["--headless", "--scenario", "stress", "--entities", "500", "--ramp"];
    let (code, out, err) = swarm(&[&args[..], &["--ramp-ms", "0.001"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("step 1: "), "{out}");
    assert!(!out.contains("step 2: "), "{out}");
    assert!(out.contains("held 0 fighters within 0.001 ms a frame (the simulation's frame alone, headless"), "{out}");
    // A budget every frame meets: --frames ends it, with the fighters of its last step.
    let (code, out, err) = swarm(&[&args[..], &["--ramp-ms", "1000", "--frames", "130"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("step 2: "), "{out}");
    let held: u32 = out
        .lines()
        .find_map(|l| l.strip_prefix("held "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no held line:\n{out}"));
    assert!((100..=3_000).contains(&held), "held {held}:\n{out}");
}

/// The stress scenario under a GGRS sync test: its waves roll back with the world.
#[test]
fn the_stress_scenario_passes_a_sync_test() {
    let args = ["--headless", "--scenario", "stress", "--entities", "500", "--frames", "50", "--synctest", "8"];
    let (code, out, err) = swarm(&args);
    assert_eq!(code, 0, "{out}{err}");
}
