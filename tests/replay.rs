//! Recording and replay: a play driven the way the window drives it (through `Play::apply`, each input
//! written by a `Recorder`) replays headless to the same digest after every input and at the end; a tampered
//! digest is reported; bad recordings are refused naming the line.

use glam::Vec2;
use swarm::app::profile::Profiler;
use swarm::ecs::{Backend, Format, SortMethod};
use swarm::sim::painter::DrawOrder;
use swarm::sim::play::{Input, Play, Start};
use swarm::sim::recording::{Recorder, Recording};
use swarm::sim::replay::{replay, Check};
use swarm::sim::{snapshot, SimConfig, SimStats};

const POPULATION: u32 = 1_200;

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("swarm-replay-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn new_start(seed: u64) -> Start {
    let config = SimConfig::with_population(POPULATION);
    Start::New { capacity: config.default_capacity(), config, seed, backend: Backend::SparseSet }
}

/// Drives a play like the window: some frames (a y-sort after each, as a drawn frame does), then inputs, each
/// applied and recorded. Returns the digest at the end and the number of inputs.
fn record_a_session(path: &std::path::Path) -> (u64, usize) {
    let start = new_start(7);
    let mut play = Play::new(&start, Profiler::new()).unwrap();
    // Recorded on one thread, then three, then two (and replayed on eight): the world is the same for every count.
    play.app.set_threads(1);
    let mut recorder = Recorder::create(path, &start).unwrap();
    let mut quick_slot = None;
    let mut inputs = 0;
    let plan: Vec<(u32, Vec<Input>)> = vec![
        (30, vec![Input::Burst(Vec2::new(812.0, 400.5)), Input::Population(1000)]),
        (20, vec![Input::Backend(Backend::Archetype), Input::Threads(3), Input::Burst(Vec2::new(100.25, 900.0))]),
        (25, vec![Input::DrawOrder(DrawOrder::YSorted(SortMethod::Hybrid)), Input::Backend(Backend::SparseSet)]),
        (15, vec![Input::AlignEvery(30), Input::Pause(true), Input::Step, Input::Step, Input::Pause(false)]),
        (10, vec![]), // quick save here (not an input: it changes nothing)
        (40, vec![Input::Population(-1500), Input::Backend(Backend::BTree), Input::Reset]),
        (35, vec![Input::Backend(Backend::DirectArray), Input::Threads(2), Input::Burst(Vec2::new(1500.0, 200.0))]),
        (20, vec![]), // quick load of the save above
        (30, vec![Input::Population(400), Input::DrawOrder(DrawOrder::Storage), Input::Backend(Backend::HashMap)]),
    ];
    for (step, (frames, batch)) in plan.into_iter().enumerate() {
        for _ in 0..frames {
            play.app.update();
            play.sort();
        }
        if step == 4 {
            quick_slot = Some(snapshot::save(&play.app.world, Format::Binary).unwrap());
        }
        let batch = if step == 7 { vec![Input::QuickLoad(quick_slot.clone().unwrap())] } else { batch };
        for input in batch {
            let at = play.frame();
            play.apply(&input).unwrap();
            recorder.record(at, &input, &play).unwrap();
            inputs += 1;
        }
    }
    for _ in 0..25 {
        play.app.update();
        play.sort();
    }
    assert!(play.app.world.resource::<SimStats>().deaths > 0, "nobody died: the test proves little");
    let end = play.digest();
    recorder.finish(&play).unwrap();
    (end, inputs)
}

fn replay_file(path: &std::path::Path) -> (swarm::sim::replay::Replayed, Vec<Check>) {
    let recording = Recording::read(path).unwrap();
    let mut checks = Vec::new();
    let replayed = replay(&recording, Profiler::new(), 8, |_| {}, |c| checks.push(c.clone())).unwrap();
    (replayed, checks)
}

