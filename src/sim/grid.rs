//! A uniform grid broadphase, rebuilt each frame by counting sort: no allocation once the buffers have grown.
//!
//! Similar to `HashMap<(col, row), Vec<Entity>>`, but flat: `items` sorted by cell and `starts[c]..starts[c + 1]`
//! the range of cell `c`. Cells are `2 * radius` wide, so contacts are found in the 3 x 3 cells around an item.

use crate::ecs::Entity;
use glam::Vec2;

/// One fighter as the grid sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridItem {
    /// Its handle.
    pub entity: Entity,
    /// Its position when the grid was built.
    pub position: Vec2,
    /// 0 red, 1 blue.
    pub team: u8,
}

/// The near pairs of a grid (see [`Grid::near_pairs`]), kept between frames.
#[derive(Clone, Default)]
pub struct NearPairs {
    /// `pairs[..len]` are the pairs; the rest is room, written over by the next listing.
    pairs: Vec<[u32; 2]>,
    len: usize,
}

impl NearPairs {
    /// The pairs, as indices into [`Grid::items`].
    pub fn as_slice(&self) -> &[[u32; 2]] {
        &self.pairs[..self.len]
    }
}

/// The grid. Invariant: `items[starts[c] as usize..starts[c + 1] as usize]` are exactly the items in cell `c`.
#[derive(Default)]
pub struct Grid {
    shape: GridShape,
    starts: Vec<u32>,
    items: Vec<GridItem>,
    /// The cell of each item, in `items` order (so ascending).
    item_keys: Vec<u32>,
    /// The items [`Grid::push`] added since [`Grid::begin`] (a grid of one band), with their cells.
    staged: Vec<Keyed>,
    /// Or the items staged in pieces by a parallel walk ([`Grid::take_pieces`]), each piece's already apart by
    /// band: each band's sort reads its part of every piece, in piece order.
    pieces: Vec<Staged>,
    /// Per band, the order of its counting sort (a grid of one band's).
    band_scratch: Vec<BandScratch>,
    /// Per team, a summed-area table of its items per block of [`BLOCK`] x [`BLOCK`] cells:
    /// `counts[t][r * (block_cols + 1) + c]` is the number of team `t`'s items in block rows `..r` and block
    /// columns `..c`, so the items in any rectangle of blocks are counted with four reads. (Per block rather than
    /// per cell: at 100k fighters the grid has 324k cells, and tables that size cost more to build each frame than
    /// the searches they spare.)
    counts: [Vec<u32>; TEAMS],
    block_cols: usize,
    /// `band_starts[b]..band_starts[b + 1]`: where band `b`'s items are in `items` (see [`Grid::bands`]).
    band_starts: Vec<u32>,
}

/// A copy of the grid as it is read after its build (cells, items, the teams' block counts, the bands), as a
/// checkpoint holds it: the build's staging and sort buffers, which every build clears before use, start empty.
impl Clone for Grid {
    fn clone(&self) -> Self {
        Self {
            shape: self.shape,
            starts: self.starts.clone(),
            items: self.items.clone(),
            item_keys: self.item_keys.clone(),
            staged: Vec::new(),
            pieces: Vec::new(),
            band_scratch: Vec::new(),
            counts: self.counts.clone(),
            block_cols: self.block_cols,
            band_starts: self.band_starts.clone(),
        }
    }
}

/// The grid's geometry: what placing an item needs.
#[derive(Clone, Copy, Debug, Default)]
pub struct GridShape {
    cell: f32,
    cols: i32,
    rows: i32,
    /// Rows in each band but the last: a multiple of [`BLOCK`], so a band holds whole blocks too.
    band_rows: i32,
    /// `ceil(2^32 / band_rows)`: a row's band is `row * band_mul >> 32`, a multiplication where a division costs
    /// many times more (exact for every row: see [`GridShape::band_of`]). 0 for a grid of one band.
    band_mul: u64,
}

impl GridShape {
    /// The cell coordinates of a point, clamped to the arena.
    #[inline]
    pub fn cell_of(&self, p: Vec2) -> (i32, i32) {
        (((p.x / self.cell) as i32).clamp(0, self.cols - 1), ((p.y / self.cell) as i32).clamp(0, self.rows - 1))
    }

    /// The band of row `row` (in the grid): `row / band_rows`. With `m = ceil(2^32 / d)` for `d = band_rows`,
    /// `row * m / 2^32` is `row / d` plus less than `row * d / 2^32 / d`, which stays below the next whole number
    /// while `row * d < 2^32`; [`Grid::begin_in_bands`] makes sure `rows * d` is (or makes the grid one band).
    #[inline]
    pub fn band_of(&self, row: i32) -> usize {
        ((row as u64 * self.band_mul) >> 32) as usize
    }
}

/// An item as staged: a [`GridItem`] and its cell, side by side (one stream to write, where an array of items
/// and one of cells are two).
#[derive(Clone, Copy, Debug)]
struct Keyed {
    item: GridItem,
    key: u32,
}

