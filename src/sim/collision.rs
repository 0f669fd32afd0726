//! Collision: a uniform-grid broadphase; fighters of opposite teams that overlap each lose health.

use super::components::{Blue, Health, Position, Red};
use super::config::{SimConfig, SimStats};
use super::grid::{Grid, GridItem, NearPairs, Staged, BANDS};
use crate::app::{App, OrderSystems, Stage};
use crate::ecs::{Entity, World};

/// Adds [`build_grid`] then [`resolve_collisions`] to `Update`, in the group "combat", after the group "squads".
pub fn plugin(app: &mut App) {
    let combat = (build_grid, resolve_collisions).chain().after("squads");
    app.insert_resource(Broadphase::default()).add_group(Stage::Update, "combat", combat);
}

/// One band's contacts: its near pairs, the hits of its own items, and hits of items past its end (the next band's
/// first row), added after.
#[derive(Clone, Default)]
struct BandContacts {
    pairs: NearPairs,
    hits: Vec<u32>,
    spill: Vec<(u32, u32)>,
}

/// In `team`: the index is in neither team pool (not a fighter, or a hole).
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
    /// cleared wholesale: [`Broadphase::fighter`] checks the item holds that very handle (generation included),
    /// so a stale entry only misses.
    slot: Vec<u32>,
    /// `team[index]`, rebuilt by every grid build: 0 red, 1 blue or [`NO_TEAM`].
    team: Vec<u8>,
    /// Per band of the grid, its contacts this frame.
    bands: Vec<BandContacts>,
    /// Enemy contacts this frame, by position in `grid.items()`.
    hits: Vec<u32>,
    /// One bit per entity index: set for the fighters with a contact this frame (on several threads, for those in
    /// the first half of the items).
    hit_bits: Vec<u64>,
    /// On several threads, [`Broadphase::hit_bits`] of the second half of the items.
    back_bits: Vec<u64>,
    /// The fighters with a contact this frame and their contacts, in index order.
    hurt: Vec<(Entity, u32)>,
    /// On several threads, the hurt of the second half of the indices, before they join [`Broadphase::hurt`].
    back_hurt: Vec<(Entity, u32)>,
}

/// What the next frame reads (the grid and the slots), as a checkpoint holds it: the frame's own buffers (the team
/// table, which every build rebuilds, and the contacts, hit bits and hurt lists, cleared before use) start empty.
impl Clone for Broadphase {
    fn clone(&self) -> Self {
        Self { grid: self.grid.clone(), slot: self.slot.clone(), ..Self::default() }
    }
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

impl Broadphase {
    /// The fighters this broadphase vouches for (in the last grid and not forgotten since), ascending: what a
    /// snapshot keeps of it. Hunters read the last frame's grid, which is not the world's state: fighters spawned
    /// since are not in it, and the dead are forgotten.
    pub fn vouched(&self) -> Vec<Entity> {
        // By index through `slot` (ascending without a sort); `fighter` checks the item is still that entity's.
        let items = self.grid.items();
        (0..self.slot.len() as u32)
            .filter_map(|index| items.get(self.slot[index as usize] as usize))
            .map(|item| item.entity)
            .filter(|&entity| self.fighter(entity).is_some())
            .collect()
    }

    /// Rebuilds the broadphase of a loaded world from the handles [`Broadphase::vouched`] returned, taking each
    /// fighter's position and team from the world. Sound because nothing moves a fighter between `build_grid` and
    /// the frame's end (collisions change health only), and a snapshot is taken between frames. Refuses a handle
    /// that is not a live fighter with a position.
    pub fn rebuild(vouched: Vec<Entity>, world: &World) -> Result<Broadphase, String> {
        let config = world.get_resource::<SimConfig>().ok_or("it needs the settings, saved before it")?;
        let mut broadphase = Broadphase::default();
        let grid = &mut broadphase.grid;
        grid.begin(config.arena, config.cell_size.max(2.0 * config.radius));
        for entity in vouched {
            let Ok((position, red, blue)) = world.query_one::<(&Position, Option<&Red>, Option<&Blue>)>(entity) else {
                return Err(format!("it names {entity:?}, which is not a live entity with a position"));
            };
            let team = match (red, blue) {
                (Some(_), None) => 0,
                (None, Some(_)) => 1,
                _ => return Err(format!("it names {entity:?}, which is not a live fighter of one team")),
            };
            grid.push(GridItem { entity, position: position.0, team });
        }
        grid.finish(false);
        broadphase.slot.resize(world.entities().index_bound() as usize, NO_SLOT);
        for (at, item) in broadphase.grid.items().iter().enumerate() {
            broadphase.slot[item.entity.index() as usize] = at as u32;
        }
        Ok(broadphase)
    }
}

/// Sorts every fighter into the uniform grid by its position after movement.
///
/// Teams are tags, so they are read with two single-pool walks into a plain array by index; then one walk of the
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

