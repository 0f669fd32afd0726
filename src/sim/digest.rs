//! A digest of the whole world: every live handle and every component value. Equal digests after the same frames
//! on different backends (and across live switches) is how the tests show the simulation is deterministic.

use super::components::TABLE;
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
/// independent of each backend's iteration order while any changed value, handle or membership changes it. The
/// types and their values come from [`TABLE`] (a record's kind is the type's position there plus one).
pub fn digest(world: &World) -> u64 {
    let mut handles = 0xcbf2_9ce4_8422_2325u64;
    for e in world.entities().iter() {
        handles = mix(handles ^ e.to_bits());
    }
    let mut sum = 0u64;
    for (k, kept) in TABLE.iter().enumerate() {
        if let Some(each) = kept.digest {
            let kind = k as u64 + 1;
            each(world, &mut |e, value| sum = sum.wrapping_add(record(kind, e, value)));
        }
    }
    mix(handles ^ mix(sum) ^ world.len() as u64)
}
