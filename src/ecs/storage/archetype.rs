//! The archetype backend (as in Friflo.Engine.ECS, bevy and hecs): one table per set of component types.
//!
//! Similar to `HashMap<ComponentSet, (Vec<Entity>, one Vec per component type)>`: entities with the same
//! components share a table whose columns are structure-of-arrays, so a query walks whole columns in lock-step
//! with no per-entity lookups. The price is paid on insert and remove: the entity's row moves to another table.
//!
//! ```text
//!  records (by entity index)        tables
//!  index 0 -> (table 1, row 0)       table 0  {}                 entities []
//!  index 1 -> (table 2, row 0)       table 1  {Pos, Vel}         entities [0v1, 2v1]   Pos [p0, p2]  Vel [v0, v2]
//!  index 2 -> (table 1, row 1)       table 2  {Pos, Vel, Red}    entities [1v1]        Pos [p1]      Vel [v1]   Red: no bytes
//! ```
//!
//! Invariants: for every table `t` and row `r < t.entities.len()`,
//! `records[t.entities[r].index] == (t, r)`, and every column of `t` has `t.entities.len()` values.
//! Tags (zero-sized types) are part of the table key and their columns hold no bytes.
//! Finding a table never scans: by set through `by_set`, and on insert / remove through the table's edge maps.
//! An edge is made once per (table, component) and keeps where each column of its source goes in its destination,
//! so moving a row is one loop over the source's columns; edges are made in pairs, the add edge `A -(+C)-> B` with
//! the remove edge `B -(-C)-> A`, so a component added and later removed finds both ways cached.

use super::sparse_set::fresh_stamp;
use super::Registry;
use crate::ecs::component::{ComponentId, ComponentSet, MAX_COMPONENTS};
use crate::ecs::entity::Entity;
use rustc_hash::FxHashMap;
use std::any::Any;
use std::mem::size_of;

/// One component type's values in one table: a plain `Vec<T>`, row-aligned with the table's entities.
pub struct Column<T>(pub Vec<T>);

impl<T> Column<T> {
    /// An empty column.
    pub const fn new() -> Self {
        Self(Vec::new())
    }
}

impl<T> Default for Column<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// A column with its type erased.
pub trait ErasedColumn: Any {
    /// Upcast, to downcast to `Column<T>`.
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Upcast, to downcast to `Column<T>`.
    fn as_any(&self) -> &dyn Any;
    /// Drops the value at `row`, moving the last value into its place.
    fn swap_remove_drop(&mut self, row: usize);
    /// Moves the value at `row` to the end of `dst` (a column of the same type), swap-removing it here.
    fn move_row_to(&mut self, row: usize, dst: &mut dyn ErasedColumn);
    /// A new empty column of the same type.
    fn empty_like(&self) -> Box<dyn ErasedColumn>;
    /// Number of values.
    fn len(&self) -> usize;
    /// Whether the column is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes held (capacity).
    fn bytes(&self) -> usize;
    /// Makes room for `additional` values.
    fn reserve(&mut self, additional: usize);
}

impl<T: 'static> ErasedColumn for Column<T> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn swap_remove_drop(&mut self, row: usize) {
        self.0.swap_remove(row);
    }
    fn move_row_to(&mut self, row: usize, dst: &mut dyn ErasedColumn) {
        let dst =
            dst.as_any_mut().downcast_mut::<Column<T>>().expect("moving a row between columns of different types");
        dst.0.push(self.0.swap_remove(row));
    }
    fn empty_like(&self) -> Box<dyn ErasedColumn> {
        Box::new(Column::<T>::new())
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn bytes(&self) -> usize {
        self.0.capacity() * size_of::<T>()
    }
    fn reserve(&mut self, additional: usize) {
        self.0.reserve(additional);
    }
}

const NO_COLUMN: u16 = u16::MAX;