        let parallel = world.parallel();
        let grid = &mut broadphase.grid;
        let cell = config.cell_size.max(2.0 * config.radius);
        if parallel {
            // In bands, and in pieces on the pool: each piece stages its fighters in the position pool's order, by
            // runs (the loop is this closure's own, as below), apart by band; the pieces come back in piece order,
            // so the grid sees them in that order whatever the threads.
            grid.begin_in_bands(config.arena, cell, BANDS);
            let (shape, team) = (grid.shape(), &*team);
            let mut pieces = grid.take_pieces();
            world.query::<(&Position,)>().par_fold_runs(
                &mut pieces,
                Staged::clear,
                |staged, entities, (positions,)| {
                    for (&entity, p) in entities.iter().zip(positions) {
                        let team = team[entity.index() as usize];
                        if team != NO_TEAM {
                            staged.push(&shape, GridItem { entity, position: p.0, team });
                        }
                    }
                },
            );
            grid.put_pieces(pieces);
        } else {
            // One thread: one band, one piece, the same items. By runs: the pushes' loop is this function's own,
            // so it compiles as one piece (per entity, the closure would be a call from the query's loop).
            grid.begin(config.arena, cell);
            world.query::<(&Position,)>().for_each_run(|entities, (positions,)| {
                for (&entity, p) in entities.iter().zip(positions) {
                    let team = team[entity.index() as usize];
                    if team != NO_TEAM {
                        grid.push(GridItem { entity, position: p.0, team });
                    }
                }
            });
        }
        grid.finish(parallel);

        // (On one thread: the writes land at random places, and two threads writing one array's lines in turn are
        // slower than one.)
        let slot = &mut broadphase.slot;
        if slot.len() < bound {
            slot.resize(bound, NO_SLOT);
        }
        for (at, item) in grid.items().iter().enumerate() {
            slot[item.entity.index() as usize] = at as u32;
        }
    });
}

