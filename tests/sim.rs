//! The simulation: determinism across backends and live switches, full worlds, churn, bad settings.

use glam::Vec2;
use swarm::app::profile::Profiler;
use swarm::app::OrderSystems;
use swarm::app::State;
use swarm::ecs::Backend;
use swarm::ecs::Component;
use swarm::ecs::Format;
use swarm::sim::components::Team;
use swarm::sim::components::{Blue, Position, Red};
use swarm::sim::report::{run, run_app, RunSettings};
use swarm::sim::rollback::{sync_test, PlayerInput, SyncError, MAX_CHECK_DISTANCE};
use swarm::sim::rounds::{Phase, Round, BREAK, ROUND_FRAMES};
use swarm::sim::snapshot::{load_app, save};
use swarm::sim::{build_app, digest, Scenario, SimConfig, SimStats, StaleCatches};

fn settings(seed: u64, population: u32, frames: u32, backend: Backend, switch_every: Option<u32>) -> RunSettings {
    let config = SimConfig::with_population(population);
    RunSettings { capacity: config.default_capacity(), config, seed, frames, backend, switch_every, threads: 1 }
}

#[test]
fn same_digest_on_every_backend_for_several_seeds() {
    for seed in [1, 7, 0xdead_beef] {
        let reference = run(&settings(seed, 600, 150, Backend::SparseSet, None), |_| {});
        assert!(reference.deaths > 0, "seed {seed}: nobody died; the test would prove little");
        assert!(reference.stale_caught > 0 || reference.frames < 100, "seed {seed}: no stale handle was exercised");
        for backend in Backend::ALL {
            let report = run(&settings(seed, 600, 150, backend, None), |_| {});
            assert_eq!(report.digest, reference.digest, "seed {seed}: {backend} diverged");
            assert_eq!((report.deaths, report.spawned), (reference.deaths, reference.spawned));
        }
    }
}

#[test]
fn live_switches_do_not_change_the_digest() {
    let reference = run(&settings(3, 600, 200, Backend::SparseSet, None), |_| {});
    for k in [1, 7, 50] {
        for start in [Backend::SparseSet, Backend::Archetype, Backend::BTree] {
            let report = run(&settings(3, 600, 200, start, Some(k)), |_| {});
            assert!(report.switches >= 3, "switch every {k}: only {} switches", report.switches);
            assert_eq!(report.digest, reference.digest, "switch every {k} from {start}: digest changed");
        }
    }
}

#[test]
fn different_seeds_give_different_worlds() {
    let a = run(&settings(1, 300, 60, Backend::SparseSet, None), |_| {});
    let b = run(&settings(2, 300, 60, Backend::SparseSet, None), |_| {});
    assert_ne!(a.digest, b.digest);
}

#[test]
fn a_full_world_stops_spawning_and_counts() {
    let mut s = settings(5, 2_000, 120, Backend::SparseSet, None);
    s.capacity = 500; // smaller than the population
    for backend in Backend::ALL {
        s.backend = backend;
        let report = run(&s, |_| {});
        // The refill asks again every frame: what is counted is how far below the target the world holds it.
        assert_eq!(report.fighters_refused, 0, "{backend}: refills are not summed over frames");
        assert!(report.short_of_target > 1_000, "{backend}: short by only {}", report.short_of_target);
        assert!(report.short_of_target < 2_000, "{backend}: short by {}", report.short_of_target);
        assert!(report.peak_live <= 500, "{backend}: peak {} above capacity", report.peak_live);
        assert!(report.live > 0);
    }
}

#[test]
fn a_burst_the_full_world_refuses_is_counted_once() {
    let mut s = settings(5, 2_000, 1, Backend::SparseSet, None);
    s.capacity = 500;
    let mut app = build_app(s.config.clone(), s.seed, s.backend, s.capacity);
    app.set_threads(1);
    for _ in 0..30 {
        app.update();
    }
    assert_eq!(app.world.resource::<SimStats>().spawn_refused, 0, "nothing asked for but refills yet");
    app.world.resource_mut::<swarm::sim::SpawnRequests>().0.push(Vec2::new(300.0, 200.0));
    for _ in 0..60 {
        app.update();
    }
    let burst = u64::from(app.world.resource::<SimConfig>().burst);
    assert_eq!(app.world.resource::<SimStats>().spawn_refused, burst, "one burst refused, counted once");
    assert!(app.world.resource::<swarm::sim::Shortfall>().0 > 1_000);
}

