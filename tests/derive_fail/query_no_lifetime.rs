use swarm::ecs::QueryData;

struct Pos(f32);

#[derive(QueryData)]
struct Owned {
    pos: Pos,
}

fn main() {}
