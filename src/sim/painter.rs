//! Painter's order: fighters drawn top to bottom, by sorting the position pool by y with one of the three sparse-set sorts
//! and putting the health pool in the same order (`sort_as`). The fighter query is driven by the health pool (the
//! smaller), so it then yields fighters in y order. Sparse-set backend only: other layouts have no order to set.

use super::components::{Health, Position};
use crate::ecs::{Entity, SortMethod, World};

/// How the window orders the sprites before drawing. A y-sort reorders the pools every drawn frame, so it is an
/// input of the run like a backend switch: it changes no value, but it changes what the profile shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DrawOrder {
    /// Whatever order the backend iterates in.
    #[default]
    Storage,
    /// Painter's order by y, by sorting the position pool (sparse-set backend) with this method.
    YSorted(SortMethod),
}

impl DrawOrder {
    /// Every choice, in the panel's cycle.
    pub const ALL: [DrawOrder; 4] = [
        DrawOrder::Storage,
        DrawOrder::YSorted(SortMethod::InPlace),
        DrawOrder::YSorted(SortMethod::Permutation),
        DrawOrder::YSorted(SortMethod::Hybrid),
    ];

    /// The next choice of the panel's toggle.
    pub fn next(self) -> Self {
        let at = Self::ALL.iter().position(|o| *o == self).unwrap_or(0);
        Self::ALL[(at + 1) % Self::ALL.len()]
    }

    /// For the panel.
    pub fn label(self) -> &'static str {
        match self {
            DrawOrder::Storage => "storage order",
            DrawOrder::YSorted(SortMethod::InPlace) => "y-sort: in-place",
            DrawOrder::YSorted(SortMethod::Permutation) => "y-sort: permutation",
            DrawOrder::YSorted(SortMethod::Hybrid) => "y-sort: hybrid",
        }
    }

    /// A short name for files: "storage", "y-sort in-place", "y-sort permutation" or "y-sort hybrid".
    pub fn name(self) -> &'static str {
        match self {
            DrawOrder::Storage => "storage",
            DrawOrder::YSorted(SortMethod::InPlace) => "y-sort in-place",
            DrawOrder::YSorted(SortMethod::Permutation) => "y-sort permutation",
            DrawOrder::YSorted(SortMethod::Hybrid) => "y-sort hybrid",
        }
    }

    /// The order named `name` (see [`DrawOrder::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.name() == name)
    }
}

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

/// Fighters of each team counted on a coarse grid over the arena: what the window paints under the sprites when it
/// is zoomed so far out that a fighter is a pixel or two, so each army reads as a field of its colour and the front
/// as the seam where both counts are high. The buffers keep their capacity: refilling at the same or a smaller
/// grid allocates nothing.
///
/// Each cell reads the fighters of its 3 x 3 neighbourhood ([`TeamField::cells`]): fighters scattered at random
/// leave some single cells empty by chance (at four a cell on average, one in fifty), which, drawn as they are,
/// would show as dark round holes in an army; a neighbourhood is empty only where the ground really is.
#[derive(Clone, Debug, Default)]
pub struct TeamField {
    cols: usize,
    rows: usize,
    red: Vec<u16>,
    blue: Vec<u16>,
    /// A row's sums of three columns, reused.
    across: Vec<(u16, u16)>,
}

impl TeamField {
    /// Counts the fighters of `world` (arena `arena`) in square cells `cell` units wide (at least 1). Counts
    /// saturate at `u16::MAX`.
    pub fn fill(&mut self, world: &World, arena: glam::Vec2, cell: f32) {
        use super::components::{Blue, Red};
        let cell = cell.max(1.0);
        self.cols = ((arena.x / cell).ceil() as usize).max(1);
        self.rows = ((arena.y / cell).ceil() as usize).max(1);
        let n = self.cols * self.rows;
        for counts in [&mut self.red, &mut self.blue] {
            counts.clear();
            counts.resize(n, 0);
        }
        let (cols, rows) = (self.cols, self.rows);
        let at = move |p: &Position| {
            let x = ((p.0.x / cell).max(0.0) as usize).min(cols - 1);
            let y = ((p.0.y / cell).max(0.0) as usize).min(rows - 1);
            y * cols + x
        };
        let red = &mut self.red;
        world.query_ref::<(&Position, &Red)>().for_each(|_, (p, _)| {
            let c = &mut red[at(p)];
            *c = c.saturating_add(1);
        });
        let blue = &mut self.blue;
        world.query_ref::<(&Position, &Blue)>().for_each(|_, (p, _)| {
            let c = &mut blue[at(p)];
            *c = c.saturating_add(1);
        });
    }

