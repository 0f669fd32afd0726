//! The game on one thread and on two, beside what the machine gives a second thread at the same moment.
//!
//! On a shared machine a second core's share moves from minute to minute, so the ratio of two runs taken apart
//! measures the neighbours as much as the code. Here both are taken in the same rounds. Each round runs a block of
//! frames on an app of one thread and on an app of two (the same settings and seed: the same game frame by frame,
//! and the digests are checked equal at the end; a block's first frame is not timed, as it refills the caches the
//! other app's block or the floors took), then two floors, each a fixed amount of work in two halves joined on a
//! pool of one thread and on a pool of two:
//! - arithmetic: a dependent chain with no memory traffic, so no code gains more from the second thread;
//! - a memory stream over two arrays of 64 MiB, four times the last-level cache, one pass of both halves at a time
//!   (on one thread as on two, every pass reads and writes the whole of both arrays): what the second thread gives
//!   work bound by memory, which the cores, and on a shared host other tenants, share.
//!
//! The frame's ratio is read against the floors' of the same rounds. Then each system's own ratio (the profiler's
//! times over the same blocks), and the ratio the frame would reach if every system but the command buffer's apply
//! reached the arithmetic floor, or the memory floor, of its round: the apply runs the buffer in its order, most of
//! it on one thread, so it bounds the frame's ratio as the code stands.
//!
//! Run: `cargo bench --bench cores` (armies and churn at 100,000 fighters, the sparse set); `-- armies` or
//! `-- churn` for one. It prints, per scenario, the median and the 10th to 90th percentile of the frame on each
//! count and of the three ratios taken round by round, and the frame's ratio in the rounds where the arithmetic
//! floor was at most [`QUIET`] (the machine gave the second thread nearly whole). Without `--bench` (as
//! `cargo test --benches` runs it) it does nothing.

use std::hint::black_box;
use std::time::Instant;
use swarm::app::profile::SpanStat;
use swarm::ecs::Backend;
use swarm::sim::{build_app, digest, Scenario, SimConfig};

/// Fighters of each scenario.
const FIGHTERS: u32 = 100_000;
/// Rounds per scenario.
const ROUNDS: usize = 24;
/// Frames timed per block: each app runs one block a round, after one frame untimed (the other app's block and the
/// floors have taken the caches: a game has one world, and its frames find theirs warm).
const BLOCK: usize = 12;
/// Frames each app runs before the timing, so the population is steady.
const WARM_UP: usize = 120;
/// Steps of each half of the floor's arithmetic (about 25 ms a half on the EPYC VM).
const FLOOR_STEPS: u64 = 20_000_000;
/// Words of each array of the memory floor: 64 MiB, twice the EPYC VM's last-level cache, so both arrays are four
/// times it and no pass finds its data in the cache.
const MEMORY_WORDS: usize = 8 << 20;
/// Passes of the memory floor.
const MEMORY_PASSES: usize = 2;
/// The arithmetic floor's ratio at or below which a round counts as one where the second thread was all there.
const QUIET: f64 = 0.55;

/// One half of the arithmetic floor: a chain of integer steps, each depending on the last (no memory touched).
#[inline(never)]
fn arithmetic(steps: u64, seed: u64) -> u64 {
    let (mut x, mut y) = (seed, seed ^ 0x5555);
    for i in 0..steps {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i);
        y = (y ^ (x >> 7)).rotate_left(3).wrapping_add(x);
    }
    x ^ y
}

/// Seconds `pool` takes for both halves of the arithmetic floor (in turn on one thread, at once on two).
fn arithmetic_floor(pool: &rayon::ThreadPool) -> f64 {
    let start = Instant::now();
    let (a, b) = pool.install(|| rayon::join(|| arithmetic(FLOOR_STEPS, 1), || arithmetic(FLOOR_STEPS, 2)));
    black_box(a ^ b);
    start.elapsed().as_secs_f64()
}