impl Keyed {
    /// `item` with its cell, and the cell's row.
    #[inline]
    fn new(shape: &GridShape, item: GridItem) -> (Self, i32) {
        let (c, r) = shape.cell_of(item.position);
        (Keyed { item, key: (r * shape.cols + c) as u32 }, r)
    }
}

/// Items staged for a grid: one piece of a walk's, apart by band, each band's in the order pushed with their
/// cells. (One stream per band, the cell inside the item: a piece writes sixteen streams at once, and each more
/// stream misses the cache more; a band's sort then reads its items straight from the pieces, with no pass that
/// moves them to their bands first.)
#[derive(Clone, Default)]
pub struct Staged {
    items: [Vec<Keyed>; BANDS],
}

impl Staged {
    /// Whether it holds no item.
    pub fn is_empty(&self) -> bool {
        self.items.iter().all(Vec::is_empty)
    }

    /// Empties it (keeping the memory).
    pub fn clear(&mut self) {
        self.items.iter_mut().for_each(Vec::clear);
    }

    /// Adds an item to its band, noting its cell.
    #[inline]
    pub fn push(&mut self, shape: &GridShape, item: GridItem) {
        let (keyed, row) = Keyed::new(shape, item);
        self.items[shape.band_of(row)].push(keyed);
    }

    /// Items of band `band`.
    fn count(&self, band: usize) -> usize {
        self.items[band].len()
    }

    /// Bytes held.
    fn bytes(&self) -> usize {
        self.items.iter().map(Vec::capacity).sum::<usize>() * std::mem::size_of::<Keyed>()
    }
}

/// One band's counting sort's buffer: the order it found.
#[derive(Clone, Default)]
struct BandScratch {
    order: Vec<u32>,
}

/// The grid is cut into this many bands of whole rows (fewer in a short grid), sorted and searched each on its
/// own: a thread count never moves a band's edge.
pub const BANDS: usize = 16;

/// Teams the grid counts apart (0 red, 1 blue).
pub const TEAMS: usize = 2;
/// The side of the grid's counting blocks, in cells.
pub const BLOCK: i32 = 4;

impl Grid {
    /// Clears the items and sets the geometry, in one band (the grid to build on one thread).
    pub fn begin(&mut self, arena: Vec2, cell: f32) {
        self.begin_in_bands(arena, cell, 1)
    }

    /// Clears the items and sets the geometry, in up to `bands` bands of whole rows (at most [`BANDS`]; the grid
    /// to build and search on several threads). The items come out the same for any number of bands.
    pub fn begin_in_bands(&mut self, arena: Vec2, cell: f32, bands: usize) {
        let cell = cell.max(1.0);
        let cols = ((arena.x / cell).ceil() as i32).max(1);
        let rows = ((arena.y / cell).ceil() as i32).max(1);
        let mut band_rows = (rows as usize).div_ceil(bands.clamp(1, BANDS)).next_multiple_of(BLOCK as usize) as i32;
        if rows as u64 * band_rows as u64 >= 1 << 32 {
            // Past what `band_of` computes exactly (no arena comes near): one band.
            band_rows = (rows as usize).next_multiple_of(BLOCK as usize) as i32;
        }
        let band_mul = if band_rows >= rows { 0 } else { (1u64 << 32).div_ceil(band_rows as u64) };
        self.shape = GridShape { cell, cols, rows, band_rows, band_mul };
        self.staged.clear();
        self.pieces.iter_mut().for_each(Staged::clear);
    }

    /// The geometry, for [`Staged::push`].
    pub fn shape(&self) -> GridShape {
        self.shape
    }

    /// Adds an item (call between [`Grid::begin`] and [`Grid::finish`]).
    #[inline]
    pub fn push(&mut self, item: GridItem) {
        debug_assert!(self.shape.band_rows >= self.shape.rows, "push builds a grid of one band (see begin)");
        self.staged.push(Keyed::new(&self.shape, item).0);
    }

    /// The staged pieces, to fill elsewhere (one per piece of a parallel walk, in piece order: see
    /// [`QueryBorrow::par_fold`](crate::ecs::QueryBorrow::par_fold)); hand them back with [`Grid::put_pieces`] before
    /// [`Grid::finish`]. Items of an earlier piece count as pushed first.
    pub fn take_pieces(&mut self) -> Vec<Staged> {
        std::mem::take(&mut self.pieces)
    }

    /// Gives back the pieces of [`Grid::take_pieces`].
    pub fn put_pieces(&mut self, pieces: Vec<Staged>) {
        self.pieces = pieces;
    }

    /// The cell coordinates of a point, clamped to the arena.
    #[inline]
    pub fn cell_of(&self, p: Vec2) -> (i32, i32) {
        self.shape.cell_of(p)
    }

