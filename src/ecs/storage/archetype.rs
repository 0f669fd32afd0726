//! The archetype backend (as in Friflo.Engine.ECS, bevy and hecs): one table per set of component types.
//!
//! Similar to `HashMap<ComponentSet, (Vec<Entity>, one Vec per component type)>`: entities with the same
//! components share a table whose columns are structure-of-arrays, so a query walks whole columns in lock-step
//! with no per-entity lookups. The price is paid on insert and remove: the entity's row moves to another table.
//!
//! The columns are kept by component type, not by table: `columns[id]` is one typed `Columns<T>`, a
//! `Vec<Vec<T>>` holding the column of every table that has `T`, in table creation order, and a table lists per
//! column slot its component id and the index of its column there. So a query downcasts each of its types once,
//! then reaches each matching table's column by an index its cache keeps: no dynamic call per table.
//!
//! ```text
//!  records (by entity index)        tables                                          columns (by type)
//!  index 0 -> (table 1, row 0)       table 0  {}                 entities []         Pos [[p0, p2], [p1]]
//!  index 1 -> (table 2, row 0)       table 1  {Pos, Vel}         entities [0v1, 2v1] Vel [[v0, v2], [v1]]
//!  index 2 -> (table 1, row 1)       table 2  {Pos, Vel, Red}    entities [1v1]      Red [[r1]] (no bytes)
//!                                    table 1 columns: Pos 0, Vel 0; table 2: Pos 1, Vel 1, Red 0
//! ```
//!
//! Invariants: for every table `t` and row `r < t.entities.len()`,
//! `records[t.entities[r].index] == (t, r)`, and every column of `t` has `t.entities.len()` values; the `k`-th
//! table (in creation order) holding a type owns that type's column `k`.
//! Tags (zero-sized types) are part of the table key and their columns hold no bytes.
//! Finding a table never scans: by set through `by_set`, and on insert / remove through the table's edge maps.
//! An edge is made once per (table, component) and keeps where each column of its source goes in its destination,
//! so moving a row is one loop over the source's columns; edges are made in pairs, the add edge `A -(+C)-> B` with
//! the remove edge `B -(-C)-> A`, so a component added and later removed finds both ways cached.

use super::sparse_set::fresh_stamp;
use super::Registry;
use crate::ecs::component::{ComponentId, ComponentSet, MAX_COMPONENTS};
use crate::ecs::entity::Entity;
use crate::ecs::Component;
use rustc_hash::FxHashMap;
use std::any::Any;
use std::mem::size_of;

/// Every table's column of one component type `T`: `Columns(columns)` where `columns[k]` is the column of the
/// `k`-th table (in creation order) whose set holds `T`, a plain `Vec<T>` row-aligned with that table's entities.
/// A query downcasts this once per component, then reaches each table's column by its index.
pub struct Columns<T>(pub Vec<Vec<T>>);

impl<T> Columns<T> {
    /// No columns yet.
    pub const fn new() -> Self {
        Self(Vec::new())
    }

    /// A copy, each value copied by `copy`.
    pub(crate) fn clone_with(&self, copy: fn(&T) -> T) -> Self {
        Self(self.0.iter().map(|column| column.iter().map(copy).collect()).collect())
    }
}

impl<T> Default for Columns<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The columns of one component type, with the type erased (upcast to `dyn Any` to downcast to `Columns<T>`). A
/// column is named by its index (see `Columns`).
pub trait ErasedColumns: Any + Send + Sync {
    /// Adds an empty column (for a new table) and returns its index.
    fn push_column(&mut self) -> u32;
    /// Number of columns.
    fn columns(&self) -> usize;
    /// Drops the value at `row` of `column`, moving the column's last value into its place.
    fn swap_remove_drop(&mut self, column: u32, row: usize);
    /// Moves the value at `row` of column `from` to the end of column `to`, swap-removing it from `from`.
    fn move_row(&mut self, from: u32, row: usize, to: u32);
    /// Number of values in `column`.
    fn len(&self, column: u32) -> usize;
    /// Bytes held (capacity) by all the columns' values.
    fn bytes(&self) -> usize;
    /// Bytes held by the list of columns itself.
    fn overhead_bytes(&self) -> usize;
    /// Makes room for `additional` values in `column`.
    fn reserve(&mut self, column: u32, additional: usize);
}