/// One pass of one half of the memory floor: `to[i] += from[i] * 3`.
#[inline(never)]
fn stream(to: &mut [u64], from: &[u64]) {
    for (to, from) in to.iter_mut().zip(from) {
        *to = to.wrapping_add(from.wrapping_mul(3));
    }
}

/// Seconds `pool` takes for the memory floor: each pass joins its two halves, so a pass on one thread sweeps both
/// arrays whole, as the two threads together do.
fn memory_floor(pool: &rayon::ThreadPool, to: &mut [u64], from: &[u64]) -> f64 {
    let start = Instant::now();
    let (to_front, to_back) = to.split_at_mut(to.len() / 2);
    let (from_front, from_back) = from.split_at(from.len() / 2);
    for _ in 0..MEMORY_PASSES {
        pool.install(|| rayon::join(|| stream(to_front, from_front), || stream(to_back, from_back)));
    }
    black_box(&*to);
    start.elapsed().as_secs_f64()
}

/// The median (of the two middle values if the count is even), the 10th and the 90th percentile of `values`.
fn spread(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = (values[(n - 1) / 2] + values[n / 2]) / 2.0;
    let at = |q: f64| values[((n - 1) as f64 * q).round() as usize];
    (median, at(0.1), at(0.9))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and gets no two worlds of 100,000.
    if !args.iter().any(|a| a == "--bench") {
        return;
    }
    // Any other word picks scenarios by name.
    let filter: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let scenarios: Vec<Scenario> = [Scenario::Armies, Scenario::Churn]
        .into_iter()
        .filter(|s| filter.is_empty() || filter.iter().any(|f| s.name().contains(f.as_str())))
        .collect();
    if scenarios.is_empty() {
        eprintln!("no scenario matches {filter:?}: armies, churn");
        std::process::exit(2);
    }
    let pools = [1, 2].map(|threads| {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool of the floor")
    });
    let from: Vec<u64> = (0..MEMORY_WORDS as u64).collect();
    let mut to = vec![1u64; MEMORY_WORDS];
    for scenario in scenarios {
        let config = SimConfig::with_scenario(FIGHTERS, scenario);
        let mut apps = [1, 2].map(|threads| {
            let mut app = build_app(config.clone(), 1, Backend::SparseSet, config.default_capacity());
            app.set_threads(threads);
            for _ in 0..WARM_UP {
                app.update();
            }
            app
        });
        let (mut frames, mut floors, mut memory) = ([vec![], vec![]], [vec![], vec![]], [vec![], vec![]]);
        // Each block's per-system times (the profiler's means over the block), by count and round.
        let mut spans: [Vec<Vec<SpanStat>>; 2] = [vec![], vec![]];
        for round in 0..ROUNDS {
            // Every other round the other order, so neither count always runs first.
            for k in [round % 2, 1 - round % 2] {
                apps[k].update();
                apps[k].profiler().reset();
                let start = Instant::now();
                for _ in 0..BLOCK {
                    apps[k].update();
                }
                frames[k].push(start.elapsed().as_secs_f64() / BLOCK as f64);
                let mut block = Vec::new();
                apps[k].profiler().snapshot(&mut block);
                spans[k].push(block);
            }
            for k in [round % 2, 1 - round % 2] {
                floors[k].push(arithmetic_floor(&pools[k]));
                memory[k].push(memory_floor(&pools[k], &mut to, &from));
            }
        }
        let (one, two) = (digest(&apps[0].world), digest(&apps[1].world));
        assert_eq!(one, two, "{}: one thread and two must play the same game", scenario.name());
        let ratio = |pair: &[Vec<f64>; 2]| -> Vec<f64> { pair[1].iter().zip(&pair[0]).map(|(b, a)| b / a).collect() };
        let (frame_ratios, floor_ratios, memory_ratios) = (ratio(&frames), ratio(&floors), ratio(&memory));
        let mut quiet: Vec<f64> =
            frame_ratios.iter().zip(&floor_ratios).filter(|(_, &f)| f <= QUIET).map(|(&r, _)| r).collect();
        let show = |(median, p10, p90): (f64, f64, f64), scale: f64| {
            format!("{:.3} ({:.3}..{:.3})", median * scale, p10 * scale, p90 * scale)
        };
        println!("{} at {FIGHTERS} fighters, {ROUNDS} rounds of {BLOCK} frames (median, p10..p90):", scenario.name());
        println!("  frame on 1 thread       {} ms", show(spread(&mut frames[0].clone()), 1e3));
        println!("  frame on 2 threads      {} ms", show(spread(&mut frames[1].clone()), 1e3));
        println!("  frame, 2 over 1         {}", show(spread(&mut frame_ratios.clone()), 1.0));
        println!("  arithmetic, 2 over 1    {}", show(spread(&mut floor_ratios.clone()), 1.0));
        println!("  memory, 2 over 1        {}", show(spread(&mut memory_ratios.clone()), 1.0));
        match quiet.len() {
            0 => println!("  frame, 2 over 1, where the arithmetic was at most {QUIET}: no such round"),
            n => println!(
                "  frame, 2 over 1, where the arithmetic was at most {QUIET} ({n} rounds): {}",
                show(spread(&mut quiet), 1.0)
            ),
        }
        println!("  digest {one:016x} on both");
        print_systems(&spans, &frames, &floor_ratios, &memory_ratios);
    }
}

