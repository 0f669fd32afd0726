//! Saving and loading the simulation: the schema of its components and resources, and whole files.
//!
//! A snapshot holds everything a run depends on, so a loaded world continues bit for bit on any backend: every
//! entity with its handle and the allocator's state, every component, and the resources (settings, the random
//! seed, statistics, pending spawn requests and waves, and which fighters the hunters' broadphase vouches for). What is
//! rebuilt each frame (scratch buffers, this frame's contacts) is not saved.

use super::collision::Broadphase;
use super::components::TABLE;
use super::config::{SimConfig, SimRng, SimStats, SpawnRequests, TeamBursts};
use super::limits;
use super::rounds::{Phase, Round};
use super::spawn::OpenSquads;
use crate::app::profile::Profiler;
use crate::app::{App, NextState, State};
use crate::ecs::{Backend, Format, LoadInfo, SnapshotError, SnapshotSchema, World};
use std::path::Path;

/// The simulation's snapshot schema: the components of [`TABLE`] under their names (the file format: renaming
/// one breaks old files), then the resources.
pub fn schema() -> SnapshotSchema {
    // The components, from the table (the hierarchy is in every snapshot without being named).
    let columns = TABLE.iter().filter_map(|kept| Some((kept.schema, kept.snapshot?)));
    columns
        .fold(SnapshotSchema::new(), |schema, (add, name)| add(schema, name))
        // The settings and the frame counter come from outside like flags do, so they meet the flags' limits; the
        // settings are checked as soon as they decode, before the broadphase is rebuilt from them.
        .resource_checked::<SimConfig>("settings", |config| config.check().map_err(|e| e.to_string()))
        .resource::<SimRng>("random")
        .resource_checked::<SimStats>("statistics", |stats| {
            let last = *limits::FRAMES.end() as u64;
            if stats.frames > last {
                return Err(format!("frames is {}, past the limit of {last}", stats.frames));
            }
            Ok(())
        })
        .resource::<SpawnRequests>("spawn requests")
        .resource_or::<TeamBursts>("team bursts", TeamBursts::default)
        // A captain's handle is checked when the squad is used (a stale one closes it); a deferred one names a
        // spawn of no buffer of this world, and is refused.
        .resource_checked::<OpenSquads>("open squads", |open| {
            match open.0.iter().flatten().find(|s| s.captain.is_deferred()) {
                Some(squad) => Err(format!("captain {:?} is a deferred handle", squad.captain)),
                None => Ok(()),
            }
        })
        .resource_with::<Broadphase, _>("broadphase", |b, _| b.vouched(), Broadphase::rebuild)
        // The rounds (files written before them were mid-fight, the first round's state never entered anew).
        .resource_or::<State<Phase>>("phase", || State::new(Phase::Fighting, true))
        .resource_or::<NextState<Phase>>("next phase", NextState::default)
        .resource_or::<Round>("round", Round::default)
        // The waves (files written before them had none).
        .resource_or::<super::stress::Waves>("waves", super::stress::Waves::default)
        .check("world", |world| {
            limits::check("capacity", world.capacity(), &limits::CAPACITY).map_err(|e| e.to_string())
        })
}

/// Writes the simulation's world as a snapshot.
pub fn save(world: &World, format: Format) -> Result<Vec<u8>, SnapshotError> {
    schema().save(world, format)
}

/// A new app running the simulation from a snapshot, on `backend` (default: the one it was saved on), recording
/// spans into `profiler`. Its frame counter starts at 0; the simulation's own (`SimStats::frames`) goes on.
pub fn load_app(bytes: &[u8], backend: Option<Backend>, profiler: Profiler) -> Result<(App, LoadInfo), SnapshotError> {
    // Built empty (its world is replaced whole): the loaded settings, seed and capacity take over.
    let mut app = super::build_app_with(SimConfig::with_population(0), 0, Backend::SparseSet, 0, profiler);
    let info = schema().load_into(&mut app.world, bytes, backend)?;
    Ok((app, info))
}

/// Saves the world to `path`, binary unless the name ends in `.json`; the file is written whole (a temporary
/// sibling renamed over it), so a failed save leaves an older file intact.
pub fn save_file(world: &World, path: &Path) -> Result<usize, String> {
    let bytes = save(world, Format::for_path(path)).map_err(|e| e.to_string())?;
    crate::files::write_whole(path, |temp| std::fs::write(temp, &bytes).map_err(|e| e.to_string()))?;
    Ok(bytes.len())
}

/// Reads a snapshot file into a new app (see [`load_app`]). Errors name the file and the problem.
pub fn load_file(path: &Path, backend: Option<Backend>, profiler: Profiler) -> Result<(App, LoadInfo), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    load_app(&bytes, backend, profiler).map_err(|e| format!("{}: {e}", path.display()))
}