#[test]
fn zero_population_and_huge_seed_run_sensibly() {
    let empty = run(&settings(u64::MAX, 0, 30, Backend::SparseSet, None), |_| {});
    assert_eq!((empty.live, empty.spawned, empty.deaths), (0, 0, 0));
    let big_seed = run(&settings(u64::MAX, 200, 30, Backend::Archetype, None), |_| {});
    assert!(big_seed.live > 0);
}

#[test]
fn thousands_spawn_and_die_each_second_at_default_settings() {
    let report = run(&settings(1, 10_000, 240, Backend::SparseSet, None), |_| {});
    let seconds = 240.0 / 60.0;
    // After the first fill, deaths and respawns keep going.
    assert!(report.deaths as f64 / seconds > 1_000.0, "{} deaths in {seconds} s", report.deaths);
    assert!(report.spawned as f64 / seconds > 1_000.0, "{} spawns in {seconds} s", report.spawned);
    assert!(report.particles > report.deaths);
}

#[test]
fn storage_stops_growing_under_steady_churn() {
    let mut config = SimConfig::with_population(200);
    config.arena = glam::Vec2::new(160.0, 120.0); // crowded, so fighters die and respawn all the time
    let mut app = build_app(config.clone(), 11, Backend::SparseSet, config.default_capacity());
    let mut samples = Vec::new();
    for frame in 0..10_000 {
        app.update();
        if frame % 1000 == 999 {
            samples.push(app.world.storage_bytes());
        }
    }
    let stats = app.world.resource::<SimStats>().clone();
    assert!(stats.deaths > 1_000, "only {} deaths: not much churn", stats.deaths);
    // After warm-up the pools reuse their capacity: the figure only moves at a new peak of population or index (a
    // pool's growth step, a sparse page), rarer as the run goes on. A leak of one value per death (over 1,000
    // deaths a sample) would grow every sample and by far more than 5 %.
    let settled = &samples[2..];
    assert!(settled[settled.len() - 1] * 20 <= settled[0] * 21, "storage kept growing: {samples:?}");
    // The last 4,000 frames: at most a pool's growth step at a new peak, under 1 % in all (the leak above would add
    // about 8 KiB, over 3 %, every sample).
    let last = &samples[samples.len() - 4..];
    assert!(last[3] * 100 <= last[0] * 101, "storage still growing in the last 4,000 frames: {samples:?}");
    assert!(app.world.entities().index_bound() < 4 * 200 * 4, "indices keep growing instead of being reused");
}

#[test]
fn digest_sees_every_change() {
    let config = SimConfig::with_population(100);
    let mut app = build_app(config.clone(), 1, Backend::HashMap, config.default_capacity());
    for _ in 0..10 {
        app.update();
    }
    let before = digest(&app.world);
    let some = app.world.entities().iter().next().unwrap();
    let pos = app.world.get_mut::<swarm::sim::components::Position>(some).unwrap();
    pos.0.x += 0.001;
    assert_ne!(digest(&app.world), before);
}

