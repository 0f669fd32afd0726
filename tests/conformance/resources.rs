//! Resources: values of one type each, beside the entities.

use crate::{world, Pos};
use swarm::ecs::Backend;

fn resources(backend: Backend) {
    let mut w = world(backend);
    assert_eq!(w.insert_resource(5u32), None);
    *w.resource_mut::<u32>() += 1;
    assert_eq!(*w.resource::<u32>(), 6);
    assert_eq!(w.get_resource::<u64>(), None);
    let doubled = w.resource_scope::<u32, _>(|world, r| {
        world.spawn((Pos(0.0, 0.0),)).unwrap();
        *r * 2
    });
    assert_eq!(doubled, 12);
    assert_eq!(w.remove_resource::<u32>(), Some(6));
}

mod every_backend {
    use crate::backends;

    on_every_backend! {
        resources,
    }
}
