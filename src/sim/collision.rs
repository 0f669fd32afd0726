//! Collision: a uniform-grid broadphase; fighters of opposite teams that overlap each lose health.

use super::components::{Blue, Health, Position, Red};
use super::config::{SimConfig, SimStats};
use super::grid::{Grid, GridItem};
use crate::ecs::app::{App, Stage};
use crate::ecs::{Entity, World};
use glam::Vec2;

/// Adds [`build_grid`] and [`resolve_collisions`] to `Update`.
pub fn plugin(app: &mut App) {
    app.insert_resource(Broadphase::default()).add_systems(Stage::Update, (build_grid, resolve_collisions));
}

/// No team yet: the fighter is in neither team pool (cannot happen for a fighter; marks holes in `team`).
const NO_TEAM: u8 = u8::MAX;

/// The grid of this frame and a snapshot of every fighter by entity index, both built after movement. Hunters
/// read them next frame, before anything moves again.
#[derive(Default)]
pub struct Broadphase {
    /// Fighters by cell.
    pub grid: Grid,
    /// `fighters[index]` is the fighter at that index when the grid was built: handle, position, team.
    pub fighters: Vec<Option<(Entity, Vec2, u8)>>,
    team: Vec<u8>,
    damage: Vec<i32>,
}

/// Sorts every fighter into the uniform grid by its position after movement.
///
/// Teams are tags, so they are read with two single-pool walks (no probing) into a dense array by index; then one
/// query over `(Position, Health)` (the health pool drives, positions are probed) fills the grid.
pub fn build_grid(world: &mut World) {
    let config = world.resource::<SimConfig>().clone();
    world.resource_scope::<Broadphase, _>(|world, broadphase| {
        let bound = world.entities().index_bound() as usize;
        let team = &mut broadphase.team;
        team.clear();
        team.resize(bound, NO_TEAM);
        world.query::<(&Red,)>().for_each(|e, _| team[e.index() as usize] = 0);
        world.query::<(&Blue,)>().for_each(|e, _| team[e.index() as usize] = 1);

        let fighters = &mut broadphase.fighters;
        fighters.clear();
        fighters.resize(bound, None);
        let grid = &mut broadphase.grid;
        grid.begin(config.arena, config.cell_size.max(2.0 * config.radius));
        world.query::<(&Position, &Health)>().for_each(|entity, (p, _)| {
            let team = team[entity.index() as usize];
            if team != NO_TEAM {
                grid.push(GridItem { entity, position: p.0, team });
                fighters[entity.index() as usize] = Some((entity, p.0, team));
            }
        });
        grid.finish();
    });
}

/// Finds enemy contacts (each pair once, from the grid) and subtracts the damage. Damage is an integer sum per
/// fighter, so the result does not depend on the order pairs are visited in.
pub fn resolve_collisions(world: &mut World) {
    let config = world.resource::<SimConfig>().clone();
    let reach2 = (2.0 * config.radius) * (2.0 * config.radius);
    world.resource_scope::<Broadphase, _>(|world, broadphase| {
        let Broadphase { grid, damage, .. } = broadphase;
        damage.clear();
        damage.resize(world.entities().index_bound() as usize, 0);
        let items = grid.items();
        let mut contacts = 0u32;
        grid.for_each_near_pair(|i, j| {
            let (a, b) = (&items[i], &items[j]);
            if a.team != b.team && a.position.distance_squared(b.position) < reach2 {
                damage[a.entity.index() as usize] += config.damage;
                damage[b.entity.index() as usize] += config.damage;
                contacts += 1;
            }
        });
        world.query::<(&mut Health,)>().for_each(|e, (h,)| h.0 -= damage[e.index() as usize]);
        world.resource_mut::<SimStats>().contacts_frame = contacts;
    });
}
