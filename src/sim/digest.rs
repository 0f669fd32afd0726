//! A digest of the whole world: every live handle and every component value. Equal digests after the same frames
//! on different backends (and across live switches) is how the tests show the simulation is deterministic.

use super::components::{Blue, Health, Hunter, Lifetime, Particle, Position, Red, Target, Velocity};
use crate::ecs::{Entity, World};

/// splitmix64's finalizer: a cheap, well-mixed 64-bit hash step.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn record(kind: u64, e: Entity, value: u64) -> u64 {
    mix(mix(mix(kind) ^ e.to_bits()) ^ value)
}

/// The digest. Handles are hashed in index order; component records are summed (wrapping), which makes the digest
/// independent of each backend's iteration order while any changed value, handle or membership changes it.
pub fn digest(world: &World) -> u64 {
    let mut handles = 0xcbf2_9ce4_8422_2325u64;
    for e in world.entities().iter() {
        handles = mix(handles ^ e.to_bits());
    }
    let mut sum = 0u64;
    let mut add = |kind: u64, e: Entity, value: u64| sum = sum.wrapping_add(record(kind, e, value));
    let pack = |x: f32, y: f32| (x.to_bits() as u64) << 32 | y.to_bits() as u64;
    world.query_ref::<(&Position,)>().for_each(|e, (p,)| add(1, e, pack(p.0.x, p.0.y)));
    world.query_ref::<(&Velocity,)>().for_each(|e, (v,)| add(2, e, pack(v.0.x, v.0.y)));
    world.query_ref::<(&Health,)>().for_each(|e, (h,)| add(3, e, h.0 as u32 as u64));
    world.query_ref::<(&Red,)>().for_each(|e, _| add(4, e, 0));
    world.query_ref::<(&Blue,)>().for_each(|e, _| add(5, e, 0));
    world.query_ref::<(&Hunter,)>().for_each(|e, _| add(6, e, 0));
    world.query_ref::<(&Target,)>().for_each(|e, (t,)| add(7, e, t.0.to_bits()));
    world.query_ref::<(&Particle,)>().for_each(|e, _| add(8, e, 0));
    world.query_ref::<(&Lifetime,)>().for_each(|e, (l,)| add(9, e, l.0 as u64));
    mix(handles ^ mix(sum) ^ world.len() as u64)
}
