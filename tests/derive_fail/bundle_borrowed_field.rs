use swarm::ecs::Bundle;

struct Pos(f32);

#[derive(Bundle)]
struct Borrowed<'a> {
    pos: &'a Pos,
}

fn main() {}