    /// The bands: each a run of whole rows, `band_rows` high (the last one less). Their cells are consecutive, so
    /// their items are too ([`Grid::band_items`]).
    pub fn bands(&self) -> impl Iterator<Item = std::ops::Range<i32>> + '_ {
        let (rows, high) = (self.shape.rows, self.shape.band_rows);
        (0..rows).step_by(high as usize).map(move |first| first..(first + high).min(rows))
    }

    /// Calls `f` with each band's number and its slot (one per band, in band order), halving the bands and
    /// joining the halves on the thread pool if `parallel`.
    pub fn each_band<S: Send>(&self, slots: &mut [S], parallel: bool, f: &(impl Fn(usize, &mut S) + Sync)) {
        fn split<S: Send>(first: usize, slots: &mut [S], parallel: bool, f: &(impl Fn(usize, &mut S) + Sync)) {
            match slots {
                [] => {}
                [slot] => f(first, slot),
                _ => {
                    let middle = slots.len() / 2;
                    let (front, back) = slots.split_at_mut(middle);
                    if parallel {
                        crate::ecs::join(
                            || split(first, front, parallel, f),
                            || split(first + middle, back, parallel, f),
                        );
                    } else {
                        split(first, front, parallel, f);
                        split(first + middle, back, parallel, f);
                    }
                }
            }
        }
        debug_assert_eq!(slots.len(), self.bands().count());
        split(0, slots, parallel, f)
    }

    /// Where band `b`'s items are in [`Grid::items`].
    pub fn band_items(&self, band: usize) -> std::ops::Range<usize> {
        self.band_starts[band] as usize..self.band_starts[band + 1] as usize
    }

    /// Sorts the staged items into cells, keeping the order they were pushed in (piece by piece) within each
    /// cell. Each band runs a counting sort of its own over its cells (count, running sum, then the items put in
    /// place) and counts its items per team and block into its rows of the team tables, on the thread pool if
    /// `parallel`; the tables' rows are summed at the end. A band reads its items from every piece's part for it,
    /// in piece order. Bands are fixed by the grid's size and each sort is stable, so the result is the one serial
    /// counting sort of every item gives, for any thread count.
    pub fn finish(&mut self, parallel: bool) {
        let cols = self.shape.cols as usize;
        let cells = cols * self.shape.rows as usize;
        let band_cells = self.shape.band_rows as usize * cols;
        let bands = cells.div_ceil(band_cells);
        // Pushed items (one band), or the pieces'.
        let pushed = !self.staged.is_empty() || self.pieces.iter().all(Staged::is_empty);
        debug_assert!(!pushed || bands == 1 || self.staged.is_empty(), "pushed items in a grid of several bands");
        self.band_starts.clear();
        self.band_starts.push(0);
        for b in 0..bands {
            let len = if pushed { self.staged.len() } else { self.pieces.iter().map(|piece| piece.count(b)).sum() };
            let end = self.band_starts[b] + len as u32;
            self.band_starts.push(end);
        }
        let n = self.band_starts[bands] as usize;
        let filler =
            GridItem { entity: Entity::from_bits(1 << 32).expect("generation 1"), position: Vec2::ZERO, team: 0 };
        // Every slot below is written by its band's sort (no clearing needed, only the length).
        self.starts.resize(cells + 1, 0);
        self.starts[cells] = n as u32;
        self.items.resize(n, filler);
        self.item_keys.resize(n, 0);
        self.band_scratch.resize_with(bands, BandScratch::default);
        // The team tables: row 0 is zeros, block row `r` is row `r + 1`; each band fills its own block rows.
        let block_cols = cols.div_ceil(BLOCK as usize);
        let block_rows = (self.shape.rows as usize).div_ceil(BLOCK as usize);
        self.block_cols = block_cols;
        for counts in &mut self.counts {
            counts.clear();
            counts.resize((block_cols + 1) * (block_rows + 1), 0);
        }
        let [red, blue] = &mut self.counts;
        let source = match pushed {
            true => Source::Pushed(&self.staged),
            false => Source::Pieces(&self.pieces),
        };
        let input = BandInput {
            source,
            band_starts: &self.band_starts,
            band_cells,
            cols,
            band_block_rows: self.shape.band_rows as usize / BLOCK as usize,
            width: block_cols + 1,
        };
        let out = BandOutput {
            starts: &mut self.starts[..cells],
            scratch: &mut self.band_scratch,
            items: &mut self.items,
            item_keys: &mut self.item_keys,
            counts: [&mut red[block_cols + 1..], &mut blue[block_cols + 1..]],
        };
        sort_bands(&input, 0..bands, out, parallel);
        self.sum_teams();
    }

    /// Finishes the per-team summed-area tables, whose rows each band made its block rows' running sums of
    /// ([`count_band`]): each row gets the row above's added.
    fn sum_teams(&mut self) {
        let width = self.block_cols + 1;
        for counts in &mut self.counts {
            for row in 2..counts.len() / width {
                let (above, here) = counts[(row - 1) * width..(row + 1) * width].split_at_mut(width);
                for (cell, up) in here.iter_mut().zip(above.iter()) {
                    *cell += up;
                }
            }
        }
    }

    /// How many of team `team`'s items are in the [`BLOCK`] x [`BLOCK`] blocks of cells that cover the cells of
    /// columns `first_col..=last_col` and rows `first_row..=last_row` (clamped to the grid): at least as many as
    /// the rectangle holds, so 0 means it holds none. 0 for a team the grid does not count.
    #[inline]
    pub fn team_count_near(
        &self,
        team: u8,
        (first_col, first_row): (i32, i32),
        (last_col, last_row): (i32, i32),
    ) -> u32 {
        let Some(counts) = self.counts.get(team as usize) else { return 0 };
        let (c0, c1) = (first_col.max(0), last_col.min(self.shape.cols - 1));
        let (r0, r1) = (first_row.max(0), last_row.min(self.shape.rows - 1));
        if c0 > c1 || r0 > r1 || counts.is_empty() {
            return 0;
        }
        let (c0, c1, r0, r1) =
            ((c0 / BLOCK) as usize, (c1 / BLOCK) as usize, (r0 / BLOCK) as usize, (r1 / BLOCK) as usize);
        let width = self.block_cols + 1;
        let at = |r: usize, c: usize| counts[r * width + c];
        at(r1 + 1, c1 + 1) + at(r0, c0) - at(r0, c1 + 1) - at(r1 + 1, c0)
    }

    /// The items, grouped by cell.
    pub fn items(&self) -> &[GridItem] {
        &self.items
    }

    /// The items of cell `(col, row)`; empty outside the grid.
    #[inline]
    pub fn cell_items(&self, col: i32, row: i32) -> &[GridItem] {
        &self.items[self.row_range(row, col, col)]
    }

    /// Where the items of cells `first_col..=last_col` of `row` are in [`Grid::items`] (one range: cells are
    /// sorted row by row); columns outside the grid are left out, and a row outside it is empty.
    #[inline]
    pub fn row_range(&self, row: i32, first_col: i32, last_col: i32) -> std::ops::Range<usize> {
        let (first, last) = (first_col.max(0), last_col.min(self.shape.cols - 1));
        if row < 0 || row >= self.shape.rows || first > last {
            return 0..0;
        }
        let base = (row * self.shape.cols) as usize;
        self.starts[base + first as usize] as usize..self.starts[base + last as usize + 1] as usize
    }

    /// Lists every pair of items in the same or adjacent cells in `out` (indices into [`Grid::items`], each
    /// unordered pair once, the smaller first), replacing what it held; `out` keeps its memory between frames.
    ///
    /// Items are sorted by cell, row by row, so this walks the items rather than the cells: each item is paired
    /// with the items after it up to the end of the east cell (one contiguous range), and with the items of the
    /// cells below-left to below-right (another one), both read off `starts`. Empty cells cost nothing (at 100k
    /// fighters most of the 300k cells are empty).
    ///
    /// An item has few such neighbours (1.3 on average at 100k fighters, a quarter of them none), so a loop over
    /// each item's neighbours would stop after a different count every time: a branch the predictor misses
    /// about once an item. Instead each item writes four candidates whether it has them or not, and the list
    /// moves on by the real count (an item with more than four writes the rest in a loop, rarely); the caller
    /// then tests the pairs in one flat loop.
    pub fn near_pairs(&self, out: &mut NearPairs) {
        self.near_pairs_in(0..self.shape.rows, out)
    }

    /// [`Grid::near_pairs`] of the items in rows `rows` (each with its neighbours, in those rows or the row below).
    pub fn near_pairs_in(&self, rows_of: std::ops::Range<i32>, out: &mut NearPairs) {
        const SLOTS: usize = 4;
        let (cols, rows) = (self.shape.cols as usize, self.shape.rows as usize);
        let (keys, starts) = (&self.item_keys, &self.starts);
        let pairs = &mut out.pairs;
        let mut len = 0;
        for row in rows_of.start.max(0) as usize..(rows_of.end.max(0) as usize).min(rows) {
            let row_start = row * cols;
            let next = starts[row_start + cols] as usize;
            let first = starts[row_start] as usize;
            for (i, &cell) in (first..next).zip(&keys[first..next]) {
                let cell = cell as usize;
                let col = cell - row_start;
                // Same row: the rest of this cell and the east cell, one contiguous range.
                let east_end = if col + 1 < cols { starts[cell + 2] as usize } else { next };
                // Next row: below-left ..= below-right, also one contiguous range.
                let (below, below_end) = if row + 1 < rows {
                    let first = cell + cols - (col > 0) as usize;
                    let last = cell + cols + (col + 1 < cols) as usize;
                    (starts[first] as usize, starts[last + 1] as usize)
                } else {
                    (0, 0)
                };
                let here = east_end - (i + 1);
                let count = here + (below_end - below);
                // The `k`-th neighbour: from the same-row range, then from the next row's.
                let pair = |k: usize| [i as u32, if k < here { i + 1 + k } else { below + (k - here) } as u32];
                if len + count.max(SLOTS) > pairs.len() {
                    // Growing (early frames, or a crowd): taken the same way for long runs.
                    pairs.resize((2 * pairs.len()).max(len + count.max(SLOTS)).max(1024), [0, 0]);
                }
                for (k, slot) in pairs[len..len + SLOTS].iter_mut().enumerate() {
                    *slot = pair(k);
                }
                // The rest, for the rare item with more (an empty range otherwise).
                for k in SLOTS..count {
                    pairs[len + k] = pair(k);
                }
                len += count;
            }
        }
        out.len = len;
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        let item = std::mem::size_of::<GridItem>();
        let counts: usize = self.counts.iter().map(Vec::capacity).sum();
        let pieces: usize = self.pieces.iter().map(Staged::bytes).sum();
        let orders: usize = self.band_scratch.iter().map(|band| band.order.capacity()).sum();
        (self.starts.capacity() + self.item_keys.capacity() + counts + orders) * 4
            + self.items.capacity() * item
            + self.staged.capacity() * std::mem::size_of::<Keyed>()
            + pieces
    }
}

