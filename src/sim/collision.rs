//! Collision: a uniform-grid broadphase; fighters of opposite teams that overlap each lose health.

use super::components::{Blue, Health, Position, Red};
use super::config::{SimConfig, SimStats};
use super::grid::{Grid, GridItem};
use crate::ecs::app::{App, Stage};
use crate::ecs::{Entity, World};

/// Adds [`build_grid`] and [`resolve_collisions`] to `Update`.
pub fn plugin(app: &mut App) {
    app.insert_resource(Broadphase::default()).add_systems(Stage::Update, (build_grid, resolve_collisions));
}

/// No team yet: the fighter is in neither team pool (cannot happen for a fighter; marks holes in `team`).
const NO_TEAM: u8 = u8::MAX;
/// A `slot` entry that points nowhere.
const NO_SLOT: u32 = u32::MAX;

/// The grid of this frame, and where each fighter sits in it, both built after movement. Hunters read them next
/// frame, before anything moves again.
#[derive(Default)]
pub struct Broadphase {
    /// Fighters by cell.
    pub grid: Grid,
    /// `slot[index]`: the position in `grid.items()` of the fighter with that entity index. Entries are never
    /// cleared wholesale: [`Broadphase::fighter`] checks the item holds that very handle, so a stale entry only
    /// misses.
    slot: Vec<u32>,
    team: Vec<u8>,
    /// Damage taken this frame, by position in `grid.items()`.
    damage: Vec<i32>,
}

impl Broadphase {
    /// `entity` as the grid saw it (handle, position after movement, team), if it was a live fighter then and has
    /// not been [forgotten](Broadphase::forget) since.
    #[inline]
    pub fn fighter(&self, entity: Entity) -> Option<&GridItem> {
        let at = *self.slot.get(entity.index() as usize)? as usize;
        self.grid.items().get(at).filter(|item| item.entity == entity)
    }

    /// Stops vouching for `entity` (it is being despawned).
    pub fn forget(&mut self, entity: Entity) {
        if let Some(slot) = self.slot.get_mut(entity.index() as usize) {
            *slot = NO_SLOT;
        }
    }
}

/// Sorts every fighter into the uniform grid by its position after movement.
///
/// Teams are tags, so they are read with two single-pool walks into a dense array by index; then one walk of the
/// position pool (sequential, no probing) picks out the fighters, the entities with a team.
pub fn build_grid(world: &mut World) {
    let config = world.resource::<SimConfig>().clone();
    world.resource_scope::<Broadphase, _>(|world, broadphase| {
        let bound = world.entities().index_bound() as usize;
        let team = &mut broadphase.team;
        team.clear();
        team.resize(bound, NO_TEAM);
        world.query::<(&Red,)>().for_each(|e, _| team[e.index() as usize] = 0);
        world.query::<(&Blue,)>().for_each(|e, _| team[e.index() as usize] = 1);

        let grid = &mut broadphase.grid;
        grid.begin(config.arena, config.cell_size.max(2.0 * config.radius));
        world.query::<(&Position,)>().for_each(|entity, (p,)| {
            let team = team[entity.index() as usize];
            if team != NO_TEAM {
                grid.push(GridItem { entity, position: p.0, team });
            }
        });
        grid.finish();

        let slot = &mut broadphase.slot;
        if slot.len() < bound {
            slot.resize(bound, NO_SLOT);
        }
        for (at, item) in grid.items().iter().enumerate() {
            slot[item.entity.index() as usize] = at as u32;
        }
    });
}

/// Finds enemy contacts (each pair once, from the grid) and subtracts the damage. Damage is summed per grid item
/// first (the items are walked in order), then applied through a view to the fighters that were hit, so the
/// health pool is only touched where something happened. Integer sums: the result does not depend on the order
/// pairs are visited in.
pub fn resolve_collisions(world: &mut World) {
    let config = world.resource::<SimConfig>().clone();
    let reach2 = (2.0 * config.radius) * (2.0 * config.radius);
    world.resource_scope::<Broadphase, _>(|world, broadphase| {
        let Broadphase { grid, damage, .. } = broadphase;
        let items = grid.items();
        damage.clear();
        damage.resize(items.len(), 0);
        let mut contacts = 0u32;
        grid.for_each_near_pair(|i, j| {
            let (a, b) = (&items[i], &items[j]);
            // Arithmetic, not a branch: whether two neighbours touch is a coin toss the predictor would lose.
            let hit = ((a.team != b.team) & (a.position.distance_squared(b.position) < reach2)) as i32;
            damage[i] += hit * config.damage;
            damage[j] += hit * config.damage;
            contacts += hit as u32;
        });
        if contacts > 0 {
            let mut health = world.view_mut::<Health>();
            for (item, &hit) in items.iter().zip(damage.iter()) {
                if hit != 0 {
                    if let Some(h) = health.get_mut(item.entity) {
                        h.0 -= hit;
                    }
                }
            }
        }
        world.resource_mut::<SimStats>().contacts_frame = contacts;
    });
}