/// The component table covers every type a simulation world registers: each is hashed by the digest (and saved,
/// by name or as the hierarchy) or is a transient marker that no entity holds between frames; every named type is
/// a column of the snapshot schema; the digest sees a squad's change of captain.
#[test]
fn every_component_a_world_registers_is_in_the_table() {
    use swarm::sim::components::TABLE;
    for scenario in [Scenario::Armies, Scenario::Churn] {
        let config = SimConfig { scenario, ..SimConfig::with_population(400) };
        let mut app = build_app(config.clone(), 3, Backend::SparseSet, config.default_capacity());
        for _ in 0..200 {
            app.update();
        }
        assert!(app.world.resource::<SimStats>().deaths > 0, "{scenario:?}: nobody fell; Fallen was never registered");
        let mut id = 0;
        while let Some(info) = app.world.component_info(id) {
            let kept = TABLE.iter().find(|kept| (kept.type_id)() == info.type_id);
            let kept = kept.unwrap_or_else(|| panic!("{} is registered but not in the component table", info.name));
            match kept.transient {
                Some(_) => assert_eq!((kept.count)(&app.world), 0, "{}: held between frames", info.name),
                None => assert!(kept.digest.is_some(), "{} is not hashed by the digest", info.name),
            }
            id += 1;
        }
    }
    let bytes =
        save(&build_app(SimConfig::with_population(10), 1, Backend::SparseSet, 64).world, Format::Json).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    for name in TABLE.iter().filter_map(|kept| kept.snapshot) {
        assert!(text.contains(&format!("\"{name}\"")), "the schema has no column `{name}`");
    }
    // A follower moved to another captain: the same entities and values, another hierarchy.
    let config = SimConfig::with_population(300);
    let mut app = build_app(config.clone(), 2, Backend::SparseSet, config.default_capacity());
    for _ in 0..60 {
        app.update();
    }
    let world = &mut app.world;
    let squads: Vec<swarm::ecs::Entity> =
        world.query_ref::<&swarm::ecs::Children>().iter().map(|(e, _)| e).take(2).collect();
    let follower = world.get::<swarm::ecs::Children>(squads[0]).unwrap()[0];
    let before = digest(world);
    world.add_child(squads[1], follower).unwrap();
    assert_ne!(digest(world), before, "the digest misses the hierarchy");
}