/// Finds enemy contacts (each pair once, from the grid) and subtracts the damage. Contacts are counted per grid
/// item first (the items are walked in order), the hit fighters marked in a bit set by entity index (on several
/// threads, the items' halves into two sets, then each half of the words listed on its own thread, the lists joined
/// in order), and the damage is applied to them
/// only, in handle order, through a list visit of the health pool
/// ([`QueryBorrow::par_for_each_of`](crate::ecs::QueryBorrow::par_for_each_of): on several threads, each writing the
/// hit of its half of the pool): [`Health`] is tracked, and a value handed out as `&mut` counts as changed, so the
/// fighters written are the ones hurt. Integer sums: the result does not depend on the order pairs are visited in.
///
/// Runs right after [`build_grid`] in the same frame: counts are found by entity index, which is only sound while
/// no entity has been despawned or spawned since the grid was built (else a recycled index could take a dead
/// fighter's count). The schedule guarantees it: structural changes wait in the command buffer until the frame's
/// end.
pub fn resolve_collisions(world: &mut World) {
    let config = world.resource::<SimConfig>().clone();
    let reach2 = (2.0 * config.radius) * (2.0 * config.radius);
    world.resource_scope::<Broadphase, _>(|world, broadphase| {
        let parallel = world.parallel();
        let Broadphase { grid, bands, hits, hit_bits, back_bits, hurt, back_hurt, team, slot } = broadphase;
        let items = grid.items();
        // Per band of rows (on the pool if parallel): its near pairs, then each pair tested. A pair's first item
        // is the band's; the second may sit in the next band's first row, and its hit waits in the spill.
        bands.resize_with(grid.bands().count(), BandContacts::default);
        let grid = &*grid;
        grid.each_band(bands, parallel, &|b, band| {
            let rows = grid.bands().nth(b).expect("a band per slot");
            let mine = grid.band_items(b);
            grid.near_pairs_in(rows, &mut band.pairs);
            band.hits.clear();
            band.hits.resize(mine.len(), 0);
            band.spill.clear();
            for &[i, j] in band.pairs.as_slice() {
                let (i, j) = (i as usize, j as usize);
                let (a, b) = (&items[i], &items[j]);
                // Arithmetic, not a branch: whether two neighbours touch is a coin toss the predictor would lose.
                let hit = ((a.team != b.team) & (a.position.distance_squared(b.position) < reach2)) as u32;
                band.hits[i - mine.start] += hit;
                match band.hits.get_mut(j - mine.start) {
                    Some(count) => *count += hit,
                    None if hit > 0 => band.spill.push((j as u32, hit)),
                    None => {}
                }
            }
        });
        // Integer counts: the sums do not depend on which band or thread added them.
        hits.clear();
        for band in bands.iter() {
            hits.extend_from_slice(&band.hits);
        }
        for &(j, hit) in bands.iter().flat_map(|band| &band.spill) {
            hits[j as usize] += hit;
        }
        // Each contact hit two fighters.
        let contacts = hits.iter().sum::<u32>() / 2;
        let damage = config.damage;
        if contacts > 0 && damage != 0 {
            // The hit, listed in index order by a sweep of a bit per index (no sort; the bits of 100,000 indices
            // are 12.5 KiB, which stay in the first-level cache where a count per index would not), each with its
            // contacts: the list visit then reads the allocator, the sparse pages and the change stamps forwards.
            // (No damage, no write: nothing changes.) On several threads the items are marked in two halves, each
            // into bits of its own, and the words swept in two halves, each listing its own indices; the lists
            // join in order.
            debug_assert!(
                items.iter().zip(hits.iter()).all(|(item, &hit)| hit == 0 || world.is_alive(item.entity)),
                "grid changed since built"
            );
            let words = team.len().div_ceil(64); // `team` spans the entity indices of this grid's build
            let (hits, slot) = (&hits[..], &slot[..]);
            if parallel {
                let half = items.len() / 2;
                crate::ecs::join(
                    || mark_hit(&items[..half], &hits[..half], hit_bits, words),
                    || mark_hit(&items[half..], &hits[half..], back_bits, words),
                );
                let middle = words / 2;
                let (front, back) =
                    ((&hit_bits[..middle], &back_bits[..middle]), (&hit_bits[middle..], &back_bits[middle..]));
                crate::ecs::join(
                    || list_hurt(front, 0, slot, items, hits, hurt),
                    || list_hurt(back, middle, slot, items, hits, back_hurt),
                );
                hurt.extend_from_slice(back_hurt);
            } else {
                mark_hit(items, hits, hit_bits, words);
                list_hurt((hit_bits, &[]), 0, slot, items, hits, hurt);
            }
            world.query::<&mut Health>().par_for_each_of(hurt, |&(_, hit), health| health.0 -= damage * hit as i32);
        }
        world.resource_mut::<SimStats>().contacts_frame = contacts;
    });
}

/// Sets the bit of each item of `items` with a hit (`hits` beside it) in `bits`, cleared to `words` words first.
fn mark_hit(items: &[GridItem], hits: &[u32], bits: &mut Vec<u64>, words: usize) {
    bits.clear();
    bits.resize(words, 0);
    for (item, _) in items.iter().zip(hits).filter(|(_, &hit)| hit > 0) {
        let index = item.entity.index() as usize;
        bits[index / 64] |= 1 << (index % 64);
    }
}