#[test]
fn a_recorded_session_replays_to_the_same_digests() {
    let dir = temp("same");
    let path = dir.join("run.jsonl");
    let (end, inputs) = record_a_session(&path);
    let (replayed, checks) = replay_file(&path);
    assert_eq!(checks.len(), inputs + 1, "one check per input and one for the end");
    for check in &checks {
        assert!(check.same(), "{check}");
    }
    assert!(replayed.complete && replayed.differs == 0);
    assert_eq!(replayed.report.digest, format!("{end:016x}"));
    assert_eq!(swarm::sim::digest(&replayed.app.world), end);
    // The inputs really happened: the reset sends the frame back, the quick load (of a world from before the
    // reset, further on) forward again.
    let frames: Vec<u64> = checks.iter().map(|c| c.frame).collect();
    assert_eq!(frames.windows(2).filter(|w| w[1] < w[0]).count(), 1, "{frames:?}");
    let quick = checks.iter().position(|c| matches!(c.input, Some(Input::QuickLoad(_)))).unwrap();
    assert!(frames[quick + 1] > frames[quick] + 30 + 10, "{frames:?}");
    assert!(replayed.report.switches >= 5, "backend switches are counted: {}", replayed.report.switches);
    assert!(replayed.report.systems.iter().any(|s| s.name == "y_sort" && s.mean_ms > 0.0), "the y-sort was replayed");
    let line = checks.iter().find(|c| matches!(c.input, Some(Input::Burst(_)))).unwrap().to_string();
    assert!(line.starts_with("frame 30  burst (812.0, 400.5)  digest ") && line.ends_with(": same)"), "{line}");
    std::fs::remove_dir_all(dir).ok();
}

