//! Swarm: a small sparse-set ECS written from scratch, and the 2D swarm simulation that shows it off.
//!
//! - [`ecs`]: entities, pools, the five storage backends, world, queries, command buffer, app and profiler;
//! - [`sim`]: the simulation (ECS and glam only, no window), its digest and the headless report;
//! - [`cli`]: the command line shared by the window and the headless runs.
//!
//! The window lives in the binary (`src/main.rs`, `src/render/`), the only code that calls macroquad.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod art;
pub mod cli;
pub mod ecs;
pub mod sim;
