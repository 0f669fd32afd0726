//! Hunting: hunters steer toward their target; when the target handle has gone stale (the enemy died, even if
//! its index now belongs to someone else) the lookup fails, the stale handle is counted, and the hunter picks the
//! nearest enemy from the grid.

use super::collision::Broadphase;
use super::components::{Hunter, Target, Velocity};
use super::config::{SimConfig, SimStats, StaleCatches};
use crate::app::{App, Stage};
use crate::ecs::Entity;
use crate::ecs::World;
use glam::Vec2;

/// Adds [`hunt_targets`] to `Update`, in the group "movement", and the [`StaleCatches`] it fills.
pub fn plugin(app: &mut App) {
    app.insert_resource(StaleCatches::default()).add_group(Stage::Update, "movement", hunt_targets);
}

/// Steers hunters toward their targets; retargets those whose target is stale or missing, noting where in
/// [`StaleCatches`] (cleared first: it holds this frame's alone).
///
/// Positions come from the broadphase snapshot built after last frame's movement (nothing has moved since), so
/// no per-entity world lookups are needed: a target is live if the grid item its slot points to holds that very
/// handle (the generation makes a recycled index fail). `despawn_dead` clears the slots of the fighters it
/// despawns, so the snapshot never vouches for the dead. Retargeting only reads the snapshot and records its
/// change keyed by the hunter, so the result does not depend on the order hunters are visited in.
pub fn hunt_targets(world: &mut World) {
    let config = world.resource::<SimConfig>().clone();
    let (mut stale, mut retargets) = (0u64, 0u64);
    // Taken out and put back (a move, not a copy), so the closures below can push while the world is borrowed;
    // the buffer keeps its capacity from frame to frame. A world without it (built by hand) just gets one.
    let mut caught = world.get_resource_mut::<StaleCatches>().map(|c| std::mem::take(&mut c.0)).unwrap_or_default();
    caught.clear();
    world.resource_scope::<Broadphase, _>(|world, broadphase| {
        let nearest = |hunter: Entity| {
            let me = broadphase.fighter(hunter)?;
            nearest_enemy(broadphase, me.position, me.team, config.search_cells)
        };
        // Only hunters are ever given a `Target` (below), so the query needs no `With<Hunter>`; and a hunter's own
        // position comes from the snapshot too (a hunter got its target from the grid it was in, and every grid
        // since holds it), so the position pool is not probed either.
        world.query::<(&Target, &mut Velocity)>().for_each_with_commands(|hunter, (target, v), commands| {
            match broadphase.fighter(target.0) {
                Some(goal) => {
                    let Some(me) = broadphase.fighter(hunter) else { return };
                    let to = goal.position - me.position;
                    if to.length_squared() > 1e-6 {
                        v.0 = to.normalize() * config.hunter_speed;
                    }
                }
                None => {
                    stale += 1;
                    if let Some(me) = broadphase.fighter(hunter) {
                        caught.push(me.position);
                    }
                    match nearest(hunter) {
                        Some(enemy) => {
                            commands.insert(hunter, Target(enemy));
                            retargets += 1;
                        }
                        None => commands.remove::<Target>(hunter),
                    }
                }
            }
        });
        // Hunters without a target, entities alone: the hunter pool drives, and the target pool is only probed.
        // (A hunter outside the grid, without a position or a team, gets no target.)
        world.query::<()>().with::<Hunter>().without::<Target>().for_each_with_commands(|hunter, (), commands| {
            if let Some(enemy) = nearest(hunter) {
                commands.insert(hunter, Target(enemy));
                retargets += 1;
            }
        });
    });
    // Put back in place: inserting would box it anew each frame.
    match world.get_resource_mut::<StaleCatches>() {
        Some(catches) => catches.0 = caught,
        None => {
            world.insert_resource(StaleCatches(caught));
        }
    }
    let stats = world.resource_mut::<SimStats>();
    stats.stale_caught += stale;
    stats.retargets += retargets;
}

/// The nearest live enemy within `search_cells` rings of grid cells; ties go to the smaller handle. Live means in
/// the snapshot and not forgotten since: `despawn_dead` forgets every fighter it despawns, and nothing else
/// despawns fighters.
///
/// Only the cells of each ring are visited: its top and bottom rows are each one contiguous range of the sorted
/// grid items, and each row between contributes its two end cells (at 100k fighters most cells are empty, so the
/// cost is in reaching cells, not in their items).
fn nearest_enemy(broadphase: &Broadphase, from: Vec2, team: u8, search_cells: i32) -> Option<Entity> {
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
            // Nearer first (cheap, and most candidates fail it), then the lookup: the grid is from the last
            // frame, so check the enemy was not despawned since.
            let (d, e) = (item.position.distance_squared(from), item.entity);
            if best.is_none_or(|(bd, be)| (d, e) < (bd, be)) && broadphase.fighter(e).is_some() {
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