/// The entities that have exactly one set of component types, and their values column by column.
pub struct Table {
    set: ComponentSet,
    entities: Vec<Entity>,
    /// Columns in ascending component id order.
    pub(crate) columns: Vec<Box<dyn ErasedColumn>>,
    /// `column_of[id]` is the column of component `id`, or `NO_COLUMN`.
    column_of: Box<[u16; MAX_COMPONENTS]>,
    /// The edge (an index into `Archetypes::edges`) an entity of this table takes when `id` is added / removed.
    add_edges: FxHashMap<ComponentId, u32>,
    remove_edges: FxHashMap<ComponentId, u32>,
}

impl Table {
    /// The component types of this table.
    pub fn set(&self) -> &ComponentSet {
        &self.set
    }

    /// The entities, row by row.
    pub fn entities(&self) -> &[Entity] {
        &self.entities
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// The column slot of component `id`.
    #[inline]
    pub fn column_slot(&self, id: ComponentId) -> Option<usize> {
        match self.column_of[id as usize] {
            NO_COLUMN => None,
            slot => Some(slot as usize),
        }
    }

    /// The typed values of component `id`, if this table has them.
    pub fn column<T: 'static>(&self, id: ComponentId) -> Option<&[T]> {
        let slot = self.column_slot(id)?;
        Some(&self.columns[slot].as_any().downcast_ref::<Column<T>>().expect("column type mismatch").0)
    }

    /// Entities and columns at once, for queries that borrow several columns.
    pub(crate) fn parts(&self) -> (&[Entity], &[Box<dyn ErasedColumn>]) {
        (&self.entities, &self.columns)
    }

    pub(crate) fn parts_mut(&mut self) -> (&[Entity], &mut [Box<dyn ErasedColumn>]) {
        (&self.entities, &mut self.columns)
    }

    fn column_mut<T: 'static>(&mut self, id: ComponentId) -> Option<&mut Vec<T>> {
        let slot = self.column_slot(id)?;
        Some(&mut self.columns[slot].as_any_mut().downcast_mut::<Column<T>>().expect("column type mismatch").0)
    }
}

/// A cached move from one table to another whose set has one component more (add edge) or less (remove edge).
struct Edge {
    /// The destination table.
    to: u32,
    /// For each column slot of the source table, the slot of the same component in `to`; `NO_COLUMN` for the
    /// component a remove edge takes away.
    dst_slots: Box<[u16]>,
    /// The slot of the component the edge adds (in `to`) or removes (in the source table).
    slot: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Record {
    table: u32,
    row: u32,
}

const NO_TABLE: u32 = u32::MAX;

/// All tables of a world, and each entity's `(table, row)`.
pub struct Archetypes {
    tables: Vec<Table>,
    /// Every edge of every table, by the index the tables' edge maps hold.
    edges: Vec<Edge>,
    by_set: FxHashMap<ComponentSet, u32>,
    records: Vec<Record>,
    /// Tells this set of tables from any other (see [`Archetypes::stamp`]).
    stamp: u64,
}

/// Table 0 holds entities with no components.
const EMPTY_TABLE: u32 = 0;

impl Archetypes {
    /// Storage with only the empty table.
    pub fn new() -> Self {
        let mut archetypes = Self {
            tables: Vec::new(),
            edges: Vec::new(),
            by_set: FxHashMap::default(),
            records: Vec::new(),
            stamp: fresh_stamp(),
        };
        archetypes.table_for(ComponentSet::EMPTY, &Registry::default());
        archetypes
    }

    /// The tables, in creation order.
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }

    pub(crate) fn tables_mut(&mut self) -> &mut [Table] {
        &mut self.tables
    }

    /// A number no other `Archetypes` has had. Tables are only ever appended, and a table's set and column slots
    /// never change, so a list of matching tables made from one stamp's first `n` tables stays true for them.
    pub(crate) fn stamp(&self) -> u64 {
        self.stamp
    }

    /// One past the highest entity index with a record.
    pub fn index_bound(&self) -> usize {
        self.records.len()
    }