    /// Columns and rows of the grid.
    pub fn size(&self) -> (usize, usize) {
        (self.cols, self.rows)
    }

    /// Red and blue fighters in each cell and its eight neighbours (fewer at the edges), row by row from the top
    /// left, saturating at `u16::MAX`; `each` is called once per cell.
    pub fn neighbourhoods(&mut self, mut each: impl FnMut((u16, u16))) {
        let (cols, rows) = (self.cols, self.rows);
        // Three columns summed per row first, then three rows of those: 6 additions a cell instead of 9.
        self.across.clear();
        self.across.resize(cols * rows, (0, 0));
        for y in 0..rows {
            let row = y * cols;
            for x in 0..cols {
                let (from, to) = (x.saturating_sub(1), (x + 1).min(cols - 1));
                let mut sum = (0u16, 0u16);
                for i in row + from..=row + to {
                    sum = (sum.0.saturating_add(self.red[i]), sum.1.saturating_add(self.blue[i]));
                }
                self.across[row + x] = sum;
            }
        }
        for y in 0..rows {
            let (from, to) = (y.saturating_sub(1), (y + 1).min(rows - 1));
            for x in 0..cols {
                let mut sum = (0u16, 0u16);
                for r in from..=to {
                    let (red, blue) = self.across[r * cols + x];
                    sum = (sum.0.saturating_add(red), sum.1.saturating_add(blue));
                }
                each(sum);
            }
        }
    }

    /// Red and blue fighters in each cell alone, row by row from the top left.
    pub fn cells(&self) -> impl Iterator<Item = (u16, u16)> + '_ {
        self.red.iter().copied().zip(self.blue.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecs::Backend;
    use crate::sim::components::{Position, Velocity};
    use crate::sim::{build_app, SimConfig};

    #[test]
    fn a_neighbourhood_sums_the_cell_and_its_neighbours_and_is_empty_only_in_a_real_gap() {
        let mut world = crate::ecs::World::new();
        let arena = glam::Vec2::new(100.0, 50.0);
        // Cells 10 units: 10 x 5. Red at (0,0) twice and (4,2); blue at (5,2); nobody in columns 7 to 9.
        for (x, y, red) in [(5.0, 5.0, true), (6.0, 4.0, true), (45.0, 25.0, true), (55.0, 25.0, false)] {
            let e = world.spawn((Position(glam::Vec2::new(x, y)),)).unwrap();
            match red {
                true => world.insert(e, crate::sim::components::Red).map(drop).unwrap(),
                false => world.insert(e, crate::sim::components::Blue).map(drop).unwrap(),
            };
        }
        let mut field = TeamField::default();
        field.fill(&world, arena, 10.0);
        assert_eq!(field.size(), (10, 5));
        let mut sums = Vec::new();
        field.neighbourhoods(|s| sums.push(s));
        assert_eq!(sums.len(), 50);
        let at = |x: usize, y: usize| sums[y * 10 + x];
        assert_eq!(at(0, 0), (2, 0), "a corner: itself and three neighbours");
        assert_eq!(at(1, 1), (2, 0));
        assert_eq!(at(2, 2), (0, 0));
        assert_eq!(at(4, 2), (1, 1), "its own red and the blue next door");
        assert_eq!(at(3, 3), (1, 0));
        assert_eq!(at(5, 1), (1, 1));
        assert_eq!(at(6, 2), (0, 1));
        assert!((7..10).all(|x| (0..5).all(|y| at(x, y) == (0, 0))), "the empty columns stay empty");
        // The cells alone are untouched.
        assert_eq!(field.cells().filter(|&(r, b)| r + b > 0).count(), 3);
    }

    #[test]
    fn draw_orders_cycle_and_round_trip_their_names() {
        let mut order = DrawOrder::default();
        for expected in DrawOrder::ALL.into_iter().skip(1).chain([DrawOrder::Storage]) {
            order = order.next();
            assert_eq!(order, expected);
            assert_eq!(DrawOrder::from_name(order.name()), Some(order));
        }
        assert_eq!(DrawOrder::from_name("y-sort"), None);
    }

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
