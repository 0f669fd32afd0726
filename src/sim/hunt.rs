//! Hunting: hunters steer toward their target; when the target handle has gone stale (the enemy died, even if
//! its index now belongs to someone else) the lookup fails, the stale handle is counted, and the hunter picks the
//! nearest enemy from the grid.

use super::collision::Broadphase;
use super::components::{Hunter, Target, Velocity};
use super::config::{SimConfig, SimStats};
use crate::app::{App, Stage};
use crate::ecs::{Entity, World};
use glam::Vec2;

/// Adds [`hunt_targets`] to `Update`.
pub fn plugin(app: &mut App) {
    app.insert_resource(HuntScratch::default()).add_systems(Stage::Update, hunt_targets);
}

/// Hunters to retarget this frame, reused.
#[derive(Default)]
pub struct HuntScratch {
    retarget: Vec<(Entity, Option<Entity>)>,
}

/// Steers hunters toward their targets; retargets those whose target is stale or missing.
///
/// Positions come from the broadphase snapshot built after last frame's movement (nothing has moved since), so
/// no per-entity world lookups are needed: a target is live if the grid item its slot points to holds that very
/// handle (the generation makes a recycled index fail). `despawn_dead` clears the slots of the fighters it
/// despawns, so the snapshot never vouches for the dead.
pub fn hunt_targets(world: &mut World) {
    let config = world.resource::<SimConfig>().clone();
    world.resource_scope::<HuntScratch, _>(|world, scratch| {
        world.resource_scope::<Broadphase, _>(|world, broadphase| {
            let mut stale = 0u64;
            scratch.retarget.clear();
            let retarget = &mut scratch.retarget;
            // Only hunters are ever given a `Target` (below), so the query needs no `With<Hunter>`; and a hunter's
            // own position comes from the snapshot too (a hunter got its target from the grid it was in, and every
            // grid since holds it), so the position pool is not probed either.
            world.query::<(&Target, &mut Velocity)>().for_each(|hunter, (target, v)| {
                match broadphase.fighter(target.0) {
                    Some(goal) => {
                        let Some(me) = broadphase.fighter(hunter) else { return };
                        let to = goal.position - me.position;
                        if to.length_squared() > 1e-6 {
                            v.0 = to.normalize() * config.hunter_speed;
                        }
                    }
                    _ => {
                        stale += 1;
                        retarget.push((hunter, None));
                    }
                }
            });
            // Hunters without a target: the hunter pool drives, and the target pool is only probed. (A hunter
            // outside the grid, without a position or a team, gets no target below.)
            world.query::<(&Hunter,)>().without::<Target>().for_each(|hunter, _| {
                retarget.push((hunter, None));
            });

            // Canonical order, so the commands (and so the world) do not depend on the backend's iteration order.
            retarget.sort_unstable();
            for (hunter, choice) in retarget.iter_mut() {
                if let Some(me) = broadphase.fighter(*hunter) {
                    *choice = nearest_enemy(broadphase, world, me.position, me.team, config.search_cells);
                }
            }
            let mut commands = world.commands();
            let mut retargets = 0;
            for &(hunter, choice) in retarget.iter() {
                match choice {
                    Some(enemy) => {
                        commands.insert(hunter, Target(enemy));
                        retargets += 1;
                    }
                    None => commands.remove::<Target>(hunter),
                }
            }
            let stats = world.resource_mut::<SimStats>();
            stats.stale_caught += stale;
            stats.retargets += retargets;
        })
    });
}

/// The nearest live enemy within `search_cells` rings of grid cells; ties go to the smaller handle.
///
/// Only the cells of each ring are visited: its top and bottom rows are each one contiguous range of the sorted
/// grid items, and each row between contributes its two end cells (at 100k fighters most cells are empty, so the
/// cost is in reaching cells, not in their items).
fn nearest_enemy(broadphase: &Broadphase, world: &World, from: Vec2, team: u8, search_cells: i32) -> Option<Entity> {
    let grid = &broadphase.grid;
    let items = grid.items();
    let (col, row) = grid.cell_of(from);
    let mut best: Option<(f32, Entity)> = None;
    let mut found_at = None;
    let search = |cells: std::ops::Range<usize>, best: &mut Option<(f32, Entity)>| {
        for item in &items[cells] {
            if item.team == team {
                continue;
            }
            // Nearer first (cheap, and most candidates fail it), then the lookups: the grid is from the last
            // frame, so check the enemy was not despawned since.
            let (d, e) = (item.position.distance_squared(from), item.entity);
            if best.is_none_or(|(bd, be)| (d, e) < (bd, be)) && broadphase.fighter(e).is_some() && world.is_alive(e) {
                *best = Some((d, e));
            }
        }
    };
    for ring in 0..=search_cells {
        let (top, bottom) = (row - ring, row + ring);
        search(grid.row_range(top, col - ring, col + ring), &mut best);
        if ring > 0 {
            search(grid.row_range(bottom, col - ring, col + ring), &mut best);
            for r in top + 1..bottom {
                search(grid.row_range(r, col - ring, col - ring), &mut best);
                search(grid.row_range(r, col + ring, col + ring), &mut best);
            }
        }
        // A point in the next ring can still be nearer than one found in a ring's corner, so search one more
        // ring after the first find, then stop (nearest up to that geometry; exact enough to chase).
        match found_at {
            None if best.is_some() => found_at = Some(ring),
            Some(first) if ring > first => break,
            _ => {}
        }
    }
    best.map(|(_, e)| e)
}
