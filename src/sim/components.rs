//! The simulation's components, and [`TABLE`], what is done with each (snapshot, digest, census). Tags (`Red`,
//! `Blue`, `Hunter`, `Particle`) are zero-sized: membership only.

use super::Census;
use crate::ecs::Component;
use crate::ecs::{Bundle, Children, Entity, Parent, SnapshotSchema, World};
use glam::Vec2;
use serde::{Deserialize, Serialize};

/// Where an entity is, in arena units.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Position(pub Vec2);

/// How fast it moves, in arena units per second.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Velocity(pub Vec2);

/// Hit points of a fighter; it dies at zero or below. An integer so damage sums in any order to the same value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health(pub i32);

/// Team tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Red;

/// Team tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blue;

/// A fighter that chases one enemy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hunter;

/// The enemy a hunter chases. The handle goes stale when that enemy dies, even if its index is reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, crate::ecs::HoldsEntities)]
pub struct Target(#[entities] pub Entity);

/// A spark from a death: moves, fades, never collides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Particle;

/// Frames left before a particle disappears.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lifetime(pub u16);

/// The wave a fighter came in (the `stress` scenario, [`crate::sim::stress`]), numbered from 0 in the order the
/// waves were served. The window tints each wave by its number, in its team's hues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wave(pub u32);

/// A fighter as spawned: where it is, how it moves, its health, and its team's tag `T` (`Red` or `Blue`).
#[derive(Bundle)]
pub struct FighterBundle<T: Component> {
    /// Where it starts.
    pub position: Position,
    /// Its heading times its speed.
    pub velocity: Velocity,
    /// Full health.
    pub health: Health,
    /// `Red` or `Blue`.
    pub team: T,
}

/// A hunter as spawned: a fighter that also hunts.
#[derive(Bundle)]
pub struct HunterBundle<T: Component> {
    /// The fighter it is.
    #[bundle]
    pub fighter: FighterBundle<T>,
    /// The tag.
    pub hunter: Hunter,
}

/// A particle as spawned where a fighter died.
#[derive(Bundle)]
pub struct ParticleBundle {
    /// Where the fighter died.
    pub position: Position,
    /// Its drift.
    pub velocity: Velocity,
    /// Frames it lives.
    pub lifetime: Lifetime,
    /// The tag.
    pub particle: Particle,
}

/// Which side a fighter is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Team {
    /// The red side.
    Red,
    /// The blue side.
    Blue,
}