/// The milliseconds per frame of system (or group) `name` in each block of `blocks` (a span may run more than once
/// a frame: the command buffer's apply runs after every stage).
fn system_ms(blocks: &[Vec<SpanStat>], name: &str) -> Vec<f64> {
    let per_frame = |block: &Vec<SpanStat>| block.iter().find(|s| s.name == name).map_or(0.0, |s| s.total_ms);
    blocks.iter().map(|block| per_frame(block) / BLOCK as f64).collect()
}

/// Each system and group of at least [`SHOWN_SHARE`] of the one-thread frame, on one thread and on two, with its
/// ratio taken round by round; then the frame's ratio if every system but the command buffer's apply (which runs
/// the buffer in its order, most of it on one thread) reached the arithmetic floor of the same round, and the
/// memory floor: the ratio the frame could reach with the apply as it is.
fn print_systems(spans: &[Vec<Vec<SpanStat>>; 2], frames: &[Vec<f64>; 2], arithmetic: &[f64], memory: &[f64]) {
    let frame_ms: f64 = frames[0].iter().sum::<f64>() * 1e3 / frames[0].len() as f64;
    println!("  by system (median of the rounds): 1 thread ms, 2 threads ms, 2 over 1");
    for stat in spans[0].first().map_or(&[][..], Vec::as_slice) {
        let (one, two) = (system_ms(&spans[0], &stat.name), system_ms(&spans[1], &stat.name));
        let mean_one = one.iter().sum::<f64>() / one.len() as f64;
        if mean_one < SHOWN_SHARE * frame_ms {
            continue;
        }
        let mut ratios: Vec<f64> = two.iter().zip(&one).map(|(b, a)| b / a).collect();
        println!(
            "    {:<22} {:>7.3} {:>7.3} {:>7.3}",
            stat.name,
            spread(&mut one.clone()).0,
            spread(&mut two.clone()).0,
            spread(&mut ratios).0
        );
    }
    let (apply_one, apply_two) = (system_ms(&spans[0], APPLY), system_ms(&spans[1], APPLY));
    let bound = |floor: &[f64]| -> Vec<f64> {
        (0..floor.len())
            .map(|r| {
                let one = frames[0][r] * 1e3;
                (apply_two[r] + (one - apply_one[r]) * floor[r]) / one
            })
            .collect()
    };
    println!(
        "  frame, 2 over 1, with all but {APPLY} at the arithmetic floor {:.3}, at the memory floor {:.3}",
        spread(&mut bound(arithmetic)).0,
        spread(&mut bound(memory)).0
    );
}

/// The span of the command buffer's apply between the stages.
const APPLY: &str = "apply_commands";
/// The least share of the one-thread frame a system's row needs to be printed.
const SHOWN_SHARE: f64 = 0.02;