/// An input edited in the file differs at its own line even when a reset or a quick load right after it wipes
/// what it did: each line's digest covers what the input set (a burst asked for, the target population), not only
/// the world's values, which the input has not changed yet.
#[test]
fn an_edited_input_differs_at_its_line_even_when_a_reset_follows() {
    let dir = temp("edited");
    let path = dir.join("run.jsonl");
    let start = new_start(3);
    let mut play = Play::new(&start, Profiler::new()).unwrap();
    play.app.set_threads(1);
    let mut recorder = Recorder::create(&path, &start).unwrap();
    for _ in 0..20 {
        play.app.update();
    }
    let saved = snapshot::save(&play.app.world, Format::Binary).unwrap();
    let inputs = [
        Input::Burst(Vec2::new(300.0, 200.0)),
        Input::Reset,
        Input::Population(500),
        Input::QuickLoad(saved),
        Input::AlignEvery(30),
        Input::Reset,
    ];
    for input in &inputs {
        let at = play.frame();
        play.apply(input).unwrap();
        recorder.record(at, input, &play).unwrap();
    }
    for _ in 0..10 {
        play.app.update();
    }
    recorder.finish(&play).unwrap();
    let (replayed, checks) = replay_file(&path);
    assert_eq!(replayed.differs, 0, "{checks:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    for (edit, from, to, line) in [
        ("burst", "[300.0,200.0]", "[301.0,200.0]", 2),
        ("population", "\"population\":500", "\"population\":400", 4),
        ("alignment", "\"align_every\":30", "\"align_every\":15", 6),
    ] {
        assert!(text.contains(from), "{edit}: {from} not in\n{text}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
        let (_, checks) = replay_file(&path);
        let bad: Vec<usize> = checks.iter().filter(|c| !c.same()).map(|c| c.line).collect();
        assert_eq!(bad[..1], [line], "{edit} edited: lines {bad:?} differ\n{text}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_tampered_digest_differs_and_a_cut_recording_replays_to_its_last_input() {
    let dir = temp("tampered");
    let path = dir.join("run.jsonl");
    record_a_session(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();

    // Change one digit of the fourth input's digest.
    let line = lines[4];
    let at = line.find("\"digest\":\"").unwrap() + 10;
    let digit = if &line[at..at + 1] == "0" { "1" } else { "0" };
    let tampered = format!("{}{digit}{}", &line[..at], &line[at + 1..]);
    let mut edited = lines.clone();
    edited[4] = &tampered;
    std::fs::write(&path, edited.join("\n")).unwrap();
    let (replayed, checks) = replay_file(&path);
    assert_eq!(replayed.differs, 1);
    let bad: Vec<&Check> = checks.iter().filter(|c| !c.same()).collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].line, 5);
    assert!(bad[0].to_string().ends_with(": DIFFERS)"), "{}", bad[0]);

    // Without the end line (the window was killed): every input is replayed, then it stops.
    std::fs::write(&path, lines[..lines.len() - 1].join("\n")).unwrap();
    let (replayed, checks) = replay_file(&path);
    assert!(!replayed.complete);
    assert_eq!(replayed.differs, 0);
    assert_eq!(checks.len(), lines.len() - 2);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_run_from_a_snapshot_records_it_and_replays_from_it() {
    let dir = temp("snapshot");
    let path = dir.join("run.jsonl");
    let mut earlier = Play::new(&new_start(3), Profiler::new()).unwrap();
    for _ in 0..50 {
        earlier.app.update();
    }
    // A JSON snapshot is embedded as binary.
    let json = snapshot::save(&earlier.app.world, Format::Json).unwrap();
    let start = Start::snapshot(json, Some(Backend::Archetype)).unwrap();
    let Start::Snapshot { bytes, .. } = &start else { panic!("a snapshot start") };
    assert!(bytes.starts_with(b"SWARMSNP"));
    let mut play = Play::new(&start, Profiler::new()).unwrap();
    assert_eq!(play.app.world.backend(), Backend::Archetype);
    assert_eq!(play.digest(), earlier.digest());
    let mut recorder = Recorder::create(&path, &start).unwrap();
    for _ in 0..20 {
        play.app.update();
    }
    let input = Input::Burst(Vec2::new(10.0, 10.0));
    play.apply(&input).unwrap();
    recorder.record(play.frame(), &input, &play).unwrap();
    // A reset after a load restarts the loaded world's settings and seed from frame 0.
    let at = play.frame();
    play.apply(&Input::Reset).unwrap();
    recorder.record(at, &Input::Reset, &play).unwrap();
    assert_eq!(play.frame(), 0);
    assert_eq!(play.app.world.resource::<SimConfig>(), earlier.app.world.resource::<SimConfig>());
    let fresh = Play::new(&new_start(3), Profiler::new()).unwrap();
    assert_eq!(play.digest(), fresh.digest());
    for _ in 0..10 {
        play.app.update();
    }
    recorder.finish(&play).unwrap();
    let (replayed, checks) = replay_file(&path);
    assert_eq!(checks.len(), 3);
    assert_eq!(replayed.differs, 0, "{checks:?}");
    assert_eq!(replayed.report.backend, "archetype");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn the_y_sort_shows_no_time_once_sorting_is_off() {
    let mut play = Play::new(&new_start(3), Profiler::new()).unwrap();
    let last = |play: &Play| play.profiler().with_timings(|t| t.get("y_sort").map(|s| (s.last_ms, s.runs)).unwrap());
    play.apply(&Input::DrawOrder(DrawOrder::YSorted(SortMethod::Hybrid))).unwrap();
    for _ in 0..3 {
        play.run_frame();
    }
    let (_, runs) = last(&play);
    assert_eq!(runs, 3, "each frame sorted");
    play.apply(&Input::DrawOrder(DrawOrder::Storage)).unwrap();
    play.run_frame();
    assert_eq!(last(&play), (0.0, 3), "sorting off: the span shows 0 ms, and no run was counted");
}

#[test]
fn a_bad_quick_load_changes_nothing() {
    let mut play = Play::new(&new_start(5), Profiler::new()).unwrap();
    for _ in 0..40 {
        play.app.update();
    }
    let (before, frame) = (play.digest(), play.frame());
    let good = snapshot::save(&play.app.world, Format::Binary).unwrap();
    let error = play.apply(&Input::QuickLoad(good[..good.len() / 2].to_vec())).unwrap_err();
    assert!(error.to_string().contains("truncated snapshot"), "{error}");
    assert_eq!((play.digest(), play.frame()), (before, frame));
}

#[test]
fn bad_recordings_are_refused_naming_the_line() {
    let dir = temp("bad");
    let path = dir.join("run.jsonl");
    record_a_session(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<String> = text.lines().map(String::from).collect();
    let with = |n: usize, line: &str| {
        let mut edited = lines.clone();
        edited[n] = line.to_string();
        edited.join("\n")
    };
    let header = &lines[0];
    let quick = lines.iter().position(|l| l.contains("quick_load")).unwrap();
    let cases: Vec<(String, usize, &str)> = vec![
        (text[..text.len() / 2].to_string(), 0, "not a complete JSON line"),
        // A whole line with a value JSON has no word for is not "cut short".
        (with(2, r#"{"frame":40,"input":{"burst":[NaN,1.0]},"digest":"0000000000000000"}"#), 3, "not valid JSON"),
        (with(0, &header.replace("swarm recording", "swarm snapshot")), 1, "not a swarm recording"),
        (with(0, &header.replace("\"version\":2", "\"version\":7")), 1, "version 7 is newer"),
        (
            with(2, r#"{"frame":40,"input":{"teleport":1},"digest":"0000000000000000"}"#),
            3,
            "unknown variant `teleport`",
        ),
        (with(2, r#"{"frame":40,"input":"step","digest":"xyz"}"#), 3, "not 16 hex digits"),
        (
            with(2, r#"{"frame":40,"input":{"population":100000000},"digest":"0000000000000000"}"#),
            3,
            "population change is 100000000, outside the limit of -2000000 to 2000000",
        ),
        (with(2, r#"{"frame":40,"input":{"backend":"sparse"},"digest":"0000000000000000"}"#), 3, "unknown backend"),
        (
            with(quick, r#"{"frame":99,"input":{"quick_load":"@@@"},"digest":"0000000000000000"}"#),
            quick + 1,
            "bad base64",
        ),
        (
            with(quick, r#"{"frame":99,"input":{"quick_load":"AAAA"},"digest":"0000000000000000"}"#),
            quick + 1,
            "quick load's snapshot",
        ),
        (with(2, r#"{"frame":1,"input":"step","digest":"0000000000000000"}"#), 3, "is before frame"),
        (format!("{text}{}\n", lines[1]), lines.len() + 1, "after the end line"),
        (String::new(), 1, "empty file"),
    ];
    for (content, line, needle) in cases {
        let error = Recording::parse(&content).unwrap_err();
        let message = error.to_string();
        assert!(message.contains(needle), "expected {needle:?}: {message}");
        if line > 0 {
            assert_eq!(error.line, line, "{message}");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_group_turned_off_is_recorded_replays_the_same_and_marks_the_run_modified() {
    let dir = temp("group");
    let path = dir.join("run.jsonl");
    let start = new_start(11);
    let mut play = Play::new(&start, Profiler::new()).unwrap();
    let mut recorder = Recorder::create(&path, &start).unwrap();
    let mut plain = Play::new(&start, Profiler::new()).unwrap();
    let plan = [
        (40, Input::Group { name: "combat".into(), enabled: false }),
        (30, Input::Group { name: "combat".into(), enabled: true }),
        (20, Input::Group { name: "spawning".into(), enabled: false }),
    ];
    for (frames, input) in plan {
        for _ in 0..frames {
            play.app.update();
            plain.app.update();
        }
        let at = play.frame();
        play.apply(&input).unwrap();
        recorder.record(at, &input, &play).unwrap();
    }
    for _ in 0..30 {
        play.app.update();
        plain.app.update();
    }
    assert!(play.app.is_modified() && !plain.app.is_modified());
    assert_eq!(play.app.is_group_enabled("spawning"), Some(false));
    assert_ne!(play.digest(), plain.digest(), "turning combat off changed the run");
    recorder.finish(&play).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""input":{"group":{"name":"combat","enabled":false}}"#), "{text}");

    let (replayed, checks) = replay_file(&path);
    assert_eq!(checks.len(), 4);
    assert_eq!(replayed.differs, 0, "{checks:?}");
    assert_eq!(replayed.report.digest, format!("{:016x}", play.digest()));
    assert!(replayed.report.modified, "the report says the run was modified");
    let spawning = replayed.report.groups.iter().find(|g| g.name == "spawning").unwrap();
    assert!(!spawning.enabled);
    assert!(replayed.report.to_string().contains("(modified: a group of systems was turned off)"));
    assert_eq!(checks[0].to_string().split("  ").nth(1), Some("group combat off"));

    // An unknown group is refused by name, at its line, and changes nothing.
    let error = play.apply(&Input::Group { name: "weather".into(), enabled: false }).unwrap_err();
    assert!(error.to_string().contains("no system group is named `weather`"), "{error}");
    let bad = text.replace(r#""name":"spawning""#, r#""name":"weather""#);
    // In a file it is refused when the file is read, before anything runs.
    let error = Recording::parse(&bad).unwrap_err();
    assert_eq!(error.line, 4, "{error}");
    assert!(error.why.starts_with("no system group is named `weather`"), "{error}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_next_round_is_recorded_and_replays_and_outside_a_battle_changes_nothing() {
    use swarm::app::State;
    use swarm::sim::rounds::{Phase, Round};
    let dir = temp("rounds");
    let path = dir.join("run.jsonl");
    let mut config = SimConfig::with_population(POPULATION);
    config.scenario = swarm::sim::Scenario::Battle;
    let start = Start::New { capacity: config.default_capacity(), config, seed: 5, backend: Backend::SparseSet };
    let mut play = Play::new(&start, Profiler::new()).unwrap();
    let mut plain = Play::new(&start, Profiler::new()).unwrap();
    let mut recorder = Recorder::create(&path, &start).unwrap();
    for frames in [90, 40] {
        for _ in 0..frames {
            play.run_frame();
            plain.run_frame();
        }
        let at = play.frame();
        play.apply(&Input::NextRound).unwrap();
        recorder.record(at, &Input::NextRound, &play).unwrap();
    }
    for _ in 0..30 {
        play.run_frame();
        plain.run_frame();
    }
    let round = play.app.world.resource::<Round>();
    assert_eq!((round.number, round.started_at), (3, 130), "each next round started at the next frame's start");
    assert_eq!(play.app.world.resource::<State<Phase>>().get(), Phase::Fighting);
    assert_eq!(plain.app.world.resource::<Round>().number, 1);
    assert_ne!(play.digest(), plain.digest(), "the new rounds changed the run");
    recorder.finish(&play).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""input":"next_round""#), "{text}");
    let (replayed, checks) = replay_file(&path);
    assert_eq!((checks.len(), replayed.differs), (3, 0), "{checks:?}");
    assert_eq!(replayed.report.digest, format!("{:016x}", play.digest()));

    // In the other scenarios there are no rounds: the input is accepted and changes nothing.
    let start = new_start(5);
    let (mut play, mut plain) =
        (Play::new(&start, Profiler::new()).unwrap(), Play::new(&start, Profiler::new()).unwrap());
    for frame in 0..60 {
        if frame == 20 {
            play.apply(&Input::NextRound).unwrap();
        }
        play.run_frame();
        plain.run_frame();
    }
    assert_eq!(play.digest(), plain.digest());
    std::fs::remove_dir_all(dir).ok();
}

mod rewind {
    //! Rewind: stepping back shows each past frame exactly as it was (its digest then), playing forward again
    //! replays the inputs and reaches the live world (its digest), on every backend and thread count, across a
    //! backend switch while watching; and the run goes on as if it had never rewound.

    use super::*;
    use swarm::sim::rewind::{Forward, Rewind, EVERY};

    /// The inputs of the live run, by the frame they are applied at.
    fn plan(frame: u64) -> Vec<Input> {
        match frame {
            7 => vec![Input::Burst(Vec2::new(300.0, 250.0))],
            31 => vec![Input::Population(500), Input::Burst(Vec2::new(900.0, 700.0))],
            45 => vec![Input::AlignEvery(30)], // a checkpoint's own frame
            52 => vec![Input::Threads(2), Input::Burst(Vec2::new(1200.0, 300.0))],
            88 => vec![Input::Population(-700)],
            _ => vec![],
        }
    }

    /// Plays live like the window: the inputs at each frame (noted), then the frame, then the ring. Returns the
    /// digest at each frame before its inputs.
    fn live(play: &mut Play, rewind: &mut Rewind, frames: u64, digests: &mut Vec<u64>) {
        for _ in 0..frames {
            let at = play.frame();
            assert_eq!(digests.len() as u64, at);
            digests.push(play.digest());
            for input in plan(at) {
                assert!(!rewind.refuses(&input));
                play.apply(&input).unwrap();
                rewind.note(at, &input, play).unwrap();
            }
            play.app.update();
            rewind.after_frame(play).unwrap();
        }
    }

    fn started(backend: Backend, threads: usize) -> (Play, Rewind) {
        let config = SimConfig::with_population(POPULATION);
        let start = Start::New { capacity: config.default_capacity(), config, seed: 11, backend };
        let mut play = Play::new(&start, Profiler::new()).unwrap();
        play.app.set_threads(threads);
        let mut rewind = Rewind::new();
        rewind.after_frame(&play).unwrap();
        (play, rewind)
    }

    #[test]
    fn rewinding_shows_the_past_and_replaying_reaches_the_live_world() {
        let mut reference: Option<u64> = None;
        for backend in Backend::ALL {
            for threads in [1, 3] {
                let (mut play, mut rewind) = started(backend, threads);
                let mut digests = Vec::new();
                live(&mut play, &mut rewind, 100, &mut digests);
                let live_digest = play.digest();
                // Back to frame 20, one frame at a time: each is the frame as it was, before its inputs.
                while play.frame() > 20 {
                    assert!(rewind.back(&mut play).unwrap());
                    assert_eq!(play.digest(), digests[play.frame() as usize], "{backend}, frame {}", play.frame());
                }
                assert_eq!(rewind.watching(), Some(100));
                // Watching: a burst is refused, a switch of backend is not (it changes no value).
                assert!(rewind.refuses(&Input::Burst(Vec2::ONE)) && rewind.refuses(&Input::Reset));
                assert!(!rewind.refuses(&Input::Backend(backend.next())));
                play.apply(&Input::Backend(backend.next())).unwrap();
                // Forward again: the same frames, and the live world at the end.
                let caught = loop {
                    match rewind.forward(&mut play) {
                        Forward::Replayed => {
                            assert_eq!(play.digest(), digests[play.frame() as usize], "{backend} replaying");
                        }
                        caught => break caught,
                    }
                };
                assert_eq!(caught, Forward::Caught { frame: 100, matches: true }, "{backend}, {threads} threads");
                assert_eq!((play.digest(), rewind.watching()), (live_digest, None));
                assert_eq!(rewind.forward(&mut play), Forward::Live);
                // And the run goes on as one that never rewound.
                let mut more = digests.clone();
                more.truncate(100);
                live(&mut play, &mut rewind, 40, &mut more);
                let (mut straight, mut ring) = started(backend, 1);
                let mut straight_digests = Vec::new();
                live(&mut straight, &mut ring, 140, &mut straight_digests);
                assert_eq!(play.digest(), straight.digest(), "{backend}: a rewound run ends where a straight one does");
                assert_eq!(more, straight_digests);
                let end = *reference.get_or_insert(play.digest());
                assert_eq!(end, play.digest(), "{backend}: one world on every backend");
            }
        }
    }

    #[test]
    fn the_ring_goes_back_as_far_as_it_keeps_and_starts_over_on_a_reset() {
        let (mut play, mut rewind) = started(Backend::SparseSet, 1);
        let mut digests = Vec::new();
        live(&mut play, &mut rewind, 3 * EVERY + 4, &mut digests);
        assert_eq!(rewind.oldest(), Some(0));
        assert_eq!(rewind.kept(), 4, "frames 0, {EVERY}, {} and {}", 2 * EVERY, 3 * EVERY);
        while rewind.back(&mut play).unwrap() {}
        assert_eq!((play.frame(), play.digest()), (0, digests[0]), "back to the oldest frame kept, no further");
        // Going back to live at once restores the world left.
        rewind.back_to_live(&mut play).unwrap();
        assert_eq!((play.frame(), rewind.watching()), (3 * EVERY + 4, None));
        // A reset is another run: the ring starts over at its frame 0.
        let at = play.frame();
        play.apply(&Input::Reset).unwrap();
        rewind.note(at, &Input::Reset, &play).unwrap();
        assert_eq!((rewind.kept(), rewind.oldest()), (1, Some(0)));
        assert!(!rewind.back(&mut play).unwrap(), "nothing before the reset's frame 0");
        // A step is a frame.
        play.apply(&Input::Step).unwrap();
        rewind.note(0, &Input::Step, &play).unwrap();
        assert!(rewind.back(&mut play).unwrap());
        assert_eq!(play.frame(), 0);
        // Stepping while watching replays one frame.
        assert!(!rewind.refuses(&Input::Step));
        assert_eq!(rewind.forward(&mut play), Forward::Caught { frame: 1, matches: true });
    }
}