/// Lists into `out` (cleared first) the fighter of each index set in either of `bits` (words from `first_word` on,
/// the second slice empty or as long as the first), ascending, each with its contacts.
fn list_hurt(
    bits: (&[u64], &[u64]),
    first_word: usize,
    slot: &[u32],
    items: &[GridItem],
    hits: &[u32],
    out: &mut Vec<(Entity, u32)>,
) {
    out.clear();
    for (k, &word) in bits.0.iter().enumerate() {
        let mut set = word | bits.1.get(k).copied().unwrap_or(0);
        while set != 0 {
            // `slot` maps the index back to its item in this frame's grid (built just before).
            let at = slot[(first_word + k) * 64 + set.trailing_zeros() as usize] as usize;
            set &= set - 1;
            // Every item of this grid is in `slot` (no fighter is forgotten between the build and now).
            debug_assert!(at < items.len(), "a hit fighter's slot was cleared since the grid was built");
            if let (Some(item), Some(&hit)) = (items.get(at), hits.get(at)) {
                out.push((item.entity, hit));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecs::Backend;
    use glam::Vec2;

    /// The hit listed on two threads' halves (items marked in halves, words listed in halves, joined) is the list
    /// one sweep makes: same entries, same order, for item counts that leave a word, or a half of the words, empty.
    #[test]
    fn the_hurt_listed_in_halves_is_the_whole_sweeps() {
        let generation = std::num::NonZeroU32::new(3).unwrap();
        for (n, bound) in [(0usize, 1usize), (1, 5), (7, 64), (63, 64), (100, 130), (1001, 4000), (3000, 3000)] {
            // Items in a scrambled order over the indices below `bound`, about a third of them hit.
            let mut indices: Vec<u32> = (0..bound as u32).collect();
            let mut x = 99u64;
            for k in (1..indices.len()).rev() {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                indices.swap(k, (x >> 33) as usize % (k + 1));
            }
            let item = |index: u32| GridItem {
                entity: Entity::from_parts(index, generation),
                position: glam::Vec2::ZERO,
                team: (index % 2) as u8,
            };
            let items: Vec<GridItem> = indices[..n].iter().map(|&index| item(index)).collect();
            let hits: Vec<u32> = (0..n as u32).map(|k| (k * 7 % 3 == 0) as u32 * (k % 5 + 1)).collect();
            let mut slot = vec![NO_SLOT; bound];
            for (at, item) in items.iter().enumerate() {
                slot[item.entity.index() as usize] = at as u32;
            }
            let words = bound.div_ceil(64);
            let (mut whole, mut bits) = (Vec::new(), Vec::new());
            mark_hit(&items, &hits, &mut bits, words);
            list_hurt((&bits, &[]), 0, &slot, &items, &hits, &mut whole);
            let expected: Vec<(Entity, u32)> = {
                let mut hurt: Vec<_> =
                    items.iter().zip(&hits).filter(|(_, &h)| h > 0).map(|(i, &h)| (i.entity, h)).collect();
                hurt.sort_by_key(|(entity, _)| entity.index());
                hurt
            };
            assert_eq!(whole, expected, "{n} items");
            let (mut front_bits, mut back_bits, mut front, mut back) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            mark_hit(&items[..n / 2], &hits[..n / 2], &mut front_bits, words);
            mark_hit(&items[n / 2..], &hits[n / 2..], &mut back_bits, words);
            let middle = words / 2;
            list_hurt((&front_bits[..middle], &back_bits[..middle]), 0, &slot, &items, &hits, &mut front);
            list_hurt((&front_bits[middle..], &back_bits[middle..]), middle, &slot, &items, &hits, &mut back);
            front.extend_from_slice(&back);
            assert_eq!(front, whole, "{n} items in halves");
        }
    }

    fn health(world: &World, entity: Entity) -> Option<i32> {
        world.get::<Health>(entity).map(|h| h.0)
    }

    /// A checkpoint's copy holds what the next frame reads and none of the frame's buffers: the next frame run on
    /// it gives the world and the grid the original gives.
    #[test]
    fn a_copy_keeps_what_the_next_frame_reads_and_no_scratch() {
        let make = || {
            let mut world = World::new();
            let config = SimConfig { arena: Vec2::new(80.0, 80.0), ..SimConfig::with_population(10) };
            world.insert_resource(config);
            world.insert_resource(SimStats::default());
            world.insert_resource(Broadphase::default());
            for k in 0..400u32 {
                let scatter = |salt: u32| (k.wrapping_mul(2654435761).wrapping_add(salt) >> 16) % 800;
                let at = Position(Vec2::new(scatter(0) as f32 / 10.0, scatter(12345) as f32 / 10.0));
                match k % 2 {
                    0 => world.spawn((at, Health(100), Red)).unwrap(),
                    _ => world.spawn((at, Health(100), Blue)).unwrap(),
                };
            }
            build_grid(&mut world);
            resolve_collisions(&mut world);
            world
        };
        let (mut original, mut copied) = (make(), make());
        let copy = copied.resource::<Broadphase>().clone();
        let kept = original.resource::<Broadphase>();
        assert_eq!(copy.vouched(), kept.vouched());
        assert!(kept.vouched().len() == 400 && kept.grid.items() == copy.grid.items());
        assert!(kept.hurt.len() > 10, "the frame hurt some: {}", kept.hurt.len());
        assert!(copy.team.capacity() + copy.hits.capacity() + copy.hurt.capacity() + copy.hit_bits.capacity() == 0);
        assert!(copy.grid.bytes() < kept.grid.bytes(), "the grid's staging is not copied");
        copied.insert_resource(copy);
        for world in [&mut original, &mut copied] {
            build_grid(world);
            resolve_collisions(world);
        }
        let healths = |world: &World| world.query_ref::<&Health>().iter().map(|(e, h)| (e, h.0)).collect::<Vec<_>>();
        assert_eq!(healths(&original), healths(&copied));
        let (kept, copy) = (original.resource::<Broadphase>(), copied.resource::<Broadphase>());
        assert!(kept.grid.items() == copy.grid.items() && kept.hurt == copy.hurt);
    }

    #[test]
    fn touching_enemies_hurt_each_other_and_a_recycled_index_is_not_hit() {
        for backend in Backend::ALL {
            let mut world = World::new();
            world.set_backend(backend);
            let config = SimConfig { arena: Vec2::new(64.0, 64.0), ..SimConfig::with_population(10) };
            let damage = config.damage;
            world.insert_resource(config);
            world.insert_resource(SimStats::default());
            world.insert_resource(Broadphase::default());
            let frame = |world: &mut World| {
                build_grid(world);
                resolve_collisions(world);
                world.resource::<SimStats>().contacts_frame
            };
            let spawn = |world: &mut World, x: f32, team: u8| {
                let at = Position(Vec2::new(x, 1.0));
                match team {
                    0 => world.spawn((at, Health(100), Red)),
                    _ => world.spawn((at, Health(100), Blue)),
                }
                .unwrap()
            };
            // Reach is two radii (6): `b` touches `a` and `friend`; `a` and `friend` are one team.
            let b = spawn(&mut world, 1.0, 1);
            let a = spawn(&mut world, 3.0, 0);
            let friend = spawn(&mut world, 4.0, 0);
            let far = spawn(&mut world, 40.0, 1);
            // Health is tracked (as the game does): only the values written change.
            world.track::<Health>();
            world.clear_trackers();
            let changed = |world: &World, list: [Entity; 4]| list.map(|e| world.tracker::<Health>().is_changed(e));
            assert_eq!(frame(&mut world), 2, "{backend:?}");
            assert_eq!(changed(&world, [a, b, friend, far]), [true, true, true, false], "{backend:?}");
            assert_eq!(health(&world, b), Some(100 - 2 * damage), "{backend:?}");
            assert_eq!(health(&world, a), Some(100 - damage), "{backend:?}");
            assert_eq!(health(&world, friend), Some(100 - damage), "{backend:?}");
            assert_eq!(health(&world, far), Some(100), "{backend:?}");

            // `b` dies and an entity with health but no team (so not in the grid) takes its index, where the last
            // frame's count (2) and slot (into the first cell) still sit. In the next grid every item of that cell
            // is hit; the newcomer must not be.
            world.despawn(b).unwrap();
            let ghost = world.spawn((Health(100),)).unwrap();
            assert_eq!(ghost.index(), b.index(), "the free list hands the index back");
            let e = spawn(&mut world, 2.0, 1);
            world.clear_trackers();
            assert_eq!(frame(&mut world), 2, "{backend:?}");
            assert_eq!(changed(&world, [e, a, ghost, far]), [true, true, false, false], "{backend:?}");
            assert_eq!(health(&world, ghost), Some(100), "{backend:?}: hit through a stale slot");
            assert_eq!(health(&world, e), Some(100 - 2 * damage), "{backend:?}");
            assert_eq!(health(&world, a), Some(100 - 2 * damage), "{backend:?}");
            assert_eq!(health(&world, friend), Some(100 - 2 * damage), "{backend:?}");
            assert_eq!(health(&world, far), Some(100), "{backend:?}");
        }
    }
}