/// What the simulation does with one of its component types. [`TABLE`] lists every type a simulation world
/// registers, once: the snapshot schema, the digest and the census are made from it (`tests/sim.rs` checks that
/// a world that ran registers no other type).
pub struct Kept {
    /// The type's name in a snapshot (the file format: renaming one breaks old files); `None`: not a schema
    /// column (the hierarchy's, which every snapshot keeps itself; a transient marker).
    pub snapshot: Option<&'static str>,
    /// The type.
    pub type_id: fn() -> std::any::TypeId,
    /// How many entities hold it (the storage's count).
    pub count: fn(&World) -> usize,
    /// Adds the type to a snapshot schema under its name.
    pub schema: fn(SnapshotSchema, &'static str) -> SnapshotSchema,
    /// Hands each holder's value, as a `u64`, to the digest (`None`: not hashed, a transient marker).
    pub digest: Option<Hash>,
    /// The census field that counts the type's holders, if any.
    pub census: Option<fn(&mut Census) -> &mut u32>,
    /// Why it is in neither the schema nor the digest (a marker no entity holds between frames), if so.
    pub transient: Option<&'static str>,
    /// Lets checkpoints hold it ([`World::rollback_component`]); `None` for the hierarchy's, which they always hold.
    pub rollback: Option<fn(&mut World)>,
}

/// How the digest reads a type: each holder with its value as a `u64`.
pub type Hash = fn(&World, &mut dyn FnMut(Entity, u64));

/// A position or velocity as the digest hashes it: the two floats' bits.
fn pack(v: Vec2) -> u64 {
    (v.x.to_bits() as u64) << 32 | v.y.to_bits() as u64
}

/// A value the digest hashes, by type: `hash` turns a value into a `u64`.
macro_rules! hashed {
    ($t:ty, $hash:expr) => {
        Some(|world: &World, add: &mut dyn FnMut(Entity, u64)| {
            let hash: fn(&$t) -> u64 = $hash;
            world.query_ref::<(&$t,)>().for_each(|e, (v,)| add(e, hash(v)))
        })
    };
}

/// A plain column of a snapshot schema.
fn column<T: Component + Serialize + serde::de::DeserializeOwned>(
    s: SnapshotSchema,
    name: &'static str,
) -> SnapshotSchema {
    s.component::<T>(name)
}

/// Not a schema column.
fn no_column(s: SnapshotSchema, _: &'static str) -> SnapshotSchema {
    s
}

/// A table entry for type `$t`: its snapshot name, how it joins the schema, how the digest hashes a value (see
/// [`hashed!`]), its census field.
macro_rules! kept {
    ($t:ty, $name:expr, $schema:expr, $hash:expr, $census:expr) => {
        Kept {
            snapshot: $name,
            type_id: std::any::TypeId::of::<$t>,
            count: World::count_of::<$t>,
            schema: $schema,
            digest: hashed!($t, $hash),
            census: $census,
            transient: None,
            rollback: Some(|world| {
                world.rollback_component::<$t>();
            }),
        }
    };
    // The hierarchy's types: checkpoints always hold them.
    (tree $t:ty, $hash:expr, $census:expr) => {
        Kept {
            snapshot: None,
            type_id: std::any::TypeId::of::<$t>,
            count: World::count_of::<$t>,
            schema: no_column,
            digest: hashed!($t, $hash),
            census: $census,
            transient: None,
            rollback: None,
        }
    };
}

/// Every component type of the simulation, in the digest's order (a record's kind is its position plus one).
pub const TABLE: &[Kept] = &[
    kept!(Position, Some("position"), column::<Position>, |p| pack(p.0), None),
    kept!(Velocity, Some("velocity"), column::<Velocity>, |v| pack(v.0), None),
    kept!(Health, Some("health"), column::<Health>, |h| h.0 as u32 as u64, None),
    kept!(Red, Some("red"), column::<Red>, |_| 0, Some(|c| &mut c.red)),
    kept!(Blue, Some("blue"), column::<Blue>, |_| 0, Some(|c| &mut c.blue)),
    kept!(Hunter, Some("hunter"), column::<Hunter>, |_| 0, Some(|c| &mut c.hunters)),
    kept!(Target, Some("target"), |s, name| s.component_with_entities::<Target>(name), |t| t.0.to_bits(), None),
    kept!(Particle, Some("particle"), column::<Particle>, |_| 0, Some(|c| &mut c.particles)),
    kept!(Lifetime, Some("lifetime"), column::<Lifetime>, |l| l.0 as u64, None),
    // The hierarchy: every snapshot keeps it (its own columns); the digest hashes each follower's captain and
    // each captain's list in order (the order decides who is promoted).
    kept!(tree Parent, |p| p.get().to_bits(), None),
    kept!(tree Children, |c| c.iter().fold(0, |h, e| super::digest::mix(h ^ e.to_bits())), Some(|c| &mut c.squads)),
    Kept {
        snapshot: None,
        type_id: std::any::TypeId::of::<super::squads::Fallen>,
        count: World::count_of::<super::squads::Fallen>,
        schema: no_column,
        digest: None,
        census: None,
        transient: Some("inserted by despawn_dead; its handler despawns the holder in the same apply"),
        rollback: Some(|world| {
            world.rollback_component::<super::squads::Fallen>();
        }),
    },
    // Last, so the kinds of the types before it (and the digests of runs without waves) are as they were.
    kept!(Wave, Some("wave"), column::<Wave>, |w| w.0 as u64, None),
];
