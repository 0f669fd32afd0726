use swarm::ecs::Bundle;

struct Red;
struct Blue;

#[derive(Bundle)]
enum Team {
    Red(Red),
    Blue(Blue),
}

fn main() {}