impl<T: Component> ErasedColumns for Columns<T> {
    fn push_column(&mut self) -> u32 {
        self.0.push(Vec::new());
        (self.0.len() - 1) as u32
    }
    fn columns(&self) -> usize {
        self.0.len()
    }
    fn swap_remove_drop(&mut self, column: u32, row: usize) {
        self.0[column as usize].swap_remove(row);
    }
    fn move_row(&mut self, from: u32, row: usize, to: u32) {
        let (from, to) = pair_mut(&mut self.0, from as usize, to as usize);
        to.push(from.swap_remove(row));
    }
    fn len(&self, column: u32) -> usize {
        self.0[column as usize].len()
    }
    fn bytes(&self) -> usize {
        self.0.iter().map(|column| column.capacity() * size_of::<T>()).sum()
    }
    fn overhead_bytes(&self) -> usize {
        self.0.capacity() * size_of::<Vec<T>>()
    }
    fn reserve(&mut self, column: u32, additional: usize) {
        self.0[column as usize].reserve(additional);
    }
}

/// One component type's columns (see `Columns`), `None` until a table holds the type.
pub type TypeColumns = Option<Box<dyn ErasedColumns>>;

/// The columns of `T` in `columns` (which must be `Columns<T>`), shared: one `TypeId` comparison (the upcast to
/// `dyn Any` reads the vtable; only `type_id` is a dynamic call).
#[inline]
pub(crate) fn typed<T: Component>(columns: &dyn ErasedColumns) -> &[Vec<T>] {
    let columns: &dyn Any = columns;
    &columns.downcast_ref::<Columns<T>>().expect("column type does not match its component id").0
}

/// The columns of `T` in `columns` (which must be `Columns<T>`), mutably.
#[inline]
pub(crate) fn typed_mut<T: Component>(columns: &mut dyn ErasedColumns) -> &mut [Vec<T>] {
    let columns: &mut dyn Any = columns;
    &mut columns.downcast_mut::<Columns<T>>().expect("column type does not match its component id").0
}

const NO_COLUMN: u16 = u16::MAX;

/// Not a column index: the component a remove edge takes away has no column in the destination.
const NO_INDEX: u32 = u32::MAX;

/// The entities that have exactly one set of component types; their values are in the types' [`Columns`].
#[derive(Clone)]
pub struct Table {
    set: ComponentSet,
    entities: Vec<Entity>,
    /// Per column slot, in ascending component id order: the component id, and the index of this table's column
    /// among that type's [`Columns`].
    columns: Box<[(ComponentId, u32)]>,
    /// `column_of[id]` is the column slot of component `id`, or `NO_COLUMN`.
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
        match self.column_of.get(id as usize).copied() {
            None | Some(NO_COLUMN) => None,
            Some(slot) => Some(slot as usize),
        }
    }

    /// The index of this table's column of component `id` among that type's [`Columns`], if it has one.
    #[inline]
    pub fn column_index(&self, id: ComponentId) -> Option<u32> {
        self.column_slot(id).map(|slot| self.columns[slot].1)
    }
}

