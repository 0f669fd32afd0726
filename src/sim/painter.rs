//! Painter's order: fighters drawn top to bottom, by sorting the position pool by y with one of the three sparse-set sorts
//! and putting the health pool in the same order (`sort_as`). The fighter query is driven by the health pool (the
//! smaller), so it then yields fighters in y order. Sparse-set backend only: other layouts have no order to set.

use super::components::{Health, Position};
use crate::ecs::{Entity, SortMethod, World};

/// Sorts as described above; `order` and `scratch` are reused buffers. Returns whether it sorted (false on other
/// backends).
pub fn sort_by_y(world: &mut World, method: SortMethod, order: &mut Vec<Entity>, scratch: &mut Vec<u32>) -> bool {
    let Some(positions) = world.sparse_set_mut::<Position>() else { return false };
    positions.sort_by(method, |a, b| a.0.y.total_cmp(&b.0.y));
    order.clear();
    order.extend_from_slice(positions.entities());
    if let Some(health) = world.sparse_set_mut::<Health>() {
        health.sort_as_with(order, scratch);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecs::Backend;
    use crate::sim::components::{Position, Velocity};
    use crate::sim::{build_app, SimConfig};

    #[test]
    fn fighters_come_out_top_to_bottom_with_every_method() {
        let config = SimConfig::with_population(500);
        let mut app = build_app(config.clone(), 4, Backend::SparseSet, config.default_capacity());
        for _ in 0..60 {
            app.update();
        }
        let (mut order, mut scratch) = (Vec::new(), Vec::new());
        for method in SortMethod::ALL {
            let before = crate::sim::digest(&app.world);
            assert!(sort_by_y(&mut app.world, method, &mut order, &mut scratch));
            assert_eq!(crate::sim::digest(&app.world), before, "{method:?}: sorting changed the world");
            let mut ys = Vec::new();
            app.world.query::<(&Position, &Health, &Velocity)>().for_each(|_, (p, _, _)| ys.push(p.0.y));
            assert!(ys.len() > 100);
            assert!(ys.windows(2).all(|w| w[0] <= w[1]), "{method:?}: fighters not in y order");
            app.update(); // positions move; the next method sorts nearly-sorted input
        }
        app.world.set_backend(Backend::Archetype);
        assert!(
            !sort_by_y(&mut app.world, SortMethod::Hybrid, &mut order, &mut scratch),
            "no y-sort outside the sparse set"
        );
    }
}
