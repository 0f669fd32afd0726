use swarm::ecs::{QueryData, World};

struct Pos(f32);

#[derive(QueryData)]
struct Mover<'a> {
    pos: &'a mut Pos,
}

fn main() {
    let world = World::new();
    // A shared world runs only queries whose every field reads.
    world.query_ref::<Mover>().for_each(|_, m| m.pos.0 += 1.0);
}
