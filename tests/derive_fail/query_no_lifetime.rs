use swarm::ecs::Query;

struct Pos(f32);

#[derive(Query)]
struct Owned {
    pos: Pos,
}

fn main() {}
