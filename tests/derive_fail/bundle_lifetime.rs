use std::borrow::Cow;
use swarm::ecs::Bundle;

#[derive(Bundle)]
struct Named<'a> {
    name: Cow<'a, str>,
}

fn main() {}