/// Where the bands' sorts find the staged items.
enum Source<'a> {
    /// Every item in one band, in the order pushed, with their cells.
    Pushed(&'a [Keyed]),
    /// The pieces, each apart by band.
    Pieces(&'a [Staged]),
}

/// What every band's sort reads.
struct BandInput<'a> {
    source: Source<'a>,
    /// Where each band's items go in the grid's items, band after band.
    band_starts: &'a [u32],
    band_cells: usize,
    /// The grid's columns, a band's block rows (a band is whole blocks high), and a team table's row width.
    cols: usize,
    band_block_rows: usize,
    width: usize,
}

/// What the bands' sorts write: per band, its cells' `starts`, its scratch, its items' range of the rest, and its
/// block rows of each team's table.
struct BandOutput<'a> {
    starts: &'a mut [u32],
    scratch: &'a mut [BandScratch],
    items: &'a mut [GridItem],
    item_keys: &'a mut [u32],
    counts: [&'a mut [u32]; TEAMS],
}

/// Sorts bands `bands` (their parts of `out` only), halving the range and joining the halves if `parallel`.
fn sort_bands(input: &BandInput<'_>, bands: std::ops::Range<usize>, out: BandOutput<'_>, parallel: bool) {
    if bands.len() == 1 {
        return sort_band(input, bands.start, out);
    }
    let middle = bands.start + bands.len() / 2;
    let cell_cut = ((middle - bands.start) * input.band_cells).min(out.starts.len());
    let item_cut = (input.band_starts[middle] - input.band_starts[bands.start]) as usize;
    let (starts, starts_back) = out.starts.split_at_mut(cell_cut);
    let (scratch, scratch_back) = out.scratch.split_at_mut(middle - bands.start);
    let (items, items_back) = out.items.split_at_mut(item_cut);
    let (item_keys, keys_back) = out.item_keys.split_at_mut(item_cut);
    let [red, blue] = out.counts;
    let count_cut = ((middle - bands.start) * input.band_block_rows * input.width).min(red.len());
    let ((red, red_back), (blue, blue_back)) = (red.split_at_mut(count_cut), blue.split_at_mut(count_cut));
    let front = BandOutput { starts, scratch, items, item_keys, counts: [red, blue] };
    let back = BandOutput {
        starts: starts_back,
        scratch: scratch_back,
        items: items_back,
        item_keys: keys_back,
        counts: [red_back, blue_back],
    };
    if parallel {
        crate::ecs::join(
            || sort_bands(input, bands.start..middle, front, parallel),
            || sort_bands(input, middle..bands.end, back, parallel),
        );
    } else {
        sort_bands(input, bands.start..middle, front, parallel);
        sort_bands(input, middle..bands.end, back, parallel);
    }
}