/// A cached move from one table to another whose set has one component more (add edge) or less (remove edge).
#[derive(Clone)]
struct Edge {
    /// The destination table.
    to: u32,
    /// For each column slot of the source table, the index of the destination's column of the same component
    /// (among that type's [`Columns`]); `NO_INDEX` for the component a remove edge takes away.
    dst_columns: Box<[u32]>,
    /// The slot of the component the edge adds (in `to`) or removes (in the source table).
    slot: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Record {
    table: u32,
    row: u32,
}

const NO_TABLE: u32 = u32::MAX;

/// All tables of a world, their columns by component type, and each entity's `(table, row)`.
pub struct Archetypes {
    tables: Vec<Table>,
    /// `columns[id]`: every table's column of component `id` (`None` until a table holds `id`).
    columns: Vec<TypeColumns>,
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
            columns: Vec::new(),
            edges: Vec::new(),
            by_set: FxHashMap::default(),
            records: Vec::new(),
            stamp: fresh_stamp(),
        };
        archetypes.table_for(ComponentSet::EMPTY, &Registry::default());
        archetypes
    }

    /// A copy, each type's columns copied by `copy` (which fails with the type's id for a type it cannot copy),
    /// under a fresh stamp (what queries worked out for these tables is not assumed of the copy's).
    pub(crate) fn try_clone(
        &self,
        copy: impl Fn(ComponentId, &dyn ErasedColumns) -> Result<Box<dyn ErasedColumns>, ComponentId>,
    ) -> Result<Self, ComponentId> {
        let columns = self.columns.iter().enumerate().map(|(id, columns)| match columns {
            Some(columns) => copy(id as ComponentId, columns.as_ref()).map(Some),
            None => Ok(None),
        });
        Ok(Self {
            tables: self.tables.clone(),
            columns: columns.collect::<Result<_, _>>()?,
            edges: self.edges.clone(),
            by_set: self.by_set.clone(),
            records: self.records.clone(),
            stamp: fresh_stamp(),
        })
    }

    /// The tables, in creation order.
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }

    /// The tables, and every component type's columns by id (see `Columns`), for a query to borrow apart.
    pub(crate) fn parts(&self) -> (&[Table], &[TypeColumns]) {
        (&self.tables, &self.columns)
    }

    pub(crate) fn parts_mut(&mut self) -> (&[Table], &mut [TypeColumns]) {
        (&self.tables, &mut self.columns)
    }

    /// A number no other `Archetypes` has had. Tables are only ever appended, and a table's set and column indices
    /// never change, so a list of matching tables made from one stamp's first `n` tables stays true for them.
    pub(crate) fn stamp(&self) -> u64 {
        self.stamp
    }

    /// One past the highest entity index with a record.
    pub fn index_bound(&self) -> usize {
        self.records.len()
    }

    /// The columns of component `id`, which some table holds.
    #[inline]
    fn columns_of(&mut self, id: ComponentId) -> &mut dyn ErasedColumns {
        self.columns[id as usize].as_deref_mut().expect("no table holds the component")
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
                if self.columns.len() <= id as usize {
                    self.columns.resize_with(id as usize + 1, || None);
                }
                let of_type = self.columns[id as usize].get_or_insert_with(|| (components.data(id).new_columns)());
                (id, of_type.push_column())
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
        set_record(&mut self.records, index, record);
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

    /// A batch of new rows of `table`, borrowed apart: its entities and the records (to push each row's entity)
    /// and every type's columns (to push its values onto the table's column of each type, found once per batch
    /// by [`Table::column_index`]). Each row gets its entity and a value in every column before the next one.
    #[inline]
    pub(crate) fn new_rows(&mut self, table: u32) -> (NewRows<'_>, &mut [TypeColumns]) {
        let rows = NewRows { table, entities: &mut self.tables[table as usize].entities, records: &mut self.records };
        (rows, &mut self.columns)
    }

    /// One new row of `table`: its entity, the columns of every type and the table's index into them (the row's
    /// values are pushed by the caller, one at a time).
    pub(crate) fn new_row(&mut self, table: u32) -> (NewRows<'_>, &mut [TypeColumns], ColumnIndex<'_>) {
        let Table { entities, columns, column_of, .. } = &mut self.tables[table as usize];
        let rows = NewRows { table, entities, records: &mut self.records };
        (rows, &mut self.columns, ColumnIndex { columns, column_of })
    }

    /// Reserves `additional` rows in `table`.
    pub(crate) fn reserve_rows(&mut self, table: u32, additional: usize) {
        // New entities' records land past the highest index seen, as fresh indices do.
        self.records.reserve(additional);
        let table = &mut self.tables[table as usize];
        table.entities.reserve(additional);
        for &(id, column) in &table.columns[..] {
            columns_at(&mut self.columns, id).reserve(column, additional);
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
    pub fn get<T: Component>(&self, index: u32, id: ComponentId) -> Option<&T> {
        let r = self.record(index)?;
        let column = self.tables[r.table as usize].column_index(id)?;
        let columns = self.columns[id as usize].as_deref().expect("no table holds the component");
        Some(&typed::<T>(columns)[column as usize][r.row as usize])
    }

    /// The value of component `id` at `index`, mutably.
    #[inline]
    pub fn get_mut<T: Component>(&mut self, index: u32, id: ComponentId) -> Option<&mut T> {
        let r = self.record(index)?;
        let column = self.tables[r.table as usize].column_index(id)?;
        Some(&mut typed_mut::<T>(self.columns_of(id))[column as usize][r.row as usize])
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
        // Where each column of `src` goes in `dst`: the index of the same id's column there, `NO_INDEX` if none.
        let dst_columns =
            |src: &Table, dst: &Table| src.set.iter().map(|c| dst.column_index(c).unwrap_or(NO_INDEX)).collect();
        let add_edge = Edge { to: with, dst_columns: dst_columns(without_table, with_table), slot };
        let remove_edge = Edge { to: without, dst_columns: dst_columns(with_table, without_table), slot };
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
    pub fn insert<T: Component>(
        &mut self,
        entity: Entity,
        id: ComponentId,
        value: T,
        components: &Registry,
    ) -> Option<T> {
        let index = entity.index();
        let r = self.record(index).expect("inserting into an entity with no record");
        if let Some(column) = self.tables[r.table as usize].column_index(id) {
            let old = &mut typed_mut::<T>(self.columns_of(id))[column as usize][r.row as usize];
            return Some(std::mem::replace(old, value));
        }
        let edge = self.edge(r.table, id, true, components);
        self.move_along(index, r, edge, usize::MAX);
        let Edge { to, slot, .. } = self.edges[edge as usize];
        let column = self.tables[to as usize].columns[slot as usize].1;
        typed_mut::<T>(self.columns_of(id))[column as usize].push(value);
        None
    }

    /// Removes component `id` from `index`; returns its value.
    pub fn remove<T: Component>(&mut self, index: u32, id: ComponentId, components: &Registry) -> Option<T> {
        let r = self.record(index)?;
        let slot = self.tables[r.table as usize].column_slot(id)?;
        let edge = self.edge(r.table, id, false, components);
        // Swap-remove the value here, as the move below swap-removes every other column at the same row.
        let column = self.tables[r.table as usize].columns[slot].1;
        let value = typed_mut::<T>(self.columns_of(id))[column as usize].swap_remove(r.row as usize);
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
        debug_assert_eq!(src.columns.len(), edge.dst_columns.len(), "an edge made for another table");
        // A panicking `drop` of a component left behind must not stop the move half-way: it goes on afterwards.
        let mut panic = None;
        for (slot, (&(id, column), &dst_column)) in src.columns.iter().zip(&edge.dst_columns[..]).enumerate() {
            let columns = columns_at(&mut self.columns, id);
            if dst_column != NO_INDEX {
                columns.move_row(column, row, dst_column);
            } else if slot != skip {
                keep_panic(&mut panic, || columns.swap_remove_drop(column, row));
            }
        }
        let new_row = move_entity(&mut self.records, src, dst, row, index, to);
        resume(panic);
        new_row
    }

    /// Moves the row of `index` to table `to`, whose set holds every component of its current table: each value
    /// moves to its column there (no value is dropped, so nothing can panic). The caller pushes the values of
    /// the components `to` adds.
    pub(crate) fn move_row_to(&mut self, index: u32, to: u32) {
        let r = self.record(index).expect("moving an entity with no record");
        let row = r.row as usize;
        let (src, dst) = pair_mut(&mut self.tables, r.table as usize, to as usize);
        for &(id, column) in &src.columns[..] {
            let dst_column = dst.column_index(id).expect("moving a row to a table that lacks one of its columns");
            columns_at(&mut self.columns, id).move_row(column, row, dst_column);
        }
        move_entity(&mut self.records, src, dst, row, index, to);
    }

    /// Pushes `value` onto column `column` of component `id` (the caller keeps rows and columns aligned).
    pub(crate) fn push_value<T: Component>(&mut self, id: ComponentId, column: u32, value: T) {
        typed_mut::<T>(self.columns_of(id))[column as usize].push(value);
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
        let table = &self.tables[r.table as usize];
        // Every column loses the row even if a component's `drop` panics; the panic goes on afterwards.
        let mut panic = None;
        for &(id, column) in &table.columns[..] {
            let columns = columns_at(&mut self.columns, id);
            keep_panic(&mut panic, || columns.swap_remove_drop(column, r.row as usize));
        }
        self.remove_row_entity(r.table, r.row as usize);
        self.records[index as usize].table = NO_TABLE;
        resume(panic);
        true
    }

    /// Fills component `id`'s column in every table that has it, row by row, taking each value from `value_of`
    /// (called with the row's entity index). Used when migrating into this backend.
    pub(crate) fn fill_column<T: Component>(&mut self, id: ComponentId, mut value_of: impl FnMut(u32) -> T) {
        let Some(columns) = self.columns.get_mut(id as usize).and_then(|c| c.as_deref_mut()) else {
            return;
        };
        let columns = typed_mut::<T>(columns);
        for table in &self.tables {
            let Some(column) = table.column_index(id) else {
                continue;
            };
            let column = &mut columns[column as usize];
            column.reserve_exact(table.entities.len());
            column.extend(table.entities.iter().map(|e| value_of(e.index())));
        }
    }

    /// Takes every value of component `id` out of every table, with its entity. Leaves the columns empty: the
    /// caller must drop the tables afterwards (used when migrating out of this backend).
    pub(crate) fn drain_column<T: Component>(&mut self, id: ComponentId, mut f: impl FnMut(Entity, T)) {
        let Some(columns) = self.columns.get_mut(id as usize).and_then(|c| c.as_deref_mut()) else {
            return;
        };
        let columns = typed_mut::<T>(columns);
        for table in &self.tables {
            let Some(column) = table.column_index(id) else {
                continue;
            };
            for (entity, value) in table.entities.iter().zip(columns[column as usize].drain(..)) {
                f(*entity, value);
            }
        }
    }

    /// Bytes held by component `id`'s columns across all tables.
    pub fn component_bytes(&self, id: ComponentId) -> usize {
        self.columns.get(id as usize).and_then(|c| c.as_deref()).map_or(0, |columns| columns.bytes())
    }

    /// Bytes held by the bookkeeping: entity rows, records, table headers, lists of columns and lookup maps.
    pub fn overhead_bytes(&self) -> usize {
        let per_table: usize = self
            .tables
            .iter()
            .map(|t| {
                size_of::<Table>()
                    + MAX_COMPONENTS * 2
                    + t.entities.capacity() * size_of::<Entity>()
                    + t.columns.len() * size_of::<(ComponentId, u32)>()
                    + (t.add_edges.capacity() + t.remove_edges.capacity()) * (size_of::<(u32, u32)>() + 1)
            })
            .sum();
        let edges: usize = self.edges.iter().map(|e| e.dst_columns.len() * size_of::<u32>()).sum();
        let columns: usize = self.columns.iter().flatten().map(|c| c.overhead_bytes()).sum();
        per_table
            + self.edges.capacity() * size_of::<Edge>()
            + edges
            + self.columns.capacity() * size_of::<TypeColumns>()
            + columns
            + self.records.capacity() * size_of::<Record>()
            + self.by_set.capacity() * (size_of::<(ComponentSet, u32)>() + 1)
    }

    /// Drops every table but keeps none of their rows (the world is being cleared or migrated away).
    pub fn clear(&mut self) {
        *self = Self::new();
    }

    /// Panics with a message naming the broken invariant.
    pub fn assert_invariants(&self) {
        // The tables holding each type own its columns in creation order: the k-th such table has column k.
        let mut next = vec![0u32; self.columns.len()];
        for (t, table) in self.tables.iter().enumerate() {
            assert_eq!(table.columns.len(), table.set.iter().count(), "table {t} has a column per type of its set");
            for (slot, (&(id, column), set_id)) in table.columns.iter().zip(table.set.iter()).enumerate() {
                assert_eq!(id, set_id, "table {t}: slot {slot} holds the wrong component");
                assert_eq!(table.column_slot(id), Some(slot), "table {t}: component {id} maps to the wrong slot");
                assert_eq!(column, next[id as usize], "table {t}: component {id} has the wrong column");
                next[id as usize] += 1;
                let columns = self.columns[id as usize].as_deref().expect("a table holds a type with no columns");
                assert_eq!(
                    columns.len(column),
                    table.entities.len(),
                    "table {t} has a column out of step with its rows"
                );
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
                    let columns: Vec<u32> = table.set.iter().map(|c| to.column_index(c).unwrap_or(NO_INDEX)).collect();
                    assert_eq!(columns[..], edge.dst_columns[..], "edge {e} of table {t} maps the columns wrongly");
                    let with = if add { to } else { table };
                    assert_eq!(with.column_slot(id), Some(edge.slot as usize), "edge {e} of table {t}: wrong slot");
                }
            }
        }
        for (id, columns) in self.columns.iter().enumerate() {
            let count = columns.as_deref().map_or(0, |c| c.columns());
            assert_eq!(count, next[id] as usize, "component {id} has columns no table owns");
        }
    }
}

/// A table's index of its columns by component id: where a new row's values go.
#[doc(hidden)]
pub struct ColumnIndex<'a> {
    columns: &'a [(ComponentId, u32)],
    column_of: &'a [u16; MAX_COMPONENTS],
}

impl ColumnIndex<'_> {
    /// The index of the table's column of component `id` among that type's [`Columns`]; the table must hold `id`.
    #[inline]
    pub fn of(&self, id: ComponentId) -> usize {
        self.columns[self.column_of[id as usize] as usize].1 as usize
    }
}

