//! Settings from files meet the flags' limits: every limited setting of a snapshot (JSON) and of a recording's
//! header, at its limit (accepted) and past it (refused before anything runs, naming the field and the limit).

use serde_json::{json, Value};
use swarm::ecs::{Backend, Format, SnapshotError};
use swarm::sim::limits::{self, *};
use swarm::sim::recording::Recording;
use swarm::sim::{snapshot, SimConfig};

/// One case: edits to the settings (a JSON field and its new value), and the field a refusal must name, or `None`
/// when the edited settings are within every limit.
struct Case {
    edits: Vec<(&'static str, Value)>,
    refused: Option<&'static str>,
}

fn at(edits: Vec<(&'static str, Value)>) -> Case {
    Case { edits, refused: None }
}

fn past(field: &'static str, value: Value) -> Case {
    Case { edits: vec![(field, value)], refused: Some(field) }
}

/// Each integer limit at both ends (accepted) and one past each end (refused, where the type has room).
fn integer(field: &'static str, start: i64, end: i64, type_min: i64, cases: &mut Vec<Case>) {
    cases.push(at(vec![(field, json!(start))]));
    cases.push(at(vec![(field, json!(end))]));
    if start > type_min {
        cases.push(past(field, json!(start - 1)));
    }
    cases.push(past(field, json!(end + 1)));
}

fn float(field: &'static str, range: &std::ops::RangeInclusive<f32>, cases: &mut Vec<Case>) {
    let (start, end) = (*range.start() as f64, *range.end() as f64);
    cases.push(at(vec![(field, json!(start))]));
    cases.push(past(field, json!(end * 1.01 + 1.0)));
    cases.push(past(field, json!(start - 0.25)));
    cases.push(past(field, json!(-1e30)));
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let u = |r: &std::ops::RangeInclusive<u32>| (*r.start() as i64, *r.end() as i64);
    for (field, range) in [
        ("target_population", POPULATION),
        ("spawn_per_frame", SPAWN_PER_FRAME),
        ("hunter_every", HUNTER_EVERY),
        ("particles_per_death", PARTICLES_PER_DEATH),
        ("burst", BURST),
        ("align_every", ALIGN_EVERY),
    ] {
        let (start, end) = u(&range);
        integer(field, start, end, 0, &mut cases);
    }
    for (field, range) in [("max_health", MAX_HEALTH), ("damage", DAMAGE), ("search_cells", SEARCH_CELLS)] {
        integer(field, *range.start() as i64, *range.end() as i64, i32::MIN as i64, &mut cases);
    }
    integer("particle_life", *PARTICLE_LIFE.start() as i64, *PARTICLE_LIFE.end() as i64, 0, &mut cases);
    for field in ["fighter_speed", "hunter_speed"] {
        float(field, &SPEED, &mut cases);
        cases.push(at(vec![(field, json!(*SPEED.end()))]));
    }
    // The radius and the cell size move together: a cell spans at least two radii.
    float("radius", &RADIUS, &mut cases);
    let (r_end, c_end) = (*RADIUS.end() as f64, *CELL_SIZE.end() as f64);
    cases.push(at(vec![("radius", json!(r_end)), ("cell_size", json!(2.0 * r_end))]));
    cases.push(at(vec![("radius", json!(0.5)), ("cell_size", json!(*CELL_SIZE.start()))]));
    cases.push(at(vec![("cell_size", json!(c_end))]));
    cases.push(past("cell_size", json!(c_end + 1.0)));
    cases.push(past("cell_size", json!(5.9))); // below two default radii (6)
    cases.push(Case { edits: vec![("radius", json!(0.5)), ("cell_size", json!(0.75))], refused: Some("cell_size") });
    // The arena, each side at and past its limit; a fine grid over the largest arena passes the grid's limit.
    let (a_start, a_end) = (*ARENA_SIDE.start() as f64, *ARENA_SIDE.end() as f64);
    cases.push(at(vec![("arena", json!([a_start, a_start]))]));
    cases.push(at(vec![("arena", json!([a_end, a_start]))]));
    for bad in [[a_start - 1.0, 1080.0], [1920.0, a_end + 1.0], [0.0, 0.0], [-5.0, 1080.0], [1920.0, -1e30]] {
        cases.push(past("arena", json!(bad)));
    }
    let fine = a_end / (GRID_CELLS as f64).sqrt(); // a square grid of exactly GRID_CELLS cells
    cases.push(at(vec![("arena", json!([a_end, a_end])), ("cell_size", json!(fine))]));
    cases.push(Case {
        edits: vec![("arena", json!([a_end, a_end])), ("radius", json!(0.5)), ("cell_size", json!(fine * 0.99))],
        refused: Some("cell_size"),
    });
    cases
}

fn default_settings() -> Value {
    serde_json::to_value(SimConfig::with_population(200)).unwrap()
}

fn edited(edits: &[(&'static str, Value)]) -> Value {
    let mut settings = default_settings();
    for (field, value) in edits {
        assert!(settings.get(*field).is_some(), "no setting `{field}`");
        settings[*field] = value.clone();
    }
    settings
}

/// A JSON snapshot of a small world, as a value to edit.
fn json_snapshot() -> Value {
    let config = SimConfig::with_population(200);
    let mut app = swarm::sim::build_app(config.clone(), 3, Backend::SparseSet, config.default_capacity());
    for _ in 0..5 {
        app.update();
    }
    serde_json::from_slice(&snapshot::save(&app.world, Format::Json).unwrap()).unwrap()
}

fn resource<'a>(file: &'a mut Value, name: &str) -> &'a mut Value {
    let resources = file["snapshot"]["resources"].as_array_mut().unwrap();
    &mut resources.iter_mut().find(|r| r["name"] == name).unwrap()["value"]
}

fn load(file: &Value) -> Result<(), SnapshotError> {
    let bytes = serde_json::to_vec(file).unwrap();
    snapshot::schema().load(&bytes, None).map(|_| ())
}

/// What a refusal must say: the setting's name, and a limit.
fn says_field_and_limit(message: &str, field: &str) -> bool {
    message.contains(field) && (message.contains("limit") || message.contains("two radii"))
}

#[test]
fn snapshot_settings_at_their_limits_load_and_past_them_are_refused() {
    let base = json_snapshot();
    let cases = cases();
    for case in &cases {
        let mut file = base.clone();
        *resource(&mut file, "settings") = edited(&case.edits);
        let result = load(&file);
        match (case.refused, result) {
            (None, Ok(())) => {}
            (None, Err(error)) => panic!("{:?} is within the limits, yet refused: {error}", case.edits),
            (Some(field), Ok(())) => panic!("{:?} loaded, past the limit of `{field}`", case.edits),
            (Some(field), Err(error)) => {
                let message = error.to_string();
                // A negative number for an unsigned field fails to decode; every other refusal is a limit.
                if let SnapshotError::OutOfRange { name, .. } = &error {
                    assert_eq!(*name, "settings", "{message}");
                    assert!(says_field_and_limit(&message, field), "{:?}: {message}", case.edits);
                } else {
                    assert!(message.contains("settings"), "{:?}: {message}", case.edits);
                }
            }
        }
    }
    assert!(cases.len() > 60, "{} cases", cases.len());
}

#[test]
fn snapshot_capacity_and_frame_counter_meet_their_limits() {
    let base = json_snapshot();
    let capacity = |value: u64| {
        let mut file = base.clone();
        file["snapshot"]["allocator"]["capacity"] = json!(value);
        load(&file)
    };
    assert_eq!(capacity(*CAPACITY.end() as u64), Ok(()));
    let error = capacity(*CAPACITY.end() as u64 + 1).unwrap_err().to_string();
    assert!(error.contains("capacity") && error.contains(&limits::words(&CAPACITY)), "{error}");

    let frames = |value: u64| {
        let mut file = base.clone();
        resource(&mut file, "statistics")["frames"] = json!(value);
        load(&file)
    };
    let last = *FRAMES.end() as u64;
    assert_eq!(frames(last), Ok(()));
    for bad in [last + 1, 4_000_000_000] {
        let error = frames(bad).unwrap_err();
        assert!(matches!(error, SnapshotError::OutOfRange { name: "statistics", .. }), "{error}");
        assert!(error.to_string().contains(&format!("limit of {last}")), "{error}");
    }
}

#[test]
fn an_empty_world_with_capacity_zero_is_refused() {
    // A world saved empty, its capacity edited to 0: the allocator accepts it (nothing is alive), the limit not.
    let mut app = swarm::sim::build_app(SimConfig::with_population(0), 1, Backend::SparseSet, 10);
    app.update();
    let mut file: Value = serde_json::from_slice(&snapshot::save(&app.world, Format::Json).unwrap()).unwrap();
    file["snapshot"]["allocator"]["capacity"] = json!(0);
    let error = load(&file).unwrap_err();
    assert!(matches!(error, SnapshotError::OutOfRange { name: "world", .. }), "{error}");
    assert!(error.to_string().contains("capacity is 0"), "{error}");
}

/// A recording of no inputs: a header with these settings and capacity, and an end line at frame 0.
fn recording(settings: &Value, capacity: u64) -> String {
    let header = json!({
        "format": "swarm recording", "version": 1, "backend": "sparse-set", "seed": 1,
        "capacity": capacity, "settings": settings,
    });
    format!("{header}\n{{\"end\":{{\"frame\":0,\"digest\":\"0123456789abcdef\"}}}}\n")
}

#[test]
fn recording_settings_at_their_limits_read_and_past_them_are_refused() {
    for case in cases() {
        let text = recording(&edited(&case.edits), 1000);
        match (case.refused, Recording::parse(&text)) {
            (None, Ok(_)) => {}
            (None, Err(error)) => panic!("{:?} is within the limits, yet refused: {error}", case.edits),
            (Some(field), Ok(_)) => panic!("{:?} read, past the limit of `{field}`", case.edits),
            (Some(field), Err(error)) => {
                assert_eq!(error.line, 1, "{error}");
                let message = error.to_string();
                assert!(
                    says_field_and_limit(&message, field) || message.contains("bad header"),
                    "{:?}: {message}",
                    case.edits
                );
            }
        }
    }
    let settings = default_settings();
    assert!(Recording::parse(&recording(&settings, *CAPACITY.end() as u64)).is_ok());
    for bad in [0, *CAPACITY.end() as u64 + 1] {
        let error = Recording::parse(&recording(&settings, bad)).unwrap_err().to_string();
        assert!(error.contains("capacity") && error.contains(&limits::words(&CAPACITY)), "{error}");
    }
}

#[test]
fn recording_frames_and_inputs_meet_their_limits() {
    let text = recording(&default_settings(), 1000);
    let (header, end) = text.split_once('\n').unwrap();
    let last = *FRAMES.end() as u64;
    let with = |line: String| format!("{header}\n{line}\n{end}");
    let input =
        |frame: u64, input: &str| format!("{{\"frame\":{frame},\"input\":{input},\"digest\":\"0123456789abcdef\"}}");
    // The end line's frame 0 comes after the input, so these inputs end in a "before" refusal on line 3.
    let error = Recording::parse(&with(input(last, "\"step\""))).unwrap_err();
    assert_eq!(error.line, 3, "{error}");
    for frame in [last + 1, 4_000_000_000, u64::MAX] {
        let error = Recording::parse(&with(input(frame, "\"step\""))).unwrap_err();
        assert_eq!(error.line, 2, "{error}");
        assert!(error.why.contains(&format!("limit of {last}")), "{error}");
    }
    let end_past = format!("{header}\n{{\"end\":{{\"frame\":{},\"digest\":\"0123456789abcdef\"}}}}", last + 1);
    assert!(Recording::parse(&end_past).unwrap_err().why.contains("limit"), "an end line past the limit");
    let align = |every: u64| Recording::parse(&with(input(0, &format!("{{\"align_every\":{every}}}"))));
    assert!(align(*ALIGN_EVERY.end() as u64).is_ok());
    let error = align(*ALIGN_EVERY.end() as u64 + 1).unwrap_err();
    assert!(error.why.contains("align_every") && error.why.contains("limit"), "{error}");
    let error = Recording::parse(&with(input(0, "{\"group\":{\"name\":\"nonsense\",\"enabled\":false}}"))).unwrap_err();
    assert!(error.why.contains("`nonsense`") && error.why.contains("known:"), "{error}");
}
