use swarm::ecs::QueryData;

struct Pos(f32);

#[derive(QueryData)]
struct Counted<'a> {
    pos: &'a Pos,
    count: u32,
}

fn main() {}