/// The entities and records of a batch of new rows (see [`Archetypes::new_rows`]).
pub(crate) struct NewRows<'a> {
    table: u32,
    entities: &'a mut Vec<Entity>,
    records: &'a mut Vec<Record>,
}

impl NewRows<'_> {
    /// Appends `entity` as a new row (its values are pushed by the caller).
    #[inline]
    pub(crate) fn push(&mut self, entity: Entity) {
        let row = self.entities.len() as u32;
        self.entities.push(entity);
        set_record(self.records, entity.index(), Record { table: self.table, row });
    }
}

/// Sets the record of entity index `index`, growing the records as needed.
#[inline]
fn set_record(records: &mut Vec<Record>, index: u32, record: Record) {
    let index = index as usize;
    if index >= records.len() {
        records.resize(index + 1, Record { table: NO_TABLE, row: 0 });
    }
    records[index] = record;
}

/// The columns of component `id` in `columns` (an `Archetypes::columns`), which some table holds.
#[inline]
fn columns_at(columns: &mut [TypeColumns], id: ComponentId) -> &mut dyn ErasedColumns {
    columns[id as usize].as_deref_mut().expect("no table holds the component")
}

/// Two distinct elements, both mutably.
fn pair_mut<T>(items: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    if a < b {
        let (low, high) = items.split_at_mut(b);
        (&mut low[a], &mut high[0])
    } else {
        let (low, high) = items.split_at_mut(a);
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

/// Moves entity `index` from row `row` of `src` to the end of `dst` (table `to`), after its values have moved:
/// the entity that fills the row keeps its record true, and the moved one's record names its new row, returned.
fn move_entity(records: &mut [Record], src: &mut Table, dst: &mut Table, row: usize, index: u32, to: u32) -> usize {
    let entity = src.entities.swap_remove(row);
    debug_assert_eq!(entity.index(), index, "the record of {entity:?} points at another entity's row");
    if let Some(&moved) = src.entities.get(row) {
        records[moved.index() as usize].row = row as u32;
    }
    let new_row = dst.entities.len();
    dst.entities.push(entity);
    records[index as usize] = Record { table: to, row: new_row as u32 };
    new_row
}