/// One band's counting sort: its staged items sorted into `out`, whose `starts` are its cells and whose items are
/// its range.
fn sort_band(input: &BandInput<'_>, band: usize, out: BandOutput<'_>) {
    let BandOutput { starts, scratch, items, item_keys, counts } = out;
    let first_cell = (band * input.band_cells) as u32;
    let base = input.band_starts[band];
    // The count, then a running sum, so `starts[c]` is where cell `c` ends; the placing below walks it back to
    // where it starts. Backwards, so each cell keeps the staged order.
    starts.fill(0);
    let count = |starts: &mut [u32], staged: &[Keyed]| {
        for keyed in staged {
            starts[(keyed.key - first_cell) as usize] += 1;
        }
    };
    let sum = |starts: &mut [u32]| {
        let mut end = base;
        for start in starts.iter_mut() {
            end += *start;
            *start = end;
        }
    };
    match input.source {
        Source::Pushed(staged) => {
            let staged = &staged[base as usize..input.band_starts[band + 1] as usize];
            count(starts, staged);
            sum(starts);
            // Scatter 4-byte indices (a small array: the random writes stay in cache even when the band is the
            // whole grid), then gather the items in order (sequential writes; the random reads overlap).
            let BandScratch { order } = &mut scratch[0];
            order.resize(staged.len(), 0);
            for (at, keyed) in staged.iter().enumerate().rev() {
                let slot = &mut starts[(keyed.key - first_cell) as usize];
                *slot -= 1;
                order[(*slot - base) as usize] = at as u32;
            }
            for ((item, key), &at) in items.iter_mut().zip(item_keys.iter_mut()).zip(order.iter()) {
                let keyed = &staged[at as usize];
                (*item, *key) = (keyed.item, keyed.key);
            }
        }
        Source::Pieces(pieces) => {
            pieces.iter().for_each(|piece| count(starts, &piece.items[band]));
            sum(starts);
            // Each item straight to its place: one band's items are a small part of the grid (a sixteenth), so
            // the random writes stay in cache.
            for piece in pieces.iter().rev() {
                for keyed in piece.items[band].iter().rev() {
                    let slot = &mut starts[(keyed.key - first_cell) as usize];
                    *slot -= 1;
                    let at = (*slot - base) as usize;
                    items[at] = keyed.item;
                    item_keys[at] = keyed.key;
                }
            }
        }
    }
    count_band(input, first_cell as usize, starts, items, item_keys, counts);
}

