//! Swarm: a small sparse-set ECS written from scratch, and the 2D swarm simulation that shows it off.
//!
//! - [`ecs`]: entities, the five storage backends, the world, queries, the command buffer, sorting and snapshots;
//! - [`app`]: the app with its stages, groups of systems and plugins, and the profiler;
//! - [`sim`]: the simulation (ECS and glam only, no window), its digest, the headless report, snapshots, and the
//!   recording and replay of a run's inputs;
#![cfg_attr(feature = "window", doc = "- [`cli`]: the command line shared by the window and the headless runs;")]
//! - [`files`]: output files, checked before a run and written whole;
//! - [`art`]: the sprites' pixels, shared by the window and the program that writes `assets/`.
//!
//! The window lives in the binary (`src/main.rs`, `src/render/`), the only code that calls macroquad.
//!
//! # Features
//!
//! - `window` (default): the `swarm` and `make_assets` binaries and the `cli` module, with macroquad, clap, image
//!   and indicatif. Without it (`default-features = false`) the library is the ECS, the app and the simulation
//!   with its headless report (its crates: docs/ARCHITECTURE.md, section 1).
//!
//! # Quick start
//!
//! Spawn entities with a tuple of components, query them, and record structural changes in the command buffer,
//! which applies them all at once:
//!
//! ```
//! use swarm::ecs::{Backend, World};
//!
//! #[derive(Debug, PartialEq)]
//! struct Position(f32);
//! struct Velocity(f32);
//! struct Frozen; // a tag: membership only, no bytes per entity
//!
//! let mut world = World::new();
//! let a = world.spawn((Position(0.0), Velocity(1.0))).unwrap();
//! let b = world.spawn((Position(5.0), Velocity(-1.0), Frozen)).unwrap();
//!
//! // Move everything that is not frozen.
//! world.query::<(&mut Position, &Velocity)>().without::<Frozen>().for_each(|_, (p, v)| p.0 += v.0);
//! assert_eq!(world.get::<Position>(a), Some(&Position(1.0)));
//! assert_eq!(world.get::<Position>(b), Some(&Position(5.0)));
//!
//! // Structural changes go through the command buffer and land when it is applied.
//! let mut commands = world.commands();
//! commands.despawn(b);
//! let c = commands.spawn((Position(9.0),)).unwrap(); // a reserved handle, usable at once
//! commands.insert(c, Frozen);
//! let stats = world.apply_commands();
//! assert_eq!(stats.applied, 3);
//! assert!(!world.is_alive(b) && world.has::<Frozen>(c));
//!
//! // A stale handle never reaches the entity that reuses its index.
//! assert!(world.despawn(b).is_err());
//!
//! // Switch the storage layout of the running world: every handle and value is kept.
//! world.set_backend(Backend::Archetype);
//! assert_eq!(world.get::<Position>(c), Some(&Position(9.0)));
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The derives name the library `::swarm`, which this makes true inside it too.
extern crate self as swarm;

pub mod app;
pub mod art;
#[cfg(feature = "window")]
pub mod cli;
pub mod ecs;
pub mod files;
pub mod sim;