/// Puts every sparse-set pool of the simulation into a random order (Fisher-Yates through `swap_positions`, which
/// keeps each entity's value with it), so queries visit entities in an order no system chose.
fn shuffle_pools(world: &mut swarm::ecs::World, rng: &mut u64) {
    use swarm::sim::components::*;
    fn shuffle<T: Component>(world: &mut swarm::ecs::World, rng: &mut u64) {
        let Some(pool) = world.sparse_set_mut::<T>() else { return };
        for i in (1..pool.len()).rev() {
            // xorshift64*: a fixed stream, independent of the simulation's own generator.
            *rng ^= *rng >> 12;
            *rng ^= *rng << 25;
            *rng ^= *rng >> 27;
            let j = (rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % (i + 1);
            pool.swap_positions(i, j);
        }
    }
    shuffle::<Position>(world, rng);
    shuffle::<Velocity>(world, rng);
    shuffle::<Health>(world, rng);
    shuffle::<Red>(world, rng);
    shuffle::<Blue>(world, rng);
    shuffle::<Hunter>(world, rng);
    shuffle::<Target>(world, rng);
    shuffle::<Particle>(world, rng);
    shuffle::<Lifetime>(world, rng);
}

#[test]
fn shuffled_iteration_order_does_not_change_the_world() {
    for seed in [1, 7] {
        let config = SimConfig::with_population(600);
        let reference = run(&settings(seed, 600, 150, Backend::Archetype, None), |_| {});
        let mut app = build_app(config.clone(), seed, Backend::SparseSet, config.default_capacity());
        let mut rng = 0x9e37_79b9_7f4a_7c15 ^ seed;
        let mut moved = 0;
        for _ in 0..150 {
            let before: Vec<_> = app
                .world
                .sparse_set::<swarm::sim::components::Position>()
                .map_or(Vec::new(), |p| p.entities().to_vec());
            shuffle_pools(&mut app.world, &mut rng);
            let after = app
                .world
                .sparse_set::<swarm::sim::components::Position>()
                .map_or(Vec::new(), |p| p.entities().to_vec());
            moved += before.iter().zip(&after).filter(|(a, b)| a != b).count();
            app.world.assert_invariants();
            app.update();
        }
        assert!(moved > 10_000, "seed {seed}: the shuffles moved only {moved} entities");
        let stats = app.world.resource::<SimStats>().clone();
        assert!(stats.deaths > 0, "seed {seed}: nobody died; the test would prove little");
        let shuffled = format!("{:016x}", digest(&app.world));
        assert_eq!(shuffled, reference.digest, "seed {seed}: shuffled pools changed the world");
    }
}

/// Mean x of a team's fighters.
fn mean_x<T: Component>(world: &swarm::ecs::World) -> f32 {
    let (mut sum, mut n) = (0.0, 0);
    world.query_ref::<(&Position, &T)>().for_each(|_, (p, _)| {
        sum += p.0.x;
        n += 1;
    });
    assert!(n > 0, "no fighters of a team");
    sum / n as f32
}

#[test]
fn armies_start_on_their_sides_and_meet() {
    let config = SimConfig { scenario: Scenario::Armies, ..SimConfig::with_population(2_000) };
    let width = config.arena.x;
    let mut app = build_app(config.clone(), 4, Backend::SparseSet, config.default_capacity());
    for _ in 0..10 {
        app.update();
    }
    let (red, blue) = (mean_x::<Red>(&app.world), mean_x::<Blue>(&app.world));
    // Each army fills its 45 % of the width: its mean is near the middle of that, a quarter of the width from its
    // edge, and far from the other's.
    assert!(red < width * 0.3 && blue > width * 0.7, "red at {red}, blue at {blue} of {width}");
    assert_eq!(app.world.resource::<SimStats>().deaths, 0, "nobody fights across the gap yet");
    let mut frames = 10;
    while app.world.resource::<SimStats>().deaths == 0 && frames < 400 {
        app.update();
        frames += 1;
    }
    assert!(app.world.resource::<SimStats>().deaths > 0, "the armies never met in {frames} frames");
    // They met in the middle: both teams have moved toward it.
    let (red_now, blue_now) = (mean_x::<Red>(&app.world), mean_x::<Blue>(&app.world));
    assert!(red_now > red && blue_now < blue, "red {red} -> {red_now}, blue {blue} -> {blue_now}");
}

#[test]
fn armies_are_deterministic_across_backends() {
    let mut s = settings(6, 600, 400, Backend::SparseSet, None);
    s.config.scenario = Scenario::Armies;
    let reference = run(&s, |_| {});
    assert!(reference.deaths > 0, "no fight in {} frames", s.frames);
    for backend in Backend::ALL {
        s.backend = backend;
        assert_eq!(run(&s, |_| {}).digest, reference.digest, "armies on {backend} diverged");
    }
    s.backend = Backend::SparseSet;
    s.config.scenario = Scenario::Churn;
    assert_ne!(run(&s, |_| {}).digest, reference.digest, "the scenario changes the run");
}

#[test]
fn stale_catches_hold_each_frames_stale_handles() {
    let config = SimConfig::with_population(2_000);
    let mut app = build_app(config.clone(), 2, Backend::SparseSet, config.default_capacity());
    let mut total = 0;
    for _ in 0..300 {
        let before = app.world.resource::<SimStats>().stale_caught;
        app.update();
        let stale = app.world.resource::<SimStats>().stale_caught - before;
        let caught = &app.world.resource::<StaleCatches>().0;
        assert_eq!(caught.len() as u64, stale, "one position per stale handle, this frame's only");
        assert!(caught.iter().all(|p| p.cmpge(Vec2::ZERO).all() && p.cmple(config.arena).all()), "off the arena");
        total += stale;
    }
    assert!(total > 0, "no stale handle in 300 frames: the test would prove little");
}

#[test]
fn same_digest_for_every_thread_count_and_piece_size_on_every_backend_with_live_switches() {
    let reference = run(&settings(3, 800, 120, Backend::SparseSet, None), |_| {});
    assert!(reference.deaths > 0, "nobody died: the test would prove little");
    for backend in Backend::ALL {
        for threads in [1, 2, 3, 4, 8] {
            // Odd piece sizes (and one piece for everything): a piece boundary that leaked into the result shows.
            for (rows, switch_every) in [(2048, None), (7, Some(17)), (333, None), (1 << 20, Some(17))] {
                let s = settings(3, 800, 120, backend, switch_every);
                let mut app = build_app(s.config, s.seed, s.backend, s.capacity);
                app.set_threads(threads);
                app.world.set_piece_rows(rows);
                let (report, _) = run_app(app, s.frames, s.switch_every, |_| {});
                assert_eq!(report.threads, threads);
                assert_eq!(
                    report.digest, reference.digest,
                    "{backend}, {threads} threads, {rows} rows a piece, switch {switch_every:?}"
                );
            }
        }
    }
}

#[test]
fn saved_at_one_thread_count_and_loaded_at_another_gives_the_same_world() {
    let straight = run(&settings(5, 1500, 160, Backend::SparseSet, None), |_| {});
    for (first, second, backend) in [(3, 2, Backend::HashMap), (1, 4, Backend::Archetype), (2, 1, Backend::SparseSet)] {
        let s = settings(5, 1500, 80, Backend::SparseSet, None);
        let mut app = build_app(s.config, s.seed, s.backend, s.capacity);
        app.set_threads(first);
        app.world.set_piece_rows(97);
        let (_, app) = run_app(app, 80, None, |_| {});
        let bytes = save(&app.world, Format::Binary).unwrap();
        let (mut loaded, _) = load_app(&bytes, Some(backend), Profiler::new()).unwrap();
        loaded.set_threads(second);
        loaded.world.set_piece_rows(5);
        let (report, _) = run_app(loaded, 80, None, |_| {});
        assert_eq!(report.digest, straight.digest, "saved at {first} threads, loaded on {backend} at {second}");
    }
}

/// The window's loop, driven with synthetic frame times: at 30, 60 or 144 frames per second, uncapped (uneven
/// short frames) or with stalls (the catch-up bound drops time), the world after N steps is the same, because the
/// simulation only ever runs whole fixed steps.
#[test]
fn the_world_after_n_steps_does_not_depend_on_the_frame_rate() {
    use swarm::sim::step::{FixedStep, MAX_STEPS_PER_FRAME};
    const STEPS: u32 = 150;
    let config = SimConfig::with_population(500);
    let fresh = || build_app(config.clone(), 4, Backend::SparseSet, config.default_capacity());
    let mut reference = fresh();
    for _ in 0..STEPS {
        reference.update();
    }
    let expected = digest(&reference.world);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut uneven = move || {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        0.0005 + (rng >> 40) as f32 / (1u64 << 24) as f32 * 0.003
    };
    let rates: [(&str, &mut dyn FnMut() -> f32); 5] = [
        ("30 fps", &mut || 1.0 / 30.0),
        ("60 fps", &mut || 1.0 / 60.0),
        ("144 fps", &mut || 1.0 / 144.0),
        ("uncapped", &mut uneven),
        ("stalls", &mut {
            let mut k = 0;
            move || {
                k += 1;
                if k % 7 == 0 {
                    0.5
                } else {
                    1.0 / 60.0
                }
            }
        }),
    ];
    for (name, frame_time) in rates {
        let mut app = fresh();
        let (mut clock, mut steps, mut frames) = (FixedStep::default(), 0, 0);
        while steps < STEPS {
            let ran = clock.advance(frame_time(), |_| {
                if steps < STEPS {
                    app.update();
                    steps += 1;
                }
            });
            assert!(ran <= MAX_STEPS_PER_FRAME, "{name}: {ran} steps in one frame");
            frames += 1;
        }
        assert_eq!(digest(&app.world), expected, "{name}: after {STEPS} steps in {frames} frames");
        assert!(frames > 20, "{name}: {frames} frames");
    }
}

/// A battle fought fast: few fighters in a small arena, so a round ends in a wipe-out within seconds.
fn quick_battle() -> SimConfig {
    let mut config = SimConfig::with_population(300);
    config.scenario = Scenario::Battle;
    config.arena = Vec2::new(320.0, 200.0);
    config
}

fn round_of(world: &swarm::ecs::World) -> (Phase, Round) {
    (world.resource::<State<Phase>>().get(), world.resource::<Round>().clone())
}

#[test]
fn battle_rounds_end_in_a_wipe_out_start_again_and_are_the_same_everywhere() {
    let config = quick_battle();
    let mut app = build_app(config.clone(), 3, Backend::SparseSet, config.default_capacity());
    app.set_threads(1);
    // Until the second round has fought a little (bounded: the first round's time limit and then some).
    let (mut frames, mut ended) = (0u32, None);
    while frames < (ROUND_FRAMES + 2 * BREAK) as u32 {
        app.update();
        frames += 1;
        let (phase, round) = round_of(&app.world);
        if phase == Phase::Over && ended.is_none() {
            // Judged at the end of the frame it happened in: the loser's count is zero, the winner's what it says.
            let census = swarm::sim::census(&app.world);
            let winner = round.winner.expect("a wipe-out has a winner");
            let (winner_left, loser_left) = match winner.team {
                Team::Red => (census.red, census.blue),
                Team::Blue => (census.blue, census.red),
            };
            assert_eq!((loser_left, winner_left), (0, winner.left), "{round:?} {census:?}");
            assert!(round.ended_at - round.started_at < ROUND_FRAMES, "a wipe-out, not the time limit: {round:?}");
            ended = Some(round.ended_at);
        }
        if round.number == 2 && app.world.resource::<SimStats>().frames == round.started_at + 60 {
            break;
        }
    }
    let (phase, round) = round_of(&app.world);
    let ended = ended.expect("the first round ended");
    assert_eq!((phase, round.number), (Phase::Fighting, 2), "{round:?}");
    assert_eq!(round.started_at, ended + BREAK, "the next round starts after the break");
    assert_eq!(round.wins.iter().sum::<u32>(), 1);
    // The second round's armies mustered afresh: the survivors of the first fell at its start.
    let census = swarm::sim::census(&app.world);
    assert!(census.red > 0 && census.blue > 0 && census.red + census.blue <= config.target_population, "{census:?}");
    let expected = (digest(&app.world), round.clone());

    // Every backend and thread count, and a save in the break loaded on another backend: the same rounds.
    let save_at = ended + BREAK / 2;
    for (k, backend) in Backend::ALL.into_iter().enumerate() {
        for threads in [1, 2, 3] {
            let mut app = build_app(config.clone(), 3, backend, config.default_capacity());
            app.set_threads(threads);
            for _ in 0..frames {
                if app.world.resource::<SimStats>().frames == save_at && threads == 2 {
                    let bytes = save(&app.world, Format::Binary).unwrap();
                    assert_eq!(round_of(&app.world).0, Phase::Over);
                    let next = Backend::ALL[(k + 1) % Backend::ALL.len()];
                    app = load_app(&bytes, Some(next), Profiler::new()).unwrap().0;
                    app.set_threads(threads);
                }
                app.update();
            }
            assert_eq!((digest(&app.world), round_of(&app.world).1), expected, "{backend} x {threads}");
        }
    }
}

#[test]
fn a_restored_checkpoint_runs_on_exactly_as_the_saved_world_did() {
    let mut armies = SimConfig::with_population(2_000);
    armies.scenario = Scenario::Armies;
    // The battle saved just before a round ends: the run after it crosses the state transition.
    for (config, save_at) in [(armies, 60u64), (quick_battle(), 780)] {
        for backend in Backend::ALL {
            for threads in [1, 2, 3] {
                let mut app = build_app(config.clone(), 9, backend, config.default_capacity());
                app.set_threads(threads);
                while app.world.resource::<SimStats>().frames < save_at {
                    app.update();
                }
                let saved = app.world.checkpoint().unwrap();
                let ahead: Vec<u64> = (0..60)
                    .map(|_| {
                        app.update();
                        digest(&app.world)
                    })
                    .collect();
                let phases = round_of(&app.world);
                // Restored onto another backend (the one in use stays), twice: the same 60 frames each time.
                app.world.set_backend(Backend::ALL[(backend as usize + 2) % Backend::ALL.len()]);
                for _ in 0..2 {
                    app.world.restore(&saved).unwrap();
                    assert_eq!(app.world.resource::<SimStats>().frames, save_at);
                    let again: Vec<u64> = (0..60)
                        .map(|_| {
                            app.update();
                            digest(&app.world)
                        })
                        .collect();
                    assert_eq!(again, ahead, "{} {backend} x {threads}", config.scenario);
                    assert_eq!(round_of(&app.world), phases);
                }
            }
        }
    }
}

/// The inputs of the sync tests: each player clicks on its side every 23 frames (player 1 on odd lags).
fn scripted(frame: u32, player: usize) -> PlayerInput {
    let clicks = frame % 23 == (player as u32 * 7) % 23;
    let burst = clicks.then(|| Vec2::new(200.0 + 1500.0 * player as f32, 300.0 + (frame % 400) as f32));
    PlayerInput::burst(burst)
}

#[test]
fn a_ggrs_sync_test_passes_on_every_backend_and_thread_count() {
    let config = SimConfig::with_population(600);
    let mut digests = Vec::new();
    for backend in Backend::ALL {
        for threads in [1, 2, 3] {
            let mut app = build_app(config.clone(), 4, backend, config.default_capacity());
            app.set_threads(threads);
            let tested = sync_test(&mut app, 70, MAX_CHECK_DISTANCE, scripted).unwrap();
            assert_eq!(tested.frames, 70);
            // Every frame past the first eight is rolled back eight frames and run again.
            assert!(tested.loads >= 60 && tested.simulated >= 70 + 60 * 8, "{tested:?}");
            digests.push((digest(&app.world), app.world.resource::<SimStats>().frames));
        }
    }
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "{digests:?}");
    assert_eq!(digests[0].1, 70);
}