/// One band's rows of the team tables, from its sorted items (`starts` where each of its cells begins): each
/// item counted in its block, then running sums along each block row. [`Grid::finish`] adds the rows up.
fn count_band(
    input: &BandInput<'_>,
    first_cell: usize,
    starts: &[u32],
    items: &[GridItem],
    item_keys: &[u32],
    mut counts: [&mut [u32]; TEAMS],
) {
    let (cols, block, width) = (input.cols, BLOCK as usize, input.width);
    let base = starts.first().map_or(0, |&at| at as usize);
    // Row by row through `starts`, so a cell's column is its key less the row's first: no division per item.
    for (row, cells) in starts.chunks(cols).enumerate() {
        let first = cells[0] as usize - base;
        let end = starts.get((row + 1) * cols).map_or(items.len(), |&at| at as usize - base);
        let (row_key, at) = (first_cell + row * cols, (row / block) * width + 1);
        for (item, &key) in items[first..end].iter().zip(&item_keys[first..end]) {
            if let Some(counts) = counts.get_mut(item.team as usize) {
                counts[at + (key as usize - row_key) / block] += 1;
            }
        }
    }
    for counts in counts {
        for row in counts.chunks_mut(width) {
            let mut run = 0;
            for cell in row {
                run += *cell;
                *cell = run;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU32;

    #[test]
    fn items_land_in_their_cells() {
        let mut grid = Grid::default();
        grid.begin(Vec2::new(100.0, 50.0), 10.0);
        let points = [(5.0, 5.0), (95.0, 45.0), (15.0, 5.0), (6.0, 6.0), (-3.0, 200.0)];
        for (i, (x, y)) in points.into_iter().enumerate() {
            grid.push(GridItem {
                entity: Entity::from_parts(i as u32, NonZeroU32::MIN),
                position: Vec2::new(x, y),
                team: 0,
            });
        }
        grid.finish(false);
        assert_eq!(grid.items().len(), 5);
        let first: Vec<u32> = grid.cell_items(0, 0).iter().map(|i| i.entity.index()).collect();
        assert_eq!(first, vec![0, 3]);
        assert_eq!(grid.cell_items(1, 0).len(), 1);
        assert_eq!(grid.cell_items(9, 4).len(), 1);
        assert_eq!(grid.cell_items(0, 4).len(), 1, "out-of-arena points clamp to the edge");
        assert!(grid.cell_items(-1, 0).is_empty());
        // A row's run of cells is one range, clamped to the grid.
        assert_eq!(grid.row_range(0, -3, 1), 0..3, "cells (0, 0) and (1, 0) hold three items");
        assert_eq!(grid.row_range(0, 1, 1).len(), grid.cell_items(1, 0).len());
        assert_eq!(grid.row_range(4, 0, 99).len(), 2);
        assert!(grid.row_range(5, 0, 9).is_empty() && grid.row_range(0, 5, 4).is_empty());
    }

    #[test]
    fn bands_sort_like_one_stable_counting_sort() {
        for (arena, cell, n) in [
            (Vec2::new(300.0, 900.0), 3.0, 5000u32),
            (Vec2::new(40.0, 10.0), 8.0, 50),
            (Vec2::new(10.0, 10.0), 20.0, 3),
        ] {
            let mut x = 7u32 + n;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x
            };
            let staged: Vec<GridItem> = (0..n)
                .map(|i| {
                    let p =
                        Vec2::new((next() % 1000) as f32 / 1000.0 * arena.x, (next() % 1000) as f32 / 1000.0 * arena.y);
                    GridItem { entity: Entity::from_parts(i, NonZeroU32::MIN), position: p, team: (i % 2) as u8 }
                })
                .collect();
            for (bands, parallel, pieces) in
                [(1, false, 0), (1, false, 3), (BANDS, false, 1), (BANDS, true, 4), (5, true, 7)]
            {
                let mut grid = Grid::default();
                grid.begin_in_bands(arena, cell, bands);
                if pieces == 0 {
                    staged.iter().for_each(|&item| grid.push(item));
                } else {
                    // As a parallel walk stages them: consecutive runs, one piece each, in order.
                    let shape = grid.shape();
                    let mut staging = grid.take_pieces();
                    staging.resize_with(pieces, Staged::default);
                    let per = staged.len().div_ceil(pieces).max(1);
                    for (piece, items) in staging.iter_mut().zip(staged.chunks(per)) {
                        piece.clear();
                        items.iter().for_each(|&item| piece.push(&shape, item));
                    }
                    grid.put_pieces(staging);
                }
                grid.finish(parallel);
                // The team tables are the one-band grid's, whatever the bands and threads.
                let mut one = Grid::default();
                one.begin(arena, cell);
                staged.iter().for_each(|&item| one.push(item));
                one.finish(false);
                assert_eq!(grid.counts, one.counts, "{n} items, {bands} bands, {pieces} pieces: team tables");
                // The reference: a stable sort by cell.
                let mut expected = staged.clone();
                expected.sort_by_key(|item| {
                    let (c, r) = grid.cell_of(item.position);
                    r * grid.shape.cols + c
                });
                assert_eq!(
                    grid.items(),
                    &expected[..],
                    "{n} items, {bands} bands, {pieces} pieces, parallel {parallel}"
                );
                for r in 0..grid.shape.rows {
                    for c in 0..grid.shape.cols {
                        assert!(grid.cell_items(c, r).iter().all(|item| grid.cell_of(item.position) == (c, r)));
                    }
                }
                let banded: usize = (0..grid.bands().count()).map(|b| grid.band_items(b).len()).sum();
                assert_eq!(banded, n as usize);
            }
        }
    }

    #[test]
    fn a_rows_band_is_its_division_by_the_band_height() {
        // Grids of every height from 1 row to past the tallest `band_of` takes (rows x band rows < 2^32), in up to
        // 16 bands: the multiplication agrees with the division at and around every band edge.
        let mut grid = Grid::default();
        let (mut rows, mut checked, mut one_band) = (1u32, 0, 0);
        while rows < 400_000 {
            for bands in [2, 5, BANDS] {
                grid.begin_in_bands(Vec2::new(1.0, rows as f32), 1.0, bands);
                let GridShape { rows, band_rows, band_mul, .. } = grid.shape;
                if band_mul == 0 {
                    assert_eq!(grid.bands().count(), 1, "{rows} rows");
                    assert!(band_rows >= rows);
                    one_band += 1;
                }
                for edge in (0..rows).step_by(band_rows as usize) {
                    for row in
                        [edge - 1, edge, edge + 1, edge + band_rows - 1].into_iter().filter(|r| (0..rows).contains(r))
                    {
                        assert_eq!(
                            grid.shape.band_of(row),
                            (row / band_rows) as usize,
                            "row {row} of {rows}, {band_rows} a band"
                        );
                        checked += 1;
                    }
                }
            }
            rows += 1 + rows / 64;
        }
        assert!(checked > 10_000, "{checked} rows checked");
        // Short grids are one band, and so are those too tall for the multiplication (262,144 rows and more).
        assert!(one_band > 3, "{one_band} grids of one band");
        grid.begin_in_bands(Vec2::new(1.0, 300_000.0), 1.0, BANDS);
        assert_eq!(grid.bands().count(), 1);
        grid.begin_in_bands(Vec2::new(1.0, 200_000.0), 1.0, BANDS);
        assert_eq!(grid.bands().count(), BANDS);
    }

    #[test]
    fn a_grid_reused_frame_after_frame_sorts_only_that_frames_items() {
        // One grid kept between frames, as the game keeps it: the populations grow and shrink, and builds in pieces
        // alternate with one-band builds. Each frame's items are exactly that frame's, sorted; nothing of an earlier,
        // larger frame is left in the buffers the pieces move through.
        let (arena, cell) = (Vec2::new(200.0, 600.0), 4.0);
        let mut grid = Grid::default();
        let mut x = 11u32;
        for (frame, (n, pieces)) in
            [(3000u32, 4), (5000, 4), (1200, 3), (1200, 0), (4000, 5), (10, 2), (0, 2)].into_iter().enumerate()
        {
            let staged: Vec<GridItem> = (0..n)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    let p = Vec2::new((x % 997) as f32 / 997.0 * arena.x, (x % 991) as f32 / 991.0 * arena.y);
                    GridItem { entity: Entity::from_parts(i, NonZeroU32::MIN), position: p, team: (i % 2) as u8 }
                })
                .collect();
            if pieces == 0 {
                grid.begin(arena, cell);
                staged.iter().for_each(|&item| grid.push(item));
            } else {
                grid.begin_in_bands(arena, cell, BANDS);
                let shape = grid.shape();
                let mut staging = grid.take_pieces();
                staging.resize_with(pieces, Staged::default);
                for (piece, items) in staging.iter_mut().zip(staged.chunks(staged.len().div_ceil(pieces).max(1))) {
                    piece.clear();
                    items.iter().for_each(|&item| piece.push(&shape, item));
                }
                grid.put_pieces(staging);
            }
            grid.finish(pieces > 0);
            let mut expected = staged.clone();
            expected.sort_by_key(|item| {
                let (c, r) = grid.cell_of(item.position);
                r * grid.shape.cols + c
            });
            assert_eq!(grid.items(), &expected[..], "frame {frame}: {n} items in {pieces} pieces");
        }
    }

    #[test]
    fn a_crowd_in_one_cell_lists_every_pair_once() {
        let mut grid = Grid::default();
        grid.begin(Vec2::new(64.0, 64.0), 8.0);
        let n = 300u32;
        for i in 0..n {
            let p = Vec2::new(20.0 + (i % 7) as f32 * 0.1, 20.0 + (i % 11) as f32 * 0.1);
            grid.push(GridItem { entity: Entity::from_parts(i, NonZeroU32::MIN), position: p, team: 0 });
        }
        grid.finish(false);
        let mut pairs = NearPairs::default();
        // Twice: the second listing reuses the room of the first and must not keep anything of it.
        for _ in 0..2 {
            grid.near_pairs(&mut pairs);
            let mut listed: Vec<[u32; 2]> = pairs.as_slice().to_vec();
            listed.sort_unstable();
            listed.dedup();
            assert_eq!(listed.len(), pairs.as_slice().len(), "a pair listed twice");
            assert_eq!(listed.len() as u32, n * (n - 1) / 2);
        }
        // Fewer items next: the list shrinks to their pairs.
        grid.begin(Vec2::new(64.0, 64.0), 8.0);
        grid.push(GridItem { entity: Entity::from_parts(0, NonZeroU32::MIN), position: Vec2::splat(1.0), team: 0 });
        grid.push(GridItem { entity: Entity::from_parts(1, NonZeroU32::MIN), position: Vec2::splat(2.0), team: 1 });
        grid.finish(false);
        grid.near_pairs(&mut pairs);
        assert_eq!(pairs.as_slice(), &[[0, 1]]);
    }

    #[test]
    fn team_counts_cover_their_rectangles() {
        let mut grid = Grid::default();
        grid.begin(Vec2::new(110.0, 70.0), 10.0); // 11 x 7 cells: blocks of 4 x 4 cells, the last ones cut short
        let mut x = 99u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for i in 0..300 {
            // Clustered in the left part, so some blocks are empty; a few outside, clamped to the edge.
            let p = Vec2::new((next() % 6000) as f32 / 100.0 - 5.0, (next() % 8000) as f32 / 100.0 - 5.0);
            grid.push(GridItem {
                entity: Entity::from_parts(i, NonZeroU32::MIN),
                position: p,
                team: (next() % 2) as u8,
            });
        }
        grid.finish(false);
        // Exactly the items of the covering blocks' cells, for every rectangle of the grid and around it.
        let in_cells = |team: u8, (c0, r0): (i32, i32), (c1, r1): (i32, i32)| -> u32 {
            (r0.max(0)..=r1.min(6))
                .flat_map(|r| (c0.max(0)..=c1.min(10)).map(move |c| (c, r)))
                .map(|(c, r)| grid.cell_items(c, r).iter().filter(|i| i.team == team).count() as u32)
                .sum()
        };
        let mut empty = 0;
        for (c0, r0) in (-2..12).flat_map(|c| (-2..8).map(move |r| (c, r))) {
            for (c1, r1) in [(c0, r0), (c0 + 1, r0), (c0, r0 + 2), (c0 + 5, r0 + 3), (20, 20)] {
                for team in 0..2u8 {
                    let near = grid.team_count_near(team, (c0, r0), (c1, r1));
                    let (b0, b1) = (
                        (c0.max(0) / BLOCK * BLOCK, r0.max(0) / BLOCK * BLOCK),
                        ((c1.min(10) / BLOCK + 1) * BLOCK - 1, (r1.min(6) / BLOCK + 1) * BLOCK - 1),
                    );
                    let expected =
                        if c0 > c1.min(10) || r0 > r1.min(6) || c1 < 0 || r1 < 0 { 0 } else { in_cells(team, b0, b1) };
                    assert_eq!(near, expected, "team {team} near ({c0}, {r0})..=({c1}, {r1})");
                    assert!(near >= in_cells(team, (c0, r0), (c1, r1)));
                    empty += (near == 0) as u32;
                }
            }
        }
        assert!(empty > 0, "some rectangles are near no item of a team");
        assert_eq!(grid.team_count_near(0, (0, 0), (10, 6)) + grid.team_count_near(1, (0, 0), (10, 6)), 300);
        assert_eq!(grid.team_count_near(2, (0, 0), (10, 6)), 0, "an uncounted team");
    }

    #[test]
    fn near_pairs_match_brute_force() {
        let mut grid = Grid::default();
        grid.begin(Vec2::new(64.0, 64.0), 8.0);
        let mut x = 12345u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x % 6400) as f32 / 100.0
        };
        for i in 0..300 {
            let p = Vec2::new(next(), next());
            grid.push(GridItem { entity: Entity::from_parts(i, NonZeroU32::MIN), position: p, team: (i % 2) as u8 });
        }
        grid.finish(false);
        let items = grid.items();
        let mut found = std::collections::BTreeSet::new();
        let mut pairs = NearPairs::default();
        grid.near_pairs(&mut pairs);
        for &[i, j] in pairs.as_slice() {
            assert!(i < j, "pair ({i}, {j}) not smaller first");
            let (a, b) = (items[i as usize].entity.index(), items[j as usize].entity.index());
            assert!(found.insert((a.min(b), a.max(b))), "pair ({a}, {b}) visited twice");
        }
        // Every pair closer than one cell must be among the near pairs.
        for a in items {
            for b in items {
                if a.entity < b.entity && a.position.distance(b.position) < 8.0 {
                    assert!(found.contains(&(a.entity.index(), b.entity.index())), "close pair missed");
                }
            }
        }
    }
}
