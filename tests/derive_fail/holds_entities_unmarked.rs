use swarm::ecs::{Entity, HoldsEntities};

// No field is marked `#[entities]`: the derive would map nothing.
#[derive(HoldsEntities)]
struct Leader(Entity);

fn main() {}