    /// The table holding `set`, made if new.
    pub fn table_for(&mut self, set: ComponentSet, components: &Registry) -> u32 {
        if let Some(&table) = self.by_set.get(&set) {
            return table;
        }
        let mut column_of = Box::new([NO_COLUMN; MAX_COMPONENTS]);
        let columns = set
            .iter()
            .enumerate()
            .map(|(slot, id)| {
                column_of[id as usize] = slot as u16;
                (components.data(id).new_column)()
            })
            .collect();
        let table = self.tables.len() as u32;
        self.tables.push(Table {
            set,
            entities: Vec::new(),
            columns,
            column_of,
            add_edges: FxHashMap::default(),
            remove_edges: FxHashMap::default(),
        });
        self.by_set.insert(set, table);
        table
    }

    #[inline]
    fn record(&self, index: u32) -> Option<Record> {
        self.records.get(index as usize).copied().filter(|r| r.table != NO_TABLE)
    }

    fn set_record(&mut self, index: u32, record: Record) {
        let index = index as usize;
        if index >= self.records.len() {
            self.records.resize(index + 1, Record { table: NO_TABLE, row: 0 });
        }
        self.records[index] = record;
    }

    /// Appends `entity` as a new row of `table` (its column values are pushed by the caller) and returns the row.
    pub(crate) fn push_row(&mut self, entity: Entity, table: u32) -> usize {
        let rows = &mut self.tables[table as usize].entities;
        let row = rows.len();
        rows.push(entity);
        self.set_record(entity.index(), Record { table, row: row as u32 });
        row
    }

    /// Puts a live entity with no components in the empty table.
    pub fn spawn_empty(&mut self, entity: Entity) {
        self.push_row(entity, EMPTY_TABLE);
    }

