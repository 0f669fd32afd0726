//! Instruction counts of the mutation pipeline's common operations, the noise-free guard beside `benches/events.rs`:
//! one workload, five fresh worlds of 10,000 entities, run under callgrind with collection toggled on the measured
//! function only. Not a criterion bench: it prints nothing; callgrind's "Collected" line is the figure.
//!
//! ```text
//! cargo bench --bench pipeline_counts --no-run
//! cp target/release/deps/pipeline_counts-<hash> /tmp/pcb/new     # the other side: /tmp/pcb/old
//! W=spawn   # spawn, despawn, insert (through commands) or direct; then 0 or 1 handler
//! cd /tmp/pcb && valgrind --tool=callgrind --toggle-collect="*m_cmd_$W*" --toggle-collect="*m_$W*" ./new $W 0
//! ```
//!
//! BENCHMARKS.md's figures use exactly these two toggles, and paths of one length for both sides: the program's
//! own path shifts its stack, and a count with it by up to 1.5 %. With one handler, each kind of event has one
//! that reads a component and records nothing, as in `benches/events.rs`.

use std::hint::black_box;
use swarm::ecs::{Entity, World};

#[path = "common/lifecycle.rs"]
mod lifecycle;
use lifecycle::{world, Health, Mark, Position, N};

#[inline(never)]
fn m_cmd_spawn(w: &mut World) {
    let mut c = w.commands();
    for i in 0..N {
        c.spawn((Position([i as f32, 1.0]), Health(1))).unwrap();
    }
    black_box(w.apply_commands());
}
#[inline(never)]
fn m_cmd_despawn(w: &mut World, h: &[Entity]) {
    let mut c = w.commands();
    for &e in h {
        c.despawn(e);
    }
    black_box(w.apply_commands());
}
#[inline(never)]
fn m_cmd_insert(w: &mut World, h: &[Entity]) {
    let mut c = w.commands();
    for (i, &e) in h.iter().enumerate() {
        c.insert(e, Mark(i as u32));
    }
    black_box(w.apply_commands());
}
#[inline(never)]
fn m_direct(w: &mut World, h: &[Entity]) {
    for (i, &e) in h.iter().enumerate() {
        w.insert(e, Mark(i as u32)).unwrap();
    }
    for &e in h {
        black_box(w.remove::<Mark>(e).unwrap());
    }
    for &e in h {
        w.despawn(e).unwrap();
    }
    for i in 0..N {
        black_box(w.spawn((Position([i as f32, 2.0]), Health(2))).unwrap());
    }
}

fn main() {
    // `cargo bench` adds `--bench`; the workload and the handler count are the other two arguments.
    let args: Vec<String> = std::env::args().skip(1).filter(|arg| !arg.starts_with("--")).collect();
    let (Some(which), Some(handlers)) = (args.first(), args.get(1).and_then(|n| n.parse::<usize>().ok())) else {
        eprintln!(
            "usage: pipeline_counts spawn|despawn|insert|direct 0|1   (run under callgrind, see the file's head)"
        );
        std::process::exit(2);
    };
    for _ in 0..5 {
        let (mut w, h) = world(handlers);
        match which.as_str() {
            "spawn" => m_cmd_spawn(&mut w),
            "despawn" => m_cmd_despawn(&mut w, &h),
            "insert" => m_cmd_insert(&mut w, &h),
            "direct" => m_direct(&mut w, &h),
            other => {
                eprintln!("unknown workload {other:?}: spawn, despawn, insert or direct");
                std::process::exit(2);
            }
        }
    }
}