#[test]
fn a_ggrs_sync_test_names_the_frame_a_hidden_state_desyncs() {
    // A system whose state is outside the world (a counter no checkpoint holds) moves a fighter by it: the same
    // frame run again gives another world, and the sync test says so.
    use std::sync::atomic::{AtomicU64, Ordering};
    static RUNS: AtomicU64 = AtomicU64::new(0);
    fn hidden(world: &mut swarm::ecs::World) {
        let runs = RUNS.fetch_add(1, Ordering::Relaxed);
        let first = world.query_ref::<(&Position,)>().iter().map(|(e, _)| e).min_by_key(|e| e.index());
        if let Some(e) = first {
            world.get_mut::<Position>(e).unwrap().0.x = runs as f32;
        }
    }
    let config = SimConfig::with_population(300);
    let mut app = build_app(config.clone(), 4, Backend::SparseSet, config.default_capacity());
    app.add_systems(swarm::app::Stage::Last, hidden.after("count_frame").after("call_next_round"));
    let error = sync_test(&mut app, 40, 2, scripted).unwrap_err();
    assert!(matches!(error, SyncError::Mismatch { .. }), "{error:?}");
    assert!(error.to_string().starts_with("desync: at frame"), "{error}");
    assert!(matches!(sync_test(&mut app, 5, 9, scripted), Err(SyncError::Ggrs(_))));
}