    /// Pushes `value` onto component `id`'s column of `table` (building a row together with [`Archetypes::push_row`]).
    #[inline]
    pub(crate) fn push_value<T: 'static>(&mut self, table: u32, id: ComponentId, value: T) {
        self.tables[table as usize].column_mut::<T>(id).expect("table lacks a column of its own set").push(value);
    }

    /// Reserves `additional` rows in `table`.
    pub(crate) fn reserve_rows(&mut self, table: u32, additional: usize) {
        // New entities' records land past the highest index seen, as fresh indices do.
        self.records.reserve(additional);
        let table = &mut self.tables[table as usize];
        table.entities.reserve(additional);
        for column in &mut table.columns {
            column.reserve(additional);
        }
    }

    /// Removes the row at `(table, row)` from the table's entity list, fixing the record of the entity that the
    /// swap-remove moved into `row`. Columns must have been swap-removed at the same row by the caller.
    fn remove_row_entity(&mut self, table: u32, row: usize) {
        let entities = &mut self.tables[table as usize].entities;
        entities.swap_remove(row);
        if let Some(&moved) = entities.get(row) {
            self.records[moved.index() as usize].row = row as u32;
        }
    }

    /// The table and row of `index`, if it has a record.
    pub fn location(&self, index: u32) -> Option<(u32, usize)> {
        self.record(index).map(|r| (r.table, r.row as usize))
    }

    /// Whether `index` has component `id`.
    pub fn contains(&self, index: u32, id: ComponentId) -> bool {
        self.record(index).is_some_and(|r| self.tables[r.table as usize].set.contains(id))
    }

    /// The value of component `id` at `index`.
    #[inline]
    pub fn get<T: 'static>(&self, index: u32, id: ComponentId) -> Option<&T> {
        let r = self.record(index)?;
        self.tables[r.table as usize].column::<T>(id).map(|c| &c[r.row as usize])
    }

    /// The value of component `id` at `index`, mutably.
    #[inline]
    pub fn get_mut<T: 'static>(&mut self, index: u32, id: ComponentId) -> Option<&mut T> {
        let r = self.record(index)?;
        self.tables[r.table as usize].column_mut::<T>(id).map(|c| &mut c[r.row as usize])
    }

    /// The edge from table `from` that adds (`add`) or removes component `id`, made with its reverse if new.
    #[inline]
    fn edge(&mut self, from: u32, id: ComponentId, add: bool, components: &Registry) -> u32 {
        let table = &self.tables[from as usize];
        let edges = if add { &table.add_edges } else { &table.remove_edges };
        match edges.get(&id) {
            Some(&edge) => edge,
            None => self.link(from, id, add, components),
        }
    }

    /// Makes the pair of edges between table `from` and the table with component `id` added (`add`) or removed:
    /// the add edge from the table without `id` to the one with it, and the remove edge back. Returns the one
    /// leaving `from`.
    #[cold]
    fn link(&mut self, from: u32, id: ComponentId, add: bool, components: &Registry) -> u32 {
        let mut set = self.tables[from as usize].set;
        if add {
            set.insert(id);
        } else {
            set.remove(id);
        }
        let to = self.table_for(set, components);
        let (with, without) = if add { (to, from) } else { (from, to) };
        let (with_table, without_table) = (&self.tables[with as usize], &self.tables[without as usize]);
        let slot = with_table.column_slot(id).expect("a table lacks a column of its own set") as u16;
        // Where each column of `src` goes in `dst`: the slot of the same id there, `NO_COLUMN` where it has none.
        let dst_slots = |src: &Table, dst: &Table| src.set.iter().map(|c| dst.column_of[c as usize]).collect();
        let add_edge = Edge { to: with, dst_slots: dst_slots(without_table, with_table), slot };
        let remove_edge = Edge { to: without, dst_slots: dst_slots(with_table, without_table), slot };
        let add_index = self.edges.len() as u32;
        self.edges.push(add_edge);
        self.edges.push(remove_edge);
        self.tables[without as usize].add_edges.insert(id, add_index);
        self.tables[with as usize].remove_edges.insert(id, add_index + 1);
        if add {
            add_index
        } else {
            add_index + 1
        }
    }

    /// Sets component `id` of `entity` (which must have a record) to `value`; returns the previous value.
    pub fn insert<T: 'static>(
        &mut self,
        entity: Entity,
        id: ComponentId,
        value: T,
        components: &Registry,
    ) -> Option<T> {
        let index = entity.index();
        let r = self.record(index).expect("inserting into an entity with no record");
        let table = &mut self.tables[r.table as usize];
        if let Some(slot) = table.column_slot(id) {
            let column = table.columns[slot].as_any_mut().downcast_mut::<Column<T>>().expect("column type mismatch");
            return Some(std::mem::replace(&mut column.0[r.row as usize], value));
        }
        let edge = self.edge(r.table, id, true, components);
        self.move_along(index, r, edge, usize::MAX);
        let Edge { to, slot, .. } = self.edges[edge as usize];
        self.tables[to as usize].columns[slot as usize]
            .as_any_mut()
            .downcast_mut::<Column<T>>()
            .expect("column type mismatch")
            .0
            .push(value);
        None
    }

    /// Removes component `id` from `index`; returns its value.
    pub fn remove<T: 'static>(&mut self, index: u32, id: ComponentId, components: &Registry) -> Option<T> {
        let r = self.record(index)?;
        let slot = self.tables[r.table as usize].column_slot(id)?;
        let edge = self.edge(r.table, id, false, components);
        // Swap-remove the value here, as the move below swap-removes every other column at the same row.
        let value = self.tables[r.table as usize].columns[slot]
            .as_any_mut()
            .downcast_mut::<Column<T>>()
            .expect("column type mismatch")
            .0
            .swap_remove(r.row as usize);
        self.move_along(index, r, edge, slot);
        Some(value)
    }

    /// Moves the row of `index`, at `r`, along `edge`: each value goes to its column in the edge's destination, or
    /// is dropped if the destination has none, but for column `skip` of the source, which the caller has already
    /// swap-removed at the row (`usize::MAX`: none). Returns the new row.
    fn move_along(&mut self, index: u32, r: Record, edge: u32, skip: usize) -> usize {
        let edge = &self.edges[edge as usize];
        let (row, to) = (r.row as usize, edge.to);
        let (src, dst) = pair_mut(&mut self.tables, r.table as usize, to as usize);
        debug_assert_eq!(src.columns.len(), edge.dst_slots.len(), "an edge made for another table");
        // A panicking `drop` of a component left behind must not stop the move half-way: it goes on afterwards.
        let mut panic = None;
        for (slot, (column, &dst_slot)) in src.columns.iter_mut().zip(&edge.dst_slots[..]).enumerate() {
            if dst_slot != NO_COLUMN {
                column.move_row_to(row, dst.columns[dst_slot as usize].as_mut());
            } else if slot != skip {
                keep_panic(&mut panic, || column.swap_remove_drop(row));
            }
        }
        let entity = src.entities.swap_remove(row);
        debug_assert_eq!(entity.index(), index, "the record of {entity:?} points at another entity's row");
        if let Some(&moved) = src.entities.get(row) {
            self.records[moved.index() as usize].row = row as u32;
        }
        let new_row = dst.entities.len();
        dst.entities.push(entity);
        self.records[index as usize] = Record { table: to, row: new_row as u32 };
        resume(panic);
        new_row
    }

    /// Removes component `id` from `index`, dropping the value; whether there was one.
    pub fn remove_erased(&mut self, index: u32, id: ComponentId, components: &Registry) -> bool {
        let Some(r) = self.record(index) else {
            return false;
        };
        if !self.tables[r.table as usize].set.contains(id) {
            return false;
        }
        let edge = self.edge(r.table, id, false, components);
        self.move_along(index, r, edge, usize::MAX);
        true
    }

    /// Drops every value of `index` and forgets its record.
    pub fn despawn(&mut self, index: u32) -> bool {
        let Some(r) = self.record(index) else {
            return false;
        };
        let table = &mut self.tables[r.table as usize];
        // Every column loses the row even if a component's `drop` panics; the panic goes on afterwards.
        let mut panic = None;
        for column in &mut table.columns {
            keep_panic(&mut panic, || column.swap_remove_drop(r.row as usize));
        }
        self.remove_row_entity(r.table, r.row as usize);
        self.records[index as usize].table = NO_TABLE;
        resume(panic);
        true
    }

    /// Fills component `id`'s column in every table that has it, row by row, taking each value from `value_of`
    /// (called with the row's entity index). Used when migrating into this backend.
    pub(crate) fn fill_column<T: 'static>(&mut self, id: ComponentId, mut value_of: impl FnMut(u32) -> T) {
        for table in &mut self.tables {
            let Some(slot) = table.column_slot(id) else {
                continue;
            };
            let column =
                &mut table.columns[slot].as_any_mut().downcast_mut::<Column<T>>().expect("column type mismatch").0;
            column.reserve_exact(table.entities.len());
            column.extend(table.entities.iter().map(|e| value_of(e.index())));
        }
    }

    /// Takes every value of component `id` out of every table, with its entity. Leaves the columns empty: the
    /// caller must drop the tables afterwards (used when migrating out of this backend).
    pub(crate) fn drain_column<T: 'static>(&mut self, id: ComponentId, mut f: impl FnMut(Entity, T)) {
        for table in &mut self.tables {
            let Some(slot) = table.column_slot(id) else {
                continue;
            };
            let column =
                &mut table.columns[slot].as_any_mut().downcast_mut::<Column<T>>().expect("column type mismatch").0;
            for (entity, value) in table.entities.iter().zip(column.drain(..)) {
                f(*entity, value);
            }
        }
    }

    /// Bytes held by component `id`'s columns across all tables.
    pub fn component_bytes(&self, id: ComponentId) -> usize {
        self.tables.iter().filter_map(|t| t.column_slot(id).map(|slot| t.columns[slot].bytes())).sum()
    }

    /// Bytes held by the bookkeeping: entity rows, records, table headers and lookup maps.
    pub fn overhead_bytes(&self) -> usize {
        let per_table: usize = self
            .tables
            .iter()
            .map(|t| {
                size_of::<Table>()
                    + MAX_COMPONENTS * 2
                    + t.entities.capacity() * size_of::<Entity>()
                    + t.columns.capacity() * size_of::<Box<dyn ErasedColumn>>()
                    + (t.add_edges.capacity() + t.remove_edges.capacity()) * (size_of::<(u32, u32)>() + 1)
            })
            .sum();
        let edges: usize = self.edges.iter().map(|e| e.dst_slots.len() * size_of::<u16>()).sum();
        per_table
            + self.edges.capacity() * size_of::<Edge>()
            + edges
            + self.records.capacity() * size_of::<Record>()
            + self.by_set.capacity() * (size_of::<(ComponentSet, u32)>() + 1)
    }

    /// Drops every table but keeps none of their rows (the world is being cleared or migrated away).
    pub fn clear(&mut self) {
        *self = Self::new();
    }

    /// Panics with a message naming the broken invariant.
    pub fn assert_invariants(&self) {
        for (t, table) in self.tables.iter().enumerate() {
            for column in &table.columns {
                assert_eq!(column.len(), table.entities.len(), "table {t} has a column out of step with its rows");
            }
            for (row, entity) in table.entities.iter().enumerate() {
                assert_eq!(
                    self.record(entity.index()),
                    Some(Record { table: t as u32, row: row as u32 }),
                    "record of {entity:?} does not point at table {t} row {row}"
                );
            }
            // Edges come in pairs and map each column to the same component's column.
            for add in [true, false] {
                for (&id, &e) in if add { &table.add_edges } else { &table.remove_edges } {
                    let edge = &self.edges[e as usize];
                    let to = &self.tables[edge.to as usize];
                    let mut set = table.set;
                    if add {
                        set.insert(id);
                    } else {
                        set.remove(id);
                    }
                    assert_eq!(to.set, set, "edge {e} of table {t} leads to the wrong table");
                    let back = if add { &to.remove_edges } else { &to.add_edges };
                    let back = back.get(&id).map(|&b| self.edges[b as usize].to);
                    assert_eq!(back, Some(t as u32), "edge {e} of table {t} has no way back");
                    let slots: Vec<u16> = table.set.iter().map(|c| to.column_of[c as usize]).collect();
                    assert_eq!(slots[..], edge.dst_slots[..], "edge {e} of table {t} maps the columns wrongly");
                    let with = if add { to } else { table };
                    assert_eq!(with.column_slot(id), Some(edge.slot as usize), "edge {e} of table {t}: wrong slot");
                }
            }
        }
    }
}

/// Two distinct tables, both mutably.
fn pair_mut(tables: &mut [Table], a: usize, b: usize) -> (&mut Table, &mut Table) {
    if a < b {
        let (low, high) = tables.split_at_mut(b);
        (&mut low[a], &mut high[0])
    } else {
        let (low, high) = tables.split_at_mut(a);
        (&mut high[0], &mut low[b])
    }
}

/// Runs `f`, which may drop a component value; a panic from it is kept in `first` (the first one wins) instead of
/// unwinding, so the caller can finish its bookkeeping before [`resume`] passes it on.
fn keep_panic(first: &mut Option<Box<dyn Any + Send>>, f: impl FnOnce()) {
    if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        first.get_or_insert(payload);
    }
}

/// Passes on a panic kept by [`keep_panic`].
fn resume(panic: Option<Box<dyn Any + Send>>) {
    if let Some(payload) = panic {
        std::panic::resume_unwind(payload);
    }
}

impl Default for Archetypes {
    fn default() -> Self {
        Self::new()
    }
}
