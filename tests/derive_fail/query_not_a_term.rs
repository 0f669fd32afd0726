use swarm::ecs::Query;

struct Pos(f32);

#[derive(Query)]
struct Counted<'a> {
    pos: &'a Pos,
    count: u32,
}

fn main() {}
