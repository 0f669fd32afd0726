//! Swarm: a small sparse-set ECS written from scratch, and the 2D swarm simulation that shows it off.
//!
//! - [`ecs`]: entities, pools, the five storage backends, world, queries, command buffer.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod ecs;
