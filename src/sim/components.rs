//! The simulation's components. Tags (`Red`, `Blue`, `Hunter`, `Particle`) are zero-sized: membership only.

use crate::ecs::Component;
use crate::ecs::{Bundle, Entity};
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Team {
    /// The red side.
    Red,
    /// The blue side.
    Blue,
}
