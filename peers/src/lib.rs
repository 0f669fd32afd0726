//! Nothing but the benchmark: `benches/peers.rs` runs Swarm's backends beside hecs, shipyard, specs and bevy_ecs.
#![forbid(unsafe_code)]
