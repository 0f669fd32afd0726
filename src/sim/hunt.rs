//! Hunting: hunters steer toward their target; when the target handle has gone stale (the enemy died, even if
//! its index now belongs to someone else) the lookup fails, the stale handle is counted, and the hunter picks the
//! nearest enemy from the grid.

use super::collision::Broadphase;
use super::components::{Hunter, Target, Velocity};
use super::config::{SimConfig, SimStats, StaleCatches};
use super::grid::TEAMS;
use crate::app::{App, Commands, Local, Query, Res, ResMut, Stage};
use crate::ecs::{Entity, With, Without};
use glam::Vec2;
use std::sync::atomic::{AtomicU64, Ordering};

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
///
/// One walk of the target pool, in pieces on every thread, reads only: each piece lists the hunters whose target
/// is stale, with the nearest enemy found and where they stand, and the new velocity of each hunter whose target
/// is live (a hunter in the snapshot and not already at its target). The lists come back in piece order. The
/// velocities are then written by one visit of that list ([`Query::par_for_each_of`]: the hunters' velocities are
/// looked up, not walked, a lookup and a store per hunter where the walk spends two snapshot lookups; on several
/// threads the list's halves are looked up apart, then each thread writes the hunters of its half of the pool).
/// The catches keep the pieces' order (the target pool's); the retargets are recorded sorted by hunter, as a loop
/// keyed by the hunter records them.
#[allow(clippy::too_many_arguments)] // (one per thing it touches: that is the point of parameters)
pub fn hunt_targets(
    config: Res<SimConfig>,
    broadphase: Res<Broadphase>,
    (mut stats, mut caught): (ResMut<SimStats>, ResMut<StaleCatches>),
    mut targets: Query<&Target>,
    mut velocities: Query<&mut Velocity>,
    mut idle: Query<(), (With<Hunter>, Without<Target>)>,
    mut commands: Commands,
    mut scratch: Local<HuntScratch>,
) {
    let nearest = |hunter: Entity| {
        let me = broadphase.fighter(hunter)?;
        nearest_enemy(&broadphase, me.position, me.team, config.search_cells)
    };
    // Only hunters are ever given a `Target` (below), so the queries need no `With<Hunter>`; and a hunter's own
    // position comes from the snapshot too (a hunter got its target from the grid it was in, and every grid since
    // holds it), so the position pool is not probed either.
    let HuntScratch { pieces, sorted, steer } = &mut *scratch;
    targets.par_fold(pieces, HuntPiece::clear, |piece, hunter, target| {
        let me = broadphase.fighter(hunter);
        match broadphase.fighter(target.0) {
            Some(goal) => {
                let Some(me) = me else { return };
                let to = goal.position - me.position;
                if to.length_squared() > 1e-6 {
                    piece.steer.push((hunter, to.normalize() * config.hunter_speed));
                }
            }
            None => piece.stale.push(Stale { hunter, at: me.map(|me| me.position), enemy: nearest(hunter) }),
        }
    });
    steer.clear();
    steer.extend(pieces.iter().flat_map(|piece| &piece.steer));
    velocities.par_for_each_of(steer, |&(_, velocity), v| v.0 = velocity);
    caught.0.clear();
    caught.0.extend(pieces.iter().flat_map(|piece| &piece.stale).filter_map(|stale| stale.at));
    sorted.clear();
    sorted.extend(pieces.iter().flat_map(|piece| &piece.stale).copied());
    sorted.sort_unstable_by_key(|stale| stale.hunter.index());
    let mut retargets = 0;
    for stale in sorted.iter() {
        match stale.enemy {
            Some(enemy) => {
                commands.insert(stale.hunter, Target(enemy));
                retargets += 1;
            }
            None => commands.remove::<Target>(stale.hunter),
        }
    }
    stats.stale_caught += sorted.len() as u64;
    // Hunters without a target, entities alone: the hunter pool drives, and the target pool is only probed. (A
    // hunter outside the grid, without a position or a team, gets no target.) Only reads, on every backend: the
    // pieces run on every thread, their commands keyed by the hunter; the count is an integer sum.
    let found = AtomicU64::new(0);
    idle.par_for_each_with_commands(&mut commands, |hunter, (), commands| {
        if let Some(enemy) = nearest(hunter) {
            commands.insert(hunter, Target(enemy));
            found.fetch_add(1, Ordering::Relaxed);
        }
    });
    stats.retargets += retargets + found.into_inner();
}

/// A hunter whose target went stale: where it stands (if in the grid) and the enemy it takes instead.
#[derive(Clone, Copy, Debug)]
pub struct Stale {
    hunter: Entity,
    at: Option<Vec2>,
    enemy: Option<Entity>,
}

/// What one piece of [`hunt_targets`]'s walk of the target pool finds: its stale hunters, and the velocity each
/// hunter with a live target steers at (one in the snapshot and not already at its target).
#[derive(Default)]
pub struct HuntPiece {
    stale: Vec<Stale>,
    steer: Vec<(Entity, Vec2)>,
}

impl HuntPiece {
    fn clear(&mut self) {
        self.stale.clear();
        self.steer.clear();
    }
}

/// [`hunt_targets`]'s buffers, kept between frames: each piece's findings, all the stale hunters by hunter, and
/// every piece's steering in piece order.
#[derive(Default)]
pub struct HuntScratch {
    pieces: Vec<HuntPiece>,
    sorted: Vec<Stale>,
    steer: Vec<(Entity, Vec2)>,
}

/// The nearest live enemy within `search_cells` rings of grid cells; ties go to the smaller handle. Live means in
/// the snapshot and not forgotten since: `despawn_dead` forgets every fighter it despawns, and nothing else
/// despawns fighters.
///
/// The grid counts each team per block of cells, so whether a rectangle of cells may hold an enemy takes four
/// reads: a search whose whole square holds none ends at once (every idle hunter until the fronts meet), and a
/// ring's side without enemies nearby is skipped. Of the rest, only the ring's cells are visited: its top and
/// bottom rows are each one contiguous range of the sorted grid items, and each row between contributes its two
/// end cells. Skipping only cells that hold no enemy, it finds what a scan of every cell finds.
fn nearest_enemy(broadphase: &Broadphase, from: Vec2, team: u8, search_cells: i32) -> Option<Entity> {
    let grid = &broadphase.grid;
    let items = grid.items();
    let (col, row) = grid.cell_of(from);
    let enemies_near = |first: (i32, i32), last: (i32, i32)| -> bool {
        (0..TEAMS as u8).any(|t| t != team && grid.team_count_near(t, first, last) > 0)
    };
    let reach = search_cells;
    if !enemies_near((col - reach, row - reach), (col + reach, row + reach)) {
        return None;
    }
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
        let (top, bottom, left, right) = (row - ring, row + ring, col - ring, col + ring);
        if enemies_near((left, top), (right, top)) {
            search(grid.row_range(top, left, right), &mut best);
        }
        if ring > 0 {
            if enemies_near((left, bottom), (right, bottom)) {
                search(grid.row_range(bottom, left, right), &mut best);
            }
            for side in [left, right] {
                if enemies_near((side, top + 1), (side, bottom - 1)) {
                    for r in top + 1..bottom {
                        search(grid.row_range(r, side, side), &mut best);
                    }
                }
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