#[test]
fn a_players_clicks_spawn_its_own_team() {
    // In a sync test, only player 1 (blue) clicks, in an empty arena: every fighter is blue, a burst of them.
    let mut config = SimConfig::with_population(0);
    config.target_population = 0;
    let mut app = build_app(config.clone(), 4, Backend::SparseSet, 5_000);
    let blue_clicks = |frame: u32, player: usize| {
        PlayerInput::burst((player == 1 && frame % 10 == 3).then_some(Vec2::new(900.0, 500.0)))
    };
    sync_test(&mut app, 25, 4, blue_clicks).unwrap();
    let census = swarm::sim::census(&app.world);
    assert_eq!((census.red, census.blue), (0, 3 * config.burst), "three clicks (frames 3, 13, 23), three bursts");
    // And player 0's are red.
    let mut app = build_app(config.clone(), 4, Backend::Archetype, 5_000);
    sync_test(&mut app, 25, 4, |frame, player| blue_clicks(frame, 1 - player)).unwrap();
    let census = swarm::sim::census(&app.world);
    assert_eq!((census.red, census.blue), (3 * config.burst, 0));
}

#[test]
fn every_system_of_the_game_has_its_own_colour_in_the_charts() {
    use swarm::sim::chart::PALETTE;
    let report = run(&settings(1, 200, 3, Backend::SparseSet, None), |_| {});
    assert!(
        report.systems.len() <= PALETTE.len(),
        "{} systems in the report, {} colours: two would share one",
        report.systems.len(),
        PALETTE.len()
    );
    let distinct: std::collections::BTreeSet<u32> = PALETTE.iter().copied().collect();
    assert_eq!(distinct.len(), PALETTE.len(), "a colour appears twice");
}

/// The `stress` scenario: the population lands once as waves, nothing refills, waves added later (held or
/// queued) land the same on every backend and thread count, and the fighters fight and die.
#[test]
fn stress_waves_are_the_same_world_on_every_backend_and_thread_count() {
    use swarm::sim::components::Wave;
    use swarm::sim::play::{Input, Play, Start};
    use swarm::sim::stress::{Waves, WAVE};
    let config = SimConfig::with_scenario(1_000, Scenario::Stress);
    let run = |backend: Backend, threads: usize| {
        let start = Start::New { config: config.clone(), seed: 8, capacity: config.default_capacity(), backend };
        let mut play = Play::new(&start, Profiler::new()).unwrap();
        play.app.set_threads(threads);
        for frame in 0..240u32 {
            // A button held over frames 30-59 (the cursor moving), a ramp's step at 100.
            let input = match frame {
                30 => Some(Input::Wave(Some(Vec2::new(300.0, 400.0)))),
                45 => Some(Input::Wave(Some(Vec2::new(1500.0, 500.0)))),
                60 => Some(Input::Wave(None)),
                100 => Some(Input::AddWaves(4)),
                _ => None,
            };
            if let Some(input) = input {
                play.apply(&input).unwrap();
            }
            play.app.update();
            if frame == 0 {
                let world = &play.app.world;
                assert_eq!(world.resource::<SimStats>().spawned, 1_000, "the first frame lands the population");
                assert_eq!(world.resource::<Waves>().next, 1_000 / WAVE);
                assert_eq!(world.query_ref::<(&Wave,)>().count(), 1_000);
            }
        }
        let world = &play.app.world;
        let stats = world.resource::<SimStats>();
        // 20 waves held (30 steps), 4 queued, and nothing else: no refills.
        assert_eq!(stats.spawned, 1_000 + 30 * u64::from(WAVE) + 4 * u64::from(WAVE), "{backend}");
        assert_eq!(world.resource::<Waves>().next, 1_000 / WAVE + 30 + 4);
        assert!(stats.deaths > 0, "nobody died in the stress run");
        digest(world)
    };
    let reference = run(Backend::SparseSet, 1);
    for backend in Backend::ALL {
        for threads in [1, 2, 3] {
            assert_eq!(run(backend, threads), reference, "stress on {backend} x {threads}");
        }
    }
    // Saved mid-run and loaded on another backend: the waves (held point, queue, numbers) come with it.
    let start =
        Start::New { config: config.clone(), seed: 8, capacity: config.default_capacity(), backend: Backend::HashMap };
    let mut play = Play::new(&start, Profiler::new()).unwrap();
    play.apply(&Input::Wave(Some(Vec2::new(900.0, 500.0)))).unwrap();
    for _ in 0..20 {
        play.app.update();
    }
    let (mut loaded, _) =
        load_app(&save(&play.app.world, Format::Binary).unwrap(), Some(Backend::Archetype), Profiler::new()).unwrap();
    for _ in 0..20 {
        play.app.update();
        loaded.update();
    }
    assert_eq!(digest(&loaded.world), digest(&play.app.world), "a held wave survives save and load");
}
